//! The attack suite: hostile plugins and hostile callers, each at full tilt for a while,
//! while legitimate callers (an Agent and an Admin) keep calling `report_loans`. The server
//! runs as a process of its own (the `loanhost` binary), so its peak RSS is its own.
//!
//! Per attack it reports what the attacker got, how many legitimate requests failed
//! (expected 0), the legitimate p99 under attack against the p99 without attack measured in
//! the same run, and the server's peak RSS. `make test` runs a short version (2 s per attack)
//! and checks failures, the attacker's outcome and RSS; `make attack` runs 10 s per attack
//! in release mode, also checks the p99 ratio, and writes the table into `docs/security.md`.
//!
//! Every request goes to the loopback address of the server this test started; every loop
//! is bounded in time and stops by itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loanhost::oauth::devidp::SigningKey;
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt as _;

use loanhost_tests as kit;
// The registry that answers as an attacker would, shared with the end-to-end tests.
#[allow(dead_code)]
#[path = "../../tests/api/hostile_registry.rs"]
mod hostile_registry;

use hostile_registry::{HostileRegistry, Mode};

/// References the server follows on the hostile registry, each a loop of its own.
const HOSTILE_REFERENCES: usize = 8;

const TODAY: &str = "2026-03-15";
const LOANS: u64 = 5000;
const AGENT: &str = "agent@demo.loanhost.local";
const ADMIN: &str = "admin@demo.loanhost.local";
const PROCESSOR: &str = "processor@demo.loanhost.local";
const PRELICENSED: &str = "prelicensed@demo.loanhost.local";
/// Each attack signs in as an attacker of its own (a ConciergeKey), so each starts with a
/// fresh per-caller budget and shows what the in-call defences do before the budget does.
fn attacker(attack: &str) -> String {
    format!("attacker-{}@example.com", attack.replace(' ', "-"))
}

