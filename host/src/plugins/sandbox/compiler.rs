//! Where a component is compiled: in a child process of this same binary (`loanhost
//! compile-worker`) under an address-space limit and a deadline, at a lower CPU priority, so
//! that one hostile or pathological file can neither take the host's memory nor stall its
//! start or a reload for longer than the deadline. One compilation runs at a time per host. The
//! worker writes the compiled component back on a pipe; the host reads it (bounded) and
//! deserializes it. With a compile cache, the worker reuses and adds compiled functions in its
//! function cache (`function_cache.rs`). A host embedded in another program (this
//! library's tests) compiles in its own process instead.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use super::cache::CompileCache;
use super::function_cache::FunctionTally;
use super::memories::Memories;

/// The subcommand of the `loanhost` binary that compiles one component.
pub const WORKER_SUBCOMMAND: &str = "compile-worker";
/// Largest component file a plugin may ship (a Python build is about 19 MB, a TypeScript
/// one 13 MB): larger files are refused before they are read.
pub const MAX_COMPONENT_BYTES: u64 = 64 * 1024 * 1024;
/// How the worker's line on standard error starts when it refuses the component itself.
const REFUSED: &str = "refused:";
/// Largest compiled form the host reads back from a worker.
const MAX_COMPILED_BYTES: usize = 512 * 1024 * 1024;
/// How the host's request to a worker starts; the component's bytes follow the request.
const REQUEST_MAGIC: &[u8; 4] = b"LHC1";
/// Longest compile cache path a request may name.
const MAX_CACHE_PATH_BYTES: usize = 4096;
/// How the worker's line on standard error starts that says where its functions came from.
const FUNCTIONS: &str = "functions:";

/// A component compiled by a worker.
pub(crate) struct WorkerOutput {
    /// Its compiled form, as `Component::serialize` writes it.
    pub(crate) bytes: Vec<u8>,
    /// Where its functions came from, when it had a function cache.
    pub(crate) functions: Option<FunctionTally>,
}

/// The request's start: the magic, the engine settings to compile for (`memories`), then
/// whether the worker keeps compiled functions in the compile cache `cache` (its key, its
/// folder's path length and path).
fn request_header(memories: Memories, cache: Option<&CompileCache>) -> Vec<u8> {
    let mut header = REQUEST_MAGIC.to_vec();
    header.push(match memories {
        Memories::Checked => 0,
        Memories::Guarded => 1,
    });
    match cache {
        None => header.push(0),
        Some(cache) => {
            let path = cache.dir().as_os_str().as_encoded_bytes();
            header.push(1);
            header.extend_from_slice(&cache.key());
            header.extend_from_slice(&(path.len() as u32).to_le_bytes());
            header.extend_from_slice(path);
        }
    }
    header
}

/// A request's start, as the worker reads it: the settings to compile for, and the function
/// cache's folder and key.
type RequestHeader = (Memories, Option<(PathBuf, [u8; 32])>);

/// Reads a request's start (see [`request_header`]).
fn read_request_header(input: &mut impl std::io::Read) -> Result<RequestHeader, String> {
    let mut start = [0u8; 6];
    input
        .read_exact(&mut start)
        .map_err(|e| format!("cannot read the request: {e}"))?;
    if &start[..4] != REQUEST_MAGIC {
        return Err("the request is not from this loanhost binary".into());
    }
    let memories = match start[4] {
        0 => Memories::Checked,
        1 => Memories::Guarded,
        _ => return Err("the request is not from this loanhost binary".into()),
    };
    let cache = match start[5] {
        0 => None,
        1 => {
            let mut key = [0u8; 32];
            let mut len = [0u8; 4];
            input
                .read_exact(&mut key)
                .and_then(|_| input.read_exact(&mut len))
                .map_err(|e| format!("cannot read the request: {e}"))?;
            let len = u32::from_le_bytes(len) as usize;
            if len > MAX_CACHE_PATH_BYTES {
                return Err("the request names a cache path that is too long".into());
            }
            let mut path = vec![0u8; len];
            input
                .read_exact(&mut path)
                .map_err(|e| format!("cannot read the request: {e}"))?;
            // SAFETY: the bytes were written by `as_encoded_bytes` of an `OsStr` in the host,
            // this same binary on this same platform.
            let path = unsafe { std::ffi::OsString::from_encoded_bytes_unchecked(path) };
            Some((PathBuf::from(path), key))
        }
        _ => return Err("the request is not from this loanhost binary".into()),
    };
    Ok((memories, cache))
}

