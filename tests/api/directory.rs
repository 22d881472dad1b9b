//! The in-memory agent directory keeps the spec's rule that identity and scope come from the
//! platform's data on every request: repeated requests are answered from memory, and a change
//! written by anyone (here: the import's own connection, not the server's) is seen by the very
//! next request on SQLite (the WAL-index header every commit writes) and as soon as the
//! notification arrives on PostgreSQL (`LISTEN/NOTIFY` from triggers on the agent tables).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{import_lines, spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp};

const A: &str = "00000000-0000-4000-8000-0000000000a1";
const B: &str = "00000000-0000-4000-8000-0000000000b1";
const C: &str = "00000000-0000-4000-8000-0000000000c9";

fn agent(id: &str, email: &str, roles: &[&str], managed: &[&str], active: bool) -> String {
    json!({"id": id, "email": email, "roles": roles, "managedAgentIds": managed, "active": active})
        .to_string()
}

async fn app(postgres: bool) -> TestApp {
    let app = spawn_app_with(AppOptions {
        postgres,
        ..AppOptions::default().plugin(
            "report_loans",
            tool_wasm("report_loans"),
            tool_manifest("report_loans"),
        )
    })
    .await;
    import_lines(
        &app,
        "agents.jsonl",
        &[
            agent(A, "a@example.com", &["Agent"], &[], true),
            agent(B, "b@example.com", &["Agent"], &[], true),
            agent(C, "concierge@example.com", &["ConciergeKey"], &[A], true),
        ],
    )
    .await;
    let loans: Vec<String> = (1..=5)
        .map(|n| {
            let officer = if n <= 2 { A } else { B };
            json!({"id": format!("00000000-0000-4000-8000-{n:012}"), "status": "Loan Open", "loanOfficerId": officer})
                .to_string()
        })
        .collect();
    import_lines(&app, "loans.jsonl", &loans).await;
    app
}

/// The concierge's loan count, or the HTTP status when the call is refused before the tool.
async fn concierge_count(app: &TestApp, token: &str) -> Result<u64, u16> {
    let resp = app
        .post_mcp(
            Some(token),
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "report_loans", "arguments": {}}}),
        )
        .await;
    if resp.status() != 200 {
        return Err(resp.status().as_u16());
    }
    let reply: Value = resp.json().await.unwrap();
    Ok(reply["result"]["structuredContent"]["totalCount"]
        .as_u64()
        .unwrap_or_else(|| panic!("{reply}")))
}

/// Waits until the concierge's answer is `want`: at once on SQLite, once the notification is
/// delivered on PostgreSQL (the answer itself is the signal; [`HANG_GUARD`] only keeps a
/// directory that never sees the change from hanging the run). Returns how long it took.
async fn until(app: &TestApp, token: &str, want: Result<u64, u16>, postgres: bool) -> Duration {
    let started = Instant::now();
    loop {
        let got = concierge_count(app, token).await;
        if got == want {
            return started.elapsed();
        }
        assert!(
            postgres,
            "SQLite: the very next request must see the change; got {got:?}, want {want:?}"
        );
        assert!(
            started.elapsed() < HANG_GUARD,
            "PostgreSQL: the change was never seen (got {got:?}, want {want:?})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Far past any delivery on a busy machine: bounds a broken build, not the machine's speed.
const HANG_GUARD: Duration = Duration::from_secs(120);

async fn changes_are_seen_by_the_next_request(postgres: bool) {
    // Arrange
    let app = app(postgres).await;
    let directory = app
        .directory
        .clone()
        .expect("the server has an agent directory");
    let token = app.token_for("concierge@example.com");
    until(&app, &token, Ok(2), postgres).await;
    let listening = Instant::now();
    while !directory.answers_from_memory() {
        assert!(
            listening.elapsed() < HANG_GUARD,
            "the directory never started answering from memory"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let hits_before = directory.stats().hits.load(Ordering::Relaxed);
    assert_eq!(
        directory.reads_wal_index(),
        !postgres,
        "a SQLite file in WAL mode is watched through its WAL-index"
    );

    // Act 1: unchanged data is answered from memory.
    for _ in 0..5 {
        assert_eq!(concierge_count(&app, &token).await, Ok(2));
    }
    let hits = directory.stats().hits.load(Ordering::Relaxed) - hits_before;

    // Act 2: the concierge now manages both officers (written by the import's connection).
    import_lines(
        &app,
        "agents.jsonl",
        &[agent(
            C,
            "concierge@example.com",
            &["ConciergeKey"],
            &[A, B],
            true,
        )],
    )
    .await;
    let widened = until(&app, &token, Ok(5), postgres).await;

    // Act 3: deactivated: no longer signs in.
    import_lines(
        &app,
        "agents.jsonl",
        &[agent(
            C,
            "concierge@example.com",
            &["ConciergeKey"],
            &[A, B],
            false,
        )],
    )
    .await;
    let refused = until(&app, &token, Err(401), postgres).await;

    // Act 4: back, managing no one.
    import_lines(
        &app,
        "agents.jsonl",
        &[agent(
            C,
            "concierge@example.com",
            &["ConciergeKey"],
            &[],
            true,
        )],
    )
    .await;
    let narrowed = until(&app, &token, Ok(0), postgres).await;

    // Assert
    assert!(
        hits >= 5,
        "repeated requests are answered from memory ({hits} hits)"
    );
    let invalidations = directory.stats().invalidations.load(Ordering::Relaxed);
    assert!(
        invalidations >= 3,
        "each change dropped the entries ({invalidations})"
    );
    eprintln!(
        "directory ({}): seen after {widened:?}, {refused:?}, {narrowed:?}",
        if postgres { "postgres" } else { "sqlite" }
    );
}

#[tokio::test]
async fn sqlite_directory_changes_are_seen_by_the_next_request() {
    changes_are_seen_by_the_next_request(false).await;
}

#[tokio::test]
async fn postgres_directory_changes_are_seen_once_notified() {
    changes_are_seen_by_the_next_request(true).await;
}