/// Seconds each phase runs (`ATTACK_SECONDS`, default 2).
fn phase() -> Duration {
    let secs = std::env::var("ATTACK_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(2);
    Duration::from_secs(secs.clamp(1, 120))
}

/// Builds the plugins (the script `make plugins` uses) into `dist`; returns the fixtures'
/// output directory.
fn build_plugins(dist: &Path) -> PathBuf {
    let output = Command::new(kit::root().join("scripts/build-plugins.sh"))
        .arg(dist)
        .arg(dist.with_file_name("build"))
        // The hostile plugins written in Python and TypeScript too (into build/hostile/).
        .env("LOANHOST_BUILD_EXAMPLES", "1")
        .stderr(Stdio::inherit())
        .output()
        .expect("running scripts/build-plugins.sh");
    assert!(output.status.success(), "building the plugins failed");
    PathBuf::from(
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .trim(),
    )
}

/// The most a manifest may grant: the hostile plugin takes all of it.
const HOSTILE_MANIFEST: &str = r#"name = "misbehave"
wit_version = "1.0.0"
roles = ["Admin", "Processor", "DualLicensedAgent", "ConciergeKey", "Agent"]
datasets = ["loans"]
scope = "caller"

[limits]
memory_mib = 512
timeout_ms = 10000
max_output_bytes = 4194304
max_queries = 256
max_rows = 1000000
max_data_bytes = 67108864
db_time_ms = 60000
"#;

/// The server under attack.
struct Server {
    child: Child,
    base: String,
    key: SigningKey,
    plugin_dir: PathBuf,
    /// The registry of [`HOSTILE_REFERENCES`] references the server follows: it answers 404
    /// until the "hostile registry" phase.
    registry: HostileRegistry,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let plugin_dir = dir.path().join("plugins");
        let fixtures = build_plugins(&plugin_dir);
        // The shipped tools stay; the hostile fixture joins them with the widest manifest.
        std::fs::copy(
            fixtures.join("fixture_misbehave.wasm"),
            plugin_dir.join("misbehave.wasm"),
        )
        .unwrap();
        std::fs::write(plugin_dir.join("misbehave.toml"), HOSTILE_MANIFEST).unwrap();
        // The same plugin, renamed `hoardtabs` (a name of the same length, in its bytes), with
        // 56 more core instances, each with a table of 20,000 elements (17.9 MB of table
        // slots a call).
        let misbehave = std::fs::read(fixtures.join("fixture_misbehave.wasm")).unwrap();
        let hoard = rename(&with_tables(&misbehave, 56), b"misbehave", b"hoardtabs");
        std::fs::write(plugin_dir.join("hoardtabs.wasm"), hoard).unwrap();
        std::fs::write(
            plugin_dir.join("hoardtabs.toml"),
            HOSTILE_MANIFEST.replace("\"misbehave\"", "\"hoardtabs\"") + "core_instances = 64\n",
        )
        .unwrap();
        // The hostile plugins in Python and TypeScript, with the same widest manifest.
        for language in ["python", "typescript"] {
            let tool = format!("hostile_{language}");
            let built = dir.path().join("build/hostile").join(language);
            std::fs::copy(
                built.join(format!("{tool}.wasm")),
                plugin_dir.join(format!("{tool}.wasm")),
            )
            .unwrap();
            // Built with the Python and TypeScript SDKs: `loan:reporting@1.1.0`.
            let manifest = HOSTILE_MANIFEST
                .replace("\"misbehave\"", &format!("\"{tool}\""))
                .replace("wit_version = \"1.0.0\"", "wit_version = \"1.1.0\"")
                + "core_instances = 48\n";
            std::fs::write(plugin_dir.join(format!("{tool}.toml")), manifest).unwrap();
        }
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        let key = SigningKey::load_or_create(&cache.join("dev-idp-rsa.pem")).unwrap();
        let db_url = format!("sqlite://{}", dir.path().join("loanhost.db").display());

        // Seed the demo data set through the importer.
        let db = loanhost::data::Db::open(&db_url).await.unwrap();
        let seed_dir = dir.path().join("seed");
        let today = loanhost::config::parse_date(TODAY).unwrap();
        loanhost::data::seed::write_dir(
            loanhost::data::seed::SeedSpec {
                loans: LOANS,
                seed: 1,
                today,
            },
            &seed_dir,
        )
        .unwrap();
        loanhost::data::import::import_dir(&db, &seed_dir, |_, _| {})
            .await
            .unwrap();
        for (i, (name, _)) in ATTACKS.iter().enumerate() {
            db.upsert_agent(&loanhost::data::NewAgent {
                id: format!("00000000-0000-0000-0000-0000000a{i:04}"),
                email: attacker(name),
                roles: vec!["ConciergeKey".into()],
                ..Default::default()
            })
            .await
            .unwrap();
        }
        drop(db);

        let port = kit::free_port();
        let base = format!("http://127.0.0.1:{port}");
        let registry = HostileRegistry::start(Mode::NotFound).await;
        let references: Vec<String> = (0..HOSTILE_REFERENCES)
            .map(|n| format!("oci://{}/team/probe_{n}:live", registry.host))
            .collect();
        let child = kit::serve(
            env!("CARGO_BIN_EXE_loanhost"),
            port,
            &base,
            &db_url,
            &plugin_dir,
            &cache,
        )
        .env("LOANHOST_TODAY", TODAY)
        .env("LOANHOST_PLUGIN_REFS", references.join(","))
        .env("LOANHOST_REGISTRY_PLAIN_HTTP", &registry.host)
        .env("LOANHOST_REGISTRY_INTERVAL_SECS", "1")
        .env("LOANHOST_REGISTRY_TIMEOUT_SECS", "1")
        // Production defaults for every limit but these: 1 s instead of 10 s, so that
        // a short phase sees slow-header and slow-body connections closed.
        .env("LOANHOST_HEADER_TIMEOUT_SECS", "1")
        .env("LOANHOST_BODY_TIMEOUT_SECS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::from(
            std::fs::File::create(dir.path().join("server.log")).unwrap(),
        ))
        .spawn()
        .expect("starting the loanhost binary");
        let server = Server {
            child,
            base,
            key,
            plugin_dir,
            registry,
            _dir: dir,
        };
        let client = reqwest::Client::new();
        // The first start compiles the Python and TypeScript components: bounded at 10 minutes
        // (a hung server, not a slow one).
        for _ in 0..12_000 {
            if let Ok(r) = client.get(format!("{}/ready", server.base)).send().await {
                if r.status() == 200 {
                    return server;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the server did not become ready");
    }

    fn token(&self, email: &str, ttl: i64) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        self.key
            .sign(&json!({
                "iss": format!("{}/dev-idp", self.base),
                "aud": "https://loanhost.local/mcp",
                "email": email,
                "iat": now,
                "exp": now + ttl,
            }))
            .unwrap()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resets the kernel's peak-RSS counter of the server.
    fn reset_peak_rss(&self) {
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5");
    }

    /// The server's resident memory now, in MiB.
    fn rss_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
            / 1024
    }

    /// The server's peak RSS since the last reset, in MiB.
    fn peak_rss_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0);
        kib / 1024
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

/// How long the suite's clients keep an idle pooled connection: under the server's 1 s
/// header timeout, which also closes a keep-alive connection idle that long (hyper's
/// `header_read_timeout`). A client that kept it longer could send a request on a connection
/// the server is closing that instant, and count the race as a failed request.
const CLIENT_IDLE: Duration = Duration::from_millis(500);

/// The HTTP client of the legitimate callers and of an attacker: a 30 s timeout per request,
/// idle pooled connections dropped after [`CLIENT_IDLE`].
fn traffic_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_idle_timeout(CLIENT_IDLE)
        .build()
        .unwrap()
}

/// One request's outcome, in a few words: the HTTP status, then the tool error code or the
/// JSON-RPC error code.
async fn outcome(resp: Result<reqwest::Response, reqwest::Error>) -> String {
    let resp = match resp {
        Ok(r) => r,
        Err(e) if e.is_timeout() => return "client timeout".into(),
        Err(_) => return "connection error".into(),
    };
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.unwrap_or_default();
    if bytes.len() > 65536 {
        // A large result: the attacker's own client does not parse it (that would be the
        // attacker's CPU, on the cores the server shares with this test).
        // Tool errors and JSON-RPC errors are small: a large body is a result.
        let head = &bytes[..256];
        let ok = head.windows(8).any(|w| w == b"\"result\"");
        return format!(
            "{status} {} ({} KiB)",
            if ok { "ok" } else { "?" },
            bytes.len() / 1024
        );
    }
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let detail = |v: &Value| -> String {
        if let Some(code) = v["error"]["code"].as_i64() {
            return format!("rpc {code}");
        }
        if v["result"]["isError"] == true {
            let text = v["result"]["content"][0]["text"].as_str().unwrap_or("");
            return text.split(':').next().unwrap_or("").to_string() + ":";
        }
        if v["result"].is_object() {
            return "ok".into();
        }
        String::new()
    };
    match &body {
        Value::Array(items) => format!(
            "{status} batch of {} ({})",
            items.len(),
            items.first().map(detail).unwrap_or_default()
        ),
        v => format!("{status} {}", detail(v)).trim().to_string(),
    }
}

