//! Stage-2 translation: one table per partition, tagged with its VMID.

use crate::cpu::write_sysreg;
use aarch64_paging::descriptor::PhysicalAddress;
use aarch64_paging::descriptor::Stage2Attributes;
use aarch64_paging::idmap::IdTranslation;
use aarch64_paging::paging::{Constraints, MemoryRegion, Stage2};
use aarch64_paging::Mapping;

/// 39-bit guest-physical space, starting at level 1 (VTCR_EL2.SL0 = 1).
const ROOT_LEVEL: usize = 1;
const T0SZ: u64 = 64 - 39;

/// What a stage-2 mapping gives the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Normal write-back cacheable RAM.
    Ram { write: bool, exec: bool },
    /// Device-nGnRE MMIO of a passthrough device, never executable.
    Device,
}

/// A partition's stage-2 table. The tables are allocated from the boot heap
/// and live as long as the partition.
pub struct Stage2Table {
    mapping: Mapping<IdTranslation<Stage2Attributes>, Stage2>,
    vmid: u16,
}

// SAFETY: the table's memory is the boot heap's, reachable from every CPU;
// its owner serialises every change (a lock around the table), so moving
// the handle between CPUs is sound.
unsafe impl Send for Stage2Table {}

impl Stage2Table {
    pub fn new(vmid: u16) -> Self {
        Self { mapping: Mapping::new(IdTranslation::new(), ROOT_LEVEL, Stage2), vmid }
    }

    /// Maps guest-physical `[ipa, ipa + size)` to host-physical `pa`.
    pub fn map(&mut self, ipa: u64, pa: u64, size: u64, kind: Kind) -> Result<(), aarch64_paging::MapError> {
        let range = MemoryRegion::new(ipa as usize, (ipa + size) as usize);
        let attrs = attributes(kind);
        self.mapping.map_range(&range, PhysicalAddress(pa as usize), attrs, Constraints::empty())
    }

    /// Makes the RAM pages `[ipa, ipa + size)`, already mapped, writable or
    /// read-only: an accelerator's interface page as its device connects
    /// and disconnects. Only the permission bits change, which needs no
    /// break-before-make; TLBs that may still hold the old permission are
    /// the caller's to invalidate before it relies on the new one.
    pub fn set_writable(&mut self, ipa: u64, size: u64, write: bool) -> Result<(), aarch64_paging::MapError> {
        let range = MemoryRegion::new(ipa as usize, (ipa + size) as usize);
        let (set, clear) = if write {
            (Stage2Attributes::S2AP_ACCESS_RW, Stage2Attributes::empty())
        } else {
            (Stage2Attributes::S2AP_ACCESS_RO, Stage2Attributes::S2AP_ACCESS_WO)
        };
        self.mapping.modify_range(&range, &|_, descriptor| {
            if descriptor.is_table() || !descriptor.flags().contains(Stage2Attributes::VALID) {
                return Ok(());
            }
            descriptor.modify_flags(set, clear)
        })
    }

    /// VTTBR_EL2 value: VMID in bits 55:48, table base below.
    pub fn vttbr(&self) -> u64 {
        (u64::from(self.vmid) << 48) | self.mapping.root_address().0 as u64
    }
}

fn attributes(kind: Kind) -> Stage2Attributes {
    let base = Stage2Attributes::VALID | Stage2Attributes::ACCESS_FLAG;
    match kind {
        Kind::Ram { write, exec } => {
            let access = if write { Stage2Attributes::S2AP_ACCESS_RW } else { Stage2Attributes::S2AP_ACCESS_RO };
            let xn = if exec { Stage2Attributes::empty() } else { Stage2Attributes::XN };
            base | access
                | xn
                | Stage2Attributes::SH_INNER
                | Stage2Attributes::MEMATTR_NORMAL_INNER_WB
                | Stage2Attributes::MEMATTR_NORMAL_OUTER_WB
        }
        Kind::Device => {
            base | Stage2Attributes::S2AP_ACCESS_RW | Stage2Attributes::XN | Stage2Attributes::MEMATTR_DEVICE_nGnRE
        }
    }
}

/// Configures VTCR_EL2 for the tables this module builds (once per CPU).
pub fn init_cpu() {
    let ps = crate::cpu::pa_range().min(5);
    // RES1 bit 31, PS, 4K granule, inner-shareable write-back walks,
    // start at level 1.
    let vtcr = (1 << 31) | (ps << 16) | (3 << 12) | (1 << 10) | (1 << 8) | (1 << 6) | T0SZ;
    write_sysreg!("vtcr_el2", vtcr);
    crate::cpu::isb();
}

/// Switches the guest-physical address space to `vttbr`.
pub fn activate(vttbr: u64) {
    write_sysreg!("vttbr_el2", vttbr);
    crate::cpu::isb();
}
