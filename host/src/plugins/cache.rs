//! The precompiled-component cache, authenticated: a `.cwasm` file is native code that the
//! host maps and runs, so each entry carries an HMAC-SHA256 (keyed by a file kept outside the
//! cache directory) over its bytes, and an entry whose MAC does not verify is never
//! deserialized: whoever can write the cache directory cannot make the host run their code.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Length of the MAC appended to every entry.
const MAC_LEN: usize = 32;

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

    /// The path of an entry.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn mac(&self, bytes: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes any key size");
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
        self.mac(&bytes)
            .verify_slice(&tag)
            .map_err(|_| CacheMiss::Unauthenticated)?;
        Ok(bytes)
    }

    /// Writes entry `name` (bytes + MAC) through a temporary file and a rename.
    pub(crate) fn write(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let path = self.path(name);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let tag = self.mac(bytes).finalize().into_bytes();
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.write_all(&tag)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
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
