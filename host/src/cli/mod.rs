//! The `loanhost` binary's own parts (the library does not use them): the plugin team's
//! commands (`loanhost plugin …`: `plugin.rs` parses them; `scaffold/`, `local.rs`, `watch.rs`
//! and `signing_tool.rs` carry them out; `registry.rs` for those that use the configuration)
//! `loanhost import` and `seed` (`data.rs`), the dev IdP's `loanhost token` (`token.rs`), and
//! the process's logging and trace export, and `loanhost audit verify` (`audit.rs`).

pub mod audit;
pub mod data;
pub mod local;
pub mod logs;
pub mod plugin;
pub mod registry;
pub mod scaffold;
pub mod signing_tool;
pub mod token;
pub mod watch;
