//! Decoding ESR_EL2: why a guest trapped into the hypervisor.

/// Exception classes Partita handles (ESR_EL2.EC).
pub mod ec {
    pub const UNKNOWN: u8 = 0x00;
    pub const WFX: u8 = 0x01;
    pub const FP_ACCESS: u8 = 0x07;
    pub const HVC64: u8 = 0x16;
    pub const SMC64: u8 = 0x17;
    pub const SYSREG: u8 = 0x18;
    pub const IABT_LOWER: u8 = 0x20;
    pub const IABT_CURRENT: u8 = 0x21;
    pub const DABT_LOWER: u8 = 0x24;
    pub const DABT_CURRENT: u8 = 0x25;
}

/// A trapped guest exception, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trap {
    /// WFI (`wfe == false`) or WFE.
    Wait {
        wfe: bool,
    },
    Hvc {
        imm: u16,
    },
    Smc {
        imm: u16,
    },
    SysReg(SysRegAccess),
    /// A stage-2 data abort. The access, which MMIO emulation needs, is
    /// [`data_access`]'s to decode: an accelerator's interface page needs
    /// only the address, and Path 1 must cost little.
    DataAbort {
        fault_status: u8,
    },
    InstructionAbort {
        fault_status: u8,
    },
    /// Anything else: the class is kept for the log.
    Other {
        class: u8,
    },
}

/// A trapped MSR/MRS (or a system instruction such as DC ISW).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysRegAccess {
    pub reg: SysReg,
    /// The general-purpose register transferred.
    pub rt: u8,
    /// MRS (a read into `rt`) rather than MSR/SYS.
    pub read: bool,
}

/// A system register encoding `op0, op1, CRn, CRm, op2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SysReg {
    pub op0: u8,
    pub op1: u8,
    pub crn: u8,
    pub crm: u8,
    pub op2: u8,
}

impl SysReg {
    pub const fn new(op0: u8, op1: u8, crn: u8, crm: u8, op2: u8) -> Self {
        Self { op0, op1, crn, crm, op2 }
    }
}

/// A load or store described by the data-abort syndrome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmioAccess {
    pub write: bool,
    /// Access size in bytes: 1, 2, 4 or 8.
    pub size: u8,
    /// The general-purpose register transferred.
    pub rt: u8,
    /// Sign-extend a load.
    pub sign_extend: bool,
    /// The register is 64-bit (SF).
    pub wide: bool,
}

pub const fn class(esr: u64) -> u8 {
    ((esr >> 26) & 0x3f) as u8
}

const fn bits(value: u64, low: u32, width: u32) -> u64 {
    (value >> low) & ((1 << width) - 1)
}

/// Decodes ESR_EL2 of an exception taken from a lower exception level.
pub fn decode(esr: u64) -> Trap {
    let iss = iss(esr);
    match class(esr) {
        ec::WFX => Trap::Wait { wfe: iss & 1 == 1 },
        ec::HVC64 => Trap::Hvc { imm: iss as u16 },
        ec::SMC64 => Trap::Smc { imm: iss as u16 },
        ec::SYSREG => Trap::SysReg(decode_sysreg(iss)),
        ec::DABT_LOWER => Trap::DataAbort { fault_status: (iss & 0x3f) as u8 },
        ec::IABT_LOWER => Trap::InstructionAbort { fault_status: (iss & 0x3f) as u8 },
        class => Trap::Other { class },
    }
}

fn decode_sysreg(iss: u64) -> SysRegAccess {
    SysRegAccess {
        reg: SysReg {
            op0: bits(iss, 20, 2) as u8,
            op2: bits(iss, 17, 3) as u8,
            op1: bits(iss, 14, 3) as u8,
            crn: bits(iss, 10, 4) as u8,
            crm: bits(iss, 1, 4) as u8,
        },
        rt: bits(iss, 5, 5) as u8,
        read: iss & 1 == 1,
    }
}

/// ESR_EL2 of a trapped MSR to ICC_SGI1R_EL1 from register x0 (IL set, as
/// for every AArch64 instruction): with `Rt << 5` added, the syndrome of
/// any such write. The vector compares against it before it saves
/// anything beyond two registers (`partita_arch::exception`).
pub const SGI1R_WRITE: u32 = (ec::SYSREG as u32) << 26 | 1 << 25 | 3 << 20 | 5 << 17 | 12 << 10 | 11 << 1;

