//! A fresh instance per call, from pages reset in place: an interpreter plugin's instance finds
//! the memory its predecessor in the pool slot dirtied copied back from the snapshot, not
//! decommitted and faulted in again (`docs/decisions/0043-instance-memory-reset-in-place.md`).
//! Told by the page faults of the thread the plugin ran on, a count, not a time. Each call
//! takes the instance made ahead after the one before it
//! (`docs/decisions/0050-interpreter-instances-made-ahead.md`): its pool slot is one the
//! calls before it used, as a caller's next call finds it when calls do not overlap.

use loanhost::auth::{Identity, RoleCode};
use serde_json::json;

use std::time::Duration;

use loanhost::plugins::MAX_INSTANCES;

use crate::helpers::{example_plugin, seed_app, slots_become, spawn_app_with, AppOptions};

/// Minor page faults of this thread so far (`/proc/thread-self/stat`, field 10).
fn thread_minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    // The fields after the command name, which may hold spaces, closed by the last ')'.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split_whitespace().nth(7).unwrap().parse().unwrap()
}

/// Calls of `report_loans` in `language` on this thread: the mean page faults of a call.
async fn faults_per_call(language: &str) -> u64 {
    // Arrange: the example build, seeded loans, an Agent; warm-up calls fill the pool slot.
    let (wasm, manifest) = example_plugin(language, "report_loans");
    let options =
        AppOptions::default()
            .with_shared_compile_cache()
            .plugin("report_loans", wasm, manifest);
    let app = spawn_app_with(options).await;
    let seeded = seed_app(&app, 7, 400).await;
    let agent = seeded
        .agents
        .values()
        .find(|a| a["roles"].as_array().unwrap().contains(&json!("Agent")))
        .expect("a seeded agent");
    let me = Identity::new(agent["id"].as_str().unwrap(), [RoleCode::Agent]);
    let args = json!({"groupBy": "Status", "metric": "Sum"});
    // The faults of the thread the plugin ran on (an interpreter's runs on one of its own).
    let call = || async {
        let (reply, report) = app.plugins.call_reported("report_loans", &me, &args).await;
        let reply = reply.unwrap();
        assert!(reply.text().contains("\"buckets\":["), "{}", reply.text());
        report
            .timing
            .minor_faults
            .expect("an interpreter's plugin runs on a thread of its own")
    };
    for _ in 0..5 {
        call().await;
    }
    let made_ahead = || async {
        let made = slots_become(&app, MAX_INSTANCES as usize - 1, Duration::from_secs(60)).await;
        assert!(made.is_some(), "no instance was made ahead");
    };

    // Act: the plugin's faults, and this thread's (the host's side of the calls).
    const CALLS: u64 = 20;
    let before = thread_minor_faults();
    let mut faults = 0;
    for _ in 0..CALLS {
        made_ahead().await;
        faults += call().await;
    }
    (faults + thread_minor_faults() - before) / CALLS
}

#[tokio::test]
async fn a_python_instance_finds_the_pages_its_predecessor_dirtied_reset_in_place() {
    // Arrange, Act
    let faults = faults_per_call("python").await;

    // Assert: a few faults (host-side allocations), not the hundreds of pages a CPython
    // call dirties in more than 32 runs (about 650 a call with wasmtime's fixed 32 regions).
    assert!(faults < 64, "{faults} page faults a call");
}

#[tokio::test]
async fn a_typescript_instance_finds_the_pages_its_predecessor_dirtied_reset_in_place() {
    // Arrange, Act
    let faults = faults_per_call("typescript").await;

    // Assert: about 120 a call with wasmtime's fixed 32 regions.
    assert!(faults < 64, "{faults} page faults a call");
}
