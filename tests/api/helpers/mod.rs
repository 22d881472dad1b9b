//! `spawn_app()` and friends: an application on an ephemeral port with a fresh plugin
//! directory, a fixed "today", and callers with roles. The plugins it deploys are in
//! `fixtures`, its callers in `people`, its data in `seed`; what every suite shares (paths,
//! ports, peers) is the test kit, `loanhost_tests`.

mod fixtures;
mod people;
mod seed;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use loanhost::app::Application;
use loanhost::config::Config;
use loanhost::oauth::devidp::SigningKey;
use serde_json::{json, Value};

use fixtures::run_dir;

pub use fixtures::{
    built, example_plugin, fixture_wasm, hostile_plugin, manifest, on_wit, tool_manifest,
    tool_view, tool_wasm, ALL_TOOLS,
};
pub use loanhost_tests::{free_port, loanhost_binary, node_peer, python, root, run};
pub use people::{signing_pem, users, DEFAULT_ROLES};
pub use seed::{
    import_lines, milestone_buckets, milestones_app, seed_app, seed_app_on, SeededData, TODAY,
};

/// An app serving the hostile plugin written in `language` (`plugins/hostile/`), with a
/// 64 MiB, `timeout_ms`, 65,536-byte manifest (and the core instances a Python runtime needs).
pub async fn hostile_app(language: &str, timeout_ms: u64) -> (TestApp, String) {
    let tool = format!("hostile_{language}");
    let manifest =
        manifest(&tool, DEFAULT_ROLES, &[], 64, timeout_ms, 65536) + "core_instances = 48\n";
    let options = AppOptions::default().with_shared_compile_cache().plugin(
        &tool,
        hostile_plugin(language),
        manifest,
    );
    (spawn_app_with(options).await, tool)
}

/// Waits until the host has `free` instance slots, looking every millisecond for at most
/// `bound` (a bound against a hang, far from what the wait takes); how long it took, if it
/// came.
pub async fn slots_become(app: &TestApp, free: usize, bound: Duration) -> Option<Duration> {
    let started = std::time::Instant::now();
    while started.elapsed() < bound {
        if app.plugins.free_slots() == free {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    None
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
    /// on SQLite (the WAL-index header every commit writes), once the change's notification
    /// has arrived on PostgreSQL (until then the directory answers with the entry it held).
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
