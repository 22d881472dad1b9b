//! Where report statements run: PostgreSQL's report pool, or on SQLite a few read-only
//! connections of the reports' own, each statement stepped to its end on a blocking thread.
//!
//! sqlx runs every SQLite connection on a worker thread of its own and talks to it over a
//! channel: a statement costs several thread hand-offs (the progress handler's set-up, the
//! statement, its rows). Here a statement costs one (`spawn_blocking`), with SQLite's progress
//! handler set directly on the connection. Measured on the Agent's `report_loans` statement
//! at 1M loans: 0.44–0.53 ms through sqlx, 0.19–0.22 ms this way (docs/benchmarks.md).
//! The connections are opened read-only: a report statement cannot write, whatever it says.
//!
//! On PostgreSQL, report statements run on connections of their own too ([`PgReads`]), whose
//! sessions are read-only (`default_transaction_read_only`) and keep their
//! `statement_timeout`: a statement sends `SET` only when it needs another one than its
//! connection already has. A transaction with `SET LOCAL` cost two round trips per statement
//! (`BEGIN; SET LOCAL …`, then `ROLLBACK` as the connection came back).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::Connection as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::store::{Db, SQLITE_BUSY_TIMEOUT, SQLITE_PRAGMAS};

/// SQLite connections the reports keep open at most (each steps one statement at a time on a
/// thread of its own: more than a few at once only thrash a small machine).
const SQLITE_CONNECTIONS: usize = 6;
/// SQLite's progress handler runs every this many VM steps.
const PROGRESS_STEPS: i32 = 1000;
/// PostgreSQL connections report statements keep open at most, per host.
const POSTGRES_CONNECTIONS: usize = 12;
/// A PostgreSQL session idle this long is closed rather than reused (sqlx's pool default).
const POSTGRES_IDLE_FOR: Duration = Duration::from_secs(10 * 60);
/// A PostgreSQL session this old is closed rather than reused (sqlx's pool default), so that
/// settings changed on the server reach every session in time.
const POSTGRES_LIFETIME: Duration = Duration::from_secs(30 * 60);

/// The store report statements run on.
#[derive(Clone, Debug)]
pub enum ReportStore {
    /// A SQLite database file, through connections of the reports' own.
    Sqlite(Arc<SqliteReads>),
    /// PostgreSQL, through connections of the reports' own.
    Postgres(Arc<PgReads>),
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
            Db::Postgres(pool) => ReportStore::Postgres(Arc::new(PgReads::new(
                (*pool.connect_options()).clone(),
                POSTGRES_CONNECTIONS,
            ))),
        }
    }

    /// Report connections open, and how many of them are idle.
    pub fn sessions(&self) -> (u32, usize) {
        match self {
            ReportStore::Sqlite(r) => r.slots.stats(),
            ReportStore::Postgres(r) => r.slots.stats(),
        }
    }
}

/// The connections of one report store: at most `capacity` in use or idle at once (a permit
/// each), the idle ones kept for the next statement.
#[derive(Debug)]
struct Slots<T> {
    idle: Mutex<Vec<T>>,
    permits: Arc<Semaphore>,
    capacity: usize,
}

impl<T> Slots<T> {
    fn new(capacity: usize) -> Slots<T> {
        Slots {
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(capacity)),
            capacity,
        }
    }

    /// The idle connections (a panic elsewhere while holding them leaves them usable).
    fn idle(&self) -> MutexGuard<'_, Vec<T>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Connections open, and how many of them are idle.
    fn stats(&self) -> (u32, usize) {
        let idle = self.idle().len();
        // A statement in flight holds a permit and its connection.
        let open = idle
            + self
                .capacity
                .saturating_sub(self.permits.available_permits());
        (u32::try_from(open).unwrap_or(u32::MAX), idle)
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
    slots: Slots<Connection>,
}

impl SqliteReads {
    fn new(path: &Path) -> SqliteReads {
        SqliteReads::with_connections(path, SQLITE_CONNECTIONS)
    }

