//! An interpreter plugin's next instance, made ahead of its call: once a call has its answer
//! and its store is dropped, the thread it ran on instantiates the build once more, in a fresh
//! store of its own and in the pool slot just reset, and leaves it here for the next call,
//! which takes it (or waits for it while it is made) instead of instantiating (a third of a
//! millisecond of a Python call). No call has run in it: the instance has only
//! been created, with no caller in its store, and the call that takes it is attached to it
//! just before its export runs (`docs/decisions/0050-interpreter-instances-made-ahead.md`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;
use wasmtime::Store;

use super::bindings::{Tool, ToolPre};
use super::invoke::{new_store, Failure, Runner, Start};
use super::state::PluginState;
use crate::plugins::catalog::manifest::Manifest;
use crate::plugins::limits::MAX_INSTANCES;

/// The name the host-wide memory budget holds a made-ahead instance's memory under until a
/// call takes it: all of them together within one caller's share, and the instance slots
/// only while half of them are free, so that instances waiting never stand in a call's way.
pub(crate) const NOBODY: &str = "\u{0}made ahead";

/// An instance made ahead, in its store, with the instance slot it holds.
pub(crate) struct Ready {
    /// Its store: no call attached yet, its memory held for [`NOBODY`].
    pub store: Store<PluginState>,
    /// The instance.
    pub tool: Tool,
    /// The instance slot it takes while it waits and while its call runs.
    pub permit: OwnedSemaphorePermit,
    /// How long it took to make: charged to the caller of the call that takes it.
    pub made_in: Duration,
}

/// At most one thing made ahead, and when it was left there: for instances, one build's (it
/// goes with the build: a build swapped out takes its instance with it). While one is being
/// made, one taker may wait for it: a caller's next call so takes the instance made in the
/// pool slot its last call used (warm, and no second slot's pages mapped for the same build),
/// and calls that overlap instantiate for themselves rather than queue for one instance.
pub(crate) struct Slot<T> {
    state: Mutex<SlotState<T>>,
    changed: tokio::sync::Notify,
}

struct SlotState<T> {
    /// What waits, and since when.
    value: Option<(Instant, T)>,
    /// One is being made.
    making: bool,
    /// A taker waits for the one being made.
    awaited: bool,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot {
            state: Mutex::new(SlotState {
                value: None,
                making: false,
                awaited: false,
            }),
            changed: tokio::sync::Notify::new(),
        }
    }
}

/// One thing made ahead is dropped rather than used once it has waited this long: an
/// instance that no call takes holds its slot and its image's memory for no one.
pub const KEPT_FOR: Duration = Duration::from_secs(60);

impl<T> Slot<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState<T>> {
        self.state.lock().expect("made-ahead slot lock")
    }

    /// What is waiting, if it has waited less than [`KEPT_FOR`]; a stale one is dropped
    /// here, outside the lock.
    pub fn take(&self) -> Option<T> {
        let (left, value) = self.lock().value.take()?;
        (left.elapsed() < KEPT_FOR).then_some(value)
    }

    /// What is waiting; or, while one is being made and no other taker waits for it, that
    /// one once it is made, waited for at most `bound`. `None`: nothing for this taker.
    pub async fn take_or_await(&self, bound: Duration) -> Option<T> {
        let changed = self.changed.notified();
        tokio::pin!(changed);
        // Registered before the state is read, so a change between the two is not missed.
        changed.as_mut().enable();
        {
            let mut state = self.lock();
            if state.value.is_some() || !state.making || state.awaited {
                drop(state);
                return self.take();
            }
            state.awaited = true;
        }
        let _ = tokio::time::timeout(bound, changed).await;
        self.lock().awaited = false;
        self.take()
    }

    /// What is waiting, if it has waited [`KEPT_FOR`] or more.
    fn take_stale(&self) -> Option<T> {
        let mut state = self.lock();
        if state.value.as_ref()?.0.elapsed() < KEPT_FOR {
            return None;
        }
        state.value.take().map(|(_, value)| value)
    }

    /// Claims the making of the next one: `false` when one waits or is being made already.
    /// A claim ends with [`Slot::put_at`] or [`Slot::abandon`].
    fn begin_making(&self) -> bool {
        let mut state = self.lock();
        if state.value.is_some() || state.making {
            return false;
        }
        state.making = true;
        true
    }

    /// Ends a claim without leaving anything: a waiting taker goes on without.
    fn abandon(&self) {
        self.lock().making = false;
        self.changed.notify_waiters();
    }

    /// Leaves `value` for the next taker, as left at `at`, and ends the claim; when another
    /// was left meanwhile, `value` is dropped instead (outside the lock).
    fn put_at(&self, at: Instant, value: T) {
        let mut state = self.lock();
        state.making = false;
        let extra = match state.value {
            None => {
                state.value = Some((at, value));
                None
            }
            Some(_) => Some(value),
        };
        drop(state);
        self.changed.notify_waiters();
        drop(extra);
    }
}

