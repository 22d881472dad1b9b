//! Hot reload with real components, watched by the server's own background reloader (no test
//! calls `scan()`): a tool replaced, broken, removed and added back under continuous load on
//! that very tool; a call in flight during a replacement finishes on the version it started
//! with; refused files keep the previous version serving, with the exact reason recorded.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{
    fixture_wasm, manifest, spawn_app, spawn_app_with, AppOptions, TestApp, DEFAULT_ROLES,
};

fn revision_manifest() -> String {
    manifest("revision", DEFAULT_ROLES, &["loans"], 16, 20_000, 65536)
}

/// What one call of `revision` answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    /// Served by revision "a" or "b".
    Revision(String),
    /// JSON-RPC `-32602`: no such tool.
    UnknownTool,
    /// Anything else (a failure).
    Other(String),
}

async fn call_revision(app: &TestApp, arguments: Value) -> Seen {
    let reply = app
        .rpc(
            "agent-token",
            "tools/call",
            json!({"name": "revision", "arguments": arguments}),
        )
        .await;
    if let Some(r) = reply["result"]["structuredContent"]["revision"].as_str() {
        if reply["result"]["isError"] == false {
            return Seen::Revision(r.to_string());
        }
    }
    if reply["error"]["code"] == -32602 {
        return Seen::UnknownTool;
    }
    Seen::Other(reply.to_string())
}

async fn revision_of(app: &TestApp) -> Seen {
    call_revision(app, json!({})).await
}

fn served(r: &str) -> Seen {
    Seen::Revision(r.to_string())
}

/// Calls `revision` from several tasks until stopped; each task's answers in order.
struct Load {
    stop: Arc<AtomicBool>,
    seen: Vec<Arc<Mutex<Vec<Seen>>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(app: &Arc<TestApp>, workers: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let mut seen = Vec::new();
        let mut tasks = Vec::new();
        for _ in 0..workers {
            let (app, stop, log) = (app.clone(), stop.clone(), Arc::new(Mutex::new(Vec::new())));
            seen.push(log.clone());
            tasks.push(tokio::spawn(async move {
                // Bounded: at most 20,000 calls per task.
                for _ in 0..20_000 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let s = revision_of(&app).await;
                    log.lock().unwrap().push(s);
                }
            }));
        }
        Load { stop, seen, tasks }
    }

    /// Waits until every task has seen `what` since the last call of this; bounded at 5
    /// minutes, for a reload that never lands (a slow machine only makes the wait longer).
    async fn until_all_see(&self, what: &Seen) {
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_secs(300) {
            if self
                .seen
                .iter()
                .all(|log| log.lock().unwrap().last() == Some(what))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the load never saw {what:?}");
    }

    /// How many answers each task has so far.
    fn lens(&self) -> Vec<usize> {
        self.seen.iter().map(|l| l.lock().unwrap().len()).collect()
    }

    async fn finish(self) -> Vec<Vec<Seen>> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.unwrap();
        }
        self.seen
            .into_iter()
            .map(|l| l.lock().unwrap().clone())
            .collect()
    }
}

#[tokio::test]
async fn replace_break_remove_and_add_back_under_load_on_the_replaced_tool() {
    // Arrange: revision a, with four tasks calling it without pause.
    let app = Arc::new(spawn_app().await);
    app.deploy_file("revision.toml", revision_manifest().as_bytes());
    app.deploy_file("revision.wasm", &fixture_wasm("revision-a"));
    app.eventually("revision a is served", || async {
        revision_of(&app).await == served("a")
    })
    .await;
    let load = Load::start(&app, 4);
    load.until_all_see(&served("a")).await;

    // Act 1: replace a by b.
    app.deploy_file("revision.wasm", &fixture_wasm("revision-b"));
    load.until_all_see(&served("b")).await;

    // Act 2: break it (garbage bytes); the background reloader refuses them.
    app.deploy_file("revision.wasm", b"\0asm this is not a component");
    app.eventually("the reloader refuses the broken file", || async {
        app.plugins.registry().refusal("revision").is_some()
    })
    .await;
    let refusal = app.plugins.registry().refusal("revision").unwrap();
    let broken_from = load.lens();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let broken_to = load.lens();

    // Act 3: remove it, then add a back.
    std::fs::remove_file(app.plugin_dir.join("revision.wasm")).unwrap();
    load.until_all_see(&Seen::UnknownTool).await;
    app.deploy_file("revision.wasm", &fixture_wasm("revision-a"));
    load.until_all_see(&served("a")).await;
    let logs = load.finish().await;

    // Assert: the exact reason, no refusal left once good files are back.
    assert!(
        refusal.ends_with(
            "revision.wasm: not a WebAssembly component: version bytes `20 74 68 69`, expected `0d 00 01 00`"
        ),
        "{refusal}"
    );
    assert_eq!(app.plugins.registry().refusal("revision"), None);
    // While the broken file sat there (after its refusal), b kept serving every call.
    let mut served_while_broken = 0;
    for (task, log) in logs.iter().enumerate() {
        for s in &log[broken_from[task]..broken_to[task]] {
            assert_eq!(s, &served("b"), "task {task}: while the file was broken");
            served_while_broken += 1;
        }
    }
    assert!(
        served_while_broken > 0,
        "the load kept running while the file was broken"
    );
    // Per task, the answers go a… b… (nothing else while broken) unknown… a…: both versions
    // served, never a failure, `-32602` only while the tool is absent.
    let phase = |s: &Seen, at: usize| match (s, at) {
        (Seen::Revision(r), 0) if r == "a" => Some(0),
        (Seen::Revision(r), 0 | 1) if r == "b" => Some(1),
        (Seen::UnknownTool, 1 | 2) => Some(2),
        (Seen::Revision(r), 2 | 3) if r == "a" => Some(3),
        _ => None,
    };
    for (task, log) in logs.iter().enumerate() {
        let mut at = 0;
        for (i, s) in log.iter().enumerate() {
            at = phase(s, at).unwrap_or_else(|| {
                panic!("task {task}, call {i}: {s:?} out of order (after phase {at}); log: {log:?}")
            });
        }
        assert_eq!(at, 3, "task {task} saw every phase");
        for want in [served("a"), served("b"), Seen::UnknownTool] {
            assert!(log.contains(&want), "task {task} never saw {want:?}");
        }
    }
}

