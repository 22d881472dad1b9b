//! `spawn_app()` and friends: an application on an ephemeral port with a fresh plugin
//! directory, a fixed "today", and callers with roles.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use loanhost::app::Application;
use loanhost::config::Config;
use loanhost::data::NewAgent;
use loanhost::oauth::devidp::SigningKey;
use serde_json::{json, Value};

/// Where the built plugins are: shipped tools (`<tool>.wasm` + `<tool>.toml`) and fixtures.
pub struct Built {
    /// The installed shipped tools.
    pub dist: PathBuf,
    /// The cargo output directory holding `fixture_*.wasm`.
    pub out: PathBuf,
    /// The build folder: `examples/<language>/<tool>.wasm` (plugins/examples) and
    /// `hostile/<language>/hostile_<language>.wasm` (plugins/hostile).
    pub build: PathBuf,
}

/// The run's own folder `kind` in the temporary directory (`loanhost-test-<kind>-<pid>`: the
/// built plugins, the compiled components' cache). The first call removes those of earlier
/// runs whose process has ended, a few hundred MB each, which nothing else would.
fn run_dir(kind: &str) -> PathBuf {
    static SWEPT: OnceLock<()> = OnceLock::new();
    let tmp = std::env::temp_dir();
    SWEPT.get_or_init(|| sweep_ended_runs(&tmp));
    tmp.join(format!("loanhost-test-{kind}-{}", std::process::id()))
}

/// Removes `loanhost-test-*-<pid>` folders whose process no longer runs. Only where `/proc`
/// says which processes run (Linux); elsewhere nothing is removed.
fn sweep_ended_runs(tmp: &Path) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("loanhost-test-")) else {
            continue;
        };
        let Some((_, pid)) = rest.rsplit_once('-') else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !proc.join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Builds every plugin and fixture once per test run (the same script `make plugins` uses).
pub fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf();
        let dist = run_dir("dist");
        let build = run_dir("build");
        let output = std::process::Command::new(root.join("scripts/build-plugins.sh"))
            .arg(&dist)
            .arg(&build)
            .env("LOANHOST_BUILD_EXAMPLES", "1")
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("running scripts/build-plugins.sh");
        assert!(output.status.success(), "building the plugins failed");
        let out = String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .trim()
            .to_string();
        Built {
            dist,
            build,
            out: PathBuf::from(out),
        }
    })
}

