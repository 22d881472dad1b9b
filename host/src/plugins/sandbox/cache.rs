//! The precompiled-component cache, authenticated: a `.cwasm` file is native code that the
//! host maps and runs, so each entry carries an HMAC-SHA256 (keyed by a file kept outside the
//! cache directory) over its name (the component's digest and the engine's compatibility key)
//! and its bytes, and an entry whose MAC does not verify is never deserialized: whoever can
//! write the cache directory cannot make the host run their code, nor another build's code
//! under this one's name. Entries are written through temporary files created exclusively
//! (never through a link planted in their place).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Length of the MAC appended to every entry.
const MAC_LEN: usize = 32;
/// What the MAC authenticates, and in which format (entries of an older format are compiled
/// again).
const MAC_CONTEXT: &[u8] = b"loanhost compile cache v2\0";

/// An entry used again is marked as used (its modification time set to now) when its mark is
/// older than this: recent enough for a bound to keep what is in use, rare enough to cost
/// nothing on a compilation that reuses thousands of entries.
const MARK_AFTER: Duration = Duration::from_secs(3600);

/// An authenticated cache directory.
pub(crate) struct CompileCache {
    dir: PathBuf,
    key: [u8; 32],
}

/// Why a cached entry was not used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CacheMiss {
    /// No entry.
    #[error("no entry")]
    Absent,
    /// The entry could not be read.
    #[error("cannot read: {0}")]
    Io(std::io::Error),
    /// The entry is not authenticated by this host's key (planted, corrupt or truncated).
    #[error("its MAC does not verify (planted or corrupt); ignored")]
    Unauthenticated,
}

impl CompileCache {
    /// A cache in `dir` (created, mode 0700) authenticated with `key`.
    pub(crate) fn new(dir: PathBuf, key: [u8; 32]) -> std::io::Result<CompileCache> {
        std::fs::create_dir_all(&dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        }
        Ok(CompileCache { dir, key })
    }

    /// The folder of the entries.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key the entries are authenticated with.
    pub(crate) fn key(&self) -> [u8; 32] {
        self.key
    }

    /// The path of an entry.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The MAC of entry `name` holding `bytes`: the name's length and the name come first,
    /// so no two (name, bytes) pairs share an input.
    fn mac(&self, name: &str, bytes: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key size");
        mac.update(MAC_CONTEXT);
        mac.update(&(name.len() as u64).to_le_bytes());
        mac.update(name.as_bytes());
        mac.update(bytes);
        mac
    }

    /// The authenticated bytes of entry `name`.
    pub(crate) fn read(&self, name: &str) -> Result<Vec<u8>, CacheMiss> {
        let mut bytes = match std::fs::read(self.path(name)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(CacheMiss::Absent),
            Err(e) => return Err(CacheMiss::Io(e)),
        };
        if bytes.len() < MAC_LEN {
            return Err(CacheMiss::Unauthenticated);
        }
        let tag = bytes.split_off(bytes.len() - MAC_LEN);
        self.mac(name, &bytes)
            .verify_slice(&tag)
            .map_err(|_| CacheMiss::Unauthenticated)?;
        Ok(bytes)
    }

    /// Writes entry `name` (bytes + MAC) through a temporary file and a rename. The
    /// temporary file has an unpredictable name and is created exclusively (`O_EXCL`: an
    /// existing file or link in its place fails the write instead of being followed), mode
    /// 0600.
    pub(crate) fn write(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.write_entry(name, bytes, true)
    }

    /// As [`CompileCache::write`], without waiting for the bytes to reach the disk: for
    /// entries that are cheap to lose (a torn one fails its MAC and is made again).
    pub(crate) fn write_unsynced(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        self.write_entry(name, bytes, false)
    }