/// The bounds of one compilation in a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileLimits {
    /// The worker is killed after this long (`LOANHOST_COMPILE_TIMEOUT_SECS`).
    pub timeout: Duration,
    /// The worker's address space, in MiB (`LOANHOST_COMPILE_MEMORY_MIB`): its allocations
    /// fail past it, and it exits.
    pub memory_mib: u64,
}

impl Default for CompileLimits {
    fn default() -> Self {
        CompileLimits {
            timeout: Duration::from_secs(300),
            memory_mib: 4096,
        }
    }
}

/// How the host compiles components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compiler {
    /// In a child process: `program compile-worker`, under `limits`.
    Isolated {
        /// The `loanhost` binary.
        program: PathBuf,
        /// Its bounds.
        limits: CompileLimits,
    },
    /// On a thread of this process (a host embedded in a program that is not `loanhost`).
    InProcess,
}

impl Compiler {
    /// Isolated in this very executable when it is the `loanhost` binary; in process
    /// otherwise (a test harness embedding the host cannot run `compile-worker`).
    pub fn for_this_process(limits: CompileLimits) -> Compiler {
        match std::env::current_exe() {
            Ok(exe) if exe.file_stem().is_some_and(|s| s == "loanhost") => Compiler::Isolated {
                program: exe,
                limits,
            },
            _ => Compiler::InProcess,
        }
    }
}

/// What a compilation leaves the host under its memory limit: the host goes on serving (and
/// may grow) while its worker compiles.
pub const HOST_HEADROOM_MIB: u64 = 192;
/// The least a worker is started with: under it the limit has no room for a compilation,
/// and the plugin is refused without starting one.
pub const MIN_COMPILE_MIB: u64 = 128;

/// The worker's address space for a compilation now: the configured bound, or less where the
/// host runs under a memory limit (cgroup v2 `memory.max` of its cgroup or any above it) —
/// what the tightest limit leaves beside what its cgroup uses already, less
/// [`HOST_HEADROOM_MIB`]. The worker shares the host's cgroup, so a bound past that would get
/// the host killed for the worker's memory. `Err` when there is no room for a compilation.
pub fn memory_for_compiling(configured_mib: u64, cgroups: &Path) -> Result<u64, String> {
    bound_within(configured_mib, cgroup_room_mib(cgroups))
}

/// The worker's bound for `configured_mib` where the host's limits leave `room` MiB.
fn bound_within(configured_mib: u64, room: Option<u64>) -> Result<u64, String> {
    let Some(room) = room else {
        return Ok(configured_mib);
    };
    let bound = room.saturating_sub(HOST_HEADROOM_MIB).min(configured_mib);
    if bound < MIN_COMPILE_MIB {
        return Err(format!(
            "the host's memory limit (cgroup memory.max) leaves {room} MiB beside what it uses, \
             too little to compile a plugin with {HOST_HEADROOM_MIB} MiB kept for serving: \
             raise the limit (docs/deploy.md says what each kind of plugin needs)"
        ));
    }
    Ok(bound)
}

/// The least room, in MiB, that any memory limit on this process's cgroup path leaves
/// (`memory.max` less `memory.current`), under `root` (`/sys/fs/cgroup`); `None` without one.
fn cgroup_room_mib(root: &Path) -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    room_on_path(root, path)
}

/// As [`cgroup_room_mib`] for the cgroup `path` (`/kubepods/…`) under `root`.
fn room_on_path(root: &Path, path: &str) -> Option<u64> {
    let read = |dir: &Path, file: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let mut dir = root.join(path.trim_start_matches('/'));
    let mut least: Option<u64> = None;
    loop {
        if let (Some(max), Some(current)) = (read(&dir, "memory.max"), read(&dir, "memory.current"))
        {
            let room = max.saturating_sub(current) / (1024 * 1024);
            least = Some(least.map_or(room, |l| l.min(room)));
        }
        if dir == root || !dir.pop() || !dir.starts_with(root) {
            break;
        }
    }
    least
}

