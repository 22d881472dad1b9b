//! The database: a SQLite (embedded, WAL) or PostgreSQL pool behind one type, with the
//! schema applied by sqlx migrations (`host/migrations/`, portable DDL for both engines).

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

/// Longest a statement may run (the server's `statement_timeout` on PostgreSQL; each
/// query's deadline on either engine).
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors of the data layer's boundary.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The URL or connection failed.
    #[error("LOANHOST_DATABASE_URL: {0}")]
    Connect(String),
    /// Applying the schema failed.
    #[error("migrating the database: {0}")]
    Migrate(String),
    /// A statement failed.
    #[error("database error: {0}")]
    Query(#[from] sqlx::Error),
}

/// A connection pool to one of the supported engines.
#[derive(Clone, Debug)]
pub enum Db {
    /// Embedded SQLite.
    Sqlite(SqlitePool),
    /// PostgreSQL.
    Postgres(PgPool),
}

/// Settings of every SQLite connection the host opens for its work (the pools here, the
/// reports' own connections): random UUID keys touch pages all over the indexes, so a 128 MiB
/// page cache keeps bulk imports from thrashing (the default is 2 MiB), memory-mapped reads make
/// the history-to-loan lookups of large reports several times faster, and temporary b-trees
/// (sorts, `DISTINCT`) stay in memory.
pub(crate) const SQLITE_PRAGMAS: [(&str, &str); 3] = [
    ("cache_size", "-131072"),
    ("mmap_size", "4294967296"),
    ("temp_store", "memory"),
];

/// How long a SQLite connection waits for another's write lock.
pub(crate) const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// What a pool is for (its size and how long callers wait for a connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PoolKind {
    General,
    Identity,
    Reports,
    /// A benchmark's raw-SQL reference: the report pool's size, no ping on hand-out.
    Reference,
    /// The fleet's budget ledger: two connections, pinged when handed out (a lease is once
    /// per slice: a dropped session is replaced rather than read as a lost ledger).
    Ledger,
}

/// The portable migrations (one DDL for both engines), then each engine's own from schema v3 on
/// (`host/migrations/{sqlite,postgres}/`: surrogate keys and clustering need each engine's words).
static PORTABLE: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");
static SQLITE_ONLY: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_ONLY: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The migrations of one engine, in version order.
fn migrator(postgres: bool) -> sqlx::migrate::Migrator {
    let own = if postgres {
        &POSTGRES_ONLY
    } else {
        &SQLITE_ONLY
    };
    let mut all: Vec<sqlx::migrate::Migration> =
        PORTABLE.iter().chain(own.iter()).cloned().collect();
    all.sort_by_key(|m| m.version);
    sqlx::migrate::Migrator {
        migrations: std::borrow::Cow::Owned(all),
        ..sqlx::migrate::Migrator::DEFAULT
    }
}

impl Db {
    /// Connects (creating a SQLite file and its folder when missing) and applies migrations:
    /// the general-purpose pool (import, seed, tools).
    pub async fn open(url: &str) -> Result<Db, DbError> {
        let db = Self::connect(url, PoolKind::General).await?;
        db.migrate().await?;
        db.refold_email_keys().await?;
        Ok(db)
    }

    /// Connects and applies the migrations up to `version` only (upgrade tests build a
    /// database of an earlier schema this way, then [`Db::open`] it).
    #[doc(hidden)]
    pub async fn open_at_version(url: &str, version: i64) -> Result<Db, DbError> {
        let db = Self::connect(url, PoolKind::General).await?;
        let mut m = migrator(db.engine() == "postgres");
        m.migrations = std::borrow::Cow::Owned(
            m.migrations
                .iter()
                .filter(|x| x.version <= version)
                .cloned()
                .collect(),
        );
        db.run_migrations(&m).await?;
        Ok(db)
    }

    /// The server's pool for identity (agent lookups on every request, the dev IdP): small,
    /// and never shared with reports, so sign-ins do not wait behind long statements; it gives
    /// up quickly when the database is down, so callers get a `503` soon. Applies migrations.
    pub async fn open_identity(url: &str) -> Result<Db, DbError> {
        let db = Self::connect(url, PoolKind::Identity).await?;
        db.migrate().await?;
        db.refold_email_keys().await?;
        Ok(db)
    }

    /// The server's pool for the `data` capability: the scope lookups of identities the
    /// directory did not resolve, and where [`super::ReportStore::of`] finds the database for
    /// report statements (which run on connections of their own). Run [`Db::open_identity`]
    /// first: this one does not migrate. Like every pool here, it pings a connection before
    /// handing it out, so a scope lookup (which is not retried) never gets a connection the
    /// server closed (a restart, a proxy's idle timeout).
    pub async fn open_reports(url: &str) -> Result<Db, DbError> {
        Self::connect(url, PoolKind::Reports).await
    }

    /// A pool for benchmarks' raw-SQL references: the report pool's size and SQLite settings,
    /// but no ping when a connection is handed out, like the host's own report connections
    /// (`report_store.rs`), so that a reference statement costs one round trip as the host's
    /// does, and no statement timeout on PostgreSQL: a hand-written reference at 5M loans (an
    /// organisation's raw-status milestones over 52 months, labelled in SQL) runs past the
    /// host's 10 s. Does not migrate.
    #[doc(hidden)]
    pub async fn open_reference(url: &str) -> Result<Db, DbError> {
        Self::connect(url, PoolKind::Reference).await
    }

    /// A pool for the fleet's budget ledger (`fleet_budgets`): calls wait on it only when a
    /// host's slice of a caller's budget is spent, never behind identity lookups or reports.
    pub async fn open_ledger(url: &str) -> Result<Db, DbError> {
        Self::connect(url, PoolKind::Ledger).await
    }

