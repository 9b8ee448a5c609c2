//! The per-pCPU route the EL2 vector answers a direct partition's SGI
//! from (docs/interrupts.md; the vector is in [`crate::exception`], the
//! route's meaning in `partita_core::vgic::direct`).
//!
//! The hypervisor offers its route as a direct vCPU enters a pCPU and
//! withdraws it as the vCPU leaves; while none is offered, every write to
//! ICC_SGI1R_EL1 goes on to the full answer.

use crate::MAX_CPUS;
use core::cell::UnsafeCell;
use core::mem::{align_of, offset_of, size_of};
use partita_core::config::limits::MAX_VCPUS_PER_PARTITION;
use partita_core::vgic::direct::SgiRoute;

/// One pCPU's route as the assembly reads it.
#[repr(C, align(128))]
pub(crate) struct Slot {
    /// Per vCPU, the physical ICC_SGI1R_EL1 value of its home, INTID 0.
    targets: [u64; MAX_VCPUS_PER_PARTITION],
    /// The bits an accepted value leaves clear.
    forbidden: u64,
    /// Bit n: SGI n may be sent. Loaded with `forbidden` in one pair.
    allowed: u64,
}

/// The offsets the assembly uses.
pub const TARGETS: usize = offset_of!(Slot, targets);
pub const FORBIDDEN: usize = offset_of!(Slot, forbidden);
/// A slot's size as a shift, so that the vector finds its pCPU's slot
/// with one shifted add of TPIDR_EL2 (the pCPU's index).
pub const SLOT_SHIFT: u32 = 7;

// The vector indexes `targets` from the slot's start, loads `forbidden`
// and `allowed` as one pair within LDP's reach, and steps by one slot.
const _: () = assert!(TARGETS == 0);
const _: () = assert!(offset_of!(Slot, allowed) == FORBIDDEN + 8);
const _: () = assert!(FORBIDDEN.is_multiple_of(8) && FORBIDDEN + 8 <= 504);
const _: () = assert!(size_of::<Slot>() == 1 << SLOT_SHIFT);

/// Every pCPU's slot. Page-aligned, so that ADRP alone yields its address
/// in the vector (no `:lo12:` add).
#[repr(C, align(4096))]
pub(crate) struct Routes([UnsafeCell<Slot>; MAX_CPUS]);

const _: () = assert!(align_of::<Routes>() == 4096);

// SAFETY: each CPU reaches only its own slot (indexed by TPIDR_EL2, the
// CPU's index), from EL2 with interrupts masked: the Rust below while the
// CPU runs no guest, the vector while it takes a guest's trap. No two
// accesses ever overlap.
unsafe impl Sync for Routes {}

/// All zeros (no SGI allowed, `SgiRoute::NONE`), so in .bss.
pub(crate) static DIRECT_SGI_ROUTES: Routes = Routes(
    [const { UnsafeCell::new(Slot { targets: [0; MAX_VCPUS_PER_PARTITION], forbidden: 0, allowed: 0 }) }; MAX_CPUS],
);

/// The vector answers this pCPU's vCPU's SGIs by `route` from its next
/// entry on.
pub fn offer(route: &SgiRoute) {
    write(route.targets, route.forbidden, route.allowed);
}

/// The vector answers none of this pCPU's SGIs any more.
pub fn withdraw() {
    let none = SgiRoute::NONE;
    write(none.targets, none.forbidden, none.allowed);
}

fn write(targets: [u64; MAX_VCPUS_PER_PARTITION], forbidden: u64, allowed: u64) {
    let slot = DIRECT_SGI_ROUTES.0[crate::cpu::index()].get();
    // SAFETY: only this CPU touches its slot (see `Routes`) and no
    // reference to it outlives this call; the vector reads it only once
    // this CPU has returned to a guest, after these stores.
    unsafe { *slot = Slot { targets, forbidden, allowed } };
}
