//! The real peers a test talks to: the reference OCI registry and the Node clients and
//! servers of `tests/clients`. Each is killed when its child is dropped.

use std::path::Path;

use serde_json::Value;
use tokio::io::AsyncBufReadExt as _;

use crate::net::free_port;
use crate::paths::clients;

/// The reference registry (Debian's `docker-registry`) on a free loopback port, anonymous and
/// plain HTTP, storing under `dir`; its `host:port` once it says it listens.
pub async fn registry(dir: &Path) -> (tokio::process::Child, String) {
    let host = format!("127.0.0.1:{}", free_port());
    let config = dir.join("registry.yml");
    let yaml = format!(
        "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {host}\n",
        dir.join("registry-data").display()
    );
    std::fs::write(&config, yaml).unwrap();
    (serve_registry(&config).await, host)
}

/// The reference registry (Debian's `docker-registry`) serving with the configuration at
/// `config`, once it says it listens (bounded at a minute); its log is read on so that it never
/// blocks on a full pipe.
pub async fn serve_registry(config: &Path) -> tokio::process::Child {
    let mut child = tokio::process::Command::new("docker-registry")
        .arg("serve")
        .arg(config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("docker-registry (Debian's package; make test installs it)");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let listening = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("listening on") {
                return;
            }
        }
        panic!("the registry ended before it listened");
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), listening)
        .await
        .expect("the registry listened within a minute");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

/// A Node peer from `tests/clients` (`node` is the interpreter to use): started with `env`,
/// it prints one JSON line about itself first and serves until stdin closes.
pub async fn node_peer(
    node: &Path,
    script: &str,
    env: &[(&str, String)],
) -> (tokio::process::Child, Value) {
    let dir = clients();
    assert!(
        dir.join("node_modules").is_dir(),
        "run `make test` (npm ci in tests/clients)"
    );
    let mut cmd = tokio::process::Command::new(node);
    cmd.arg(script).current_dir(&dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {script}: {e}"));
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines
        .next_line()
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{script} printed nothing"));
    (child, serde_json::from_str(&first).unwrap())
}
