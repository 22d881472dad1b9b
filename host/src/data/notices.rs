//! Notices between hosts on one PostgreSQL database (`LISTEN`/`NOTIFY`): a host that swapped in
//! a new registry artifact, or an operator's `loanhost plugin refresh`, tells every host to
//! resolve its registry references now instead of at its next interval. A notice is a hint,
//! never an instruction: each host resolves and verifies for itself. Notices sent while a
//! listener is reconnecting are lost (the interval still follows the reference). SQLite serves
//! one host: it has no notices.

use std::time::Duration;

use sqlx::postgres::{PgListener, PgPoolOptions};
use tokio::sync::mpsc;

use super::store::{Db, DbError};

/// The channel of registry references to resolve now (the payload: a reference, or `*`).
pub const PLUGIN_REFS: &str = "loanhost_plugin_refs";

/// The payload that names every reference.
pub const EVERY_REFERENCE: &str = "*";

/// Sends `payload` on `channel` to every host listening on the database; `false` with SQLite,
/// where there is nobody to tell.
pub async fn notify(db: &Db, channel: &str, payload: &str) -> Result<bool, DbError> {
    match db {
        Db::Sqlite(_) => Ok(false),
        Db::Postgres(pool) => {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(channel)
                .bind(payload)
                .execute(pool)
                .await?;
            Ok(true)
        }
    }
}

/// What a listener hears; dropping it stops its connection.
pub struct Listener {
    notices: mpsc::Receiver<Notice>,
    task: tokio::task::JoinHandle<()>,
}

/// One event of a listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The listener is (again) subscribed: notices from now on are heard.
    Listening,
    /// The connection was lost: notices are not heard until the next `Listening`.
    Lost,
    /// A notice's payload.
    Payload(String),
}

impl Listener {
    /// The next event; `None` once the listener has stopped.
    pub async fn recv(&mut self) -> Option<Notice> {
        self.notices.recv().await
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Listens on `channel` over a connection of its own (not one of the pools'), reconnecting
/// after a lost connection; `None` with SQLite.
pub fn listen(db: &Db, channel: &'static str) -> Option<Listener> {
    let Db::Postgres(pool) = db else {
        return None;
    };
    let options = (*pool.connect_options()).clone();
    let (tx, notices) = mpsc::channel(64);
    let task = tokio::spawn(async move {
        loop {
            let subscribed = async {
                let pool = PgPoolOptions::new()
                    .max_connections(1)
                    .max_lifetime(None)
                    .idle_timeout(None)
                    .connect_with(options.clone())
                    .await?;
                let mut listener = PgListener::connect_with(&pool).await?;
                listener.listen(channel).await?;
                Ok::<_, sqlx::Error>((pool, listener))
            };
            let (_pool, mut listener) = match subscribed.await {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(channel, error = %e, "cannot listen for notices; trying again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            if tx.send(Notice::Listening).await.is_err() {
                return;
            }
            // `None` or an error: the connection was lost; reconnect and subscribe again.
            while let Ok(Some(n)) = listener.try_recv().await {
                let payload = n.payload().to_string();
                if tx.send(Notice::Payload(payload)).await.is_err() {
                    return;
                }
            }
            tracing::warn!(channel, "the notice connection was lost; listening again");
            if tx.send(Notice::Lost).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    Some(Listener { notices, task })
}
