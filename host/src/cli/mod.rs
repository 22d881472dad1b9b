//! The `loanhost` binary's own parts (the library does not use them): the plugin team's
//! commands (`loanhost plugin …`, `registry.rs` for those that use the configuration) and the
//! process's logging and trace export.

pub mod logs;
pub mod plugin;
pub mod registry;
