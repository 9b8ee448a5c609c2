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
    let end = start + len;
    // Eight lines an iteration where there are eight: a set/way slice or a
    // reload step is hundreds of lines, and a loop of one line per
    // iteration spent most of its instructions on itself.
    let groups = (end.saturating_sub(addr) / line) / 8;
    if groups > 0 {
        // SAFETY: DC CIVAC on identity-mapped addresses, as below, for
        // 8 * `groups` lines from `addr`, all before `end`.
        unsafe {
            asm!(
                "2:",
                "dc civac, {a}", "add {a}, {a}, {l}",
                "dc civac, {a}", "add {a}, {a}, {l}",
                "dc civac, {a}", "add {a}, {a}, {l}",
                "dc civac, {a}", "add {a}, {a}, {l}",
                "dc civac, {a}", "add {a}, {a}, {l}",
                "dc civac, {a}", "add {a}, {a}, {l}",
                "dc civac, {a}", "add {a}, {a}, {l}",
                "dc civac, {a}", "add {a}, {a}, {l}",
                "subs {n}, {n}, #1",
                "b.ne 2b",
                a = inout(reg) addr,
                l = in(reg) line,
                n = inout(reg) groups => _,
                options(nostack),
            )
        };
    }
    while addr < end {
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
    let blocks = bytes.len() / crate::guest_memory::BLOCK;
    let (middle, tail) = bytes.split_at(blocks * crate::guest_memory::BLOCK);
    // SAFETY: as for `zero`; the source is the boot payload, which never
    // overlaps partition RAM (checked by the configuration validator).
    unsafe {
        crate::guest_memory::copy_blocks(dest as *mut u8, middle.as_ptr(), blocks);
        core::ptr::copy_nonoverlapping(tail.as_ptr(), (dest as usize + middle.len()) as *mut u8, tail.len());
    }
}

/// Invalidates every stage-1 and stage-2 TLB entry of the VMID currently
/// in VTTBR_EL2, on this CPU only. Partita does this lazily on each pCPU
/// rather than broadcasting it: a broadcast must wait for every other CPU,
/// however busy (and QEMU's round-robin mode can livelock on it).
pub fn invalidate_guest_tlb_local() {
    // SAFETY: TLB invalidation has no effect on memory contents.
    unsafe { asm!("dsb ishst", "tlbi vmalls12e1", "dsb nsh", "isb", options(nostack, preserves_flags)) };
}
