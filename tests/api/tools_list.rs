//! `LOANHOST_TOOLS_LIST` (issue #74): with `callable`, a caller's `tools/list` holds exactly
//! the shipped tools its roles may call (as the manifests' `roles` say, read here), in name
//! order, the same on every request and on both revisions (2026-07-28 with `cacheScope:
//! private`); `resources/list` the views of those tools; and a call to a tool it is not shown
//! answers exactly as an unknown tool does. The default (`all`) lists every tool to every
//! caller.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::helpers::{root, seed_app, spawn_app_with, tool_manifest, tool_wasm, AppOptions};

/// The shipped tools (`plugins/tools/SHIPPED`).
fn shipped() -> Vec<String> {
    std::fs::read_to_string(root().join("plugins/tools/SHIPPED"))
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// The roles a shipped tool's manifest names (its `roles = [...]` line).
fn roles_of(tool: &str) -> BTreeSet<String> {
    let manifest = tool_manifest(tool);
    let line = manifest
        .lines()
        .find(|l| l.starts_with("roles"))
        .unwrap_or_else(|| panic!("{tool}'s manifest names no roles"));
    serde_json::from_str(line.split_once('=').unwrap().1.trim()).unwrap()
}

/// An app serving every shipped tool, listing tools as `setting` says, with seeded people.
async fn app(setting: &str) -> crate::helpers::TestApp {
    let mut options = AppOptions::default();
    for t in shipped() {
        options = options.plugin(&t, tool_wasm(&t), tool_manifest(&t));
    }
    options
        .env
        .push(("LOANHOST_TOOLS_LIST", setting.to_string()));
    let app = spawn_app_with(options).await;
    seed_app(&app, 74, 40).await;
    app
}

fn names(list: &Value, key: &str, field: &str) -> Vec<String> {
    list["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|t| t[field].as_str().unwrap().to_string())
        .collect()
}

/// A 2026-07-28 `tools/list`.
async fn modern_list(app: &crate::helpers::TestApp, token: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    app.client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(token)
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn with_callable_each_role_is_shown_only_the_tools_it_may_call() {
    // Arrange
    let app = app("callable").await;
    let tools = shipped();
    let with_view: BTreeSet<String> = tools
        .iter()
        .filter(|t| tool_manifest(t).contains("\n[view]"))
        .cloned()
        .collect();
    let demo = |who: &str| format!("{who}@demo.loanhost.local");
    let callers = [
        ("admin", vec!["Admin"]),
        ("processor", vec!["Processor"]),
        ("concierge", vec!["ConciergeKey"]),
        ("agent", vec!["Agent"]),
        ("prelicensed", vec!["Agent", "PreLicensed"]),
    ];

    for (who, roles) in callers {
        let token = app.token_for(&demo(who));
        let expected: Vec<String> = tools
            .iter()
            .filter(|t| roles.iter().any(|r| roles_of(t).contains(*r)))
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert!(!expected.is_empty(), "{who} may call something");

        // Act
        let list = app.rpc(&token, "tools/list", json!({})).await;
        let again = app.rpc(&token, "tools/list", json!({})).await;
        let modern = modern_list(&app, &token).await;
        let views = app.rpc(&token, "resources/list", json!({})).await;

        // Assert: exactly the callable tools, in name order, the same every time.
        assert_eq!(names(&list, "tools", "name"), expected, "{who}");
        assert_eq!(list["result"], again["result"], "{who}");
        assert_eq!(names(&modern, "tools", "name"), expected, "{who}");
        assert_eq!(modern["result"]["cacheScope"], "private", "{who}");
        let shown_views: Vec<String> = expected
            .iter()
            .filter(|t| with_view.contains(*t))
            .map(|t| format!("ui://loanhost/{t}"))
            .collect();
        assert_eq!(names(&views, "resources", "uri"), shown_views, "{who}");
    }
}

#[tokio::test]
async fn with_callable_a_hidden_tool_answers_as_an_unknown_one() {
    // Arrange: the demo Agent may not call the organisation-wide warehouse report.
    let app = app("callable").await;
    let agent = app.token_for("agent@demo.loanhost.local");
    assert!(!roles_of("mlo_pipeline_report").contains("Agent"));

    // Act
    let hidden = app
        .rpc(
            &agent,
            "tools/call",
            json!({"name": "mlo_pipeline_report", "arguments": {"bucket": "Month"}}),
        )
        .await;
    let unknown = app
        .rpc(
            &agent,
            "tools/call",
            json!({"name": "no_such_report", "arguments": {"bucket": "Month"}}),
        )
        .await;
    let shown = app
        .rpc(
            &agent,
            "tools/call",
            json!({"name": "report_loans", "arguments": {"groupBy": "Status"}}),
        )
        .await;

    // Assert: the same error as an unknown tool's, the name aside; a shown tool answers.
    assert_eq!(
        hidden["error"]["code"], unknown["error"]["code"],
        "{hidden}"
    );
    assert_eq!(
        hidden["error"]["message"],
        "Unknown tool: mlo_pipeline_report"
    );
    assert_eq!(unknown["error"]["message"], "Unknown tool: no_such_report");
    assert_eq!(
        hidden["error"].get("data"),
        unknown["error"].get("data"),
        "{hidden}"
    );
    assert_eq!(shown["result"]["isError"], false, "{shown}");
}

#[tokio::test]
async fn by_default_every_tool_is_listed_and_a_call_without_the_role_is_forbidden() {
    // Arrange
    let app = app("all").await;
    let agent = app.token_for("agent@demo.loanhost.local");

    // Act
    let list = app.rpc(&agent, "tools/list", json!({})).await;
    let call = app
        .rpc(
            &agent,
            "tools/call",
            json!({"name": "mlo_pipeline_report", "arguments": {"bucket": "Month"}}),
        )
        .await;

    // Assert
    let mut every = shipped();
    every.sort();
    assert_eq!(names(&list, "tools", "name"), every);
    assert_eq!(call["result"]["isError"], true, "{call}");
    assert!(call["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("forbidden:"));
}
