//! The compiled-function cache: Cranelift's incremental compilation cache
//! (`Config::enable_incremental_compilation`) kept on disk beside the compile cache, so that a
//! function compiled once is not compiled again by any later compilation on this host. Every
//! Python plugin carries the same CPython and every TypeScript plugin the same SpiderMonkey
//! (their report code is data in the snapshot), so an edited plugin, or a second plugin on the
//! same runtime, finds nearly all its functions here. Entries are native code the host will
//! run: each is authenticated with the compile cache's key ([`super::cache`]) and one whose
//! MAC does not verify is a miss, never deserialized. The folder is bounded
//! ([`MAX_BYTES`]): past it, the entries used least recently are removed after a compilation.

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest as _, Sha256};

use super::cache::{CacheMiss, CompileCache};

/// The folder of the compile cache that holds compiled functions.
pub(crate) const FOLDER: &str = "functions";
/// Bytes the entries may take on disk: a Python runtime's functions take about 90 MiB, a
/// TypeScript one's about 100 MiB, and each edit of a plugin adds a few MiB (the functions
/// whose code moved).
pub(crate) const MAX_BYTES: u64 = 1024 * 1024 * 1024;

/// Compiled functions on disk, with what one compilation took from it.
pub(crate) struct FunctionCache {
    entries: CompileCache,
    counts: FunctionCounts,
}

/// What one compilation found in the cache and added to it.
#[derive(Debug, Default)]
pub(crate) struct FunctionCounts {
    /// Functions read from the cache instead of compiled.
    pub(crate) reused: AtomicU64,
    /// Functions not found (or refused), so compiled.
    pub(crate) compiled: AtomicU64,
    /// Functions compiled and added.
    pub(crate) added: AtomicU64,
    /// Entries present but refused (their MAC does not verify, or they cannot be read).
    pub(crate) refused: AtomicU64,
}

/// A compilation's functions by where their code came from.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FunctionTally {
    /// Read from the cache.
    pub(crate) reused: u64,
    /// Compiled (not found, or refused).
    pub(crate) compiled: u64,
    /// Of the compiled ones, those whose entry was refused.
    pub(crate) refused: u64,
}

impl FunctionTally {
    /// What was counted since `earlier`.
    pub(crate) fn since(self, earlier: FunctionTally) -> FunctionTally {
        FunctionTally {
            reused: self.reused - earlier.reused,
            compiled: self.compiled - earlier.compiled,
            refused: self.refused - earlier.refused,
        }
    }
}

impl FunctionCounts {
    /// The counts so far.
    pub(crate) fn tally(&self) -> FunctionTally {
        FunctionTally {
            reused: self.reused.load(Ordering::Relaxed),
            compiled: self.compiled.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}

impl FunctionCache {
    /// The function cache of the compile cache folder `compile_dir` (its [`FOLDER`],
    /// created mode 0700), authenticated with the compile cache's `key`.
    pub(crate) fn open(compile_dir: &Path, key: [u8; 32]) -> std::io::Result<FunctionCache> {
        Ok(FunctionCache {
            entries: CompileCache::new(compile_dir.join(FOLDER), key)?,
            counts: FunctionCounts::default(),
        })
    }

    /// The folder the entries are in.
    pub(crate) fn dir(&self) -> &Path {
        self.entries.dir()
    }

    /// What this cache was asked for so far.
    pub(crate) fn counts(&self) -> &FunctionCounts {
        &self.counts
    }

    /// Removes the entries used least recently until they take at most three quarters of
    /// `max_bytes`, when they take more; returns how many were removed.
    pub(crate) fn prune(&self, max_bytes: u64) -> usize {
        // The folder holds nothing but entries (and their writers' temporary files).
        self.entries.prune(max_bytes, |_| true, None)
    }

    /// An entry's file name: the SHA-256 of Cranelift's key (its own hash of the function,
    /// the target and the compiler's flags), so a name says nothing a key does not.
    fn name(key: &[u8]) -> String {
        hex::encode(Sha256::digest(key))
    }
}

impl std::fmt::Debug for FunctionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionCache")
            .field("dir", &self.dir())
            .field("counts", &self.counts)
            .finish()
    }
}

