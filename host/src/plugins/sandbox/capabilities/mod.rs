//! The host side of each WIT interface a plugin imports: one file per interface, each only
//! the `Host` impl on [`PluginState`](super::state::PluginState). Grants are checked here.

mod budgeted;
mod caller;
mod clock;
mod data;
mod data_wit;
mod licensing;
mod listing;
mod log;
mod people;
mod pricing;

use super::bindings::types;
use super::state::PluginState;

/// `types` declares only types.
impl types::Host for PluginState {}

/// The trap raised when a plugin calls a caller-dependent import from `describe`.
fn no_call_in_describe(import: &str) -> wasmtime::Error {
    wasmtime::format_err!(
        "`{import}` called outside a tool call (describe must not call host imports)"
    )
}
