//! The ID registers a partition reads (HCR_EL2.TID3 traps the whole ID
//! space: op0 3, op1 0, CRn 0, CRm 1 to 7). Each read answers with the
//! hardware's value, less the fields of features Partita does not give a
//! partition: the PMU (its registers are per-core state that would leak
//! between partitions, so they stay trapped), the statistical profiling
//! extension, trace, the debug extensions past the breakpoints and
//! watchpoints it switches, and SVE, SME and MTE, whose registers its trap
//! controls keep from the guest. An encoding the architecture reserves
//! reads as zero.

use crate::trap::esr::SysReg;

/// A 4-bit ID field at bit `low`.
const fn field(low: u32) -> u64 {
    0xf << low
}

/// ID_AA64DFR0_EL1: DebugVer, BRPs, WRPs, CTX_CMPs, DoubleLock. Gone:
/// TraceVer, PMUVer, PMSS, SEBEP, PMSVer, TraceFilt, TraceBuffer, MTPMU,
/// BRBE, ExtTrcBuff, HPMN0.
const AA64DFR0_SHOWN: u64 = field(0) | field(12) | field(20) | field(28) | field(36);
/// ID_DFR0_EL1 (AArch32 debug): CopDbg, CopSDbg, MMapDbg, MProfDbg. Gone:
/// CopTrc, MMapTrc, PerfMon, TraceFilt.
const DFR0_SHOWN: u64 = field(4) | field(8) | field(12) | field(20);
/// ID_AA64PFR0_EL1 less SVE (CPTR_EL2 traps it).
const AA64PFR0_SHOWN: u64 = !field(32);
/// ID_AA64PFR1_EL1 less MTE (HCR_EL2.ATA is clear) and SME (CPTR_EL2
/// traps it).
const AA64PFR1_SHOWN: u64 = !(field(8) | field(24));

/// True for an encoding of the trapped ID space.
pub const fn is_id_register(reg: &SysReg) -> bool {
    reg.op0 == 3 && reg.op1 == 0 && reg.crn == 0 && reg.crm >= 1 && reg.crm <= 7
}

/// The bits of the hardware value a partition sees for the ID register
/// `reg` (CRm, op2): all of them for most, some for those that describe
/// what Partita keeps to itself, none for reserved encodings and for
/// registers that only describe what a partition does not get (then the
/// hardware need not be read at all).
pub const fn shown_bits(reg: &SysReg) -> u64 {
    if !is_id_register(reg) {
        return 0;
    }
    match (reg.crm, reg.op2) {
        // ID_DFR0_EL1
        (1, 2) => DFR0_SHOWN,
        // ID_PFR0..1, ID_AFR0, ID_MMFR0..3; ID_ISAR0..5, ID_MMFR4, ID_ISAR6
        (1, _) | (2, _) => u64::MAX,
        // MVFR0..2, ID_PFR2, ID_MMFR5
        (3, 0..=2 | 4 | 6) => u64::MAX,
        // ID_DFR1_EL1: MTPMU and HPMN0, both PMU.
        (3, 5) => 0,
        (4, 0) => AA64PFR0_SHOWN,
        (4, 1) => AA64PFR1_SHOWN,
        // ID_AA64PFR2_EL1, ID_AA64FPFR0_EL1; ZFR0 (SVE) and SMFR0 (SME) are not given.
        (4, 2 | 7) => u64::MAX,
        (5, 0) => AA64DFR0_SHOWN,
        // ID_AA64DFR1/2_EL1: PMU and debug extensions past what is switched.
        (5, 1 | 2) => 0,
        // ID_AA64AFR0/1_EL1
        (5, 4 | 5) => u64::MAX,
        // ID_AA64ISAR0..3_EL1
        (6, 0..=3) => u64::MAX,
        // ID_AA64MMFR0..4_EL1
        (7, 0..=4) => u64::MAX,
        _ => 0,
    }
}

/// What a partition reads from `reg` when the hardware holds `hardware`.
pub const fn value(reg: &SysReg, hardware: u64) -> u64 {
    hardware & shown_bits(reg)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID_AA64DFR0: SysReg = SysReg::new(3, 0, 0, 5, 0);
    /// What QEMU's Cortex-A72 reports: debug v8, 6 breakpoints, 4
    /// watchpoints, 2 context comparators, PMUv3.
    const A72_DFR0: u64 = 0x1030_5106;

    #[test]
    fn the_pmu_is_hidden_and_the_debug_counts_kept() {
        let seen = value(&ID_AA64DFR0, A72_DFR0);
        assert_eq!(seen, 0x1030_5006);
        assert_eq!((seen >> 8) & 0xf, 0, "PMUVer");
        assert_eq!(((seen >> 12) & 0xf, (seen >> 20) & 0xf, seen & 0xf), (5, 3, 6));
        // PMSVer, TraceVer, TraceFilt, TraceBuffer, MTPMU, BRBE, HPMN0 all go.
        let everything = u64::MAX;
        assert_eq!(value(&ID_AA64DFR0, everything), 0x0000_00f0_f0f0_f00f);
        // AArch32's view of the same PMU: PerfMon (and trace) go.
        assert_eq!(value(&SysReg::new(3, 0, 0, 1, 2), 0x0301_0066), 0x0000_0060);
    }

    #[test]
    fn reserved_encodings_read_as_zero() {
        for (crm, op2) in [(3, 3), (3, 7), (4, 3), (4, 6), (5, 3), (5, 6), (5, 7), (6, 4), (6, 7), (7, 5), (7, 7)] {
            assert_eq!(shown_bits(&SysReg::new(3, 0, 0, crm, op2)), 0, "CRm {crm} op2 {op2}");
        }
    }

    #[test]
    fn the_rest_of_the_id_space_is_the_hardware_s() {
        for (crm, op2) in [(1, 0), (1, 4), (2, 7), (3, 0), (4, 2), (5, 4), (6, 0), (6, 1), (7, 0), (7, 2)] {
            assert_eq!(value(&SysReg::new(3, 0, 0, crm, op2), 0x1234_5678_9abc_def0), 0x1234_5678_9abc_def0);
        }
        // SVE, SME and MTE are never advertised.
        assert_eq!(value(&SysReg::new(3, 0, 0, 4, 0), 0x0000_0001_0000_0011), 0x11);
        assert_eq!(value(&SysReg::new(3, 0, 0, 4, 1), 0x0000_0000_0100_0220), 0x20);
        assert_eq!(shown_bits(&SysReg::new(3, 0, 0, 4, 4)), 0, "ID_AA64ZFR0_EL1");
        assert_eq!(shown_bits(&SysReg::new(3, 0, 0, 4, 5)), 0, "ID_AA64SMFR0_EL1");
    }

    #[test]
    fn only_the_id_space_counts() {
        assert!(is_id_register(&ID_AA64DFR0));
        for reg in [SysReg::new(3, 0, 0, 0, 0), SysReg::new(3, 0, 0, 8, 0), SysReg::new(3, 1, 0, 1, 0)] {
            assert!(!is_id_register(&reg), "{reg:?}");
            assert_eq!(shown_bits(&reg), 0);
        }
    }
}
