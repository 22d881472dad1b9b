//! The limits of a plugin's statements: stopped inside the engine at its deadline, at most
//! 10,000 rows, no instance slot when all are taken, a host import stuck past the deadline
//! abandoned, and organisation-wide statements queued for their slots.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{
    fixture_wasm, import_lines, manifest, seed_app, spawn_app_with, tool_manifest, tool_wasm,
    AppOptions, DEFAULT_ROLES,
};

/// What an Admin's count of the loans reads: the loans, or the snapshot's totals (schema v11)
/// when no filter narrows it (the `query` action's).
pub(super) const ADMIN_COUNT_READS: &str = "loans, loan_totals_status";

/// Takes `tables` exclusively until the returned transaction ends.
pub(super) async fn lock(
    pool: &sqlx::PgPool,
    tables: &str,
) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut tx = pool.begin().await.unwrap();
    sqlx::query(&format!("LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE"))
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

pub(super) fn misbehave_with(
    limits: &str,
    timeout_ms: u64,
    datasets: &[&str],
    postgres: bool,
) -> AppOptions {
    AppOptions {
        postgres,
        ..AppOptions::default().plugin(
            "misbehave",
            fixture_wasm("misbehave"),
            manifest("misbehave", DEFAULT_ROLES, datasets, 16, timeout_ms, 65536)
                .replace("[limits]\n", &format!("[limits]\n{limits}\n")),
        )
    }
}

#[tokio::test]
async fn a_statement_is_stopped_inside_the_engine_at_its_deadline() {
    // Arrange: 300 ms of database time per call. On SQLite a heavy statement outlasts it; on
    // PostgreSQL the statement waits on a lock the test holds.
    let sqlite = spawn_app_with(misbehave_with(
        "db_time_ms = 1",
        5000,
        &["los-status-history"],
        false,
    ))
    .await;
    seed_app(&sqlite, 11, 2000).await;
    let postgres = spawn_app_with(misbehave_with("db_time_ms = 300", 5000, &["loans"], true)).await;
    let held = lock(&postgres.pg_pool(), ADMIN_COUNT_READS).await;

    // Act
    let on_sqlite = sqlite
        .call_err(
            "admin-token",
            "misbehave",
            json!({"action": "flood", "dataset": "los-status-history", "field": "loanId"}),
        )
        .await;
    let started = Instant::now();
    let on_postgres = postgres
        .call_err("admin-token", "misbehave", json!({"action": "query"}))
        .await;
    let waited = started.elapsed();
    held.rollback().await.unwrap();
    let after = postgres
        .call_ok("admin-token", "misbehave", json!({"action": "query"}))
        .await;

    // Assert
    let stopped = "timeout: `misbehave` ran out of database time: the query was stopped at its deadline (0 ms of database time were left)";
    assert_eq!(on_sqlite, stopped);
    assert_eq!(on_postgres, stopped);
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert_eq!(after["rows"], 1, "the connection is usable again");
}

#[tokio::test]
async fn a_query_returns_at_most_10000_rows_on_both_engines() {
    for postgres in [false, true] {
        // Arrange: 10,050 loans.
        let app = spawn_app_with(AppOptions {
            postgres,
            ..AppOptions::default().plugin(
                "query_echo",
                fixture_wasm("query-echo"),
                manifest("query_echo", DEFAULT_ROLES, &["loans"], 64, 20_000, 4 << 20),
            )
        })
        .await;
        let lines: Vec<String> = (0..10_050)
            .map(|i| {
                json!({"id": format!("00000000-0000-4000-8000-{i:012x}"), "status": "Loan Open"})
                    .to_string()
            })
            .collect();
        import_lines(&app, "loans.jsonl", &lines).await;

        // Act: one group per loan, asking for more than the cap.
        let r = app
            .call_ok(
                "admin-token",
                "query_echo",
                json!({"dataset": "loans", "groupBy": [{"field": "id"}], "aggregates": [["count", null]], "limit": 20000}),
            )
            .await;

        // Assert
        assert_eq!(
            r["rows"].as_array().unwrap().len(),
            10_000,
            "postgres: {postgres}"
        );
        assert_eq!(r["truncated"], true);
        assert_eq!(r["totalGroups"], 10_050);
    }
}

