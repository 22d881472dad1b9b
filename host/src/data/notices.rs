//! Notices between hosts on one PostgreSQL database (`LISTEN`/`NOTIFY`), one listening
//! connection per channel: the agent directory's (`loanhost_directory`, sent by triggers) and
//! the registry follower's (`loanhost_plugin_refs`: a host that swapped in a new artifact, or an
//! operator's `loanhost plugin refresh`, tells every host to resolve its references now). A
//! notice is a hint, never an instruction: whoever hears it reads the truth for itself. Notices
//! sent while a listener is reconnecting are lost, which the listener reports at once (`Lost`)
//! and again when it is back (`Listening`). SQLite serves one host: it has no notices.

use std::time::Duration;

use sqlx::postgres::{PgListener, PgPoolOptions};

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

/// One event of a listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Subscribed (again): notices from now on are heard; any sent before may have been missed.
    Listening,
    /// The connection was lost: notices are not heard until the next `Listening`.
    Lost,
    /// A notice's payload.
    Payload(String),
}

/// A listening connection; dropping it closes the connection.
pub struct Listener {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Listens on `channel` over a connection of its own (the pools keep all of theirs), calling
/// `on` with each event as it happens, on the listener's task, and reconnecting after a lost
/// connection; `None` with SQLite.
pub fn listen(
    db: &Db,
    channel: &'static str,
    mut on: impl FnMut(Notice) + Send + 'static,
) -> Option<Listener> {
    let Db::Postgres(pool) = db else {
        return None;
    };
    let own = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(2))
        .connect_lazy_with((*pool.connect_options()).clone());
    let task = tokio::spawn(async move {
        loop {
            let subscribed = async {
                let mut listener = PgListener::connect_with(&own).await?;
                // A lost connection is reported at once, not after reconnecting.
                listener.eager_reconnect(false);
                listener.listen(channel).await?;
                Ok::<_, sqlx::Error>(listener)
            };
            let mut listener = match subscribed.await {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(channel, error = %e, "cannot LISTEN; trying again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            on(Notice::Listening);
            // `None` or an error: the connection was lost; reconnect and subscribe again.
            while let Ok(Some(n)) = listener.try_recv().await {
                on(Notice::Payload(n.payload().to_string()));
            }
            on(Notice::Lost);
            tracing::warn!(channel, "the LISTEN connection was lost; reconnecting");
        }
    });
    Some(Listener { task })
}
