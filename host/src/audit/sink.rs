//! Where audit lines go: stdout, or a file appended to with its chain's head beside it
//! (`<log>.head`), and the audit key that seals them.

use std::io::Write;
use std::os::fd::AsFd as _;
use std::os::unix::fs::FileTypeExt as _;
use std::path::Path;

use super::chain::{self, Head};
use super::verify;

/// An opened sink: where lines go, the head its chain continues from, the head file to keep
/// up to date (a file log only), the chain's name (the seal of its first line) when it is
/// known, and whether a write may block for as long as a reader pleases (a terminal, a
/// socket) rather than go to the page cache (a regular file, `/dev/null`) or a [`Pipe`].
pub(super) struct Opened {
    pub(super) out: Box<dyn Write + Send>,
    pub(super) head: Head,
    pub(super) head_file: Option<std::fs::File>,
    pub(super) chain: Option<String>,
    pub(super) may_block: bool,
}

/// Opens `setting` (`stdout`, `-`, or a path). A regular file continues its chain; stdout, or
/// a path that is not a regular file (a pipe, a device), starts one, without a head file. A
/// pipe (a container's stdout) is written through [`Pipe`]: from the calls' own tasks, never
/// blocking their worker.
pub(super) fn open(setting: &str, key: &[u8; 32]) -> Result<Opened, String> {
    let headless = |(out, may_block)| Opened {
        out,
        head: Head::start(),
        head_file: None,
        chain: None,
        may_block,
    };
    if matches!(setting, "stdout" | "-") {
        let stdout = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map(std::fs::File::from);
        return Ok(headless(match stdout {
            Ok(f) => written_as(f, |_| Box::new(std::io::stdout())),
            Err(_) => (Box::new(std::io::stdout()), true),
        }));
    }
    let path = Path::new(setting);
    let open_log = || {
        private(path, true)
            .map_err(|e| format!("cannot open {} for appending: {e}", path.display()))
    };
    if !std::fs::metadata(path).map_or(true, |m| m.is_file()) {
        return Ok(headless(written_as(open_log()?, |log| Box::new(log))));
    }
    let (head, chain) = last_head(key, path)?;
    let log = open_log()?;
    let head_path = verify::head_path(path);
    let head_file = private(&head_path, false)
        .map_err(|e| format!("cannot open {}: {e}", head_path.display()))?;
    Ok(Opened {
        out: Box::new(log),
        head,
        head_file: Some(head_file),
        chain,
        may_block: false,
    })
}

/// How a sink without a head file is written, `f` being its descriptor: through [`Pipe`]
/// when it is a pipe; else as `out` makes it, with whether a write may wait on a reader
/// (anything but a regular file or `/dev/null`).
fn written_as(
    f: std::fs::File,
    out: impl FnOnce(std::fs::File) -> Box<dyn Write + Send>,
) -> (Box<dyn Write + Send>, bool) {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(m) = f.metadata() else {
        return (out(f), true);
    };
    if m.file_type().is_fifo() {
        return (Box::new(Pipe(f)), false);
    }
    let null = std::fs::metadata("/dev/null").map(|n| n.rdev()).ok();
    let may_block = !(m.is_file() || (m.file_type().is_char_device() && Some(m.rdev()) == null));
    (out(f), may_block)
}

/// A pipe written from an async worker without blocking it: each write is first tried
/// without waiting (`pwritev2` with `RWF_NOWAIT`), which a pipe with room for the lines takes
/// at once; what it cannot take then (its reader is behind), or a kernel without `RWF_NOWAIT`
/// for pipes, is written waiting, inside `tokio::task::block_in_place`, so the worker's other
/// tasks move to another thread meanwhile.
pub(super) struct Pipe(pub(super) std::fs::File);

impl Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use std::os::fd::AsRawFd as _;
        let iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: one iovec over `buf`, which outlives the call; the descriptor is ours.
        let n = unsafe { libc::pwritev2(self.0.as_raw_fd(), &iov, 1, -1, libc::RWF_NOWAIT) };
        if let Ok(n) = usize::try_from(n) {
            return Ok(n);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EOPNOTSUPP | libc::EINVAL | libc::ENOSYS) => {
                waiting(|| (&self.0).write(buf))
            }
            _ => Err(e),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `f`, which may block, off the async worker's tasks when on one.
fn waiting<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// `path` opened to append (`append`) or to overwrite in place, created with mode 0600.
fn private(path: &Path, append: bool) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(false);
    }
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// The audit key in `path`: 32 bytes, made once (mode 0600) when the file is missing.
pub(super) fn audit_key(path: &Path) -> Result<[u8; 32], String> {
    let bytes = crate::secret_file::read_or_create(path, || {
        use rand::RngCore as _;
        let mut key = vec![0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut key);
        Ok(key)
    })
    .map_err(|e| {
        format!(
            "cannot read or create the audit key {}: {e}",
            path.display()
        )
    })?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        format!(
            "{}: an audit key is 32 bytes, this file has {}",
            path.display(),
            bytes.len()
        )
    })
}

/// The chain's head for a log at `path`: its last line's, or, when it has none, the head
/// file's, or a new chain; and the chain's name, from the head file or the log's first line.
/// A last line that is not sealed by this key is refused: the host would otherwise chain onto
/// a line someone else wrote.
fn last_head(key: &[u8; 32], path: &Path) -> Result<(Head, Option<String>), String> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let tail = match std::fs::File::open(path) {
        Ok(mut f) => {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            let from = len.saturating_sub(TAIL_BYTES);
            let mut buf = Vec::new();
            f.seek(SeekFrom::Start(from))
                .and_then(|_| f.read_to_end(&mut buf))
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            buf
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let text = tail.strip_suffix(b"\n").unwrap_or(&tail);
    if let Some(last) = text
        .rsplit(|b| *b == b'\n')
        .next()
        .filter(|l| !l.is_empty())
    {
        let sealed = chain::open(key, last).map_err(|e| {
            format!(
                "{}: its last line cannot be chained onto: {e} (start a new log: move this \
                 one aside)",
                path.display()
            )
        })?;
        let head = Head {
            seq: sealed.seq,
            seal: sealed.seal,
        };
        return Ok((head, verify::chain_of(key, &[path.to_path_buf()])));
    }
    let head_path = verify::head_path(path);
    match std::fs::read_to_string(&head_path) {
        Ok(text) if text.trim().is_empty() => Ok((Head::start(), None)),
        Ok(text) => chain::read_head_and_chain(key, &text).ok_or_else(|| {
            format!(
                "{}: the chain's head is not sealed by the audit key",
                head_path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((Head::start(), None)),
        Err(e) => Err(format!("cannot read {}: {e}", head_path.display())),
    }
}

/// Bytes read from a log's end to find its last line (a line is bounded well below this).
const TAIL_BYTES: u64 = 1 << 20;

/// Writes `bytes` at the start of `f`, in one system call (`pwrite`): the head file is
/// rewritten in place, of a fixed length.
pub(super) fn write_at_start(f: &std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, bytes, 0)
}
