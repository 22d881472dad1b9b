//! Tests of the report stores: SQLite's read-only connections, PostgreSQL's sessions (their
//! timeouts, how they plan, JIT off).

use super::*;
use std::time::Duration;

#[tokio::test]
async fn connections_are_read_only_and_reused() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let w = Connection::open(&path).unwrap();
    w.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);")
        .unwrap();
    let reads = Arc::new(SqliteReads::new(&path));
    let soon = || Instant::now() + Duration::from_secs(5);

    // Act
    let sum = reads
        .run(soon(), |c| {
            c.query_row("SELECT SUM(x) FROM t", [], |r| r.get::<_, i64>(0))
        })
        .await
        .unwrap();
    let write = reads
        .run(soon(), |c| c.execute("INSERT INTO t VALUES (3)", []))
        .await
        .unwrap();
    let again = reads
        .run(soon(), |c| {
            c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get::<_, i64>(0))
        })
        .await
        .unwrap();

    // Assert
    assert_eq!(sum.unwrap(), 3);
    let e = write.unwrap_err().to_string();
    assert!(e.contains("readonly"), "{e}");
    assert_eq!(again.unwrap(), 2);
    assert_eq!(reads.slots.idle().len(), 1, "one connection, reused");
}

#[tokio::test]
async fn a_database_only_in_memory_is_named_in_the_error() {
    let reads = Arc::new(SqliteReads::new(Path::new("file:sqlx-in-memory-1")));
    let e = reads
        .run(Instant::now() + Duration::from_secs(1), |_| ())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("opening a report connection to file:sqlx-in-memory-1"),
        "{e}"
    );
}

