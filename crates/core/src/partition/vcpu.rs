//! A vCPU's general-purpose register state and its life cycle.

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
    /// Every register zero: a frame not filled yet.
    pub const ZERO: Regs = Regs { x: [0; 31], pc: 0, pstate: 0, _pad: 0 };

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

    /// Steps over the trapped 32-bit instruction, which Partita carried
    /// out: as for any instruction that completes, a software step the
    /// guest has active becomes due at once (PSTATE.SS 0), so its debugger
    /// stops after this instruction, not after the next one too.
    pub fn skip_instruction(&mut self) {
        self.pc = self.pc.wrapping_add(4);
        self.pstate &= !crate::trap::inject::pstate::SS;
    }
}

/// A vCPU's life cycle (XtratuM's vCPU states, plus PSCI's off).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[repr(u8)]
pub enum State {
    /// Not started since its partition (re)started, or powered off by
    /// PSCI CPU_OFF; PSCI CPU_ON or the start hypercall brings it up.
    Off = 0,
    /// Started at its entry point, not yet on a pCPU.
    Boot = 1,
    /// Running, or ready to run when its pCPU's policy chooses it.
    Normal = 2,
    /// Not scheduled; interrupts raised meanwhile stay pending.
    Suspended = 3,
    /// Final until its partition restarts.
    Halted = 4,
}

/// What is asked of a vCPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// PSCI CPU_ON or the start hypercall.
    Start,
    /// Its pCPU puts it on for the first time since it started.
    Enter,
    Suspend,
    Resume,
    Halt,
    /// PSCI CPU_OFF, from the vCPU itself.
    PowerOff,
}

/// Why an operation does not apply to a vCPU's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Start of a vCPU that is already up.
    AlreadyOn,
    /// Anything on a halted vCPU.
    Halted,
    /// Resume of a vCPU that is not suspended, suspend of one that is not up.
    WrongState,
}

impl State {
    pub fn from_u8(value: u8) -> State {
        match value {
            0 => State::Off,
            1 => State::Boot,
            2 => State::Normal,
            3 => State::Suspended,
            _ => State::Halted,
        }
    }

    /// True when the vCPU may be given a pCPU.
    pub const fn schedulable(self) -> bool {
        matches!(self, State::Boot | State::Normal)
    }

    /// The state `op` leads to.
    pub fn next(self, op: Op) -> Result<State, Refused> {
        use Op::*;
        use State::*;
        match (self, op) {
            (Halted, _) => Err(Refused::Halted),
            (Off, Start) => Ok(Boot),
            (_, Start) => Err(Refused::AlreadyOn),
            (Boot, Enter) => Ok(Normal),
            (Boot | Normal, Suspend) => Ok(Suspended),
            (Suspended, Resume) => Ok(Normal),
            (_, Halt) => Ok(Halted),
            (Boot | Normal, PowerOff) => Ok(Off),
            _ => Err(Refused::WrongState),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vcpu_states_follow_xtratum() {
        use Op::*;
        use State::*;
        assert_eq!(Off.next(Start), Ok(Boot));
        assert_eq!(Boot.next(Enter), Ok(Normal));
        assert_eq!(Normal.next(Suspend), Ok(Suspended));
        assert_eq!(Suspended.next(Resume), Ok(Normal));
        assert_eq!(Normal.next(PowerOff), Ok(Off));
        assert_eq!(Normal.next(Start), Err(Refused::AlreadyOn));
        assert_eq!(Suspended.next(Start), Err(Refused::AlreadyOn));
        assert_eq!(Normal.next(Resume), Err(Refused::WrongState));
        assert_eq!(Off.next(Suspend), Err(Refused::WrongState));
        assert_eq!(Suspended.next(PowerOff), Err(Refused::WrongState));
        for state in [Off, Boot, Normal, Suspended] {
            assert_eq!(state.next(Halt), Ok(Halted));
        }
        for op in [Start, Enter, Suspend, Resume, Halt, PowerOff] {
            assert_eq!(Halted.next(op), Err(Refused::Halted), "halt is final: {op:?}");
        }
        for state in [Off, Boot, Normal, Suspended, Halted] {
            assert_eq!(State::from_u8(state as u8), state);
        }
        assert!(Boot.schedulable() && Normal.schedulable() && !Suspended.schedulable());
    }

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

    #[test]
    fn a_skipped_instruction_completes_a_software_step() {
        let ss = crate::trap::inject::pstate::SS;
        let mut regs = Regs { pstate: PSTATE_EL1H_MASKED | ss, ..Regs::default() };
        regs.skip_instruction();
        assert_eq!(regs.pstate, PSTATE_EL1H_MASKED);
    }
}
