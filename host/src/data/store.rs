//! The database: a SQLite (embedded, WAL) or PostgreSQL pool behind one type, with the
//! schema applied by sqlx migrations (`host/migrations/`, portable DDL for both engines).

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

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

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl Db {
    /// Connects (creating a SQLite file and its folder when missing) and applies migrations.
    pub async fn open(url: &str) -> Result<Db, DbError> {
        let db = if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)
                .map_err(|e| DbError::Connect(format!("`{url}`: {e}")))?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(5))
                // Random UUID keys touch pages all over the indexes: a 128 MiB page cache keeps
                // bulk imports from thrashing (the default is 2 MiB), and memory-mapped reads
                // make the history-to-loan lookups of large reports several times faster.
                .pragma("cache_size", "-131072")
                .pragma("mmap_size", "4294967296")
                .pragma("temp_store", "memory");
            if let Some(dir) = std::path::Path::new(options.get_filename()).parent() {
                if !dir.as_os_str().is_empty() {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        DbError::Connect(format!("creating {}: {e}", dir.display()))
                    })?;
                }
            }
            let pool = SqlitePoolOptions::new()
                .max_connections(8)
                .connect_with(options)
                .await
                .map_err(|e| DbError::Connect(format!("`{url}`: {e}")))?;
            Db::Sqlite(pool)
        } else {
            // The server enforces the statement timeout too (the client's own is a backstop).
            let options = PgConnectOptions::from_str(url)
                .map_err(|e| DbError::Connect(format!("`{}`: {e}", redact(url))))?
                .options([("statement_timeout", "10000")]);
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(Duration::from_secs(10))
                .connect_with(options)
                .await
                .map_err(|e| DbError::Connect(format!("`{}`: {e}", redact(url))))?;
            Db::Postgres(pool)
        };
        db.migrate().await?;
        Ok(db)
    }

    /// Applies pending migrations.
    pub async fn migrate(&self) -> Result<(), DbError> {
        let r = match self {
            Db::Sqlite(p) => MIGRATOR.run(p).await,
            Db::Postgres(p) => MIGRATOR.run(p).await,
        };
        r.map_err(|e| DbError::Migrate(e.to_string()))
    }

    /// `sqlite` or `postgres`.
    pub fn engine(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }
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
