//! The audit log through a real server: one JSON line per `tools/call`, refused calls
//! included, with the exact fields, flushed before the answer, and never a token, an email or a
//! free-text argument value.

use serde_json::{json, Value};

use crate::helpers::{seed_app, spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp};

async fn audited_app(path: &std::path::Path) -> TestApp {
    audited_app_keyed(path, None).await
}

/// A server serving report_loans and mlo_pipeline_report, auditing to `path`, its lines
/// sealed under the key in `key` (none: the server's default beside its cache folder).
pub(crate) async fn audited_app_keyed(
    path: &std::path::Path,
    key: Option<&std::path::Path>,
) -> TestApp {
    let mut options = AppOptions::default();
    for t in ["report_loans", "mlo_pipeline_report"] {
        options = options.plugin(t, tool_wasm(t), tool_manifest(t));
    }
    options
        .env
        .push(("LOANHOST_AUDIT_LOG", path.display().to_string()));
    if let Some(key) = key {
        options
            .env
            .push(("LOANHOST_AUDIT_KEY_FILE", key.display().to_string()));
    }
    spawn_app_with(options).await
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn every_call_is_audited_with_the_exact_fields_and_no_personal_data() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let app = audited_app(&path).await;
    seed_app(&app, 3, 200).await;
    let admin = app.token_for("admin@demo.loanhost.local");
    let secret_search = "ima.obrien@example.com";

    // Act: a call, an error result, a forbidden call, an unknown tool, a call without a name.
    let ok = app
        .call_ok(
            &admin,
            "report_loans",
            json!({"groupBy": "Status", "filter": {"statuses": ["Loan Open", "Loan Funded"], "searchText": secret_search, "loanAmountMin": 1}}),
        )
        .await;
    let after_ok = lines(&path).len();
    app.call_err("agent-token", "report_loans", json!({"groupBy": "Colour"}))
        .await;
    app.call_err("agent-token", "mlo_pipeline_report", json!({}))
        .await;
    app.rpc(
        &admin,
        "tools/call",
        json!({"name": "nope", "arguments": {}}),
    )
    .await;
    app.rpc(&admin, "tools/call", json!({"arguments": {}}))
        .await;
    app.rpc(&admin, "tools/list", json!({})).await;

    // Assert
    let log = lines(&path);
    assert_eq!(after_ok, 1, "the line is written before the answer is sent");
    assert_eq!(log.len(), 5, "one line per tools/call, none for tools/list");
    let first = &log[0];
    let mut keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "arguments",
            "artifactDigest",
            "callId",
            "dbTimeMs",
            "durationMs",
            "outcome",
            "pluginDigest",
            "pluginSource",
            "prev",
            "queries",
            "requestId",
            "resultBytes",
            "roles",
            "rowsRead",
            "seal",
            "seq",
            "signerKeyId",
            "time",
            "tool",
            "userId"
        ]
    );
    let admin_id = app
        .db
        .agent_by_email("admin@demo.loanhost.local")
        .await
        .unwrap()
        .unwrap()
        .id;
    assert_eq!(first["userId"], admin_id);
    assert_eq!(first["roles"], json!(["Admin", "User"]));
    assert_eq!(first["tool"], "report_loans");
    assert_eq!(first["outcome"], "ok");
    assert_eq!(first["requestId"], 1);
    assert_eq!(first["pluginDigest"].as_str().unwrap().len(), 64);
    assert_eq!(first["pluginSource"], "folder");
    assert_eq!(
        first["artifactDigest"].as_str().unwrap(),
        format!("sha256:{}", first["pluginDigest"].as_str().unwrap()),
        "the folder's digest is the component's"
    );
    assert_eq!(first["signerKeyId"], Value::Null, "unsigned in this test");
    assert!(first["queries"].as_u64().unwrap() >= 1);
    assert!(
        first["rowsRead"].is_u64(),
        "no loan matches the search: {first}"
    );
    assert!(first["dbTimeMs"].as_f64().unwrap() > 0.0);
    assert_eq!(
        first["resultBytes"].as_u64().unwrap() as usize,
        serde_json::to_string(&ok).unwrap().len()
    );
    assert_eq!(
        first["arguments"],
        json!({
            "names": ["filter", "filter.loanAmountMin", "filter.searchText", "filter.statuses", "groupBy"],
            "values": {"filter.statuses": ["Loan Open", "Loan Funded"], "groupBy": "Status"}
        })
    );
    let outcomes: Vec<&str> = log.iter().map(|l| l["outcome"].as_str().unwrap()).collect();
    assert_eq!(
        outcomes,
        [
            "ok",
            "invalid_params",
            "forbidden",
            "unknown_tool",
            "invalid_request"
        ]
    );
    assert_eq!(
        log[1]["arguments"]["values"],
        json!({}),
        "an unknown enum value is not kept"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    for forbidden in [secret_search, "obrien", "@", "Bearer", "eyJ", "Colour"] {
        assert!(
            !text.contains(forbidden),
            "the audit log holds {forbidden:?}"
        );
    }
}

