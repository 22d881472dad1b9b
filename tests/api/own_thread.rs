//! An interpreter's call runs on a thread of its own (`docs/decisions/0044-guard-pages-for-interpreters.md`):
//! when its caller goes away, it still ends at its next epoch tick and gives its instance slot
//! back, as a call on an async worker does, not at its deadline.

use std::time::{Duration, Instant};

use loanhost::auth::{Identity, RoleCode};
use serde_json::json;

use crate::helpers::{hostile_app, TestApp};

/// Waits until the host has `free` instance slots, looking every millisecond for at most
/// `bound` (a bound against a hang, far from what the wait takes); how long it took, if it
/// came.
async fn slots_become(app: &TestApp, free: usize, bound: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < bound {
        if app.plugins.free_slots() == free {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    None
}

async fn a_spinning_call_whose_caller_goes_ends_before_its_deadline(language: &str) {
    // Arrange: a call that spins until its 60 s deadline (the longest a manifest may set),
    // running.
    let (app, tool) = hostile_app(language, 60_000).await;
    let idle = app.plugins.free_slots();
    let plugins = app.plugins.clone();
    let caller = Identity::new("spinner", [RoleCode::Agent]);
    let call = tokio::spawn(async move {
        let _ = plugins
            .call(&tool, &caller, &json!({"action": "loop"}))
            .await;
    });
    let started = slots_become(&app, idle - 1, Duration::from_secs(60)).await;
    assert!(started.is_some(), "the call never took a slot");

    // Act: the caller goes.
    call.abort();

    // Assert: the slot is back long before the deadline (at the next 2 ms tick, give or take
    // the machine); without the cancellation it would come back after 60 s.
    let freed = slots_become(&app, idle, Duration::from_secs(30)).await;
    assert!(
        freed.is_some(),
        "the slot of a call whose caller went was still taken after 30 s"
    );
}

#[tokio::test]
async fn a_python_call_whose_caller_goes_ends_at_its_next_tick() {
    a_spinning_call_whose_caller_goes_ends_before_its_deadline("python").await;
}

#[tokio::test]
async fn a_typescript_call_whose_caller_goes_ends_at_its_next_tick() {
    a_spinning_call_whose_caller_goes_ends_before_its_deadline("typescript").await;
}
