//! Where report statements run: PostgreSQL's report pool, or on SQLite a few read-only
//! connections of the reports' own, each statement stepped to its end on a blocking thread.
//!
//! sqlx runs every SQLite connection on a worker thread of its own and talks to it over a
//! channel: a statement costs several thread hand-offs (the progress handler's set-up, the
//! statement, its rows). Here a statement costs one (`spawn_blocking`), with SQLite's progress
//! handler set directly on the connection: less than half the time of an Agent's statement
//! through sqlx (docs/decisions/0018-report-statements-on-connections-of-their-own.md).
//! The connections are opened read-only: a report statement cannot write, whatever it says.
//!
//! On PostgreSQL, report statements run on connections of their own too ([`PgReads`]), whose
//! sessions are read-only (`default_transaction_read_only`) and keep their
//! `statement_timeout`: a statement sends `SET` only when it needs another one than its
//! connection already has, so a statement costs one round trip (a transaction with `SET
//! LOCAL` would cost two, and a `ROLLBACK`).
//!
//! A session also remembers how it plans ([`Plans`]): a person's statements (an Agent's, a
//! ConciergeKey's) run on sessions that keep one generic plan per statement, every other
//! statement on sessions that plan each call for its values (the server's default).

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

/// How a PostgreSQL session plans its prepared statements.
///
/// The server's default (`plan_cache_mode = auto`) plans a statement for each call's values
/// until a generic plan looks as cheap, and for a person's loans it never does: the planner
/// prices `loan_assistant_id = $2` at the column's average (3,000 loans an assistant in the
/// demo data, against the 150 an officer has), so the generic plan looks ten times dearer and
/// an Agent's statement is planned on every call, 0.25–0.45 ms each (more than running it).
/// Its generic plan is the plan the values get anyway (the scope's indexes, then the loans),
/// planned once per session (docs/decisions/0026-plans-that-keep-to-the-scope.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plans {
    /// Planned for each call's values, parallel workers as the server allows: the
    /// organisation's, a company's and every statement not scoped to a person.
    PerCall,
    /// One generic plan per statement and session (`plan_cache_mode = force_generic_plan`),
    /// without parallel workers (`max_parallel_workers_per_gather = 0`: the generic plan
    /// guesses thousands of loans, for which a parallel scan would look worth it): a person's
    /// statements, a few hundred loans read through the scope's indexes.
    Generic,
}

impl Plans {
    /// The settings that give a session these plans, as one simple query; `RESET` returns to
    /// the server's own settings.
    fn settings(self) -> &'static str {
        match self {
            Plans::PerCall => "RESET plan_cache_mode; RESET max_parallel_workers_per_gather",
            Plans::Generic => {
                "SET plan_cache_mode = force_generic_plan; SET max_parallel_workers_per_gather = 0"
            }
        }
    }
}

/// Read-only PostgreSQL sessions for report statements, each remembering the
/// `statement_timeout` it was last given and how it plans.
#[derive(Debug)]
pub struct PgReads {
    options: PgConnectOptions,
    slots: Slots<PgSession>,
    timeouts_set: AtomicU64,
    plans_set: AtomicU64,
}

/// One open session, the `statement_timeout` (ms) it has now and how it plans.
#[derive(Debug)]
struct PgSession {
    conn: PgConnection,
    timeout_ms: u64,
    /// `None` when unknown (a failed `SET` leaves it so).
    plans: Option<Plans>,
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
            plans_set: AtomicU64::new(0),
        }
    }

    /// A session of its own for one statement: the idle one last used that plans as `plans`
    /// asks, else any idle one, else a new connection (the lease then sets its plans). Waits for
    /// a free slot (the caller bounds the wait).
    pub(crate) async fn acquire(self: &Arc<Self>, plans: Plans) -> Result<PgLease, sqlx::Error> {
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
            let alike = idle.iter().rposition(|s| s.plans == Some(plans));
            (alike.map(|i| idle.remove(i)).or_else(|| idle.pop()), worn)
        };
        drop(worn);
        let session = match idle {
            Some(session) => session,
            None => PgSession {
                conn: PgConnection::connect_with(&self.options).await?,
                // Unknown: the first statement sets its own.
                timeout_ms: u64::MAX,
                // A new session plans as the server says.
                plans: Some(Plans::PerCall),
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

    /// How many times these sessions were told how to plan (tests).
    pub fn plans_set(&self) -> u64 {
        self.plans_set.load(Ordering::Relaxed)
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

#[cfg(test)]
impl PgReads {
    /// A setting of the session a statement asking for `plans` would be lent now, as that
    /// session has it (tests).
    pub(crate) async fn show(self: &Arc<Self>, plans: Plans, setting: &str) -> String {
        let mut lease = self.acquire(plans).await.unwrap();
        let value = sqlx::query_scalar(&format!("SHOW {setting}"))
            .fetch_one(lease.conn())
            .await
            .unwrap();
        lease.release();
        value
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

    /// Makes the session plan as `plans` asks unless it does already.
    pub(crate) async fn plans(&mut self, plans: Plans) -> Result<(), sqlx::Error> {
        let session = self.session.as_mut().expect("a lease holds its session");
        if session.plans != Some(plans) {
            session.plans = None;
            // A `&str` without arguments goes as a simple query: both settings, one round trip.
            sqlx::Executor::execute(&mut session.conn, plans.settings()).await?;
            session.plans = Some(plans);
            self.reads.plans_set.fetch_add(1, Ordering::Relaxed);
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
mod tests;
