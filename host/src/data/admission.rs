//! Admission of report statements: organisation-wide statements (an Admin's view of every
//! loan, the warehouse datasets) read up to millions of rows; a few of them running at once
//! would otherwise hold every report connection and every core while a caller-scoped
//! statement (an agent's own loans, milliseconds) waits behind them. Heavy statements take
//! one of a small number of slots first (queueing within their call's deadline); light ones
//! never wait for a slot, and the report pool always keeps connections beyond the heavy slots.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::cursor::CursorKey;
use super::report_store::ReportStore;
use super::store::{Db, DbError};

/// The report store with its admission control: what the `data` capability runs statements on.
#[derive(Clone, Debug)]
pub struct Reports {
    /// The report pool (scope lookups of identities the directory did not resolve).
    pub db: Db,
    /// Where report statements run (on SQLite: connections of their own, report_store.rs).
    pub store: ReportStore,
    heavy: Arc<Semaphore>,
    heavy_slots: usize,
    /// The key that seals listing cursors, read from the database once it is first needed.
    cursor_key: Arc<tokio::sync::OnceCell<Arc<CursorKey>>>,
}

/// How long a statement waited for a heavy slot it did not get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("waited past its deadline for one of the {slots} heavy-query slots (organisation-wide statements run at most {slots} at a time)")]
pub struct NoSlot {
    /// The slots there are.
    pub slots: usize,
}

/// Heavy slots by default: half the cores, at least one.
pub fn default_heavy_slots() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get() / 2)
        .unwrap_or(1)
        .max(1)
}

impl Reports {
    /// Reports on `db` with `heavy_slots` organisation-wide statements at a time (0: the
    /// default, [`default_heavy_slots`]).
    pub fn new(db: Db, heavy_slots: usize) -> Reports {
        let heavy_slots = if heavy_slots == 0 {
            default_heavy_slots()
        } else {
            heavy_slots
        };
        Reports {
            store: ReportStore::of(&db),
            db,
            heavy: Arc::new(Semaphore::new(heavy_slots)),
            heavy_slots,
            cursor_key: Default::default(),
        }
    }

    /// The key that seals listing cursors: the database's (schema v17), which every host of
    /// it shares; read (or first written) on the first call that needs it.
    pub async fn cursor_key(&self) -> Result<Arc<CursorKey>, DbError> {
        self.cursor_key
            .get_or_try_init(|| async { CursorKey::load(&self.db).await.map(Arc::new) })
            .await
            .cloned()
    }

    /// Heavy slots free now.
    pub fn heavy_slots_free(&self) -> usize {
        self.heavy.available_permits()
    }

    /// Waits (until `deadline` at the latest) for a heavy slot; light statements pass at once.
    pub async fn admit(
        &self,
        heavy: bool,
        deadline: Instant,
    ) -> Result<Option<OwnedSemaphorePermit>, NoSlot> {
        if !heavy {
            return Ok(None);
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(wait, self.heavy.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Some(permit)),
            _ => Err(NoSlot {
                slots: self.heavy_slots,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn light_statements_never_wait_and_heavy_ones_queue_within_their_deadline() {
        // Arrange
        let db = Db::open("sqlite::memory:").await.unwrap();
        let reports = Reports::new(db, 1);
        let soon = || Instant::now() + Duration::from_millis(50);
        // Act
        let first = reports.admit(true, soon()).await.unwrap();
        let second = reports.admit(true, soon()).await;
        let light = reports.admit(false, soon()).await.unwrap();
        drop(first);
        let third = reports.admit(true, soon()).await.unwrap();
        // Assert
        assert!(third.is_some());
        assert_eq!(second.unwrap_err(), NoSlot { slots: 1 });
        assert!(light.is_none());
        assert_eq!(reports.heavy_slots_free(), 0);
    }
}
