//! The per-call store state: who is calling, what the plugin was granted, and the limits
//! that bound this one call. A fresh state (and `Store`) is made for every call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;

use crate::clock::Clock;
use crate::identity::Identity;
use crate::plugins::catalog::manifest::Manifest;
use crate::plugins::limits::MAX_TABLE_ELEMENTS;
use crate::plugins::limits::TABLE_ELEMENT_BYTES;

/// The call a store serves; absent while the host asks a plugin to `describe` itself.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The resolved caller.
    pub identity: Identity,
    /// A per-process call number, for log correlation.
    pub call_id: u64,
    /// The caller's statement slot: one statement at a time per caller.
    pub statements: Arc<tokio::sync::Semaphore>,
}

/// Store data of one plugin instance.
pub struct PluginState {
    /// The plugin's manifest (name, grants, limits).
    pub manifest: Arc<Manifest>,
    /// The call, or `None` during `describe`.
    pub call: Option<CallContext>,
    /// Today's date source.
    pub clock: Clock,
    /// The report store and its admission control (absent in `loanhost plugin check`).
    pub reports: Option<crate::data::Reports>,
    /// Memory and table limits; records whether a limit was hit.
    pub limiter: CallLimiter,
    /// When the call's wall-clock deadline passes.
    pub deadline: Instant,
    /// Set by the epoch callback when the deadline interrupted the guest.
    pub timed_out: bool,
    /// Log lines written so far in this call.
    pub log_lines: u32,
    /// What the call's `data` queries have spent so far.
    pub usage: DataUsage,
    /// Plugin log lines, host-wide.
    pub log_budget: Arc<super::log_budget::LogBudget>,
    /// Epoch ticks seen while the guest ran (its CPU time, roughly, in ticks).
    pub guest_ticks: u32,
    /// The totals of this call's last query whose groups were cut by their limit.
    pub totals: Option<CallTotals>,
    /// The call's stage marks, when the host profiles calls.
    pub profile: Option<super::profile::CallProfile>,
}

impl PluginState {
    /// Marks that the call reached `stage`, when it is profiled.
    pub fn mark(&mut self, stage: &str) {
        if let Some(p) = self.profile.as_mut() {
            p.mark(stage);
        }
    }
}

/// The row of totals a grouped query's statement appended when its groups were cut by their
/// limit (`query::Rows::totals`), with that query and the scope it was read in: the `data`
/// capability answers the same query without its keys from it, within the call
/// (`query::answer_from_totals`), rather than reading every row again.
#[derive(Debug, Clone)]
pub struct CallTotals {
    /// The grouped query.
    pub query: crate::data::query::Query,
    /// The caller's scope it was read in (`None`: an organisation-wide dataset).
    pub scope: Option<crate::data::scope::Scope>,
    /// Its keys (NULL) and aggregates over every group.
    pub row: Vec<crate::data::query::Value>,
}

impl CallTotals {
    /// The answer to `q`, read in `scope`, from these totals: only when `q` is their query
    /// without its keys (`query::answer_from_totals`) and `scope` equals the one they were
    /// read in (a caller's scope is resolved anew for every query, and may change mid-call).
    pub fn answer(
        &self,
        scope: &Option<crate::data::scope::Scope>,
        q: &crate::data::query::Query,
    ) -> Option<crate::data::query::Rows> {
        if &self.scope != scope {
            return None;
        }
        crate::data::query::answer_from_totals(&self.query, &self.row, q)
    }
}

/// What one call's `data` queries have spent, against the manifest's `[limits]`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DataUsage {
    /// Queries run (refused ones included).
    pub queries: u32,
    /// Of those, the ones answered from the totals of the call's cut groups, without a
    /// statement (`query::answer_from_totals`).
    pub from_totals: u32,
    /// Rows delivered to the guest.
    pub rows: u64,
    /// Bytes of decoded values delivered.
    pub bytes: u64,
    /// Database time spent.
    pub db_time: Duration,
    /// Of the rows, those the listing capability gave: each a loan's fields.
    pub listed: u64,
    /// The ids of the loans listed, in order, up to `MAX_AUDITED_LOANS` (for the audit line).
    pub listed_loans: Vec<String>,
    /// Of the rows, the people the `people` capability gave.
    pub people: u64,
}

/// Loan ids one call's audit line names at most (a call lists at most its `max_rows`).
pub const MAX_AUDITED_LOANS: usize = 1_000;