    /// At most `n` connections to the database file at `path`.
    pub(crate) fn with_connections(path: &Path, n: usize) -> SqliteReads {
        SqliteReads {
            path: path.to_path_buf(),
            slots: Slots::new(n),
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
        let permit =
            match tokio::time::timeout(wait, self.slots.permits.clone().acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                _ => return Err(ReadError::Busy),
            };
        let reads = self.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let taken = reads.slots.idle().pop();
            let conn = match taken {
                Some(conn) => conn,
                None => reads.open()?,
            };
            conn.progress_handler(PROGRESS_STEPS, Some(move || Instant::now() >= deadline));
            let out = statement(&conn);
            conn.progress_handler(0, None::<fn() -> bool>);
            reads.slots.idle().push(conn);
            Ok(out)
        })
        .await
        .map_err(|e| ReadError::Unavailable(format!("the report thread failed: {e}")))?
    }
}

/// Read-only PostgreSQL sessions for report statements, each remembering the
/// `statement_timeout` it was last given.
#[derive(Debug)]
pub struct PgReads {
    options: PgConnectOptions,
    slots: Slots<PgSession>,
    timeouts_set: AtomicU64,
}

/// One open session and the `statement_timeout` (ms) it has now.
#[derive(Debug)]
struct PgSession {
    conn: PgConnection,
    timeout_ms: u64,
    opened: Instant,
    last_used: Instant,
}

impl PgSession {
    fn worn(&self, now: Instant) -> bool {
        now.duration_since(self.opened) >= POSTGRES_LIFETIME
            || now.duration_since(self.last_used) >= POSTGRES_IDLE_FOR
    }
}

impl PgReads {
    /// At most `n` connections made with `options` (the report pool's own: server address,
    /// credentials, TLS and its `statement_timeout` of 10 s), each session read-only.
    pub(crate) fn new(options: PgConnectOptions, n: usize) -> PgReads {
        PgReads {
            options: options.options([("default_transaction_read_only", "on")]),
            slots: Slots::new(n),
            timeouts_set: AtomicU64::new(0),
        }
    }

    /// A session of its own for one statement: an idle one, or a new connection. Waits for a
    /// free slot (the caller bounds the wait).
    pub(crate) async fn acquire(self: &Arc<Self>) -> Result<PgLease, sqlx::Error> {
        let permit = self
            .slots
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| sqlx::Error::PoolClosed)?;
        let now = Instant::now();
        let (idle, worn) = {
            let mut idle = self.slots.idle();
            let worn: Vec<PgSession> = idle.extract_if(.., |s| s.worn(now)).collect();
            (idle.pop(), worn)
        };
        drop(worn);
        let session = match idle {
            Some(session) => session,
            None => PgSession {
                conn: PgConnection::connect_with(&self.options).await?,
                // Unknown: the first statement sets its own.
                timeout_ms: u64::MAX,
                opened: now,
                last_used: now,
            },
        };
        Ok(PgLease {
            reads: self.clone(),
            session: Some(session),
            _permit: permit,
        })
    }

    /// How many `SET statement_timeout` these sessions were sent (tests and benchmarks).
    pub fn timeouts_set(&self) -> u64 {
        self.timeouts_set.load(Ordering::Relaxed)
    }

    /// Closes the idle sessions (after one of them turned out broken).
    pub(crate) fn forget_idle(&self) {
        self.slots.idle().clear();
    }

    /// Sessions open and idle now.
    pub fn idle_sessions(&self) -> usize {
        self.slots.idle().len()
    }
}

/// A session lent to one statement. [`PgLease::release`] gives it back; dropped without that
/// (an error, a statement left half read), its connection is closed instead.
pub(crate) struct PgLease {
    reads: Arc<PgReads>,
    session: Option<PgSession>,
    _permit: OwnedSemaphorePermit,
}

