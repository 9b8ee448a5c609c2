//! Which trapped system-register accesses a partition may make.
//!
//! Partita traps set/way cache maintenance (it would reach other partitions'
//! lines), the ID registers (to hide what it does not give), the debug
//! registers until a vCPU first touches them (then they are its own, and
//! switched with it), the performance monitors (per-core state that would
//! leak between partitions sharing a core: hidden, so UNDEFINED),
//! ACTLR_EL1 and implementation-defined registers. The EL1 timers do not
//! trap: they are the loaded vCPU's.

use crate::config::model::Range;
use crate::trap::esr::SysReg;
use crate::trap::idreg;

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
    /// A read of the ID space: the hardware's value as `idreg` shows it.
    IdRegister,
    /// A debug register the vCPU has not touched before: the debug
    /// registers become its own and the access runs again, untrapped.
    Debug,
    /// The partition may not touch it: the health monitor's `forbidden`
    /// event (UNDEFINED for the guest, by default).
    Forbidden,
}

const fn is_set_way(r: &SysReg) -> bool {
    r.op0 == 1 && r.op1 == 0 && r.crn == 7 && r.op2 == 2 && matches!(r.crm, 6 | 10 | 14)
}

/// The debug registers MDCR_EL2's TDA, TDOSA and TDRA trap: op0 2 but
/// for op1 1, the trace registers (CPTR_EL2.TTA), which are not given.
const fn is_debug(r: &SysReg) -> bool {
    r.op0 == 2 && r.op1 != 1
}

/// ICC_SGI1R_EL1 (op2 5), ICC_ASGI1R_EL1 (op2 6), ICC_SGI0R_EL1 (op2 7).
const fn is_sgi(r: &SysReg) -> bool {
    r.op0 == 3 && r.op1 == 0 && r.crn == 12 && r.crm == 11 && r.op2 >= 5
}

const fn is_actlr(r: &SysReg) -> bool {
    r.op0 == 3 && r.op1 == 0 && r.crn == 1 && r.crm == 0 && r.op2 == 1
}

/// Decides a trapped access (`read`: an MRS). Anything not listed is
/// forbidden: an unknown trap is never silently emulated. The PMU's
/// registers are among them: with PMUVer 0 they are UNDEFINED.
pub fn policy(reg: &SysReg, read: bool) -> Policy {
    if is_set_way(reg) {
        Policy::SetWay
    } else if is_sgi(reg) && reg.op2 != 7 {
        Policy::GenerateSgi
    } else if idreg::is_id_register(reg) && read {
        Policy::IdRegister
    } else if is_debug(reg) {
        Policy::Debug
    } else if is_sgi(reg) || is_actlr(reg) {
        Policy::ReadZeroWriteIgnore
    } else {
        Policy::Forbidden
    }
}

/// Set/way maintenance is carried out by address, in slices, so that no
/// trapped operation takes long with interrupts masked: each one cleans the
/// next slice of the partition's RAM, and a sweep of at least
/// [`SWEEP_OPS`] operations (any real cache has more sets times ways)
/// covers all of it. A slice is cleaned in steps of at most
/// [`SETWAY_STEP`] bytes, one per trap: the operation is not stepped over
/// until its slice is done, so it traps again for the next step, and an
/// interrupt that came meanwhile is taken in between.
pub const SWEEP_OPS: u64 = 512;
const MIN_SLICE: u64 = 32 * 1024;
/// Bytes one trap cleans at most: 256 lines of 64 bytes, about 600
/// instructions of DC CIVAC. A whole 32 KiB slice in one trap kept it at
/// EL2 for about 1,700 (`partita bench response`, path `set-way`), and a
/// large partition's slice grows with its RAM.
pub const SETWAY_STEP: u64 = 16 * 1024;

/// Bytes one trapped set/way operation cleans, for `memory` bytes of RAM.
pub fn setway_slice(memory: u64) -> u64 {
    (memory / SWEEP_OPS).next_multiple_of(4096).max(MIN_SLICE)
}

