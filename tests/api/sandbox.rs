//! The sandbox boundary with real misbehaving components: deadlines, memory, output size,
//! traps, typed errors, and what the host imports hand a plugin.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{
    fixture_wasm, hostile_app, import_lines, manifest, seed_app, spawn_app_with, tool_manifest,
    tool_wasm, AppOptions, TestApp, DEFAULT_ROLES, TODAY,
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

/// What an Admin's count of the loans reads: the loans, or the snapshot's totals (schema v11)
/// when no filter narrows it (the `query` action's).
const ADMIN_COUNT_READS: &str = "loans, loan_totals_status";

/// Takes `tables` exclusively until the returned transaction ends.
async fn lock(pool: &sqlx::PgPool, tables: &str) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut tx = pool.begin().await.unwrap();
    sqlx::query(&format!("LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE"))
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

fn misbehave_with(limits: &str, timeout_ms: u64, datasets: &[&str], postgres: bool) -> AppOptions {
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

/// One call of the hostile plugin's `action`: the whole tool result.
async fn probe(app: &TestApp, tool: &str, action: &str) -> serde_json::Value {
    app.call_tool("agent-token", tool, json!({"action": action}))
        .await
}

/// What the Rust fixture's misbehaviour gets (the tests above), the Python and TypeScript
/// plugins get too: a spin times out, memory growth stops at the manifest's limit, an output
/// bomb is refused, an exception is `internal` without internals; and the plugin still serves.
async fn a_hostile_plugin_meets_the_same_limits(language: &str) {
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
