//! The `languages` run through servers, as a caller sees it: one `loanhost serve` process per
//! set of plugins (the release binary with its defaults, audit line and `info` log included,
//! but the calls per minute lifted; its compile worker and compile cache, on the bench's
//! SQLite file), called over HTTP with a dev IdP token, and the native Python MCP server
//! (`native_mcp_server.py`) beside them. Each server's resident memory is read from /proc.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::common;

/// A server process on loopback, killed when dropped.
pub struct Server {
    child: Child,
    /// Its `/mcp` URL.
    pub url: String,
    /// A token of the demo Agent it accepts.
    pub token: String,
    /// From start to ready (its plugins compiled or read from the cache).
    pub started_in: Duration,
    /// The public keys its tokens are signed with (a JWKS).
    pub jwks: Value,
    /// The issuer and audience of its tokens.
    pub issuer: String,
    /// See `issuer`.
    pub audience: String,
    /// Its `/metrics` URL (a loanhost server's own listener; empty for the native server).
    pub metrics: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Resident memory of the server process, in MiB.
    pub fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kb| kb / 1024.0)
    }
}

/// The demo Agent every call is made as.
pub const AGENT: &str = "agent@demo.loanhost.local";

/// How a server is set up: as a user runs it, or with every budget lifted (for steps that
/// call it more than a user's budget allows, to measure something else).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// The server's defaults, but the calls per minute (see [`loanhost`]).
    AsUsersRunIt,
    /// Every per-caller budget lifted, the audit off.
    Lifted,
}

/// Starts `loanhost serve` on `db` serving the plugin folder `plugins`, set up as `setup`
/// says; returns once `/ready` answers. `cache` holds its compiled plugins (kept between
/// runs).
pub async fn loanhost(
    client: &reqwest::Client,
    db: &Path,
    plugins: &Path,
    cache: &Path,
    log: &Path,
    setup: Setup,
) -> Server {
    let port = common::free_port();
    let mut env: BTreeMap<String, String> =
        common::server_env(port, format!("sqlite://{}", db.display()), plugins, cache);
    env.insert("LOANHOST_TODAY".into(), "2026-11-22".into());
    // As a user runs it (issue #75): the server's defaults, its audit line on (to stdout) and
    // its log at `info`, but for the calls per minute, whose default (600, bursts of 100) would
    // refuse this bench's calls from about the 101st.
    let lifted = [
        "LOANHOST_AUDIT_LOG",
        "LOANHOST_CALLER_MAX_CONCURRENT",
        "LOANHOST_CALLER_PLUGIN_SECONDS_PER_MINUTE",
        "LOANHOST_CALLER_RESULT_MIB_PER_MINUTE",
    ];
    if setup == Setup::AsUsersRunIt {
        for setting in lifted {
            env.remove(setting);
        }
    }
    let metrics_port = common::free_port();
    env.insert(
        "LOANHOST_METRICS_LISTEN".into(),
        format!("127.0.0.1:{metrics_port}"),
    );
    let config = loanhost::config::Config::from_map(&env).unwrap();
    let key = loanhost::oauth::devidp::SigningKey::load_or_create(
        &loanhost::app::dev_idp_key_path(&config),
    )
    .unwrap();
    let token = key
        .mint(
            &config.idp.issuer,
            AGENT,
            &config.mcp_audience,
            "",
            Duration::from_secs(3600),
        )
        .unwrap();
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_loanhost"))
        .arg("serve")
        .envs(&env)
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = Server {
        child,
        url: format!("{base}/mcp"),
        token,
        started_in: Duration::ZERO,
        jwks: serde_json::to_value(key.jwks()).unwrap(),
        issuer: config.idp.issuer.clone(),
        audience: config.mcp_audience.clone(),
        metrics: format!("http://127.0.0.1:{metrics_port}/metrics"),
    };
    // Ready when `/ready` says so; a plugin it refused ends the run with the reason.
    let ready = format!("{base}/ready");
    until_up(&mut server.child, log, "the server", || async {
        let Ok(r) = client.get(&ready).send().await else {
            return false;
        };
        if r.status().is_success() {
            return true;
        }
        let body: Value = r.json().await.unwrap_or_default();
        let refused = &body["refused"];
        assert!(
            refused.as_object().is_none_or(|r| r.is_empty()),
            "the server refused plugins: {refused}"
        );
        false
    })
    .await;
    server.started_in = started.elapsed();
    server
}

/// Starts the native Python MCP server on `db`, trusting `key`'s tokens for the same issuer
/// and audience as a loanhost server on `like`.
pub async fn native(
    client: &reqwest::Client,
    python: &Path,
    db: &Path,
    like: &Server,
    scratch: &Path,
    log: &Path,
) -> Server {
    let port = common::free_port();
    // The loanhost server's own dev IdP key signed `like.token`: its JWKS is what the native
    // server trusts.
    let jwks = scratch.join("jwks.json");
    std::fs::write(&jwks, like.jwks.to_string()).unwrap();
    let started = Instant::now();
    let child = Command::new(python)
        .arg(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("benches/languages/native_mcp_server.py"),
        )
        .arg(port.to_string())
        .arg(db)
        .arg(&jwks)
        .arg(&like.issuer)
        .arg(&like.audience)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut server = Server {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
        token: like.token.clone(),
        started_in: Duration::ZERO,
        jwks: like.jwks.clone(),
        issuer: like.issuer.clone(),
        audience: like.audience.clone(),
        metrics: String::new(),
    };
    // Up when a `tools/list` answers.
    let (url, token) = (server.url.clone(), server.token.clone());
    let list = json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list"});
    until_up(&mut server.child, log, "the native server", || async {
        let reply = post_to(client, &url, &token, &list).await;
        reply.is_ok_and(|r| r.get("result").is_some())
    })
    .await;
    server.started_in = started.elapsed();
    server
}

