//! Hostile plugins written in Python and TypeScript meet the limits a Rust one meets, and find
//! no files, sockets, clock, environment or network modules.

use serde_json::json;

use crate::helpers::{hostile_app, TestApp, TODAY};

/// One call of the hostile plugin's `action`: the whole tool result.
pub(super) async fn probe(app: &TestApp, tool: &str, action: &str) -> serde_json::Value {
    app.call_tool("agent-token", tool, json!({"action": action}))
        .await
}

/// What the Rust fixture's misbehaviour gets (the tests above), the Python and TypeScript
/// plugins get too: a spin times out, memory growth stops at the manifest's limit, an output
/// bomb is refused, an exception is `internal` without internals; and the plugin still serves.
pub(super) async fn a_hostile_plugin_meets_the_same_limits(language: &str) {
    // Arrange
    let (app, tool) = hostile_app(language, 8000).await;
    let call = |action: &str, bytes: u64| {
        let (app, tool) = (&app, tool.clone());
        let args = json!({"action": action, "bytes": bytes});
        async move { app.call_err("agent-token", &tool, args).await }
    };

    // Act
    let spin = call("loop", 0).await;
    let grow = call("grow", 0).await;
    let big = call("big", 100_000).await;
    let panic = call("panic", 0).await;
    let after = app
        .call_ok("agent-token", &tool, json!({"action": "echo"}))
        .await;

    // Assert
    assert_eq!(
        spin,
        format!("timeout: `{tool}` did not finish within 8000 ms")
    );
    assert_eq!(
        grow,
        "internal: the plugin exceeded its memory limit of 64 MiB"
    );
    assert_eq!(
        big,
        "internal: the result of 100011 bytes exceeds the plugin's output limit of 65536 bytes"
    );
    assert!(
        panic.starts_with(&format!("internal: `{tool}` failed unexpectedly (call ")),
        "{panic}"
    );
    assert_eq!(
        after["today"], TODAY,
        "the plugin still serves after the failures"
    );
}

#[tokio::test]
async fn a_hostile_python_plugin_meets_the_same_limits_as_a_rust_one() {
    a_hostile_plugin_meets_the_same_limits("python").await;
}

#[tokio::test]
async fn a_hostile_typescript_plugin_meets_the_same_limits_as_a_rust_one() {
    a_hostile_plugin_meets_the_same_limits("typescript").await;
}

#[tokio::test]
async fn a_python_plugin_finds_no_files_sockets_clock_or_environment() {
    // Arrange
    let (app, tool) = hostile_app("python", 8000).await;
    let call = |action| probe(&app, &tool, action);

    // Act + Assert: files, the directory tree, sockets and the clock trap (WASI is stubbed):
    // the call fails as `internal`, and nothing is read or sent.
    for action in ["file", "listdir", "socket", "clock"] {
        let r = call(action).await;
        assert_eq!(r["isError"], true, "{action}: {r}");
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("failed unexpectedly"), "{action}: {text}");
    }
    // The environment is empty; random numbers are the same in every call.
    assert_eq!(call("env").await["structuredContent"], json!({"env": {}}));
    let (r1, r2) = (call("random").await, call("random").await);
    assert_eq!(r1["structuredContent"], r2["structuredContent"]);
}

#[tokio::test]
async fn a_typescript_plugin_finds_no_network_modules_clock_or_environment() {
    // Arrange
    let (app, tool) = hostile_app("typescript", 8000).await;
    let call = |action| probe(&app, &tool, action);

    // Act + Assert: no `fetch`, no `require` (the call fails as `internal`), no `process.env`.
    for action in ["fetch", "require"] {
        let r = call(action).await;
        assert_eq!(r["isError"], true, "{action}: {r}");
    }
    assert_eq!(call("env").await["structuredContent"], json!({"env": null}));
    // The clock is frozen and random numbers repeat: the same in every call.
    for action in ["clock", "random"] {
        let (r1, r2) = (call(action).await, call(action).await);
        assert_eq!(r1["structuredContent"], r2["structuredContent"], "{action}");
    }
}
