//! loanhost: an MCP tool server whose reporting tools are sandboxed WebAssembly plugins.
//!
//! A request goes `http` (router, limits, errors) → `auth` (token → identity) → `mcp`
//! (JSON-RPC dispatch) → `plugins` (registry, sandbox, capabilities) → `data` (scope, query
//! compiler, stores). Each module's `//!` line says what it owns.

pub mod app;
pub mod audit;
pub mod auth;
pub mod clock;
pub mod config;
pub mod data;
pub mod devidp;
pub mod expiring;
pub mod http;
pub mod mcp;
pub mod plugins;
pub mod telemetry;
