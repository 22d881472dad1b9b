//! Running one plugin operation in a fresh `Store`: limits, wall-clock deadline, and the
//! mapping of traps to the reasons a caller is told.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use wasmtime::{Store, UpdateDeadline};

use super::bindings::{types::ToolError, Tool, ToolDescription, ToolPre};
use super::engine::{PluginEngine, EPOCH_TICK};
use super::memories::Memories;
use super::spare::{self, SpareSlot};
use super::state::{
    CallContext, CallLimiter, DataUsage, LimitHit, MemoryLimitExceeded, PluginState,
    SharedMemoryBudget,
};
use crate::clock::Clock;
use crate::plugins::catalog::manifest::Manifest;
use crate::plugins::limits::MAX_INSTANCES;

/// What to ask the plugin.
pub(crate) enum Op {
    Describe,
    Call(String),
}

/// What the plugin answered.
pub(crate) enum Answer {
    Described(ToolDescription),
    Called(Result<String, ToolError>),
}

/// Why an operation produced no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// The wall-clock deadline of the manifest passed.
    #[error("the plugin did not finish within its {0} ms deadline")]
    Timeout(u64),
    /// The guest grew memory past the manifest's limit.
    #[error("the plugin exceeded its memory limit of {0} MiB")]
    MemoryLimit(u32),
    /// The guest trapped (a panic, an unreachable, a host-import misuse).
    #[error("the plugin trapped: {0}")]
    Trap(String),
    /// The call spent one of its per-call budgets (queries, rows, bytes, database time).
    #[error("the plugin {}", .0.message)]
    Limit(LimitHit),
    /// The host-wide plugin memory budget was full: other calls hold it.
    #[error("the host's plugin memory is in use by other calls; try again shortly")]
    HostMemory,
    /// No instance slot became free in time.
    #[error("all {0} plugin instance slots stayed busy; try again shortly")]
    Busy(u32),
}

/// Extra wall time granted beyond the deadline before the host abandons a call that is
/// stuck in a host import (the guest itself is interrupted at the deadline).
const GRACE: Duration = Duration::from_millis(500);

/// Runs plugin operations: the engine, the instance permits, and the clock.
#[derive(Clone)]
pub(crate) struct Runner {
    pub engine: Arc<PluginEngine>,
    pub permits: Arc<Semaphore>,
    pub clock: Clock,
    pub reports: Option<crate::data::Reports>,
    /// Linear memory of all live stores together.
    pub memory: Arc<SharedMemoryBudget>,
    /// Longest a call waits for an instance slot.
    pub permit_wait: Duration,
    /// Plugin log lines, host-wide.
    pub log_budget: Arc<super::log_budget::LogBudget>,
    /// Record each call's stage marks ([`super::profile`]).
    pub profile: bool,
}

impl Runner {
    /// Instantiates the plugin in a fresh store and runs `op`. `image` is the component's
    /// data image in bytes ([`crate::plugins::Shape::image_memory`]), not charged as memory grown.
    pub async fn run(
        &self,
        pre: &ToolPre,
        manifest: &Arc<Manifest>,
        image: u64,
        call: Option<CallContext>,
        op: Op,
    ) -> Result<Answer, Failure> {
        self.run_measured(pre, manifest, image, call, op, None)
            .await
            .0
    }

