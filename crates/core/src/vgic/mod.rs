//! The virtual GICv3 each partition sees.
//!
//! Written here rather than taken from a crate: no published crate manages
//! GICv3 list registers or emulates a distributor for a guest.
//!
//! - [`queue`]: a vCPU's pending interrupts that are not in a list register
//!   yet, highest priority first;
//! - [`lr`]: list-register encoding and the flush that fills them from the
//!   queue, evicting lower-priority pending entries when all are taken;
//! - [`regs`]: the emulated distributor and redistributors, which let a
//!   partition configure only the interrupts it owns.

pub mod lr;
pub mod queue;
pub mod regs;

#[cfg(test)]
mod tests {
    use super::sgi_targets;

    #[test]
    fn sgi_targets_by_list_and_to_all_others() {
        assert_eq!(sgi_targets((3 << 24) | 0b10, 2, 0), (3, 0b10));
        assert_eq!(sgi_targets((1 << 24) | 0b1100, 3, 0), (1, 0b100), "vCPU 3 does not exist");
        assert_eq!(sgi_targets((1 << 24) | (1 << 16) | 1, 2, 0), (1, 0), "Aff1 = 1 names nobody");
        assert_eq!(sgi_targets((2 << 24) | (1 << 40), 4, 1), (2, 0b1101));
    }
}

/// First SPI INTID; below are SGIs (0..16) and PPIs (16..32).
pub const SPI_BASE: u32 = 32;
/// INTIDs that are private to a vCPU.
pub const PRIVATE: u32 = 32;
/// The EL1 virtual timer's PPI.
pub const VTIMER_INTID: u32 = 27;
/// The GIC maintenance interrupt (PPI 9).
pub const MAINTENANCE_INTID: u32 = 25;
/// Priority a virtual interrupt has until the guest sets one.
pub const DEFAULT_PRIORITY: u8 = 0xa0;

/// The SGI and the vCPUs an ICC_SGI1R_EL1 value names, as a bit mask.
/// Partita gives vCPU `i` the affinity 0.0.0.i, so only Aff0 targets with
/// zero higher affinity fields exist; IRM=1 means every other vCPU.
pub fn sgi_targets(value: u64, vcpus: usize, sender: usize) -> (u32, u32) {
    let intid = ((value >> 24) & 0xf) as u32;
    let all: u32 = if vcpus >= 32 { u32::MAX } else { (1 << vcpus) - 1 };
    if value & (1 << 40) != 0 {
        return (intid, all & !(1 << sender));
    }
    let higher_affinity = (value >> 16) & 0xff | (value >> 32) & 0xff | (value >> 48) & 0xff;
    let list = if higher_affinity == 0 { (value & 0xffff) as u32 } else { 0 };
    (intid, list & all)
}

/// One virtual interrupt waiting for (or sitting in) a list register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Virq {
    pub intid: u32,
    pub priority: u8,
    /// Tied to the physical interrupt with the same INTID: the guest's EOI
    /// deactivates it.
    pub hw: bool,
}
