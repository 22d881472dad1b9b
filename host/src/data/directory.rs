//! The in-memory agent directory: who a signed-in email is (agent id, role codes, company,
//! managed agents), answered from memory while the database has not changed and from the
//! database the moment it has. It keeps the spec's rule that identity and scope are resolved
//! from the platform's data on every request, without a round trip to the database's worker
//! thread on each one.
//!
//! How a change is noticed, per engine:
//! - SQLite in WAL mode (the server's): the header of the file's WAL-index, which every
//!   commit by any connection, in this process or another (`loanhost import`), writes anew
//!   before it returns (`data/wal_index.rs`: one `pread`, no lock). A file in another
//!   journal mode: `PRAGMA data_version` on a connection of the directory's own (a few
//!   microseconds and two file locks, on the calling thread), which changes on the same
//!   commits.
//! - PostgreSQL: triggers on the agent tables `NOTIFY loanhost_directory` (migration 0004); a
//!   listener task bumps a generation on each notification. While the listener is not
//!   connected, nothing is answered from memory.
//!
//! Entries are loaded lazily (one email at a time) and all dropped together when the
//! version moves on. An entry is tagged with the version read *before* it was loaded, so an
//! entry can only be newer than its tag, never older.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::identity::ScopeFacts;

use super::agents::{email_key, Agent};
use super::notices::{self, Notice};
use super::store::{Db, DbError};
use super::wal_index::WalIndex;

/// Entries kept at most; past this the directory starts over (a bound, not an eviction policy:
/// a platform's agents are thousands).
const MAX_ENTRIES: usize = 50_000;

/// The NOTIFY channel the PostgreSQL triggers signal on (migration 0004).
pub const CHANNEL: &str = "loanhost_directory";

/// An active agent with what scope needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryEntry {
    /// The agent.
    pub agent: Agent,
    /// Company and managed agents.
    pub facts: Arc<ScopeFacts>,
}

/// How the directory learns that the data changed.
enum Version {
    /// A connection of its own to the SQLite file: it holds the WAL-index open for `wal`
    /// to read, or answers `PRAGMA data_version` when the file is not in WAL mode.
    Sqlite {
        conn: Mutex<rusqlite::Connection>,
        wal: Option<Box<WalIndex>>,
    },
    /// A generation bumped by the listener; `listening` is false while it is not connected.
    Postgres {
        generation: Arc<AtomicU64>,
        listening: Arc<AtomicBool>,
    },
    /// No cheap way to tell (an in-memory database): every lookup reads the database.
    None,
}

#[derive(Default)]
struct Entries {
    version: i64,
    by_email: HashMap<String, Option<Arc<DirectoryEntry>>>,
}

/// Counters of the directory's answers (for tests and tooling).
#[derive(Debug, Default)]
pub struct DirectoryStats {
    /// Answered from memory.
    pub hits: AtomicU64,
    /// Read from the database.
    pub loads: AtomicU64,
    /// Times the entries were dropped because the data changed.
    pub invalidations: AtomicU64,
}

/// The agent directory over one database.
pub struct Directory {
    db: Db,
    version: Version,
    entries: Mutex<Entries>,
    stats: DirectoryStats,
    /// The `LISTEN` connection on PostgreSQL (closed with the directory).
    _listener: Option<notices::Listener>,
}

impl Directory {
    /// A directory over `db` (the identity pool). On PostgreSQL it starts the listener task;
    /// on a SQLite file it opens a read-only connection of its own.
    pub async fn open(db: Db) -> Result<Directory, DbError> {
        let (version, listener) = match &db {
            Db::Sqlite(pool) => {
                let path = pool.connect_options().get_filename().to_path_buf();
                // An in-memory database has no file another connection could open.
                if !path.is_file() {
                    (Version::None, None)
                } else {
                    let conn = rusqlite::Connection::open_with_flags(
                        &path,
                        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
                    )
                    .map_err(|e| DbError::Connect(format!("{}: {e}", path.display())))?;
                    let wal = wal_index_beside(&conn, &path);
                    (
                        Version::Sqlite {
                            conn: Mutex::new(conn),
                            wal,
                        },
                        None,
                    )
                }
            }
            Db::Postgres(_) => {
                let generation = Arc::new(AtomicU64::new(0));
                let listening = Arc::new(AtomicBool::new(false));
                let (g, l) = (generation.clone(), listening.clone());
                // Every notice bumps the generation; so do a lost connection (nothing is
                // answered from memory until it is back) and a new one (anything may have
                // changed while not listening).
                let listener = notices::listen(&db, CHANNEL, move |notice| {
                    if notice == Notice::Lost {
                        l.store(false, Ordering::Release);
                    }
                    g.fetch_add(1, Ordering::AcqRel);
                    if notice == Notice::Listening {
                        l.store(true, Ordering::Release);
                    }
                });
                (
                    Version::Postgres {
                        generation,
                        listening,
                    },
                    listener,
                )
            }
        };
        Ok(Directory {
            db,
            version,
            entries: Mutex::new(Entries::default()),
            stats: DirectoryStats::default(),
            _listener: listener,
        })
    }

