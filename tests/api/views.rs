//! Plugins' views as MCP Apps resources: listed and read only by callers who may call their
//! tool, on the handshake-era revisions and on 2026-07-28 (with caching hints); named in a
//! tool's `_meta` (on 2026-07-28 only for a client that declares the extension); signed,
//! size-capped and hot-reloaded with their plugin; and drawn in a real headless Chromium by
//! the extension SDK's own host bridge.

use std::io::Cursor;

use loanhost::clock::Clock;
use loanhost::plugins::{ManifestBinding, PluginFiles, Plugins, SignaturePolicy};
use serde_json::{json, Value};

use crate::helpers::{
    seed_app, spawn_app_with, tool_manifest, tool_view, tool_wasm, AppOptions, TestApp, ALL_TOOLS,
};

const MIME: &str = "text/html;profile=mcp-app";
const UI: &str = "io.modelcontextprotocol/ui";
const V: &str = "2026-07-28";

/// The five reports that ship a view (the metadata tool has none).
const VIEWED: [&str; 5] = [
    "loan_pipeline_report",
    "mlo_pipeline_report",
    "report_loan_milestones",
    "report_loans",
    "warehouse_loan_milestone_report",
];
/// The views an Agent may see: not the org-wide warehouse reports.
const AGENT_VIEWED: [&str; 3] = [
    "loan_pipeline_report",
    "report_loan_milestones",
    "report_loans",
];

async fn app_with_every_tool() -> TestApp {
    let mut options = AppOptions::default();
    for t in ALL_TOOLS {
        options = options.plugin(t, tool_wasm(t), tool_manifest(t));
    }
    spawn_app_with(options).await
}

/// A 2026-07-28 request: the `_meta` envelope with `capabilities`, and its mirrored headers
/// (`Mcp-Name` from `params.name` or `params.uri`).
async fn modern(
    app: &TestApp,
    token: &str,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let name = params["name"]
        .as_str()
        .or(params["uri"].as_str())
        .map(str::to_string);
    let mut req = app
        .client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(app.bearer(token))
        .header("MCP-Protocol-Version", V)
        .header("Mcp-Method", method)
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}));
    if let Some(n) = name {
        req = req.header("Mcp-Name", n);
    }
    let resp = req.send().await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

fn ui_capabilities() -> Value {
    json!({"extensions": {UI: {"mimeTypes": [MIME]}}})
}

fn uris(list: &Value) -> Vec<String> {
    list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap().to_string())
        .collect()
}

fn view_uris(tools: &[&str]) -> Vec<String> {
    tools.iter().map(|t| format!("ui://loanhost/{t}")).collect()
}

#[tokio::test]
async fn views_are_listed_and_read_only_by_callers_who_may_call_their_tool() {
    // Arrange
    let app = app_with_every_tool().await;

    // Act
    let admin = app.rpc("admin-token", "resources/list", json!({})).await;
    let agent = app.rpc("agent-token", "resources/list", json!({})).await;
    let read = app
        .rpc(
            "admin-token",
            "resources/read",
            json!({"uri": "ui://loanhost/report_loans"}),
        )
        .await;
    let hidden = app
        .rpc(
            "agent-token",
            "resources/read",
            json!({"uri": "ui://loanhost/mlo_pipeline_report"}),
        )
        .await;
    let unknown = app
        .rpc(
            "admin-token",
            "resources/read",
            json!({"uri": "ui://loanhost/nope"}),
        )
        .await;
    let templates = app
        .rpc("admin-token", "resources/templates/list", json!({}))
        .await;

    // Assert: each role sees the views of the tools it may call, and nothing else.
    assert_eq!(uris(&admin["result"]), view_uris(&VIEWED));
    assert_eq!(uris(&agent["result"]), view_uris(&AGENT_VIEWED));
    let listed = &admin["result"]["resources"][3];
    assert_eq!(listed["name"], "report_loans_view");
    assert_eq!(listed["mimeType"], MIME);
    assert_eq!(listed["title"], "Loans by bucket (chart)");
    assert_eq!(
        listed["_meta"]["ui"],
        json!({"csp": {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []}, "prefersBorder": true})
    );
    let content = &read["result"]["contents"][0];
    assert_eq!(content["uri"], "ui://loanhost/report_loans");
    assert_eq!(content["mimeType"], MIME);
    assert_eq!(content["_meta"], listed["_meta"]);
    let html = content["text"].as_str().unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", &html[..80]);
    // The host's policy comes first in the head: nothing outside the document loads.
    let csp = html
        .find("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';")
        .expect("the policy is in the document");
    assert!(csp < html.find("<script").unwrap());
    assert!(html.contains("connect-src 'none'"));
    assert_eq!(listed["size"], html.len());
    // The shipped file as built, the policy aside.
    let shipped = String::from_utf8(tool_view("report_loans").unwrap()).unwrap();
    let policy = &html[csp..csp + html[csp..].find('>').unwrap() + 1];
    assert_eq!(html.replacen(policy, "", 1), shipped);
    // A view of a tool the caller may not call is as absent as one that does not exist.
    for (reply, uri) in [
        (&hidden, "ui://loanhost/mlo_pipeline_report"),
        (&unknown, "ui://loanhost/nope"),
    ] {
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        assert_eq!(
            reply["error"]["message"],
            format!("Resource not found: {uri}")
        );
        assert_eq!(reply["error"]["data"]["uri"], uri);
    }
    assert_eq!(templates["result"], json!({"resourceTemplates": []}));
}

