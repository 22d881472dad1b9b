//! The follower's side of the artifact cache (`LOANHOST_CACHE_DIR/oci`): an entry found and
//! verified (its bytes kept for the load), or pulled into a folder of a fresh name and renamed
//! into place under its digest's hex; the last verified digest of each reference recorded in
//! `refs/<sha256 of the reference>`. Every path is built from a checked [`Digest`]'s hex or a
//! hash the host computed, never from registry text, and only the cache's own entries are ever
//! removed.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::plugins::catalog::oci::cache::{self, Verified, MANIFEST_FILE};
use crate::plugins::catalog::oci::{self, Digest, OciError, RegistryOptions};

/// The most a `refs/` record may hold.
const MAX_RECORD_BYTES: u64 = 128;

/// Why an entry could not be had: the metric's kind and the reason.
pub(super) type Failure = (&'static str, String);

/// The cache of one follower.
pub(super) struct Entries {
    /// `LOANHOST_CACHE_DIR/oci`.
    pub dir: PathBuf,
}

impl Entries {
    /// The entry of `digest`: verified from the cache when it is there and intact, else
    /// pulled by digest from `reference`'s registry and kept. `stale` is set when an entry was
    /// there and refused (it is removed first).
    pub async fn get(
        &self,
        reference: &str,
        digest: &Digest,
        registry: &RegistryOptions,
        stale: &mut Option<String>,
        pulling: impl FnOnce(),
    ) -> Result<Verified, Failure> {
        let dir = self.dir.join(digest.hex());
        if std::fs::symlink_metadata(&dir).is_ok() {
            match cache::verify(&dir, digest) {
                Ok(verified) => return Ok(verified),
                Err(why) => {
                    let why = oci::clean(&why);
                    tracing::warn!(%reference, %digest, error = %why, "cached artifact does not match its digest: fetched again");
                    cache::remove_entry(&dir)
                        .map_err(|e| ("artifact", format!("{}: {e}", dir.display())))?;
                    *stale = Some(why);
                }
            }
        }
        let pinned =
            oci::pinned(reference, digest.as_str()).map_err(|e| ("artifact", e.to_string()))?;
        pulling();
        let fetched = oci::fetch(&pinned, registry).await.map_err(|e| {
            let kind = match e {
                OciError::Artifact { .. } | OciError::Io { .. } => "artifact",
                OciError::Digest { .. } => "digest",
                _ => "unreachable",
            };
            (kind, e.to_string())
        })?;
        self.keep(&dir, &fetched)
            .map_err(|e| ("artifact", format!("{}: {e}", self.dir.display())))?;
        Ok(Verified {
            name: fetched.name,
            files: fetched.files,
        })
    }

    /// Writes `fetched` into a folder created exclusively under a random name, then renames
    /// it to `dir`.
    fn keep(&self, dir: &Path, fetched: &oci::Fetched) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let partial = tempfile::Builder::new()
            .prefix(".pull-")
            .tempdir_in(&self.dir)?;
        for (file, data) in &fetched.files {
            cache::write_new(&partial.path().join(file), data)?;
        }
        cache::write_new(&partial.path().join(MANIFEST_FILE), &fetched.manifest)?;
        std::fs::rename(partial.path(), dir)?;
        // Renamed: nothing is left for the guard to remove.
        let _ = partial.keep();
        Ok(())
    }

    /// Where the last verified digest of `reference` is recorded.
    fn record(&self, reference: &str) -> PathBuf {
        self.dir
            .join("refs")
            .join(format!("{:x}", Sha256::digest(reference.as_bytes())))
    }

    /// Records `digest` as the last verified artifact of `reference`.
    pub fn remember(&self, reference: &str, digest: &Digest) {
        let path = self.record(reference);
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if let Err(e) = cache::write_new(&path, digest.as_str().as_bytes()) {
            tracing::warn!(%reference, error = %e, "cannot record the verified artifact");
        }
    }

    /// The last verified digest of `reference`, when its record is a digest and its entry a
    /// folder.
    pub fn last_verified(&self, reference: &str) -> Option<Digest> {
        let text = cache::read_file(&self.record(reference), MAX_RECORD_BYTES).ok()?;
        let digest = Digest::parse(std::str::from_utf8(&text).ok()?.trim()).ok()?;
        std::fs::symlink_metadata(self.dir.join(digest.hex()))
            .is_ok_and(|m| m.is_dir())
            .then_some(digest)
    }
}
