//! An interpreter plugin's next instance, made ahead of its call: after a call has its answer,
//! the thread it ran on instantiates the build once more, in a fresh store of its own, and
//! leaves it here for the next call, which takes it instead of waiting for an instantiation
//! (a third of a millisecond of a Python call). No call has run in it: the instance has only
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
/// goes with the build: a build swapped out takes its instance with it).
pub(crate) struct Slot<T>(Mutex<Option<(Instant, T)>>);

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot(Mutex::new(None))
    }
}

/// One thing made ahead is dropped rather than used once it has waited this long: an
/// instance that no call takes holds its slot and its image's memory for no one.
pub const KEPT_FOR: Duration = Duration::from_secs(60);

impl<T> Slot<T> {
    /// What is waiting, if it has waited less than [`KEPT_FOR`]; a stale one is dropped
    /// here, outside the lock.
    pub fn take(&self) -> Option<T> {
        let (left, value) = self.0.lock().expect("made-ahead slot lock").take()?;
        (left.elapsed() < KEPT_FOR).then_some(value)
    }

    /// What is waiting, if it has waited [`KEPT_FOR`] or more.
    fn take_stale(&self) -> Option<T> {
        let mut slot = self.0.lock().expect("made-ahead slot lock");
        if slot.as_ref()?.0.elapsed() < KEPT_FOR {
            return None;
        }
        slot.take().map(|(_, value)| value)
    }

    /// Whether nothing is waiting (so making one would not be wasted).
    pub fn is_empty(&self) -> bool {
        self.0.lock().expect("made-ahead slot lock").is_none()
    }

    /// Leaves `value` for the next taker, as left at `at`; when another was left meanwhile,
    /// `value` is dropped instead (outside the lock).
    fn put_at(&self, at: Instant, value: T) {
        let mut slot = self.0.lock().expect("made-ahead slot lock");
        if slot.is_none() {
            *slot = Some((at, value));
            return;
        }
        drop(slot);
        drop(value);
    }
}

/// The slot one build's instances made ahead wait in, shared by its clones.
pub(crate) type SpareSlot = Arc<Slot<Ready>>;

/// Whether to make an instance ahead: none is waiting, and more than half the host's instance
/// slots are free (`available` of [`MAX_INSTANCES`]), so that one waiting never stands in a
/// call's way.
fn worth_making(waiting: bool, available: usize) -> bool {
    !waiting && available > MAX_INSTANCES as usize / 2
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

/// Makes the build's next instance ahead of its call and leaves it in `slot`, when none is
/// waiting there and at least half the instance slots are free; dropped after
/// [`KEPT_FOR`] if no call takes it. An instantiation that fails or overruns the
/// manifest's deadline leaves nothing (the next call instantiates for itself, and is told).
pub(super) async fn make(
    runner: Runner,
    pre: ToolPre,
    manifest: std::sync::Arc<Manifest>,
    image: u64,
    slot: SpareSlot,
) {
    if !worth_making(!slot.is_empty(), runner.permits.available_permits()) {
        return;
    }
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
    slot.put_at(
        Instant::now(),
        Ready {
            store,
            tool,
            permit,
            made_in,
        },
    );
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
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    use super::{worth_making, Slot, KEPT_FOR};
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
        assert!(!slot.is_empty());
        assert_eq!(slot.take().map(|c| c.0), Some(1));
        assert!(slot.is_empty() && slot.take().is_none());
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
    fn one_is_made_only_when_none_waits_and_more_than_half_the_slots_are_free() {
        let half = MAX_INSTANCES as usize / 2;
        assert!(worth_making(false, half + 1));
        assert!(!worth_making(false, half), "half free: none is made");
        assert!(
            !worth_making(true, MAX_INSTANCES as usize),
            "one waits already"
        );
    }
}
