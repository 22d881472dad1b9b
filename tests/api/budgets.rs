//! One accounting for every method (`docs/threat-model.md`, "Per caller"): a request that runs
//! no plugin (a list, a view read) spends the caller's calls and result bytes as a tool call
//! does, and a batch's reply stops at its cap.

use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, tool_manifest, tool_view, tool_wasm, AppOptions, TestApp};

/// A server with `report_loans` (and its view) and these per-caller budgets.
async fn app(budgets: &[(&'static str, &str)]) -> TestApp {
    let mut options = AppOptions::with_tool("report_loans");
    for (k, v) in budgets {
        options.env.push((k, v.to_string()));
    }
    spawn_app_with(options).await
}

fn read_view() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "ui://loanhost/report_loans"}})
}

#[tokio::test]
async fn view_reads_spend_the_callers_result_bytes_like_tool_results() {
    // Arrange: 1 MiB of results a minute (a burst of 1 MiB, the least a burst holds); the view
    // is ~0.7 MiB, so two reads leave the budget spent for 18 s.
    let view = tool_view("report_loans").unwrap();
    assert!(view.len() > 512 * 1024 && view.len() < 1024 * 1024);
    let app = app(&[("LOANHOST_CALLER_RESULT_MIB_PER_MINUTE", "1")]).await;

    // Act: three reads; the first two are admitted (a read is admitted while any budget is
    // left).
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(app.post_mcp(Some("agent-token"), &read_view()).await);
    }
    let statuses: Vec<u16> = statuses.iter().map(|r| r.status().as_u16()).collect();
    let other = app
        .post_mcp(Some("admin-token"), &read_view())
        .await
        .status();

    // Assert
    assert_eq!(statuses, vec![200, 200, 429]);
    assert_eq!(other, 200, "another caller's budget is untouched");
}

#[tokio::test]
async fn lists_and_reads_spend_the_callers_calls_per_minute() {
    // Arrange: one call a minute (a burst of one).
    let app = app(&[("LOANHOST_CALLER_CALLS_PER_MINUTE", "1")]).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/list"});

    // Act
    let first = app.post_mcp(Some("agent-token"), &list).await.status();
    let second = app.post_mcp(Some("agent-token"), &read_view()).await;
    let status = second.status();
    let body: Value = second.json().await.unwrap();

    // Assert: the second request is refused as a tool call would be.
    assert_eq!(first, 200);
    assert_eq!(status, 429);
    assert_eq!(body["error"]["code"], -32050);
}

#[tokio::test]
async fn a_batch_reply_stops_at_its_cap_and_the_rest_is_not_answered_in_it() {
    // Arrange: budgets out of the way (the test server's), 16 reads of a ~0.7 MiB view.
    let app = spawn_app_with(AppOptions::default().plugin(
        "report_loans",
        tool_wasm("report_loans"),
        tool_manifest("report_loans"),
    ))
    .await;
    let batch: Vec<Value> = (0..16)
        .map(|i| {
            json!({"jsonrpc": "2.0", "id": i, "method": "resources/read", "params": {"uri": "ui://loanhost/report_loans"}})
        })
        .collect();

    // Act
    let resp = app
        .client
        .post(format!("{}/mcp", app.base))
        .bearer_auth(app.bearer("agent-token"))
        .header("mcp-protocol-version", "2025-03-26")
        .json(&batch)
        .send()
        .await
        .unwrap();
    let length: usize = resp.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let replies: Vec<Value> = resp.json().await.unwrap();

    // Assert: every request is answered, in order; those past 8 MiB with the cap.
    assert_eq!(replies.len(), 16);
    assert!(length <= 8 * 1024 * 1024 + 1024, "{length}");
    let read = replies.iter().filter(|r| r.get("result").is_some()).count();
    assert!((8..16).contains(&read), "{read} reads fit");
    for (i, r) in replies.iter().enumerate() {
        assert_eq!(r["id"], i, "{r}");
        if i >= read {
            assert_eq!(r["error"]["code"], -32050, "{r}");
            assert!(r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("reached its cap of 8388608 bytes"));
        }
    }
}
