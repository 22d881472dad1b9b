//! Registry references as the host names them, on the ground floor so that the configuration
//! checks `LOANHOST_PLUGIN_REFS` and `LOANHOST_REGISTRY_PLAIN_HTTP` by the very rules the
//! registry client and the follower apply: `oci://registry/repository[:tag][@sha256:…]`, a
//! digest's text (`digest.rs`), a tool's name and the tool a followed reference is bound to
//! (`binding.rs`), and whether a registry is on this machine. Imports nothing of ours.

mod binding;
mod digest;
mod name;

pub use binding::{bind, bind_all, is_tool_name, Followed};
pub use digest::{clean, Digest, MAX_REGISTRY_TEXT_CHARS};
pub use name::{is_loopback, parse_reference, NotAReference, Reference};