/// Waits until `up` says the process of `child` serves (at most 10 minutes: a cold start
/// compiles an interpreter plugin in its worker); panics, naming `log`, if it exits first.
async fn until_up<F, Fut>(child: &mut Child, log: &Path, what: &str, mut up: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + Duration::from_secs(600);
    while !up().await {
        if let Ok(Some(status)) = child.try_wait() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(5).collect();
            panic!("{what} exited ({status}); its log ends: {tail:?}");
        }
        assert!(
            Instant::now() < until,
            "{what} did not come up; see {}",
            log.display()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The server's metrics, as Prometheus text.
pub async fn metrics(client: &reqwest::Client, server: &Server) -> String {
    let reply = client.get(&server.metrics).send().await.unwrap();
    reply.text().await.unwrap()
}

/// The value of the sample whose line starts with `series` (name and labels), if any.
pub fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

/// One JSON-RPC request with the server's token, as an MCP client sends it.
pub async fn post(
    client: &reqwest::Client,
    server: &Server,
    body: &Value,
) -> reqwest::Result<Value> {
    post_to(client, &server.url, &server.token, body).await
}

async fn post_to(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    body: &Value,
) -> reqwest::Result<Value> {
    client
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(body)
        .send()
        .await?
        .json()
        .await
}

/// The structured result of `tools/call tool` with `arguments`; panics on an error.
pub async fn call(
    client: &reqwest::Client,
    server: &Server,
    tool: &str,
    arguments: &Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}});
    let reply = post(client, server, &body).await.unwrap();
    let result = &reply["result"];
    assert_eq!(result["isError"], json!(false), "{tool}: {reply}");
    result["structuredContent"].clone()
}

/// One server's line of the table.
pub struct Row {
    /// What served.
    pub name: String,
    /// From start to ready.
    pub ready: Duration,
    /// Resident memory once ready, in MiB.
    pub idle: f64,
    /// The measured calls' wall times, sorted.
    pub times: Vec<Duration>,
    /// Resident memory after the calls, in MiB.
    pub after: f64,
}

/// `server`'s line as `name`: its answer to `report_loans` with `arguments` checked equal to
/// `expected`, then `calls` calls measured after 40 warm-up calls.
pub async fn row(
    client: &reqwest::Client,
    server: &Server,
    name: String,
    arguments: &Value,
    expected: &Value,
    calls: usize,
) -> Row {
    let idle = server.rss_mib();
    let answer = call(client, server, "report_loans", arguments).await;
    assert_eq!(
        &answer, expected,
        "{name} answers differently from the Rust build"
    );
    let times = measure(client, server, "report_loans", arguments, 40, calls).await;
    Row {
        name,
        ready: server.started_in,
        idle,
        times,
        after: server.rss_mib(),
    }
}

/// Per-call wall times of `calls` calls after `warm` warm-up calls, sorted.
pub async fn measure(
    client: &reqwest::Client,
    server: &Server,
    tool: &str,
    arguments: &Value,
    warm: usize,
    calls: usize,
) -> Vec<Duration> {
    for _ in 0..warm {
        call(client, server, tool, arguments).await;
    }
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        call(client, server, tool, arguments).await;
        times.push(started.elapsed());
    }
    times.sort();
    times
}

/// A plugin folder `dir` holding `tools`: (source folder, tool name) pairs copied in.
pub fn plugin_dir(dir: &Path, tools: &[(&Path, &str)]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for (from, tool) in tools {
        for ext in ["wasm", "html", "toml"] {
            let file = from.join(format!("{tool}.{ext}"));
            if ext != "html" || file.exists() {
                std::fs::copy(&file, dir.join(format!("{tool}.{ext}")))
                    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            }
        }
    }
    dir.to_path_buf()
}

/// The `p` quantile of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The mean of durations.
pub fn mean(v: &[Duration]) -> Duration {
    v.iter().sum::<Duration>() / v.len() as u32
}

/// Milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Prints the servers' table: each row's name, time to ready, calls, RSS ready and after.
pub fn print(rows: &[Row], calls: usize) {
    let rust = mean(&rows[0].times).as_secs_f64();
    println!("languages through servers over HTTP (a process each, one keep-alive client, {calls} calls after 40 warm-up):");
    println!("  server                       ready in   whole call mean/p50/p99 ms      vs loanhost Rust   RSS idle -> after calls");
    for Row {
        name,
        ready,
        idle,
        times,
        after,
    } in rows
    {
        println!(
            "  {name:<28} {:>7.2} s   {:>7.3} / {:>7.3} / {:>7.3}        {:>6.2}x          {idle:>5.0} -> {after:.0} MiB",
            ready.as_secs_f64(),
            ms(mean(times)),
            ms(percentile(times, 0.5)),
            ms(percentile(times, 0.99)),
            mean(times).as_secs_f64() / rust,
        );
    }
}