/// Raised (as a trap) when a call spends one of its budgets: the guest cannot catch it and
/// carry on. `timeout` says whether the caller is told `timeout:` rather than `internal:`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LimitHit {
    /// The budget is time (database time, the call's deadline).
    pub timeout: bool,
    /// What was spent, e.g. "ran more than its 16 data queries per call".
    pub message: String,
}

/// Linear memory of every live plugin store together, bounded host-wide, so that many calls
/// each within their own limit cannot add up to more than the host can hold; and no one
/// caller may hold more than a quarter of it, so the rest is always there for everyone else
/// (and one caller's calls cannot make the kernel hand out and take back more than that
/// much memory at once).
#[derive(Debug)]
pub struct SharedMemoryBudget {
    in_use: AtomicU64,
    max: u64,
    per_caller: std::sync::Mutex<std::collections::HashMap<String, u64>>,
    grown: std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

/// One caller may hold at most this fraction of the host-wide budget.
pub const CALLER_SHARE: u64 = 4;

impl SharedMemoryBudget {
    /// A budget of `max_mib` MiB for all plugin stores together.
    pub fn new(max_mib: u64) -> Arc<SharedMemoryBudget> {
        Arc::new(SharedMemoryBudget {
            in_use: AtomicU64::new(0),
            max: max_mib * 1024 * 1024,
            per_caller: Default::default(),
            grown: Default::default(),
        })
    }

    /// Bytes of linear memory live stores hold now.
    pub fn in_use(&self) -> u64 {
        self.in_use.load(Ordering::Relaxed)
    }

