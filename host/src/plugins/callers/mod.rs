//! Per-caller budgets: how many tool calls one caller may have in flight, how many calls per
//! minute, and how much plugin time (wall time of their calls, database time included) and
//! result bytes per minute. One caller's flood is refused here, before it takes an instance
//! slot or a database connection from everyone else. On a fleet's PostgreSQL the per-minute
//! budgets are the fleet's: each host spends slices it leases from one ledger (`fleet`).

mod bucket;
mod fleet;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bucket::Bucket;
pub use bucket::MemoryLedger;
pub use fleet::Fleet;

use crate::data::fleet_budgets::LeaseRequest;

/// The budgets every caller gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallerLimits {
    /// Tool calls one caller may have in flight at once.
    pub max_concurrent: u32,
    /// Tool calls per minute (refilled continuously; bursts of ten seconds' worth).
    pub calls_per_minute: u32,
    /// Seconds of plugin time per minute (refilled continuously; bursts of ten seconds'
    /// worth).
    pub plugin_seconds_per_minute: u32,
    /// MiB of tool results per minute (refilled continuously; bursts of ten seconds' worth).
    pub result_mib_per_minute: u32,
}

impl Default for CallerLimits {
    fn default() -> Self {
        CallerLimits {
            max_concurrent: 4,
            calls_per_minute: 600,
            plugin_seconds_per_minute: 60,
            result_mib_per_minute: 24,
        }
    }
}

/// Why a caller's call was not admitted; `retry_after` is when it may be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Too many calls in flight.
    #[error("too many tool calls in flight for this caller (at most {0} at once)")]
    Concurrent(u32),
    /// The calls-per-minute budget is spent.
    #[error("the caller's budget of {0} tool calls per minute is spent")]
    Rate(u32),
    /// The plugin-time budget is spent.
    #[error("the caller's budget of {0} s of plugin time per minute is spent")]
    Time(u32),
    /// The result-bytes budget is spent.
    #[error("the caller's budget of {0} MiB of results per minute is spent")]
    Results(u32),
}

impl Refusal {
    /// Seconds after which a retry may be admitted (at least 1).
    pub fn retry_after(&self, limits: &CallerLimits) -> u64 {
        match self {
            Refusal::Concurrent(_) => 1,
            Refusal::Rate(_) => (60 / limits.calls_per_minute.max(1) as u64).max(1),
            Refusal::Time(_) | Refusal::Results(_) => 5,
        }
    }
}

/// The bucket size for a budget of `per_minute`: ten seconds' worth, at least one.
fn burst(per_minute: f64) -> f64 {
    (per_minute / BURST_DIVISOR).max(1.0)
}

/// The three per-minute budgets, in the ledger's order: calls, plugin seconds, result MiB.
const CALLS: usize = 0;
const TIME: usize = 1;
const RESULTS: usize = 2;

/// Whether what is left of budget `i` (a bucket's level, or a fleet's slices held here) admits
/// no call: a call takes one whole call, and plugin time and result bytes while any is left.
fn spent(i: usize, left: f64) -> bool {
    if i == CALLS {
        left < 1.0
    } else {
        left <= 0.0
    }
}

/// A host leases a tenth of a budget's burst at a time (a whole call at least): the fleet's
/// error, one slice per host (decision 0048).
const SLICE_DIVISOR: f64 = 10.0;

impl CallerLimits {
    fn per_minute(&self) -> [f64; 3] {
        [
            self.calls_per_minute as f64,
            self.plugin_seconds_per_minute as f64,
            self.result_mib_per_minute as f64,
        ]
    }

    /// The slice of budget `i` a host leases at a time.
    pub fn slice(&self, i: usize) -> f64 {
        let slice = burst(self.per_minute()[i]) / SLICE_DIVISOR;
        if i == CALLS {
            slice.floor().max(1.0)
        } else {
            slice
        }
    }

