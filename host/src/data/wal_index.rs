//! A version of a SQLite file in WAL mode that moves with every commit, read from the header
//! of its WAL-index (the `-shm` file) without a lock or a transaction: what the agent
//! directory asks on every request (`super::directory`).
//!
//! Every commit, by any connection in any process, writes the WAL-index header anew before it
//! returns (its frame count, salts and checksum change), first the header's second copy, then
//! its first (<https://www.sqlite.org/walformat.html>, "The WAL-Index Header"). Reading both
//! copies and finding them equal gives the header as of the last commit; finding them unequal
//! means a commit is being written, and then nothing is answered (the caller asks the
//! database). A header unlike the last one read is a new version. `PRAGMA data_version` tells
//! the same, but takes the file's read locks (two `fcntl` calls and an `fstat`) to do it.
//!
//! The `-shm` file cannot be emptied or removed while the connection this reader is opened
//! beside keeps the WAL open (it holds the WAL-index's shared "DMS" lock), nor can the file
//! leave WAL mode (that needs an exclusive lock on the database).

use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::sync::Mutex;

/// Bytes of one copy of the WAL-index header (`WalIndexHdr`).
const HEADER: usize = 48;
/// Offset of `isInit` in the header: zero until a connection has built the WAL-index.
const IS_INIT: usize = 12;

/// Reads the WAL-index header of one SQLite file.
pub(crate) struct WalIndex {
    shm: File,
    seen: Mutex<Seen>,
}

/// The last header read and the version it was given.
#[derive(Default)]
struct Seen {
    header: Option<[u8; HEADER]>,
    version: i64,
}

impl WalIndex {
    /// The reader of `db`'s WAL-index (`<db>-shm`). Open it only beside a connection of this
    /// process to `db` that is in WAL mode and has read from it (so that the WAL is open and
    /// the WAL-index is held); `None` when there is no such file, or not a header's worth of
    /// it, to read. (A header being written as it is opened is only that request's concern:
    /// [`WalIndex::version`] answers `None` for it.)
    pub(crate) fn open(db: &Path) -> Option<WalIndex> {
        let mut name = db.as_os_str().to_owned();
        name.push("-shm");
        let index = WalIndex {
            shm: File::open(name).ok()?,
            seen: Mutex::new(Seen::default()),
        };
        index.both_copies()?;
        Some(index)
    }

    /// The header's two copies as they are now, `None` when they cannot be read.
    fn both_copies(&self) -> Option<[u8; 2 * HEADER]> {
        let mut both = [0u8; 2 * HEADER];
        self.shm.read_exact_at(&mut both, 0).ok()?;
        Some(both)
    }

    /// The file's version now: the same number as long as nothing was committed, a larger one
    /// once something was; `None` while a commit is writing the header (or it cannot be read).
    pub(crate) fn version(&self) -> Option<i64> {
        let header = settled(&self.both_copies()?)?;
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.header != Some(header) {
            seen.header = Some(header);
            seen.version += 1;
        }
        Some(seen.version)
    }
}

/// The header, when its two copies agree and a connection has built it.
fn settled(both: &[u8; 2 * HEADER]) -> Option<[u8; HEADER]> {
    let (first, second) = both.split_at(HEADER);
    (first == second && first[IS_INIT] != 0).then(|| first.try_into().expect("48 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wal_file() -> (tempfile::TempDir, std::path::PathBuf, rusqlite::Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let writer = rusqlite::Connection::open(&path).unwrap();
        writer
            .execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (x INTEGER);")
            .unwrap();
        (dir, path, writer)
    }

    #[test]
    fn the_version_moves_with_each_commit_of_another_connection_and_only_then() {
        // Arrange
        let (_dir, path, writer) = wal_file();
        let index = WalIndex::open(&path).expect("a WAL file has a WAL-index");
        let before = index.version().unwrap();

        // Act
        let unchanged = index.version().unwrap();
        writer.execute("INSERT INTO t VALUES (1)", []).unwrap();
        let after_one = index.version().unwrap();
        let read_only = writer
            .query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))
            .unwrap();
        let after_a_read = index.version().unwrap();
        writer
            .execute_batch("BEGIN; INSERT INTO t VALUES (2); INSERT INTO t VALUES (3); COMMIT;")
            .unwrap();
        let after_two = index.version().unwrap();

        // Assert
        assert_eq!(unchanged, before, "no commit, no new version");
        assert!(after_one > before, "a commit is a new version");
        assert_eq!(read_only, 1);
        assert_eq!(after_a_read, after_one, "a read is not a commit");
        assert!(after_two > after_one);
    }

    #[test]
    fn a_checkpoint_that_restarts_the_wal_still_moves_the_version_on_the_next_commit() {
        // Arrange
        let (_dir, path, writer) = wal_file();
        let index = WalIndex::open(&path).unwrap();
        writer.execute("INSERT INTO t VALUES (1)", []).unwrap();
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let checkpointed = index.version().unwrap();

        // Act: the WAL starts over from its first frame, with new salts.
        writer.execute("INSERT INTO t VALUES (2)", []).unwrap();

        // Assert
        assert!(index.version().unwrap() > checkpointed);
    }

    #[test]
    fn a_header_being_written_or_never_built_gives_no_version() {
        // Arrange
        let mut both = [7u8; 2 * HEADER];

        // Act / Assert
        assert!(settled(&both).is_some(), "two equal copies, built");
        both[HEADER + 20] = 8;
        assert!(
            settled(&both).is_none(),
            "the copies differ: a commit is writing them"
        );
        let mut unbuilt = [7u8; 2 * HEADER];
        unbuilt[IS_INIT] = 0;
        unbuilt[HEADER + IS_INIT] = 0;
        assert!(settled(&unbuilt).is_none(), "isInit is zero");
    }

    #[test]
    fn a_header_being_written_as_the_reader_opens_is_read_again_on_the_next_request() {
        // Arrange: a WAL-index whose two copies differ (a commit writing them).
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db.sqlite");
        let mut both = [7u8; 2 * HEADER];
        both[HEADER + 20] = 8;
        std::fs::write(dir.path().join("db.sqlite-shm"), both).unwrap();

        // Act
        let index = WalIndex::open(&db).expect("a header's worth of file is there to read");
        let while_written = index.version();
        both[HEADER + 20] = 7;
        std::fs::write(dir.path().join("db.sqlite-shm"), both).unwrap();

        // Assert: no version while it is written, one once it is settled.
        assert_eq!(while_written, None);
        assert!(index.version().is_some());
    }

    #[test]
    fn a_file_not_in_wal_mode_has_no_wal_index_to_read() {
        // Arrange
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode=DELETE; CREATE TABLE t (x INTEGER);")
            .unwrap();

        // Act / Assert
        assert!(WalIndex::open(&path).is_none());
    }
}
