//! The audit log through a real server: one JSON line per `tools/call`, refused calls
//! included, with the exact fields, flushed before the answer, and never a token, an email or a
//! free-text argument value.

use serde_json::{json, Value};

use crate::helpers::{seed_app, spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp};

async fn audited_app(path: &std::path::Path) -> TestApp {
    let mut options = AppOptions::default();
    for t in ["report_loans", "mlo_pipeline_report"] {
        options = options.plugin(t, tool_wasm(t), tool_manifest(t));
    }
    options
        .env
        .push(("LOANHOST_AUDIT_LOG", path.display().to_string()));
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
            "callId",
            "dbTimeMs",
            "durationMs",
            "outcome",
            "pluginDigest",
            "queries",
            "requestId",
            "resultBytes",
            "roles",
            "rowsRead",
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
