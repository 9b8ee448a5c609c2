//! Cache and TLB maintenance by address.

use core::arch::asm;

/// Cache line size in bytes, from CTR_EL0.DminLine.
fn dcache_line() -> u64 {
    4 << ((crate::read_sysreg!("ctr_el0") >> 16) & 0xf)
}

/// Cleans and invalidates `[start, start + len)` to the point of coherency,
/// by virtual address (identity mapped at EL2). This is how set/way
/// maintenance requested by a guest is carried out, so it only ever reaches
/// that guest's own memory.
pub fn clean_invalidate(start: u64, len: u64) {
    let line = dcache_line();
    let mut addr = start & !(line - 1);
    while addr < start + len {
        // SAFETY: DC CIVAC on an identity-mapped address writes back and
        // drops a line; memory contents are unchanged.
        unsafe { asm!("dc civac, {0}", in(reg) addr, options(nostack, preserves_flags)) };
        addr += line;
    }
    crate::cpu::dsb_ish();
}

/// Fills `[start, start + len)` with zeros. The range is RAM that Partita
/// owns and hands to a partition (identity mapped at EL2). Whole blocks are
/// zeroed with DC ZVA, one instruction per block, which matters when every
/// partition's RAM is cleared at boot and on restart.
pub fn zero(start: u64, len: u64) {
    assert!(crate::mmu::is_partition_ram(start, len), "zero outside partition RAM");
    let dczid = crate::read_sysreg!("dczid_el0");
    let block = 4u64 << (dczid & 0xf);
    let zva_allowed = dczid & (1 << 4) == 0;
    let end = start + len;
    let mut addr = start;
    if zva_allowed {
        let aligned_end = end & !(block - 1);
        zero_bytes(addr, start.next_multiple_of(block).min(end));
        addr = start.next_multiple_of(block);
        while addr < aligned_end {
            // SAFETY: DC ZVA zeroes one block of partition RAM (checked
            // above), identity mapped as normal memory at EL2.
            unsafe { core::arch::asm!("dc zva, {0}", in(reg) addr, options(nostack, preserves_flags)) };
            addr += block;
        }
    }
    zero_bytes(addr.min(end), end);
}

fn zero_bytes(from: u64, to: u64) {
    if to > from {
        // SAFETY: a sub-range of the partition RAM checked by `zero`.
        unsafe { core::ptr::write_bytes(from as *mut u8, 0, (to - from) as usize) };
    }
}

/// Copies `bytes` to physical address `dest` (partition RAM, identity
/// mapped at EL2, not overlapping hypervisor memory).
pub fn copy_to(dest: u64, bytes: &[u8]) {
    assert!(crate::mmu::is_partition_ram(dest, bytes.len() as u64), "copy outside partition RAM");
    // SAFETY: as for `zero`; the source is the boot payload, which never
    // overlaps partition RAM (checked by the configuration validator).
    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), dest as *mut u8, bytes.len()) };
}

/// Invalidates every stage-1 and stage-2 TLB entry of the VMID currently
/// in VTTBR_EL2, on this CPU only. Partita does this lazily on each pCPU
/// rather than broadcasting it: a broadcast must wait for every other CPU,
/// however busy (and QEMU's round-robin mode can livelock on it).
pub fn invalidate_guest_tlb_local() {
    // SAFETY: TLB invalidation has no effect on memory contents.
    unsafe { asm!("dsb ishst", "tlbi vmalls12e1", "dsb nsh", "isb", options(nostack, preserves_flags)) };
}

/// Runs `f` over the partition RAM `[pa, pa + len)` as bytes, after making
/// what the guest wrote visible (a guest may run with its caches off).
/// Hypercalls read message buffers this way; `len` is bounded by the
/// caller, who also checked that the buffer belongs to the calling partition.
pub fn with_guest_bytes<R>(pa: u64, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
    if len == 0 {
        return f(&[]);
    }
    assert!(crate::mmu::is_partition_ram(pa, len as u64), "guest buffer outside partition RAM");
    clean_invalidate(pa, len as u64);
    // SAFETY: the range is partition RAM, identity mapped at EL2 and never
    // Partita's own memory (asserted above). Other vCPUs of the partition
    // may write it meanwhile; bytes have no invalid values, so the worst a
    // racing guest gets is a message made of old and new bytes.
    let bytes = unsafe { core::slice::from_raw_parts(pa as *const u8, len) };
    f(bytes)
}

/// As [`with_guest_bytes`], for a buffer the hypercall fills; what `f`
/// wrote is cleaned to memory, where a guest with its caches off reads it.
pub fn with_guest_bytes_mut<R>(pa: u64, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    if len == 0 {
        return f(&mut []);
    }
    assert!(crate::mmu::is_partition_ram(pa, len as u64), "guest buffer outside partition RAM");
    clean_invalidate(pa, len as u64);
    // SAFETY: as in `with_guest_bytes`; Partita holds no other reference
    // into partition RAM while `f` runs.
    let bytes = unsafe { core::slice::from_raw_parts_mut(pa as *mut u8, len) };
    let result = f(bytes);
    clean_invalidate(pa, len as u64);
    result
}
