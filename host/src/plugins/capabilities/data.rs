//! `loan:reporting/data`: structured queries. Checks that the dataset exists and that the
//! plugin's manifest grants it. No data store is wired into this build yet, so a granted
//! dataset is refused as unavailable.

use crate::data::catalog::Dataset;
use crate::plugins::bindings::data::{DataError, Host, Query, Rows};
use crate::plugins::state::PluginState;

impl Host for PluginState {
    async fn run(&mut self, q: Query) -> wasmtime::Result<Result<Rows, DataError>> {
        if self.call.is_none() {
            return Err(super::no_call_in_describe("data.run"));
        }
        let Some(dataset) = Dataset::parse(&q.dataset) else {
            return Ok(Err(DataError::InvalidQuery(format!(
                "unknown dataset `{}`; known: {}",
                q.dataset,
                Dataset::ALL.map(|d| d.as_str()).join(", ")
            ))));
        };
        if !self.manifest.grants(dataset) {
            return Ok(Err(DataError::Denied(format!(
                "dataset `{}` is not granted to plugin `{}`",
                dataset.as_str(),
                self.manifest.name
            ))));
        }
        Ok(Err(DataError::Unavailable(format!(
            "dataset `{}` has no data store in this build",
            dataset.as_str()
        ))))
    }
}
