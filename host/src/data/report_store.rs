//! Where report statements run: PostgreSQL's report pool, or on SQLite a few read-only
//! connections of the reports' own, each statement stepped to its end on a blocking thread.
//!
//! sqlx runs every SQLite connection on a worker thread of its own and talks to it over a
//! channel: a statement costs several thread hand-offs (the progress handler's set-up, the
//! statement, its rows). Here a statement costs one (`spawn_blocking`), with SQLite's progress
//! handler set directly on the connection. Measured on the Agent's `report_loans` statement
//! at 1M loans: 0.44–0.53 ms through sqlx, 0.19–0.22 ms this way (docs/benchmarks.md).
//! The connections are opened read-only: a report statement cannot write, whatever it says.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::Semaphore;

use super::store::{Db, SQLITE_BUSY_TIMEOUT, SQLITE_PRAGMAS};

/// SQLite connections the reports keep open at most (each steps one statement at a time on a
/// thread of its own: more than a few at once only thrash a small machine).
const SQLITE_CONNECTIONS: usize = 6;
/// SQLite's progress handler runs every this many VM steps.
const PROGRESS_STEPS: i32 = 1000;

/// The store report statements run on.
#[derive(Clone, Debug)]
pub enum ReportStore {
    /// A SQLite database file, through connections of the reports' own.
    Sqlite(Arc<SqliteReads>),
    /// PostgreSQL's report pool (sqlx).
    Postgres(sqlx::PgPool),
}

impl ReportStore {
    /// The report store on the database `db` is connected to. SQLite connections open when
    /// the first statement needs one; a database that exists only in memory (`sqlite::memory:`)
    /// cannot be reached from them, and its statements fail with a message saying so.
    pub fn of(db: &Db) -> ReportStore {
        match db {
            Db::Sqlite(pool) => ReportStore::Sqlite(Arc::new(SqliteReads::new(
                pool.connect_options().get_filename(),
            ))),
            Db::Postgres(pool) => ReportStore::Postgres(pool.clone()),
        }
    }
}

/// A SQLite statement that could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No connection came free before the deadline.
    #[error("no report connection came free before the deadline")]
    Busy,
    /// The database could not be opened, or the blocking thread failed.
    #[error("{0}")]
    Unavailable(String),
}

/// Read-only connections to one SQLite database file, handed out one statement at a time.
#[derive(Debug)]
pub struct SqliteReads {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

impl SqliteReads {
    fn new(path: &Path) -> SqliteReads {
        SqliteReads::with_connections(path, SQLITE_CONNECTIONS)
    }

    /// At most `n` connections to the database file at `path`.
    pub(crate) fn with_connections(path: &Path, n: usize) -> SqliteReads {
        SqliteReads {
            path: path.to_path_buf(),
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(n)),
        }
    }

    fn open(&self) -> Result<Connection, ReadError> {
        let unavailable = |e: rusqlite::Error| {
            ReadError::Unavailable(format!(
                "opening a report connection to {}: {e}",
                self.path.display()
            ))
        };
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(unavailable)?;
        conn.busy_timeout(SQLITE_BUSY_TIMEOUT)
            .map_err(unavailable)?;
        for (pragma, value) in SQLITE_PRAGMAS {
            conn.pragma_update(None, pragma, value)
                .map_err(unavailable)?;
        }
        conn.set_prepared_statement_cache_capacity(64);
        Ok(conn)
    }

    /// Runs `statement` on a connection of its own on a blocking thread, where SQLite abandons
    /// it (`SQLITE_INTERRUPT`) once `deadline` has passed. The connection returns to the set
    /// when the statement ends, whether or not the caller is still waiting.
    pub async fn run<T, F>(
        self: &Arc<Self>,
        deadline: Instant,
        statement: F,
    ) -> Result<T, ReadError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> T + Send + 'static,
    {
        let wait = deadline.saturating_duration_since(Instant::now());
        let permit = match tokio::time::timeout(wait, self.permits.clone().acquire_owned()).await {
            Ok(Ok(permit)) => permit,
            _ => return Err(ReadError::Busy),
        };
        let reads = self.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let taken = reads.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let conn = match taken {
                Some(conn) => conn,
                None => reads.open()?,
            };
            conn.progress_handler(PROGRESS_STEPS, Some(move || Instant::now() >= deadline));
            let out = statement(&conn);
            conn.progress_handler(0, None::<fn() -> bool>);
            reads
                .idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(conn);
            Ok(out)
        })
        .await
        .map_err(|e| ReadError::Unavailable(format!("the report thread failed: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn connections_are_read_only_and_reused() {
        // Arrange
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let w = Connection::open(&path).unwrap();
        w.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);")
            .unwrap();
        let reads = Arc::new(SqliteReads::new(&path));
        let soon = || Instant::now() + Duration::from_secs(5);

        // Act
        let sum = reads
            .run(soon(), |c| {
                c.query_row("SELECT SUM(x) FROM t", [], |r| r.get::<_, i64>(0))
            })
            .await
            .unwrap();
        let write = reads
            .run(soon(), |c| c.execute("INSERT INTO t VALUES (3)", []))
            .await
            .unwrap();
        let again = reads
            .run(soon(), |c| {
                c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get::<_, i64>(0))
            })
            .await
            .unwrap();

        // Assert
        assert_eq!(sum.unwrap(), 3);
        let e = write.unwrap_err().to_string();
        assert!(e.contains("readonly"), "{e}");
        assert_eq!(again.unwrap(), 2);
        assert_eq!(
            reads.idle.lock().unwrap().len(),
            1,
            "one connection, reused"
        );
    }

    #[tokio::test]
    async fn a_database_only_in_memory_is_named_in_the_error() {
        let reads = Arc::new(SqliteReads::new(Path::new("file:sqlx-in-memory-1")));
        let e = reads
            .run(Instant::now() + Duration::from_secs(1), |_| ())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("opening a report connection to file:sqlx-in-memory-1"),
            "{e}"
        );
    }
}
