//! Secret files made once and shared (the dev IdP's signing key, the compile cache's key):
//! read when present, otherwise created whole and mode 0600, so that hosts started together
//! over one cache folder all end up with the same secret and none sees half of it.
//!
//! A leaf module: it imports nothing of ours.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The contents of the secret file at `path`; when there is none, `make()`'s bytes, written
/// there first.
///
/// The new secret is written and synced to a temporary file beside `path`, then hard-linked
/// to `path`, which fails when another process linked its own first. That process's secret
/// is then read and returned instead, so processes that race all return the same bytes, and
/// `path` never exists with part of a secret in it.
pub fn read_or_create(
    path: &Path,
    make: impl FnOnce() -> std::io::Result<Vec<u8>>,
) -> std::io::Result<Vec<u8>> {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        read => return read,
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let secret = make()?;
    let tmp = temporary_beside(path);
    let linked = write_private(&tmp, &secret).and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(secret),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => std::fs::read(path),
        Err(e) => Err(e),
    }
}

/// A name beside `path` that no other process or thread uses at the same time.
fn temporary_beside(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Writes `bytes` to the new file `path` (mode 0600 on Unix) and syncs it.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn racing_creators_all_return_the_one_secret_written() {
        // Arrange: eight threads released together onto a missing file, each with its own
        // secret, slow to make (like an RSA key), so that they all find the file missing.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys").join("secret");
        let start = std::sync::Barrier::new(8);

        // Act
        let got: Vec<Vec<u8>> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8u8)
                .map(|i| {
                    let (path, start) = (&path, &start);
                    s.spawn(move || {
                        start.wait();
                        read_or_create(path, || {
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Ok(vec![i; 32])
                        })
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap().unwrap())
                .collect()
        });

        // Assert: one secret for all, the one on disk, private, and no temporary file left.
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(on_disk.len(), 32);
        assert!(got.iter().all(|g| *g == on_disk), "{got:?}");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["secret"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn an_existing_secret_is_read_and_never_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, b"kept").unwrap();
        let got = read_or_create(&path, || panic!("made again")).unwrap();
        assert_eq!(got, b"kept");
    }
}
