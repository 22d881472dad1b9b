//! `loan:reporting/clock`: today's date as the host sees it.

use crate::plugins::sandbox::bindings::clock::Host;
use crate::plugins::sandbox::state::PluginState;

impl Host for PluginState {
    async fn today(&mut self) -> wasmtime::Result<String> {
        Ok(self.clock.today_iso())
    }
}
