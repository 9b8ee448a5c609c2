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

const WORD: usize = core::mem::size_of::<u64>();

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
    let (words, tail) = split(pa, out.len());
    for (i, chunk) in out[..words * WORD].chunks_exact_mut(WORD).enumerate() {
        // SAFETY: an aligned word of the partition RAM checked above,
        // identity mapped at EL2 as normal memory.
        let word = unsafe { core::ptr::read_volatile((pa as usize + i * WORD) as *const u64) };
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
    for (i, byte) in out[words * WORD..].iter_mut().enumerate().take(tail) {
        // SAFETY: a byte of the partition RAM checked above.
        *byte = unsafe { core::ptr::read_volatile((pa as usize + words * WORD + i) as *const u8) };
    }
}

/// Copies `bytes` to `[pa, pa + bytes.len())` of partition RAM and cleans
/// it to memory, where a guest with its caches off reads it. Checked as
/// for [`read`].
pub fn write(pa: u64, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    assert!(is_partition_ram(pa, bytes.len() as u64), "guest buffer outside partition RAM");
    let (words, tail) = split(pa, bytes.len());
    for (i, chunk) in bytes[..words * WORD].chunks_exact(WORD).enumerate() {
        let word = u64::from_ne_bytes(chunk.try_into().expect("a whole word"));
        // SAFETY: an aligned word of the partition RAM checked above.
        unsafe { core::ptr::write_volatile((pa as usize + i * WORD) as *mut u64, word) };
    }
    for (i, &byte) in bytes[words * WORD..].iter().enumerate().take(tail) {
        // SAFETY: a byte of the partition RAM checked above.
        unsafe { core::ptr::write_volatile((pa as usize + words * WORD + i) as *mut u8, byte) };
    }
    clean_invalidate(pa, bytes.len() as u64);
}

/// How many whole words, then bytes, a copy of `len` bytes at `pa` moves:
/// words only when `pa` is word-aligned, which guest buffers usually are.
fn split(pa: u64, len: usize) -> (usize, usize) {
    if (pa as usize).is_multiple_of(WORD) {
        (len / WORD, len % WORD)
    } else {
        (0, len)
    }
}