impl wasmtime::CacheStore for FunctionCache {
    /// The authenticated compiled function stored under `key`, if any. Cranelift checks the
    /// entry's version marker and treats anything it cannot read as a miss.
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        let name = Self::name(key);
        match self.entries.read(&name) {
            Ok(bytes) => {
                self.counts.reused.fetch_add(1, Ordering::Relaxed);
                self.entries.mark_used(&name);
                Some(Cow::Owned(bytes))
            }
            Err(CacheMiss::Absent) => {
                self.counts.compiled.fetch_add(1, Ordering::Relaxed);
                None
            }
            Err(e) => {
                self.counts.compiled.fetch_add(1, Ordering::Relaxed);
                self.counts.refused.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %e, "compiled function not used");
                None
            }
        }
    }

    /// Stores a compiled function. Not synced to disk: an entry lost in a crash is compiled
    /// again, and a torn one fails its MAC.
    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        let stored = self
            .entries
            .write_unsynced(&Self::name(key), &value)
            .is_ok();
        if stored {
            self.counts.added.fetch_add(1, Ordering::Relaxed);
        }
        stored
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};
    use wasmtime::CacheStore as _;

    #[test]
    fn functions_round_trip_and_planted_ones_are_misses() {
        // Arrange
        let dir = tempfile::tempdir().unwrap();
        let cache = FunctionCache::open(dir.path(), [7; 32]).unwrap();
        // Act
        assert!(cache.insert(b"key one", b"machine code".to_vec()));
        let planted = FunctionCache::name(b"key two");
        std::fs::write(
            cache.dir().join(&planted),
            b"evil code and thirty-two bytes of tag",
        )
        .unwrap();
        let other_key = FunctionCache::open(dir.path(), [8; 32]).unwrap();
        // Assert
        assert_eq!(cache.get(b"key one").as_deref(), Some(&b"machine code"[..]));
        assert!(cache.get(b"key two").is_none());
        assert!(cache.get(b"key three").is_none());
        assert!(other_key.get(b"key one").is_none());
        let counts = cache.counts();
        assert_eq!(counts.reused.load(Ordering::Relaxed), 1);
        assert_eq!(counts.compiled.load(Ordering::Relaxed), 2);
        assert_eq!(counts.added.load(Ordering::Relaxed), 1);
        assert_eq!(counts.refused.load(Ordering::Relaxed), 1);
        assert_eq!(other_key.counts().refused.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn past_its_bound_the_entries_used_least_recently_go() {
        // Arrange: four entries of 1,000 bytes (and their MACs), used an hour apart; the
        // oldest used again just now.
        let dir = tempfile::tempdir().unwrap();
        let cache = FunctionCache::open(dir.path(), [7; 32]).unwrap();
        let now = SystemTime::now();
        for (i, key) in [b"k0", b"k1", b"k2", b"k3"].iter().enumerate() {
            assert!(cache.insert(*key, vec![i as u8; 1000]));
            let age = Duration::from_secs(7200 * (4 - i as u64));
            let f = std::fs::File::open(cache.dir().join(FunctionCache::name(*key))).unwrap();
            f.set_modified(now - age).unwrap();
        }
        assert!(cache.get(b"k0").is_some());
        // Act
        let kept = cache.prune(100_000);
        let removed = cache.prune(3_000);
        // Assert: under the bound nothing goes; over it, down to three quarters of it.
        assert_eq!((kept, removed), (0, 2));
        let present = |k: &[u8]| cache.dir().join(FunctionCache::name(k)).exists();
        assert!(present(b"k0"), "used again: kept");
        assert!(
            !present(b"k1") && !present(b"k2"),
            "the least recently used go"
        );
        assert!(present(b"k3"));
    }
}
