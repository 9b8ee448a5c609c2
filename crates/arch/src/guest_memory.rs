//! Copies between Partita and a partition's RAM.
//!
//! Guest RAM is shared with the guest's other vCPUs, which may write it
//! while a hypercall reads it, so Partita never holds a Rust reference
//! into it (a `&[u8]` over memory that changes under it is undefined
//! behaviour). Every byte crosses with a volatile access instead, into or
//! out of Partita's own memory; a racing guest gets at worst a message
//! made of old and new bytes, which only harms itself.

use crate::cache::clean_invalidate;
use crate::mmu::is_partition_ram;

/// The copies move the middle of a buffer in units of one register pair,
/// four pairs an iteration while there are four.
pub(crate) const BLOCK: usize = 16;

/// Copies `[pa, pa + out.len())` of partition RAM into `out`, after making
/// what the guest wrote visible (a guest may run with its caches off).
/// The caller checked that the range belongs to the calling partition;
/// this checks again that it is partition RAM, never Partita's own.
pub fn read(pa: u64, out: &mut [u8]) {
    if out.is_empty() {
        return;
    }
    assert!(is_partition_ram(pa, out.len() as u64), "guest buffer outside partition RAM");
    clean_invalidate(pa, out.len() as u64);
    let (head, blocks, _) = split(pa, out.len());
    let (head_bytes, rest) = out.split_at_mut(head);
    let (block_bytes, tail_bytes) = rest.split_at_mut(blocks * BLOCK);
    read_bytes(pa, head_bytes);
    let aligned = pa + head as u64;
    // SAFETY: the source is whole blocks of the partition RAM checked
    // above, identity mapped at EL2 as normal memory; the destination is
    // `block_bytes`, exactly that long, which nothing else references.
    unsafe { copy_blocks(block_bytes.as_mut_ptr(), aligned as *const u8, blocks) };
    read_bytes(aligned + (blocks * BLOCK) as u64, tail_bytes);
}

/// Copies `bytes` to `[pa, pa + bytes.len())` of partition RAM and cleans
/// it to memory, where a guest with its caches off reads it. Checked as
/// for [`read`].
pub fn write(pa: u64, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    assert!(is_partition_ram(pa, bytes.len() as u64), "guest buffer outside partition RAM");
    let (head, blocks, _) = split(pa, bytes.len());
    let (head_bytes, rest) = bytes.split_at(head);
    let (block_bytes, tail_bytes) = rest.split_at(blocks * BLOCK);
    write_bytes(pa, head_bytes);
    let aligned = pa + head as u64;
    // SAFETY: the destination is whole blocks of the partition RAM checked
    // above; the source is `block_bytes`, exactly that long.
    unsafe { copy_blocks(aligned as *mut u8, block_bytes.as_ptr(), blocks) };
    write_bytes(aligned + (blocks * BLOCK) as u64, tail_bytes);
    clean_invalidate(pa, bytes.len() as u64);
}

/// Copies `blocks` blocks of [`BLOCK`] bytes: 64 bytes an iteration in
/// four register pairs, then a pair an iteration for the rest. The
/// library's copy moves a word per iteration: a port's largest message took
/// about 10,000 instructions with interrupts masked (`partita bench
/// response`, path `hvc-port-send`); at 32 bytes an iteration, 768 of the
/// path's 1,700 were this loop.
///
/// # Safety
/// `src` and `dst` are valid for `blocks * BLOCK` bytes, normal memory,
/// and do not overlap. `src` may change under the copy (guest RAM): the
/// assembly reads each byte once, so the result is some mix of old and new
/// bytes and nothing is assumed about it.
pub(crate) unsafe fn copy_blocks(dst: *mut u8, src: *const u8, blocks: usize) {
    if blocks == 0 {
        return;
    }
    // SAFETY: the caller's contract; the loops touch only those bytes and
    // the scratch registers they name.
    unsafe {
        core::arch::asm!(
            "lsr {n}, {left}, #2",
            "and {left}, {left}, #3",
            "cbz {n}, 3f",
            "2:",
            "ldp {a}, {b}, [{src}], #64",
            "ldp {c}, {d}, [{src}, #-48]",
            "ldp {e}, {f}, [{src}, #-32]",
            "ldp {g}, {h}, [{src}, #-16]",
            "stp {a}, {b}, [{dst}], #64",
            "stp {c}, {d}, [{dst}, #-48]",
            "stp {e}, {f}, [{dst}, #-32]",
            "stp {g}, {h}, [{dst}, #-16]",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            "3:",
            "cbz {left}, 5f",
            "4:",
            "ldp {a}, {b}, [{src}], #16",
            "stp {a}, {b}, [{dst}], #16",
            "subs {left}, {left}, #1",
            "b.ne 4b",
            "5:",
            src = inout(reg) src => _,
            dst = inout(reg) dst => _,
            left = inout(reg) blocks => _,
            n = out(reg) _,
            a = out(reg) _,
            b = out(reg) _,
            c = out(reg) _,
            d = out(reg) _,
            e = out(reg) _,
            f = out(reg) _,
            g = out(reg) _,
            h = out(reg) _,
            options(nostack),
        );
    }
}

/// Byte by byte, for the ends of a copy that are not whole words; the
/// caller checked the range is partition RAM.
fn read_bytes(pa: u64, out: &mut [u8]) {
    for (i, byte) in out.iter_mut().enumerate() {
        // SAFETY: a byte of the partition RAM the caller checked.
        *byte = unsafe { core::ptr::read_volatile((pa as usize + i) as *const u8) };
    }
}

fn write_bytes(pa: u64, bytes: &[u8]) {
    for (i, &byte) in bytes.iter().enumerate() {
        // SAFETY: a byte of the partition RAM the caller checked.
        unsafe { core::ptr::write_volatile((pa as usize + i) as *mut u8, byte) };
    }
}

/// A copy of `len` bytes at `pa` in three parts: the bytes up to the
/// first 16-byte boundary, whole blocks, and the fewer than 16 left. A guest's
/// buffer need not be aligned, and its middle still moves in blocks.
fn split(pa: u64, len: usize) -> (usize, usize, usize) {
    let head = ((16 - (pa as usize) % 16) % 16).min(len);
    let blocks = (len - head) / BLOCK;
    (head, blocks, len - head - blocks * BLOCK)
}
