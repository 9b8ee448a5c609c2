//! The boot-time heap: page tables and partition state are allocated while
//! Partita starts; nothing on a trap path allocates.

use buddy_system_allocator::LockedHeap;

#[global_allocator]
static HEAP: LockedHeap<32> = LockedHeap::empty();

/// Hands `[start, start + size)` to the allocator. Called once, by the
/// primary CPU, with a range of hypervisor memory that nothing else uses.
pub fn init(start: u64, size: u64) {
    // SAFETY: the caller gives a range of identity-mapped hypervisor RAM
    // that holds no other object (it lies after the boot payload).
    unsafe { HEAP.lock().init(start as usize, size as usize) };
}

/// Adds `[start, start + size)` to the heap (see [`init`] for the contract).
pub fn extend(start: u64, size: u64) {
    // SAFETY: as for `init`: unused, identity-mapped hypervisor RAM, handed
    // over once.
    unsafe { HEAP.lock().add_to_heap(start as usize, (start + size) as usize) };
}

/// Bytes currently allocated, for the boot report.
pub fn used() -> usize {
    HEAP.lock().stats_alloc_actual()
}