#[tokio::test]
async fn a_call_finds_no_instance_slot_when_all_are_taken() {
    // Arrange: 64 calls held in the database (the tables they read are locked) take every slot; a
    // second plugin with a 500 ms deadline then waits for one.
    let options = AppOptions {
        postgres: true,
        env: vec![("LOANHOST_PLUGIN_MEMORY_MIB", "4096".to_string())],
        ..misbehave_with("", 20_000, &["loans"], true).plugin(
            "get_loan_reporting_metadata",
            tool_wasm("get_loan_reporting_metadata"),
            tool_manifest("get_loan_reporting_metadata")
                .replace("timeout_ms = 1000", "timeout_ms = 500"),
        )
    };
    let app = std::sync::Arc::new(spawn_app_with(options).await);
    assert!(tool_manifest("get_loan_reporting_metadata").contains("timeout_ms = 1000"));
    let held = lock(&app.pg_pool(), ADMIN_COUNT_READS).await;
    let me = loanhost::auth::Identity::new(
        "00000000-0000-0000-0000-0000000000a1",
        [loanhost::auth::RoleCode::Admin],
    );
    let slots = loanhost::plugins::MAX_INSTANCES as usize;
    let blocked: Vec<_> = (0..slots)
        .map(|_| {
            let (app, me) = (app.clone(), me.clone());
            tokio::spawn(async move {
                app.plugins
                    .call("misbehave", &me, &json!({"action": "query"}))
                    .await
            })
        })
        .collect();
    app.eventually("every slot is taken", || async {
        app.plugins.free_slots() == 0
    })
    .await;

    // Act
    let busy = app
        .plugins
        .call("get_loan_reporting_metadata", &me, &json!({}))
        .await;
    held.rollback().await.unwrap();
    let mut finished = 0;
    for b in blocked {
        finished += usize::from(b.await.unwrap().is_ok());
    }
    let after = app
        .plugins
        .call("get_loan_reporting_metadata", &me, &json!({}))
        .await;

    // Assert
    assert_eq!(
        busy.unwrap_err().to_string(),
        "internal: all 64 plugin instance slots stayed busy; try again shortly"
    );
    assert_eq!(
        finished, slots,
        "the held calls finish once the lock is gone"
    );
    assert!(after.is_ok(), "{after:?}");
}

#[tokio::test]
async fn a_host_import_stuck_past_the_deadline_is_abandoned() {
    // Arrange: a concierge's scope cannot be read (the test locks the table of managed
    // agents), so the `data` import does not return by itself, and the guest is not running
    // to see its deadline.
    let app = spawn_app_with(misbehave_with("", 300, &["loans"], true)).await;
    let me = loanhost::auth::Identity::new(
        "00000000-0000-0000-0000-0000000000b2",
        [loanhost::auth::RoleCode::ConciergeKey],
    );
    let held = lock(&app.pg_pool(), "agent_managed").await;
    let started = Instant::now();

    // Act
    let stuck = app
        .plugins
        .call("misbehave", &me, &json!({"action": "query"}))
        .await;
    let waited = started.elapsed();
    held.rollback().await.unwrap();
    let after = app
        .plugins
        .call("misbehave", &me, &json!({"action": "query"}))
        .await;

    // Assert: abandoned after the deadline and its grace (500 ms), not left hanging.
    assert_eq!(
        stuck.unwrap_err().to_string(),
        "timeout: `misbehave` did not finish within 300 ms"
    );
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    assert_eq!(after.unwrap()["rows"], 1);
}

#[tokio::test]
async fn organisation_wide_statements_queue_for_their_slots_and_never_hold_up_scoped_ones() {
    // Arrange: one heavy slot. An Admin's warehouse statement (organisation-wide) holds it,
    // waiting on a lock the test takes.
    let org_wide = manifest(
        "query_echo",
        &["Admin"],
        &["dw-loan-milestones"],
        64,
        20_000,
        1 << 20,
    )
    .replace("scope = \"caller\"", "scope = \"org-wide\"");
    let options = AppOptions {
        postgres: true,
        env: vec![("LOANHOST_HEAVY_QUERIES", "1".to_string())],
        ..misbehave_with("", 1500, &["loans"], true).plugin(
            "query_echo",
            fixture_wasm("query-echo"),
            org_wide,
        )
    };
    let app = std::sync::Arc::new(spawn_app_with(options).await);
    // Another Admin: a caller runs one statement at a time, whatever its class.
    app.db
        .upsert_agent(&loanhost::data::NewAgent {
            id: "00000000-0000-0000-0000-0000000000a9".into(),
            email: "second.admin@example.com".into(),
            roles: vec!["Admin".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    let second_admin = app.token_for("second.admin@example.com");
    let held = lock(&app.pg_pool(), "dw_loan_milestones").await;
    let warehouse = {
        let app = app.clone();
        tokio::spawn(async move {
            app.call_tool(
                &second_admin,
                "query_echo",
                json!({"dataset": "dw-loan-milestones", "aggregates": [["count", null]]}),
            )
            .await
        })
    };
    app.eventually("the warehouse statement holds the heavy slot", || async {
        app.plugins.heavy_slots_free() == Some(0)
    })
    .await;

    // Act: an Admin's statement over every loan is heavy too; an Agent's own loans are not.
    let started = std::time::Instant::now();
    let agent = app
        .call_tool("agent-token", "misbehave", json!({"action": "query"}))
        .await;
    let agent_took = started.elapsed();
    let admin = app
        .call_tool("admin-token", "misbehave", json!({"action": "query"}))
        .await;
    held.rollback().await.unwrap();
    let warehouse = warehouse.await.unwrap();

    // Assert
    assert_eq!(agent["isError"], false, "{agent}");
    assert!(
        agent_took < std::time::Duration::from_secs(1),
        "the Agent waited {agent_took:?}"
    );
    assert_eq!(admin["isError"], true, "{admin}");
    let text = admin["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("waited past its deadline for one of the 1 heavy-query slots"),
        "{text}"
    );
    assert_eq!(
        warehouse["isError"], false,
        "the held statement finishes: {warehouse}"
    );
    assert_eq!(app.plugins.heavy_slots_free(), Some(1));
}
