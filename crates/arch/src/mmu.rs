//! Partita's own EL2 translation: an identity map of RAM (normal, write-back
//! cacheable, but for one range that guests share uncached) and of the few
//! devices Partita drives (device-nGnRE).

use crate::cpu::write_sysreg;
use aarch64_paging::descriptor::El23Attributes;
use aarch64_paging::idmap::IdMap;
use aarch64_paging::paging::{El2, MemoryRegion};
use partita_core::config::model::Range;
use spin::Once;

/// MAIR_EL2: index 0 device-nGnRE, index 1 normal write-back, index 2
/// normal non-cacheable.
const MAIR: u64 = 0x04 | (0xff << 8) | (0x44 << 16);
const DEVICE: El23Attributes = El23Attributes::VALID
    .union(El23Attributes::ATTRIBUTE_INDEX_0)
    .union(El23Attributes::ACCESSED)
    .union(El23Attributes::XN);
const NORMAL: El23Attributes = El23Attributes::VALID
    .union(El23Attributes::ATTRIBUTE_INDEX_1)
    .union(El23Attributes::INNER_SHAREABLE)
    .union(El23Attributes::ACCESSED);
const UNCACHED: El23Attributes = El23Attributes::VALID
    .union(El23Attributes::ATTRIBUTE_INDEX_2)
    .union(El23Attributes::INNER_SHAREABLE)
    .union(El23Attributes::ACCESSED)
    .union(El23Attributes::XN);

/// 39-bit VA space starting at level 1: covers QEMU virt's devices and RAM.
const ROOT_LEVEL: usize = 1;
const T0SZ: u64 = 64 - 39;

struct Layout {
    root: u64,
    ram: Range,
    hypervisor: Range,
    uncached: Option<Range>,
}

static LAYOUT: Once<Layout> = Once::new();

/// Builds the EL2 map (primary CPU, once) and turns the MMU on. The RAM
/// of `uncached`, if any, is mapped normal non-cacheable: see
/// [`crate::uncached`].
pub fn init(ram: Range, hypervisor: Range, devices: &[Range], uncached: Option<Range>) {
    let mut map = IdMap::new(ROOT_LEVEL, El2);
    map.map_range(&region(ram), NORMAL).expect("EL2 map: RAM");
    if let Some(range) = uncached {
        // Its lines may still sit in the caches from before: gone before
        // the range is only ever accessed uncached.
        crate::cache::clean_invalidate(range.base, range.size);
        map.map_range(&region(range), UNCACHED).expect("EL2 map: uncached RAM");
    }
    for device in devices {
        map.map_range(&region(*device), DEVICE).expect("EL2 map: device");
    }
    let root = map.root_address().0 as u64;
    map.mark_active();
    // The table lives as long as Partita runs.
    core::mem::forget(map);
    LAYOUT.call_once(|| Layout { root, ram, hypervisor, uncached });
    enable();
}

fn region(r: Range) -> MemoryRegion {
    MemoryRegion::new(r.base as usize, r.end() as usize)
}

/// Turns the EL2 MMU and caches on with the map built by [`init`]
/// (secondary CPUs call this directly).
pub fn enable() {
    let layout = LAYOUT.get().expect("EL2 map not built");
    let ips = crate::cpu::pa_range().min(5);
    // TCR_EL2: RES1 bits 31 and 23, PS, 4K granule, inner-shareable
    // write-back walks.
    let tcr = (1 << 31) | (1 << 23) | (ips << 16) | (3 << 12) | (1 << 10) | (1 << 8) | T0SZ;
    write_sysreg!("mair_el2", MAIR);
    write_sysreg!("tcr_el2", tcr);
    write_sysreg!("ttbr0_el2", layout.root);
    crate::cpu::isb();
    // SAFETY: invalidating EL2 TLB entries before the first use of the map.
    unsafe { core::arch::asm!("tlbi alle2", "dsb ish", "isb", options(nostack, preserves_flags)) };
    // SCTLR_EL2: RES1 bits, M, C, SA, I.
    let sctlr: u64 = 0x30c5_0830 | (1 << 0) | (1 << 2) | (1 << 3) | (1 << 12);
    write_sysreg!("sctlr_el2", sctlr);
    crate::cpu::isb();
}

/// True when `[base, base + len)` is RAM outside Partita's own memory: the
/// only memory Partita writes on a partition's behalf.
pub fn is_partition_ram(base: u64, len: u64) -> bool {
    let Some(layout) = LAYOUT.get() else { return false };
    let Some(end) = base.checked_add(len) else { return false };
    let range = Range::new(base, end - base);
    layout.ram.covers(&range) && !layout.hypervisor.overlaps(&range)
}

/// True when `[base, base + len)` lies in the RAM [`init`] mapped uncached.
pub fn is_uncached(base: u64, len: u64) -> bool {
    let Some(uncached) = LAYOUT.get().and_then(|layout| layout.uncached) else { return false };
    base.checked_add(len).is_some_and(|end| uncached.covers(&Range::new(base, end - base)))
}