    /// The refusal when budget `i` is spent.
    fn refusal(&self, i: usize) -> Refusal {
        match i {
            CALLS => Refusal::Rate(self.calls_per_minute),
            TIME => Refusal::Time(self.plugin_seconds_per_minute),
            _ => Refusal::Results(self.result_mib_per_minute),
        }
    }
}

#[derive(Debug)]
struct CallerState {
    in_flight: u32,
    /// This host's buckets (a single host's budgets; on a fleet, never tighter than the
    /// fleet's).
    buckets: [Bucket; 3],
    /// What is left of the slices leased from the fleet (below zero: spent beyond them, owed
    /// at the next lease). Unused without a fleet.
    leased: [f64; 3],
    /// Held while this caller's next slices are leased: one lease at a time per caller.
    leasing: Arc<tokio::sync::Mutex<()>>,
    statements: Arc<tokio::sync::Semaphore>,
}

/// Why a call could not be admitted at once.
enum Blocked {
    /// A budget is spent.
    Refused(Refusal),
    /// The fleet's slice of budget `.0` is spent here: lease more (holding `.1`), then try
    /// again.
    Lease(usize, Arc<tokio::sync::Mutex<()>>),
}

/// Callers' budgets, shared by every request.
#[derive(Debug)]
pub struct CallerBudgets {
    limits: CallerLimits,
    fleet: Option<Arc<Fleet>>,
    callers: Mutex<HashMap<String, CallerState>>,
}

/// Callers remembered before idle, full entries are forgotten.
const PRUNE_ABOVE: usize = 10_000;
/// Database statements one caller may have running at once, over all their calls: a caller
/// whose plugin floods the database holds one connection and one core, not all of them.
pub const STATEMENTS_PER_CALLER: usize = 1;
/// The buckets hold a sixth of a minute's budget (ten seconds' worth): a burst is short.
const BURST_DIVISOR: f64 = 6.0;

impl CallerBudgets {
    /// Budgets with these limits, this host's own.
    pub fn new(limits: CallerLimits) -> Arc<CallerBudgets> {
        Self::with_fleet(limits, None)
    }

    /// Budgets with these limits; with `fleet`, the per-minute ones are the fleet's.
    pub fn with_fleet(limits: CallerLimits, fleet: Option<Arc<Fleet>>) -> Arc<CallerBudgets> {
        Arc::new(CallerBudgets {
            limits,
            fleet,
            callers: Mutex::new(HashMap::new()),
        })
    }

    /// The limits.
    pub fn limits(&self) -> &CallerLimits {
        &self.limits
    }

    /// The fleet whose budgets these are, if any.
    pub fn fleet(&self) -> Option<&Arc<Fleet>> {
        self.fleet.as_ref()
    }

    /// Admits one call of `user`, or says why not. The ticket gives the slot back and charges
    /// the call's wall time when dropped. On a fleet, a call waits for the ledger only when
    /// this host's slice of a budget is spent (one call in a slice's worth).
    pub async fn admit(self: &Arc<Self>, user: &str) -> Result<Ticket, Refusal> {
        self.admit_as(user, true).await
    }

    /// Admits one request of `user` that is not a tool call (a list, a view read): charged one
    /// call of the calls-per-minute budget and, through its ticket, its reply's bytes; it takes
    /// no in-flight slot (it runs no plugin), but is refused while any budget is spent.
    pub async fn admit_request(self: &Arc<Self>, user: &str) -> Result<Ticket, Refusal> {
        self.admit_as(user, false).await
    }

    async fn admit_as(self: &Arc<Self>, user: &str, slot: bool) -> Result<Ticket, Refusal> {
        let leasing = match self.try_admit(user, slot) {
            Ok(ticket) => return Ok(ticket),
            Err(Blocked::Refused(refusal)) => return Err(refusal),
            Err(Blocked::Lease(_, leasing)) => leasing,
        };
        let fleet = self.fleet.as_ref().expect("only a fleet's budgets lease");
        let _one_lease = leasing.lock().await;
        // Another call of this caller may have leased while this one waited.
        match self.try_admit(user, slot) {
            Err(Blocked::Lease(..)) => {}
            done => return done.map_err(|b| self.refusal_of(b)),
        }
        let request = self
            .lease_request(user, true)
            .expect("a caller blocked on a lease is remembered");
        let granted = fleet.lease(user, request).await;
        self.credit(user, granted);
        // A budget the fleet granted nothing of is spent across the fleet.
        self.try_admit(user, slot).map_err(|b| self.refusal_of(b))
    }

