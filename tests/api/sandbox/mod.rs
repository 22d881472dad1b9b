//! The sandbox boundary with real misbehaving components: deadlines, memory, output size,
//! traps, typed errors, and what the host imports hand a plugin.

mod grants;
mod hostile;
mod listing;
mod statements;

use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{
    fixture_wasm, manifest, spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp,
    DEFAULT_ROLES, TODAY,
};

async fn misbehaving_app(
    memory_mib: u32,
    timeout_ms: u64,
    max_output: u64,
    datasets: &[&str],
) -> TestApp {
    spawn_app_with(
        AppOptions::default()
            .plugin(
                "misbehave",
                fixture_wasm("misbehave"),
                manifest(
                    "misbehave",
                    DEFAULT_ROLES,
                    datasets,
                    memory_mib,
                    timeout_ms,
                    max_output,
                ),
            )
            .plugin(
                "get_loan_reporting_metadata",
                tool_wasm("get_loan_reporting_metadata"),
                tool_manifest("get_loan_reporting_metadata"),
            ),
    )
    .await
}

#[tokio::test]
async fn an_infinite_loop_times_out_while_other_calls_are_served() {
    // Arrange: a 2 s deadline, so the other calls have time to be served meanwhile.
    let app = misbehaving_app(16, 2000, 65536, &[]).await;
    let started = Instant::now();

    // Act: the loop runs while other calls go through.
    let looping = {
        let base = app.base.clone();
        let client = app.client.clone();
        let token = app.bearer("agent-token");
        tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "misbehave", "arguments": {"action": "loop"}}});
            let r: serde_json::Value = client
                .post(format!("{base}/mcp"))
                .bearer_auth(&token)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (r, started.elapsed())
        })
    };
    // The loop holds an instance slot from when it starts until its deadline.
    app.eventually("the loop is running", || async {
        app.plugins.free_slots() < loanhost::plugins::MAX_INSTANCES as usize
    })
    .await;
    let mut served_during_loop = 0;
    for _ in 0..5 {
        let r = app
            .call_ok("agent-token", "get_loan_reporting_metadata", json!({}))
            .await;
        assert!(r["statuses"].is_array());
        served_during_loop += usize::from(!looping.is_finished());
    }
    let (reply, elapsed) = looping.await.unwrap();

    // Assert: every other call was answered while the loop still ran, and the loop ended at
    // its deadline.
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(reply["result"]["isError"], true);
    assert_eq!(text, "timeout: `misbehave` did not finish within 2000 ms");
    assert_eq!(
        served_during_loop, 5,
        "calls waited for the looping guest instead of being served beside it"
    );
    assert!(
        elapsed >= Duration::from_millis(2000),
        "ended early: {elapsed:?}"
    );
    assert!(
        elapsed < Duration::from_millis(2000) + Duration::from_secs(3),
        "deadline not enforced: {elapsed:?}"
    );
}

#[tokio::test]
async fn growing_memory_past_the_limit_is_an_error() {
    // Arrange
    let app = misbehaving_app(16, 5000, 65536, &[]).await;

    // Act
    let text = app
        .call_err("agent-token", "misbehave", json!({"action": "grow"}))
        .await;
    let after = app
        .call_ok("agent-token", "misbehave", json!({"action": "echo"}))
        .await;

    // Assert
    assert_eq!(
        text,
        "internal: the plugin exceeded its memory limit of 16 MiB"
    );
    assert_eq!(
        after["today"], TODAY,
        "the plugin still serves after the failure"
    );
}

#[tokio::test]
async fn an_oversized_output_is_refused() {
    // Arrange
    let app = misbehave_output_app().await;

    // Act
    let small = app
        .call_ok(
            "agent-token",
            "misbehave",
            json!({"action": "big", "bytes": 100}),
        )
        .await;
    let big = app
        .call_err(
            "agent-token",
            "misbehave",
            json!({"action": "big", "bytes": 5000}),
        )
        .await;

    // Assert
    assert_eq!(small["blob"].as_str().unwrap().len(), 100);
    assert_eq!(
        big,
        "internal: the result of 5011 bytes exceeds the plugin's output limit of 1000 bytes"
    );
}

async fn misbehave_output_app() -> TestApp {
    misbehaving_app(16, 5000, 1000, &[]).await
}

#[tokio::test]
async fn a_panic_is_an_internal_error_without_internals() {
    // Arrange
    let app = misbehaving_app(16, 5000, 65536, &[]).await;

    // Act
    let text = app
        .call_err("agent-token", "misbehave", json!({"action": "panic"}))
        .await;
    let after = app
        .call_ok("agent-token", "misbehave", json!({"action": "echo"}))
        .await;

    // Assert
    assert!(
        text.starts_with("internal: `misbehave` failed unexpectedly (call "),
        "{text}"
    );
    assert!(
        !text.contains("fixture panic") && !text.contains("wasm"),
        "leaks internals: {text}"
    );
    assert_eq!(after["today"], TODAY);
}

#[tokio::test]
async fn guest_errors_keep_their_codes() {
    // Arrange
    let app = misbehaving_app(16, 5000, 65536, &[]).await;
    let mut texts = Vec::new();

    // Act
    for kind in 0..4 {
        texts.push(
            app.call_err(
                "agent-token",
                "misbehave",
                json!({"action": "fail", "bytes": kind}),
            )
            .await,
        );
    }
    let bad_args = app
        .call_err("agent-token", "misbehave", json!({"action": "dance"}))
        .await;

    // Assert
    assert_eq!(
        texts,
        vec![
            "invalid_params: bad argument",
            "bad_request: contradictory arguments",
            "forbidden: not for you",
            "internal: it broke"
        ]
    );
    assert!(
        bad_args.starts_with("invalid_params: action: unknown variant `dance`, expected one of"),
        "{bad_args}"
    );
}

#[tokio::test]
async fn the_plugin_sees_the_caller_from_the_token_only() {
    // Arrange
    let app = misbehaving_app(16, 5000, 65536, &[]).await;

    // Act
    let agent = app
        .call_ok("agent-token", "misbehave", json!({"action": "echo"}))
        .await;
    let admin = app
        .call_ok("admin-token", "misbehave", json!({"action": "echo"}))
        .await;

    // Assert
    assert_eq!(
        agent,
        json!({"userId": "00000000-0000-0000-0000-0000000000b2", "roles": ["Agent", "User"], "canReadNames": false, "today": TODAY})
    );
    assert_eq!(admin["userId"], "00000000-0000-0000-0000-0000000000a1");
    assert_eq!(admin["canReadNames"], true);
}

#[tokio::test]
async fn datasets_outside_the_manifest_are_denied() {
    // Arrange
    let app = misbehaving_app(16, 5000, 65536, &[]).await;

    // Act
    let denied = app
        .call_err(
            "agent-token",
            "misbehave",
            json!({"action": "query", "dataset": "loans"}),
        )
        .await;
    let unknown = app
        .call_err(
            "agent-token",
            "misbehave",
            json!({"action": "query", "dataset": "users"}),
        )
        .await;

    // Assert
    assert_eq!(
        denied,
        "forbidden: dataset `loans` is not granted to plugin `misbehave`"
    );
    assert!(
        unknown.starts_with("invalid_params: unknown dataset `users`; known: loans, "),
        "{unknown}"
    );
}