    async fn connect(url: &str, kind: PoolKind) -> Result<Db, DbError> {
        let (max, acquire) = match (kind, url.starts_with("sqlite:")) {
            (PoolKind::General, true) => (8, Duration::from_secs(30)),
            (PoolKind::General, false) => (16, Duration::from_secs(10)),
            (PoolKind::Identity, _) => (4, Duration::from_secs(2)),
            // Report statements run on connections of their own (report_store.rs); this pool
            // serves the scope lookups of identities the directory did not resolve.
            (PoolKind::Reports, true) => (6, Duration::from_secs(10)),
            (PoolKind::Reports, false) => (4, Duration::from_secs(10)),
            (PoolKind::Reference, _) => (6, Duration::from_secs(10)),
            (PoolKind::Ledger, _) => (2, Duration::from_secs(2)),
        };
        let ping = kind != PoolKind::Reference;
        let db = if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(|e| DbError::Connect(format!("`{url}`: {e}")))?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .foreign_keys(true)
                .busy_timeout(SQLITE_BUSY_TIMEOUT);
            let options = SQLITE_PRAGMAS
                .iter()
                .fold(options, |o, (name, value)| o.pragma(*name, *value));
            if let Some(dir) = std::path::Path::new(options.get_filename()).parent() {
                if !dir.as_os_str().is_empty() {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        DbError::Connect(format!("creating {}: {e}", dir.display()))
                    })?;
                }
            }
            let pool = SqlitePoolOptions::new()
                .max_connections(max)
                .test_before_acquire(ping)
                .acquire_timeout(acquire)
                .connect_with(options)
                .await
                .map_err(|e| DbError::Connect(format!("`{url}`: {e}")))?;
            Db::Sqlite(pool)
        } else {
            // The server enforces the statement timeout too (the client's own is a backstop).
            // No JIT: report statements are short and wide (a label per status, a branch per
            // period), and compiling them took longer than running them (a raw-status
            // milestone report: 440 ms with JIT, 64 ms without). The benchmarks' references
            // open through here too, so they run with the same settings but the timeout
            // (`open_reference`: none).
            let timeout = match kind {
                PoolKind::Reference => "0".to_string(),
                _ => STATEMENT_TIMEOUT.as_millis().to_string(),
            };
            let options = PgConnectOptions::from_str(url)
                .map_err(|e| DbError::Connect(format!("`{}`: {e}", redact(url))))?
                .options([("statement_timeout", timeout.as_str()), ("jit", "off")]);
            let pool = PgPoolOptions::new()
                .max_connections(max)
                .test_before_acquire(ping)
                .acquire_timeout(acquire)
                .connect_with(options)
                .await
                .map_err(|e| DbError::Connect(format!("`{}`: {e}", redact(url))))?;
            Db::Postgres(pool)
        };
        Ok(db)
    }

    /// Whether the database answers a trivial statement within `within`.
    pub async fn ping(&self, within: Duration) -> Result<(), DbError> {
        let work = async {
            match self {
                Db::Sqlite(p) => sqlx::query("SELECT 1").execute(p).await.map(|_| ()),
                Db::Postgres(p) => sqlx::query("SELECT 1").execute(p).await.map(|_| ()),
            }
        };
        match tokio::time::timeout(within, work).await {
            Ok(r) => r.map_err(DbError::Query),
            Err(_) => Err(DbError::Query(sqlx::Error::PoolTimedOut)),
        }
    }

    /// Applies pending migrations.
    pub async fn migrate(&self) -> Result<(), DbError> {
        self.run_migrations(&migrator(self.engine() == "postgres"))
            .await
    }

    async fn run_migrations(&self, m: &sqlx::migrate::Migrator) -> Result<(), DbError> {
        let r = match self {
            Db::Sqlite(p) => m.run(p).await,
            // On a connection of its own without the pool's statement timeout: converting a
            // large table in place takes minutes. The connection is closed afterwards, so the
            // pool never hands out a connection without the timeout.
            Db::Postgres(p) => {
                let mut conn = p
                    .acquire()
                    .await
                    .map_err(|e| DbError::Migrate(e.to_string()))?;
                conn.close_on_drop();
                sqlx::query("SET statement_timeout = 0")
                    .execute(&mut *conn)
                    .await
                    .map_err(|e| DbError::Migrate(e.to_string()))?;
                m.run(&mut *conn).await
            }
        };
        r.map_err(|e| DbError::Migrate(e.to_string()))
    }

    /// Whether searches lack the trigram index they use on PostgreSQL (schema v14: built only
    /// where the `pg_trgm` extension could be created); always `false` on SQLite.
    pub async fn lacks_search_index(&self) -> Result<bool, DbError> {
        let Db::Postgres(p) = self else {
            return Ok(false);
        };
        let found: Option<String> =
            sqlx::query_scalar("SELECT to_regclass('loans_search_trigrams')::text")
                .fetch_one(p)
                .await
                .map_err(DbError::Query)?;
        Ok(found.is_none())
    }

    /// Connections open in the pool, and how many of them are idle.
    pub fn pool_stats(&self) -> (u32, usize) {
        match self {
            Db::Sqlite(p) => (p.size(), p.num_idle()),
            Db::Postgres(p) => (p.size(), p.num_idle()),
        }
    }

    /// `sqlite` or `postgres`.
    pub fn engine(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }
}

/// `?` placeholders numbered `$1, $2, …` for PostgreSQL. The host's SQL text never holds a
/// literal `?`: every value is a bound parameter.
pub fn number_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// A URL with its password hidden, for messages.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_for_postgres() {
        assert_eq!(
            number_placeholders("a = ? AND b IN (?, ?)"),
            "a = $1 AND b IN ($2, $3)"
        );
    }
}
