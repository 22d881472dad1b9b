//! How a plugin's compiled code keeps its loads and stores inside its linear memories, and
//! which components get which way (`docs/decisions/0044-guard-pages-for-interpreters.md`).

use wasmtime::Config;

use crate::plugins::limits::MAX_MEMORY_MIB;

/// Address space reserved for each linear memory of a [`Memories::Guarded`] component: every
/// address a 32-bit memory can form, so none needs a check (what memory it may use is still
/// its manifest's `limits.memory_mib`).
const GUARDED_RESERVATION: u64 = 4 << 30;
/// Inaccessible bytes after it, for the constant offsets of loads and stores.
const GUARD_BYTES: u64 = 32 << 20;

/// How the compiled code of a component keeps its accesses inside its linear memories. The two
/// cost differently per call (`docs/decisions/0044-guard-pages-for-interpreters.md`): a
/// component is compiled and run with the one its [`Memories::of_image`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Memories {
    /// Every access bounds-checked in the compiled code, no guard pages (a 512 MiB slot each):
    /// an instance's reset never changes page protections, so a short call stays short on a
    /// busy multi-core host.
    Checked,
    /// Accesses unchecked in the code, kept in by a 4 GiB reservation and guard pages: an
    /// interpreter's every load and store is a third cheaper, for an `mprotect` per call when
    /// its memory grew (a TLB shoot-down, and the address space's lock, a few tens of µs).
    Guarded,
}

/// Bytes of initialised memory image from which a component runs with guard pages: a
/// language runtime's snapshot (CPython 13 MiB, SpiderMonkey 10 MiB) is over it, a compiled
/// Rust plugin (its stack and data, 1 to 2 MiB) under it.
pub const GUARDED_FROM_IMAGE: u64 = 8 * 1024 * 1024;

impl Memories {
    /// How a component whose modules initialise `image` bytes of memory is run.
    pub fn of_image(image: u64) -> Memories {
        if image >= GUARDED_FROM_IMAGE {
            Memories::Guarded
        } else {
            Memories::Checked
        }
    }

    /// How `plugin check` names it.
    pub fn describe(self) -> &'static str {
        match self {
            Memories::Checked => "bounds checks",
            Memories::Guarded => "guard pages",
        }
    }

    /// Sets `config`'s memory settings for this way.
    pub(in crate::plugins) fn configure(self, config: &mut Config) {
        match self {
            // Bounds-checked memories without guard pages: a slot's pages then keep their
            // protection from one call to the next. With guard pages, every call whose guest
            // grew its memory made the next instantiation `mprotect` the slot back, and on a
            // multi-threaded host each `mprotect` is a TLB shoot-down on every other core and
            // a writer of the address space's lock (the `hot_path` benchmark's small call: a
            // third more CPU and 35 % fewer calls a second, measured with perf). Out-of-bounds
            // accesses still trap: the check is in the code instead of the page tables.
            Memories::Checked => config
                .signals_based_traps(false)
                .memory_guard_size(0)
                .memory_reservation(u64::from(MAX_MEMORY_MIB) * 1024 * 1024),
            // wasmtime's defaults on 64-bit hosts: a 32-bit memory's every address and offset
            // fall in its 4 GiB reservation and guard, so no access needs a check; one past the
            // memory's size faults and the fault is the trap.
            Memories::Guarded => config
                .signals_based_traps(true)
                .memory_guard_size(GUARD_BYTES)
                .memory_reservation(GUARDED_RESERVATION),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_language_runtimes_snapshot_runs_guarded_and_a_compiled_plugin_checked() {
        // Arrange: the image sizes of the shipped builds (Rust ~2 MiB, SpiderMonkey ~10 MiB,
        // CPython ~13 MiB).
        let mib = 1024 * 1024;

        // Act / Assert
        assert_eq!(Memories::of_image(2 * mib), Memories::Checked);
        assert_eq!(
            Memories::of_image(GUARDED_FROM_IMAGE - 1),
            Memories::Checked
        );
        assert_eq!(Memories::of_image(GUARDED_FROM_IMAGE), Memories::Guarded);
        assert_eq!(Memories::of_image(10 * mib), Memories::Guarded);
        assert_eq!(Memories::of_image(13 * mib), Memories::Guarded);
    }
}
