//! Hot reload with real components: add, replace, remove while requests run; a broken
//! replacement keeps the previous version serving.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

use crate::helpers::{fixture_wasm, manifest, spawn_app, DEFAULT_ROLES};

fn revision_manifest() -> String {
    manifest("revision", DEFAULT_ROLES, &[], 16, 2000, 65536)
}

async fn revision_of(app: &crate::helpers::TestApp) -> Option<String> {
    let reply = app
        .rpc(
            "agent-token",
            "tools/call",
            json!({"name": "revision", "arguments": {}}),
        )
        .await;
    reply["result"]["structuredContent"]["revision"]
        .as_str()
        .map(str::to_string)
}

#[tokio::test]
async fn add_replace_and_remove_while_requests_run() {
    // Arrange: a steady stream of calls to the metadata tool.
    let app = Arc::new(spawn_app().await);
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut load = Vec::new();
    for _ in 0..4 {
        let (app, stop, ok, failed) = (app.clone(), stop.clone(), ok.clone(), failed.clone());
        load.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let r = app
                    .call_tool("agent-token", "get_loan_reporting_metadata", json!({}))
                    .await;
                if r["isError"] == false {
                    ok.fetch_add(1, Ordering::Relaxed);
                } else {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }

    // Act + Assert: add.
    app.deploy_file("revision.toml", revision_manifest().as_bytes());
    app.deploy_file("revision.wasm", &fixture_wasm("revision-a"));
    app.eventually("revision a is served", || async {
        revision_of(&app).await.as_deref() == Some("a")
    })
    .await;

    // Replace, with calls to the replaced tool running too.
    let during: Vec<_> = (0..4)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                for _ in 0..30 {
                    seen.push(revision_of(&app).await);
                }
                seen
            })
        })
        .collect();
    app.deploy_file("revision.wasm", &fixture_wasm("revision-b"));
    app.eventually("revision b is served", || async {
        revision_of(&app).await.as_deref() == Some("b")
    })
    .await;
    for task in during {
        for answer in task.await.unwrap() {
            assert!(
                matches!(answer.as_deref(), Some("a") | Some("b")),
                "a call failed during replacement: {answer:?}"
            );
        }
    }

    // Remove.
    std::fs::remove_file(app.plugin_dir.join("revision.wasm")).unwrap();
    app.eventually("revision is gone", || async {
        !app.tool_names().await.contains(&"revision".to_string())
    })
    .await;
    let reply = app
        .rpc(
            "agent-token",
            "tools/call",
            json!({"name": "revision", "arguments": {}}),
        )
        .await;
    assert_eq!(reply["error"]["code"], -32602);

    stop.store(true, Ordering::Relaxed);
    for t in load {
        t.await.unwrap();
    }
    assert_eq!(
        failed.load(Ordering::Relaxed),
        0,
        "requests failed during reloads"
    );
    assert!(
        ok.load(Ordering::Relaxed) > 10,
        "the load generator barely ran"
    );
}

#[tokio::test]
async fn a_broken_replacement_keeps_the_previous_version_serving() {
    // Arrange
    let app = spawn_app().await;
    app.deploy_file("revision.toml", revision_manifest().as_bytes());
    app.deploy_file("revision.wasm", &fixture_wasm("revision-a"));
    app.eventually("revision a is served", || async {
        revision_of(&app).await.as_deref() == Some("a")
    })
    .await;

    // Act: garbage bytes, then a manifest with a typo.
    app.deploy_file("revision.wasm", b"\0asm this is not a component");
    let report = loanhost::plugins::Reloader::new(app.plugins.clone(), app.plugin_dir.clone())
        .scan()
        .await;

    // Assert
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(report.failed[0].1.ends_with("revision.wasm: a core WebAssembly module, not a component (build with wasm-component-ld; see README)") || report.failed[0].1.contains("revision.wasm: "), "{report:?}");
    assert_eq!(
        revision_of(&app).await.as_deref(),
        Some("a"),
        "previous version must keep serving"
    );

    // Act: a valid replacement is picked up afterwards.
    app.deploy_file("revision.wasm", &fixture_wasm("revision-b"));
    app.eventually("revision b is served", || async {
        revision_of(&app).await.as_deref() == Some("b")
    })
    .await;
}

#[tokio::test]
async fn a_malformed_manifest_is_refused_with_the_field_named() {
    // Arrange
    let app = spawn_app().await;
    let bad = revision_manifest().replace("memory_mib = 16", "memory_mib = \"sixteen\"");

    // Act
    app.deploy_file("revision.wasm", &fixture_wasm("revision-a"));
    app.deploy_file("revision.toml", bad.as_bytes());
    let report = loanhost::plugins::Reloader::new(app.plugins.clone(), app.plugin_dir.clone())
        .scan()
        .await;

    // Assert
    let (name, reason) = &report.failed[0];
    assert_eq!(name, "revision");
    assert!(
        reason.ends_with(
            "revision.toml: limits.memory_mib: invalid type: string \"sixteen\", expected u32"
        ),
        "{reason}"
    );
    assert!(!app.tool_names().await.contains(&"revision".to_string()));
}
