//! The guest's allocator on `wasm32` (feature `arena`, on by default): an arena that only
//! grows, because the host runs every call in a fresh instance and discards it afterwards.
//!
//! An allocation is the next aligned bytes of the arena; freeing gives bytes back only when
//! they are the arena's last block (a `String` built and dropped at once, a `Vec` grown at the
//! top), and a block at the top grows in place. What a call allocates in all, not what it keeps
//! at once, is what its memory grows by, and that counts against the plugin's `memory_mib`
//! like any memory it grows: a tool that builds and drops large values over and over should
//! turn the feature off (`default-features = false`) and get Rust's own allocator back.
//!
//! Why: the host hands a query's rows to the guest through the canonical ABI, one allocation
//! per row and per text cell, and the tools build their answers from many small strings; each
//! was a general allocator's call, and is a few instructions here (about a sixth of the guest's
//! time for a few hundred rows: docs/decisions/0028-the-guests-cost.md).

/// Bytes of a WebAssembly page.
const PAGE: usize = 65_536;

/// The arena's state: the next free byte, and the end of the memory the arena owns. Both are
/// addresses in the instance's linear memory; `next == 0` until the first allocation.
#[derive(Debug, Default)]
pub(crate) struct Arena {
    next: usize,
    end: usize,
}

/// Asks the host for `pages` more pages of linear memory and returns where they begin (the
/// memory's previous size, in pages), or `None` when the host refuses.
pub(crate) trait Grow {
    fn grow(&mut self, pages: usize) -> Option<usize>;
}

fn align_up(n: usize, align: usize) -> Option<usize> {
    Some(n.checked_add(align - 1)? & !(align - 1))
}

impl Arena {
    pub(crate) const fn new() -> Arena {
        Arena { next: 0, end: 0 }
    }

    /// The address of `size` fresh bytes aligned to `align` (a power of two), growing the
    /// memory when the arena has no room; `None` when the host refuses to grow it.
    pub(crate) fn alloc(
        &mut self,
        size: usize,
        align: usize,
        mem: &mut impl Grow,
    ) -> Option<usize> {
        if self.next != 0 {
            let start = align_up(self.next, align)?;
            let stop = start.checked_add(size)?;
            if stop <= self.end {
                self.next = stop;
                return Some(start);
            }
        }
        // Enough pages for the block wherever they begin (aligned within them).
        self.extend(size.checked_add(align)?.div_ceil(PAGE), mem)?;
        let start = align_up(self.next, align)?;
        self.next = start + size;
        Some(start)
    }

    /// Grows the memory by `pages` for the arena: `Some(true)` when the new pages follow its
    /// end (the arena just gets longer), `Some(false)` when they do not (the first growth, or
    /// someone else grew the memory since: the arena goes on in the new pages and its old
    /// tail stays unused), `None` when the host refuses.
    fn extend(&mut self, pages: usize, mem: &mut impl Grow) -> Option<bool> {
        let base = mem.grow(pages)?.checked_mul(PAGE)?;
        let end = base.checked_add(pages * PAGE)?;
        let follows = base == self.end && self.next != 0;
        if !follows {
            self.next = base;
        }
        self.end = end;
        Some(follows)
    }

    /// Gives the block at `addr` of `size` bytes back: only the arena's last block is reused.
    pub(crate) fn dealloc(&mut self, addr: usize, size: usize) {
        if addr.checked_add(size) == Some(self.next) {
            self.next = addr;
        }
    }

    /// The block at `addr` (`old` bytes, aligned to `align`) resized to `new` bytes: in place
    /// when it is the arena's last block (growing the memory if needed) or when it shrinks,
    /// else a fresh block, into which the caller copies the old one's bytes.
    pub(crate) fn realloc(
        &mut self,
        addr: usize,
        old: usize,
        align: usize,
        new: usize,
        mem: &mut impl Grow,
    ) -> Option<usize> {
        if addr.checked_add(old) == Some(self.next) {
            let stop = addr.checked_add(new)?;
            if stop <= self.end {
                self.next = stop;
                return Some(addr);
            }
            if self.extend((stop - self.end).div_ceil(PAGE), mem)? {
                self.next = stop;
                return Some(addr);
            }
            // The new pages are elsewhere: the arena goes on there, and the block moves.
        } else if new <= old {
            return Some(addr);
        }
        self.alloc(new, align, mem)
    }
}

