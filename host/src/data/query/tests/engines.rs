//! Both engines' own formatting of period labels, and statements stopped inside the engine at
//! their deadline.

use super::*;
use crate::data::query::columns::Out;
use crate::data::query::compiler::Compiler;
use crate::data::query::periods::periods_between;
use crate::data::values::parse_instant;
use std::time::Instant;

#[tokio::test]
async fn window_labels_equal_the_engines_own_formatting() {
    // Arrange: instants around year ends (ISO week 53 of 2026, week 1 of 2025 starting in
    // December 2024), quarter and month boundaries, a leap day.
    let (_dir, db) = scratch_sqlite().await;
    let Db::Sqlite(pool) = &db else {
        unreachable!()
    };
    let pg = sqlx::PgPool::connect(&test_postgres_url()).await.unwrap();
    let instants: Vec<i64> = [
        "2024-12-29T23:59:59.999Z",
        "2024-12-30T00:00:00Z",
        "2025-01-01T12:00:00Z",
        "2025-03-31T23:59:59.999Z",
        "2025-04-01T00:00:00Z",
        "2026-12-28T00:00:00Z",
        "2027-01-03T23:59:59Z",
        "2027-01-04T00:00:00Z",
        "2028-02-29T12:00:00Z",
    ]
    .iter()
    .map(|s| parse_instant(s).unwrap())
    .collect();
    let (lo, hi) = (instants[0], *instants.last().unwrap());
    for unit in [
        PeriodUnit::Week,
        PeriodUnit::Month,
        PeriodUnit::Quarter,
        PeriodUnit::Year,
    ] {
        // Act
        let periods = periods_between(lo, hi, unit).unwrap_or_else(|| {
            assert_eq!(
                unit,
                PeriodUnit::Week,
                "only weeks exceed the window cap here"
            );
            periods_between(lo, lo + 30 * 86_400_000, unit).unwrap()
        });
        let compiler = |postgres| Compiler {
            dataset: Dataset::Loans,
            can_read_names: true,
            lists_borrowers: false,
            postgres,
            params: vec![],
            history_only: false,
            covered_group: false,
            scope_first: false,
            personal: false,
            scope_order: None,
            bounds: Default::default(),
        };
        let sqlite_sql = format!("SELECT {}", compiler(false).period("?1", unit));
        let postgres_sql = format!("SELECT {}", compiler(true).period("$1::bigint", unit));
        for ms in instants
            .iter()
            .copied()
            .filter(|ms| *ms < periods.ends.last().unwrap().0)
        {
            let sqlite: String = sqlx::query_scalar(&sqlite_sql)
                .bind(ms)
                .fetch_one(pool)
                .await
                .unwrap();
            let postgres: String = sqlx::query_scalar(&postgres_sql)
                .bind(ms)
                .fetch_one(&pg)
                .await
                .unwrap();
            // Assert: the period whose end first exceeds the instant has each engine's
            // label (which is what rows outside a window, or in an unbounded one, get).
            assert!(ms >= periods.start);
            let label = &periods.ends.iter().find(|(end, _)| ms < *end).unwrap().1;
            assert_eq!(label, &sqlite, "SQLite: {unit:?} at {ms}");
            assert_eq!(label, &postgres, "PostgreSQL: {unit:?} at {ms}");
        }
    }
    // A window of more than 64 periods is formatted row by row.
    assert!(periods_between(lo, hi, PeriodUnit::Week).is_none());
}

/// A statement that never ends on its own, and one that ends at once.
fn endless_and_quick(postgres: bool) -> (Compiled, Compiled) {
    let endless = if postgres {
        "SELECT COUNT(*), 0 FROM generate_series(1, 1000000000000) g"
    } else {
        // 20M rows: seconds even in an optimized build, far past the 300 ms deadline, yet
        // finite, so that a test failing because it was not stopped still ends (the
        // runtime waits for its blocking thread on the way out).
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000000) SELECT COUNT(*), 0 FROM c"
    };
    let c = |sql: &str| Compiled {
        sql: sql.into(),
        params: vec![],
        outs: vec![Out::Int],
        columns: vec!["agg0".into()],
        limit: 1,
        fold: None,
        order: None,
        full: None,
        plans: Plans::PerCall,
    };
    (c(endless), c("SELECT CAST(1 AS BIGINT), CAST(1 AS BIGINT)"))
}

