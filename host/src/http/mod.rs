//! HTTP: the router, shared state, request limits and tracing, and the error responses
//! that must be exact (the `401` challenge).

pub mod body;
pub mod callback;
pub mod facade;
pub mod gate;
mod mcp_batch;
mod mcp_reply;
pub mod mcp_route;
pub mod metrics;
mod oauth_wire;
pub mod openapi;
pub mod penalty;
mod reply;
mod rest;
pub(crate) mod router;
mod serve;
mod state;

pub use reply::{busy, media_type, too_many_requests, unauthorized, unavailable};
pub use router::router;
pub use serve::serve;
pub use state::{AppState, Shared, MAX_BODY_BYTES};