#[tokio::test]
async fn every_tools_view_in_its_meta_is_a_resource_the_caller_can_read() {
    // Arrange
    let app = app_with_every_tool().await;

    for token in ["admin-token", "agent-token"] {
        // Act
        let tools = app.rpc(token, "tools/list", json!({})).await;

        // Assert: the view each tool names resolves; a tool without one names none.
        let mut named = Vec::new();
        for tool in tools["result"]["tools"].as_array().unwrap() {
            let name = tool["name"].as_str().unwrap();
            let Some(uri) = tool["_meta"]["ui"]["resourceUri"].as_str() else {
                assert!(tool.get("_meta").is_none(), "{tool}");
                continue;
            };
            assert_eq!(tool["_meta"]["ui/resourceUri"], uri, "the flat key agrees");
            let read = app.rpc(token, "resources/read", json!({"uri": uri})).await;
            assert_eq!(
                read["result"]["contents"][0]["uri"], uri,
                "{token} {name}: {read}"
            );
            named.push(name.to_string());
        }
        let expected: Vec<&str> = if token == "admin-token" {
            VIEWED.to_vec()
        } else {
            AGENT_VIEWED.to_vec()
        };
        assert_eq!(named, expected, "{token}");
    }
}

#[tokio::test]
async fn on_2026_07_28_views_are_named_only_to_clients_that_declare_the_extension() {
    // Arrange
    let app = app_with_every_tool().await;

    // Act
    let (_, plain) = modern(&app, "admin-token", "tools/list", json!({}), json!({})).await;
    let (_, apps) = modern(
        &app,
        "admin-token",
        "tools/list",
        json!({}),
        ui_capabilities(),
    )
    .await;
    let (s1, list) = modern(&app, "admin-token", "resources/list", json!({}), json!({})).await;
    let (s2, read) = modern(
        &app,
        "admin-token",
        "resources/read",
        json!({"uri": "ui://loanhost/loan_pipeline_report"}),
        ui_capabilities(),
    )
    .await;
    let (s3, templates) = modern(
        &app,
        "admin-token",
        "resources/templates/list",
        json!({}),
        json!({}),
    )
    .await;
    let (s4, call) = modern(
        &app,
        "admin-token",
        "tools/call",
        json!({"name": "report_loans", "arguments": {"groupBy": "Status"}}),
        ui_capabilities(),
    )
    .await;

    // Assert: without the extension, tools/list is exactly what it was before views.
    let has_meta = |list: &Value| {
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t.get("_meta").is_some())
            .count()
    };
    assert_eq!(has_meta(&plain), 0, "{plain}");
    assert_eq!(has_meta(&apps), 5);
    assert_eq!((s1, s2, s3, s4), (200, 200, 200, 200));
    assert_eq!(uris(&list["result"]), view_uris(&VIEWED));
    for r in [&list, &read, &templates] {
        assert_eq!(r["result"]["ttlMs"], 30_000, "{r}");
        assert_eq!(r["result"]["cacheScope"], "private");
        assert_eq!(r["result"]["resultType"], "complete");
    }
    assert_eq!(read["result"]["contents"][0]["mimeType"], MIME);
    // A tool's result is the same for a client that renders views.
    assert!(call["result"].get("ttlMs").is_none());
    assert_eq!(call["result"]["isError"], false);
}