/// Legitimate traffic: an Agent, an Admin, a Processor and a PreLicensed agent call
/// `report_loans` at a steady pace (each every 100 ms, within the default per-caller budget).
async fn legit(server: &Server, until: Instant) -> (Vec<Duration>, Vec<String>) {
    let client = traffic_client();
    let mut tasks = Vec::new();
    for (email, args) in [
        (AGENT, json!({"groupBy": "Status"})),
        (ADMIN, json!({"groupBy": "Status"})),
        (PROCESSOR, json!({"groupBy": "LoanType"})),
        (PRELICENSED, json!({"groupBy": "Status"})),
    ] {
        let (client, base, token) = (
            client.clone(),
            server.base.clone(),
            server.token(email, 600),
        );
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut failures = Vec::new();
            let body = call("report_loans", args);
            let mut next = Instant::now();
            while Instant::now() < until {
                let started = Instant::now();
                let r = client
                    .post(format!("{base}/mcp"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await;
                let o = outcome(r).await;
                latencies.push(started.elapsed());
                if std::env::var_os("ATTACK_DEBUG").is_some()
                    && started.elapsed() > Duration::from_millis(200)
                {
                    eprintln!("slow legit call: {:?} {o}", started.elapsed());
                }
                if o != "200 ok" {
                    failures.push(o);
                }
                next += Duration::from_millis(100);
                tokio::time::sleep_until(next.into()).await;
            }
            (latencies, failures)
        }));
    }
    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    for t in tasks {
        let (l, f) = t.await.unwrap();
        latencies.extend(l);
        failures.extend(f);
    }
    (latencies, failures)
}

fn p99(latencies: &mut [Duration]) -> Duration {
    latencies.sort();
    if latencies.is_empty() {
        return Duration::ZERO;
    }
    let i = ((latencies.len() as f64) * 0.99).ceil() as usize;
    latencies[i.clamp(1, latencies.len()) - 1]
}

/// The attacks: (name, what it does).
const ATTACKS: &[(&str, &str)] = &[
    (
        "hostile registry",
        "the registry of 8 followed references answers every way an attacker would (endless and 1 GiB manifests, path-like digests, answers that never come, log lines in error bodies)",
    ),
    (
        "query flood",
        "8 loops of a plugin that runs its heaviest query again and again",
    ),
    (
        "huge labels",
        "8 loops grouping every loan by a mapped label of 1 MiB",
    ),
    (
        "many memories",
        "a component with 120 memories, rewritten every 50 ms",
    ),
    ("spin", "8 loops of a plugin that never returns"),
    ("spin (Python)", "8 loops of a Python plugin that never returns"),
    ("spin (TypeScript)", "8 loops of a TypeScript plugin that never returns"),
    (
        "memory bomb",
        "8 loops growing memory to the 512 MiB manifest limit",
    ),
    (
        "memory bomb (Python)",
        "8 loops of a Python plugin growing memory to the 512 MiB limit",
    ),
    (
        "memory bomb (TypeScript)",
        "8 loops of a TypeScript plugin growing memory to the 512 MiB limit",
    ),
    (
        "output bomb",
        "8 loops returning 4 MiB results (the most a manifest may allow)",
    ),
    (
        "output bomb (Python)",
        "8 loops of a Python plugin returning 4 MiB results",
    ),
    (
        "output bomb (TypeScript)",
        "8 loops of a TypeScript plugin returning 4 MiB results",
    ),
    (
        "log flood",
        "8 loops writing 100,000 log lines of 4 KiB with forged line breaks",
    ),
    (
        "searchText bomb",
        "8 loops of report_loans with 7,000-word searchText",
    ),
    (
        "batch flood",
        "8 loops of 16-call batches, and 1,000-call batches",
    ),
    (
        "slow headers",
        "400 connections trickling a header byte every 500 ms",
    ),
    (
        "oversized bodies",
        "8 loops announcing 100 MiB bodies, with and without a token",
    ),
    (
        "token flood",
        "8 loops of expired, forged and unknown-kid tokens",
    ),
    (
        "slow bodies /token",
        "160 connections trickling a /token body, a byte every 500 ms",
    ),
    (
        "slow bodies REST token",
        "160 connections trickling a /api/oauth/token body (valid token), a byte every 500 ms",
    ),
    (
        "slow bodies /mcp",
        "160 connections trickling a /mcp body (valid token), a byte every 500 ms",
    ),
    (
        "nested arguments",
        "8 loops of 1 MiB arguments nested 120 deep with 8 KiB keys, 4 to an unknown tool and 4 to report_loans",
    ),
    (
        "batched view reads",
        "8 loops of 16-read batches of a 0.7 MiB view",
    ),
    (
        "table hoard",
        "8 loops calling a plugin whose 56 extra instances each hold a 20,000-element table",
    ),
    (
        "compile bomb",
        "a component with one 150,000-instruction function dropped into the plugin folder",
    ),
];

