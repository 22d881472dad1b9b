//! Operators' view: `/metrics` on its own address moves with calls, failures and reloads;
//! `/ready` reports a plugin directory that cannot be read and the plugins it refused.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, tool_manifest, AppOptions, TestApp};

/// The metrics listener's samples (`name{labels}` to value).
pub(crate) async fn scrape(app: &TestApp, port: u16) -> BTreeMap<String, f64> {
    let text = app
        .client
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
        .collect()
}

#[tokio::test]
async fn metrics_on_their_own_address_move_with_calls_and_failures() {
    // Arrange
    let (options, port) = AppOptions::with_tool("get_loan_reporting_metadata").with_metrics();
    let app = spawn_app_with(options).await;
    let before = scrape(&app, port).await;

    // Act: three calls, one with bad arguments, two bad tokens.
    for _ in 0..3 {
        app.call_ok("agent-token", "get_loan_reporting_metadata", json!({}))
            .await;
    }
    app.call_err(
        "agent-token",
        "get_loan_reporting_metadata",
        json!({"x": 1}),
    )
    .await;
    let forged = format!("{}x", app.bearer("agent-token"));
    for token in [forged.as_str(), "not.a.jwt"] {
        let r = app
            .post_mcp(
                Some(token),
                &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            )
            .await;
        assert_eq!(r.status(), 401);
    }
    let after = scrape(&app, port).await;
    let on_main = app
        .client
        .get(format!("{}/metrics", app.base))
        .send()
        .await
        .unwrap()
        .status();

    // Assert
    let delta =
        |k: &str| after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0);
    assert_eq!(
        delta("loanhost_tool_calls_total{tool=\"get_loan_reporting_metadata\",outcome=\"ok\"}"),
        3.0,
        "{after:?}"
    );
    assert_eq!(
        delta("loanhost_tool_calls_total{tool=\"get_loan_reporting_metadata\",outcome=\"invalid_params\"}"),
        1.0
    );
    for stage in ["total", "instantiate", "guest", "database"] {
        assert_eq!(
            delta(&format!(
                "loanhost_tool_call_seconds_count{{kind=\"{stage}\"}}"
            )),
            4.0,
            "{stage}"
        );
    }
    let failures: f64 = after
        .iter()
        .filter(|(k, _)| k.starts_with("loanhost_token_failures_total"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(failures, 2.0, "{after:?}");
    assert_eq!(after["loanhost_plugin_events_total{kind=\"loaded\"}"], 1.0);
    assert_eq!(after["loanhost_plugins_loaded"], 1.0);
    assert_eq!(after["loanhost_instance_slots"], 64.0);
    assert_eq!(after["loanhost_instance_slots_in_use"], 0.0);
    assert!(after["loanhost_db_connections{kind=\"identity_open\"}"] >= 1.0);
    assert_eq!(
        after["loanhost_db_connections{kind=\"statements_open\"}"],
        after["loanhost_db_connections{kind=\"statements_idle\"}"],
        "no report statement in flight: every statement connection is idle"
    );
    assert_eq!(on_main, 404, "metrics are not on the public address");
    // OpenTelemetry's mcp.server.operation.duration, in its own name: a tool's error result is
    // error_type tool_error, apart from the calls that succeeded.
    let operations = |error_type: &str| -> f64 {
        let prefix = format!(
            "mcp_server_operation_duration_seconds_count{{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"get_loan_reporting_metadata\",error_type=\"{error_type}\","
        );
        after
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix) && k.ends_with("network_transport=\"tcp\"}"))
            .map(|(_, v)| v)
            .sum()
    };
    assert_eq!(
        (operations(""), operations("tool_error")),
        (3.0, 1.0),
        "{after:?}"
    );
}

#[tokio::test]
async fn readiness_reports_an_unreadable_plugin_directory_and_refused_plugins() {
    // Arrange
    let (options, port) = AppOptions::with_tool("get_loan_reporting_metadata").with_metrics();
    let app = spawn_app_with(options).await;
    // The details on the metrics address; the public probe says only its status.
    let ready = |app: &TestApp| {
        let client = app.client.clone();
        let (public, private) = (
            format!("{}/ready", app.base),
            format!("http://127.0.0.1:{port}/ready"),
        );
        async move {
            let p = client.get(public).send().await.unwrap();
            let (status, bare) = (p.status().as_u16(), p.json::<Value>().await.unwrap());
            let d = client.get(private).send().await.unwrap();
            assert_eq!(d.status().as_u16(), status, "both probes agree");
            let details = d.json::<Value>().await.unwrap();
            assert_eq!(
                bare,
                json!({"status": details["status"]}),
                "the public probe tells nothing else"
            );
            (status, details)
        }
    };

    // Act
    let fine = ready(&app).await;
    app.deploy_file("broken.wasm", b"\0asm\x01\0\0\0");
    app.deploy_file(
        "broken.toml",
        tool_manifest("get_loan_reporting_metadata")
            .replace("get_loan_reporting_metadata", "broken")
            .as_bytes(),
    );
    app.eventually("the reloader refuses broken", || async {
        app.plugins.registry().refusal("broken").is_some()
    })
    .await;
    let refused = ready(&app).await;
    let moved = app.plugin_dir.with_extension("moved");
    std::fs::rename(&app.plugin_dir, &moved).unwrap();
    let gone = ready(&app).await;
    std::fs::rename(&moved, &app.plugin_dir).unwrap();

    // Assert
    assert_eq!(
        (fine.0, fine.1["pluginDirectory"].clone()),
        (200, json!("ok"))
    );
    assert_eq!(
        refused.0, 200,
        "a refused plugin does not make the server unready"
    );
    assert!(refused.1["refused"]["broken"].as_str().unwrap().ends_with("broken.wasm: a core WebAssembly module, not a component (build with wasm-component-ld; see docs/plugins.md)"), "{}", refused.1);
    assert_eq!(gone.0, 503);
    assert_eq!(gone.1["status"], "not ready");
    assert!(
        gone.1["pluginDirectory"]
            .as_str()
            .unwrap()
            .starts_with("unreadable: "),
        "{}",
        gone.1
    );
}
