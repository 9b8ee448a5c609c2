//! Which trapped system-register accesses a partition may make.
//!
//! Partita traps set/way cache maintenance (it would reach other partitions'
//! lines), the debug and performance-monitor registers (per-core state that
//! would leak between partitions sharing a core), ACTLR_EL1, the EL1 physical
//! timer (Partita's own), and implementation-defined registers.

use crate::esr::SysReg;

/// What to do with a trapped access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// DC ISW / CSW / CISW: carried out by virtual address over the
    /// partition's own memory instead.
    SetWay,
    /// Reads return zero, writes are ignored.
    ReadZeroWriteIgnore,
    /// ICC_SGI1R_EL1 / ICC_ASGI1R_EL1: an SGI to vCPUs of the same partition.
    GenerateSgi,
    /// The partition may not touch it: stop the partition.
    Forbidden,
}

const fn is_set_way(r: &SysReg) -> bool {
    r.op0 == 1 && r.op1 == 0 && r.crn == 7 && r.op2 == 2 && matches!(r.crm, 6 | 10 | 14)
}

/// Debug registers: op0 = 2 (AArch64 debug), plus MDSCR-style encodings.
const fn is_debug(r: &SysReg) -> bool {
    r.op0 == 2
}

/// PMU: PMCR_EL0 and friends (op0 3, op1 3, CRn 9, CRm 12..14), the event
/// counters (CRn 14, CRm 8..15), PMINTEN/PMMIR (op1 0, CRn 9, CRm 14).
const fn is_pmu(r: &SysReg) -> bool {
    let el0 = r.op0 == 3 && r.op1 == 3 && ((r.crn == 9 && r.crm >= 12) || (r.crn == 14 && r.crm >= 8));
    let el1 = r.op0 == 3 && r.op1 == 0 && r.crn == 9 && r.crm == 14;
    el0 || el1
}

/// ICC_SGI1R_EL1 (op2 5), ICC_ASGI1R_EL1 (op2 6), ICC_SGI0R_EL1 (op2 7).
const fn is_sgi(r: &SysReg) -> bool {
    r.op0 == 3 && r.op1 == 0 && r.crn == 12 && r.crm == 11 && r.op2 >= 5
}

const fn is_actlr(r: &SysReg) -> bool {
    r.op0 == 3 && r.op1 == 0 && r.crn == 1 && r.crm == 0 && r.op2 == 1
}

/// Decides a trapped access. Anything not listed is forbidden: an unknown
/// trap is never silently emulated.
pub fn policy(reg: &SysReg) -> Policy {
    if is_set_way(reg) {
        Policy::SetWay
    } else if is_sgi(reg) && reg.op2 != 7 {
        Policy::GenerateSgi
    } else if is_sgi(reg) || is_debug(reg) || is_pmu(reg) || is_actlr(reg) {
        Policy::ReadZeroWriteIgnore
    } else {
        Policy::Forbidden
    }
}

/// Sweeps by set/way visit every (set, way) pair once per cache level; the
/// sweep is emulated once, on the operand with set and way both zero, so a
/// full sweep costs one pass over the partition's memory.
pub fn starts_sweep(operand: u64) -> bool {
    // Level is in bits [3:1]; set and way fill the rest with
    // geometry-dependent positions, so "everything above the level is zero"
    // identifies set 0 / way 0 for any geometry.
    operand >> 4 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_way_ops_are_emulated() {
        for crm in [6, 10, 14] {
            assert_eq!(policy(&SysReg::new(1, 0, 7, crm, 2)), Policy::SetWay);
        }
        // DC CIVAC (op1 3, CRm 14, op2 1) is not a set/way op.
        assert_eq!(policy(&SysReg::new(1, 3, 7, 14, 1)), Policy::Forbidden);
    }

    #[test]
    fn physical_timer_and_impdef_are_forbidden() {
        assert_eq!(policy(&SysReg::new(3, 3, 14, 2, 1)), Policy::Forbidden); // CNTP_CTL_EL0
        assert_eq!(policy(&SysReg::new(3, 3, 14, 2, 0)), Policy::Forbidden); // CNTP_TVAL_EL0
        assert_eq!(policy(&SysReg::new(3, 1, 15, 2, 0)), Policy::Forbidden); // CPUACTLR_EL1
    }

    #[test]
    fn debug_pmu_and_actlr_read_as_zero() {
        assert_eq!(policy(&SysReg::new(2, 0, 0, 2, 2)), Policy::ReadZeroWriteIgnore); // MDSCR_EL1
        assert_eq!(policy(&SysReg::new(2, 0, 1, 0, 4)), Policy::ReadZeroWriteIgnore); // OSLAR_EL1
        assert_eq!(policy(&SysReg::new(3, 3, 9, 14, 0)), Policy::ReadZeroWriteIgnore); // PMUSERENR_EL0
        assert_eq!(policy(&SysReg::new(3, 3, 9, 12, 0)), Policy::ReadZeroWriteIgnore); // PMCR_EL0
        assert_eq!(policy(&SysReg::new(3, 0, 1, 0, 1)), Policy::ReadZeroWriteIgnore); // ACTLR_EL1
    }

    #[test]
    fn group_1_sgis_are_emulated_and_group_0_ignored() {
        assert_eq!(policy(&SysReg::new(3, 0, 12, 11, 5)), Policy::GenerateSgi);
        assert_eq!(policy(&SysReg::new(3, 0, 12, 11, 6)), Policy::GenerateSgi);
        assert_eq!(policy(&SysReg::new(3, 0, 12, 11, 7)), Policy::ReadZeroWriteIgnore);
    }

    #[test]
    fn sweep_starts_once_per_level() {
        assert!(starts_sweep(0));
        assert!(starts_sweep(2)); // level 1 (L2 cache), set 0, way 0
        assert!(!starts_sweep(0x40)); // set 1
        assert!(!starts_sweep(0x8000_0000)); // way 2 on a 4-way cache
    }
}
