//! The `loanhost` binary's own parts (the library does not use them): the plugin team's
//! commands (`loanhost plugin …`) and the process's logging and trace export.

pub mod logs;
pub mod plugin;