/// The attacks whose host must be back within [`SETTLED_MIB`] of the resident memory it had
/// when they began once they end (what they made the host hold is given back, not kept). Each
/// is measured against its own start, not the baseline: what an earlier attack left with the
/// allocator (the nested arguments' bodies) is not this attack's.
const SETTLES: &[&str] = &[
    "batched view reads",
    "table hoard",
    "compile bomb",
    "hostile registry",
];
/// How far above its resident memory at the start the host may stay after a settling attack.
const SETTLED_MIB: u64 = 64;

/// `component` with `instances` more core instances of a module that defines one table of
/// 20,000 function references (appended as a core module section and a core instance
/// section: a component's sections may come in any order).
fn with_tables(component: &[u8], instances: u32) -> Vec<u8> {
    use wasmparser::{Encoding, Parser, Payload};
    // The index the new module takes: the component's own top-level core modules.
    let (mut depth, mut modules) = (0usize, 0u32);
    for payload in Parser::new(0).parse_all(component) {
        match payload.unwrap() {
            Payload::Version { encoding, .. } => {
                depth += 1;
                let _ = encoding == Encoding::Module;
            }
            Payload::ModuleSection { .. } if depth == 1 => modules += 1,
            Payload::End(_) => depth -= 1,
            _ => {}
        }
    }
    let leb = |mut n: u32, out: &mut Vec<u8>| loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    };
    let section = |id: u8, body: &[u8], out: &mut Vec<u8>| {
        out.push(id);
        leb(body.len() as u32, out);
        out.extend_from_slice(body);
    };
    let module = wat::parse_str("(module (table 20000 funcref))").unwrap();
    let mut instances_body = Vec::new();
    leb(instances, &mut instances_body);
    for _ in 0..instances {
        // `instantiate` (0x00) of the new module, with no arguments.
        instances_body.push(0x00);
        leb(modules, &mut instances_body);
        instances_body.push(0x00);
    }
    let mut out = component.to_vec();
    section(0x01, &module, &mut out);
    section(0x02, &instances_body, &mut out);
    out
}

/// Until `until`, every 200 ms: whether `tools/list` lists `tool` (`LISTED`) or not (`not
/// loaded`).
async fn watch_listing(
    client: reqwest::Client,
    base: String,
    token: String,
    tool: &'static str,
    until: Instant,
    count: impl Fn(String),
) {
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let list: Value = client
            .post(format!("{base}/mcp"))
            .bearer_auth(&token)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let listed = list["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == tool));
        count(if listed { "LISTED" } else { "not loaded" }.into());
    }
}

/// `bytes` with every `from` replaced by `to` (of the same length).
fn rename(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let mut out = bytes.to_vec();
    let mut i = 0;
    while i + from.len() <= out.len() {
        if &out[i..i + from.len()] == from {
            out[i..i + from.len()].copy_from_slice(to);
            i += from.len();
        } else {
            i += 1;
        }
    }
    out
}

/// A component that exports the tool's interface name (so it passes every check made from
/// its bytes) around one function of `ops` instructions: costly to compile, and refused once
/// compiled (it implements nothing).
fn compile_bomb(ops: usize) -> Vec<u8> {
    let mut body = String::with_capacity(ops * 12);
    for _ in 0..ops / 4 {
        body.push_str("local.get 0 i32.const 1 i32.add local.set 0 ");
    }
    wat::parse_str(format!(
        "(component (core module $m (func (local i32) {body})) (core instance (instantiate $m)) \
         (instance $tool) (export \"loan:reporting/tool@1.0.0\" (instance $tool)))"
    ))
    .unwrap()
}

