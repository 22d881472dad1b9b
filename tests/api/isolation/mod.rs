//! Isolation under attack, one test per defence: trust (verified emails, ASCII-only folding,
//! deactivated agents, repeated `/authorize` parameters, the dev IdP's reach), HTTP limits
//! (token before body, batch cap, slow headers, the concurrency cap), per-caller budgets and
//! per-call plugin budgets.

mod connections;
mod sign_in;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{
    fixture_wasm, manifest, seed_app, spawn_app, spawn_app_with, tool_manifest, tool_wasm,
    AppOptions, TestApp, DEFAULT_ROLES,
};

#[tokio::test]
async fn a_batch_longer_than_the_cap_is_refused() {
    // Arrange
    let app = spawn_app().await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_loan_reporting_metadata", "arguments": {}}});
    let batch = |n: usize| Value::Array(vec![call.clone(); n]);

    // Act
    let at_cap = app.post_mcp(Some("agent-token"), &batch(16)).await;
    let over = app.post_mcp(Some("agent-token"), &batch(17)).await;

    // Assert
    assert_eq!(at_cap.status(), 200);
    assert_eq!(
        at_cap
            .json::<Value>()
            .await
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        16
    );
    assert_eq!(over.status(), 400);
    let body: Value = over.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "a batch may hold at most 16 messages; this one has 17"
    );
}

async fn spin_app(env: Vec<(&'static str, String)>, unset: Vec<&'static str>) -> TestApp {
    let mut options = AppOptions::default()
        .plugin(
            "misbehave",
            fixture_wasm("misbehave"),
            manifest("misbehave", DEFAULT_ROLES, &["loans"], 16, 1500, 65536),
        )
        .plugin(
            "get_loan_reporting_metadata",
            tool_wasm("get_loan_reporting_metadata"),
            tool_manifest("get_loan_reporting_metadata"),
        );
    options.env = env;
    options.unset = unset;
    spawn_app_with(options).await
}

#[tokio::test]
async fn a_callers_concurrent_calls_are_capped_and_others_are_not_affected() {
    // Arrange: one call in flight is this caller's budget.
    let app = std::sync::Arc::new(
        spin_app(vec![("LOANHOST_CALLER_MAX_CONCURRENT", "1".into())], vec![]).await,
    );
    let spinning = {
        let app = app.clone();
        tokio::spawn(async move {
            app.call_tool("agent-token", "misbehave", json!({"action": "loop"}))
                .await
        })
    };
    app.eventually("the spinning call is in flight", || async {
        app.plugins.free_slots() < loanhost::plugins::MAX_INSTANCES as usize
    })
    .await;

    // Act
    let second = app
        .post_mcp(
            Some("agent-token"),
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_loan_reporting_metadata", "arguments": {}}}),
        )
        .await;
    let other_caller = app
        .call_ok("admin-token", "get_loan_reporting_metadata", json!({}))
        .await;

    // Assert
    assert_eq!(second.status(), 429);
    assert_eq!(second.headers()["retry-after"], "1");
    let body: Value = second.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32050);
    assert_eq!(
        body["error"]["message"],
        "too many tool calls in flight for this caller (at most 1 at once); retry after 1 s"
    );
    assert!(other_caller["statuses"].is_array());
    let spun = spinning.await.unwrap();
    assert_eq!(
        spun["content"][0]["text"],
        "timeout: `misbehave` did not finish within 1500 ms"
    );
}

#[tokio::test]
async fn a_callers_calls_per_minute_run_out() {
    // Arrange
    let app = spin_app(
        vec![("LOANHOST_CALLER_CALLS_PER_MINUTE", "18".into())],
        vec![],
    )
    .await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_loan_reporting_metadata", "arguments": {}}});

    // Act
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(
            app.post_mcp(Some("agent-token"), &call)
                .await
                .status()
                .as_u16(),
        );
    }
    let other = app.post_mcp(Some("admin-token"), &call).await.status();

    // Assert
    assert_eq!(statuses, vec![200, 200, 200, 429]);
    assert_eq!(other, 200);
}

#[tokio::test]
async fn the_request_concurrency_cap_answers_503_at_once() {
    // Arrange: two requests at a time; two spinning calls hold both.
    let app = std::sync::Arc::new(
        spin_app(
            vec![("LOANHOST_MAX_CONCURRENT_REQUESTS", "2".into())],
            vec![],
        )
        .await,
    );
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                app.call_tool("agent-token", "misbehave", json!({"action": "loop"}))
                    .await
            })
        })
        .collect();
    app.eventually("both spinning calls are in flight", || async {
        app.plugins.free_slots() <= loanhost::plugins::MAX_INSTANCES as usize - 2
    })
    .await;

    // Act
    let started = Instant::now();
    let third = app
        .post_mcp(
            Some("admin-token"),
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        )
        .await;
    let waited = started.elapsed();
    let ready = app
        .client
        .get(format!("{}/ready", app.base))
        .send()
        .await
        .unwrap()
        .status();

    // Assert
    assert_eq!(third.status(), 503);
    assert_eq!(third.headers()["retry-after"], "1");
    assert!(
        waited < Duration::from_secs(1),
        "refused at once, not queued: {waited:?}"
    );
    assert_eq!(ready, 200, "probes are always answered");
    for s in spinners {
        s.await.unwrap();
    }
}