    /// As [`Runner::run`], with what the call used of the `data` capability and how long
    /// instantiation and the guest's run took. An interpreter's call (`spare` is where its
    /// build's instances made ahead wait) takes the instance made ahead when there is one,
    /// and makes the next once it has its answer ([`super::spare`]).
    pub async fn run_measured(
        &self,
        pre: &ToolPre,
        manifest: &Arc<Manifest>,
        image: u64,
        call: Option<CallContext>,
        op: Op,
        spare: Option<&SpareSlot>,
    ) -> (Result<Answer, Failure>, DataUsage, Timing) {
        let caller = call
            .as_ref()
            .map(|c| c.identity.user_id.clone())
            .unwrap_or_default();
        let timeout_ms = manifest.limits.timeout_ms;
        // The component was compiled for the engine its image chose (`loader::load`).
        if Memories::of_image(image) != Memories::Guarded {
            let Some(permit) = self.permit(manifest).await else {
                return refused(Failure::Busy(MAX_INSTANCES));
            };
            // The call's deadline starts once it has its slot.
            let state = self.state(manifest, image, call, caller);
            let (outcome, store) =
                run_in_store(Start::Fresh(pre.clone(), state), op, timeout_ms).await;
            drop(store);
            drop(permit);
            return outcome;
        }
        let spare = spare.filter(|_| matches!(op, Op::Call(_)));
        let made = match spare {
            // The one being made after the build's last call, if no other call waits for it,
            // rather than a second instance made beside it.
            Some(slot) => slot.take_or_await(Duration::from_millis(timeout_ms)).await,
            None => None,
        };
        let (permit, start, made_ahead) = match made {
            Some(ready) => {
                let state = self.state(manifest, image, call, caller.clone());
                match spare::arm(ready, state, &caller) {
                    Ok(armed) => armed,
                    Err(f) => return refused(f),
                }
            }
            None => match self.permit(manifest).await {
                Some(permit) => {
                    let state = self.state(manifest, image, call, caller);
                    (permit, Start::Fresh(pre.clone(), state), None)
                }
                None => return refused(Failure::Busy(MAX_INSTANCES)),
            },
        };
        let next = spare.map(|slot| {
            let (runner, pre, manifest, slot) =
                (self.clone(), pre.clone(), manifest.clone(), slot.clone());
            Box::new(move || spare::claim(runner, pre, manifest, image, slot)) as NextClaim
        });
        let mut outcome = on_own_thread(permit, run_in_store(start, op, timeout_ms), next).await;
        outcome.2.made_ahead = made_ahead;
        outcome
    }

    /// One of the instance slots, waited for at most `permit_wait` (and the call's deadline).
    async fn permit(&self, manifest: &Manifest) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let wait = self
            .permit_wait
            .min(Duration::from_millis(manifest.limits.timeout_ms));
        tokio::time::timeout(wait, self.permits.clone().acquire_owned())
            .await
            .ok()
            .map(|p| p.expect("the permit semaphore is never closed"))
    }

    /// A fresh store state for one run of `manifest`'s plugin, its memory held for `caller`.
    pub(super) fn state(
        &self,
        manifest: &Arc<Manifest>,
        image: u64,
        call: Option<CallContext>,
        caller: String,
    ) -> PluginState {
        let limits = manifest.limits;
        PluginState {
            manifest: manifest.clone(),
            call,
            clock: self.clock,
            reports: self.reports.clone(),
            limiter: CallLimiter::new(limits.memory_mib, self.memory.clone(), caller)
                .with_image(image),
            deadline: Instant::now() + Duration::from_millis(limits.timeout_ms),
            timed_out: false,
            log_lines: 0,
            usage: DataUsage::default(),
            guest_ticks: 0,
            log_budget: self.log_budget.clone(),
            totals: None,
            profile: self
                .profile
                .then(|| super::profile::CallProfile::new(Instant::now())),
        }
    }
}

