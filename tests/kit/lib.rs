//! The test kit: what every suite of loanhost's (`tests/api`, `host/tests`, `host/benches`)
//! needs to reach the repository, a port, a served binary and the peers it talks to. The
//! end-to-end tests themselves live in `api/` (one test binary); `docs/testing.md` says which
//! test lives where.

mod net;
mod paths;
mod peers;
mod process;
mod serve;

pub use net::free_port;
pub use paths::{clients, loanhost_binary, python, root};
pub use peers::{node_peer, registry, serve_registry};
pub use process::run;
pub use serve::{serve, wait_for_log_line, wait_until_serving, wait_until_up};
