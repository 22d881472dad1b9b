//! MCP over Streamable HTTP: JSON-RPC framing (`protocol`), method dispatch (`dispatch`)
//! and the `POST /mcp` transport (`transport`). Stateless: no sessions, JSON responses.

pub mod dispatch;
pub mod protocol;
pub mod transport;

pub use dispatch::Dispatcher;
pub use protocol::{failure, RpcError, RATE_LIMITED, SERVER_UNAVAILABLE};
