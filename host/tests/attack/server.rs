//! The server under attack, a process of its own (the `loanhost` binary) with its plugins built
//! by the script `make plugins` uses, and the legitimate callers' traffic against it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use loanhost::oauth::devidp::SigningKey;
use serde_json::{json, Value};

use super::hostile_registry::{HostileRegistry, Mode};
use super::payloads::{rename, with_tables};
use super::phases::ATTACKS;
use super::{attacker, ADMIN, AGENT, HOSTILE_REFERENCES, LOANS, PRELICENSED, PROCESSOR, TODAY};
use loanhost_tests as kit;

/// Builds the plugins (the script `make plugins` uses) into `dist`; returns the fixtures'
/// output directory.
pub(super) fn build_plugins(dist: &Path) -> PathBuf {
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
pub(super) const HOSTILE_MANIFEST: &str = r#"name = "misbehave"
wit_version = "1.2.0"
roles = ["Admin", "Processor", "DualLicensedAgent", "ConciergeKey", "Agent"]
scope = "caller"

[datasets.loans]
fields = [
    "id", "loanNumber", "status", "statusDate", "loanType", "purpose", "estimatedClosingDate",
    "updated", "loanAmount", "lockedCompensation", "estimatedCompensation", "propertyState",
    "companyId", "loanOfficerId", "loanOfficerName", "loanAssistantId", "processorId",
    "processorName", "referringAgentId", "referringAgentName",
]
listing = true

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
pub(super) struct Server {
    pub(super) child: Child,
    pub(super) base: String,
    pub(super) key: SigningKey,
    pub(super) plugin_dir: PathBuf,
    /// The registry of [`HOSTILE_REFERENCES`] references the server follows: it answers 404
    /// until the "hostile registry" phase.
    pub(super) registry: HostileRegistry,
    _dir: tempfile::TempDir,
}

impl Server {
    pub(super) async fn start() -> Server {
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
            // Built with the Python and TypeScript SDKs (`loan:reporting@1.2.0`, as the Rust one).
            let manifest = HOSTILE_MANIFEST.replace("\"misbehave\"", &format!("\"{tool}\""))
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

    pub(super) fn token(&self, email: &str, ttl: i64) -> String {
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

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resets the kernel's peak-RSS counter of the server.
    pub(super) fn reset_peak_rss(&self) {
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5");
    }

    /// The server's resident memory now, in MiB.
    pub(super) fn rss_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0)
            / 1024
    }

    /// The server's peak RSS since the last reset, in MiB.
    pub(super) fn peak_rss_mib(&self) -> u64 {
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

pub(super) fn call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

/// How long the suite's clients keep an idle pooled connection: under the server's 1 s
/// header timeout, which also closes a keep-alive connection idle that long (hyper's
/// `header_read_timeout`). A client that kept it longer could send a request on a connection
/// the server is closing that instant, and count the race as a failed request.
pub(super) const CLIENT_IDLE: Duration = Duration::from_millis(500);

/// The HTTP client of the legitimate callers and of an attacker: a 30 s timeout per request,
/// idle pooled connections dropped after [`CLIENT_IDLE`].
pub(super) fn traffic_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_idle_timeout(CLIENT_IDLE)
        .build()
        .unwrap()
}

/// One request's outcome, in a few words: the HTTP status, then the tool error code or the
/// JSON-RPC error code.
pub(super) async fn outcome(resp: Result<reqwest::Response, reqwest::Error>) -> String {
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
pub(super) async fn legit(server: &Server, until: Instant) -> (Vec<Duration>, Vec<String>) {
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
