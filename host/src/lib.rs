//! loanhost: an MCP tool server whose reporting tools are sandboxed WebAssembly plugins.
//!
//! A request goes `http` (router, limits, errors) → `auth` (token → identity) → `mcp`
//! (JSON-RPC dispatch) → `plugins` (registry, sandbox, capabilities) → `data` (scope, query
//! compiler, stores). Each module's `//!` line says what it owns.

#![warn(missing_docs)]

/// The allocator of every program built on the host (the binary, its tests and benchmarks):
/// mimalloc, whose thread-local free lists suit a server that allocates and frees small JSON
/// values on every request on every worker thread (`docs/decisions/0014-the-hot-path.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod app;
pub mod audit;
pub mod auth;
pub mod clock;
pub mod config;
pub mod data;
pub mod expiring;
pub mod http;
pub mod identity;
pub mod mcp;
pub mod oauth;
pub mod plugins;
pub mod references;
pub mod request_body;
pub mod secret_file;
pub mod telemetry;