#[tokio::test]
async fn a_resources_read_whose_mcp_name_header_disagrees_with_its_uri_is_refused() {
    // Arrange
    let app = app_with_every_tool().await;
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {
        "uri": "ui://loanhost/report_loans",
        "_meta": {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}},
    }});

    // Act
    let resp = app
        .client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(app.bearer("admin-token"))
        .header("MCP-Protocol-Version", V)
        .header("Mcp-Method", "resources/read")
        .header("Mcp-Name", "ui://loanhost/loan_pipeline_report")
        .json(&body)
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(resp.status(), 400);
    let reply: Value = resp.json().await.unwrap();
    assert_eq!(reply["error"]["code"], -32020, "{reply}");
}

struct Signer {
    public: String,
    secret: minisign::SecretKey,
}

impl Signer {
    fn new() -> Signer {
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        Signer {
            public: kp.pk.to_base64(),
            secret: kp.sk,
        }
    }

    fn sign(&self, bytes: &[u8]) -> String {
        self.sign_with(bytes, None)
    }

    fn sign_with(&self, bytes: &[u8], comment: Option<&str>) -> String {
        minisign::sign(None, &self.secret, Cursor::new(bytes), comment, None)
            .unwrap()
            .to_string()
    }

    fn required(&self) -> SignaturePolicy {
        SignaturePolicy::new(true, std::slice::from_ref(&self.public)).unwrap()
    }
}

/// A file to deploy: its name, its bytes (none: absent) and who signs it.
type DeployedFile<'a> = (&'a str, Option<&'a [u8]>, Option<&'a Signer>);

/// Writes report_loans into `dir` (its view as given), each file signed by `signer` when one
/// is given for it: (component and manifest, view).
fn deploy_report_loans(
    dir: &std::path::Path,
    view: Option<&[u8]>,
    manifest: &str,
    signers: (Option<&Signer>, Option<&Signer>),
) {
    let wasm = tool_wasm("report_loans");
    let files: [DeployedFile; 3] = [
        ("report_loans.wasm", Some(&wasm), signers.0),
        ("report_loans.toml", Some(manifest.as_bytes()), signers.0),
        ("report_loans.html", view, signers.1),
    ];
    for (name, bytes, signer) in files {
        let path = dir.join(name);
        let sig = dir.join(format!("{name}.minisig"));
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&sig);
        if let Some(bytes) = bytes {
            std::fs::write(&path, bytes).unwrap();
            if let Some(s) = signer {
                // A manifest's signature names the component and the view it is deployed with.
                let signed = if name.ends_with(".toml") {
                    s.sign_with(bytes, Some(&ManifestBinding::of(&wasm, view).comment()))
                } else {
                    s.sign(bytes)
                };
                std::fs::write(&sig, signed).unwrap();
            }
        }
    }
}

