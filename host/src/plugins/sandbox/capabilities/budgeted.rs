//! The budgets of the capabilities that read a few small statements of their own (`people`,
//! `licensing`, `pricing`): one query of the call's `max_queries` in the caller's statement
//! slot, within the call's deadline, its time counted as database time; the rows it gives
//! counted against `max_rows`. A spent budget traps, as for `data`.

use std::future::Future;
use std::time::Instant;

use crate::plugins::sandbox::state::{LimitHit, PluginState};

impl PluginState {
    /// Runs `read` within the call's budgets (`what` names it in a trap's message).
    pub(super) async fn budgeted<T, E>(
        &mut self,
        what: &str,
        read: impl Future<Output = Result<T, E>>,
    ) -> wasmtime::Result<Result<T, E>> {
        let _statement = self.statement_slot().await?;
        let allowance = self.next_allowance()?;
        let started = Instant::now();
        let wait = allowance.deadline.saturating_duration_since(Instant::now());
        let outcome = tokio::time::timeout(wait, read).await;
        self.usage.db_time += started.elapsed();
        outcome.map_err(|_| {
            wasmtime::Error::new(LimitHit {
                timeout: true,
                message: format!("ran out of database time {what}"),
            })
        })
    }

    /// Counts `rows` rows of `bytes` decoded bytes a capability gave the guest.
    pub(super) fn count_rows(&mut self, rows: u64, bytes: u64) -> wasmtime::Result<()> {
        if self.usage.rows + rows > self.manifest.limits.max_rows {
            return Err(wasmtime::Error::new(LimitHit {
                timeout: false,
                message: format!(
                    "received its {} rows per call (limits.max_rows)",
                    self.manifest.limits.max_rows
                ),
            }));
        }
        self.usage.rows += rows;
        self.usage.bytes += bytes;
        Ok(())
    }
}