impl PgLease {
    /// Gives the session a `statement_timeout` of `ms` unless it has that one already.
    pub(crate) async fn statement_timeout(&mut self, ms: u64) -> Result<(), sqlx::Error> {
        let session = self.session.as_mut().expect("a lease holds its session");
        if session.timeout_ms != ms {
            // Unknown until the server has answered: a failed `SET` leaves it so.
            session.timeout_ms = u64::MAX;
            let set = format!("SET statement_timeout = {ms}");
            // A `&str` without arguments goes as a simple query: nothing is prepared.
            sqlx::Executor::execute(&mut session.conn, set.as_str()).await?;
            session.timeout_ms = ms;
            self.reads.timeouts_set.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The connection, for the statement.
    pub(crate) fn conn(&mut self) -> &mut PgConnection {
        &mut self
            .session
            .as_mut()
            .expect("a lease holds its session")
            .conn
    }

    /// Gives the session back for the next statement.
    pub(crate) fn release(mut self) {
        if let Some(mut session) = self.session.take() {
            session.last_used = Instant::now();
            self.reads.slots.idle().push(session);
        }
    }
}

/// The session `statement_timeout` for a statement with `left` until its deadline: from 1 s
/// up, rounded down to a multiple of 100 ms, so that statements of calls with the same budget
/// find their session already set (the server may then stop a statement up to 100 ms before
/// its deadline, never after); below 1 s, exact.
pub(crate) fn session_timeout_ms(left: Duration) -> u64 {
    let ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
    if ms >= 1000 {
        ms / 100 * 100
    } else {
        ms.max(1)
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
        assert_eq!(reads.slots.idle().len(), 1, "one connection, reused");
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

    #[tokio::test]
    async fn postgres_sessions_are_read_only_reused_and_keep_their_timeout() {
        // Arrange
        let url = std::env::var("TEST_POSTGRES_URL")
            .expect("TEST_POSTGRES_URL is not set: run `make test` (scripts/postgres.sh)");
        let reads = Arc::new(PgReads::new(url.parse().unwrap(), 2));
        // Act
        let mut first = reads.acquire().await.unwrap();
        first.statement_timeout(4900).await.unwrap();
        let set = show(&mut first).await;
        let write = sqlx::Executor::execute(first.conn(), "CREATE TEMP TABLE t (x int)").await;
        drop(first); // an error or a half-read statement: the connection is closed
        let mut second = reads.acquire().await.unwrap();
        second.statement_timeout(4900).await.unwrap();
        second.release();
        let mut third = reads.acquire().await.unwrap();
        third.statement_timeout(4900).await.unwrap();
        let kept = show(&mut third).await;
        third.statement_timeout(250).await.unwrap();
        let changed = show(&mut third).await;
        third.release();

        // Assert
        assert_eq!(set, "4900ms");
        let e = write.unwrap_err().to_string();
        assert!(e.contains("read-only transaction"), "{e}");
        assert_eq!(kept, "4900ms", "the session kept its timeout");
        assert_eq!(changed, "250ms");
        assert_eq!(
            reads.timeouts_set(),
            3,
            "a SET for the first session, one for the new session after the closed one, and one for the change; none for the reused session"
        );
        assert_eq!(reads.idle_sessions(), 1, "one session, reused");

        // A session idle for too long is closed, not reused: the next one starts afresh.
        {
            let mut idle = reads.slots.idle();
            idle[0].last_used = idle[0].last_used.checked_sub(POSTGRES_IDLE_FOR).unwrap();
        }
        let mut fourth = reads.acquire().await.unwrap();
        fourth.statement_timeout(250).await.unwrap();
        fourth.release();
        assert_eq!(
            reads.timeouts_set(),
            4,
            "a fresh session after the idle one"
        );
        assert_eq!(reads.idle_sessions(), 1);

        async fn show(lease: &mut PgLease) -> String {
            sqlx::query_scalar::<_, String>("SHOW statement_timeout")
                .fetch_one(lease.conn())
                .await
                .unwrap()
        }
    }

    #[tokio::test]
    async fn report_sessions_on_postgres_run_without_jit() {
        // Arrange: the report store of a pool opened as the server opens it.
        let url = std::env::var("TEST_POSTGRES_URL")
            .expect("TEST_POSTGRES_URL is not set: run `make test` (scripts/postgres.sh)");
        let db = Db::open_reports(&url).await.unwrap();
        let ReportStore::Postgres(reads) = ReportStore::of(&db) else {
            panic!("a PostgreSQL URL gives PostgreSQL sessions")
        };
        // Act
        let mut lease = reads.acquire().await.unwrap();
        let jit: String = sqlx::query_scalar("SHOW jit")
            .fetch_one(lease.conn())
            .await
            .unwrap();
        lease.release();
        // Assert: compiling a report statement cost more than running it (store.rs).
        assert_eq!(jit, "off");
    }

    #[test]
    fn session_timeouts_round_down_to_100_ms_from_one_second() {
        let ms = |n| session_timeout_ms(Duration::from_millis(n));
        assert_eq!(ms(4_999), 4_900);
        assert_eq!(ms(4_901), 4_900);
        assert_eq!(ms(1_000), 1_000);
        assert_eq!(ms(999), 999);
        assert_eq!(ms(0), 1);
    }
}
