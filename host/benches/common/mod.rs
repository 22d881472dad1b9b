//! What the HTTP benchmarks share: the configuration of a server on loopback that one caller
//! drives as fast as it can.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

#[allow(dead_code)]
/// `LOANHOST_*` settings for a server on `127.0.0.1:{port}` with the dev IdP, no audit log
/// (its cost has a benchmark of its own), and the per-caller budgets lifted (they are measured
/// by the attack suite, not here).
pub fn server_env(
    port: u16,
    database_url: String,
    plugin_dir: &Path,
    cache_dir: &Path,
) -> BTreeMap<String, String> {
    [
        ("LOANHOST_LISTEN", format!("127.0.0.1:{port}")),
        ("LOANHOST_BASE_URL", format!("http://127.0.0.1:{port}")),
        ("LOANHOST_DATABASE_URL", database_url),
        ("LOANHOST_PLUGIN_DIR", plugin_dir.display().to_string()),
        ("LOANHOST_CACHE_DIR", cache_dir.display().to_string()),
        ("LOANHOST_DEV_IDP", "true".into()),
        ("LOANHOST_AUDIT_LOG", "off".into()),
        ("LOANHOST_CALLER_MAX_CONCURRENT", "1000".into()),
        ("LOANHOST_CALLER_CALLS_PER_MINUTE", "1000000".into()),
        ("LOANHOST_CALLER_PLUGIN_SECONDS_PER_MINUTE", "100000".into()),
        ("LOANHOST_CALLER_RESULT_MIB_PER_MINUTE", "1000000".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[allow(dead_code)]
/// One authenticated `tools/call` of `tool` with `arguments` at `url` (`…/mcp`); the whole
/// JSON-RPC reply.
pub async fn tools_call(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    tool: &str,
    arguments: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    client
        .post(url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A port free on loopback now.
#[allow(dead_code)]
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A plugin directory under `dir` holding `tools` copied from `plugins/dist`.
#[allow(dead_code)]
pub fn plugins_dir(dir: &Path, tools: &[&str]) -> std::path::PathBuf {
    let dist = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins/dist");
    let plugins = dir.join(format!("plugins-{}", free_port()));
    std::fs::create_dir_all(&plugins).unwrap();
    for tool in tools {
        for ext in ["wasm", "toml"] {
            std::fs::copy(
                dist.join(format!("{tool}.{ext}")),
                plugins.join(format!("{tool}.{ext}")),
            )
            .expect("run `make plugins` first");
        }
    }
    plugins
}

/// Waits (at most 30 s) until `url` answers 200.
#[allow(dead_code)]
pub async fn wait_until_up(client: &reqwest::Client, url: &str) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < until {
        if let Ok(r) = client.get(url).send().await {
            if r.status().is_success() {
                return;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{url} did not come up within 30 s");
}