#[tokio::test]
async fn a_call_in_flight_during_a_replacement_finishes_on_the_version_it_started_with() {
    // Arrange: revision a on PostgreSQL, and the loans table locked so a call that queries it
    // waits inside the plugin until the test lets it go.
    let app = Arc::new(
        spawn_app_with(AppOptions {
            postgres: true,
            ..AppOptions::default().plugin(
                "revision",
                fixture_wasm("revision-a"),
                revision_manifest(),
            )
        })
        .await,
    );
    assert_eq!(revision_of(&app).await, served("a"));
    let pool = app.pg_pool();
    let mut lock = pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE loans IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .unwrap();

    // Act: start the slow call and wait until it is blocked in the database.
    let slow = {
        let app = app.clone();
        tokio::spawn(async move { call_revision(&app, json!({"query": true})).await })
    };
    app.eventually("the slow call waits on the lock", || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&pool)
        .await
        .unwrap()
            == 1
    })
    .await;
    app.deploy_file("revision.wasm", &fixture_wasm("revision-b"));
    app.eventually("revision b is served", || async {
        revision_of(&app).await == served("b")
    })
    .await;
    let in_flight = !slow.is_finished();
    lock.rollback().await.unwrap();
    let answer = slow.await.unwrap();

    // Assert
    assert!(in_flight, "the slow call finished before b was live");
    assert_eq!(
        answer,
        served("a"),
        "the call started on a must finish on a"
    );
    assert_eq!(revision_of(&app).await, served("b"));
}

#[tokio::test]
async fn a_malformed_manifest_is_refused_by_the_reloader_with_the_field_named() {
    // Arrange: revision a serving.
    let app = spawn_app_with(AppOptions::default().plugin(
        "revision",
        fixture_wasm("revision-a"),
        revision_manifest(),
    ))
    .await;
    assert_eq!(revision_of(&app).await, served("a"));
    let bad = revision_manifest().replace("memory_mib = 16", "memory_mib = \"sixteen\"");

    // Act: a typo in the manifest, picked up by the background reloader.
    app.deploy_file("revision.toml", bad.as_bytes());
    app.eventually("the reloader refuses the manifest", || async {
        app.plugins.registry().refusal("revision").is_some()
    })
    .await;

    // Assert
    let reason = app.plugins.registry().refusal("revision").unwrap();
    assert!(
        reason.ends_with(
            "revision.toml: limits.memory_mib: invalid type: string \"sixteen\", expected u32"
        ),
        "{reason}"
    );
    assert_eq!(
        revision_of(&app).await,
        served("a"),
        "the previous version keeps serving"
    );
}

#[tokio::test]
async fn a_new_tool_with_a_bad_manifest_is_never_listed() {
    // Arrange
    let app = spawn_app().await;
    let bad = revision_manifest().replace("timeout_ms = 20000", "timeout_ms = -1");

    // Act
    app.deploy_file("revision.wasm", &fixture_wasm("revision-a"));
    app.deploy_file("revision.toml", bad.as_bytes());
    app.eventually("the reloader refuses the manifest", || async {
        app.plugins.registry().refusal("revision").is_some()
    })
    .await;

    // Assert
    let reason = app.plugins.registry().refusal("revision").unwrap();
    assert!(
        reason.ends_with(
            "revision.toml: limits.timeout_ms: invalid value: integer `-1`, expected u64"
        ),
        "{reason}"
    );
    assert!(!app.tool_names().await.contains(&"revision".to_string()));
    assert_eq!(revision_of(&app).await, Seen::UnknownTool);
}
