//! The follower's cache of verified artifacts (`LOANHOST_CACHE_DIR/oci/<hex>`): an artifact's
//! files beside its OCI manifest, written once under the manifest's digest and checked against
//! that digest again on every read, so an entry changed on disk is pulled again (or, with no
//! registry, not served) rather than trusted for the folder's name.
//!
//! Whoever can write the cache folder is outside the trust boundary: an entry is a real
//! folder (a link in its place is removed, never followed), its files are read without
//! following links, only as regular files and within their caps, each once, and the bytes
//! checked are the bytes loaded; files are written under a fresh name created exclusively and
//! then renamed into place, so nothing planted in the folder is written through.

use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use oci_client::manifest::OciImageManifest;

use super::layers::{check_layer, plugin_layers, MAX_OCI_MANIFEST_BYTES};
use crate::references::Digest;

/// The file holding the artifact's OCI manifest, as the registry served it, in its folder.
pub const MANIFEST_FILE: &str = "oci-manifest.json";

/// An entry's files as they were checked: the tool's name and each file's bytes, by name.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The tool (the component's file stem).
    pub name: String,
    /// Every file of the plugin, by name (the manifest file not among them).
    pub files: Vec<(String, Vec<u8>)>,
}

/// Reads `path` as a regular file of at most `cap` bytes without following a link (a FIFO,
/// a device or a link in its place is refused, and opening never blocks).
pub fn read_file(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > cap {
        return Err(std::io::Error::other(format!(
            "{} bytes, over its cap of {cap}",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(std::io::Error::other(format!(
            "over its cap of {cap} bytes"
        )));
    }
    Ok(bytes)
}

/// Writes `data` to `path` through a file of its own: created exclusively under a random name
/// in the same folder, synced, then renamed over `path` (a link planted there is replaced,
/// not written through).
pub fn write_new(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::Builder::new()
        .prefix(".partial-")
        .tempfile_in(dir)?;
    file.write_all(data)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Removes the cache entry at `path` whatever it is, without following a link: a link or a
/// file is unlinked, a folder removed with what it holds.
pub fn remove_entry(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Checks that `dir` holds exactly the artifact `digest` names: `dir` is a folder (not a
/// link), its manifest's SHA-256 is `digest`, the manifest is a plugin's, every layer's file
/// has the layer's size and digest, and no other file is there; returns the bytes checked.
pub fn verify(dir: &Path, digest: &Digest) -> Result<Verified, String> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if !meta.is_dir() {
        return Err("the entry is not a folder".into());
    }
    let manifest = read_file(&dir.join(MANIFEST_FILE), MAX_OCI_MANIFEST_BYTES as u64)
        .map_err(|e| format!("{MANIFEST_FILE}: {e}"))?;
    let actual = Digest::of(&manifest);
    if actual != *digest {
        return Err(format!("{MANIFEST_FILE} has the digest {actual}"));
    }
    let manifest: OciImageManifest = serde_json::from_slice(&manifest)
        .map_err(|e| format!("{MANIFEST_FILE} does not parse: {e}"))?;
    let layers = plugin_layers(&manifest.layers)?;
    let mut expected: Vec<&str> = vec![MANIFEST_FILE];
    let mut files = Vec::new();
    for (file, descriptor, cap) in &layers {
        let bytes = read_file(&dir.join(file), *cap).map_err(|e| format!("{file}: {e}"))?;
        check_layer(file, descriptor, &bytes).map_err(|why| format!("cached {why}"))?;
        expected.push(file);
        files.push((file.clone(), bytes));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| e.to_string())?;
    for entry in entries {
        let name = entry.map_err(|e| e.to_string())?.file_name();
        let name = name.to_string_lossy();
        if !expected.contains(&name.as_ref()) {
            return Err(format!("{name} is no file of the artifact"));
        }
    }
    let name = layers[0].0.trim_end_matches(".wasm").to_string();
    Ok(Verified { name, files })
}

#[cfg(test)]
mod tests {
    use super::{read_file, remove_entry, write_new};

    #[test]
    fn a_cache_file_is_read_only_as_a_regular_file_within_its_cap_and_never_through_a_link() {
        // Arrange
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"secret").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let big = dir.path().join("big");
        std::fs::write(&big, vec![0u8; 100]).unwrap();

        // Act / Assert
        assert_eq!(read_file(&outside, 6).unwrap(), b"secret");
        assert!(read_file(&link, 100).is_err(), "a link is not followed");
        let why = read_file(&fifo, 100).unwrap_err().to_string();
        assert!(why.contains("not a regular file"), "{why}");
        assert!(read_file(&big, 99).unwrap_err().to_string().contains("cap"));
    }

    #[test]
    fn writing_over_a_planted_link_replaces_the_link_and_removing_one_leaves_its_target() {
        // Arrange
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep me").unwrap();
        let planted = dir.path().join("refs.partial");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let victim_dir = dir.path().join("data");
        std::fs::create_dir(&victim_dir).unwrap();
        std::fs::write(victim_dir.join("db"), b"rows").unwrap();
        let entry = dir.path().join("entry");
        std::os::unix::fs::symlink(&victim_dir, &entry).unwrap();

        // Act
        write_new(&planted, b"sha256:x").unwrap();
        remove_entry(&entry).unwrap();

        // Assert
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
        assert_eq!(std::fs::read(&planted).unwrap(), b"sha256:x");
        assert!(!std::fs::symlink_metadata(&planted).unwrap().is_symlink());
        assert!(std::fs::symlink_metadata(&entry).is_err());
        assert_eq!(std::fs::read(victim_dir.join("db")).unwrap(), b"rows");
    }
}
