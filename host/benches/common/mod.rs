//! What the benchmarks share: the runtime they drive, the configuration of a server on
//! loopback, the calls and the load loop. Each benchmark uses a part of it.
#![allow(dead_code)]

pub mod full;
pub mod outside;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

#[allow(unused_imports)] // each benchmark uses a part
pub use loanhost_tests::{free_port, wait_until_up};

/// Per-caller budgets lifted: one caller calls as fast as it can in a benchmark (the attack
/// suite measures the budgets).
pub fn unlimited_callers() -> loanhost::plugins::CallerLimits {
    loanhost::plugins::CallerLimits {
        max_concurrent: 1000,
        calls_per_minute: 100_000_000,
        plugin_seconds_per_minute: 100_000,
        result_mib_per_minute: 1_000_000,
    }
}

/// The runtime every benchmark drives its work on: two workers, as the machine has two cores.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The measuring time of one run of a benchmark with its own harness: `var` seconds if set,
/// else 8 (0.5 under `cargo bench -- --test`); `None` when cargo only lists benchmarks.
pub fn run_seconds(var: &str) -> Option<f64> {
    if std::env::args().any(|a| a == "--list") {
        return None;
    }
    let test_mode = std::env::args().any(|a| a == "--test");
    Some(
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if test_mode { 0.5 } else { 8.0 }),
    )
}

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

/// The agent the single-server benches call as (`agent@example.com`, an Agent), added to `db`.
pub async fn add_agent(db: &loanhost::data::Db) {
    add_agent_as(
        db,
        "00000000-0000-0000-0000-0000000000b2",
        "agent@example.com",
    )
    .await;
}

/// Adds an agent with `id` and `email`, role `Agent`.
pub async fn add_agent_as(db: &loanhost::data::Db, id: &str, email: &str) {
    db.upsert_agent(&loanhost::data::NewAgent {
        id: id.into(),
        email: email.into(),
        roles: vec!["Agent".into()],
        ..Default::default()
    })
    .await
    .unwrap();
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

/// A plugin directory under `dir` holding `tools` copied from `plugins/dist`.
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

/// This process's CPU time so far (user + system), from `/proc/self/stat` (clock ticks of
/// 10 ms: read it over seconds, not calls).
pub fn process_cpu_seconds() -> f64 {
    cpu_seconds_of("self")
}

/// The CPU time (user and system) process `pid` (`self`, or a number) has used, in seconds.
pub fn cpu_seconds_of(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces, hence the last `)`): utime and
    // stime are the 12th and 13th of them.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// What a [`throughput`] run measured.
#[derive(Debug, Clone, Copy)]
pub struct Throughput {
    /// Successful calls per second.
    pub per_second: f64,
    /// This process's CPU time per call, in microseconds: the server's and the load
    /// generator's together (they share the process). Steadier than `per_second` on a shared
    /// machine, where other tenants take wall-clock time but not this process's CPU time.
    pub cpu_us_per_call: f64,
    /// The CPU time per call of the server processes named to [`throughput_of`], in
    /// microseconds (`NaN` when none was named).
    pub server_cpu_us_per_call: f64,
}

/// Requests per second of `connections` loops for `seconds` (after one second of warm-up):
/// loop `i` sends `tools/call` of `tool` with `{}` to `urls[i % n]` with `tokens[i % m]`, and
/// every answer must be a successful result.
pub async fn throughput(
    urls: &[String],
    tokens: &[String],
    tool: &str,
    connections: usize,
    seconds: f64,
) -> Throughput {
    throughput_of(urls, tokens, tool, connections, seconds, &[]).await
}

/// [`throughput`], with the CPU time of the server processes `servers` (their pids) measured
/// over the same window.
pub async fn throughput_of(
    urls: &[String],
    tokens: &[String],
    tool: &str,
    connections: usize,
    seconds: f64,
    servers: &[u32],
) -> Throughput {
    let servers_cpu = || -> f64 {
        servers
            .iter()
            .map(|pid| cpu_seconds_of(&pid.to_string()))
            .sum()
    };
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .build()
        .unwrap();
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}}))
    .unwrap();
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let counting = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for i in 0..connections {
        let (url, token) = (
            urls[i % urls.len()].clone(),
            tokens[i % tokens.len()].clone(),
        );
        let (client, body) = (client.clone(), body.clone());
        let (done, stop, counting) = (done.clone(), stop.clone(), counting.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let r = client
                    .post(&url)
                    .bearer_auth(&token)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap();
                let status = r.status();
                let text = r.text().await.unwrap();
                assert!(
                    status.is_success() && text.contains("\"isError\":false"),
                    "{status}: {text}"
                );
                if counting.load(Ordering::Relaxed) {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    counting.store(true, Ordering::Relaxed);
    let (started, cpu, server_cpu) = (
        std::time::Instant::now(),
        process_cpu_seconds(),
        servers_cpu(),
    );
    tokio::time::sleep(std::time::Duration::from_secs_f64(seconds)).await;
    let n = done.load(Ordering::Relaxed);
    let (elapsed, cpu, server_cpu) = (
        started.elapsed().as_secs_f64(),
        process_cpu_seconds() - cpu,
        servers_cpu() - server_cpu,
    );
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    Throughput {
        per_second: n as f64 / elapsed,
        cpu_us_per_call: cpu * 1e6 / n as f64,
        server_cpu_us_per_call: if servers.is_empty() {
            f64::NAN
        } else {
            server_cpu * 1e6 / n as f64
        },
    }
}
