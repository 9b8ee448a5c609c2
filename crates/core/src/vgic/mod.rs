//! The virtual GIC each partition sees: a GICv3, or on a board with a
//! GIC-400 a GICv2 ([`regs::v2`]) over the same state.
//!
//! Written here rather than taken from a crate: no published crate manages
//! GICv3 list registers or emulates a distributor for a guest.
//!
//! - [`bank`]: 32 interrupts' configuration in words, as the
//!   distributor's registers lay it out, and what a write to each does;
//! - [`queue`]: a vCPU's pending interrupts that are not in a list register
//!   yet, highest priority first;
//! - [`lr`]: list-register encoding and the flush that fills them from the
//!   queue, evicting lower-priority pending entries when all are taken;
//! - [`direct`]: a direct partition's SGIs, checked and sent by the EL2
//!   vector from the route each pCPU is given;
//! - [`regs`]: the emulated distributor and redistributors, which let a
//!   partition configure only the interrupts it owns; [`regs::v2`] the
//!   GICv2 distributor's view of them, and [`lr::gicv2`] GICv2's list
//!   register layout.

pub mod bank;
pub mod direct;
pub mod lr;
pub mod queue;
pub mod regs;

#[cfg(test)]
mod tests {
    use super::{is_timer, sgi_targets, timer_asserted};

    #[test]
    fn a_timer_line_needs_enable_no_mask_and_its_deadline() {
        assert!(timer_asserted(0b001, 100, 100));
        assert!(!timer_asserted(0b001, 100, 99), "before its compare value");
        assert!(!timer_asserted(0b011, 100, 200), "masked");
        assert!(!timer_asserted(0b000, 100, 200), "disabled");
        assert!(timer_asserted(0b101, 100, 200), "a stale ISTATUS bit does not matter");
        assert!(is_timer(27) && is_timer(30) && !is_timer(26) && !is_timer(29));
    }

    #[test]
    fn sgi_targets_by_list_and_to_all_others() {
        assert_eq!(sgi_targets((3 << 24) | 0b10, 2, 0), (3, 0b10));
        assert_eq!(sgi_targets((1 << 24) | 0b1100, 3, 0), (1, 0b100), "vCPU 3 does not exist");
        assert_eq!(sgi_targets((1 << 24) | (1 << 16) | 1, 2, 0), (1, 0), "Aff1 = 1 names nobody");
        assert_eq!(sgi_targets((1 << 24) | (1 << 44) | 1, 2, 0), (1, 0), "RS = 1 (Aff0 16) names nobody");
        assert_eq!(sgi_targets((2 << 24) | (1 << 40), 4, 1), (2, 0b1101));
    }
}

/// First SPI INTID; below are SGIs (0..16) and PPIs (16..32).
pub const SPI_BASE: u32 = 32;
/// INTIDs that are private to a vCPU.
pub const PRIVATE: u32 = 32;
/// The EL1 virtual timer's PPI.
pub const VTIMER_INTID: u32 = 27;
/// The EL1 (non-secure) physical timer's PPI.
pub const PTIMER_INTID: u32 = 30;
/// The EL1 timers a vCPU owns while it is loaded; their PPIs are the
/// physical ones of its pCPU, forwarded with the HW bit.
pub const TIMER_INTIDS: [u32; 2] = [VTIMER_INTID, PTIMER_INTID];
/// The GIC maintenance interrupt (PPI 9).
pub const MAINTENANCE_INTID: u32 = 25;
/// Priority a virtual interrupt has until the guest sets one.
pub const DEFAULT_PRIORITY: u8 = 0xa0;

/// True for the PPI of one of a vCPU's EL1 timers.
pub const fn is_timer(intid: u32) -> bool {
    intid == VTIMER_INTID || intid == PTIMER_INTID
}

/// An EL1 timer whose CNTx_CTL is enabled and not masked raises its
/// interrupt once the counter reaches CNTx_CVAL.
pub const fn timer_armed(ctl: u64) -> bool {
    ctl & 0b11 == 0b01
}

/// Whether a timer with these CTL and CVAL asserts its interrupt line at
/// counter value `now`: what ISTATUS would show, for a timer that is not
/// loaded. Both timers count the physical counter (CNTVOFF_EL2 is 0).
pub const fn timer_asserted(ctl: u64, cval: u64, now: u64) -> bool {
    timer_armed(ctl) && now >= cval
}

/// The SGI and the vCPUs an ICC_SGI1R_EL1 value names, as a bit mask.
/// Partita gives vCPU `i` the affinity 0.0.0.i, so only Aff0 targets 0-15
/// (range selector 0) with zero higher affinity fields exist; IRM=1 means
/// every other vCPU.
pub fn sgi_targets(value: u64, vcpus: usize, sender: usize) -> (u32, u32) {
    let intid = ((value >> 24) & 0xf) as u32;
    let all: u32 = if vcpus >= 32 { u32::MAX } else { (1 << vcpus) - 1 };
    if value & (1 << 40) != 0 {
        return (intid, all & !(1 << sender));
    }
    let range_selector = (value >> 44) & 0xf;
    let higher_affinity = (value >> 16) & 0xff | (value >> 32) & 0xff | (value >> 48) & 0xff | range_selector;
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