    /// Takes `bytes` for `caller` when the host and the caller's share allow it; `grown` of them
    /// are charged to the caller's time budget too: memory a call was given fresh, not the
    /// data image every instance of the plugin starts from (mapped copy-on-write: an
    /// interpreter's 12 MiB image costs a call only the pages it writes).
    fn try_take(&self, caller: &str, bytes: u64, grown: u64) -> bool {
        let mut per_caller = self.per_caller.lock().expect("memory budget lock");
        let held = per_caller.get(caller).copied().unwrap_or(0);
        if held + bytes > self.max / CALLER_SHARE {
            return false;
        }
        let took = self
            .in_use
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                (cur + bytes <= self.max).then_some(cur + bytes)
            })
            .is_ok();
        if took {
            per_caller.insert(caller.to_string(), held + bytes);
        }
        if took && grown > 0 {
            *self
                .grown
                .lock()
                .expect("memory budget lock")
                .entry(caller.to_string())
                .or_default() += grown;
        }
        took
    }

    /// Bytes of memory the caller's calls were given since the last time this was asked
    /// (charged to the caller's plugin-time budget: the kernel's work of handing out and
    /// taking back pages is CPU too).
    pub fn take_grown(&self, caller: &str) -> u64 {
        self.grown
            .lock()
            .expect("memory budget lock")
            .remove(caller)
            .unwrap_or(0)
    }

    /// Moves `bytes` held for `from` to `to`, `grown` of them charged to `to`'s time instead
    /// of `from`'s, when `to`'s share allows it (the host-wide total does not change). An
    /// instance made ahead of its call is so handed to the caller who takes it.
    fn hand_over(&self, from: &str, to: &str, bytes: u64, grown: u64) -> bool {
        let mut per_caller = self.per_caller.lock().expect("memory budget lock");
        let held = per_caller.get(to).copied().unwrap_or(0);
        if held + bytes > self.max / CALLER_SHARE {
            return false;
        }
        take_from(&mut per_caller, from, bytes);
        if bytes > 0 {
            per_caller.insert(to.to_string(), held + bytes);
        }
        drop(per_caller);
        if grown > 0 {
            let mut charged = self.grown.lock().expect("memory budget lock");
            take_from(&mut charged, from, grown);
            *charged.entry(to.to_string()).or_default() += grown;
        }
        true
    }

    fn give_back(&self, caller: &str, bytes: u64) {
        if bytes == 0 {
            return;
        }
        take_from(
            &mut self.per_caller.lock().expect("memory budget lock"),
            caller,
            bytes,
        );
        self.in_use.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// Takes `bytes` off what `held` counts for `name`, forgetting the name at nothing.
fn take_from(held: &mut std::collections::HashMap<String, u64>, name: &str, bytes: u64) {
    if let Some(theirs) = held.get_mut(name) {
        *theirs = theirs.saturating_sub(bytes);
        if *theirs == 0 {
            held.remove(name);
        }
    }
}

/// Bounds the linear memory of one store (all of its memories together, not each alone) and
/// its share of the host-wide budget, and remembers a refusal, so the host can report
/// "memory limit" rather than a bare trap. Gives its share back when the store is dropped.
#[derive(Debug)]
pub struct CallLimiter {
    max_memory_bytes: u64,
    used: u64,
    /// Of `used`, what was charged as fresh memory (not the data image's).
    grown: u64,
    shared: Arc<SharedMemoryBudget>,
    caller: String,
    /// Set when a memory grow past the limit was refused.
    pub memory_exceeded: bool,
    /// Set when the host-wide budget refused a grow that the call's own limit allowed.
    pub host_memory_exhausted: bool,
    /// Bytes of initial memory still to come that the component's data image covers: held
    /// against the budgets but not charged to the caller as growth.
    image_left: u64,
}

impl CallLimiter {
    /// A limiter allowing `memory_mib` MiB of linear memory, drawn from `shared` on behalf
    /// of `caller` (empty while a plugin is loaded).
    pub fn new(memory_mib: u32, shared: Arc<SharedMemoryBudget>, caller: String) -> Self {
        CallLimiter {
            max_memory_bytes: memory_mib as u64 * 1024 * 1024,
            used: 0,
            grown: 0,
            shared,
            caller,
            memory_exceeded: false,
            host_memory_exhausted: false,
            image_left: 0,
        }
    }

    /// The component's data image (see [`crate::plugins::Shape::image_memory`]): that much of the
    /// memory it is created with is not charged as growth.
    pub fn with_image(mut self, bytes: u64) -> Self {
        self.image_left = bytes;
        self
    }

    /// Holds the store's memory for `caller` from now on (an instance made ahead, taken by
    /// a call): what it holds moves to `caller`'s share, and what of it was fresh memory to
    /// `caller`'s time. `false`, and nothing moved, when `caller`'s share cannot take it.
    pub fn hand_to(&mut self, caller: &str) -> bool {
        self.move_to(caller, self.grown)
    }

    /// Holds the store's memory under `name` from now on, its caller's share free again (a
    /// store answered, to be dropped once its caller has the answer); what the call was
    /// given fresh stays charged to its caller. `false`, and nothing moved, when `name`'s
    /// share cannot take it.
    pub fn set_aside(&mut self, name: &str) -> bool {
        self.move_to(name, 0)
    }

    fn move_to(&mut self, name: &str, grown: u64) -> bool {
        if !self.shared.hand_over(&self.caller, name, self.used, grown) {
            return false;
        }
        self.caller = name.to_string();
        true
    }
}

impl Drop for CallLimiter {
    fn drop(&mut self) {
        self.shared.give_back(&self.caller, self.used);
    }
}

/// Error raised (as a trap) when the guest grows memory past its limit.
#[derive(Debug, thiserror::Error)]
#[error("memory limit exceeded")]
pub struct MemoryLimitExceeded;

impl ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // A new memory arrives with current = 0 and desired = its initial size, so the sum
        // covers every memory of the store.
        let delta = desired.saturating_sub(current) as u64;
        if self.used + delta > self.max_memory_bytes {
            self.memory_exceeded = true;
            return Err(wasmtime::Error::new(MemoryLimitExceeded));
        }
        // `current` is 0 when a memory is created with its initial size: the part of it that
        // the component's data image covers is held against the budgets but not charged as
        // growth; zeroed pages beyond it are, as memory grown later is.
        let image = if current == 0 {
            delta.min(self.image_left)
        } else {
            0
        };
        if !self.shared.try_take(&self.caller, delta, delta - image) {
            self.host_memory_exhausted = true;
            return Err(wasmtime::Error::new(MemoryLimitExceeded));
        }
        self.used += delta;
        self.grown += delta - image;
        self.image_left -= image;
        Ok(true)
    }

    /// A table's elements are memory like any other: charged (at [`TABLE_ELEMENT_BYTES`] each)
    /// to the call's `memory_mib` and the host-wide budget, and as fresh memory to the
    /// caller's time, from the moment a table is created (current = 0, desired = its initial
    /// size) through every `table.grow`.
    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        let delta = desired.saturating_sub(current) as u64 * TABLE_ELEMENT_BYTES;
        if self.used + delta > self.max_memory_bytes {
            self.memory_exceeded = true;
            return Err(wasmtime::Error::new(MemoryLimitExceeded));
        }
        if !self.shared.try_take(&self.caller, delta, delta) {
            self.host_memory_exhausted = true;
            return Err(wasmtime::Error::new(MemoryLimitExceeded));
        }
        self.used += delta;
        self.grown += delta;
        Ok(true)
    }
}

#[cfg(test)]
mod tests;