    fn refusal_of(&self, blocked: Blocked) -> Refusal {
        match blocked {
            Blocked::Refused(refusal) => refusal,
            Blocked::Lease(i, _) => self.limits.refusal(i),
        }
    }

    /// Admits the call from this host's buckets and the fleet's slices held here, or says
    /// what blocks it.
    fn try_admit(self: &Arc<Self>, user: &str, slot: bool) -> Result<Ticket, Blocked> {
        let now = Instant::now();
        let per_minute = self.limits.per_minute();
        let mut callers = self.callers.lock().expect("caller budgets lock");
        if callers.len() > PRUNE_ABOVE {
            callers.retain(|_, s| {
                s.in_flight > 0
                    || s.leased.iter().any(|l| *l < 0.0)
                    || (0..3).any(|i| s.buckets[i].level < burst(per_minute[i]))
            });
        }
        let state = callers
            .entry(user.to_string())
            .or_insert_with(|| CallerState {
                in_flight: 0,
                buckets: per_minute.map(|m| Bucket::at(burst(m), now)),
                leased: [0.0; 3],
                leasing: Arc::new(tokio::sync::Mutex::new(())),
                statements: Arc::new(tokio::sync::Semaphore::new(STATEMENTS_PER_CALLER)),
            });
        for (bucket, m) in state.buckets.iter_mut().zip(per_minute) {
            bucket.refill(burst(m), m / 60.0, now);
        }
        if slot && state.in_flight >= self.limits.max_concurrent {
            return Err(Blocked::Refused(Refusal::Concurrent(
                self.limits.max_concurrent,
            )));
        }
        if let Some(i) = (0..3).find(|&i| spent(i, state.buckets[i].level)) {
            return Err(Blocked::Refused(self.limits.refusal(i)));
        }
        if self.fleet.is_some() {
            if let Some(i) = (0..3).find(|&i| spent(i, state.leased[i])) {
                return Err(Blocked::Lease(i, state.leasing.clone()));
            }
            state.leased[CALLS] -= 1.0;
        }
        state.buckets[CALLS].level -= 1.0;
        state.in_flight += u32::from(slot);
        Ok(Ticket {
            budgets: self.clone(),
            user: user.to_string(),
            slot,
            started: now,
            statements: state.statements.clone(),
            result_bytes: 0,
            memory_bytes: 0,
            time_before: Duration::ZERO,
        })
    }

    /// What to ask the fleet for `user`: with `ask`, a slice of each budget spent here; and
    /// what was spent beyond the slices (moved into the request: the ledger is charged it).
    fn lease_request(&self, user: &str, ask: bool) -> Option<[LeaseRequest; 3]> {
        let per_minute = self.limits.per_minute();
        let mut callers = self.callers.lock().expect("caller budgets lock");
        let leased = &mut callers.get_mut(user)?.leased;
        Some(std::array::from_fn(|i| {
            let want = if ask && spent(i, leased[i]) {
                self.limits.slice(i)
            } else {
                0.0
            };
            let debt = (-leased[i]).max(0.0);
            leased[i] = leased[i].max(0.0);
            LeaseRequest {
                burst: burst(per_minute[i]),
                per_second: per_minute[i] / 60.0,
                want,
                debt,
            }
        }))
    }