/// The bytes of fixture `name` (e.g. `misbehave` for `fixture_misbehave.wasm`).
pub fn fixture_wasm(name: &str) -> Vec<u8> {
    let file = built()
        .out
        .join(format!("fixture_{}.wasm", name.replace('-', "_")));
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The bytes of shipped tool `name`.
pub fn tool_wasm(name: &str) -> Vec<u8> {
    std::fs::read(built().dist.join(format!("{name}.wasm"))).unwrap()
}

/// The bytes and manifest of the example plugin `name` written in `language` (`python`,
/// `typescript`: plugins/examples/<language>/<name>).
pub fn example_plugin(language: &str, name: &str) -> (Vec<u8>, String) {
    let dir = built().build.join("examples").join(language);
    let read = |ext: &str| {
        let file = dir.join(format!("{name}.{ext}"));
        std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
    };
    (read("wasm"), String::from_utf8(read("toml")).unwrap())
}

/// The bytes of the hostile plugin written in `language` (plugins/hostile/<language>/
/// hostile_<language>, tool `hostile_<language>`).
pub fn hostile_plugin(language: &str) -> Vec<u8> {
    let file = built()
        .build
        .join("hostile")
        .join(language)
        .join(format!("hostile_{language}.wasm"));
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The shipped view (`<name>.html`) of tool `name`, if it has one.
pub fn tool_view(name: &str) -> Option<Vec<u8>> {
    std::fs::read(built().dist.join(format!("{name}.html"))).ok()
}

/// The shipped manifest of tool `name`.
pub fn tool_manifest(name: &str) -> String {
    std::fs::read_to_string(built().dist.join(format!("{name}.toml"))).unwrap()
}

/// A manifest for a fixture.
pub fn manifest(
    name: &str,
    roles: &[&str],
    datasets: &[&str],
    memory_mib: u32,
    timeout_ms: u64,
    max_output: u64,
) -> String {
    let list = |xs: &[&str]| {
        xs.iter()
            .map(|x| format!("\"{x}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "name = \"{name}\"\nwit_version = \"1.0.0\"\nroles = [{}]\ndatasets = [{}]\nscope = \"caller\"\n\n[limits]\nmemory_mib = {memory_mib}\ntimeout_ms = {timeout_ms}\nmax_output_bytes = {max_output}\n",
        list(roles),
        list(datasets)
    )
}

/// `manifest` for a component built against `loan:reporting@{version}` (the Python and
/// TypeScript SDKs build 1.1.0).
pub fn on_wit(manifest: String, version: &str) -> String {
    manifest.replace(
        "wit_version = \"1.0.0\"",
        &format!("wit_version = \"{version}\""),
    )
}

/// An app serving the hostile plugin written in `language` (`plugins/hostile/`), with a
/// 64 MiB, `timeout_ms`, 65,536-byte manifest (and the core instances a Python runtime needs).
pub async fn hostile_app(language: &str, timeout_ms: u64) -> (TestApp, String) {
    let tool = format!("hostile_{language}");
    let manifest = on_wit(
        manifest(&tool, DEFAULT_ROLES, &[], 64, timeout_ms, 65536),
        "1.1.0",
    ) + "core_instances = 48\n";
    let options = AppOptions::default().with_shared_compile_cache().plugin(
        &tool,
        hostile_plugin(language),
        manifest,
    );
    (spawn_app_with(options).await, tool)
}

/// The six shipped tools.
pub const ALL_TOOLS: [&str; 6] = [
    "get_loan_reporting_metadata",
    "report_loans",
    "loan_pipeline_report",
    "report_loan_milestones",
    "warehouse_loan_milestone_report",
    "mlo_pipeline_report",
];

/// The roles every reporting tool accepts.
pub const DEFAULT_ROLES: &[&str] = &[
    "Admin",
    "Processor",
    "DualLicensedAgent",
    "ConciergeKey",
    "Agent",
];

/// The fixed "today" of test servers.
pub const TODAY: &str = "2026-03-15";

/// A test caller: the name tests use for its token, and the platform agent behind it.
pub struct User {
    pub token: &'static str,
    pub agent: NewAgent,
}

fn agent(id: &str, email: &str, roles: &[&str]) -> NewAgent {
    NewAgent {
        id: id.into(),
        email: email.into(),
        first_name: Some("Test".into()),
        last_name: Some(roles.join("")),
        company_id: Some("00000000-0000-0000-0000-00000000c0c0".into()),
        roles: roles.iter().map(|r| r.to_string()).collect(),
        managed_agent_ids: vec![],
        inactive: false,
    }
}

/// The callers every test app knows (as platform agents in its database).
pub fn users() -> Vec<User> {
    vec![
        User {
            token: "admin-token",
            agent: agent(
                "00000000-0000-0000-0000-0000000000a1",
                "admin@example.com",
                &["Admin"],
            ),
        },
        User {
            token: "agent-token",
            agent: agent(
                "00000000-0000-0000-0000-0000000000b2",
                "Agent@Example.com",
                &["Agent"],
            ),
        },
        User {
            token: "prelicensed-token",
            agent: agent(
                "00000000-0000-0000-0000-0000000000c3",
                "prelicensed@example.com",
                &["PreLicensed"],
            ),
        },
    ]
}

/// The dev IdP key of every test app (an RSA key generated once per run).
pub fn signing_pem() -> &'static str {
    static PEM: OnceLock<String> = OnceLock::new();
    PEM.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.pem");
        SigningKey::load_or_create(&path).unwrap();
        std::fs::read_to_string(path).unwrap()
    })
}

/// A seeded data set as the test sees it: the lines of the import files (agents by id, the last
/// line of an id winning, as in import).
pub struct SeededData {
    pub agents: std::collections::HashMap<String, Value>,
    pub loans: Vec<Value>,
    pub history: Vec<Value>,
    pub milestones: Vec<Value>,
    pub deals: Vec<Value>,
}

/// Seeds `loans` synthetic loans (seed `seed`, today = [`TODAY`]) into the app's database
/// through the importer, and returns the files' contents for the test's own oracle.
pub async fn seed_app(app: &TestApp, seed: u64, loans: u64) -> SeededData {
    seed_app_on(app, seed, loans, TODAY).await
}

/// As [`seed_app`], generating back from `today` (the app's `LOANHOST_TODAY` should match).
pub async fn seed_app_on(app: &TestApp, seed: u64, loans: u64, today: &str) -> SeededData {
    let dir = tempfile::tempdir().unwrap();
    let today = loanhost::config::parse_date(today).unwrap();
    loanhost::data::seed::write_dir(
        loanhost::data::seed::SeedSpec { loans, seed, today },
        dir.path(),
    )
    .unwrap();
    loanhost::data::import::import_dir(&app.db, dir.path(), |_, _| {})
        .await
        .unwrap();
    let read = |f: &str| -> Vec<Value> {
        std::fs::read_to_string(dir.path().join(f))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    SeededData {
        agents: read("agents.jsonl")
            .into_iter()
            .map(|a| (a["id"].as_str().unwrap().to_string(), a))
            .collect(),
        loans: read("loans.jsonl"),
        history: read("los_status_history.jsonl"),
        milestones: read("dw_loan_milestones.jsonl"),
        deals: read("dw_deals.jsonl"),
    }
}

/// An app serving the shipped `report_loan_milestones` on SQLite or PostgreSQL.
pub async fn milestones_app(postgres: bool) -> TestApp {
    spawn_app_with(AppOptions {
        postgres,
        ..AppOptions::default().plugin(
            "report_loan_milestones",
            tool_wasm("report_loan_milestones"),
            tool_manifest("report_loan_milestones"),
        )
    })
    .await
}

/// The buckets of a caller's `report_loan_milestones` over `args`, with their loans counted.
pub async fn milestone_buckets(app: &TestApp, token: &str, args: Value) -> (u64, Vec<Value>) {
    let r = app.call_ok(token, "report_loan_milestones", args).await;
    let buckets = r["buckets"].as_array().unwrap().clone();
    let count = buckets
        .iter()
        .map(|b| b["loanCount"].as_u64().unwrap())
        .sum();
    (count, buckets)
}

/// Imports one JSON Lines file of `lines` (e.g. `loans.jsonl`) into the app's database.
pub async fn import_lines(app: &TestApp, file: &str, lines: &[String]) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file), lines.join("\n")).unwrap();
    loanhost::data::import::import_dir(&app.db, dir.path(), |_, _| {})
        .await
        .unwrap();
}

