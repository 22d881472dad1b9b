//! Serving the `loanhost` binary in a test and waiting for it: on its health, on a line of its
//! log (a signal, never a poll that spends a budget), or on a URL.

use std::path::Path;
use std::time::Duration;

/// `binary serve` (a `loanhost` binary) on `127.0.0.1:{port}`, answering for `base_url`, with the dev IdP, over
/// `database_url`, `plugins` and `cache`, in a clean environment (`PATH` only, `RUST_LOG=warn`).
/// The caller adds its own settings and output, then spawns it.
pub fn serve(
    binary: impl AsRef<Path>,
    port: u16,
    base_url: &str,
    database_url: &str,
    plugins: &Path,
    cache: &Path,
) -> std::process::Command {
    let mut command = std::process::Command::new(binary.as_ref());
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

/// Waits (at most 30 s) until `url` answers 200.
pub async fn wait_until_up(client: &reqwest::Client, url: &str) {
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < until {
        if let Ok(r) = client.get(url).send().await {
            if r.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{url} did not come up within 30 s");
}