/// The slot one build's instances made ahead wait in, shared by its clones.
pub(crate) type SpareSlot = Arc<Slot<Ready>>;

/// Whether the instance slots allow one more instance made ahead: more than half of them
/// are free (`available` of [`MAX_INSTANCES`]), so that one waiting never stands in a call's
/// way.
fn slots_allow(available: usize) -> bool {
    available > MAX_INSTANCES as usize / 2
}

/// A claim on a slot ([`Slot::begin_making`]): it ends by leaving what was made
/// ([`Claim::leave`]) or, dropped, without leaving anything, however the making stopped (or
/// never started: a future dropped unpolled drops its claim).
struct Claim(Option<SpareSlot>);

impl Claim {
    /// Leaves `ready` in the claimed slot, which ends the claim; the slot, for what follows.
    fn leave(mut self, ready: Ready) -> SpareSlot {
        let slot = self.0.take().expect("a claim is left once");
        slot.put_at(Instant::now(), ready);
        slot
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            slot.abandon();
        }
    }
}

/// Puts `state` (a call's, its memory to be held for `caller`) into the store of the instance
/// made ahead: the call's permit, where its run starts, and how long the instance took to make.
/// The instance's memory moves to `caller`'s share; when that share is full the call is
/// refused as an instantiation for it would have been.
pub(super) fn arm(
    ready: Ready,
    state: PluginState,
    caller: &str,
) -> Result<(OwnedSemaphorePermit, Start, Option<Duration>), Failure> {
    let Ready {
        mut store,
        tool,
        permit,
        made_in,
    } = ready;
    let mut made = std::mem::replace(store.data_mut(), state);
    if !made.limiter.hand_to(caller) {
        return Err(Failure::HostMemory);
    }
    // The store's limiter is the one that holds its memory; the call's own, holding
    // nothing, goes with what the store held before.
    std::mem::swap(&mut store.data_mut().limiter, &mut made.limiter);
    // The epochs that passed while it waited are not the call's.
    store.set_epoch_deadline(1);
    Ok((permit, Start::Made(store, tool), Some(made_in)))
}

/// What makes the build's next instance, once the call in hand is answered and its store
/// dropped (so that the instance is made in the pool slot that store leaves).
pub(super) type Next = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Claims the making of the build's next instance ahead of its call, when none is waiting
/// or being made in `slot` and more than half the instance slots are free: from now on, a
/// call that comes for one waits for it rather than instantiating beside it. The claim is
/// made before the call in hand is answered; the making, by the future returned, after.
pub(super) fn claim(
    runner: Runner,
    pre: ToolPre,
    manifest: std::sync::Arc<Manifest>,
    image: u64,
    slot: SpareSlot,
) -> Option<Next> {
    if !slots_allow(runner.permits.available_permits()) || !slot.begin_making() {
        return None;
    }
    let claim = Claim(Some(slot));
    Some(Box::pin(make(runner, pre, manifest, image, claim)))
}

