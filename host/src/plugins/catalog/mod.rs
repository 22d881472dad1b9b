//! What the host serves and where it came from: a plugin's files, their checks, manifests,
//! signatures and views, the loader that joins them, the registry of tools, and the ways a
//! plugin arrives (a directory reloaded, an OCI registry followed).

pub(super) mod checks;
pub(super) mod files;
pub mod follow;
pub(super) mod loader;
pub mod manifest;
pub mod oci;
pub(super) mod registry;
pub(super) mod reload;
pub(super) mod shape;
pub mod signature;
pub mod view;
