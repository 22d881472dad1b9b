//! A fleet's budgets (decision 0048): the ledger every host on one PostgreSQL leases slices of
//! a caller's budgets from, the hosts it counts alive, and the share of each budget a host
//! keeps to itself while the ledger cannot be read.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::bucket::MemoryLedger;
use crate::data::fleet_budgets::{FleetLedger, LeaseRequest};
use crate::telemetry::Metrics;

/// Longest a call waits for a lease before its host reads the ledger as lost.
pub const LEASE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a host that lost the ledger leases from its own share before it tries again.
pub const OUTAGE_RETRY: Duration = Duration::from_secs(5);
/// How often a host says it is alive (well within `HOST_SEEN_WITHIN`).
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(10);

/// Where a fleet's leases come from.
#[derive(Debug)]
enum Primary {
    /// The fleet's database.
    Postgres(FleetLedger),
    /// A ledger in memory shared by the hosts of a test.
    #[cfg(test)]
    Memory(Arc<MemoryLedger>),
    /// A ledger that cannot be read (a test's lost database).
    #[cfg(test)]
    Unreachable,
}

/// A host's part in a fleet's budgets: its ledger, the hosts alive, and its own share.
pub struct Fleet {
    primary: Primary,
    host: String,
    hosts: AtomicU32,
    /// This host's share of every budget (a `1 / hosts` part), leased from while the ledger
    /// cannot be read; it starts empty, so a lost ledger never adds a burst.
    own: MemoryLedger,
    /// Until when the ledger is taken as lost.
    down_until: Mutex<Option<Instant>>,
    /// Where leases are counted (`loanhost_fleet_leases_total`).
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("host", &self.host)
            .field("hosts", &self.hosts())
            .field("lost", &self.is_down())
            .finish_non_exhaustive()
    }
}

impl Fleet {
    fn with(primary: Primary, hosts: u32, metrics: Arc<Metrics>) -> Fleet {
        Fleet {
            primary,
            host: host_id(),
            hosts: AtomicU32::new(hosts.max(1)),
            own: MemoryLedger::new(false),
            down_until: Mutex::new(None),
            metrics,
        }
    }

    /// The fleet of the hosts on `ledger`'s database: this host says it is alive (the
    /// ledger's first read, before any call is admitted), then every `HEARTBEAT_EVERY`.
    /// Leases are counted in `metrics`.
    pub async fn join(
        ledger: FleetLedger,
        metrics: Arc<Metrics>,
    ) -> Result<Arc<Fleet>, crate::data::DbError> {
        let fleet = Arc::new(Fleet::with(Primary::Postgres(ledger.clone()), 1, metrics));
        let alive = ledger.heartbeat(&fleet.host).await?;
        fleet.hosts.store(alive, Ordering::Relaxed);
        tracing::info!(
            host = %fleet.host,
            hosts = alive,
            "per-caller budgets are the fleet's (leased from PostgreSQL)"
        );
        let weak = Arc::downgrade(&fleet);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT_EVERY).await;
                let Some(fleet) = weak.upgrade() else { return };
                match tokio::time::timeout(LEASE_TIMEOUT, ledger.heartbeat(&fleet.host)).await {
                    Ok(Ok(alive)) => fleet.hosts.store(alive, Ordering::Relaxed),
                    Ok(Err(e)) => tracing::warn!(error = %e, "the fleet's host list cannot be written; the last count of hosts is kept"),
                    Err(_) => tracing::warn!("the fleet's host list did not answer within {LEASE_TIMEOUT:?}; the last count of hosts is kept"),
                }
            }
        });
        Ok(fleet)
    }

    /// A fleet whose ledger is `ledger`, in memory, shared by the hosts of a test; `hosts`
    /// alive.
    #[cfg(test)]
    pub(super) fn in_memory(ledger: Arc<MemoryLedger>, hosts: u32) -> Arc<Fleet> {
        Arc::new(Fleet::with(Primary::Memory(ledger), hosts, Arc::default()))
    }

    /// A fleet whose ledger cannot be read, with `hosts` alive.
    #[cfg(test)]
    pub(super) fn unreachable(hosts: u32) -> Arc<Fleet> {
        Arc::new(Fleet::with(Primary::Unreachable, hosts, Arc::default()))
    }

    /// Where its leases are counted.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The hosts counted alive when this host last asked (at least 1).
    pub fn hosts(&self) -> u32 {
        self.hosts.load(Ordering::Relaxed)
    }

    /// Charges the debts and leases what is asked of `caller`: from the fleet's ledger, or,
    /// while it cannot be read, from this host's share of each budget (`1 / hosts` of its
    /// burst and refill), so the fleet grants no more than its budget either way.
    pub async fn lease(&self, caller: &str, parts: [LeaseRequest; 3]) -> [f64; 3] {
        if !self.is_down() {
            match self.lease_primary(caller, parts).await {
                Ok(granted) => {
                    Metrics::count(&self.metrics.fleet_leases, "ok");
                    if self.down_until.lock().expect("fleet lock").take().is_some() {
                        tracing::info!("the fleet's budget ledger answers again");
                    }
                    return granted;
                }
                Err(e) => {
                    Metrics::count(&self.metrics.fleet_leases, "lost");
                    *self.down_until.lock().expect("fleet lock") =
                        Some(Instant::now() + OUTAGE_RETRY);
                    tracing::warn!(
                        error = %e,
                        hosts = self.hosts(),
                        "the fleet's budget ledger cannot be read: each caller gets this host's share of their budgets until it can"
                    );
                }
            }
        } else {
            Metrics::count(&self.metrics.fleet_leases, "share");
        }
        self.own.lease(caller, share(parts, self.hosts()))
    }

    /// Whether the ledger was lost less than [`OUTAGE_RETRY`] ago (after that, the next
    /// lease tries it again).
    fn is_down(&self) -> bool {
        let down = self.down_until.lock().expect("fleet lock");
        matches!(*down, Some(until) if Instant::now() < until)
    }

    async fn lease_primary(
        &self,
        caller: &str,
        parts: [LeaseRequest; 3],
    ) -> Result<[f64; 3], String> {
        match &self.primary {
            Primary::Postgres(ledger) => {
                match tokio::time::timeout(LEASE_TIMEOUT, ledger.lease(caller, parts)).await {
                    Ok(Ok(granted)) => Ok(granted),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!("no answer within {LEASE_TIMEOUT:?}")),
                }
            }
            #[cfg(test)]
            Primary::Memory(ledger) => Ok(ledger.lease(caller, parts)),
            #[cfg(test)]
            Primary::Unreachable => Err("unreachable (test)".to_string()),
        }
    }
}

/// One host's share of a fleet of `hosts`: a `1 / hosts` part of each budget's burst and
/// refill (what it asks and owes unchanged).
pub(super) fn share(parts: [LeaseRequest; 3], hosts: u32) -> [LeaseRequest; 3] {
    let hosts = f64::from(hosts.max(1));
    parts.map(|p| LeaseRequest {
        burst: p.burst / hosts,
        per_second: p.per_second / hosts,
        ..p
    })
}

/// This process's name in the fleet's host list: random, so two hosts never share one.
fn host_id() -> String {
    let bytes: [u8; 12] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