/// The global allocator over [`Arena`], in the instance's memory 0.
#[cfg(target_arch = "wasm32")]
pub struct ArenaAllocator(core::cell::UnsafeCell<Arena>);

#[cfg(target_arch = "wasm32")]
impl ArenaAllocator {
    /// An arena that has allocated nothing yet.
    pub const fn new() -> ArenaAllocator {
        ArenaAllocator(core::cell::UnsafeCell::new(Arena::new()))
    }
}

#[cfg(target_arch = "wasm32")]
impl Default for ArenaAllocator {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: a `wasm32-unknown-unknown` instance has one thread; nothing runs concurrently with
// an allocation.
#[cfg(target_arch = "wasm32")]
unsafe impl Sync for ArenaAllocator {}

#[cfg(target_arch = "wasm32")]
struct Memory0;

#[cfg(target_arch = "wasm32")]
impl Grow for Memory0 {
    fn grow(&mut self, pages: usize) -> Option<usize> {
        let prev = core::arch::wasm32::memory_grow(0, pages);
        (prev != usize::MAX).then_some(prev)
    }
}

#[cfg(target_arch = "wasm32")]
unsafe impl core::alloc::GlobalAlloc for ArenaAllocator {
    unsafe fn alloc(&self, layout: core::alloc::Layout) -> *mut u8 {
        // SAFETY: one thread, and no allocation re-enters another.
        let arena = unsafe { &mut *self.0.get() };
        arena
            .alloc(layout.size(), layout.align(), &mut Memory0)
            .map_or(core::ptr::null_mut(), |a| a as *mut u8)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: core::alloc::Layout) {
        // SAFETY: as in `alloc`.
        let arena = unsafe { &mut *self.0.get() };
        arena.dealloc(ptr as usize, layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: core::alloc::Layout, new: usize) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let arena = unsafe { &mut *self.0.get() };
        let (old, addr) = (layout.size(), ptr as usize);
        match arena.realloc(addr, old, layout.align(), new, &mut Memory0) {
            None => core::ptr::null_mut(),
            Some(a) if a == addr => ptr,
            Some(a) => {
                let to = a as *mut u8;
                // SAFETY: the new block is fresh (never the old one's bytes: the arena only
                // reuses a block given back), both are valid for the bytes copied.
                unsafe { core::ptr::copy_nonoverlapping(ptr, to, old.min(new)) };
                to
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A linear memory of `pages` pages that grows at its end, or, with `jump`, leaves a gap
    /// first (as if something else had grown it), or refuses past `max` pages.
    struct Fake {
        pages: usize,
        max: usize,
        jump: usize,
    }

    impl Grow for Fake {
        fn grow(&mut self, pages: usize) -> Option<usize> {
            let start = self.pages + std::mem::take(&mut self.jump);
            if start + pages > self.max {
                return None;
            }
            self.pages = start + pages;
            Some(start)
        }
    }

    fn memory() -> Fake {
        Fake {
            pages: 17,
            max: 1024,
            jump: 0,
        }
    }

    #[test]
    fn blocks_are_aligned_distinct_and_in_grown_memory() {
        // Arrange
        let (mut arena, mut mem) = (Arena::new(), memory());
        // Act
        let a = arena.alloc(3, 1, &mut mem).unwrap();
        let b = arena.alloc(8, 8, &mut mem).unwrap();
        let c = arena.alloc(100, 64, &mut mem).unwrap();
        // Assert
        assert_eq!(
            a,
            17 * PAGE,
            "the first block begins in the first grown page"
        );
        assert_eq!(b % 8, 0);
        assert!(b >= a + 3);
        assert_eq!(c % 64, 0);
        assert!(c >= b + 8);
        assert_eq!(mem.pages, 18, "one page was enough for all three");
    }

    #[test]
    fn a_block_past_the_end_grows_the_memory_by_what_it_needs() {
        // Arrange
        let (mut arena, mut mem) = (Arena::new(), memory());
        let a = arena.alloc(PAGE - 16, 8, &mut mem).unwrap();
        // Act
        let b = arena.alloc(3 * PAGE, 8, &mut mem).unwrap();
        // Assert
        assert_eq!(a, 17 * PAGE);
        assert!(b >= a + PAGE - 16 && b % 8 == 0);
        assert!(
            b + 3 * PAGE <= mem.pages * PAGE,
            "the block fits in the memory"
        );
        assert_eq!(mem.pages, 18 + 4);
    }

    #[test]
    fn only_the_last_block_is_given_back() {
        // Arrange
        let (mut arena, mut mem) = (Arena::new(), memory());
        let a = arena.alloc(40, 8, &mut mem).unwrap();
        let b = arena.alloc(40, 8, &mut mem).unwrap();
        // Act
        arena.dealloc(a, 40);
        let c = arena.alloc(40, 8, &mut mem).unwrap();
        arena.dealloc(c, 40);
        let d = arena.alloc(40, 8, &mut mem).unwrap();
        // Assert
        assert!(c > b, "a block below the top is not reused");
        assert_eq!(d, c, "the top block is");
    }

    #[test]
    fn the_top_block_grows_in_place_even_past_the_end() {
        // Arrange
        let (mut arena, mut mem) = (Arena::new(), memory());
        let a = arena.alloc(64, 8, &mut mem).unwrap();
        // Act
        let grown = arena.realloc(a, 64, 8, 1000, &mut mem).unwrap();
        let past = arena.realloc(a, 1000, 8, 5 * PAGE, &mut mem).unwrap();
        let next = arena.alloc(8, 8, &mut mem).unwrap();
        // Assert
        assert_eq!(grown, a);
        assert_eq!(past, a, "the memory grew right after the block");
        assert!(
            next >= a + 5 * PAGE,
            "the next block is after the grown one"
        );
        assert!(next + 8 <= mem.pages * PAGE);
    }

    #[test]
    fn a_block_below_the_top_moves_when_it_grows_and_stays_when_it_shrinks() {
        // Arrange
        let (mut arena, mut mem) = (Arena::new(), memory());
        let a = arena.alloc(64, 8, &mut mem).unwrap();
        let b = arena.alloc(64, 8, &mut mem).unwrap();
        // Act
        let shrunk = arena.realloc(a, 64, 8, 16, &mut mem).unwrap();
        let moved = arena.realloc(a, 64, 8, 128, &mut mem).unwrap();
        // Assert
        assert_eq!(shrunk, a);
        assert!(moved >= b + 64, "a fresh block after the others");
    }

    #[test]
    fn memory_grown_by_someone_else_starts_the_arena_over() {
        // Arrange: the arena's memory ends, then a gap of 3 pages another grower took.
        let (mut arena, mut mem) = (Arena::new(), memory());
        let a = arena.alloc(PAGE - 8, 8, &mut mem).unwrap();
        mem.jump = 3;
        // Act
        let moved = arena.realloc(a, PAGE - 8, 8, 2 * PAGE, &mut mem).unwrap();
        let next = arena.alloc(8, 8, &mut mem).unwrap();
        // Assert
        assert_eq!(moved, (18 + 3) * PAGE, "the block moves to the new pages");
        assert!(next >= moved + 2 * PAGE);
        assert!(next + 8 <= mem.pages * PAGE);
    }

    #[test]
    fn a_refused_growth_or_an_impossible_size_is_none() {
        // Arrange
        let (mut arena, mut mem) = (Arena::new(), memory());
        mem.max = 20;
        let a = arena.alloc(8, 8, &mut mem).unwrap();
        // Act / Assert
        assert_eq!(arena.alloc(4 * PAGE, 8, &mut mem), None);
        assert_eq!(arena.realloc(a, 8, 8, 4 * PAGE, &mut mem), None);
        assert_eq!(arena.alloc(usize::MAX - 4, 8, &mut mem), None);
        assert_eq!(
            arena.alloc(8, 8, &mut mem),
            Some(a + 8),
            "the arena is as it was"
        );
    }
}
