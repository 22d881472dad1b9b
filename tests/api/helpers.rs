//! `spawn_app()` and friends: an application on an ephemeral port with a fresh plugin
//! directory, a fixed "today", and callers with roles.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use loanhost::app::Application;
use loanhost::auth::{Identity, RoleCode, StaticTokens};
use loanhost::config::Config;
use serde_json::{json, Value};

/// Where the built plugins are: shipped tools (`<tool>.wasm` + `<tool>.toml`) and fixtures.
pub struct Built {
    /// The installed shipped tools.
    pub dist: PathBuf,
    /// The cargo output directory holding `fixture_*.wasm`.
    pub out: PathBuf,
}

/// Builds every plugin and fixture once per test run (the same script `make plugins` uses).
pub fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
        let dist = std::env::temp_dir().join(format!("loanhost-test-dist-{}", std::process::id()));
        let output = std::process::Command::new(root.join("scripts/build-plugins.sh"))
            .arg(&dist)
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("running scripts/build-plugins.sh");
        assert!(output.status.success(), "building the plugins failed");
        let out = String::from_utf8(output.stdout).unwrap().lines().last().unwrap().trim().to_string();
        Built { dist, out: PathBuf::from(out) }
    })
}

/// The bytes of fixture `name` (e.g. `misbehave` for `fixture_misbehave.wasm`).
pub fn fixture_wasm(name: &str) -> Vec<u8> {
    let file = built().out.join(format!("fixture_{}.wasm", name.replace('-', "_")));
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The bytes of shipped tool `name`.
pub fn tool_wasm(name: &str) -> Vec<u8> {
    std::fs::read(built().dist.join(format!("{name}.wasm"))).unwrap()
}

/// The shipped manifest of tool `name`.
pub fn tool_manifest(name: &str) -> String {
    std::fs::read_to_string(built().dist.join(format!("{name}.toml"))).unwrap()
}

/// A manifest for a fixture.
pub fn manifest(name: &str, roles: &[&str], datasets: &[&str], memory_mib: u32, timeout_ms: u64, max_output: u64) -> String {
    let list = |xs: &[&str]| xs.iter().map(|x| format!("\"{x}\"")).collect::<Vec<_>>().join(", ");
    format!(
        "name = \"{name}\"\nwit_version = \"1.0.0\"\nroles = [{}]\ndatasets = [{}]\nscope = \"caller\"\n\n[limits]\nmemory_mib = {memory_mib}\ntimeout_ms = {timeout_ms}\nmax_output_bytes = {max_output}\n",
        list(roles),
        list(datasets)
    )
}

/// The roles every reporting tool accepts.
pub const DEFAULT_ROLES: &[&str] = &["Admin", "Processor", "DualLicensedAgent", "ConciergeKey", "Agent"];

/// The fixed "today" of test servers.
pub const TODAY: &str = "2026-03-15";

/// A test caller: its bearer token and identity.
pub struct User {
    pub token: &'static str,
    pub identity: Identity,
}

/// The callers every test app knows.
pub fn users() -> Vec<User> {
    vec![
        User { token: "admin-token", identity: Identity::new("00000000-0000-0000-0000-0000000000a1", [RoleCode::Admin]) },
        User { token: "agent-token", identity: Identity::new("00000000-0000-0000-0000-0000000000b2", [RoleCode::Agent]) },
        User { token: "prelicensed-token", identity: Identity::new("00000000-0000-0000-0000-0000000000c3", [RoleCode::PreLicensed]) },
    ]
}

/// A running test application.
pub struct TestApp {
    pub base: String,
    pub plugin_dir: PathBuf,
    pub client: reqwest::Client,
    pub plugins: Arc<loanhost::plugins::Plugins>,
    _tmp: tempfile::TempDir,
}

/// Options of [`spawn_app_with`].
#[derive(Default)]
pub struct AppOptions {
    /// Files to place in the plugin directory before start: (file name, bytes).
    pub files: Vec<(String, Vec<u8>)>,
    /// Extra configuration variables.
    pub env: Vec<(&'static str, String)>,
}

impl AppOptions {
    /// Adds a plugin: `<name>.wasm` and `<name>.toml`.
    pub fn plugin(mut self, name: &str, wasm: Vec<u8>, manifest: String) -> Self {
        self.files.push((format!("{name}.wasm"), wasm));
        self.files.push((format!("{name}.toml"), manifest.into_bytes()));
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

/// An app with the given plugin directory contents and settings.
pub async fn spawn_app_with(options: AppOptions) -> TestApp {
    let tmp = tempfile::tempdir().unwrap();
    let plugin_dir = tmp.path().join("plugins");
    std::fs::create_dir(&plugin_dir).unwrap();
    for (name, bytes) in &options.files {
        std::fs::write(plugin_dir.join(name), bytes).unwrap();
    }
    let mut env: std::collections::BTreeMap<String, String> = [
        ("LOANHOST_LISTEN", "127.0.0.1:0".to_string()),
        ("LOANHOST_PLUGIN_DIR", plugin_dir.display().to_string()),
        ("LOANHOST_CACHE_DIR", tmp.path().join("cache").display().to_string()),
        ("LOANHOST_TODAY", TODAY.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (k, v) in options.env {
        env.insert(k.to_string(), v);
    }
    let mut config = Config::from_map(&env).expect("valid test configuration");
    let tokens = users().into_iter().fold(StaticTokens::default(), |t, u| t.with(u.token, u.identity));

    // Bind first to learn the port, then tell the config its own base URL.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    config.listen = format!("127.0.0.1:{port}").parse().unwrap();
    config.base_url = format!("http://127.0.0.1:{port}");

    let app = Application::build(config, Arc::new(tokens)).await.expect("the app builds");
    let plugins = app.plugins();
    tokio::spawn(app.run_until_stopped());
    TestApp {
        base: format!("http://127.0.0.1:{port}"),
        plugin_dir,
        client: reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap(),
        plugins,
        _tmp: tmp,
    }
}

impl TestApp {
    /// POSTs a raw JSON body to `/mcp` with a bearer token.
    pub async fn post_mcp(&self, token: Option<&str>, body: &Value) -> reqwest::Response {
        let mut req = self.client.post(format!("{}/mcp", self.base)).json(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.unwrap()
    }

    /// Sends a JSON-RPC request and returns the whole response object.
    pub async fn rpc(&self, token: &str, method: &str, params: Value) -> Value {
        let resp = self
            .post_mcp(Some(token), &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .await;
        assert_eq!(resp.status(), 200, "status of {method}");
        resp.json().await.unwrap()
    }

    /// Calls a tool and returns the `result` object (or panics on a JSON-RPC error).
    pub async fn call_tool(&self, token: &str, name: &str, arguments: Value) -> Value {
        let reply = self.rpc(token, "tools/call", json!({"name": name, "arguments": arguments})).await;
        reply.get("result").cloned().unwrap_or_else(|| panic!("JSON-RPC error: {reply}"))
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
        reply["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    }

    /// Places a file in the plugin directory atomically (write aside, then rename).
    pub fn deploy_file(&self, name: &str, bytes: &[u8]) {
        let tmp = self.plugin_dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, self.plugin_dir.join(name)).unwrap();
    }

    /// Waits (bounded) until `cond` holds, polling.
    pub async fn eventually<F, Fut>(&self, what: &str, mut cond: F)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        for _ in 0..200 {
            if cond().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("timed out waiting until {what}");
    }
}