/// 160 connections, each announcing a body of 64 KiB to `path` and sending a byte of it
/// every 500 ms until the server answers (or the phase ends), then waiting 500 ms and
/// starting again. Each outcome is the status line, or how the connection ended.
fn trickled_bodies(
    base: &str,
    path: &str,
    headers: String,
    until: Instant,
    count: impl Fn(String) + Clone + Send + 'static,
) -> Vec<tokio::task::JoinHandle<()>> {
    let addr = base.trim_start_matches("http://").to_string();
    (0..160)
        .map(|_| {
            let (addr, count, path, headers) =
                (addr.clone(), count.clone(), path.to_string(), headers.clone());
            tokio::spawn(async move {
                while Instant::now() < until {
                    let Ok(mut s) = tokio::net::TcpStream::connect(&addr).await else {
                        count("connect refused".into());
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    };
                    let head = format!(
                        "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: 65536\r\n\r\n"
                    );
                    let _ = s.write_all(head.as_bytes()).await;
                    let mut buf = [0u8; 64];
                    let outcome = loop {
                        tokio::select! {
                            n = tokio::io::AsyncReadExt::read(&mut s, &mut buf) => {
                                let n = n.unwrap_or(0);
                                let line = String::from_utf8_lossy(&buf[..n]);
                                break line.lines().next().unwrap_or("closed").to_string();
                            }
                            _ = tokio::time::sleep(Duration::from_millis(500)) => {
                                if Instant::now() >= until {
                                    break "held until the end".to_string();
                                }
                                if s.write_all(b"a").await.is_err() {
                                    break "closed".to_string();
                                }
                            }
                        }
                    };
                    count(outcome);
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            })
        })
        .collect()
}

/// Arguments nested `depth` deep, each level one key of `key_bytes`.
fn nested_arguments(depth: usize, key_bytes: usize) -> Value {
    let mut v = json!(1);
    for d in 0..depth {
        v = json!({ format!("{d}{}", "k".repeat(key_bytes)): v });
    }
    v
}

/// Runs one attack until `until`; returns the attacker's outcomes with their counts.
async fn attack(server: &Server, name: &str, until: Instant) -> BTreeMap<String, usize> {
    let outcomes: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let client = traffic_client();
    let token = server.token(&attacker(name), 600);
    let base = server.base.clone();
    let count = {
        let outcomes = outcomes.clone();
        move |o: String| *outcomes.lock().unwrap().entry(o).or_default() += 1
    };
    let mut tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    // `n` closed loops sending `body`, serialized once (the attacker's own CPU is not what
    // this suite measures).
    let loops_n = |n: usize, body: Value, headers: Vec<(&'static str, String)>| {
        let mut v = Vec::new();
        let body = serde_json::to_vec(&body).unwrap();
        for _ in 0..n {
            let (client, base, body, headers, count, token) = (
                client.clone(),
                base.clone(),
                body.clone(),
                headers.clone(),
                count.clone(),
                token.clone(),
            );
            v.push(tokio::spawn(async move {
                while Instant::now() < until {
                    let mut req = client
                        .post(format!("{base}/mcp"))
                        .bearer_auth(&token)
                        .header("content-type", "application/json")
                        .body(body.clone());
                    for (k, val) in &headers {
                        req = req.header(*k, val);
                    }
                    count(outcome(req.send().await).await);
                }
            }));
        }
        v
    };
    let loops = |body: Value, headers: Vec<(&'static str, String)>| loops_n(8, body, headers);
    let (attack, hostile) = hostile_of(name);
    match attack {
        "query flood" => tasks.extend(loops(call("misbehave", json!({"action": "flood"})), vec![])),
        "huge labels" => tasks.extend(loops(
            call(
                "misbehave",
                json!({"action": "hugeLabel", "bytes": 1 << 20}),
            ),
            vec![],
        )),
        "spin" => tasks.extend(loops(call(hostile, json!({"action": "loop"})), vec![])),
        "memory bomb" => tasks.extend(loops(call(hostile, json!({"action": "grow"})), vec![])),
        "output bomb" => tasks.extend(loops(
            call(
                hostile,
                json!({"action": "big", "bytes": 4 * 1024 * 1024 - 100}),
            ),
            vec![],
        )),
        "log flood" => tasks.extend(loops(
            call("misbehave", json!({"action": "logFlood", "bytes": 100_000})),
            vec![],
        )),
        "searchText bomb" => tasks.extend(loops(
            call(
                "report_loans",
                json!({"groupBy": "Status", "filter": {"searchText": "@ ".repeat(7000)}}),
            ),
            vec![],
        )),
        "batch flood" => {
            let one = call("get_loan_reporting_metadata", json!({}));
            tasks.extend(loops(
                Value::Array(vec![one.clone(); 16]),
                vec![("mcp-protocol-version", "2025-03-26".into())],
            ));
            tasks.extend(loops(
                Value::Array(vec![one; 1000]),
                vec![("mcp-protocol-version", "2025-03-26".into())],
            ));
        }
        "batched view reads" => {
            let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "ui://loanhost/report_loans"}});
            tasks.extend(loops(
                Value::Array(vec![read; 16]),
                vec![("mcp-protocol-version", "2025-03-26".into())],
            ));
        }
        "table hoard" => tasks.extend(loops(call("hoardtabs", json!({"action": "echo"})), vec![])),
        "compile bomb" => {
            let dir = server.plugin_dir.clone();
            let (client, base, count, token) =
                (client.clone(), base.clone(), count.clone(), token.clone());
            tasks.push(tokio::spawn(async move {
                std::fs::write(
                    dir.join("bomb.toml"),
                    HOSTILE_MANIFEST.replace("\"misbehave\"", "\"bomb\""),
                )
                .unwrap();
                let tmp = dir.join(".bomb.wasm.tmp");
                std::fs::write(&tmp, compile_bomb(150_000)).unwrap();
                std::fs::rename(&tmp, dir.join("bomb.wasm")).unwrap();
                count("written".into());
                watch_listing(client, base, token, "bomb", until, count).await;
            }));
        }
        "many memories" => {
            let mut text = String::from("(component (core module $m (memory 1))");
            for i in 0..120 {
                text.push_str(&format!(" (core instance $i{i} (instantiate $m))"));
            }
            text.push(')');
            let wasm = wat::parse_str(&text).unwrap();
            let dir = server.plugin_dir.clone();
            let written = count.clone();
            tasks.push(tokio::spawn(async move {
                std::fs::write(
                    dir.join("hoard.toml"),
                    HOSTILE_MANIFEST.replace("\"misbehave\"", "\"hoard\""),
                )
                .unwrap();
                let mut n = 0u64;
                while Instant::now() < until {
                    // A new file each time (another byte at the end), so each one is loaded.
                    let mut bytes = wasm.clone();
                    n += 1;
                    bytes.extend_from_slice(&[0, 1, b'x', (n % 250) as u8]);
                    let tmp = dir.join(".hoard.wasm.tmp");
                    std::fs::write(&tmp, &bytes).unwrap();
                    std::fs::rename(&tmp, dir.join("hoard.wasm")).unwrap();
                    written("written".into());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }));
            let (client, base, count, token) =
                (client.clone(), base.clone(), count.clone(), token.clone());
            tasks.push(tokio::spawn(watch_listing(
                client, base, token, "hoard", until, count,
            )));
        }
        "slow headers" => {
            let addr = base.trim_start_matches("http://").to_string();
            for _ in 0..400 {
                let (addr, count) = (addr.clone(), count.clone());
                tasks.push(tokio::spawn(async move {
                    while Instant::now() < until {
                        let Ok(mut s) = tokio::net::TcpStream::connect(&addr).await else {
                            count("connect refused".into());
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        };
                        let _ = s.write_all(b"POST /mcp HTTP/1.1\r\n").await;
                        let opened = Instant::now();
                        loop {
                            tokio::time::sleep(Duration::from_millis(500)).await;
                            // A connection still open when the phase ends is given the server's
                            // header timeout and a wide margin before it counts as held: on a
                            // busy machine the server's timer and the closing write run late,
                            // and the phase's own clock must not decide the outcome.
                            if Instant::now() >= until + Duration::from_secs(30) {
                                count("held until the end".into());
                                return;
                            }
                            if s.write_all(b"X").await.is_err() {
                                count(format!(
                                    "closed by the server after {} s",
                                    opened.elapsed().as_secs()
                                ));
                                break;
                            }
                        }
                    }
                }));
            }
        }
        "oversized bodies" => {
            let addr = base.trim_start_matches("http://").to_string();
            for i in 0..8 {
                let (addr, count, token) = (addr.clone(), count.clone(), token.clone());
                tasks.push(tokio::spawn(async move {
                    while Instant::now() < until {
                        let auth = if i % 2 == 0 {
                            format!("Authorization: Bearer {token}\r\n")
                        } else {
                            String::new()
                        };
                        let Ok(mut s) = tokio::net::TcpStream::connect(&addr).await else {
                            count("connect refused".into());
                            continue;
                        };
                        let head = format!(
                            "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{auth}Content-Length: 104857600\r\n\r\n"
                        );
                        let _ = s.write_all(head.as_bytes()).await;
                        let _ = s.write_all(&[b' '; 65536]).await;
                        let mut buf = [0u8; 64];
                        let n = tokio::io::AsyncReadExt::read(&mut s, &mut buf)
                            .await
                            .unwrap_or(0);
                        let line = String::from_utf8_lossy(&buf[..n]);
                        count(line.lines().next().unwrap_or("closed").to_string());
                    }
                }));
            }
        }
        "token flood" => {
            let expired = server.token(ADMIN, -3600);
            let forged = {
                let other =
                    SigningKey::load_or_create(&tempfile::tempdir().unwrap().path().join("k.pem"))
                        .unwrap();
                other
                    .sign(&json!({"iss": format!("{base}/dev-idp"), "aud": "https://loanhost.local/mcp", "email": ADMIN, "exp": 4_000_000_000u64}))
                    .unwrap()
            };
            let unknown_kid = {
                let mut parts: Vec<String> = forged.split('.').map(str::to_string).collect();
                use base64::Engine as _;
                parts[0] = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .encode(br#"{"alg":"RS256","typ":"JWT","kid":"forged"}"#);
                parts.join(".")
            };
            for (i, bad) in [expired, forged, unknown_kid]
                .into_iter()
                .cycle()
                .take(8)
                .enumerate()
            {
                let (client, base, count) = (client.clone(), base.clone(), count.clone());
                tasks.push(tokio::spawn(async move {
                    let _ = i;
                    while Instant::now() < until {
                        let r = client
                            .post(format!("{base}/mcp"))
                            .bearer_auth(&bad)
                            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                            .send()
                            .await;
                        count(outcome(r).await);
                    }
                }));
            }
        }
        "slow bodies /token" => tasks.extend(trickled_bodies(
            &base,
            "/token",
            "Content-Type: application/x-www-form-urlencoded\r\n".into(),
            until,
            count.clone(),
        )),
        "slow bodies REST token" => tasks.extend(trickled_bodies(
            &base,
            "/api/oauth/token",
            format!("Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"),
            until,
            count.clone(),
        )),
        "slow bodies /mcp" => tasks.extend(trickled_bodies(
            &base,
            "/mcp",
            format!("Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"),
            until,
            count.clone(),
        )),
        "hostile registry" => {
            // The registry the server follows turns hostile, one way per connection, for the
            // phase; what the attacker got is what the server took from it.
            let registry = &server.registry;
            let sent_before = registry.sent.load(std::sync::atomic::Ordering::Relaxed);
            let asked_before = registry.requests("").len();
            registry.set(Mode::Rotate(vec![
                Mode::Endless { declared: false },
                Mode::Digest("sha256:../../..".into()),
                Mode::Hang,
                Mode::ErrorBody("boom\n2026-12-01T00:00:00Z  INFO loanhost: forged\n".repeat(500)),
                Mode::Endless { declared: true },
                Mode::Digest(format!("sha256:{}", server.plugin_dir.display())),
            ]));
            tokio::time::sleep_until(until.into()).await;
            registry.set(Mode::NotFound);
            let asked = registry.requests("").len() - asked_before;
            let sent = registry.sent.load(std::sync::atomic::Ordering::Relaxed) - sent_before;
            for _ in 0..asked {
                count("registry requests answered hostile".into());
            }
            count(format!("manifest bytes offered: {} MiB", sent >> 20));
            let largest = registry.largest.load(std::sync::atomic::Ordering::Relaxed);
            if largest > 16 << 20 {
                count(format!(
                    "READ PAST THE CAP: {largest} bytes on one connection"
                ));
            }
            let listed = client
                .post(format!("{base}/mcp"))
                .bearer_auth(&token)
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
                .send()
                .await;
            if let Ok(r) = listed {
                let text = r.text().await.unwrap_or_default();
                if text.contains("probe_") {
                    count("a hostile reference LISTED".into());
                }
            }
            if !server.plugin_dir.join("report_loans.wasm").is_file() {
                count("the plugin folder was REMOVED".into());
            }
        }
        "nested arguments" => {
            let deep = nested_arguments(120, 8 * 1024);
            tasks.extend(loops_n(4, call("no_such_tool", deep.clone()), vec![]));
            tasks.extend(loops_n(4, call("report_loans", deep), vec![]));
        }
        other => panic!("unknown attack {other}"),
    }
    for t in tasks {
        t.await.unwrap();
    }
    let out = outcomes.lock().unwrap().clone();
    out
}

/// "429 ×1,234; 200 timeout: ×8" — the attacker's outcomes, most frequent first.
fn summary(outcomes: &BTreeMap<String, usize>) -> String {
    let mut v: Vec<(&String, &usize)> = outcomes.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1));
    v.iter()
        .take(4)
        .map(|(o, n)| format!("{o} ×{n}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// An attack and the hostile plugin that makes it: the Rust fixture (`misbehave`), or its
/// twin written in another language (`spin (Python)` is `spin` by `hostile_python`).
fn hostile_of(name: &str) -> (&str, &'static str) {
    if let Some(attack) = name.strip_suffix(" (Python)") {
        (attack, "hostile_python")
    } else if let Some(attack) = name.strip_suffix(" (TypeScript)") {
        (attack, "hostile_typescript")
    } else {
        (name, "misbehave")
    }
}

/// What the attacker must never get: for each attack, outcomes that would mean a defence
/// failed.
fn assert_contained(name: &str, outcomes: &BTreeMap<String, usize>) {
    let total: usize = outcomes.values().sum();
    assert!(total > 0, "{name}: the attack sent nothing");
    let got = |o: &str| outcomes.keys().any(|k| k.contains(o));
    match hostile_of(name).0 {
        "query flood" => assert!(!got("200 ok"), "{name}: the flood finished: {outcomes:?}"),
        "huge labels" => assert!(
            outcomes
                .keys()
                .all(|k| k.contains("invalid_params:") || k.starts_with("429")),
            "{name}: {outcomes:?}"
        ),
        "spin" | "memory bomb" | "log flood" => assert!(!got("200 ok"), "{name}: {outcomes:?}"),
        // Results up to the manifest's cap are allowed; nothing larger gets through.
        // (An interpreter building a 4 MiB string among 8 such loops may also run out of time.)
        "output bomb" => assert!(
            outcomes.keys().all(|k| k.starts_with("429")
                || k.starts_with("200 ok (")
                || k.contains("internal:")
                || k.contains("timeout:")),
            "{name}: {outcomes:?}"
        ),
        "searchText bomb" => assert!(
            outcomes
                .keys()
                .all(|k| k.contains("invalid_params:") || k.starts_with("429")),
            "{name}: {outcomes:?}"
        ),
        // The 1,000-call batches get the cap's 400, or (once the same token is in the penalty
        // box) a 429; never an answer.
        "batch flood" => assert!(
            !got("batch of 1000") && (got("400 rpc -32600") || got("429")),
            "{name}: {outcomes:?}"
        ),
        "slow headers" => assert!(got("closed by the server"), "{name}: {outcomes:?}"),
        "many memories" => assert!(got("not loaded") && !got("LISTED"), "{name}: {outcomes:?}"),
        "oversized bodies" => assert!(
            outcomes.keys().all(|k| k.starts_with("HTTP/1.1 401")
                || k.starts_with("HTTP/1.1 413")
                || k.starts_with("HTTP/1.1 503")
                || k == "closed"),
            "{name}: {outcomes:?}"
        ),
        "token flood" => assert!(
            outcomes
                .keys()
                .all(|k| k.starts_with("401") || k.starts_with("503")),
            "{name}: {outcomes:?}"
        ),
        // Trickled bodies are cut at their deadline (408) or refused at once (429: too many
        // from this address, or from this token); none is ever served.
        "slow bodies /token" | "slow bodies REST token" | "slow bodies /mcp" => assert!(
            got("HTTP/1.1 429")
                && outcomes.keys().all(|k| k.starts_with("HTTP/1.1 429")
                    || k.starts_with("HTTP/1.1 408")
                    || k == "held until the end"
                    || k == "closed"),
            "{name}: {outcomes:?}"
        ),
        "nested arguments" => assert!(
            !got("200 ok") && (got("rpc -32602") || got("invalid_params:")),
            "{name}: {outcomes:?}"
        ),
        // The caller's result budget runs out (429, or a batch whose entries are all refused),
        // and no batch's reply passes its cap.
        "batched view reads" => assert!(
            got("429")
                && outcomes.keys().all(|k| {
                    k.starts_with("429")
                        || k.ends_with("(rpc -32050)")
                        || k.strip_prefix("200 ok (")
                            .and_then(|r| r.strip_suffix(" KiB)"))
                            .and_then(|kib| kib.parse::<u64>().ok())
                            .is_some_and(|kib| kib <= 8 * 1024)
                }),
            "{name}: {outcomes:?}"
        ),
        // Each call's tables are charged to the host's plugin memory: some calls are refused
        // for it, or for the caller's budget, and the rest answer.
        "table hoard" => assert!(
            got("200 ok")
                && outcomes
                    .keys()
                    .all(|k| k.starts_with("429") || k == "200 ok" || k.contains("internal:")),
            "{name}: {outcomes:?}"
        ),
        "compile bomb" => assert!(got("not loaded") && !got("LISTED"), "{name}: {outcomes:?}"),
        "hostile registry" => assert!(
            got("registry requests")
                && !got("LISTED")
                && !got("READ PAST THE CAP")
                && !got("REMOVED"),
            "{name}: {outcomes:?}"
        ),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attacks_leave_legitimate_callers_served() {
    // Arrange
    let server = Server::start().await;
    let phase = phase();
    let strict = std::env::var_os("ATTACK_STRICT").is_some();
    // Warm up (compile caches, page cache), then the baseline without attack.
    let _ = legit(&server, Instant::now() + Duration::from_secs(1)).await;
    server.reset_peak_rss();
    let (mut base_lat, base_fail) = legit(&server, Instant::now() + phase).await;
    let base_p99 = p99(&mut base_lat);
    let base_rss = server.peak_rss_mib();
    assert!(base_fail.is_empty(), "baseline failures: {base_fail:?}");
    let mut rows = vec![format!(
        "| (none: baseline) | | 0 of {} | {:.1} ms | 1.0× | {base_rss} MiB | |",
        base_lat.len(),
        base_p99.as_secs_f64() * 1000.0
    )];
    let mut problems = Vec::new();

    // Act
    let only = std::env::var("ATTACK_ONLY").ok();
    for (name, what) in ATTACKS {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|x| x == *name))
        {
            continue;
        }
        let before = server.rss_mib();
        server.reset_peak_rss();
        let until = Instant::now() + phase;
        let (attacker, (mut lat, fails)) =
            tokio::join!(attack(&server, name, until), legit(&server, until));
        // Let the attack's last calls drain before the next phase.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rss = server.peak_rss_mib();
        let settled = server.rss_mib();
        let p = p99(&mut lat);
        let ratio = p.as_secs_f64() / base_p99.as_secs_f64().max(1e-6);
        eprintln!(
            "attack {name}: attacker got [{}]; legit failed {} of {}; p99 {:.1} ms ({ratio:.2}×); peak RSS {rss} MiB",
            summary(&attacker),
            fails.len(),
            lat.len(),
            p.as_secs_f64() * 1000.0
        );
        rows.push(format!(
            "| {name}: {what} | {} | {} of {} | {:.1} ms | {ratio:.2}× | {rss} MiB | {settled} MiB |",
            summary(&attacker),
            fails.len(),
            lat.len(),
            p.as_secs_f64() * 1000.0
        ));

        // Assert (per attack)
        assert_contained(name, &attacker);
        if !fails.is_empty() {
            problems.push(format!("{name}: legitimate requests failed: {fails:?}"));
        }
        // What calls may add: the host-wide plugin memory (256 MiB) and what is in flight. The
        // baseline itself holds the plugins' compiled code: with the Python and TypeScript
        // runtimes loaded it is about twice what the Rust plugins alone take.
        if rss > base_rss + 320 {
            problems.push(format!(
                "{name}: peak RSS {rss} MiB, more than 320 MiB over the baseline's {base_rss} MiB"
            ));
        }
        // Request bodies and what they become (the audit line above all) are bounded: the
        // host grows by the requests in flight, not by what one holds.
        if (name.starts_with("slow bodies") || *name == "nested arguments") && rss > base_rss + 160
        {
            problems.push(format!(
                "{name}: peak RSS {rss} MiB, more than 160 MiB over the baseline's {base_rss} MiB"
            ));
        }
        if strict && ratio > 2.0 {
            problems.push(format!("{name}: legitimate p99 {ratio:.2}× the baseline"));
        }
        if SETTLES.contains(name) && settled > before + SETTLED_MIB {
            problems.push(format!(
                "{name}: {settled} MiB resident after the attack, more than {SETTLED_MIB} MiB over the {before} MiB it began with"
            ));
        }
    }

    // Report
    let table = format!(
        "| attack | what the attacker got (outcome ×count) | legitimate requests failed | legitimate p99 | ÷ baseline p99 | server peak RSS | resident after |\n|---|---|---|---|---|---|---|\n{}\n",
        rows.join("\n")
    );
    eprintln!("{table}");
    if let Ok(path) = std::env::var("ATTACK_REPORT") {
        write_report(Path::new(&path), &table, phase);
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Replaces the generated section of `docs/security.md` with this run's table.
fn write_report(path: &Path, table: &str, phase: Duration) {
    const BEGIN: &str = "<!-- attack table: generated by `make attack` -->";
    const END: &str = "<!-- end of attack table -->";
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let section = format!(
        "{BEGIN}\nOne run of `make attack` ({} s per phase, release build, {LOANS} seeded loans, SQLite, on this 2-core machine; the attacker's and the legitimate callers' client share the cores).\n\n{table}{END}",
        phase.as_secs()
    );
    let new = match (text.find(BEGIN), text.find(END)) {
        (Some(b), Some(e)) => format!("{}{section}{}", &text[..b], &text[e + END.len()..]),
        _ => format!("{text}\n{section}\n"),
    };
    std::fs::write(path, new).unwrap();
}
