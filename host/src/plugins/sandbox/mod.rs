//! The sandbox runtime: the engines and their pooled memories, the compiler and its caches,
//! the generated bindings, a call's store state, the invocation of an export, and the
//! capabilities a plugin is handed (one file per WIT interface under `capabilities/`).

pub(super) mod bindings;
pub(super) mod cache;
pub(super) mod capabilities;
pub mod compiler;
pub(crate) mod engine;
pub(super) mod engine_config;
pub(crate) mod function_cache;
pub(super) mod invoke;
pub(super) mod log_budget;
pub(super) mod mapped;
pub mod memories;
pub mod profile;
pub(super) mod spare;
pub(super) mod state;
