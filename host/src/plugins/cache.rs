//! The precompiled-component cache, authenticated: a `.cwasm` file is native code that the
//! host maps and runs, so each entry carries an HMAC-SHA256 (keyed by a file kept outside the
//! cache directory) over its name (the component's digest and the engine's compatibility key)
//! and its bytes, and an entry whose MAC does not verify is never deserialized: whoever can
//! write the cache directory cannot make the host run their code, nor another build's code
//! under this one's name. Entries are written through temporary files created exclusively
//! (never through a link planted in their place).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Length of the MAC appended to every entry.
const MAC_LEN: usize = 32;
/// What the MAC authenticates, and in which format (entries of an older format are compiled
/// again).
const MAC_CONTEXT: &[u8] = b"loanhost compile cache v2\0";

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
