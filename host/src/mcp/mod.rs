//! MCP over Streamable HTTP: JSON-RPC framing (`protocol`), the 2026-07-28 envelope and
//! headers (`modern`), method dispatch (`dispatch`) and the `POST /mcp` transport
//! (`transport`). Stateless: no sessions, JSON responses; the revision is chosen per request.

pub mod dispatch;
pub mod modern;
pub mod protocol;
pub mod transport;

pub use dispatch::Dispatcher;
pub use protocol::{failure, RpcError, RATE_LIMITED, SERVER_UNAVAILABLE};
