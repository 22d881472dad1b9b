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

/// Waits (bounded: 20 s) until `GET {base}/health` answers `200`; panics otherwise.
/// (`/ready` would wait for a loaded tool, which these servers may not have yet.)
pub async fn wait_until_up(base: &str) {
    let client = reqwest::Client::new();
    for _ in 0..400 {
        if client
            .get(format!("{base}/health"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server at {base} did not start");
}
