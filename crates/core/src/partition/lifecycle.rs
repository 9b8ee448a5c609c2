//! A partition's life cycle: its states and every change between them.
//!
//! The hypervisor keeps the state in one atomic and moves it only through
//! [`RunState::next`], so the rules below are the whole story: which
//! changes a suspended or stopped partition accepts, which are final, and
//! which states count as ended when Partita decides to power off.

/// Where a partition is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RunState {
    Running = 0,
    /// Stopped by Partita after a fault, or by its health monitor's `halt`.
    Stopped = 1,
    /// Powered off by its own PSCI SYSTEM_OFF.
    Off = 2,
    /// Being reloaded from its images; its vCPUs must not run.
    Restarting = 3,
    /// No vCPU runs; interrupts raised meanwhile stay pending.
    Suspended = 4,
    /// Halted by a system partition: final until a restart.
    Halted = 5,
}

/// What is asked of a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// PSCI SYSTEM_OFF from one of its own vCPUs.
    PowerOff,
    /// A fault, or its health monitor's `halt`.
    Stop,
    /// A system partition, or its health monitor's `suspend`.
    Suspend,
    /// A system partition.
    Resume,
    /// A system partition.
    Halt,
    /// PSCI SYSTEM_RESET from one of its vCPUs, or its health monitor's
    /// `restart`: only while it runs.
    Restart,
    /// A system partition restarts it, whatever it was doing, unless a
    /// restart is under way already.
    RestartByOther,
    /// Its reload is complete.
    Reloaded,
}

/// Why a change does not apply: the partition is not in a state it
/// accepts it from (another pCPU may have changed it first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrongState(pub RunState);

impl RunState {
    pub const ALL: [RunState; 6] = [
        RunState::Running,
        RunState::Stopped,
        RunState::Off,
        RunState::Restarting,
        RunState::Suspended,
        RunState::Halted,
    ];

    pub const fn from_u8(value: u8) -> RunState {
        match value {
            0 => RunState::Running,
            1 => RunState::Stopped,
            2 => RunState::Off,
            3 => RunState::Restarting,
            4 => RunState::Suspended,
            _ => RunState::Halted,
        }
    }

    /// Ended for good unless restarted: once every partition has, Partita
    /// powers the machine off.
    pub const fn ended(self) -> bool {
        matches!(self, RunState::Stopped | RunState::Off | RunState::Halted)
    }

    /// The state `change` leads to.
    pub fn next(self, change: Change) -> Result<RunState, WrongState> {
        use Change::*;
        use RunState::*;
        match (self, change) {
            (Running, PowerOff) => Ok(Off),
            (Running, Stop) => Ok(Stopped),
            (Running, Suspend) => Ok(Suspended),
            (Suspended, Resume) => Ok(Running),
            (Running | Suspended, Halt) => Ok(Halted),
            (Running, Restart) => Ok(Restarting),
            (Running | Stopped | Off | Suspended | Halted, RestartByOther) => Ok(Restarting),
            (Restarting, Reloaded) => Ok(Running),
            (state, _) => Err(WrongState(state)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Change::*;
    use super::RunState::*;
    use super::*;

    const CHANGES: [Change; 8] = [PowerOff, Stop, Suspend, Resume, Halt, Restart, RestartByOther, Reloaded];

    /// The whole table, written out: every pair not listed is refused.
    const ALLOWED: [(RunState, Change, RunState); 13] = [
        (Running, PowerOff, Off),
        (Running, Stop, Stopped),
        (Running, Suspend, Suspended),
        (Suspended, Resume, Running),
        (Running, Halt, Halted),
        (Suspended, Halt, Halted),
        (Running, Restart, Restarting),
        (Running, RestartByOther, Restarting),
        (Stopped, RestartByOther, Restarting),
        (Off, RestartByOther, Restarting),
        (Suspended, RestartByOther, Restarting),
        (Halted, RestartByOther, Restarting),
        (Restarting, Reloaded, Running),
    ];

    #[test]
    fn every_pair_follows_the_table() {
        for from in RunState::ALL {
            for change in CHANGES {
                let expected = ALLOWED.iter().find(|(f, c, _)| *f == from && *c == change).map(|(_, _, to)| *to);
                assert_eq!(from.next(change).ok(), expected, "{from:?} + {change:?}");
                if expected.is_none() {
                    assert_eq!(from.next(change), Err(WrongState(from)));
                }
            }
        }
    }

    #[test]
    fn a_restart_under_way_cannot_be_restarted_again() {
        assert!(Restarting.next(Restart).is_err());
        assert!(Restarting.next(RestartByOther).is_err());
    }

    #[test]
    fn only_a_running_partition_stops_or_powers_off_so_each_is_reported_once() {
        for from in RunState::ALL.into_iter().filter(|&s| s != Running) {
            assert!(from.next(Stop).is_err());
            assert!(from.next(PowerOff).is_err());
        }
    }

    #[test]
    fn ended_states_are_the_final_ones() {
        let ended: Vec<RunState> = RunState::ALL.into_iter().filter(|s| s.ended()).collect();
        assert_eq!(ended, [Stopped, Off, Halted]);
        for state in ended {
            // Nothing but a restart from outside brings it back.
            let back: Vec<Change> = CHANGES.into_iter().filter(|&c| state.next(c).is_ok()).collect();
            assert_eq!(back, [RestartByOther]);
        }
    }

    #[test]
    fn round_trips_through_its_byte() {
        for state in RunState::ALL {
            assert_eq!(RunState::from_u8(state as u8), state);
        }
    }
}
