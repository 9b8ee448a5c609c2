//! A vCPU's general-purpose register state and the state machine PSCI drives.

use serde::{Deserialize, Serialize};

/// What the exception entry code saves and the return path restores.
/// The layout is shared with the assembly in `partita-arch`: keep it `repr(C)`
/// and 16-byte sized.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    pub x: [u64; 31],
    /// Where the guest resumes (ELR_EL2).
    pub pc: u64,
    /// The guest's PSTATE (SPSR_EL2).
    pub pstate: u64,
    _pad: u64,
}

/// PSTATE for entering a guest: EL1 with SP_EL1 (EL1h), D, A, I and F masked,
/// as the Linux boot protocol requires.
pub const PSTATE_EL1H_MASKED: u64 = 0x3c5;

impl Regs {
    /// Register state of a vCPU that starts at `entry` with `x0 = arg`.
    pub fn boot(entry: u64, arg: u64) -> Self {
        let mut regs = Regs { pc: entry, pstate: PSTATE_EL1H_MASKED, ..Regs::default() };
        regs.x[0] = arg;
        regs
    }

    /// Reads register `n` as an instruction names it: 31 is XZR.
    pub fn get(&self, n: usize) -> u64 {
        self.x.get(n).copied().unwrap_or(0)
    }

    /// Writes register `n`; writes to XZR (31) are dropped.
    pub fn set(&mut self, n: usize, value: u64) {
        if let Some(reg) = self.x.get_mut(n) {
            *reg = value;
        }
    }

    /// Steps over the trapped 32-bit instruction.
    pub fn skip_instruction(&mut self) {
        self.pc = self.pc.wrapping_add(4);
    }
}

/// Power state of a vCPU, as PSCI AFFINITY_INFO reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Power {
    Off,
    /// CPU_ON accepted; the vCPU runs at its next turn.
    OnPending,
    On,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regs_layout_matches_the_assembly() {
        assert_eq!(core::mem::size_of::<Regs>(), 34 * 8);
        assert_eq!(core::mem::offset_of!(Regs, pc), 31 * 8);
        assert_eq!(core::mem::offset_of!(Regs, pstate), 32 * 8);
    }

    #[test]
    fn xzr_reads_zero_and_ignores_writes() {
        let mut regs = Regs::boot(0x4000_0000, 7);
        assert_eq!(regs.get(0), 7);
        regs.set(31, 5);
        assert_eq!(regs.get(31), 0);
        assert_eq!(regs.pc, 0x4000_0000);
        regs.skip_instruction();
        assert_eq!(regs.pc, 0x4000_0004);
    }
}