/// The register `Rt` of a trapped MSR to ICC_SGI1R_EL1 (op0 3, op1 0,
/// CRn 12, CRm 11, op2 5), from the syndrome alone: the fast path's check.
pub const fn sgi1r_write(esr: u64) -> Option<u8> {
    const RT_AND_DIRECTION: u64 = 0x1f << 5 | 1;
    const SGI1R: u64 = 3 << 20 | 5 << 17 | 12 << 10 | 11 << 1;
    let iss = iss(esr);
    if class(esr) == ec::SYSREG && iss & !RT_AND_DIRECTION == SGI1R && iss & 1 == 0 {
        Some(bits(iss, 5, 5) as u8)
    } else {
        None
    }
}

/// A trapped set/way operation (DC ISW, CSW or CISW, whatever its
/// register), from the syndrome alone: the fast path's check.
pub const fn set_way(esr: u64) -> bool {
    const RT: u64 = 0x1f << 5;
    const DC_SW: u64 = 1 << 20 | 2 << 17 | 7 << 10;
    let iss = iss(esr);
    class(esr) == ec::SYSREG
        && matches!(iss & !RT, x if x == DC_SW | 6 << 1 || x == DC_SW | 10 << 1 || x == DC_SW | 14 << 1)
}

/// The instruction-specific syndrome: ESR's low 25 bits.
const fn iss(esr: u64) -> u64 {
    esr & 0x1ff_ffff
}

/// The access of a data abort's syndrome `esr`, when the syndrome holds
/// one (ISV).
pub fn data_access(esr: u64) -> Option<MmioAccess> {
    let iss = iss(esr);
    let valid = bits(iss, 24, 1) == 1;
    valid.then(|| MmioAccess {
        size: 1 << bits(iss, 22, 2),
        sign_extend: bits(iss, 21, 1) == 1,
        rt: bits(iss, 16, 5) as u8,
        wide: bits(iss, 15, 1) == 1,
        write: bits(iss, 6, 1) == 1,
    })
}

/// The faulting guest-physical address of a stage-2 abort, from HPFAR_EL2
/// (page) and FAR_EL2 (offset within the page).
pub const fn fault_ipa(hpfar: u64, far: u64) -> u64 {
    ((hpfar >> 4) & 0xff_ffff_ffff) << 12 | (far & 0xfff)
}