/// `c` as a person's statement, on a session with one generic plan.
fn generic(c: Compiled) -> Compiled {
    Compiled {
        plans: Plans::Generic,
        ..c
    }
}

/// Runs the endless statement with a 300 ms deadline, abandoning its future after 50 ms
/// as a timed-out caller would; then the pool's only connection must come back for the next
/// statement (on PostgreSQL, for a statement that plans otherwise than the abandoned one did).
///
/// Nothing here depends on the machine's speed: the engine's own answer is the signal. A
/// statement that was not stopped inside the engine ends with its rows on SQLite (it is
/// finite) and never on PostgreSQL; one stopped ends with `Timeout`. A connection that never
/// comes back leaves the next statement waiting on the pool until its own deadline, which
/// ends it with `Timeout` too. The outer timeouts only keep a broken build from hanging.
async fn stops_at_deadline_and_frees_the_connection(db: ReportStore, postgres: bool) {
    // Arrange
    let (endless, quick) = endless_and_quick(postgres);
    let allowance = Allowance {
        deadline: Instant::now() + Duration::from_millis(300),
        max_rows: 10,
        max_bytes: 1000,
    };
    // Act
    let r = tokio::time::timeout(HANG_GUARD, spawn_execute(&db, endless.clone(), allowance))
        .await
        .expect("the engine did not stop the statement at its deadline");
    // Assert
    assert!(matches!(r, Err(QueryError::Timeout(_))), "{:?}", r.err());

    // Arrange
    let allowance = Allowance {
        deadline: Instant::now() + Duration::from_millis(300),
        ..allowance
    };
    let abandoned = tokio::time::timeout(
        Duration::from_millis(50),
        spawn_execute(&db, generic(endless), allowance),
    )
    .await;
    assert!(abandoned.is_err(), "the endless statement ended early");
    // Act
    let r = tokio::time::timeout(HANG_GUARD, spawn_execute(&db, quick, Allowance::standard()))
        .await
        .expect("the next statement outlived its own deadline");
    // Assert
    assert_eq!(
        r.expect("the connection was not given back after the deadline")
            .rows,
        vec![vec![Value::Integer(1)]]
    );
}

/// Keeps a test whose statement is never stopped from hanging; far past every deadline the
/// tests set, so it bounds nothing about the machine's speed.
const HANG_GUARD: Duration = Duration::from_secs(120);

#[tokio::test]
async fn a_sqlite_statement_stops_at_its_deadline() {
    let (_dir, _db, one) = one_sqlite_connection().await;
    stops_at_deadline_and_frees_the_connection(one, false).await;
}

#[tokio::test]
async fn a_postgres_statement_stops_at_its_deadline() {
    let one = ReportStore::Postgres(one_postgres_session());
    stops_at_deadline_and_frees_the_connection(one, true).await;
}

#[tokio::test]
async fn a_postgres_statement_runs_on_a_session_that_plans_as_asked() {
    // Arrange: one session, so that each statement finds the one the last one left.
    let reads = one_postgres_session();
    let store = ReportStore::Postgres(reads.clone());
    let (_, quick) = endless_and_quick(true);
    let mode = || reads.show(Plans::PerCall, "plan_cache_mode");

    // Act
    spawn_execute(&store, generic(quick.clone()), Allowance::standard())
        .await
        .unwrap();
    let after_generic = mode().await;
    spawn_execute(&store, quick, Allowance::standard())
        .await
        .unwrap();
    let after_per_call = mode().await;

    // Assert
    assert_eq!(after_generic, "force_generic_plan");
    assert_eq!(after_per_call, "auto", "the server's own setting again");
}
