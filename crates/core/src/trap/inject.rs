//! Exceptions Partita gives a guest instead of stopping it: the synchronous
//! exception a machine without Partita would have taken at EL1 for an
//! access outside the partition (a synchronous external abort) or for a
//! register Partita does not give (UNDEFINED). The arithmetic of the
//! exception entry lives here (syndrome, vector, saved and new PSTATE); the
//! hypervisor only writes the results into the vCPU's EL1 registers.

use crate::trap::esr::{class, ec};

/// ESR.IL: a 32-bit instruction. It is also what the architecture reports
/// (as RES1) for the exceptions given here: instruction aborts, data aborts
/// without a valid ISS, and unknown-reason exceptions.
const IL: u64 = 1 << 25;
/// DFSC/IFSC: synchronous external abort, not on a translation table walk.
pub const FSC_EXTERNAL_ABORT: u64 = 0x10;
/// The data-abort ISS bits the stage-2 syndrome knows as well as the guest
/// would have: FnV (FAR not valid), CM (cache maintenance), WnR (a write).
const DABT_KEPT: u64 = (1 << 10) | (1 << 8) | (1 << 6);
/// The instruction-abort ISS bit the stage-2 syndrome carries over: FnV.
const IABT_KEPT: u64 = 1 << 10;

/// PSTATE fields (as SPSR holds them) that exception entry reads or sets.
pub mod pstate {
    /// M[3:0]: the exception level and stack pointer.
    pub const MODE: u64 = 0xf;
    /// M[4]: the interrupted context was AArch32.
    pub const AARCH32: u64 = 1 << 4;
    pub const EL0T: u64 = 0b0000;
    pub const EL1T: u64 = 0b0100;
    pub const EL1H: u64 = 0b0101;
    /// D, A, I and F.
    pub const DAIF: u64 = 0xf << 6;
    pub const SSBS: u64 = 1 << 12;
    /// Software step: 0 once a stepped instruction has completed.
    pub const SS: u64 = 1 << 21;
    pub const PAN: u64 = 1 << 22;
    pub const DIT: u64 = 1 << 24;
    /// N, Z, C and V: exception entry leaves them as they are.
    pub const NZCV: u64 = 0xf << 28;
}

/// SCTLR_EL1 bits that decide PSTATE on entry to EL1.
pub mod sctlr {
    /// Set PAN on exception entry unless this is 1.
    pub const SPAN: u64 = 1 << 23;
    /// The PSTATE.SSBS an exception entry sets.
    pub const DSSBS: u64 = 1 << 44;
}

/// Vector table offsets from VBAR_EL1 for a synchronous exception.
pub mod vector {
    pub const CURRENT_SP0: u64 = 0x000;
    pub const CURRENT_SPX: u64 = 0x200;
    pub const LOWER_AARCH64: u64 = 0x400;
    pub const LOWER_AARCH32: u64 = 0x600;
}

/// A synchronous exception for the guest's own EL1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exception {
    /// EC 0x00: the instruction is UNDEFINED.
    Undefined,
    /// A synchronous external abort on an instruction fetch (`fetch`) or a
    /// data access at virtual address `va`. `kept` holds the ISS bits the
    /// stage-2 syndrome already had right for the guest (WnR, CM, FnV).
    ExternalAbort { fetch: bool, va: u64, kept: u64 },
}

impl Exception {
    /// The external abort a stage-2 abort (ESR_EL2 `esr`, FAR_EL2 `far`)
    /// stands for; `None` for any other syndrome.
    pub const fn abort(esr: u64, far: u64) -> Option<Exception> {
        match class(esr) {
            ec::DABT_LOWER => Some(Exception::ExternalAbort { fetch: false, va: far, kept: esr & DABT_KEPT }),
            ec::IABT_LOWER => Some(Exception::ExternalAbort { fetch: true, va: far, kept: esr & IABT_KEPT }),
            _ => None,
        }
    }

    /// ESR_EL1 for this exception, taken from the guest's EL1
    /// (`from_el1`) or from its EL0.
    pub const fn syndrome(self, from_el1: bool) -> u64 {
        match self {
            Exception::Undefined => ((ec::UNKNOWN as u64) << 26) | IL,
            Exception::ExternalAbort { fetch, kept, .. } => {
                let lower = if fetch { ec::IABT_LOWER } else { ec::DABT_LOWER };
                // The same-EL class is the lower-EL one plus one.
                let class = lower as u64 + from_el1 as u64;
                (class << 26) | IL | kept | FSC_EXTERNAL_ABORT
            }
        }
    }