/// Runs `command`; its standard output, or a panic with what it printed.
pub fn run(command: &mut std::process::Command) -> String {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A `tools/call` of `tool` on the server at `base` (a process of its own, not a [`TestApp`])
/// with `token`: the JSON-RPC reply, or why there was none.
pub async fn call_at(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    tool: &str,
    arguments: Value,
) -> Result<Value, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": tool, "arguments": arguments}});
    let reply = client
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    reply.json().await.map_err(|e| e.to_string())
}

/// A loopback port free right now (another process may still take it before it is bound).
pub fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    probe.local_addr().unwrap().port()
}

/// A Node peer from `tests/clients` (`node` is the interpreter to use): started with `env`,
/// it prints one JSON line about itself first and serves until stdin closes (the child is
/// killed when dropped).
pub async fn node_peer(
    node: &Path,
    script: &str,
    env: &[(&str, String)],
) -> (tokio::process::Child, Value) {
    use tokio::io::AsyncBufReadExt;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients");
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

/// A running test application.
pub struct TestApp {
    pub base: String,
    pub plugin_dir: PathBuf,
    pub client: reqwest::Client,
    pub plugins: Arc<loanhost::plugins::Plugins>,
    pub db: loanhost::data::Db,
    pub directory: Option<Arc<loanhost::data::directory::Directory>>,
    pub key: SigningKey,
    tokens: std::collections::HashMap<String, String>,
    _tmp: tempfile::TempDir,
}

/// Options of [`spawn_app_with`].
#[derive(Default)]
pub struct AppOptions {
    /// Files to place in the plugin directory before start: (file name, bytes).
    pub files: Vec<(String, Vec<u8>)>,
    /// Extra configuration variables.
    pub env: Vec<(&'static str, String)>,
    /// Use a fresh PostgreSQL database instead of SQLite.
    pub postgres: bool,
    /// Settings the helper would set that this test leaves at the server's defaults.
    pub unset: Vec<&'static str>,
}

/// A fresh PostgreSQL database on the test cluster (`TEST_POSTGRES_URL`, set by `make test`).
pub async fn fresh_postgres_database() -> String {
    let admin = std::env::var("TEST_POSTGRES_URL")
        .expect("TEST_POSTGRES_URL is not set: run `make test`, which starts PostgreSQL (scripts/postgres.sh)");
    let pool = sqlx::PgPool::connect(&admin)
        .await
        .expect("connecting to the test PostgreSQL");
    let name = format!("loanhost_test_{}", uuid_like());
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let (base, _) = admin.rsplit_once('/').unwrap();
    format!("{base}/{name}")
}

fn uuid_like() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{}_{}_{}",
        std::process::id(),
        nanos,
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

impl AppOptions {
    /// Options with one shipped tool deployed (its built `.wasm` and shipped manifest).
    pub fn with_tool(name: &str) -> Self {
        AppOptions::default().plugin(name, tool_wasm(name), tool_manifest(name))
    }

    /// The same options with the metrics listener on a free loopback port, and that port.
    pub fn with_metrics(mut self) -> (Self, u16) {
        let port = free_port();
        self.env
            .push(("LOANHOST_METRICS_LISTEN", format!("127.0.0.1:{port}")));
        (self, port)
    }

    /// Compiled components kept in one cache for the whole test run (a Python or JavaScript
    /// component takes 20 to 30 s to compile; every app of the run then compiles it once).
    pub fn with_shared_compile_cache(mut self) -> Self {
        let cache = run_dir("compiled").join("cache");
        self.env
            .push(("LOANHOST_CACHE_DIR", cache.display().to_string()));
        self
    }

    /// Adds a plugin: `<name>.wasm` and `<name>.toml`, and, when the manifest declares a
    /// `[view]`, the shipped tool's `<name>.html` (a fixture that declares one adds its own
    /// with [`AppOptions::file`]).
    pub fn plugin(mut self, name: &str, wasm: Vec<u8>, manifest: String) -> Self {
        if manifest.contains("\n[view]") {
            if let Some(html) = tool_view(name) {
                self.files.push((format!("{name}.html"), html));
            }
        }
        self.files.push((format!("{name}.wasm"), wasm));
        self.files
            .push((format!("{name}.toml"), manifest.into_bytes()));
        self
    }
}

/// An app serving the shipped metadata tool.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(AppOptions::default().plugin(
        "get_loan_reporting_metadata",
        tool_wasm("get_loan_reporting_metadata"),
        tool_manifest("get_loan_reporting_metadata"),
    ))
    .await
}

