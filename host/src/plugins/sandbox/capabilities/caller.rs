//! `loan:reporting/caller`: the caller's user id and role codes, never the token or email.

use super::no_call_in_describe;
use crate::plugins::sandbox::bindings::caller::Host;
use crate::plugins::sandbox::state::PluginState;

impl Host for PluginState {
    async fn user_id(&mut self) -> wasmtime::Result<String> {
        let call = self
            .call
            .as_ref()
            .ok_or_else(|| no_call_in_describe("caller.user-id"))?;
        Ok(call.identity.user_id.clone())
    }

    async fn roles(&mut self) -> wasmtime::Result<Vec<String>> {
        let call = self
            .call
            .as_ref()
            .ok_or_else(|| no_call_in_describe("caller.roles"))?;
        Ok(call
            .identity
            .roles
            .iter()
            .map(|r| r.as_str().to_string())
            .collect())
    }

    async fn can_read_names(&mut self) -> wasmtime::Result<bool> {
        let call = self
            .call
            .as_ref()
            .ok_or_else(|| no_call_in_describe("caller.can-read-names"))?;
        Ok(call.identity.can_read_names())
    }
}
