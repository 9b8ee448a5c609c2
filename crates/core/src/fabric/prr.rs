//! A partially reconfigurable region (PRR): a container that holds one
//! accelerator at a time and moves through Ker-ONE's six states (section
//! 4.3.1). Every change goes through [`PrrState::next`], whose table the
//! tests below write out in full.
//!
//! An allocation always passes through `Switch` (the previous client's
//! interface context is saved, the new one's restored, interfaces
//! reconnected), then `Reconfig` if the accelerator must be downloaded,
//! then `Hold` until the new client starts it. A preemption first waits in
//! `Preempt` for the running accelerator's next consistency point.

/// Where a PRR is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PrrState {
    /// No computation: it may be allocated directly.
    Idle = 0,
    /// In the middle of a computation.
    Busy = 1,
    /// Running, to be stopped at its next consistency point.
    Preempt = 2,
    /// A context switch between two clients is under way.
    Switch = 3,
    /// A bitstream is being downloaded into it.
    Reconfig = 4,
    /// Allocated to a client that has not started it yet; expires to Idle.
    Hold = 5,
}

/// What happens to a PRR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrrEvent {
    /// A solution assigns it to a new client.
    Allocate,
    /// The context switch is done; `reconfig` when the new client's
    /// accelerator is not the one it holds.
    Switched { reconfig: bool },
    /// The bitstream download completed.
    Reconfigured,
    /// Its client started a computation (wrote START).
    Start,
    /// The computation is over (OVER set).
    Done,
    /// A client of higher priority wants it.
    Preempt,
    /// The running accelerator reached a consistency point and stopped
    /// (at once when nothing was running).
    Stopped,
    /// Its hold time ran out before the client started it.
    Expire,
    /// Its client is gone (its partition restarted or halted) or gave
    /// its device up: a computation is abandoned, the PRR becomes free.
    Release,
}

/// The event does not apply in this state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused(pub PrrState, pub PrrEvent);

impl PrrState {
    pub const ALL: [PrrState; 6] =
        [PrrState::Idle, PrrState::Busy, PrrState::Preempt, PrrState::Switch, PrrState::Reconfig, PrrState::Hold];

    pub const fn from_u8(value: u8) -> PrrState {
        match value {
            0 => PrrState::Idle,
            1 => PrrState::Busy,
            2 => PrrState::Preempt,
            3 => PrrState::Switch,
            4 => PrrState::Reconfig,
            _ => PrrState::Hold,
        }
    }

    /// The state `event` leads to.
    #[inline]
    pub fn next(self, event: PrrEvent) -> Result<PrrState, Refused> {
        use PrrEvent as E;
        use PrrState::*;
        match (self, event) {
            (Idle, E::Allocate) => Ok(Switch),
            (Switch, E::Switched { reconfig: false }) => Ok(Hold),
            (Switch, E::Switched { reconfig: true }) => Ok(Reconfig),
            (Reconfig, E::Reconfigured) => Ok(Hold),
            (Hold | Idle, E::Start) => Ok(Busy),
            (Busy, E::Done) => Ok(Idle),
            // A Hold is reserved against equals and lower priorities only:
            // a more urgent client may take it, with nothing to stop.
            (Busy | Hold, E::Preempt) => Ok(Preempt),
            (Preempt, E::Stopped) => Ok(Switch),
            (Hold, E::Expire) => Ok(Idle),
            (Idle | Busy | Hold, E::Release) => Ok(Idle),
            // The preemptor still gets it; there is just nothing to save.
            (Preempt, E::Release) => Ok(Switch),
            (state, event) => Err(Refused(state, event)),
        }
    }

    /// The monitor may assign it to a request directly.
    pub const fn allocatable(self) -> bool {
        matches!(self, PrrState::Idle)
    }

    /// The monitor may preempt it for a request of higher priority than
    /// its client's.
    pub const fn preemptible(self) -> bool {
        matches!(self, PrrState::Busy | PrrState::Hold)
    }
}

#[cfg(test)]
mod tests {
    use super::PrrEvent as E;
    use super::PrrState::*;
    use super::*;

    const EVENTS: [PrrEvent; 10] = [
        E::Allocate,
        E::Switched { reconfig: false },
        E::Switched { reconfig: true },
        E::Reconfigured,
        E::Start,
        E::Done,
        E::Preempt,
        E::Stopped,
        E::Expire,
        E::Release,
    ];

    /// The whole table: every pair not listed is refused.
    const ALLOWED: [(PrrState, PrrEvent, PrrState); 15] = [
        (Idle, E::Allocate, Switch),
        (Switch, E::Switched { reconfig: false }, Hold),
        (Switch, E::Switched { reconfig: true }, Reconfig),
        (Reconfig, E::Reconfigured, Hold),
        (Hold, E::Start, Busy),
        (Idle, E::Start, Busy),
        (Busy, E::Done, Idle),
        (Busy, E::Preempt, Preempt),
        (Hold, E::Preempt, Preempt),
        (Preempt, E::Stopped, Switch),
        (Hold, E::Expire, Idle),
        (Idle, E::Release, Idle),
        (Busy, E::Release, Idle),
        (Hold, E::Release, Idle),
        (Preempt, E::Release, Switch),
    ];

    #[test]
    fn every_pair_follows_the_table() {
        for from in PrrState::ALL {
            for event in EVENTS {
                let expected = ALLOWED.iter().find(|(f, e, _)| *f == from && *e == event).map(|(_, _, to)| *to);
                assert_eq!(from.next(event).ok(), expected, "{from:?} + {event:?}");
            }
        }
    }

    #[test]
    fn an_allocation_passes_through_switch_and_reconfig_to_hold() {
        let path = [E::Allocate, E::Switched { reconfig: true }, E::Reconfigured, E::Start, E::Done];
        let states: Vec<PrrState> = path
            .iter()
            .scan(Idle, |state, &event| {
                *state = state.next(event).unwrap();
                Some(*state)
            })
            .collect();
        assert_eq!(states, [Switch, Reconfig, Hold, Busy, Idle]);
    }

    #[test]
    fn a_preemption_waits_for_the_consistency_point_then_switches() {
        let state = Busy.next(E::Preempt).unwrap();
        assert_eq!(state, Preempt);
        assert!(state.next(E::Done).is_err(), "a preempted task ends by stopping");
        assert_eq!(state.next(E::Stopped), Ok(Switch));
    }

    #[test]
    fn transitions_in_flight_cannot_be_taken_or_released() {
        for state in [Switch, Reconfig] {
            assert!(!state.allocatable() && !state.preemptible());
            assert!(state.next(E::Release).is_err());
            assert!(state.next(E::Allocate).is_err());
        }
    }

    #[test]
    fn only_idle_is_allocatable_and_only_busy_or_hold_preemptible() {
        let allocatable: Vec<PrrState> = PrrState::ALL.into_iter().filter(|s| s.allocatable()).collect();
        let preemptible: Vec<PrrState> = PrrState::ALL.into_iter().filter(|s| s.preemptible()).collect();
        assert_eq!(allocatable, [Idle]);
        assert_eq!(preemptible, [Busy, Hold]);
        // What the monitor may pick is exactly what the table accepts.
        for state in PrrState::ALL {
            assert_eq!(state.allocatable(), state.next(E::Allocate).is_ok(), "{state:?}");
            assert_eq!(state.preemptible(), state.next(E::Preempt).is_ok(), "{state:?}");
        }
    }

    #[test]
    fn round_trips_through_its_byte() {
        for state in PrrState::ALL {
            assert_eq!(PrrState::from_u8(state as u8), state);
        }
    }
}
