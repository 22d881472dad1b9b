//! MCP: JSON-RPC framing (`protocol`), one POST's messages answered with a typed status
//! (`exchange`, its answer in `answer`, batches in `batch`, one message run in `message`), the typed request (`request`), the 2026-07-28 envelope and
//! headers (`modern`), method dispatch (`dispatch`), OpenTelemetry's MCP conventions
//! (`observe`), with the plugins' views as MCP Apps resources (`resources`). Stateless: no
//! sessions; the revision is chosen per request. The HTTP route that carries it, `POST /mcp`,
//! is `http::mcp_route`: this layer imports nothing from `http`.

mod accounting;
mod answer;
mod batch;
pub mod body;
pub mod dispatch;
pub mod exchange;
mod message;
pub mod modern;
pub mod observe;
pub mod protocol;
pub mod request;
pub mod resources;

pub use answer::{Answer, Status};
pub use batch::MAX_BATCH_REPLY_BYTES;
pub use dispatch::{Dispatcher, Revision};
pub use exchange::PROTOCOL_HEADER;
pub use protocol::{failure, RpcError, RATE_LIMITED, SERVER_UNAVAILABLE};
pub use request::{Method, Request};
