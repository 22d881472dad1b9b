//! What the HTTP benchmarks share: the configuration of a server on loopback that one caller
//! drives as fast as it can.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

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