    /// Charges the fleet's ledger what `user`'s calls on this host spent beyond their slices
    /// (a call's end does, when it ran past them), so the other hosts see it before this
    /// host's next lease.
    pub async fn settle(self: &Arc<Self>, user: &str) {
        let Some(fleet) = &self.fleet else { return };
        let leasing = {
            let callers = self.callers.lock().expect("caller budgets lock");
            match callers.get(user) {
                Some(state) => state.leasing.clone(),
                None => return,
            }
        };
        let _one_lease = leasing.lock().await;
        let Some(debts) = self.lease_request(user, false) else {
            return;
        };
        if debts.iter().any(|d| d.debt > 0.0) {
            let granted = fleet.lease(user, debts).await;
            self.credit(user, granted);
        }
    }

    /// Adds the slices the fleet granted `user`.
    fn credit(&self, user: &str, granted: [f64; 3]) {
        let mut callers = self.callers.lock().expect("caller budgets lock");
        if let Some(state) = callers.get_mut(user) {
            for (leased, g) in state.leased.iter_mut().zip(granted) {
                *leased += g;
            }
        }
    }

    /// Ends a call: gives its slot back and charges what it spent; whether this host now
    /// owes the fleet (it spent beyond its slices).
    fn release(
        &self,
        user: &str,
        slot: bool,
        spent: Duration,
        result_bytes: u64,
        memory_bytes: u64,
    ) -> bool {
        let time = spent.as_secs_f64() + memory_cost(memory_bytes).as_secs_f64();
        let results = result_bytes as f64 / (1024.0 * 1024.0);
        let mut callers = self.callers.lock().expect("caller budgets lock");
        if let Some(state) = callers.get_mut(user) {
            state.in_flight = state.in_flight.saturating_sub(u32::from(slot));
            // The buckets may go below zero: a long call or a large result is paid for
            // before the next call (on a fleet, charged to the ledger when the call ends:
            // `settle`).
            for (i, cost) in [(TIME, time), (RESULTS, results)] {
                state.buckets[i].level -= cost;
                if self.fleet.is_some() {
                    state.leased[i] -= cost;
                }
            }
            self.fleet.is_some() && state.leased.iter().any(|l| *l < 0.0)
        } else {
            false
        }
    }
}

/// An admitted call; dropping it ends the call.
#[derive(Debug)]
pub struct Ticket {
    budgets: Arc<CallerBudgets>,
    user: String,
    /// Whether it holds one of the caller's in-flight slots (a tool call does).
    slot: bool,
    started: Instant,
    /// The caller's statement slot (see [`STATEMENTS_PER_CALLER`]).
    pub statements: Arc<tokio::sync::Semaphore>,
    result_bytes: u64,
    memory_bytes: u64,
    /// Plugin time spent for the call before it was admitted (its instance made ahead).
    time_before: Duration,
}

impl Ticket {
    /// Charges `time` of plugin work done for the call outside its own run (its instance,
    /// made ahead of it) to the caller, on top of the call's wall time.
    pub fn charge_time(&mut self, time: Duration) {
        self.time_before += time;
    }

    /// Charges a result of `bytes` to the caller.
    pub fn charge_result(&mut self, bytes: u64) {
        self.result_bytes += bytes;
    }

    /// Charges `bytes` of linear memory the call was given (see [`memory_cost`]).
    pub fn charge_memory(&mut self, bytes: u64) {
        self.memory_bytes += bytes;
    }
}

/// Plugin time charged for linear memory a call was given: 20 ms per MiB (a 64 MiB call costs
/// as much as 1.28 s of running; a report's 2 MiB, 40 ms).
pub fn memory_cost(bytes: u64) -> Duration {
    Duration::from_micros(bytes * 20_000 / (1024 * 1024))
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let owed = self.budgets.release(
            &self.user,
            self.slot,
            self.started.elapsed() + self.time_before,
            self.result_bytes,
            self.memory_bytes,
        );
        // Outside a runtime the debt waits for this host's next lease of the caller's.
        if let (true, Ok(runtime)) = (owed, tokio::runtime::Handle::try_current()) {
            let budgets = self.budgets.clone();
            let user = std::mem::take(&mut self.user);
            runtime.spawn(async move { budgets.settle(&user).await });
        }
    }
}

#[cfg(test)]
mod tests;