/// Runs `work` on a thread of its own from start to end, the instance `permit` held there. A
/// call of an interpreter's plugin runs for milliseconds and reads megabytes: on an async
/// worker, it would yield at every epoch tick and wait for its `data` import there, and
/// another worker could take it up, on a core whose caches hold none of it (on two cores,
/// a Python call through the server took a third longer than the same call in one thread).
/// Here it is polled on this thread only; if the caller goes away, it ends at its next tick
/// or import, as on a worker.
///
/// The outcome is handed back before the store is dropped: the reset of the pages an
/// interpreter's call dirtied (a tenth of a Python call) is then done on this thread while
/// the caller already has its answer, the instance `permit` still held until it is done;
/// and after that, `next` is run (the build's next instance made ahead, in the pool slot
/// just reset, which holds the pages this build's calls touch).
async fn on_own_thread(
    permit: tokio::sync::OwnedSemaphorePermit,
    work: impl std::future::Future<Output = (Outcome, Store<PluginState>)> + Send + 'static,
    next: Option<NextClaim>,
) -> Outcome {
    let runtime = tokio::runtime::Handle::current();
    // Dropped with this future: the work then stops where it next yields.
    let (_caller, gone) = tokio::sync::oneshot::channel::<()>();
    let (answer, answered) = tokio::sync::oneshot::channel::<Outcome>();
    let joined = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let faults = thread_minor_faults();
        let ran = runtime.block_on(async {
            tokio::select! {
                biased;
                _ = gone => None,
                ran = work => Some(ran),
            }
        });
        if let Some((mut outcome, mut store)) = ran {
            outcome.2.minor_faults = Some(thread_minor_faults().saturating_sub(faults));
            // The caller's share of the memory is theirs again with the answer, so that their
            // next call finds it free; when the share of stores being dropped is full, this
            // one is dropped before the answer.
            let store = store
                .data_mut()
                .limiter
                .set_aside(ANSWERED)
                .then_some(store);
            // Claimed before the answer, so that the caller's next call waits for it rather
            // than instantiating beside it.
            let next = next.and_then(|claim| claim());
            // A caller gone by now has no use for it.
            let _ = answer.send(outcome);
            // Its pool slot is free for the next instance, made ahead in it.
            drop(store);
            if let Some(next) = next {
                runtime.block_on(next);
            }
        }
    });
    match answered.await {
        Ok(outcome) => outcome,
        Err(_) => match joined.await {
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // The caller is still here, so only the runtime shutting down ends it early.
            Ok(()) | Err(_) => refused(Failure::Trap("the host is shutting down".into())),
        },
    }
}

/// The name the host-wide memory budget holds an answered store's memory under until the
/// store is dropped (`on_own_thread`): no caller's.
const ANSWERED: &str = "\u{0}answered";

/// Claims the making of a build's next instance, and gives what makes it ([`spare::claim`]).
type NextClaim = Box<dyn FnOnce() -> Option<spare::Next> + Send>;

/// Minor page faults of the calling thread so far (`getrusage(RUSAGE_THREAD)`).
fn thread_minor_faults() -> u64 {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed value it is handed.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
        usage
    };
    u64::try_from(usage.ru_minflt).unwrap_or(0)
}

/// What a run gives back: the answer or why not, the `data` capability's use, the timings.
type Outcome = (Result<Answer, Failure>, DataUsage, Timing);

/// The outcome of a run that did not start (or whose thread ended without an answer).
fn refused(f: Failure) -> Outcome {
    (Err(f), DataUsage::default(), Timing::default())
}

/// What a run starts from: a build to instantiate in a fresh store holding a state, or an
/// instance made ahead ([`super::spare`]) with the call's state put into its store.
// Made once a call and moved into its run, never held: a box would cost the call an allocation.
#[allow(clippy::large_enum_variant)]
pub(super) enum Start {
    Fresh(ToolPre, PluginState),
    Made(Store<PluginState>, Tool),
}

/// A fresh store for `state`, with its limits: memory and tables, the wall-clock deadline
/// checked at every epoch tick, and a long-running guest paced.
pub(super) fn new_store(engine: &wasmtime::Engine, state: PluginState) -> Store<PluginState> {
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    // Check the deadline at every epoch tick, yielding to the executor in between so a
    // spinning guest never holds a worker thread for its whole deadline.
    store.set_epoch_deadline(1);
    // A guest that keeps the CPU long is paced: after NICE_AFTER of running (epoch ticks
    // seen while in wasm, not time spent waiting on the database) it runs one tick, then
    // pauses, so a spinning plugin cannot take a worker thread from short calls.
    store.epoch_deadline_callback(move |mut ctx| {
        let state = ctx.data_mut();
        if Instant::now() >= state.deadline {
            state.timed_out = true;
            return Err(wasmtime::format_err!("deadline exceeded"));
        }
        state.guest_ticks += 1;
        let pause = pause_after(EPOCH_TICK * state.guest_ticks);
        Ok(UpdateDeadline::YieldCustom(
            1,
            match pause {
                None => Box::pin(tokio::task::yield_now()),
                Some(d) => Box::pin(tokio::time::sleep(d)),
            },
        ))
    });
    store
}