/// An app with the given plugin directory contents and settings. `TEST_LOG=1` prints the
/// server's logs.
pub async fn spawn_app_with(options: AppOptions) -> TestApp {
    if std::env::var_os("TEST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter("info,loanhost=debug")
            .with_test_writer()
            .try_init();
    }
    let tmp = tempfile::tempdir().unwrap();
    let plugin_dir = tmp.path().join("plugins");
    std::fs::create_dir(&plugin_dir).unwrap();
    for (name, bytes) in &options.files {
        std::fs::write(plugin_dir.join(name), bytes).unwrap();
    }
    let mut env: std::collections::BTreeMap<String, String> = [
        ("LOANHOST_LISTEN", "127.0.0.1:0".to_string()),
        ("LOANHOST_PLUGIN_DIR", plugin_dir.display().to_string()),
        (
            "LOANHOST_CACHE_DIR",
            tmp.path().join("cache").display().to_string(),
        ),
        ("LOANHOST_TODAY", TODAY.to_string()),
        ("LOANHOST_DEV_IDP", "true".to_string()),
        // Tests that read the audit log point it at a file.
        ("LOANHOST_AUDIT_LOG", "off".to_string()),
        (
            "LOANHOST_DATABASE_URL",
            format!("sqlite://{}", tmp.path().join("loanhost.db").display()),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if options.postgres {
        env.insert(
            "LOANHOST_DATABASE_URL".into(),
            fresh_postgres_database().await,
        );
    }
    // Most tests drive one caller hard on purpose; the per-caller budgets are tested with
    // their defaults where they are the subject (`attack`), and opted into elsewhere.
    for (k, v) in [
        ("LOANHOST_CALLER_MAX_CONCURRENT", "1000"),
        ("LOANHOST_CALLER_CALLS_PER_MINUTE", "1000000"),
        ("LOANHOST_CALLER_PLUGIN_SECONDS_PER_MINUTE", "100000"),
        ("LOANHOST_CALLER_RESULT_MIB_PER_MINUTE", "1000000"),
    ] {
        env.insert(k.to_string(), v.to_string());
    }
    // Components are compiled as a server compiles them: in `loanhost compile-worker`
    // processes of the binary this test run built (beside the test binary).
    if let Some(binary) = loanhost_binary() {
        env.insert("LOANHOST_COMPILER".into(), binary.display().to_string());
    }
    for (k, v) in options.env {
        env.insert(k.to_string(), v);
    }
    for k in options.unset {
        env.remove(k);
    }
    let cache_dir = PathBuf::from(&env["LOANHOST_CACHE_DIR"]);
    std::fs::create_dir_all(&cache_dir).unwrap();
    std::fs::write(cache_dir.join("dev-idp-rsa.pem"), signing_pem()).unwrap();

    // Find a free port first: the configuration must know its own base URL. Another test may
    // take the port between the probe and the bind; then try another one.
    let fixed_base = env.contains_key("LOANHOST_BASE_URL");
    let mut attempt = 0;
    let (app, port, issuer, audience) = loop {
        attempt += 1;
        let port = free_port();
        env.insert("LOANHOST_LISTEN".into(), format!("127.0.0.1:{port}"));
        if !fixed_base {
            env.insert(
                "LOANHOST_BASE_URL".into(),
                format!("http://127.0.0.1:{port}"),
            );
        }
        let config = Config::from_map(&env).expect("valid test configuration");
        let (issuer, audience) = (config.idp.issuer.clone(), config.mcp_audience.clone());
        match Application::build(config).await {
            Ok(app) => break (app, port, issuer, audience),
            Err(e) if attempt < 5 && format!("{e:#}").contains("LOANHOST_LISTEN: cannot bind") => {
                continue
            }
            Err(e) => panic!("the app builds: {e:#}"),
        }
    };
    let plugins = app.plugins();
    let db = app.db();
    let directory = app.directory();
    let key = SigningKey::from_pem(signing_pem()).unwrap();
    let mut tokens = std::collections::HashMap::new();
    for u in users() {
        db.upsert_agent(&u.agent).await.unwrap();
        let token = key
            .mint(
                &issuer,
                &u.agent.email,
                &audience,
                "offline_access",
                Duration::from_secs(600),
            )
            .unwrap();
        tokens.insert(u.token.to_string(), token);
    }
    tokio::spawn(app.run_until_stopped());
    TestApp {
        base: format!("http://127.0.0.1:{port}"),
        plugin_dir,
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap(),
        plugins,
        db,
        directory,
        key,
        tokens,
        _tmp: tmp,
    }
}

impl TestApp {
    /// The bearer token of a test user (`agent-token` …), or `token` itself when it is not a
    /// user's name.
    pub fn bearer(&self, token: &str) -> String {
        self.tokens
            .get(token)
            .cloned()
            .unwrap_or_else(|| token.to_string())
    }

    /// Waits (5 s at most) until the agent directory answers with `agent` as written: at once
    /// on SQLite (`PRAGMA data_version`), once the change's notification has arrived on
    /// PostgreSQL (until then the directory answers with the entry it held).
    pub async fn until_directory_shows(&self, agent: &loanhost::data::NewAgent) {
        let Some(directory) = &self.directory else {
            return;
        };
        // As sets: the database keeps each role and managed agent once.
        let set = |v: &[String]| v.iter().cloned().collect::<std::collections::BTreeSet<_>>();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let shown = directory.agent_by_email(&agent.email).await.unwrap();
            if shown.is_some_and(|e| {
                set(&e.agent.roles) == set(&agent.roles)
                    && e.agent.company_id == agent.company_id
                    && set(&e.facts.managed_agent_ids) == set(&agent.managed_agent_ids)
            }) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the directory did not show {} as written within 5 s",
                agent.email
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A valid access token from this app's dev IdP for any email.
    pub fn token_for(&self, email: &str) -> String {
        self.key
            .mint(
                &format!("{}/dev-idp", self.base),
                email,
                "https://loanhost.local/mcp",
                "",
                Duration::from_secs(600),
            )
            .unwrap()
    }

    /// POSTs a raw JSON body to `/mcp` with a bearer token.
    pub async fn post_mcp(&self, token: Option<&str>, body: &Value) -> reqwest::Response {
        let mut req = self.client.post(format!("{}/mcp", self.base)).json(body);
        if let Some(t) = token {
            req = req.bearer_auth(self.bearer(t));
        }
        req.send().await.unwrap()
    }

    /// Sends a JSON-RPC request and returns the whole response object.
    pub async fn rpc(&self, token: &str, method: &str, params: Value) -> Value {
        let resp = self
            .post_mcp(
                Some(token),
                &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
            )
            .await;
        assert_eq!(resp.status(), 200, "status of {method}");
        resp.json().await.unwrap()
    }

    /// Calls a tool and returns the `result` object (or panics on a JSON-RPC error).
    pub async fn call_tool(&self, token: &str, name: &str, arguments: Value) -> Value {
        let reply = self
            .rpc(
                token,
                "tools/call",
                json!({"name": name, "arguments": arguments}),
            )
            .await;
        reply
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("JSON-RPC error: {reply}"))
    }

    /// Calls a tool that must succeed and returns its structured content.
    pub async fn call_ok(&self, token: &str, name: &str, arguments: Value) -> Value {
        let result = self.call_tool(token, name, arguments).await;
        assert_eq!(result["isError"], false, "{result}");
        result["structuredContent"].clone()
    }

    /// Calls a tool that must fail and returns its error text.
    pub async fn call_err(&self, token: &str, name: &str, arguments: Value) -> String {
        let result = self.call_tool(token, name, arguments).await;
        assert_eq!(result["isError"], true, "{result}");
        result["content"][0]["text"].as_str().unwrap().to_string()
    }

    /// The names of the listed tools.
    pub async fn tool_names(&self) -> Vec<String> {
        let reply = self.rpc("admin-token", "tools/list", json!({})).await;
        reply["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }

    /// The PostgreSQL pool of an app started with `postgres: true` (tests hold locks on it to
    /// keep a statement waiting).
    pub fn pg_pool(&self) -> sqlx::PgPool {
        match &self.db {
            loanhost::data::Db::Postgres(p) => p.clone(),
            _ => panic!("this test runs on PostgreSQL"),
        }
    }

    /// Places a file in the plugin directory atomically (write aside, then rename).
    pub fn deploy_file(&self, name: &str, bytes: &[u8]) {
        let tmp = self.plugin_dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, self.plugin_dir.join(name)).unwrap();
    }

    /// Waits until `cond` holds, checking every 50 ms. `cond` reads the app's own state (the
    /// plugin registry, a metric, a call with the test's unlimited budgets), so the wait spends
    /// nothing; its bound (5 minutes) is for a hung app, never for a slow machine.
    pub async fn eventually<F, Fut>(&self, what: &str, mut cond: F)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_secs(300) {
            if cond().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("timed out waiting until {what}");
    }
}

/// The `loanhost` binary of this build (`target/<profile>/loanhost`, beside the test binary's
/// `deps/` folder), when cargo built it.
pub fn loanhost_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let binary = exe.parent()?.parent()?.join("loanhost");
    binary.is_file().then_some(binary)
}

/// The repository's root folder.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The Python with `mcp==2.3.0` (`make test` creates `.venv`; `MCP_TEST_PYTHON` overrides).
pub fn python() -> PathBuf {
    std::env::var_os("MCP_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv/bin/python"))
}

#[test]
fn a_run_sweeps_the_folders_of_ended_runs_and_keeps_the_running_ones() {
    // Arrange: folders of this process, of a process that cannot run (pid beyond Linux's
    // limit of 2^22), and a name that is not a run's.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let me = std::process::id();
    let mine = tmp.path().join(format!("loanhost-test-dist-{me}"));
    let ended = tmp.path().join("loanhost-test-compiled-4294967295");
    let other = tmp.path().join("loanhost-test-notes");
    for dir in [&mine, &ended, &other] {
        std::fs::create_dir_all(dir.join("cache")).unwrap();
    }

    // Act
    sweep_ended_runs(tmp.path());

    // Assert
    assert!(mine.exists());
    assert!(!ended.exists());
    assert!(other.exists());
}
