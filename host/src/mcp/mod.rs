//! MCP: JSON-RPC framing (`protocol`), the 2026-07-28 envelope and headers (`modern`) and
//! method dispatch (`dispatch`), OpenTelemetry's MCP conventions (`observe`), with the plugins' views as MCP Apps resources (`resources`). Stateless: no sessions; the revision is chosen per request.
//! The HTTP route that carries it, `POST /mcp`, is `http::mcp_route`: this layer
//! imports nothing from `http`.

pub mod body;
pub mod dispatch;
pub mod modern;
pub mod observe;
pub mod protocol;
pub mod resources;

pub use dispatch::{Dispatcher, Revision};
pub use protocol::{failure, RpcError, RATE_LIMITED, SERVER_UNAVAILABLE};
