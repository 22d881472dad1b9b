//! The plugin host: loads sandboxed Wasm components, keeps the registry of tools, and runs
//! one call per fresh store with the limits of the plugin's manifest. Owns the sandbox
//! boundary: a plugin gets only what its capabilities (one file per WIT interface under
//! `capabilities/`) hand it.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use loanhost::identity::{Identity, RoleCode};
//! use loanhost::clock::Clock;
//! use loanhost::plugins::{Plugins, SignaturePolicy, PluginFiles};
//! let plugins = Plugins::new(None, SignaturePolicy::default(), Clock::system())?;
//! let dir = std::path::Path::new("plugins/dist");
//! let plugin = plugins.load(&PluginFiles::in_dir(dir, "get_loan_reporting_metadata")).await?;
//! plugins.registry().insert(std::sync::Arc::new(plugin));
//! let me = Identity::new("6f1c…", [RoleCode::Agent]);
//! let result = plugins.call("get_loan_reporting_metadata", &me, &serde_json::json!({})).await?;
//! # Ok(()) }
//! ```

mod bindings;
mod cache;
pub mod callers;
mod capabilities;
mod checks;
pub mod compiler;
pub(crate) mod engine;
mod engine_config;
mod files;
pub mod follow;
pub(crate) mod function_cache;
mod host;
mod invoke;
pub mod limits;
mod loader;
pub mod local;
mod log_budget;
pub mod manifest;
mod mapped;
pub mod memories;
pub mod oci;
mod options;
mod output;
pub mod profile;
mod registry;
mod reload;
pub mod scaffold;
mod shape;
mod signature;
pub mod signing_tool;
mod state;
pub mod view;
pub mod watch;
pub mod wit;

pub use options::{HostOptions, DEFAULT_PLUGIN_MEMORY_MIB};
pub use output::{ToolCallError, ToolOutput};

pub use cache::load_or_create_key as load_or_create_cache_key;
pub use callers::{CallerBudgets, CallerLimits, Refusal};
pub use compiler::{CompileLimits, Compiler};
pub use engine::PluginEngine;
pub use host::{CallError, CallReport, Plugins};
pub use invoke::Failure;
pub use limits::MAX_INSTANCES;
pub use loader::{LoadError, Origin, Plugin, PluginFiles, ToolInfo};
pub use manifest::{Manifest, ManifestError};
pub use registry::Registry;
pub use reload::{Reloader, ScanReport};
pub use shape::Shape;
pub use signature::{ManifestBinding, SignatureError, SignaturePolicy};
pub use view::View;
pub use wit::{WitVersion, SUPPORTED_WIT_VERSIONS, WIT_PACKAGE};
