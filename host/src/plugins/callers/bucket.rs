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
    /// The caller skips a request that asks and owes nothing, as the SQL function does.
    pub(super) fn lease(&mut self, request: &LeaseRequest, whole: bool, now: Instant) -> f64 {
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
    /// Per caller and budget: the bucket, and the burst and refill it was last leased with.
    buckets: Mutex<HashMap<(String, usize), (Bucket, LeaseRequest)>>,
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
            buckets.retain(|_, (b, last)| {
                b.refill(last.burst, last.per_second, now);
                b.level < last.burst
            });
        }
        let mut granted = [0.0; 3];
        for (i, request) in parts.iter().enumerate() {
            // As `fleet_budget_lease`: nothing asked and nothing owed reads nothing.
            if request.want <= 0.0 && request.debt <= 0.0 {
                continue;
            }
            let start = if self.start_full { request.burst } else { 0.0 };
            let (bucket, last) = buckets
                .entry((caller.to_string(), i))
                .or_insert((Bucket::at(start, now), *request));
            *last = *request;
            granted[i] = bucket.lease(request, i == 0, now);
        }
        granted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_ledger_leases_as_the_database_does() {
        // The steps the SQL function is tested with (data::fleet_budgets), on a ledger in memory.
        let ledger = MemoryLedger::new(true);
        for (step, (caller, asked, granted)) in crate::data::fleet_budgets::ledger_steps()
            .into_iter()
            .enumerate()
        {
            let got = ledger.lease(caller, asked);
            assert_eq!(got, granted, "step {step}: {caller} asked {asked:?}");
        }
    }

    #[test]
    fn an_empty_ledger_grants_only_what_has_refilled() {
        let ledger = MemoryLedger::new(false);
        let nothing = LeaseRequest {
            burst: 10.0,
            per_second: 0.0,
            want: 0.0,
            debt: 0.0,
        };
        let calls = LeaseRequest {
            want: 5.0,
            ..nothing
        };
        let first = ledger.lease("u", [calls, nothing, nothing]);
        assert_eq!(first, [0.0, 0.0, 0.0]);
    }
}