/// Runs `op` in the instance `start` gives (instantiated here when it is fresh), within the
/// deadline of `timeout_ms`. The store comes back with the outcome, for the caller to drop
/// (and so reset its instance's memory) when it suits.
async fn run_in_store(start: Start, op: Op, timeout_ms: u64) -> (Outcome, Store<PluginState>) {
    let timeout = Duration::from_millis(timeout_ms);
    // The instance, or the build to make it from.
    let (mut store, instance) = match start {
        Start::Fresh(pre, state) => (new_store(pre.engine(), state), Err(pre)),
        Start::Made(store, tool) => (store, Ok(tool)),
    };
    let mut timing = Timing::default();
    let timing_ref = &mut timing;
    let work = async {
        let tool = match instance {
            Ok(tool) => tool,
            Err(pre) => {
                let started = Instant::now();
                let tool = pre.instantiate(&mut store).await?;
                timing_ref.instantiate = started.elapsed();
                tool
            }
        };
        store.data_mut().mark("instantiated");
        let started = Instant::now();
        let _ran = RunClock(started, &mut timing_ref.run);
        match op {
            Op::Describe => tool.describe(&mut store).await.map(Answer::Described),
            Op::Call(args) => tool.call(&mut store, &args).await.map(Answer::Called),
        }
    };
    let outcome = tokio::time::timeout(timeout + GRACE + EPOCH_TICK, work).await;
    store.data_mut().mark("returned");
    timing.marks = store
        .data_mut()
        .profile
        .take()
        .map(super::profile::CallProfile::into_marks)
        .unwrap_or_default();
    let usage = std::mem::take(&mut store.data_mut().usage);
    let result = match outcome {
        Err(_elapsed) => Err(Failure::Timeout(timeout_ms)),
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => {
            let state = store.data();
            if let Some(hit) = e.downcast_ref::<LimitHit>() {
                Err(Failure::Limit(hit.clone()))
            } else if state.timed_out {
                Err(Failure::Timeout(timeout_ms))
            } else if state.limiter.host_memory_exhausted {
                Err(Failure::HostMemory)
            } else if state.limiter.memory_exceeded
                || e.downcast_ref::<MemoryLimitExceeded>().is_some()
            {
                Err(Failure::MemoryLimit(state.manifest.limits.memory_mib))
            } else {
                Err(Failure::Trap(describe_trap(&e)))
            }
        }
    };
    ((result, usage, timing), store)
}

/// How long a call spent being instantiated, and running (guest code and host imports).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Timing {
    /// Creating the instance in its fresh store (none when it was made ahead).
    pub instantiate: Duration,
    /// Creating the instance ahead of the call, when it was made ahead (`sandbox::spare`):
    /// charged to the caller's plugin time as the call's own instantiation is.
    pub made_ahead: Option<Duration>,
    /// The export's run, host imports included.
    pub run: Duration,
    /// The call's stage marks, when it was profiled.
    pub marks: Vec<super::profile::Mark>,
    /// Minor page faults of the thread the call ran on, when it ran on one thread of its
    /// own from start to end (an interpreter's plugin).
    pub minor_faults: Option<u64>,
}

/// Writes the time since its start into the slot when dropped (also when a call is cut off).
struct RunClock<'a>(Instant, &'a mut Duration);

impl Drop for RunClock<'_> {
    fn drop(&mut self) {
        *self.1 = self.0.elapsed();
    }
}

/// Guests that have run this long are paced (see [`pause_after`]).
pub(crate) const NICE_AFTER: Duration = Duration::from_millis(50);

/// How long a guest that has run for `ran` pauses at an epoch tick: nothing for the first
/// [`NICE_AFTER`], then three ticks' worth (a quarter of a core), seven (an eighth) after
/// 200 ms, fifteen after a second. Reports spend their time in the database, not in the
/// guest, so only runaway guests are slowed.
fn pause_after(ran: Duration) -> Option<Duration> {
    if ran < NICE_AFTER {
        None
    } else if ran < Duration::from_millis(200) {
        Some(EPOCH_TICK * 3)
    } else if ran < Duration::from_secs(1) {
        Some(EPOCH_TICK * 7)
    } else {
        Some(EPOCH_TICK * 15)
    }
}

/// A one-line description of a trap for logs (callers get only the code and a summary).
fn describe_trap(e: &wasmtime::Error) -> String {
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => trap.to_string(),
        None => format!("{e:#}")
            .lines()
            .next()
            .unwrap_or("unknown")
            .to_string(),
    }
}
