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
    let (head, words, _) = split(pa, out.len());
    let (head_bytes, rest) = out.split_at_mut(head);
    let (word_bytes, tail_bytes) = rest.split_at_mut(words * WORD);
    read_bytes(pa, head_bytes);
    let aligned = pa + head as u64;
    for (i, chunk) in word_bytes.chunks_exact_mut(WORD).enumerate() {
        // SAFETY: an aligned word of the partition RAM checked above,
        // identity mapped at EL2 as normal memory.
        let word = unsafe { core::ptr::read_volatile((aligned as usize + i * WORD) as *const u64) };
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
    read_bytes(aligned + (words * WORD) as u64, tail_bytes);
}

/// Copies `bytes` to `[pa, pa + bytes.len())` of partition RAM and cleans
/// it to memory, where a guest with its caches off reads it. Checked as
/// for [`read`].
pub fn write(pa: u64, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    assert!(is_partition_ram(pa, bytes.len() as u64), "guest buffer outside partition RAM");
    let (head, words, _) = split(pa, bytes.len());
    let (head_bytes, rest) = bytes.split_at(head);
    let (word_bytes, tail_bytes) = rest.split_at(words * WORD);
    write_bytes(pa, head_bytes);
    let aligned = pa + head as u64;
    for (i, chunk) in word_bytes.chunks_exact(WORD).enumerate() {
        let word = u64::from_ne_bytes(chunk.try_into().expect("a whole word"));
        // SAFETY: an aligned word of the partition RAM checked above.
        unsafe { core::ptr::write_volatile((aligned as usize + i * WORD) as *mut u64, word) };
    }
    write_bytes(aligned + (words * WORD) as u64, tail_bytes);
    clean_invalidate(pa, bytes.len() as u64);
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
/// first word boundary, whole words, and the bytes left. A guest's buffer
/// need not be word-aligned, and its middle still moves a word at a time.
fn split(pa: u64, len: usize) -> (usize, usize, usize) {
    let head = ((WORD - (pa as usize) % WORD) % WORD).min(len);
    let words = (len - head) / WORD;
    (head, words, len - head - words * WORD)
}
