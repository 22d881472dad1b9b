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

pub mod callers;
pub mod catalog;
mod host;
pub mod limits;
mod options;
mod output;
pub mod sandbox;
pub mod wit;

pub use options::{HostOptions, DEFAULT_PLUGIN_MEMORY_MIB};
pub use output::{ToolCallError, ToolOutput};

pub use callers::{CallerBudgets, CallerLimits, Fleet, Refusal};
pub use catalog::loader::{LoadError, Origin, Plugin, PluginFiles, ToolInfo};
pub use catalog::manifest::{Manifest, ManifestError};
pub use catalog::registry::Registry;
pub use catalog::reload::{Reloader, ScanReport};
pub use catalog::shape::Shape;
pub use catalog::signature::{ManifestBinding, SignatureError, SignaturePolicy};
pub use catalog::view::View;
pub use host::{CallError, CallUsage, Plugins};
pub use limits::MAX_INSTANCES;
pub use sandbox::cache::load_or_create_key as load_or_create_cache_key;
pub use sandbox::compiler::{CompileLimits, Compiler};
pub use sandbox::engine::PluginEngine;
pub use sandbox::invoke::Failure;
pub use sandbox::invoke::Timing;
pub use sandbox::state::DataUsage;
pub use wit::{WitVersion, SUPPORTED_WIT_VERSIONS, WIT_PACKAGE};