    /// FAR_EL1: the faulting virtual address of an abort; an UNDEFINED
    /// instruction leaves FAR_EL1 as it was (its value is UNKNOWN).
    pub const fn fault_address(self) -> Option<u64> {
        match self {
            Exception::Undefined => None,
            Exception::ExternalAbort { va, .. } => Some(va),
        }
    }
}

/// Whether the interrupted context (its PSTATE as SPSR_EL2 holds it) was
/// the guest's EL1 rather than its EL0.
pub const fn from_el1(pstate: u64) -> bool {
    pstate & pstate::AARCH32 == 0 && matches!(pstate & pstate::MODE, pstate::EL1T | pstate::EL1H)
}

/// Where in the guest's vector table a synchronous exception from a
/// context with this PSTATE goes.
pub const fn vector_offset(pstate: u64) -> u64 {
    if pstate & pstate::AARCH32 != 0 {
        return vector::LOWER_AARCH32;
    }
    match pstate & pstate::MODE {
        pstate::EL1T => vector::CURRENT_SP0,
        pstate::EL1H => vector::CURRENT_SPX,
        _ => vector::LOWER_AARCH64,
    }
}

/// Optional features that change PSTATE on exception entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// FEAT_PAN: entry sets PAN unless SCTLR_EL1.SPAN is 1.
    pub pan: bool,
    /// FEAT_SSBS: entry copies SCTLR_EL1.DSSBS into PSTATE.SSBS.
    pub ssbs: bool,
}

/// PSTATE on entry to the guest's EL1: EL1 with SP_EL1, D, A, I and F
/// masked, SS, IL and BTYPE clear; the flags and DIT are kept. MTE is not
/// given to partitions, so TCO needs no rule here.
pub const fn entry_pstate(old: u64, sctlr_el1: u64, features: Features) -> u64 {
    let mut new = (old & (pstate::NZCV | pstate::DIT)) | pstate::EL1H | pstate::DAIF;
    if features.pan {
        let set = sctlr_el1 & sctlr::SPAN == 0;
        new |= if set { pstate::PAN } else { old & pstate::PAN };
    }
    if features.ssbs && sctlr_el1 & sctlr::DSSBS != 0 {
        new |= pstate::SSBS;
    }
    new
}

/// The guest's EL1 state an exception entry reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct El1 {
    pub vbar: u64,
    pub sctlr: u64,
    pub features: Features,
}

/// Everything an exception entry writes: the EL1 registers, and where
/// and how the guest resumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub esr: u64,
    /// `None`: FAR_EL1 is left as it is.
    pub far: Option<u64>,
    pub elr: u64,
    pub spsr: u64,
    pub pc: u64,
    pub pstate: u64,
}