/// Makes the instance `claim` is for and leaves it in its slot; dropped after [`KEPT_FOR`]
/// if no call takes it. An instantiation that fails or overruns the manifest's deadline
/// leaves nothing (the next call instantiates for itself, and is told).
async fn make(
    runner: Runner,
    pre: ToolPre,
    manifest: std::sync::Arc<Manifest>,
    image: u64,
    claim: Claim,
) {
    let Ok(permit) = runner.permits.clone().try_acquire_owned() else {
        return;
    };
    let timeout = Duration::from_millis(manifest.limits.timeout_ms);
    let state = runner.state(&manifest, image, None, NOBODY.to_string());
    let mut store = new_store(pre.engine(), state);
    let started = Instant::now();
    let Ok(Ok(tool)) = tokio::time::timeout(timeout, pre.instantiate(&mut store)).await else {
        tracing::debug!(tool = %manifest.name, "no instance made ahead: its instantiation failed");
        return;
    };
    let made_in = started.elapsed();
    let slot = claim.leave(Ready {
        store,
        tool,
        permit,
        made_in,
    });
    tokio::spawn(async move {
        tokio::time::sleep(KEPT_FOR).await;
        if let Some(stale) = slot.take_stale() {
            // Its memory's reset is blocking work.
            tokio::task::spawn_blocking(move || drop(stale));
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    use super::{slots_allow, Slot, KEPT_FOR};
    use crate::plugins::limits::MAX_INSTANCES;

    /// Counts its drops: what a slot drops is an instance's memory reset and slot given back.
    struct Counted<'a>(u32, &'a AtomicU32);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn what_waits_is_taken_once_and_a_second_left_meanwhile_is_dropped() {
        // Arrange
        let dropped = AtomicU32::new(0);
        let slot = Slot::default();

        // Act: two left, one after the other.
        slot.put_at(Instant::now(), Counted(1, &dropped));
        slot.put_at(Instant::now(), Counted(2, &dropped));

        // Assert: the first waits, the second is dropped; taken once.
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
        assert_eq!(slot.take().map(|c| c.0), Some(1));
        assert!(slot.take().is_none());
    }

    #[test]
    fn what_has_waited_its_time_is_dropped_rather_than_taken() {
        // Arrange: one left just within its time, one just past it.
        let dropped = AtomicU32::new(0);
        let (fresh, stale) = (Slot::default(), Slot::default());
        let now = Instant::now();
        fresh.put_at(
            now - (KEPT_FOR - Duration::from_secs(5)),
            Counted(1, &dropped),
        );
        stale.put_at(now - KEPT_FOR, Counted(2, &dropped));

        // Act
        let swept_fresh = fresh.take_stale().is_some();
        let taken = (fresh.take().map(|c| c.0), stale.take().map(|c| c.0));

        // Assert: the sweep leaves one within its time; a stale one is never handed out,
        // but dropped.
        assert!(!swept_fresh);
        assert_eq!(taken, (Some(1), None));
        assert_eq!(dropped.load(Ordering::Relaxed), 2);
        let swept = Slot::default();
        swept.put_at(now - KEPT_FOR, Counted(3, &dropped));
        assert_eq!(swept.take_stale().map(|c| c.0), Some(3));
    }

    #[test]
    fn one_is_made_only_while_more_than_half_the_instance_slots_are_free() {
        let half = MAX_INSTANCES as usize / 2;
        assert!(slots_allow(half + 1));
        assert!(!slots_allow(half), "half free: none is made");
    }

    #[test]
    fn one_is_made_at_a_time_and_only_when_none_waits() {
        let dropped = AtomicU32::new(0);
        let slot = Slot::default();
        assert!(slot.begin_making());
        assert!(!slot.begin_making(), "one is being made");
        slot.put_at(Instant::now(), Counted(1, &dropped));
        assert!(!slot.begin_making(), "one waits");
        assert_eq!(slot.take().map(|c| c.0), Some(1));
        assert!(slot.begin_making());
        slot.abandon();
        assert!(slot.begin_making(), "an abandoned making ends its claim");
    }

    #[tokio::test]
    async fn one_taker_waits_for_the_one_being_made_and_another_goes_on_without() {
        // Arrange: one being made.
        let dropped = AtomicU32::new(0);
        let slot = Slot::default();
        assert!(slot.begin_making());
        let second_done = AtomicBool::new(false);

        // Act: two takers come while it is made; then it is left.
        let (first, second, second_went_first) = tokio::join!(
            slot.take_or_await(Duration::from_secs(600)),
            async {
                tokio::task::yield_now().await;
                let taken = slot.take_or_await(Duration::from_secs(600)).await;
                second_done.store(true, Ordering::Relaxed);
                taken
            },
            async {
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                let second_went_first = second_done.load(Ordering::Relaxed);
                slot.put_at(Instant::now(), Counted(1, &dropped));
                second_went_first
            },
        );

        // Assert: the first taker waited and took it; the second went on without waiting.
        assert_eq!(first.map(|c| c.0), Some(1));
        assert!(second.is_none() && second_went_first);
    }

    #[tokio::test]
    async fn a_taker_waiting_for_a_making_that_fails_goes_on_without() {
        // Arrange
        let slot: Slot<u32> = Slot::default();
        assert!(slot.begin_making());

        // Act
        let (taken, ()) = tokio::join!(slot.take_or_await(Duration::from_secs(600)), async {
            tokio::task::yield_now().await;
            slot.abandon();
        });

        // Assert: told at once, not at its bound.
        assert!(taken.is_none());
        assert!(
            slot.take_or_await(Duration::from_secs(600)).await.is_none(),
            "none being made: no wait"
        );
    }
}
