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

/// One virtual interrupt waiting for (or sitting in) a list register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Virq {
    pub intid: u32,
    pub priority: u8,
    /// Tied to the physical interrupt with the same INTID: the guest's EOI
    /// deactivates it.
    pub hw: bool,
}