#[tokio::test]
async fn per_call_data_budgets_trap_with_the_limit_named() {
    // Arrange
    let app = spin_app(vec![], vec![]).await;
    seed_app(&app, 7, 300).await;

    // Act: the flood loops queries until the host stops it.
    let flood = app
        .call_err("admin-token", "misbehave", json!({"action": "flood"}))
        .await;
    let label = app
        .call_err(
            "admin-token",
            "misbehave",
            json!({"action": "hugeLabel", "bytes": 1048576}),
        )
        .await;
    let after = app
        .call_ok("admin-token", "misbehave", json!({"action": "query"}))
        .await;

    // Assert
    assert_eq!(
        flood,
        "internal: `misbehave` ran more than its 16 data queries per call (limits.max_queries)"
    );
    assert_eq!(
        label,
        "invalid_params: mapping of `status`: a label of 1048576 bytes is longer than the 64 allowed"
    );
    assert_eq!(after["rows"], 1);
}

#[tokio::test]
async fn filter_input_caps_are_invalid_params_naming_the_limit() {
    // Arrange
    let app = spawn_app_with(AppOptions::default().plugin(
        "report_loans",
        tool_wasm("report_loans"),
        tool_manifest("report_loans"),
    ))
    .await;
    let bomb = "@ ".repeat(30_000);
    let long_text = "@".repeat(5_000);

    // Act
    let words = app
        .call_err(
            "agent-token",
            "report_loans",
            json!({"filter": {"searchText": "a b c d e f g h i"}}),
        )
        .await;
    let long = app
        .call_err(
            "agent-token",
            "report_loans",
            json!({"filter": {"searchText": long_text}}),
        )
        .await;
    let huge = app
        .call_err(
            "agent-token",
            "report_loans",
            json!({"filter": {"searchText": bomb}}),
        )
        .await;
    let many = app
        .call_err(
            "agent-token",
            "report_loans",
            json!({"filter": {"propertyState": "X".repeat(300)}}),
        )
        .await;

    // Assert
    assert_eq!(
        words,
        "invalid_params: filter: `searchText` has 9 words; at most 8 are allowed"
    );
    assert_eq!(
        long,
        "invalid_params: filter: `searchText` has 5000 characters; at most 200 are allowed"
    );
    assert_eq!(
        huge,
        "invalid_params: filter: 60017 bytes is larger than the 16384 allowed"
    );
    assert_eq!(
        many,
        "invalid_params: filter: `propertyState`: a value of 300 bytes is longer than the 256 allowed"
    );
}

#[tokio::test]
async fn rows_bytes_and_log_lines_per_call_are_budgeted() {
    // Arrange: one server allows 100 rows per call, the other 4,000 bytes of results.
    let budgeted = |limit: &str| {
        spawn_app_with(
            AppOptions::default().plugin(
                "misbehave",
                fixture_wasm("misbehave"),
                manifest("misbehave", DEFAULT_ROLES, &["loans"], 16, 5000, 65536)
                    .replace("[limits]\n", &format!("[limits]\n{limit}\n")),
            ),
        )
    };
    let by_rows = budgeted("max_rows = 100").await;
    let by_bytes = budgeted("max_data_bytes = 4000").await;
    seed_app(&by_rows, 5, 300).await;
    seed_app(&by_bytes, 5, 300).await;

    // Act: one row per loan (300 rows of about 60 bytes), then 2,000 and 1,000 log lines.
    let rows = by_rows
        .call_err("admin-token", "misbehave", json!({"action": "flood"}))
        .await;
    let bytes = by_bytes
        .call_err("admin-token", "misbehave", json!({"action": "flood"}))
        .await;
    let logs = by_rows
        .call_err(
            "admin-token",
            "misbehave",
            json!({"action": "logFlood", "bytes": 2000}),
        )
        .await;
    let within = by_rows
        .call_ok(
            "admin-token",
            "misbehave",
            json!({"action": "logFlood", "bytes": 1000}),
        )
        .await;

    // Assert
    assert_eq!(
        rows,
        "internal: `misbehave` exceeded its per-call data budget: the query returned more than the 100 rows left in this call's budget"
    );
    assert_eq!(
        bytes,
        "internal: `misbehave` exceeded its per-call data budget: the query returned more than the 4000 bytes left in this call's budget"
    );
    assert_eq!(
        logs,
        "internal: `misbehave` wrote more than 1000 log lines (only the first 100 are kept)"
    );
    assert_eq!(within["logged"], 1000);
}