    /// Whether lookups are answered from memory now (false on an in-memory database, and on
    /// PostgreSQL while the listener is not connected).
    pub fn answers_from_memory(&self) -> bool {
        self.current_version().is_some()
    }

    /// Whether a change is noticed from the SQLite file's WAL-index header (a WAL file: the
    /// server's), rather than by `PRAGMA data_version` or a notification.
    pub fn reads_wal_index(&self) -> bool {
        matches!(self.version, Version::Sqlite { wal: Some(_), .. })
    }

    /// The answers so far.
    pub fn stats(&self) -> &DirectoryStats {
        &self.stats
    }

    /// The data's current version, or `None` when it cannot be known cheaply now (then the
    /// database answers).
    fn current_version(&self) -> Option<i64> {
        match &self.version {
            Version::Sqlite { wal: Some(wal), .. } => wal.version(),
            Version::Sqlite { conn, wal: None } => {
                let conn = conn.lock().unwrap_or_else(|e| e.into_inner());
                conn.prepare_cached("PRAGMA data_version")
                    .and_then(|mut s| s.query_row([], |r| r.get::<_, i64>(0)))
                    .map_err(|e| tracing::warn!(error = %e, "PRAGMA data_version failed"))
                    .ok()
            }
            Version::Postgres {
                generation,
                listening,
            } => listening
                .load(Ordering::Acquire)
                .then(|| generation.load(Ordering::Acquire) as i64),
            Version::None => None,
        }
    }

    /// Entries valid for `version` (dropping older ones).
    fn entries_at(&self, version: i64) -> std::sync::MutexGuard<'_, Entries> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.version != version || entries.by_email.len() > MAX_ENTRIES {
            if !entries.by_email.is_empty() {
                self.stats.invalidations.fetch_add(1, Ordering::Relaxed);
            }
            *entries = Entries {
                version,
                ..Entries::default()
            };
        }
        entries
    }

    /// The active agent with this email (ASCII case-insensitive) and its scope facts.
    pub async fn agent_by_email(
        &self,
        email: &str,
    ) -> Result<Option<Arc<DirectoryEntry>>, DbError> {
        let key = email_key(email);
        let version = self.current_version();
        if let Some(v) = version {
            if let Some(hit) = self.entries_at(v).by_email.get(&key) {
                self.stats.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(hit.clone());
            }
        }
        self.stats.loads.fetch_add(1, Ordering::Relaxed);
        let entry = match self.db.agent_by_email(&key).await? {
            Some(agent) => {
                // The agent's row already holds its company; only the managed agents are read.
                let facts = Arc::new(ScopeFacts {
                    company_id: agent.company_id.clone(),
                    managed_agent_ids: self.db.managed_agents(&agent.id).await?,
                });
                Some(Arc::new(DirectoryEntry { agent, facts }))
            }
            None => None,
        };
        if let Some(v) = version {
            self.entries_at(v).by_email.insert(key, entry.clone());
        }
        Ok(entry)
    }
}

/// The WAL-index of the file `conn` is open on, when the file is in WAL mode: read once first,
/// so that `conn` holds the WAL open (and the WAL-index with it) for as long as it lives.
fn wal_index_beside(conn: &rusqlite::Connection, path: &std::path::Path) -> Option<Box<WalIndex>> {
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .ok()?;
    if !mode.eq_ignore_ascii_case("wal") {
        return None;
    }
    conn.query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0))
        .ok()?;
    WalIndex::open(path).map(Box::new)
}