#[tokio::test]
async fn deep_arguments_give_bounded_lines() {
    // Arrange: ~1 MiB of arguments, 120 levels of 8 KiB keys (unbounded, the names with their
    // full prefixes would make a line of tens of MB), and 30 levels (within the depth cap), to
    // a tool that does not exist, with a name of 10,000 bytes.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let app = audited_app(&path).await;
    let nested = |depth: usize| {
        (0..depth).fold(
            json!(1),
            |v, d| json!({ format!("{d}{}", "k".repeat(8 * 1024)): v }),
        )
    };
    let long_name = "n".repeat(10_000);

    // Act
    let too_deep = app
        .rpc(
            "agent-token",
            "tools/call",
            json!({"name": long_name, "arguments": nested(120)}),
        )
        .await;
    let deep = app
        .rpc(
            "agent-token",
            "tools/call",
            json!({"name": long_name, "arguments": nested(30)}),
        )
        .await;

    // Assert
    assert_eq!(
        too_deep["error"]["message"],
        "`arguments` nest deeper than 32 levels"
    );
    assert_eq!(deep["error"]["code"], -32602, "{deep}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.len() < 4096, "audit lines of {} bytes", text.len());
    let log = lines(&path);
    assert_eq!(log[0]["outcome"], "invalid_request");
    assert_eq!(log[1]["outcome"], "unknown_tool");
    assert_eq!(log[1]["arguments"]["names"].as_array().unwrap().len(), 4);
    assert_eq!(log[1]["arguments"]["namesOmitted"], 26);
    for line in &log {
        assert!(
            line["tool"].as_str().unwrap().len() <= 67,
            "{}",
            line["tool"]
        );
    }
}

#[tokio::test]
async fn unknown_and_malformed_calls_are_charged_to_the_caller() {
    // Arrange: a budget of 6 calls a minute (a burst of one).
    let mut options = AppOptions::default().plugin(
        "report_loans",
        tool_wasm("report_loans"),
        tool_manifest("report_loans"),
    );
    options
        .env
        .push(("LOANHOST_CALLER_CALLS_PER_MINUTE", "6".into()));
    let app = spawn_app_with(options).await;
    let status = |token: &'static str, params: Value| {
        let app = &app;
        async move {
            app.post_mcp(
                Some(token),
                &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
            )
            .await
            .status()
            .as_u16()
        }
    };

    // Act
    let unknown = status("agent-token", json!({"name": "nope", "arguments": {}})).await;
    let after_unknown = status("agent-token", json!({"name": "nope", "arguments": {}})).await;
    let malformed = status("admin-token", json!({"arguments": {}})).await;
    let after_malformed = status("admin-token", json!({"arguments": {}})).await;

    // Assert
    assert_eq!(
        (unknown, after_unknown, malformed, after_malformed),
        (200, 429, 200, 429)
    );
}

#[tokio::test]
async fn a_failed_audit_write_is_counted_and_the_call_still_answered() {
    // Arrange: /dev/full takes the open and fails every write.
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    let (mut options, port) = AppOptions::with_tool("report_loans").with_metrics();
    options.env.push(("LOANHOST_AUDIT_LOG", "/dev/full".into()));
    let app = spawn_app_with(options).await;

    // Act
    let answer = app
        .call_tool("agent-token", "report_loans", json!({"groupBy": "Status"}))
        .await;
    let metrics = crate::metrics::scrape(&app, port).await;

    // Assert
    assert_eq!(answer["isError"], false, "{answer}");
    assert_eq!(
        metrics.get("loanhost_audit_failures_total{kind=\"write\"}"),
        Some(&1.0),
        "{metrics:?}"
    );
}

#[tokio::test]
async fn rest_paths_are_charged_and_audited_naming_their_route_not_their_values() {
    // Arrange: a server with get_loan_application, auditing; an admin who reads an
    // application over REST and their own licences, and is then out of calls (two a ten
    // seconds' burst: 12 a minute).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let tool = "get_loan_application";
    let mut options = AppOptions::default().plugin(tool, tool_wasm(tool), tool_manifest(tool));
    options
        .env
        .push(("LOANHOST_AUDIT_LOG", path.display().to_string()));
    options
        .env
        .push(("LOANHOST_CALLER_CALLS_PER_MINUTE", "12".to_string()));
    let app = spawn_app_with(options).await;
    let data = seed_app(&app, 5, 100).await;
    let id = data.applications[0]["id"].as_str().unwrap().to_string();
    let admin = app.token_for("admin@demo.loanhost.local");
    let get = |path: String| {
        let (client, admin) = (&app.client, &admin);
        async move { client.get(path).bearer_auth(admin).send().await.unwrap() }
    };

    // Act
    let application = get(format!("{}/api/loan-applications/{id}", app.base)).await;
    let application_status = application.status();
    let application_bytes = application.bytes().await.unwrap().len() as u64;
    let licenses = get(format!("{}/api/users/me/licenses", app.base)).await;
    let licenses_status = licenses.status();
    let licenses_bytes = licenses.bytes().await.unwrap().len() as u64;
    let refused = get(format!("{}/api/users/me/licenses", app.base)).await;

    // Assert: two answers, then the caller's budget is spent across both paths; every
    // request has its line, with the route's template and no id from the path.
    assert_eq!(application_status, 200);
    assert_eq!(licenses_status, 200);
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    let log = lines(&path);
    let summary: Vec<(Value, Value, Value)> = log
        .iter()
        .map(|l| (l["route"].clone(), l["tool"].clone(), l["outcome"].clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                json!("GET /api/loan-applications/{id}"),
                json!(tool),
                json!("ok")
            ),
            (
                json!("GET /api/users/{userId}/licenses"),
                Value::Null,
                json!("ok")
            ),
            (
                json!("GET /api/users/{userId}/licenses"),
                Value::Null,
                json!("rate_limited")
            ),
        ]
    );
    assert_eq!(log[0]["resultBytes"], application_bytes);
    assert_eq!(log[1]["resultBytes"], licenses_bytes);
    assert_eq!(log[0]["arguments"]["names"], json!(["loanApplicationId"]));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains(&id),
        "the application's id is not in the log"
    );
}