    fn write_entry(&self, name: &str, bytes: &[u8], synced: bool) -> std::io::Result<()> {
        use rand::RngCore as _;
        let path = self.path(name);
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let tmp = self.dir.join(format!(".{name}.{}.tmp", hex::encode(nonce)));
        let tag = self.mac(name, bytes).finalize().into_bytes();
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut f = options.open(&tmp)?;
        let written = f
            .write_all(bytes)
            .and_then(|_| f.write_all(&tag))
            .and_then(|_| if synced { f.sync_all() } else { Ok(()) })
            .and_then(|_| std::fs::rename(&tmp, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// Removes the entries used least recently, other than `except` (the one just written:
    /// a bound smaller than one entry keeps that entry), until they take at most three
    /// quarters of `max_bytes`, when they take more; returns how many were removed. Entries
    /// are the folder's files whose name `is_entry` accepts and does not start with `.`
    /// (temporary files are their writers' to remove; folders, such as the compiled
    /// functions', and files that others keep in the folder, such as the dev IdP's key, are
    /// not entries).
    pub(crate) fn prune(
        &self,
        max_bytes: u64,
        is_entry: impl Fn(&str) -> bool,
        except: Option<&str>,
    ) -> usize {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        let mut total = 0;
        let mut entries: Vec<(SystemTime, u64, PathBuf)> = dir
            .flatten()
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                let name = e.file_name();
                let name = name.to_string_lossy();
                if !meta.is_file() || name.starts_with('.') || !is_entry(&name) {
                    return None;
                }
                total += meta.len();
                (Some(&*name) != except).then_some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        if total <= max_bytes {
            return 0;
        }
        entries.sort();
        let mut removed = 0;
        for (_, len, path) in entries {
            if total <= max_bytes / 4 * 3 {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total = total.saturating_sub(len);
                removed += 1;
            }
        }
        removed
    }

    /// Marks entry `name` as used now when its mark is older than [`MARK_AFTER`] (what
    /// [`CompileCache::prune`] goes by).
    pub(crate) fn mark_used(&self, name: &str) {
        let path = self.path(name);
        let stale = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > MARK_AFTER));
        if stale {
            let mut options = std::fs::OpenOptions::new();
            options.read(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW);
            if let Ok(f) = options.open(&path) {
                let _ = f.set_modified(SystemTime::now());
            }
        }
    }
}

/// Reads the cache key from `path`, creating it (32 random bytes, mode 0600) when missing;
/// hosts started together over one cache folder all get the one key written
/// ([`crate::secret_file`]). The key must not be inside the cache directory it authenticates.
pub fn load_or_create_key(path: &Path) -> std::io::Result<[u8; 32]> {
    let bytes = crate::secret_file::read_or_create(path, || {
        use rand::RngCore as _;
        let mut key = vec![0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut key);
        Ok(key)
    })?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{}: a cache key is 32 bytes, this file has {}",
                path.display(),
                bytes.len()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_planted_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(dir.path().join("c"), [7; 32]).unwrap();
        cache.write("a.cwasm", b"native code").unwrap();
        assert_eq!(cache.read("a.cwasm").unwrap(), b"native code");
        // Planted without the key, or written by a host with another key.
        std::fs::write(
            cache.path("b.cwasm"),
            b"evil code plus thirty-two bytes of tag....",
        )
        .unwrap();
        assert!(matches!(
            cache.read("b.cwasm"),
            Err(CacheMiss::Unauthenticated)
        ));
        let other = CompileCache::new(dir.path().join("c"), [8; 32]).unwrap();
        assert!(matches!(
            other.read("a.cwasm"),
            Err(CacheMiss::Unauthenticated)
        ));
        assert!(matches!(cache.read("none.cwasm"), Err(CacheMiss::Absent)));
        // An authenticated entry copied under another entry's name.
        std::fs::copy(cache.path("a.cwasm"), cache.path("c.cwasm")).unwrap();
        assert!(matches!(
            cache.read("c.cwasm"),
            Err(CacheMiss::Unauthenticated)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn writing_never_follows_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(dir.path().join("c"), [7; 32]).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        // Links planted at the entry's name: the rename replaces the link, never the target.
        std::os::unix::fs::symlink(&victim, cache.path("a.cwasm")).unwrap();
        cache.write("a.cwasm", b"native code").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert_eq!(cache.read("a.cwasm").unwrap(), b"native code");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("c"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn past_its_bound_the_entries_used_least_recently_go_but_not_the_one_just_kept() {
        // Arrange: three entries of 1,032 bytes (with their MACs) used two hours apart (the
        // oldest marked as used again, the middle one just kept), a folder, a temporary file
        // and a day-old file of someone else's beside them.
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(dir.path().join("c"), [3; 32]).unwrap();
        let now = SystemTime::now();
        for (i, name) in ["a.cwasm", "b.cwasm", "c.cwasm"].iter().enumerate() {
            cache.write(name, &[i as u8; 1000]).unwrap();
            let age = Duration::from_secs(7200 * (3 - i as u64));
            let f = std::fs::File::open(cache.path(name)).unwrap();
            f.set_modified(now - age).unwrap();
        }
        cache.mark_used("a.cwasm");
        std::fs::create_dir(cache.path("functions")).unwrap();
        std::fs::write(cache.path("functions/big"), [0; 5000]).unwrap();
        std::fs::write(cache.path(".x.tmp"), [0; 5000]).unwrap();
        std::fs::write(cache.path("dev-idp-rsa.pem"), [0; 5000]).unwrap();
        let old = std::fs::File::open(cache.path("dev-idp-rsa.pem")).unwrap();
        old.set_modified(now - Duration::from_secs(86_400)).unwrap();
        let cwasm = |n: &str| n.ends_with(".cwasm");
        // Act
        let under = cache.prune(10_000, cwasm, None);
        let over = cache.prune(3_000, cwasm, Some("b.cwasm"));
        // Assert: under the bound nothing goes; over it, the least recently used but the one
        // excepted, down to three quarters of it; folders, temporary files and files that are
        // not entries (the oldest here) are neither counted nor removed.
        assert_eq!((under, over), (0, 1));
        let present = |n: &str| cache.path(n).exists();
        assert!(present("a.cwasm") && present("b.cwasm") && !present("c.cwasm"));
        assert!(present("functions/big") && present(".x.tmp") && present("dev-idp-rsa.pem"));
    }

    #[test]
    fn the_key_is_created_once_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.key");
        let k1 = load_or_create_key(&path).unwrap();
        let k2 = load_or_create_key(&path).unwrap();
        assert_eq!(k1, k2);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, b"short").unwrap();
        assert!(load_or_create_key(&path).is_err());
    }
}
