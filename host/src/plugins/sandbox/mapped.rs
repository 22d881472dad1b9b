//! Compiled components loaded through an unnamed file, so that their code is paged in as it
//! runs instead of held in memory whole. An interpreter plugin's compiled form is 40 to 60 MB
//! (CPython's or SpiderMonkey's every function) of which a report's calls run a small part;
//! read into memory, all of it stays resident in every host that serves the plugin.
//!
//! The bytes are written, after their MAC verified (or as this host's own compile worker sent
//! them), into a file created without a name (`O_TMPFILE | O_EXCL`, mode 0600) in the compile
//! cache's folder, and wasmtime maps that file. Mapping the cache entry itself would let whoever
//! can write the cache folder change the code after its MAC was checked; a file with no name
//! can be neither opened through the folder nor linked into it, so the mapped code is the
//! checked code. (Only a process that may inspect this one's open files, under its own user,
//! could reach it: that process could read the cache key too.) Where the filesystem cannot make
//! unnamed files, the component is read into memory as before.

use std::io::Write as _;
use std::path::Path;

use wasmtime::component::Component;
use wasmtime::Engine;

/// The component compiled as `bytes`: mapped from an unnamed file in `dir` when there is one
/// and that works here, else deserialized in memory.
///
/// # Safety
/// The contract of `Component::deserialize`: `bytes` must be what `Component::serialize`
/// wrote, from a source this host trusts (an entry of its compile cache whose MAC verified, or
/// its own compile worker's output).
pub(crate) unsafe fn deserialize(
    engine: &Engine,
    dir: Option<&Path>,
    bytes: &[u8],
) -> wasmtime::Result<Component> {
    if let Some(component) = dir.and_then(|dir| deserialize_mapped(engine, dir, bytes)) {
        return Ok(component);
    }
    // SAFETY: the caller's contract, the same as `Component::deserialize`'s.
    unsafe { Component::deserialize(engine, bytes) }
}

/// `bytes` (see [`deserialize`]) mapped from an unnamed file in `dir`; `None` when no such
/// file could be made or mapped here.
fn deserialize_mapped(engine: &Engine, dir: &Path, bytes: &[u8]) -> Option<Component> {
    let file = match unnamed_file(dir) {
        Ok(file) => file,
        Err(e) => {
            tracing::debug!(dir = %dir.display(), error = %e, "no unnamed file: the compiled component is read into memory");
            return None;
        }
    };
    let mut writer = &file;
    if let Err(e) = writer.write_all(bytes) {
        tracing::debug!(error = %e, "cannot write the unnamed file: the compiled component is read into memory");
        return None;
    }
    let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&file));
    // SAFETY: the file holds exactly `bytes`, which the caller vouches for (the contract of
    // `Component::deserialize`), and it has no name: nothing that could not already change
    // this host's cache key can open it or change it while it is mapped (module doc). wasmtime
    // checks the engine settings it was compiled with.
    let component = unsafe { Component::deserialize_file(engine, &path) };
    match component {
        Ok(component) => Some(component),
        Err(e) => {
            tracing::debug!(error = %e, "cannot map the compiled component: it is read into memory");
            None
        }
    }
}

/// A file with no name in `dir`, readable and writable by this process only.
fn unnamed_file(dir: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_EXCL | libc::O_CLOEXEC)
        .open(dir)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unnamed_file_has_no_name_in_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let file = super::unnamed_file(dir.path());
        let Ok(file) = file else {
            // A filesystem without unnamed files: the loader reads into memory instead.
            return;
        };
        use std::io::Write as _;
        (&file).write_all(b"compiled").unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&file));
        assert_eq!(std::fs::read(path).unwrap(), b"compiled");
    }
}
