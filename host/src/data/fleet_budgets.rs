//! The fleet's per-caller budgets on PostgreSQL (schema v22, decision 0048): the leases hosts
//! take from one token bucket per caller and budget, so a caller's budget holds across every
//! host on the database, and the hosts that say they are alive.

use std::time::Duration;

use sqlx::PgPool;

use super::{Db, DbError};

/// One budget's part of a lease: what the bucket holds at most and how fast it refills, what
/// the host's calls spent beyond their leases, and how much the host asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeaseRequest {
    /// The bucket's size (a burst).
    pub burst: f64,
    /// Its refill, per second.
    pub per_second: f64,
    /// How much the host asks for (a slice of the burst; zero asks for nothing).
    pub want: f64,
    /// What the host's calls spent beyond their leases, charged before the grant.
    pub debt: f64,
}

/// How long a host counts as alive after it last said so.
pub const HOST_SEEN_WITHIN: Duration = Duration::from_secs(30);
/// A host's row is removed once it has not been seen for a day.
const HOST_FORGOTTEN_AFTER: Duration = Duration::from_secs(86_400);

/// The fleet's ledger of per-caller budgets: the database every host of the fleet uses.
#[derive(Debug, Clone)]
pub struct FleetLedger {
    pool: PgPool,
}

impl FleetLedger {
    /// The ledger on `db`, when it is PostgreSQL (SQLite serves one host: no fleet).
    pub fn of(db: &Db) -> Option<FleetLedger> {
        match db {
            Db::Postgres(pool) => Some(FleetLedger { pool: pool.clone() }),
            Db::Sqlite(_) => None,
        }
    }

    /// Charges each budget's debt and leases what is asked of `caller`'s calls (whole calls),
    /// plugin seconds and result MiB, in one statement; what was granted of each.
    pub async fn lease(&self, caller: &str, parts: [LeaseRequest; 3]) -> Result<[f64; 3], DbError> {
        let [calls, time, results] = parts;
        let row: (f64, f64, f64) = sqlx::query_as(
            "SELECT fleet_budget_lease($1, 0::smallint, $2, $3, $4, $5, true), \
                    fleet_budget_lease($1, 1::smallint, $6, $7, $8, $9, false), \
                    fleet_budget_lease($1, 2::smallint, $10, $11, $12, $13, false)",
        )
        .bind(caller)
        .bind(calls.burst)
        .bind(calls.per_second)
        .bind(calls.want)
        .bind(calls.debt)
        .bind(time.burst)
        .bind(time.per_second)
        .bind(time.want)
        .bind(time.debt)
        .bind(results.burst)
        .bind(results.per_second)
        .bind(results.want)
        .bind(results.debt)
        .fetch_one(&self.pool)
        .await?;
        Ok([row.0, row.1, row.2])
    }

    /// Says that `host` is alive now, forgets hosts not seen for a day, and answers how many
    /// hosts (this one included) were seen within [`HOST_SEEN_WITHIN`], by the database's
    /// clock.
    pub async fn heartbeat(&self, host: &str) -> Result<u32, DbError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO fleet_hosts (host, seen) VALUES ($1, clock_timestamp()) \
             ON CONFLICT (host) DO UPDATE SET seen = EXCLUDED.seen",
        )
        .bind(host)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "DELETE FROM fleet_hosts WHERE seen < clock_timestamp() - make_interval(secs => $1)",
        )
        .bind(HOST_FORGOTTEN_AFTER.as_secs_f64())
        .execute(&mut *tx)
        .await?;
        let (alive,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM fleet_hosts WHERE seen > clock_timestamp() - make_interval(secs => $1)",
        )
        .bind(HOST_SEEN_WITHIN.as_secs_f64())
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(alive.clamp(1, i64::from(u32::MAX)) as u32)
    }
}

/// The steps both ledgers are held to (the SQL function here, and the ledger kept in memory of
/// `plugins::callers`): a caller, what it asks and owes of each budget, and what is granted.
/// A bucket of 10 that does not refill: 4 and 4 calls, then 2 of the 4.5 asked (whole calls);
/// another caller's own 4; 2.5 s of plugin time (not rounded); then 13 s owed take that
/// bucket below zero, so 1 s more is refused.
#[cfg(test)]
pub(crate) fn ledger_steps() -> Vec<(&'static str, [LeaseRequest; 3], [f64; 3])> {
    let ask = |want: f64, debt: f64| LeaseRequest {
        burst: 10.0,
        per_second: 0.0,
        want,
        debt,
    };
    let nothing = ask(0.0, 0.0);
    vec![
        ("u", [ask(4.0, 0.0), nothing, nothing], [4.0, 0.0, 0.0]),
        ("u", [ask(4.0, 0.0), nothing, nothing], [4.0, 0.0, 0.0]),
        ("u", [ask(4.5, 0.0), nothing, nothing], [2.0, 0.0, 0.0]),
        ("v", [ask(4.0, 0.0), nothing, nothing], [4.0, 0.0, 0.0]),
        ("u", [nothing, ask(2.5, 0.0), nothing], [0.0, 2.5, 0.0]),
        ("u", [nothing, ask(0.0, 13.0), nothing], [0.0, 0.0, 0.0]),
        ("u", [nothing, ask(1.0, 0.0), nothing], [0.0, 0.0, 0.0]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn fresh_ledger(tag: &str) -> FleetLedger {
        let server = sqlx::PgPool::connect(&crate::data::test_postgres_url())
            .await
            .unwrap();
        let name = format!("loanhost_fleet_{tag}_{}", std::process::id());
        for sql in [
            format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            format!("CREATE DATABASE {name}"),
        ] {
            sqlx::query(&sql).execute(&server).await.unwrap();
        }
        let mut url = url::Url::parse(&crate::data::test_postgres_url()).unwrap();
        url.set_path(&name);
        let db = Db::open(url.as_str()).await.unwrap();
        FleetLedger::of(&db).expect("PostgreSQL")
    }

    #[tokio::test]
    async fn leases_come_out_of_one_bucket_and_debts_go_below_zero() {
        // Arrange: a fresh PostgreSQL database.
        let ledger = fresh_ledger("lease").await;

        // Act / Assert: each step grants what `ledger_steps` says.
        for (step, (caller, asked, granted)) in ledger_steps().into_iter().enumerate() {
            let got = ledger.lease(caller, asked).await.unwrap();
            assert_eq!(got, granted, "step {step}: {caller} asked {asked:?}");
        }
    }

    #[tokio::test]
    async fn hosts_are_counted_while_they_say_they_are_alive() {
        // Arrange
        let ledger = fresh_ledger("hosts").await;

        // Act
        let first = ledger.heartbeat("a").await.unwrap();
        let second = ledger.heartbeat("b").await.unwrap();
        let again = ledger.heartbeat("a").await.unwrap();
        sqlx::query("UPDATE fleet_hosts SET seen = seen - interval '1 minute' WHERE host = 'b'")
            .execute(&ledger.pool)
            .await
            .unwrap();
        let without_b = ledger.heartbeat("a").await.unwrap();

        // Assert
        assert_eq!((first, second, again, without_b), (1, 2, 2, 1));
    }
}
