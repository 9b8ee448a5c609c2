//! How EL2 traps its guests: the trap controls every pCPU sets before it
//! runs any vCPU. `docs/architecture.md` explains each choice.

use crate::cpu::write_sysreg;
use crate::read_sysreg;

mod hcr {
    pub const VM: u64 = 1 << 0;
    pub const SWIO: u64 = 1 << 1;
    pub const FMO: u64 = 1 << 3;
    pub const IMO: u64 = 1 << 4;
    pub const AMO: u64 = 1 << 5;
    pub const FB: u64 = 1 << 9;
    pub const BSU_INNER: u64 = 1 << 10;
    pub const TWI: u64 = 1 << 13;
    pub const TID3: u64 = 1 << 18;
    pub const TSC: u64 = 1 << 19;
    pub const TIDCP: u64 = 1 << 20;
    pub const TACR: u64 = 1 << 21;
    pub const TSW: u64 = 1 << 22;
    pub const RW: u64 = 1 << 31;
    pub const APK: u64 = 1 << 40;
    pub const API: u64 = 1 << 41;
}

/// Stage 2 on; physical interrupts and aborts to EL2; trap WFI (so a waiting
/// vCPU yields its core), SMC, the ID registers (so a partition is not told
/// of a PMU it cannot use), implementation-defined registers, ACTLR_EL1
/// and set/way maintenance; EL1 is AArch64; broadcast TLB and barrier
/// operations to the inner-shareable domain for SMP guests.
pub const HCR_GUEST: u64 = hcr::VM
    | hcr::SWIO
    | hcr::FMO
    | hcr::IMO
    | hcr::AMO
    | hcr::FB
    | hcr::BSU_INNER
    | hcr::TWI
    | hcr::TID3
    | hcr::TSC
    | hcr::TIDCP
    | hcr::TACR
    | hcr::TSW
    | hcr::RW
    | hcr::APK
    | hcr::API;

/// Traps WFI (a shared pCPU: the waiting vCPU gives the core away) or lets
/// the guest execute it (an exclusive pCPU: the core sleeps in the guest and
/// wakes straight into it, with no exit for the wait). Routes physical IRQs
/// to EL2, or, on a direct-delivery core, leaves them (group 1, the
/// guest's) to EL1; FIQs (group 0, Partita's there) always come to EL2.
pub fn set_guest_traps(trap_wfi: bool, irq_to_el2: bool) {
    let mut hcr = HCR_GUEST;
    if !trap_wfi {
        hcr &= !hcr::TWI;
    }
    if !irq_to_el2 {
        hcr &= !hcr::IMO;
    }
    write_sysreg!("hcr_el2", hcr);
}

mod cptr {
    /// The bits that read as one (RES1), SVE trapped (TZ) among them.
    pub const RES1: u64 = 0x33ff;
    pub const TFP: u64 = 1 << 10;
    pub const TTA: u64 = 1 << 20;
}

/// Traps FP/SIMD at EL1, EL0 and EL2 (CPTR_EL2.TFP), or lets them run: a
/// vCPU runs untrapped only while its values are in the registers
/// (`partita_core::partition::fp`). Trace registers stay trapped (TTA).
/// Takes effect at the next context synchronization: the `eret` into the
/// guest, or an `isb` before EL2 itself touches the registers.
pub fn trap_fp(trap: bool) {
    let tfp = if trap { cptr::TFP } else { 0 };
    write_sysreg!("cptr_el2", cptr::RES1 | cptr::TTA | tfp);
}

mod mdcr {
    pub const HPMN: u64 = 0x1f;
    pub const TPMCR: u64 = 1 << 5;
    pub const TPM: u64 = 1 << 6;
    pub const TDA: u64 = 1 << 9;
    pub const TDOSA: u64 = 1 << 10;
    pub const TDRA: u64 = 1 << 11;
    /// Every debug register access (`partita_core::partition::debug`).
    pub const DEBUG: u64 = TDA | TDOSA | TDRA;
}

/// Traps the running vCPU's accesses to the debug registers, or lets them
/// reach the hardware (a vCPU that has them: they are switched with it).
/// TDE stays clear either way, so the guest's debug exceptions are its own.
pub fn trap_debug(trap: bool) {
    let others = read_sysreg!("mdcr_el2") & !mdcr::DEBUG;
    write_sysreg!("mdcr_el2", if trap { others | mdcr::DEBUG } else { others });
}

/// Sets the trap controls on this pCPU.
pub fn init_cpu() {
    write_sysreg!("hcr_el2", HCR_GUEST);
    // MDCR_EL2: keep HPMN; trap the PMU (TPM, TPMCR) and, until a vCPU
    // touches them, the debug registers.
    let hpmn = read_sysreg!("mdcr_el2") & mdcr::HPMN;
    write_sysreg!("mdcr_el2", hpmn | mdcr::TPMCR | mdcr::TPM | mdcr::DEBUG);
    // The debug registers' reset values are UNKNOWN; a vCPU that has not
    // touched them must find them as a reset leaves them architecturally.
    crate::context::DebugContext::RESET.restore();
    // FP/SIMD start trapped: no vCPU's values are in the registers yet.
    trap_fp(true);
    // CNTHCTL_EL2: EL1PCTEN and EL1PCEN set. The physical counter stays
    // readable (Linux's boot protocol asks for it, and it is the same counter
    // the virtual one shows); the EL1 physical timer is the loaded vCPU's,
    // like the virtual one, since Partita's own tick is the EL2 timer.
    write_sysreg!("cnthctl_el2", 0b11);
    write_sysreg!("cntvoff_el2", 0);
    write_sysreg!("vpidr_el2", read_sysreg!("midr_el1"));
    crate::cpu::isb();
}
