//! Plugins as OCI artifacts: references (`oci://registry/repository:tag` or `@sha256:…`), the
//! registry client with the credentials and TLS roots operators give it, and the artifact's
//! layout (`artifact.rs`), which `plugin push`, `plugin pull` and `plugin check` use.
//!
//! A registry is outside the trust boundary. What a host reads from one goes through `wire.rs`:
//! a token realm checked before credentials go there, bodies cut off at their caps while they
//! stream, digests checked before they name anything (`references/digest.rs`), registry text cleaned
//! before it is logged or shown. `plugin push` writes through `oci-client` (the ORAS
//! project's Rust client), with a token obtained the same checked way.

mod artifact;
pub mod cache;
mod layers;
mod options;
mod wire;

pub use crate::references::is_loopback;
pub use crate::references::{clean, Digest, MAX_REGISTRY_TEXT_CHARS};
pub use artifact::{fetch, pinned, pull, push, resolve, Fetched, Pulled, Pushed};
pub use options::{auth_for, client, parse_reference, OciError, RegistryOptions};

#[cfg(test)]
mod tests;
