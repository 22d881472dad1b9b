//! Anyone who can connect to the database can `NOTIFY loanhost_plugin_refs`: a flood of notices
//! against a `loanhost serve` process on PostgreSQL costs it no memory (a notice is never
//! queued) and its registries a bounded number of resolutions (notices arriving together start
//! one round, and rounds they start keep `MIN_NOTICE_GAP` between them).

use std::time::Instant;

use loanhost::plugins::catalog::follow::MIN_NOTICE_GAP;

use crate::hostile_registry::{HostileRegistry, Mode};
use crate::registry_fleet::{database, Host};

#[tokio::test]
async fn a_flood_of_notices_costs_no_memory_and_a_bounded_number_of_resolutions() {
    // Arrange: a host following a reference whose registry answers at once (404), resolving
    // on its own only every hour, listening for notices.
    let registry = HostileRegistry::start(Mode::NotFound).await;
    let reference = registry.reference("team/revision:live");
    let url = database().await;
    let host = Host::start(&registry.host, &reference, &url, 3600).await;
    host.reaches("loanhost_registry_notices_listening", 1.0)
        .await;
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let before = host.resident_kib();

    // Act 1: one transaction of 50,000 notices of 7.9 KB each, none naming the reference
    // (identical payloads would be folded into one by PostgreSQL); then one that does, so
    // that once it is heard every notice before it was read.
    sqlx::query(
        "SELECT pg_notify('loanhost_plugin_refs', n::text || repeat('x', 7900)) \
         FROM generate_series(1, 50000) AS n",
    )
    .execute(&pool)
    .await
    .unwrap();
    let heads = registry.requests("HEAD").len();
    sqlx::query("SELECT pg_notify('loanhost_plugin_refs', $1)")
        .bind(&reference)
        .execute(&pool)
        .await
        .unwrap();
    host.reaches("loanhost_registry_events_total{kind=\"notice\"}", 1.0)
        .await;
    let after = host.resident_kib();

    // Act 2: 20 notices naming the reference, one statement each.
    let started = Instant::now();
    for _ in 0..20 {
        sqlx::query("SELECT pg_notify('loanhost_plugin_refs', $1)")
            .bind(&reference)
            .execute(&pool)
            .await
            .unwrap();
    }
    host.reaches("loanhost_registry_events_total{kind=\"notice\"}", 21.0)
        .await;
    let rounds = registry.requests("HEAD").len() - heads;
    let elapsed = started.elapsed().as_secs_f64();

    // Assert: 395 MB of notices left the host's memory where it was (well under what they
    // would take queued); 21 notices cost at most one round per gap, and the first.
    let grown_mib = after.saturating_sub(before) / 1024;
    assert!(
        grown_mib < 64,
        "resident memory grew {grown_mib} MiB ({before} -> {after} KiB)"
    );
    let bound = 3 + (elapsed / MIN_NOTICE_GAP.as_secs_f64()).ceil() as usize;
    assert!(
        rounds <= bound,
        "{rounds} resolutions for 21 notices in {elapsed:.1} s (at most {bound})"
    );
}