async fn load(dir: &std::path::Path, policy: SignaturePolicy) -> Result<Option<String>, String> {
    let plugins = Plugins::new(None, policy, Clock::system()).unwrap();
    plugins
        .load(&PluginFiles::in_dir(dir, "report_loans"))
        .await
        .map(|p| p.view.map(|v| v.uri))
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_view_is_covered_by_the_plugins_signature() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let key = Signer::new();
    let other = Signer::new();
    let view = tool_view("report_loans").unwrap();
    let manifest = tool_manifest("report_loans");
    let mut changed = view.clone();
    changed.extend_from_slice(b"<script>parent.postMessage('exfiltrate', '*')</script>");

    // Act + Assert: signed throughout, it loads with its view.
    deploy_report_loans(dir.path(), Some(&view), &manifest, (Some(&key), Some(&key)));
    assert_eq!(
        load(dir.path(), key.required()).await,
        Ok(Some("ui://loanhost/report_loans".into()))
    );

    // The view unsigned, while signatures are required.
    deploy_report_loans(dir.path(), Some(&view), &manifest, (Some(&key), None));
    let e = load(dir.path(), key.required()).await.unwrap_err();
    assert!(e.contains("report_loans.html.minisig"), "{e}");

    // The view changed after it was signed.
    deploy_report_loans(dir.path(), Some(&view), &manifest, (Some(&key), Some(&key)));
    std::fs::write(dir.path().join("report_loans.html"), &changed).unwrap();
    let e = load(dir.path(), key.required()).await.unwrap_err();
    assert!(
        e.ends_with("report_loans.html: report_loans.html.minisig: the signature does not verify against any trusted key (tampered plugin or untrusted signer)"),
        "{e}"
    );

    // Another view, itself validly signed by the same key, put beside the signed manifest: the
    // manifest's signature names the view it was signed with.
    deploy_report_loans(dir.path(), Some(&view), &manifest, (Some(&key), Some(&key)));
    std::fs::write(dir.path().join("report_loans.html"), &changed).unwrap();
    std::fs::write(
        dir.path().join("report_loans.html.minisig"),
        key.sign(&changed),
    )
    .unwrap();
    let e = load(dir.path(), key.required()).await.unwrap_err();
    assert!(
        e.contains("report_loans.toml: its signature names view sha256:")
            && e.contains("but the view beside it is sha256:"),
        "{e}"
    );

    // Signed by a key nobody trusts.
    deploy_report_loans(
        dir.path(),
        Some(&view),
        &manifest,
        (Some(&key), Some(&other)),
    );
    assert!(load(dir.path(), key.required()).await.is_err());

    // Signatures optional: a signed plugin still needs its view signed, and a signed view
    // does not make an unsigned plugin trusted.
    let optional = SignaturePolicy::new(false, std::slice::from_ref(&key.public)).unwrap();
    deploy_report_loans(dir.path(), Some(&view), &manifest, (Some(&key), None));
    let e = load(dir.path(), optional.clone()).await.unwrap_err();
    assert!(
        e.contains("the plugin is signed but its view is not: a signature must cover the view too (sign it with the same key into report_loans.html.minisig)"),
        "{e}"
    );
    deploy_report_loans(dir.path(), Some(&view), &manifest, (None, Some(&key)));
    let e = load(dir.path(), optional.clone()).await.unwrap_err();
    assert!(
        e.ends_with("report_loans.html: the view is signed but the plugin is not"),
        "{e}"
    );
    deploy_report_loans(dir.path(), Some(&view), &manifest, (None, None));
    assert!(load(dir.path(), optional).await.unwrap().is_some());
}

#[tokio::test]
async fn a_view_missing_undeclared_oversized_or_not_html_is_refused_naming_why() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let view = tool_view("report_loans").unwrap();
    let manifest = tool_manifest("report_loans");
    let undeclared = manifest[..manifest.find("\n# The MCP Apps view").unwrap()].to_string();
    let any = SignaturePolicy::default();
    let mut big = view.clone();
    big.resize(2 * 1024 * 1024 + 1, b' ');

    // Act + Assert
    deploy_report_loans(dir.path(), None, &manifest, (None, None));
    assert!(load(dir.path(), any.clone()).await.unwrap_err().ends_with(
        "report_loans.toml: view: the manifest declares a view but report_loans.html is missing"
    ));
    deploy_report_loans(dir.path(), Some(&view), &undeclared, (None, None));
    assert!(load(dir.path(), any.clone())
        .await
        .unwrap_err()
        .ends_with("report_loans.html: a view file is present but the manifest declares no [view]: add a [view] table to the manifest, or remove the file"));
    deploy_report_loans(dir.path(), None, &undeclared, (None, None));
    assert_eq!(load(dir.path(), any.clone()).await, Ok(None));
    deploy_report_loans(dir.path(), Some(&big), &manifest, (None, None));
    let e = load(dir.path(), any.clone()).await.unwrap_err();
    assert!(
        e.contains("the view is 2097153 bytes; a view may have at most 2097152"),
        "{e}"
    );
    deploy_report_loans(
        dir.path(),
        Some(b"{\"not\": \"html\"}"),
        &manifest,
        (None, None),
    );
    let e = load(dir.path(), any).await.unwrap_err();
    assert!(e.ends_with("it must start with <!DOCTYPE html>"), "{e}");
}