/// One compilation at a time per host: each may take a worker's whole memory bound.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Compiles `wasm` in a worker, reusing and adding compiled functions in the function cache
/// of `cache` when given; returns the compiled component or why not.
pub(crate) fn compile_isolated(
    program: &Path,
    limits: CompileLimits,
    memories: Memories,
    wasm: &[u8],
    cache: Option<&CompileCache>,
) -> Result<WorkerOutput, String> {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let memory_mib = memory_for_compiling(limits.memory_mib, Path::new("/sys/fs/cgroup"))?;
    let mut child = Command::new(program)
        .arg(WORKER_SUBCOMMAND)
        .env("LOANHOST_COMPILE_MEMORY_MIB", memory_mib.to_string())
        // The allocator reserves address space in 64 MiB arenas (not its default 1 GiB), so
        // the limit bounds what the compilation uses rather than what was reserved.
        .env("MIMALLOC_ARENA_RESERVE", "64MiB")
        .env("RUST_BACKTRACE", "0")
        .env("COMPILE_WORKER_PARENT_PID", std::process::id().to_string())
        .env_remove("LOANHOST_OTLP_ENDPOINT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the compiler ({}): {e}", program.display()))?;
    let pid = child.id();
    let (stdin, mut stdout, mut stderr) = (
        child.stdin.take().expect("piped stdin"),
        child.stdout.take().expect("piped stdout"),
        child.stderr.take().expect("piped stderr"),
    );
    let (done, deadline) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let expired = matches!(
            deadline.recv_timeout(limits.timeout),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
        );
        if expired {
            // SAFETY: `kill` with a pid this thread's process spawned and has not yet
            // reaped (the reaping `wait` happens after this thread is joined).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        expired
    });
    let mut input = request_header(memories, cache);
    input.extend_from_slice(wasm);
    let writer = std::thread::spawn(move || {
        let mut stdin = stdin;
        let _ = stdin.write_all(&input);
    });
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_string(&mut text);
        text
    });
    let mut compiled = Vec::new();
    let read = (&mut stdout)
        .take(MAX_COMPILED_BYTES as u64 + 1)
        .read_to_end(&mut compiled);
    if compiled.len() > MAX_COMPILED_BYTES {
        // SAFETY: as above; the child is reaped below.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    }
    let status = child.wait();
    let _ = done.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    let _ = writer.join();
    let errors = errors.join().unwrap_or_default();
    if timed_out {
        return Err(format!(
            "compilation did not finish within {} s (LOANHOST_COMPILE_TIMEOUT_SECS)",
            limits.timeout.as_secs()
        ));
    }
    if compiled.len() > MAX_COMPILED_BYTES {
        return Err(format!(
            "the compiled component is over {MAX_COMPILED_BYTES} bytes"
        ));
    }
    let status = status.map_err(|e| format!("compiler: {e}"))?;
    read.map_err(|e| format!("cannot read the compiler's output: {e}"))?;
    if !status.success() {
        let why = errors
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        // A refusal of the component is the compiler's own one line; anything else is the
        // worker failing, most likely for its memory bound.
        return Err(match why.strip_prefix(REFUSED) {
            Some(reason) => reason.trim().to_string(),
            None => format!(
                "the compiler stopped ({status}) within its {} MiB (LOANHOST_COMPILE_MEMORY_MIB{}){}",
                memory_mib,
                if memory_mib < limits.memory_mib {
                    ", less under the host's memory limit"
                } else {
                    ""
                },
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {}", why.chars().take(200).collect::<String>())
                }
            ),
        });
    }
    let functions = errors.lines().find_map(|l| {
        let mut counts = l.strip_prefix(FUNCTIONS)?.split_whitespace();
        let mut next = || counts.next()?.parse().ok();
        Some(FunctionTally {
            reused: next()?,
            compiled: next()?,
            refused: next()?,
        })
    });
    Ok(WorkerOutput {
        bytes: compiled,
        functions,
    })
}