/// One trap's share of a set/way operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetWayStep {
    /// The host-physical range to clean and invalidate.
    pub pa: u64,
    pub len: u64,
    /// The partition's cursor after it.
    pub cursor: u64,
    /// What the operation still owes after this step: 0 when it is done
    /// and the guest's instruction is stepped over.
    pub owed: u64,
}

/// The step of a trapped set/way operation that still owes `owed` bytes of
/// its slice (0: it has just begun, and owes a whole [`setway_slice`]),
/// from `cursor` into `regions`. A step ends at a region's end, and what it
/// cleaned is counted, not what it was allowed: an operation always cleans
/// its whole slice, so a sweep covers the RAM however the regions fall.
pub fn setway_trap(regions: &[Range], cursor: u64, owed: u64) -> Option<SetWayStep> {
    let owed = match owed {
        0 => setway_slice(regions.iter().map(|r| r.size).sum()),
        owed => owed,
    };
    let (pa, len, cursor) = setway_step(regions, cursor, owed.min(SETWAY_STEP))?;
    Some(SetWayStep { pa, len, cursor, owed: owed - len })
}

/// The host-physical slice `[pa, pa + len)` that starts `cursor` bytes into
/// the concatenation of `regions`, at most `slice` long and never crossing a
/// region; and the cursor after it (wrapping to 0 at the end).
pub fn setway_step(regions: &[Range], cursor: u64, slice: u64) -> Option<(u64, u64, u64)> {
    let total: u64 = regions.iter().map(|r| r.size).sum();
    if total == 0 {
        return None;
    }
    let mut offset = cursor % total;
    for region in regions {
        if offset < region.size {
            let len = slice.min(region.size - offset);
            let next = (cursor % total + len) % total;
            return Some((region.base + offset, len, next));
        }
        offset -= region.size;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_way_ops_are_emulated() {
        for crm in [6, 10, 14] {
            assert_eq!(policy(&SysReg::new(1, 0, 7, crm, 2), false), Policy::SetWay);
        }
        // DC CIVAC (op1 3, CRm 14, op2 1) is not a set/way op.
        assert_eq!(policy(&SysReg::new(1, 3, 7, 14, 1), false), Policy::Forbidden);
    }

    #[test]
    fn impdef_is_forbidden() {
        assert_eq!(policy(&SysReg::new(3, 1, 15, 2, 0), true), Policy::Forbidden);
        // CPUACTLR_EL1
    }

    #[test]
    fn the_pmu_is_undefined_and_actlr_reads_as_zero() {
        assert_eq!(policy(&SysReg::new(3, 3, 9, 14, 0), true), Policy::Forbidden); // PMUSERENR_EL0
        assert_eq!(policy(&SysReg::new(3, 3, 9, 12, 0), true), Policy::Forbidden); // PMCR_EL0
        assert_eq!(policy(&SysReg::new(3, 0, 9, 14, 1), false), Policy::Forbidden); // PMINTENSET_EL1
        assert_eq!(policy(&SysReg::new(3, 0, 1, 0, 1), true), Policy::ReadZeroWriteIgnore);
        // ACTLR_EL1
    }

    #[test]
    fn debug_registers_are_given_and_trace_registers_are_not() {
        assert_eq!(policy(&SysReg::new(2, 0, 0, 2, 2), true), Policy::Debug); // MDSCR_EL1
        assert_eq!(policy(&SysReg::new(2, 0, 1, 0, 4), false), Policy::Debug); // OSLAR_EL1
        assert_eq!(policy(&SysReg::new(2, 0, 0, 5, 5), false), Policy::Debug); // DBGBCR5_EL1
        assert_eq!(policy(&SysReg::new(2, 3, 0, 1, 0), true), Policy::Debug); // MDCCSR_EL0
        assert_eq!(policy(&SysReg::new(2, 1, 0, 1, 0), true), Policy::Forbidden);
        // TRCPRGCTLR
    }

    #[test]
    fn id_registers_are_read_and_never_written() {
        assert_eq!(policy(&SysReg::new(3, 0, 0, 5, 0), true), Policy::IdRegister); // ID_AA64DFR0_EL1
        assert_eq!(policy(&SysReg::new(3, 0, 0, 3, 7), true), Policy::IdRegister); // reserved
        assert_eq!(policy(&SysReg::new(3, 0, 0, 5, 0), false), Policy::Forbidden);
    }

    #[test]
    fn group_1_sgis_are_emulated_and_group_0_ignored() {
        assert_eq!(policy(&SysReg::new(3, 0, 12, 11, 5), false), Policy::GenerateSgi);
        assert_eq!(policy(&SysReg::new(3, 0, 12, 11, 6), false), Policy::GenerateSgi);
        assert_eq!(policy(&SysReg::new(3, 0, 12, 11, 7), false), Policy::ReadZeroWriteIgnore);
    }

    #[test]
    fn slices_cover_the_memory_within_a_sweep() {
        assert_eq!(setway_slice(16 << 20), 32 * 1024);
        assert_eq!(setway_slice(1 << 30), (1 << 30) / SWEEP_OPS);
        let regions = [Range::new(0x4000_0000, 0x1_0000), Range::new(0x5000_0000, 0x8000)];
        let mut cursor = 0;
        let mut covered = Vec::new();
        for _ in 0..4 {
            let (pa, len, next) = setway_step(&regions, cursor, 0x6000).unwrap();
            covered.push((pa, len));
            cursor = next;
        }
        assert_eq!(
            covered,
            [(0x4000_0000, 0x6000), (0x4000_6000, 0x6000), (0x4000_c000, 0x4000), (0x5000_0000, 0x6000)]
        );
        assert_eq!(setway_step(&regions, cursor, 0x6000), Some((0x5000_6000, 0x2000, 0)));
        assert_eq!(setway_step(&[], 0, 0x1000), None);
    }

    /// Runs trapped operations until `ops` have been stepped over; returns
    /// every range cleaned and the traps taken.
    fn sweep(regions: &[Range], ops: usize) -> (Vec<(u64, u64)>, usize) {
        let (mut cursor, mut owed, mut done, mut traps) = (0, 0, 0, 0);
        let mut cleaned = Vec::new();
        while done < ops {
            let step = setway_trap(regions, cursor, owed).unwrap();
            assert!(step.len <= SETWAY_STEP && step.len > 0);
            cleaned.push((step.pa, step.len));
            (cursor, owed, traps) = (step.cursor, step.owed, traps + 1);
            done += usize::from(owed == 0);
        }
        (cleaned, traps)
    }

    fn covers(cleaned: &[(u64, u64)], region: &Range) -> bool {
        let mut bytes: Vec<(u64, u64)> = cleaned.iter().map(|&(pa, len)| (pa, pa + len)).collect();
        bytes.sort();
        let mut reached = region.base;
        for (start, end) in bytes {
            if start <= reached && end > reached {
                reached = end;
            }
        }
        reached >= region.end()
    }

    #[test]
    fn an_operation_cleans_its_slice_in_bounded_steps() {
        let ram = [Range::new(0x4000_0000, 16 << 20)];
        let (cleaned, traps) = sweep(&ram, 1);
        assert_eq!(cleaned, [(0x4000_0000, SETWAY_STEP), (0x4000_0000 + SETWAY_STEP, SETWAY_STEP)]);
        assert_eq!(traps, 2);
        // A 1 GiB partition's 2 MiB slice: the same step, 128 traps.
        let big = [Range::new(0x4000_0000, 1 << 30)];
        assert_eq!(sweep(&big, 1).1, 128);
        assert_eq!(setway_trap(&[], 0, 0), None);
    }

    #[test]
    fn a_sweep_covers_the_ram_whatever_the_regions() {
        let one = [Range::new(0x4000_0000, 16 << 20)];
        let uneven =
            [Range::new(0x4000_0000, 0x10_3000), Range::new(0x5000_0000, 0x5000), Range::new(0x6000_0000, 0xef_8000)];
        for regions in [&one[..], &uneven[..]] {
            let (cleaned, _) = sweep(regions, SWEEP_OPS as usize);
            for region in regions {
                assert!(covers(&cleaned, region), "{region:x?} of {regions:x?}");
            }
        }
    }
}
