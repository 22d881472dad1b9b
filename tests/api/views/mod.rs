//! Plugins' views as MCP Apps resources: listed and read only by callers who may call their
//! tool, on the handshake-era revisions and on 2026-07-28 (with caching hints); named in a
//! tool's `_meta` (on 2026-07-28 only for a client that declares the extension); signed,
//! size-capped and hot-reloaded with their plugin; and drawn in a real headless Chromium by
//! the extension SDK's own host bridge.

mod browser;
mod signed;

use serde_json::{json, Value};

use crate::helpers::{
    spawn_app_with, tool_manifest, tool_view, tool_wasm, AppOptions, TestApp, ALL_TOOLS,
};

const MIME: &str = "text/html;profile=mcp-app";

const UI: &str = "io.modelcontextprotocol/ui";

const V: &str = "2026-07-28";

/// The tools that ship a view: five reports and the loan application (the metadata tool has
/// none).
const VIEWED: [&str; 6] = [
    "get_loan_application",
    "loan_pipeline_report",
    "mlo_pipeline_report",
    "report_loan_milestones",
    "report_loans",
    "warehouse_loan_milestone_report",
];

/// The views an Agent may see: not the org-wide warehouse reports.
const AGENT_VIEWED: [&str; 4] = [
    "get_loan_application",
    "loan_pipeline_report",
    "report_loan_milestones",
    "report_loans",
];

/// An app serving the six reports and `get_loan_application` (a record's view beside theirs).
async fn app_with_every_tool() -> TestApp {
    let mut options = AppOptions::default();
    for t in ALL_TOOLS.into_iter().chain(["get_loan_application"]) {
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
    let listed = &admin["result"]["resources"][4];
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
    assert_eq!(has_meta(&apps), VIEWED.len());
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