#[tokio::test]
async fn a_changed_view_is_hot_reloaded_with_its_plugin() {
    // Arrange
    let app = app_with_every_tool().await;
    let marker = "<p id=\"hot-reloaded\"></p>";
    let view = String::from_utf8(tool_view("report_loans").unwrap())
        .unwrap()
        .replace(
            "<main id=\"app\"></main>",
            &format!("<main id=\"app\"></main>{marker}"),
        );
    let served = |reply: Value| {
        reply["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains(marker)
    };
    let read = json!({"uri": "ui://loanhost/report_loans"});
    let before = app.rpc("agent-token", "resources/read", read.clone()).await;

    // Act
    app.deploy_file("report_loans.html", view.as_bytes());

    // Assert: the server's own reloader serves the new view (bounded wait).
    assert!(!served(before));
    app.eventually("the changed view is served", || async {
        served(app.rpc("agent-token", "resources/read", read.clone()).await)
    })
    .await;
}

/// A number as the views print it: `en-US` grouping, at most two decimals.
fn printed(v: &Value) -> String {
    let n: f64 = match v {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::String(s) => s.parse().unwrap(),
        other => panic!("not a number: {other}"),
    };
    let rounded = (n * 100.0).round() / 100.0;
    let whole = rounded.trunc() as i64;
    let mut digits = whole.abs().to_string();
    let mut grouped = String::new();
    while digits.len() > 3 {
        let tail = digits.split_off(digits.len() - 3);
        grouped = format!(",{tail}{grouped}");
    }
    let mut out = format!("{}{digits}{grouped}", if whole < 0 { "-" } else { "" });
    let cents = ((rounded.fract().abs() * 100.0).round()) as i64;
    if cents != 0 {
        out.push_str(format!(".{cents:02}").trim_end_matches('0'));
    }
    out
}

#[test]
fn numbers_are_printed_as_the_views_print_them() {
    assert_eq!(printed(&json!(1234567)), "1,234,567");
    assert_eq!(printed(&json!(12.5)), "12.5");
    assert_eq!(printed(&json!("1000.05")), "1,000.05");
    assert_eq!(printed(&json!(999)), "999");
}

/// One browser case: who calls which tool with what, in which theme and width.
fn case(name: &str, token: &str, tool: &str, args: Value, theme: &str, width: u32) -> Value {
    json!({"name": name, "token": token, "tool": tool, "args": args, "theme": theme, "width": width})
}

#[tokio::test]
async fn every_view_draws_its_report_in_a_real_browser() {
    // Arrange: seeded loans, history and warehouse rows; every tool with its view.
    let app = app_with_every_tool().await;
    seed_app(&app, 26, 600).await;
    let admin = app.bearer("admin-token");
    let cases = json!([
        case(
            "report_loans-status-light",
            &admin,
            "report_loans",
            json!({"groupBy": "Status"}),
            "light",
            720
        ),
        case(
            "report_loans-year-sum-dark",
            &admin,
            "report_loans",
            json!({"groupBy": "Year", "metric": "Sum", "metricField": "LoanAmount"}),
            "dark",
            720
        ),
        case(
            "report_loans-month-light",
            &admin,
            "report_loans",
            json!({"groupBy": "Month"}),
            "light",
            720
        ),
        case(
            "report_loans-loantype-narrow",
            &admin,
            "report_loans",
            json!({"groupBy": "LoanType", "metric": "Average", "metricField": "LoanAmount"}),
            "light",
            300
        ),
        case(
            "report_loans-empty",
            &admin,
            "report_loans",
            json!({"groupBy": "Status", "filter": {"loanAmountMin": 999999999999u64}}),
            "light",
            720
        ),
        case(
            "report_loans-error",
            &admin,
            "report_loans",
            json!({"groupBy": "Nope"}),
            "dark",
            720
        ),
        case(
            "loan_pipeline_report-light",
            &admin,
            "loan_pipeline_report",
            json!({"lookbackMonths": 12}),
            "light",
            720
        ),
        case(
            "report_loan_milestones-dark",
            &admin,
            "report_loan_milestones",
            json!({"granularity": "Month", "lookback": 6}),
            "dark",
            720
        ),
        case(
            "mlo_pipeline_report-light",
            &admin,
            "mlo_pipeline_report",
            json!({"bucket": "Month"}),
            "light",
            720
        ),
        case(
            "warehouse_loan_milestone_report-dark",
            &admin,
            "warehouse_loan_milestone_report",
            json!({"bucket": "Month", "fromDate": "2025-10-01", "toDate": "2026-03-15"}),
            "dark",
            720
        ),
    ]);
    let shots = std::env::var_os("VIEW_SCREENSHOTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("loanhost-view-shots-{}", std::process::id()))
        });
    let clients = crate::helpers::root().join("tests/clients");

    // Act: the host page (AppBridge + the official client) in headless Chromium.
    let run = tokio::process::Command::new(clients.join("node_modules/.bin/node"))
        .arg(clients.join("views/run.mjs"))
        .env("BASE", &app.base)
        .env("CASES", cases.to_string())
        .env("SHOTS", &shots)
        .current_dir(&clients)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(300), run)
        .await
        .expect("the browser run ended within 5 minutes")
        .unwrap();
    assert!(
        out.status.success(),
        "the browser run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(out.stdout.trim_ascii()).unwrap();
    let by_name = |n: &str| {
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == n)
            .unwrap_or_else(|| panic!("no case {n}"))
            .clone()
    };

    // Assert: for every case, the view was the one the tool named, nothing outside the page
    // was requested, nothing was logged as an error, and every chart has a size.
    for c in report["cases"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        assert_eq!(c["mimeType"], MIME, "{name}");
        assert_eq!(c["foreignRequests"], json!([]), "{name}");
        assert_eq!(c["consoleErrors"], json!([]), "{name}");
        assert!(
            c["sized"].as_u64().unwrap() > 0,
            "{name}: the view never reported its size"
        );
        for chart in c["drawn"]["charts"].as_array().unwrap() {
            assert!(chart["width"].as_u64().unwrap() >= 200, "{name}: {chart}");
            assert!(chart["height"].as_u64().unwrap() >= 60, "{name}: {chart}");
        }
        let drawn = &c["drawn"];
        assert!(
            drawn["scrollWidth"].as_u64() <= drawn["clientWidth"].as_u64(),
            "{name}: the view overflows its width: {drawn}"
        );
        assert_eq!(
            drawn["theme"], c["theme"],
            "{name}: the host's theme is followed"
        );
        let dark = drawn["background"] == "rgb(23, 23, 23)";
        assert_eq!(
            dark,
            c["theme"] == "dark",
            "{name}: background {}",
            drawn["background"]
        );
    }
    let texts = |c: &Value| -> Vec<String> {
        c["drawn"]["svgTexts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect()
    };
    let assert_drawn = |c: &Value, wanted: &[String]| {
        let t = texts(c);
        for w in wanted {
            assert!(
                t.contains(w),
                "{}: `{w}` not drawn; drawn: {t:?}",
                c["name"]
            );
        }
    };

    // report_loans by a dimension: every bucket's key and value.
    for n in ["report_loans-status-light", "report_loans-loantype-narrow"] {
        let c = by_name(n);
        let buckets = c["result"]["structuredContent"]["buckets"]
            .as_array()
            .unwrap()
            .clone();
        assert!(buckets.len() >= 3, "{n}: {buckets:?}");
        let keys: Vec<String> = buckets
            .iter()
            .map(|b| b["key"].as_str().unwrap().to_string())
            .collect();
        let values: Vec<String> = buckets.iter().map(|b| printed(&b["value"])).collect();
        assert_drawn(&c, &values);
        if n.ends_with("light") {
            assert_drawn(&c, &keys);
        }
        assert_eq!(c["drawn"]["tableRows"], buckets.len());
    }
    // By year: bars on a time axis, each labelled with its value.
    let c = by_name("report_loans-year-sum-dark");
    let buckets = c["result"]["structuredContent"]["buckets"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!buckets.is_empty());
    assert_drawn(
        &c,
        &buckets
            .iter()
            .filter(|b| !b["value"].is_null())
            .map(|b| printed(&b["value"]))
            .collect::<Vec<_>>(),
    );
    assert_eq!(c["drawn"]["title"], "Sum of LoanAmount by Year");
    // By month: a time axis with the years named.
    let c = by_name("report_loans-month-light");
    assert!(
        texts(&c).iter().any(|t| t.ends_with("2026")),
        "{:?}",
        texts(&c)
    );
    // An empty result says so; an error result shows the tool's error.
    let c = by_name("report_loans-empty");
    assert_eq!(c["result"]["structuredContent"]["buckets"], json!([]));
    assert_eq!(c["drawn"]["charts"], json!([]));
    assert!(c["drawn"]["empty"][0]
        .as_str()
        .unwrap()
        .starts_with("No loans match."));
    let c = by_name("report_loans-error");
    assert_eq!(c["result"]["isError"], true);
    let error = c["drawn"]["errors"][0].as_str().unwrap();
    assert!(
        error.starts_with("The report could not be made. invalid_params:"),
        "{error}"
    );

    // The pipeline: every stage with its count, the note shown.
    let c = by_name("loan_pipeline_report-light");
    let r = &c["result"]["structuredContent"];
    let stages = r["currentPipelineByStage"].as_array().unwrap();
    assert_drawn(
        &c,
        &stages
            .iter()
            .map(|s| s["stage"].as_str().unwrap().to_string())
            .collect::<Vec<_>>(),
    );
    assert_drawn(
        &c,
        &stages
            .iter()
            .map(|s| printed(&s["count"]))
            .collect::<Vec<_>>(),
    );
    assert_eq!(c["drawn"]["notes"][0], r["note"]);
    assert_eq!(
        c["drawn"]["charts"].as_array().unwrap().len(),
        2,
        "stages and trend"
    );

    // The milestones: every stage named, the funnel's totals drawn, the note shown.
    let c = by_name("report_loan_milestones-dark");
    let r = &c["result"]["structuredContent"];
    let buckets = r["buckets"].as_array().unwrap();
    assert!(!buckets.is_empty());
    let mut totals = std::collections::BTreeMap::<String, u64>::new();
    for b in buckets {
        *totals
            .entry(b["stage"].as_str().unwrap().to_string())
            .or_default() += b["loanCount"].as_u64().unwrap();
    }
    assert_drawn(&c, &totals.keys().cloned().collect::<Vec<_>>());
    assert_drawn(
        &c,
        &totals
            .values()
            .map(|v| printed(&json!(v)))
            .collect::<Vec<_>>(),
    );
    assert_eq!(c["drawn"]["notes"][0], r["note"]);

    // The warehouse reports: a heatmap naming every stage or milestone and every period.
    for (n, category, count) in [
        ("mlo_pipeline_report-light", "stage", "entryCount"),
        (
            "warehouse_loan_milestone_report-dark",
            "milestone",
            "loanCount",
        ),
    ] {
        let c = by_name(n);
        let rows = c["result"]["structuredContent"]["rows"]
            .as_array()
            .unwrap()
            .clone();
        assert!(!rows.is_empty(), "{n}");
        let categories: std::collections::BTreeSet<String> = rows
            .iter()
            .map(|r| r[category].as_str().unwrap().to_string())
            .collect();
        assert_drawn(&c, &categories.into_iter().collect::<Vec<_>>());
        let counts: Vec<String> = rows.iter().map(|r| printed(&r[count])).collect();
        assert_drawn(&c, &counts);
        assert_eq!(c["drawn"]["tableRows"], rows.len());
    }
}

