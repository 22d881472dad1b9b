//! Token buckets: one caller's budget on one host, and a ledger of them kept in memory that
//! leases as the fleet's PostgreSQL ledger does (`fleet_budget_lease`, migration 0022).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::data::fleet_budgets::LeaseRequest;

/// A token bucket: its level when it was last refilled.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bucket {
    pub(super) level: f64,
    updated: Instant,
}

impl Bucket {
    /// A bucket holding `level`.
    pub(super) fn at(level: f64, now: Instant) -> Bucket {
        Bucket {
            level,
            updated: now,
        }
    }

    /// Refills at `per_second`, up to `burst`.
    pub(super) fn refill(&mut self, burst: f64, per_second: f64, now: Instant) {
        let dt = now.saturating_duration_since(self.updated).as_secs_f64();
        self.level = (self.level + dt * per_second).min(burst);
        self.updated = self.updated.max(now);
    }

    /// The ledger's lease on this bucket: refills it, charges `debt` (which may take it below
    /// zero), then grants up to `want` of what is left, never below zero, whole when `whole`.
    pub(super) fn lease(&mut self, request: &LeaseRequest, whole: bool, now: Instant) -> f64 {
        if request.want <= 0.0 && request.debt <= 0.0 {
            return 0.0;
        }
        self.refill(request.burst, request.per_second, now);
        self.level -= request.debt.max(0.0);
        let mut grant = request.want.max(0.0).min(self.level).max(0.0);
        if whole {
            grant = grant.floor();
        }
        self.level -= grant;
        grant
    }
}

/// Callers' buckets held in memory, leased from as the fleet's ledger is: a host's own share
/// of every budget while the ledger cannot be read (starting empty: the share of the refill,
/// no burst), and, in tests, a fleet's ledger shared by several hosts (starting full, as the
/// database's buckets do).
#[derive(Debug)]
pub struct MemoryLedger {
    start_full: bool,
    buckets: Mutex<HashMap<(String, usize), (Bucket, f64)>>,
}

/// Buckets remembered before full ones are forgotten.
const PRUNE_ABOVE: usize = 30_000;

impl MemoryLedger {
    /// A ledger whose buckets start full (`start_full`) or empty.
    pub fn new(start_full: bool) -> MemoryLedger {
        MemoryLedger {
            start_full,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Charges each budget's debt and leases what is asked of `caller` (whole calls), as
    /// `fleet_budget_lease` does; what was granted of each.
    pub fn lease(&self, caller: &str, parts: [LeaseRequest; 3]) -> [f64; 3] {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().expect("memory ledger lock");
        if buckets.len() > PRUNE_ABOVE {
            buckets.retain(|_, (b, burst)| {
                b.refill(*burst, 0.0, now);
                b.level < *burst
            });
        }
        let mut granted = [0.0; 3];
        for (i, request) in parts.iter().enumerate() {
            if request.want <= 0.0 && request.debt <= 0.0 {
                continue;
            }
            let start = if self.start_full { request.burst } else { 0.0 };
            let (bucket, burst) = buckets
                .entry((caller.to_string(), i))
                .or_insert((Bucket::at(start, now), request.burst));
            *burst = request.burst;
            granted[i] = bucket.lease(request, i == 0, now);
        }
        granted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(want: f64, debt: f64) -> LeaseRequest {
        LeaseRequest {
            burst: 10.0,
            per_second: 0.0,
            want,
            debt,
        }
    }

    #[test]
    fn the_memory_ledger_leases_as_the_database_does() {
        // The same steps as data::fleet_budgets' test of `fleet_budget_lease`.
        let ledger = MemoryLedger::new(true);
        let nothing = ask(0.0, 0.0);
        let a = ledger.lease("u", [ask(4.0, 0.0), nothing, nothing]);
        let b = ledger.lease("u", [ask(4.0, 0.0), nothing, nothing]);
        let c = ledger.lease("u", [ask(4.5, 0.0), nothing, nothing]);
        let other = ledger.lease("v", [ask(4.0, 0.0), nothing, nothing]);
        let time = ledger.lease("u", [nothing, ask(2.5, 0.0), nothing]);
        let indebted = ledger.lease("u", [nothing, ask(0.0, 13.0), nothing]);
        let after = ledger.lease("u", [nothing, ask(1.0, 0.0), nothing]);
        assert_eq!((a[0], b[0], c[0]), (4.0, 4.0, 2.0));
        assert_eq!(other[0], 4.0);
        assert_eq!(time[1], 2.5);
        assert_eq!((indebted[1], after[1]), (0.0, 0.0));
    }

    #[test]
    fn an_empty_ledger_grants_only_what_has_refilled() {
        let ledger = MemoryLedger::new(false);
        let first = ledger.lease(
            "u",
            [
                LeaseRequest {
                    burst: 10.0,
                    per_second: 0.0,
                    want: 5.0,
                    debt: 0.0,
                },
                ask(0.0, 0.0),
                ask(0.0, 0.0),
            ],
        );
        assert_eq!(first, [0.0, 0.0, 0.0]);
    }
}