/// The entry into the guest's vector for `exception`, taken by the
/// instruction at `pc` in a context whose PSTATE was `pstate`. `None` when
/// the guest could only take it again and again: an instruction abort at
/// the very vector it would be sent to (a vector table outside its
/// memory), which hardware would repeat for ever.
pub fn enter(exception: Exception, pc: u64, pstate: u64, el1: El1) -> Option<Entry> {
    let target = el1.vbar.wrapping_add(vector_offset(pstate));
    if matches!(exception, Exception::ExternalAbort { fetch: true, va, .. } if va == target) {
        return None;
    }
    Some(Entry {
        esr: exception.syndrome(from_el1(pstate)),
        far: exception.fault_address(),
        elr: pc,
        spsr: pstate,
        pc: target,
        pstate: entry_pstate(pstate, el1.sctlr, el1.features),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VBAR: u64 = 0x4000_0800;
    const EL1H_MASKED: u64 = pstate::EL1H | pstate::DAIF;

    fn el1() -> El1 {
        El1 { vbar: VBAR, sctlr: 0x30d0_0800, features: Features::default() }
    }

    /// ESR_EL2 of a stage-2 data abort on a store (WnR) with no valid ISS.
    fn dabt_store() -> u64 {
        ((ec::DABT_LOWER as u64) << 26) | IL | (1 << 6) | 0x07
    }

    #[test]
    fn an_undefined_instruction_is_ec_0_with_il() {
        assert_eq!(Exception::Undefined.syndrome(true), 0x0200_0000);
        assert_eq!(Exception::Undefined.syndrome(false), 0x0200_0000);
        assert_eq!(Exception::Undefined.fault_address(), None);
    }

    #[test]
    fn a_stage_2_data_abort_becomes_a_synchronous_external_abort() {
        let abort = Exception::abort(dabt_store(), 0x5000_0000).unwrap();
        assert_eq!(abort, Exception::ExternalAbort { fetch: false, va: 0x5000_0000, kept: 1 << 6 });
        // EC 0x25 from EL1, IL, ISV 0, WnR kept, FSC 0x10 (not the stage-2 translation fault).
        assert_eq!(abort.syndrome(true), 0x9600_0050);
        assert_eq!(abort.syndrome(false), 0x9200_0050);
        assert_eq!(abort.fault_address(), Some(0x5000_0000));
        // The ISV bit and the access's size and register never reach the guest.
        let with_isv = dabt_store() | (1 << 24) | (2 << 22) | (3 << 16);
        assert_eq!(Exception::abort(with_isv, 0).unwrap().syndrome(true), 0x9600_0050);
    }

    #[test]
    fn a_stage_2_instruction_abort_becomes_one_too() {
        let esr = ((ec::IABT_LOWER as u64) << 26) | IL | 0x06;
        let abort = Exception::abort(esr, 0x4100_0000).unwrap();
        assert_eq!(abort.syndrome(true), 0x8600_0010);
        assert_eq!(abort.syndrome(false), 0x8200_0010);
        assert_eq!(Exception::abort(0x5a00_0000, 0), None, "an HVC is no abort");
    }

    #[test]
    fn the_vector_follows_the_interrupted_context() {
        assert_eq!(vector_offset(pstate::EL1H | pstate::DAIF), 0x200);
        assert_eq!(vector_offset(pstate::EL1T), 0x000);
        assert_eq!(vector_offset(pstate::EL0T), 0x400);
        assert_eq!(vector_offset(pstate::AARCH32 | 0x10), 0x600);
        assert!(from_el1(pstate::EL1T) && from_el1(pstate::EL1H));
        assert!(!from_el1(pstate::EL0T) && !from_el1(pstate::AARCH32 | pstate::EL1H));
    }

    #[test]
    fn entry_masks_everything_and_keeps_the_flags() {
        let old = pstate::NZCV | pstate::SS | pstate::DIT | pstate::EL0T | (0b11 << 10);
        assert_eq!(entry_pstate(old, 0, Features::default()), pstate::NZCV | pstate::DIT | EL1H_MASKED);
    }

    #[test]
    fn pan_is_set_unless_span_and_ssbs_follows_dssbs() {
        let pan = Features { pan: true, ssbs: false };
        assert_eq!(entry_pstate(pstate::EL1H, 0, pan), EL1H_MASKED | pstate::PAN);
        assert_eq!(entry_pstate(pstate::EL1H, sctlr::SPAN, pan), EL1H_MASKED);
        assert_eq!(entry_pstate(pstate::EL1H | pstate::PAN, sctlr::SPAN, pan), EL1H_MASKED | pstate::PAN);
        // Without the feature the bit is never set.
        assert_eq!(entry_pstate(pstate::EL1H, 0, Features::default()), EL1H_MASKED);
        let ssbs = Features { pan: false, ssbs: true };
        assert_eq!(entry_pstate(pstate::EL1H, sctlr::DSSBS, ssbs), EL1H_MASKED | pstate::SSBS);
        assert_eq!(entry_pstate(pstate::EL1H | pstate::SSBS, 0, ssbs), EL1H_MASKED);
    }

    #[test]
    fn an_undefined_register_enters_the_current_el_vector() {
        let pstate = pstate::EL1H | (1 << 7) | pstate::SS;
        let entry = enter(Exception::Undefined, 0x4000_1234, pstate, el1()).unwrap();
        assert_eq!(
            entry,
            Entry {
                esr: 0x0200_0000,
                far: None,
                elr: 0x4000_1234,
                spsr: pstate,
                pc: VBAR + 0x200,
                pstate: EL1H_MASKED
            }
        );
    }

    #[test]
    fn an_abort_from_el0_enters_the_lower_el_vector() {
        let abort = Exception::abort(dabt_store(), 0x5000_0008).unwrap();
        let entry = enter(abort, 0x4000_2000, pstate::EL0T, el1()).unwrap();
        assert_eq!((entry.esr >> 26, entry.far, entry.pc), (0x24, Some(0x5000_0008), VBAR + 0x400));
        assert_eq!((entry.elr, entry.spsr, entry.pstate), (0x4000_2000, pstate::EL0T, EL1H_MASKED));
    }

    #[test]
    fn a_vector_outside_memory_is_not_entered_again_and_again() {
        let esr = ((ec::IABT_LOWER as u64) << 26) | IL | 0x06;
        let at_vector = Exception::abort(esr, VBAR + 0x200).unwrap();
        assert_eq!(enter(at_vector, VBAR + 0x200, pstate::EL1H, el1()), None);
        // The same address reached from SP_EL0 goes to another vector first.
        assert!(enter(at_vector, VBAR + 0x200, pstate::EL1T, el1()).is_some());
        let data = Exception::abort(dabt_store(), VBAR + 0x200).unwrap();
        assert!(enter(data, 0x4000_0000, pstate::EL1H, el1()).is_some());
    }
}