/// Runs the official MCP Inspector's CLI (npm, 2.12) against the app with an admin's token;
/// its JSON answer.
async fn inspector(app: &TestApp, args: &[&str]) -> Value {
    let clients = crate::helpers::root().join("tests/clients");
    let run =
        tokio::process::Command::new(clients.join("node_modules/.bin/node"))
            .arg(clients.join(
                "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
            ))
            .args(["--cli", &format!("{}/mcp", app.base), "--transport", "http"])
            .args(args)
            .arg("--header")
            .arg(format!(
                "Authorization: Bearer {}",
                app.bearer("admin-token")
            ))
            .current_dir(&clients)
            .kill_on_drop(true)
            .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(120), run)
        .await
        .expect("the Inspector answered within 2 minutes")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[tokio::test]
async fn the_official_inspector_lists_the_views_and_reads_one() {
    // Arrange
    let app = app_with_every_tool().await;

    // Act
    let list = inspector(&app, &["--method", "resources/list"]).await;
    let read = inspector(
        &app,
        &[
            "--method",
            "resources/read",
            "--uri",
            "ui://loanhost/loan_pipeline_report",
        ],
    )
    .await;
    let tools = inspector(&app, &["--method", "tools/list"]).await;

    // Assert
    assert_eq!(uris(&list), view_uris(&VIEWED));
    let content = &read["contents"][0];
    assert_eq!(content["mimeType"], MIME);
    assert_eq!(content["uri"], "ui://loanhost/loan_pipeline_report");
    assert!(content["text"]
        .as_str()
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
    let pipeline = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "loan_pipeline_report")
        .unwrap();
    assert_eq!(
        pipeline["_meta"]["ui"]["resourceUri"],
        "ui://loanhost/loan_pipeline_report"
    );
}
