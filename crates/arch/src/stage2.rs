//! Stage-2 translation: one table per partition, tagged with its VMID.

use crate::cpu::write_sysreg;
use aarch64_paging::descriptor::PhysicalAddress;
use aarch64_paging::descriptor::Stage2Attributes;
use aarch64_paging::idmap::IdTranslation;
use aarch64_paging::paging::{Constraints, MemoryRegion, Stage2};
use aarch64_paging::Mapping;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering};

/// 39-bit guest-physical space, starting at level 1 (VTCR_EL2.SL0 = 1).
const ROOT_LEVEL: usize = 1;
const T0SZ: u64 = 64 - 39;
const LEAF_LEVEL: usize = 3;
const PAGE_SIZE: usize = 4096;

/// What a stage-2 mapping gives the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Normal write-back cacheable RAM.
    Ram { write: bool, exec: bool },
    /// Device-nGnRE MMIO of a passthrough device, never executable.
    Device,
    /// Device-nGnRE MMIO the guest may only read: a view of registers
    /// Partita drives (the timed-I/O controller).
    DeviceReadOnly,
    /// Normal non-cacheable RAM, never executable, whatever the guest's
    /// own mapping makes of it: a page the guest shares with Partita
    /// uncached (see [`crate::uncached`]).
    Uncached { write: bool },
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

    /// The write permission of the 4 KiB page mapped at `ipa`, to change
    /// later without a walk: `None` unless a last-level descriptor maps
    /// it. The table must never be changed again where `ipa` is mapped
    /// (Partita maps all at boot and changes nothing after).
    pub fn page_permission(&self, ipa: u64) -> Option<PagePermission> {
        let range = MemoryRegion::new(ipa as usize, ipa as usize + PAGE_SIZE);
        let mut found = None;
        let _ = self.mapping.walk_range(&range, &mut |_, descriptor, level| {
            if level == LEAF_LEVEL && descriptor.is_valid() {
                found = Some(NonNull::from(descriptor).cast::<AtomicUsize>());
            }
            Ok(())
        });
        found.map(|descriptor| PagePermission { descriptor })
    }

    /// VTTBR_EL2 value: VMID in bits 55:48, table base below.
    pub fn vttbr(&self) -> u64 {
        (u64::from(self.vmid) << 48) | self.mapping.root_address().0 as u64
    }
}

/// One page's stage-2 descriptor, whose write permission a virtual
/// device's connection turns on and off. A single atomic change of the
/// descriptor in place: the crate's `modify_range` walks from the root and
/// scans each table it passes for changes, over a thousand instructions,
/// which Path 1's budget (twice a null hypercall) cannot afford. Only the
/// permission bits change, which needs no break-before-make; TLBs that may
/// still hold the old permission are the caller's to invalidate before it
/// relies on the new one.
pub struct PagePermission {
    descriptor: NonNull<AtomicUsize>,
}

// SAFETY: the descriptor is in a table of the boot heap, reachable from
// every CPU, and only ever changed by atomic read-modify-writes.
unsafe impl Send for PagePermission {}
// SAFETY: as above; concurrent changes are atomic on the one word.
unsafe impl Sync for PagePermission {}

impl PagePermission {
    pub fn set_writable(&self, write: bool) {
        let bit = Stage2Attributes::S2AP_ACCESS_WO.bits();
        // SAFETY: `page_permission` found this descriptor in a table that
        // lives as long as its partition, which lives as long as Partita,
        // and whose mapping of the page never changes after boot; the
        // descriptor is `#[repr(C)]` over one `AtomicUsize`.
        let descriptor = unsafe { self.descriptor.as_ref() };
        if write {
            descriptor.fetch_or(bit, Ordering::Release);
        } else {
            descriptor.fetch_and(!bit, Ordering::Release);
        }
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
        Kind::Uncached { write } => {
            let access = if write { Stage2Attributes::S2AP_ACCESS_RW } else { Stage2Attributes::S2AP_ACCESS_RO };
            base | access
                | Stage2Attributes::XN
                | Stage2Attributes::SH_INNER
                | Stage2Attributes::MEMATTR_NORMAL_INNER_NC
                | Stage2Attributes::MEMATTR_NORMAL_OUTER_NC
        }
        Kind::Device => {
            base | Stage2Attributes::S2AP_ACCESS_RW | Stage2Attributes::XN | Stage2Attributes::MEMATTR_DEVICE_nGnRE
        }
        Kind::DeviceReadOnly => {
            base | Stage2Attributes::S2AP_ACCESS_RO | Stage2Attributes::XN | Stage2Attributes::MEMATTR_DEVICE_nGnRE
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
