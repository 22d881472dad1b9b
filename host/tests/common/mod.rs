//! Helpers shared by the host's binary-level tests (`plugin_guide`, `telemetry`, `attack`,
//! `scale_out`); each uses a part of them.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

/// `loanhost serve` on `127.0.0.1:{port}`, answering for `base_url`, with the dev IdP, over
/// `database_url`, `plugins` and `cache`, in a clean environment (`PATH` only, `RUST_LOG=warn`).
/// The caller adds its own settings and output, then spawns it.
pub fn serve(
    port: u16,
    base_url: &str,
    database_url: &str,
    plugins: &Path,
    cache: &Path,
) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_loanhost"));
    command
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .env("LOANHOST_LISTEN", format!("127.0.0.1:{port}"))
        .env("LOANHOST_BASE_URL", base_url)
        .env("LOANHOST_DATABASE_URL", database_url)
        .env("LOANHOST_PLUGIN_DIR", plugins)
        .env("LOANHOST_CACHE_DIR", cache)
        .env("LOANHOST_DEV_IDP", "true");
    command
}

/// A free loopback port (the server is told to bind it).
pub fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap().port()
}

/// Waits until `GET {base}/health` answers `200` from `child`, started with its standard error
/// in `log`: bounded at 10 minutes (a debug build compiles every plugin before it binds, far
/// slower with both cores busy: the bound is for a hung server, not a slow one); when the
/// process exits or the time runs out, the panic message carries its log. (`/ready` would
/// wait for a loaded tool, which these servers may not have yet.)
pub async fn wait_until_serving(base: &str, child: &mut std::process::Child, log: &Path) {
    let client = reqwest::Client::new();
    let started = std::time::Instant::now();
    loop {
        if client
            .get(format!("{base}/health"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
        {
            return;
        }
        let exited = child.try_wait().unwrap();
        if exited.is_some() || started.elapsed() > Duration::from_secs(600) {
            let why = match exited {
                Some(status) => format!("exited ({status})"),
                None => "did not answer /health within 10 minutes".to_string(),
            };
            let text = std::fs::read_to_string(log).unwrap_or_default();
            panic!("the server at {base} {why}; its log:\n{text}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the log file `log` of `child` holds a line containing every one of `needles`
/// (e.g. the reloader's `plugin loaded` line naming a tool). A signal, not a poll that spends
/// anything: only the file is read, so a slow machine makes the wait longer, never the outcome
/// different. Bounded at 15 minutes (a hung build, not a slow one); when the process exits or
/// the time runs out, the panic message carries the log.
pub async fn wait_for_log_line(log: &Path, needles: &[&str], child: &mut std::process::Child) {
    let started = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text
            .lines()
            .any(|line| needles.iter().all(|n| line.contains(n)))
        {
            return;
        }
        let exited = child.try_wait().unwrap();
        if exited.is_some() || started.elapsed() > Duration::from_secs(900) {
            panic!("no log line with {needles:?} (exited: {exited:?}); the log:\n{text}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The reference registry (Debian's `docker-registry`) on a free loopback port, anonymous and
/// plain HTTP, storing under `dir`; its `host:port` once it says it listens. Killed when the
/// child is dropped.
pub async fn registry(dir: &Path) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let host = format!("127.0.0.1:{}", free_port());
    let config = dir.join("registry.yml");
    let yaml = format!(
        "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {host}\n",
        dir.join("registry-data").display()
    );
    std::fs::write(&config, yaml).unwrap();
    let mut child = tokio::process::Command::new("docker-registry")
        .arg("serve")
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("docker-registry (Debian's package; make test installs it)");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line.contains("listening on") {
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return (child, host);
        }
    }
    panic!("the registry ended before it listened");
}