/// `loanhost compile-worker`: reads the host's request and a component on standard input (at
/// most [`MAX_COMPONENT_BYTES`]), compiles it with the host's engine settings (and the
/// request's function cache), and writes the compiled form on standard output and where its
/// functions came from on standard error; a failure is one line on standard error and exit
/// code 1. Its address space is limited to `LOANHOST_COMPILE_MEMORY_MIB` before anything is
/// read.
pub fn worker_main() -> ExitCode {
    // One line for any failure, read by the host.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        eprintln!("the compiler failed: {}", what.replace('\n', " "));
    }));
    let memory_mib: u64 = std::env::var("LOANHOST_COMPILE_MEMORY_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CompileLimits::default().memory_mib);
    let bytes = memory_mib.saturating_mul(1024 * 1024);
    let limit = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: `setrlimit` with a valid pointer to an initialised `rlimit`.
    if unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) } != 0 {
        eprintln!(
            "cannot limit the compiler's memory: {}",
            std::io::Error::last_os_error()
        );
        return ExitCode::FAILURE;
    }
    // The worker ends with the host that started it (a killed host leaves no compilation
    // running), and runs below the host's priority: a long compilation yields the cores to
    // requests.
    // SAFETY: `prctl(PR_SET_PDEATHSIG)` with a signal number; `getppid` has no arguments.
    let parent = unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        libc::getppid()
    };
    // The host may have ended before the line above: then this worker has a new parent.
    if std::env::var("COMPILE_WORKER_PARENT_PID").ok() != Some(parent.to_string()) {
        eprintln!("the host that started this compilation has ended");
        return ExitCode::FAILURE;
    }
    // SAFETY: `setpriority` on this process, with plain integer arguments.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 10) };
    let mut stdin = std::io::stdin().lock();
    let (memories, functions) = match read_request_header(&mut stdin) {
        Ok((memories, None)) => (memories, None),
        Ok((memories, Some((dir, key)))) => {
            match super::function_cache::FunctionCache::open(&dir, key) {
                Ok(cache) => (memories, Some(std::sync::Arc::new(cache))),
                // Compiled without it: the cache saves time, it is not needed.
                Err(e) => {
                    eprintln!("no function cache in {}: {e}", dir.display());
                    (memories, None)
                }
            }
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut wasm = Vec::new();
    if let Err(e) = stdin.take(MAX_COMPONENT_BYTES + 1).read_to_end(&mut wasm) {
        eprintln!("cannot read the component: {e}");
        return ExitCode::FAILURE;
    }
    if wasm.len() as u64 > MAX_COMPONENT_BYTES {
        eprintln!("the component is over {MAX_COMPONENT_BYTES} bytes");
        return ExitCode::FAILURE;
    }
    let compiled = super::engine_config::compile_without_pool(&wasm, memories, functions.clone());
    match compiled {
        Ok(bytes) => {
            let mut out = std::io::stdout().lock();
            if out.write_all(&bytes).and_then(|_| out.flush()).is_err() {
                return ExitCode::FAILURE;
            }
            if let Some(cache) = functions {
                let t = cache.counts().tally();
                eprintln!("{FUNCTIONS} {} {} {}", t.reused, t.compiled, t.refused);
                cache.prune(super::function_cache::MAX_BYTES);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            let first = format!("{e:#}");
            eprintln!(
                "{REFUSED} {}",
                first.lines().next().unwrap_or("unknown error")
            );
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{bound_within, room_on_path, HOST_HEADROOM_MIB, MIN_COMPILE_MIB};

    #[test]
    fn the_workers_bound_is_what_the_tightest_memory_limit_above_the_host_leaves() {
        // Arrange: a pod's cgroup with a 1 GiB limit, 200 MiB used, under a node limit with
        // more room; a cgroup without a limit.
        let root = tempfile::tempdir().unwrap();
        let mib = |n: u64| (n * 1024 * 1024).to_string();
        let pod = root.path().join("kubepods/pod1");
        std::fs::create_dir_all(&pod).unwrap();
        std::fs::write(pod.join("memory.max"), mib(1024)).unwrap();
        std::fs::write(pod.join("memory.current"), mib(200)).unwrap();
        std::fs::write(root.path().join("kubepods/memory.max"), mib(8192)).unwrap();
        std::fs::write(root.path().join("kubepods/memory.current"), mib(4096)).unwrap();
        let free = root.path().join("user.slice");
        std::fs::create_dir_all(&free).unwrap();
        std::fs::write(free.join("memory.max"), "max\n").unwrap();
        std::fs::write(free.join("memory.current"), mib(10)).unwrap();

        // Act
        let pods = room_on_path(root.path(), "/kubepods/pod1");
        let unlimited = room_on_path(root.path(), "/user.slice");

        // Assert
        assert_eq!(pods, Some(824));
        assert_eq!(unlimited, None);
        assert_eq!(bound_within(4096, pods), Ok(824 - HOST_HEADROOM_MIB));
        assert_eq!(bound_within(512, pods), Ok(512));
        assert_eq!(bound_within(4096, unlimited), Ok(4096));
        let tight = bound_within(4096, Some(HOST_HEADROOM_MIB + MIN_COMPILE_MIB - 1));
        assert!(tight.unwrap_err().contains("too little to compile"));
    }
}