/// A short name for an exception class, for logs.
pub fn class_name(class: u8) -> &'static str {
    match class {
        ec::UNKNOWN => "undefined instruction",
        ec::WFX => "WFI/WFE",
        ec::HVC64 => "HVC",
        ec::SMC64 => "SMC",
        ec::SYSREG => "system register access",
        ec::IABT_LOWER | ec::IABT_CURRENT => "instruction abort",
        ec::DABT_LOWER | ec::DABT_CURRENT => "data abort",
        0x07 => "FP/SIMD access",
        0x2f => "SError",
        _ => "exception",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ESR_EL2 of an MSR or MRS of `reg` with register `rt`.
    fn sysreg_esr(reg: SysReg, rt: u64, read: bool) -> u64 {
        let iss = u64::from(reg.op0) << 20
            | u64::from(reg.op2) << 17
            | u64::from(reg.op1) << 14
            | u64::from(reg.crn) << 10
            | rt << 5
            | u64::from(reg.crm) << 1
            | u64::from(read);
        u64::from(ec::SYSREG) << 26 | 1 << 25 | iss
    }

    #[test]
    fn the_sgi1r_check_agrees_with_the_decoder() {
        let sgi1r = SysReg::new(3, 0, 12, 11, 5);
        for rt in [0, 7, 18, 30, 31] {
            let esr = sysreg_esr(sgi1r, rt, false);
            assert_eq!(decode(esr), Trap::SysReg(SysRegAccess { reg: sgi1r, rt: rt as u8, read: false }));
            assert_eq!(sgi1r_write(esr), Some(rt as u8));
        }
        assert_eq!(sgi1r_write(sysreg_esr(sgi1r, 3, true)), None, "a read");
        for other in [SysReg::new(3, 0, 12, 11, 6), SysReg::new(3, 0, 12, 11, 7), SysReg::new(3, 0, 12, 12, 5)] {
            assert_eq!(sgi1r_write(sysreg_esr(other, 3, false)), None, "{other:?}");
        }
        assert_eq!(sgi1r_write(u64::from(ec::HVC64) << 26 | (sysreg_esr(sgi1r, 3, false) & 0x1ff_ffff)), None);
    }

    #[test]
    fn the_set_way_check_agrees_with_the_policy() {
        use crate::trap::sysreg::{policy, Policy};
        for op0 in 0..4 {
            for op1 in [0, 3] {
                for crn in [7, 12] {
                    for crm in 0..16 {
                        for op2 in 0..8 {
                            let reg = SysReg::new(op0, op1, crn, crm, op2);
                            for read in [false, true] {
                                let esr = sysreg_esr(reg, 5, read);
                                let expected = !read && policy(&reg, read) == Policy::SetWay;
                                assert_eq!(set_way(esr), expected, "{reg:?} read {read}");
                            }
                        }
                    }
                }
            }
        }
        let cisw = sysreg_esr(SysReg::new(1, 0, 7, 14, 2), 30, false);
        assert!(set_way(cisw));
        assert!(!set_way(u64::from(ec::HVC64) << 26 | (cisw & 0x1ff_ffff)));
    }

    /// The vector's test: the syndrome minus [`SGI1R_WRITE`] (32 bits,
    /// wrapping) has no bit outside Rt's field exactly when the decoder
    /// sees a write to ICC_SGI1R_EL1 with IL set.
    #[test]
    fn the_vectors_syndrome_test_agrees_with_the_decoder() {
        let vector = |esr: u64| {
            let rest = (esr as u32).wrapping_sub(SGI1R_WRITE);
            (rest & !(0x1f << 5) == 0).then_some((rest >> 5) as u8)
        };
        let sgi1r = SysReg::new(3, 0, 12, 11, 5);
        for rt in 0..32 {
            let esr = sysreg_esr(sgi1r, rt, false);
            assert_eq!(vector(esr), Some(rt as u8));
            assert_eq!(sgi1r_write(esr), Some(rt as u8));
            assert_eq!(vector(esr & !(1 << 25)), None, "IL clear");
            assert_eq!(vector(sysreg_esr(sgi1r, rt, true)), None, "a read");
        }
        // Every syndrome bit flipped alone, and a sample of the rest.
        let base = sysreg_esr(sgi1r, 9, false);
        let flips = (0..32).filter(|b| !(5..10).contains(b)).map(|b| base ^ 1 << b);
        let sample = (0..1u64 << 16).map(|k| (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) & 0xffff_ffff);
        for esr in flips.chain(sample) {
            let il = esr & 1 << 25 != 0;
            assert_eq!(vector(esr).is_some(), il && sgi1r_write(esr).is_some(), "{esr:#x}");
        }
    }

    #[test]
    fn decodes_a_32_bit_store_to_mmio() {
        // str w1, [x0]: EC=0x24, IL, ISV, SAS=2 (word), SRT=1, WnR, DFSC=translation L3.
        let esr = (0x24 << 26) | (1 << 25) | (1 << 24) | (2 << 22) | (1 << 16) | (1 << 6) | 0x07;
        let Trap::DataAbort { fault_status } = decode(esr) else { panic!("not a data abort") };
        let a = data_access(esr).expect("a valid syndrome");
        assert_eq!((a.write, a.size, a.rt, a.wide), (true, 4, 1, false));
        assert_eq!(fault_status, 0x07);
    }

    #[test]
    fn data_abort_without_syndrome_has_no_access() {
        let esr = (0x24 << 26) | (1 << 25) | 0x07;
        assert_eq!(decode(esr), Trap::DataAbort { fault_status: 0x07 });
        assert_eq!(data_access(esr), None);
    }

    #[test]
    fn decodes_dc_cisw_and_mrs() {
        // DC CISW, x3: op0=1 op1=0 CRn=7 CRm=14 op2=2, write.
        let iss = (1 << 20) | (2 << 17) | (7 << 10) | (3 << 5) | (14 << 1);
        let Trap::SysReg(access) = decode((0x18 << 26) | iss) else { panic!() };
        assert_eq!(access.reg, SysReg::new(1, 0, 7, 14, 2));
        assert_eq!((access.rt, access.read), (3, false));
        // MRS x5, CNTP_CTL_EL0: op0=3 op1=3 CRn=14 CRm=2 op2=1, read.
        let iss = (3 << 20) | (1 << 17) | (3 << 14) | (14 << 10) | (5 << 5) | (2 << 1) | 1;
        let Trap::SysReg(access) = decode((0x18 << 26) | iss) else { panic!() };
        assert_eq!(access.reg, SysReg::new(3, 3, 14, 2, 1));
        assert_eq!((access.rt, access.read), (5, true));
    }

    #[test]
    fn fault_ipa_combines_page_and_offset() {
        assert_eq!(fault_ipa(0x0900_0000 >> 8, 0xffff_0000_0000_0018), 0x0900_0018);
    }

    #[test]
    fn other_classes_are_named() {
        assert_eq!(decode(0x07 << 26), Trap::Other { class: 7 });
        assert_eq!(decode(0x17 << 26 | 0x12), Trap::Smc { imm: 0x12 });
        assert_eq!(class_name(0x24), "data abort");
    }
}
