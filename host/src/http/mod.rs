//! HTTP: the router (composing the OAuth room's routes beside `/mcp` and the REST API), shared
//! state, request limits and tracing, and the error responses that must be exact (the `401`
//! challenge).

pub mod gate;
mod lanes;
mod mcp_reply;
pub mod mcp_route;
pub mod metrics;
pub mod openapi;
pub mod penalty;
mod reply;
mod rest;
mod rest_applications;
mod rest_licenses;
pub(crate) mod router;
mod serve;
mod state;

pub use reply::{busy, too_many_requests, unauthorized, unavailable};
pub use router::router;
pub use serve::serve;
pub use state::{AppState, Shared, MAX_BODY_BYTES};