#[tokio::test]
async fn postgres_sessions_are_read_only_reused_and_keep_their_timeout() {
    // Arrange
    let url = crate::data::test_postgres_url();
    let reads = Arc::new(PgReads::new(url.parse().unwrap(), 2));
    // Act
    let mut first = reads.acquire(Plans::PerCall).await.unwrap();
    first.statement_timeout(4900).await.unwrap();
    let set = show(&mut first).await;
    let write = sqlx::Executor::execute(first.conn(), "CREATE TEMP TABLE t (x int)").await;
    drop(first); // an error or a half-read statement: the connection is closed
    let mut second = reads.acquire(Plans::PerCall).await.unwrap();
    second.statement_timeout(4900).await.unwrap();
    second.release();
    let mut third = reads.acquire(Plans::PerCall).await.unwrap();
    third.statement_timeout(4900).await.unwrap();
    let kept = show(&mut third).await;
    third.statement_timeout(250).await.unwrap();
    let changed = show(&mut third).await;
    third.release();

    // Assert
    assert_eq!(set, "4900ms");
    let e = write.unwrap_err().to_string();
    assert!(e.contains("read-only transaction"), "{e}");
    assert_eq!(kept, "4900ms", "the session kept its timeout");
    assert_eq!(changed, "250ms");
    assert_eq!(
        reads.timeouts_set(),
        3,
        "a SET for the first session, one for the new session after the closed one, and one for the change; none for the reused session"
    );
    assert_eq!(reads.idle_sessions(), 1, "one session, reused");

    // A session idle for too long is closed, not reused: the next one starts afresh.
    {
        let mut idle = reads.slots.idle();
        idle[0].last_used = idle[0].last_used.checked_sub(POSTGRES_IDLE_FOR).unwrap();
    }
    let mut fourth = reads.acquire(Plans::PerCall).await.unwrap();
    fourth.statement_timeout(250).await.unwrap();
    fourth.release();
    assert_eq!(
        reads.timeouts_set(),
        4,
        "a fresh session after the idle one"
    );
    assert_eq!(reads.idle_sessions(), 1);

    async fn show(lease: &mut PgLease) -> String {
        sqlx::query_scalar::<_, String>("SHOW statement_timeout")
            .fetch_one(lease.conn())
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn postgres_sessions_plan_as_asked_keep_it_and_are_found_by_it() {
    // Arrange
    let url = crate::data::test_postgres_url();
    let reads = Arc::new(PgReads::new(url.parse().unwrap(), 2));
    let statement = "SELECT count(*) FROM pg_class WHERE relname = $1";

    // Act: a person's statement, run three times on a generic session.
    let mut generic = reads.acquire(Plans::Generic).await.unwrap();
    generic.plans(Plans::Generic).await.unwrap();
    for _ in 0..3 {
        sqlx::query(statement)
            .bind("pg_class")
            .execute(generic.conn())
            .await
            .unwrap();
    }
    let generic_settings = settings(&mut generic).await;
    let (generic_plans, custom_plans): (i64, i64) = sqlx::query_as(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1",
    )
    .bind(statement)
    .fetch_one(generic.conn())
    .await
    .unwrap();
    // A second session, planning per call, while the first is out.
    let mut per_call = reads.acquire(Plans::PerCall).await.unwrap();
    per_call.plans(Plans::PerCall).await.unwrap();
    let per_call_settings = settings(&mut per_call).await;
    // Back in this order, the generic session is not the last one idle.
    generic.release();
    per_call.release();
    let told = reads.plans_set();
    // Each kind asked for again finds its own session among the idle ones.
    let mut again = reads.acquire(Plans::Generic).await.unwrap();
    again.plans(Plans::Generic).await.unwrap();
    let again_settings = settings(&mut again).await;
    let mut other = reads.acquire(Plans::PerCall).await.unwrap();
    other.plans(Plans::PerCall).await.unwrap();
    let other_settings = settings(&mut other).await;
    other.release();
    // A session that planned per call, asked to plan generically, is told so.
    let mut switched = reads.acquire(Plans::Generic).await.unwrap();
    switched.plans(Plans::Generic).await.unwrap();
    let switched_settings = settings(&mut switched).await;
    switched.release();
    again.release();

    // Assert
    let generic_wanted = ("force_generic_plan".to_string(), "0".to_string());
    assert_eq!(generic_settings, generic_wanted);
    assert_eq!(
        (generic_plans, custom_plans),
        (3, 0),
        "the server kept one generic plan, planned for no call's values"
    );
    assert_eq!(
        per_call_settings.0, "auto",
        "a new session plans as the server's default"
    );
    assert_eq!(told, 1, "a new session already plans per call");
    assert_eq!(again_settings, generic_wanted);
    assert_eq!(other_settings, per_call_settings);
    assert_eq!(switched_settings, generic_wanted);
    assert_eq!(
        reads.plans_set(),
        2,
        "no setting for a session found by its kind, one for the session switched"
    );

    async fn settings(lease: &mut PgLease) -> (String, String) {
        let show = |name: &'static str| format!("SHOW {name}");
        let mode: String = sqlx::query_scalar(&show("plan_cache_mode"))
            .fetch_one(lease.conn())
            .await
            .unwrap();
        let workers: String = sqlx::query_scalar(&show("max_parallel_workers_per_gather"))
            .fetch_one(lease.conn())
            .await
            .unwrap();
        (mode, workers)
    }
}

#[tokio::test]
async fn report_sessions_on_postgres_run_without_jit() {
    // Arrange: the report store of a pool opened as the server opens it.
    let url = crate::data::test_postgres_url();
    let db = Db::open_reports(&url).await.unwrap();
    let ReportStore::Postgres(reads) = ReportStore::of(&db) else {
        panic!("a PostgreSQL URL gives PostgreSQL sessions")
    };
    // Act
    let jit = reads.show(Plans::PerCall, "jit").await;
    // Assert: compiling a report statement cost more than running it (store.rs).
    assert_eq!(jit, "off");
}

#[test]
fn session_timeouts_round_down_to_100_ms_from_one_second() {
    let ms = |n| session_timeout_ms(Duration::from_millis(n));
    assert_eq!(ms(4_999), 4_900);
    assert_eq!(ms(4_901), 4_900);
    assert_eq!(ms(1_000), 1_000);
    assert_eq!(ms(999), 999);
    assert_eq!(ms(0), 1);
}
