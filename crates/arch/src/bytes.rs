//! Copies between Partita's own buffers, eight bytes a move whatever their
//! alignment.
//!
//! The target is strict-align, so the compiler moves bytes whose alignment
//! it cannot prove one at a time, and turns a byte loop of unknown length
//! into a library call that costs tens of instructions however short: the
//! console's lines, a dozen short pieces each at unknown offsets, spent
//! most of their time there. The hardware takes unaligned accesses to
//! normal memory once the MMU is on (SCTLR_EL2.A is clear); before, every
//! access is Device memory, where it would fault, and a byte loop is used.

use core::arch::asm;

/// Copies `src` into the start of `dst` (as much as fits).
#[inline]
pub fn copy(dst: &mut [u8], src: &[u8]) {
    let len = dst.len().min(src.len());
    if len == 0 {
        return;
    }
    if crate::read_sysreg!("sctlr_el2") & 1 == 0 {
        dst[..len].iter_mut().zip(src).for_each(|(to, &byte)| *to = byte);
        return;
    }
    // SAFETY: `dst` and `src` are valid for `len` bytes and cannot overlap
    // (one is borrowed mutably); with the MMU on, Partita's memory is
    // normal memory, where unaligned accesses are allowed (SCTLR_EL2.A is
    // clear). A copy of 8 bytes or more moves whole words, the last one
    // ending at the end and overlapping the one before; a shorter one
    // moves 4, 2 and 1 bytes as its length's bits say.
    unsafe {
        asm!(
            "lsr {n}, {len}, #3",
            "cbz {n}, 3f",
            "add {se}, {src}, {len}",
            "add {de}, {dst}, {len}",
            "2:",
            "ldr {t}, [{src}], #8",
            "str {t}, [{dst}], #8",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            "ldr {t}, [{se}, #-8]",
            "str {t}, [{de}, #-8]",
            "b 6f",
            "3:",
            "tbz {len}, #2, 4f",
            "ldr {t:w}, [{src}], #4",
            "str {t:w}, [{dst}], #4",
            "4:",
            "tbz {len}, #1, 5f",
            "ldrh {t:w}, [{src}], #2",
            "strh {t:w}, [{dst}], #2",
            "5:",
            "tbz {len}, #0, 6f",
            "ldrb {t:w}, [{src}]",
            "strb {t:w}, [{dst}]",
            "6:",
            src = inout(reg) src.as_ptr() => _,
            dst = inout(reg) dst.as_mut_ptr() => _,
            len = in(reg) len,
            n = out(reg) _,
            se = out(reg) _,
            de = out(reg) _,
            t = out(reg) _,
            options(nostack),
        );
    }
}
