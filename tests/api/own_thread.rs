//! An interpreter's call runs on a thread of its own (`docs/decisions/0044-guard-pages-for-interpreters.md`):
//! when its caller goes away, it still ends at its next epoch tick and gives its instance slot
//! back, as a call on an async worker does, not at its deadline. Once answered, that thread
//! makes the build's next instance ahead of its call
//! (`docs/decisions/0050-interpreter-instances-made-ahead.md`), which no call has run in.

use std::time::Duration;

use loanhost::auth::{Identity, RoleCode};
use serde_json::json;

use crate::helpers::{hostile_app, slots_become, TestApp};

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

/// What `tool` answered `caller` when asked to `remember` them: the callers its instance had
/// served before, and how the call's instance was made.
async fn remember(
    app: &TestApp,
    tool: &str,
    caller: &Identity,
) -> (serde_json::Value, loanhost::plugins::CallUsage) {
    let (answer, report) = app
        .plugins
        .call_reported(tool, caller, &json!({"action": "remember"}))
        .await;
    let answer = answer.unwrap_or_else(|e| panic!("{e}"));
    (serde_json::from_str(answer.text()).unwrap(), report)
}

async fn the_next_call_takes_an_instance_made_ahead_that_no_call_ran_in(language: &str) {
    // Arrange: a first call, instantiated for itself, and the instance made after it.
    let (app, tool) = hostile_app(language, 10_000).await;
    let idle = app.plugins.free_slots();
    let (first, second) = (
        Identity::new("first-caller", [RoleCode::Agent]),
        Identity::new("second-caller", [RoleCode::Agent]),
    );
    let (answer, report) = remember(&app, &tool, &first).await;
    assert_eq!(answer, json!({"before": []}));
    assert!(report.timing.made_ahead.is_none() && !report.timing.instantiate.is_zero());
    let made = slots_become(&app, idle - 1, Duration::from_secs(60)).await;
    assert!(made.is_some(), "no instance was made ahead after the call");

    // Act: another caller's call.
    let (answer, report) = remember(&app, &tool, &second).await;

    // Assert: it ran in the instance made ahead, in which no call had run (the first caller
    // is not there), and was charged the time it took to make.
    assert_eq!(answer, json!({"before": []}));
    assert!(report.timing.instantiate.is_zero(), "{:?}", report.timing);
    assert!(report.timing.made_ahead.is_some_and(|d| !d.is_zero()));
    let made = slots_become(&app, idle - 1, Duration::from_secs(60)).await;
    assert!(
        made.is_some(),
        "no instance was made ahead after the second call"
    );
    let (answer, _) = remember(&app, &tool, &first).await;
    assert_eq!(
        answer,
        json!({"before": []}),
        "the second caller is not there either"
    );
}

#[tokio::test]
async fn a_python_call_takes_an_instance_made_ahead_that_no_call_ran_in() {
    the_next_call_takes_an_instance_made_ahead_that_no_call_ran_in("python").await;
}

#[tokio::test]
async fn a_typescript_call_takes_an_instance_made_ahead_that_no_call_ran_in() {
    the_next_call_takes_an_instance_made_ahead_that_no_call_ran_in("typescript").await;
}
