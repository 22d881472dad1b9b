//! Per-caller budgets: how many tool calls one caller may have in flight, how many calls per
//! minute, and how much plugin time (wall time of their calls, database time included) per
//! minute. One caller's flood is refused here, before it takes an instance slot or a database
//! connection from everyone else.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// A token bucket counting in `f64` units per minute.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    level: f64,
    updated: Instant,
}

impl Bucket {
    fn full(per_minute: f64, now: Instant) -> Bucket {
        Bucket {
            level: burst(per_minute),
            updated: now,
        }
    }

    /// Refills at `per_minute / 60` per second, up to a tenth-of-a-minute's burst.
    fn refill(&mut self, per_minute: f64, now: Instant) {
        let per_sec = per_minute / 60.0;
        let dt = now.saturating_duration_since(self.updated).as_secs_f64();
        self.level = (self.level + dt * per_sec).min(burst(per_minute));
        self.updated = now;
    }
}

#[derive(Debug)]
struct CallerState {
    in_flight: u32,
    calls: Bucket,
    time: Bucket,
    results: Bucket,
    statements: Arc<tokio::sync::Semaphore>,
}

/// Callers' budgets, shared by every request.
#[derive(Debug)]
pub struct CallerBudgets {
    limits: CallerLimits,
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
    /// Budgets with these limits.
    pub fn new(limits: CallerLimits) -> Arc<CallerBudgets> {
        Arc::new(CallerBudgets {
            limits,
            callers: Mutex::new(HashMap::new()),
        })
    }

    /// The limits.
    pub fn limits(&self) -> &CallerLimits {
        &self.limits
    }

    /// Admits one call of `user`, or says why not. The ticket gives the slot back and charges
    /// the call's wall time when dropped.
    pub fn admit(self: &Arc<Self>, user: &str) -> Result<Ticket, Refusal> {
        self.admit_as(user, true)
    }

    /// Admits one request of `user` that is not a tool call (a list, a view read): charged one
    /// call of the calls-per-minute budget and, through its ticket, its reply's bytes; it takes
    /// no in-flight slot (it runs no plugin), but is refused while any budget is spent.
    pub fn admit_request(self: &Arc<Self>, user: &str) -> Result<Ticket, Refusal> {
        self.admit_as(user, false)
    }

    fn admit_as(self: &Arc<Self>, user: &str, slot: bool) -> Result<Ticket, Refusal> {
        let now = Instant::now();
        let calls_cap = self.limits.calls_per_minute as f64;
        let time_cap = self.limits.plugin_seconds_per_minute as f64;
        let results_cap = self.limits.result_mib_per_minute as f64;
        let mut callers = self.callers.lock().expect("caller budgets lock");
        if callers.len() > PRUNE_ABOVE {
            callers.retain(|_, s| {
                s.in_flight > 0
                    || s.calls.level < burst(calls_cap)
                    || s.time.level < burst(time_cap)
                    || s.results.level < burst(results_cap)
            });
        }
        let state = callers
            .entry(user.to_string())
            .or_insert_with(|| CallerState {
                in_flight: 0,
                calls: Bucket::full(calls_cap, now),
                time: Bucket::full(time_cap, now),
                results: Bucket::full(results_cap, now),
                statements: Arc::new(tokio::sync::Semaphore::new(STATEMENTS_PER_CALLER)),
            });
        state.calls.refill(calls_cap, now);
        state.time.refill(time_cap, now);
        state.results.refill(results_cap, now);
        let statements = state.statements.clone();
        if slot && state.in_flight >= self.limits.max_concurrent {
            return Err(Refusal::Concurrent(self.limits.max_concurrent));
        }
        if state.calls.level < 1.0 {
            return Err(Refusal::Rate(self.limits.calls_per_minute));
        }
        if state.time.level <= 0.0 {
            return Err(Refusal::Time(self.limits.plugin_seconds_per_minute));
        }
        if state.results.level <= 0.0 {
            return Err(Refusal::Results(self.limits.result_mib_per_minute));
        }
        state.calls.level -= 1.0;
        state.in_flight += u32::from(slot);
        Ok(Ticket {
            budgets: self.clone(),
            user: user.to_string(),
            slot,
            started: now,
            statements,
            result_bytes: 0,
            memory_bytes: 0,
        })
    }

    fn release(
        &self,
        user: &str,
        slot: bool,
        spent: Duration,
        result_bytes: u64,
        memory_bytes: u64,
    ) {
        let mut callers = self.callers.lock().expect("caller budgets lock");
        if let Some(state) = callers.get_mut(user) {
            state.in_flight = state.in_flight.saturating_sub(u32::from(slot));
            // The buckets may go below zero: a long call or a large result is paid for
            // before the next call.
            state.time.level -= spent.as_secs_f64() + memory_cost(memory_bytes).as_secs_f64();
            state.results.level -= result_bytes as f64 / (1024.0 * 1024.0);
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
}

impl Ticket {
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
        self.budgets.release(
            &self.user,
            self.slot,
            self.started.elapsed(),
            self.result_bytes,
            self.memory_bytes,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_is_charged_as_time() {
        assert_eq!(memory_cost(64 * 1024 * 1024), Duration::from_millis(1280));
        let b = CallerBudgets::new(CallerLimits {
            plugin_seconds_per_minute: 6,
            ..Default::default()
        });
        let mut t = b.admit("a").unwrap();
        t.charge_memory(100 * 1024 * 1024);
        drop(t);
        assert_eq!(b.admit("a").unwrap_err(), Refusal::Time(6));
    }

    #[test]
    fn concurrency_is_per_caller() {
        let b = CallerBudgets::new(CallerLimits {
            max_concurrent: 2,
            ..Default::default()
        });
        let t1 = b.admit("a").unwrap();
        let _t2 = b.admit("a").unwrap();
        assert_eq!(b.admit("a").unwrap_err(), Refusal::Concurrent(2));
        let _other = b.admit("b").expect("another caller is not affected");
        drop(t1);
        assert!(b.admit("a").is_ok(), "a finished call frees its slot");
    }

    #[test]
    fn calls_per_minute_run_out() {
        let b = CallerBudgets::new(CallerLimits {
            calls_per_minute: 18,
            ..Default::default()
        });
        for _ in 0..3 {
            drop(b.admit("a").unwrap());
        }
        assert_eq!(b.admit("a").unwrap_err(), Refusal::Rate(18));
        assert!(b.admit("b").is_ok());
    }

    #[test]
    fn a_request_that_is_no_tool_call_spends_calls_and_result_bytes_but_no_slot() {
        let b = CallerBudgets::new(CallerLimits {
            max_concurrent: 1,
            calls_per_minute: 18,
            result_mib_per_minute: 12,
            ..Default::default()
        });
        let _call = b.admit("a").unwrap();
        let mut read = b
            .admit_request("a")
            .expect("a read needs no in-flight slot");
        read.charge_result(3 * 1024 * 1024);
        drop(read);
        assert_eq!(b.admit_request("a").unwrap_err(), Refusal::Results(12));
        let c = CallerBudgets::new(CallerLimits {
            calls_per_minute: 18,
            ..Default::default()
        });
        for _ in 0..3 {
            drop(c.admit_request("a").unwrap());
        }
        assert_eq!(c.admit("a").unwrap_err(), Refusal::Rate(18));
    }

    #[test]
    fn plugin_time_is_charged_when_the_call_ends() {
        let b = CallerBudgets::new(CallerLimits {
            plugin_seconds_per_minute: 6,
            ..Default::default()
        });
        let t = b.admit("a").unwrap();
        // Pretend the call ran for two seconds.
        b.release("a", true, Duration::from_secs(2), 0, 0);
        std::mem::forget(t);
        assert_eq!(b.admit("a").unwrap_err(), Refusal::Time(6));
    }
}
