//! The scheduler's decisions, as functions of what the hypervisor reads
//! from its atomics: who may run, who must give way, who migrates, and
//! whether a vCPU leaves its pCPU after a trap. The hypervisor only reads
//! the state, asks here, and carries the answer out.

use crate::partition::lifecycle::{Change, RunState};
use crate::partition::vcpu::State;
use crate::scheduler::readyq::{Priority, ReadyQueue};
use crate::trace::OutReason;

/// True when a vCPU would run if it had a pCPU. A restarting partition's
/// vCPU 0 "runs" its reload, a bounded step each time it is chosen.
pub fn wants_cpu(partition: RunState, vcpu: State, waiting: bool, index: usize) -> bool {
    match partition {
        RunState::Running => vcpu.schedulable() && !waiting,
        RunState::Restarting => index == 0,
        _ => false,
    }
}

/// Fixed priority: the running vCPU (priority `mine`) gives way to a more
/// urgent `contender`, or, when its quantum is over, to an equal one.
pub fn must_yield(mine: u8, contender: Option<u8>, quantum_over: bool) -> bool {
    contender.is_some_and(|other| other > mine || (quantum_over && other == mine))
}

/// Fixed priority: a round-robin quantum is needed while a `contender` at
/// least as urgent as the running vCPU waits for the pCPU.
pub fn needs_quantum(mine: u8, contender: Option<u8>) -> bool {
    contender.is_some_and(|other| other >= mine)
}

/// What a fixed-priority pCPU does once it has looked at its ready queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// The running vCPU goes on.
    Stay {
        /// A peer at least as urgent waits: its round-robin quantum runs.
        quantum: bool,
    },
    /// The vCPU in slot `next` (taken off the queue) runs, or none does;
    /// the one that ran, if it may go on, waits in the queue.
    Switch {
        next: Option<(Priority, usize)>,
        /// The same for `next`.
        quantum: bool,
    },
}

/// Fixed priority: the one question a trap or the idle loop asks of the
/// ready queue, whose every entry can run. `running` is the vCPU that
/// trapped (priority, slot), when it may go on; it is not in the queue. It
/// stays unless it must yield ([`must_yield`]); then it joins the queue
/// behind its peers, and the most urgent entry runs, with what the queue
/// holds after that saying whether its quantum runs. One look serves the
/// choice, the preemption and the quantum, which otherwise each asked the
/// queue again.
///
/// `newcomer` is a vCPU that has just become able to run and is not
/// queued: the answer is the one it would be had it joined the back of its
/// priority's FIFO first. When it is more urgent than every entry (the
/// wake-up that preempts) and runs, it never enters the queue at all, which
/// spares the queue an insertion and a removal.
#[inline]
pub fn turn<const SLOTS: usize>(
    ready: &mut ReadyQueue<SLOTS>,
    running: Option<(Priority, usize)>,
    newcomer: Option<(Priority, usize)>,
    quantum_over: bool,
) -> Turn {
    let queued = ready.highest().map(|(priority, _)| priority);
    let Some((first, slot)) = newcomer.filter(|&(p, _)| queued.is_none_or(|q| p > q)) else {
        if let Some((priority, slot)) = newcomer {
            // Cannot fail: a newcomer is not queued.
            let _ = ready.enqueue(slot, priority);
        }
        return turn_queued(ready, running, quantum_over);
    };
    // Queued, it would be alone at the head of the most urgent FIFO.
    if let Some((mine, running)) = running {
        if !must_yield(mine, Some(first), quantum_over) {
            let _ = ready.enqueue(slot, first);
            return Turn::Stay { quantum: needs_quantum(mine, Some(first)) };
        }
        let _ = ready.enqueue(running, mine);
    }
    let quantum = needs_quantum(first, ready.highest().map(|(p, _)| p));
    Turn::Switch { next: Some((first, slot)), quantum }
}

/// A `newcomer` (its priority) that outranks the `running` vCPU
/// (priority, slot) and everything queued takes the pCPU at once: the
/// running vCPU is queued, and the newcomer runs without a quantum (no
/// peer of its priority waits). False, with the queue untouched, when it
/// does not: [`turn`] answers then. The same answer as [`turn`]'s, for the
/// RTOS preempting a GPOS without its questions.
pub fn preempts<const SLOTS: usize>(
    ready: &mut ReadyQueue<SLOTS>,
    running: (Priority, usize),
    newcomer: Priority,
) -> bool {
    let queued = ready.highest().map(|(priority, _)| priority);
    if newcomer <= running.0 || queued.is_some_and(|q| q >= newcomer) {
        return false;
    }
    // Cannot fail: the running vCPU is never queued.
    let _ = ready.enqueue(running.1, running.0);
    true
}

/// [`turn`] with every contender queued.
#[inline]
fn turn_queued<const SLOTS: usize>(
    ready: &mut ReadyQueue<SLOTS>,
    running: Option<(Priority, usize)>,
    quantum_over: bool,
) -> Turn {
    let contender = ready.highest().map(|(priority, _)| priority);
    if let Some((mine, slot)) = running {
        if !must_yield(mine, contender, quantum_over) {
            return Turn::Stay { quantum: needs_quantum(mine, contender) };
        }
        // Cannot fail: the running vCPU is never queued, and its slot is
        // the pCPU's own.
        let _ = ready.enqueue(slot, mine);
    }
    let next = ready.pop_highest();
    let quantum = next.is_some_and(|(priority, _)| needs_quantum(priority, ready.highest().map(|(p, _)| p)));
    Turn::Switch { next, quantum }
}

/// vlk's migration, decided by a vCPU's home pCPU: a vCPU that could run
/// but is `outranked` at home moves to its first target; one that moved
/// comes back once nothing more urgent is left. `None`: it stays where it
/// is (`on`).
pub fn migration(home: usize, on: usize, first_target: usize, outranked: bool, wants_cpu: bool) -> Option<usize> {
    let away = on != home;
    if !away && outranked && wants_cpu {
        Some(first_target)
    } else if away && !outranked {
        Some(home)
    } else {
        None
    }
}

/// What becomes of the vCPU that trapped, once its handler is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterTrap {
    /// It may go on, unless its pCPU's policy wants another vCPU there.
    Stay,
    /// It leaves its pCPU.
    Leave(OutReason),
}

/// The vCPU asked to wait (WFI, a parked call) and is `waiting` (nothing
/// came meanwhile), or it may no longer run here: its partition left
/// `Running`, it was suspended, halted or powered off, or it moved away.
pub fn after_trap(asked_to_wait: bool, waiting: bool, partition: RunState, runnable_here: bool) -> AfterTrap {
    if asked_to_wait && waiting {
        AfterTrap::Leave(OutReason::Waiting)
    } else if !runnable_here || partition != RunState::Running {
        AfterTrap::Leave(gone(partition))
    } else {
        AfterTrap::Stay
    }
}

/// Why a vCPU that may no longer run left its pCPU, as the trace says it.
pub fn gone(partition: RunState) -> OutReason {
    match partition {
        RunState::Stopped => OutReason::Stopped,
        _ => OutReason::Off,
    }
}

/// Why the running vCPU leaves when its own partition goes through `change`.
pub fn leaving(change: Change) -> OutReason {
    match change {
        Change::Stop | Change::Suspend | Change::Halt => OutReason::Stopped,
        _ => OutReason::Off,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_running_partition_s_up_vcpus_want_a_cpu_and_restarts_use_vcpu_0() {
        assert!(wants_cpu(RunState::Running, State::Normal, false, 1));
        assert!(wants_cpu(RunState::Running, State::Boot, false, 0));
        assert!(!wants_cpu(RunState::Running, State::Normal, true, 0), "waiting");
        assert!(!wants_cpu(RunState::Running, State::Suspended, false, 0));
        assert!(!wants_cpu(RunState::Running, State::Off, false, 0));
        assert!(wants_cpu(RunState::Restarting, State::Off, true, 0));
        assert!(!wants_cpu(RunState::Restarting, State::Normal, false, 1));
        for state in [RunState::Stopped, RunState::Off, RunState::Suspended, RunState::Halted] {
            assert!(!wants_cpu(state, State::Normal, false, 0), "{state:?}");
        }
    }

    #[test]
    fn a_more_urgent_contender_preempts_an_equal_one_only_at_the_quantum() {
        assert!(!must_yield(10, None, true));
        assert!(must_yield(10, Some(11), false));
        assert!(!must_yield(10, Some(10), false));
        assert!(must_yield(10, Some(10), true));
        assert!(!must_yield(10, Some(9), true));
    }

    #[test]
    fn a_quantum_runs_only_while_an_equal_or_more_urgent_vcpu_waits() {
        assert!(!needs_quantum(10, None));
        assert!(!needs_quantum(10, Some(9)));
        assert!(needs_quantum(10, Some(10)));
        assert!(needs_quantum(10, Some(200)));
    }

    type Queue = ReadyQueue<8>;

    fn queue(entries: &[(usize, Priority)]) -> Queue {
        let mut queue = Queue::new();
        for &(slot, priority) in entries {
            queue.enqueue(slot, priority).unwrap();
        }
        queue
    }

    #[test]
    fn the_running_vcpu_stays_until_a_more_urgent_one_is_ready() {
        let mut ready = queue(&[(1, 10), (2, 5)]);
        assert_eq!(turn(&mut ready, Some((20, 0)), None, false), Turn::Stay { quantum: false });
        assert_eq!(turn(&mut ready, Some((10, 0)), None, false), Turn::Stay { quantum: true }, "an equal peer waits");
        assert_eq!(ready, queue(&[(1, 10), (2, 5)]), "staying leaves the queue as it was");
        let preempted = turn(&mut ready, Some((7, 0)), None, false);
        assert_eq!(preempted, Turn::Switch { next: Some((10, 1)), quantum: false }, "7 waits, and 7 < 10");
        assert_eq!(ready.highest(), Some((7, 0)), "the preempted vCPU waits in the queue");
    }

    #[test]
    fn round_robin_puts_the_running_vcpu_behind_its_equals_at_the_quantum() {
        let mut ready = queue(&[(1, 10)]);
        assert_eq!(turn(&mut ready, Some((10, 0)), None, true), Turn::Switch { next: Some((10, 1)), quantum: true });
        assert_eq!(turn(&mut ready, Some((10, 1)), None, true), Turn::Switch { next: Some((10, 0)), quantum: true });
        let mut alone = queue(&[]);
        assert_eq!(turn(&mut alone, Some((10, 0)), None, true), Turn::Stay { quantum: false }, "no peer: no turn");
    }

    #[test]
    fn with_nothing_running_the_most_urgent_runs() {
        let mut ready = queue(&[(3, 1), (4, 200), (5, 200)]);
        assert_eq!(turn(&mut ready, None, None, false), Turn::Switch { next: Some((200, 4)), quantum: true });
        assert_eq!(turn(&mut ready, None, None, false), Turn::Switch { next: Some((200, 5)), quantum: false });
        assert_eq!(turn(&mut ready, None, None, false), Turn::Switch { next: Some((1, 3)), quantum: false });
        assert_eq!(turn(&mut ready, None, None, false), Turn::Switch { next: None, quantum: false });
    }

    proptest::proptest! {
        /// Whatever the queue, the running vCPU and the quantum, a newcomer
        /// kept out of the queue gets the answer it would get queued.
        #[test]
        fn a_newcomer_is_answered_as_if_it_had_been_queued(
            entries in proptest::collection::vec((0..6usize, 0..4u8), 0..6),
            running in proptest::option::of(0..4u8),
            newcomer in 0..4u8,
            quantum_over in proptest::bool::ANY,
        ) {
            let mut queued = Queue::new();
            for &(slot, priority) in &entries {
                let _ = queued.enqueue(slot, priority);
            }
            let (running, newcomer) = (running.map(|p| (p, 6)), Some((newcomer, 7)));
            let mut fast = queued.clone();
            let answer = turn(&mut fast, running, newcomer, quantum_over);
            let mut slow = queued;
            slow.enqueue(7, newcomer.unwrap().0).unwrap();
            proptest::prop_assert_eq!(answer, turn(&mut slow, running, None, quantum_over));
            proptest::prop_assert_eq!(fast, slow);
        }

        /// `preempts` says yes exactly when `turn` would run the newcomer
        /// at once, without a quantum, and leaves the queue as `turn` does.
        #[test]
        fn a_preemption_answered_alone_is_the_one_turn_gives(
            entries in proptest::collection::vec((0..6usize, 0..4u8), 0..6),
            running in 0..4u8,
            newcomer in 0..4u8,
        ) {
            let mut queued = Queue::new();
            for &(slot, priority) in &entries {
                let _ = queued.enqueue(slot, priority);
            }
            let mut short = queued.clone();
            let mut full = queued.clone();
            let answer = turn(&mut full, Some((running, 6)), Some((newcomer, 7)), false);
            let runs_at_once = answer == Turn::Switch { next: Some((newcomer, 7)), quantum: false };
            proptest::prop_assert_eq!(preempts(&mut short, (running, 6), newcomer), runs_at_once);
            proptest::prop_assert_eq!(&short, if runs_at_once { &full } else { &queued });
        }
    }

    #[test]
    fn a_vcpu_moves_away_when_outranked_and_comes_back_when_not() {
        // At home, outranked, with work: away to the first target.
        assert_eq!(migration(1, 1, 3, true, true), Some(3));
        // At home, outranked, but idle: nothing to gain by moving.
        assert_eq!(migration(1, 1, 3, true, false), None);
        // At home and not outranked: stays.
        assert_eq!(migration(1, 1, 3, false, true), None);
        // Away and no longer outranked: home.
        assert_eq!(migration(1, 3, 3, false, true), Some(1));
        assert_eq!(migration(1, 3, 3, false, false), Some(1));
        // Away and still outranked: stays away.
        assert_eq!(migration(1, 3, 3, true, true), None);
    }

    #[test]
    fn after_a_trap_a_vcpu_leaves_when_it_waits_or_may_no_longer_run() {
        use AfterTrap::*;
        assert_eq!(after_trap(true, true, RunState::Running, false), Leave(OutReason::Waiting));
        // An interrupt came between asking to wait and looking: stays.
        assert_eq!(after_trap(true, false, RunState::Running, true), Stay);
        assert_eq!(after_trap(false, false, RunState::Running, true), Stay);
        assert_eq!(after_trap(false, false, RunState::Running, false), Leave(OutReason::Off));
        assert_eq!(after_trap(false, false, RunState::Stopped, false), Leave(OutReason::Stopped));
        // A restarting partition's vCPU 0 is runnable (for its reload) but
        // its guest must not go on.
        assert_eq!(after_trap(false, false, RunState::Restarting, true), Leave(OutReason::Off));
        assert_eq!(after_trap(false, false, RunState::Suspended, true), Leave(OutReason::Off));
    }

    #[test]
    fn the_trace_tells_a_stop_from_a_power_off() {
        assert_eq!(leaving(Change::Stop), OutReason::Stopped);
        assert_eq!(leaving(Change::Suspend), OutReason::Stopped);
        assert_eq!(leaving(Change::Restart), OutReason::Off);
        assert_eq!(leaving(Change::PowerOff), OutReason::Off);
        assert_eq!(gone(RunState::Stopped), OutReason::Stopped);
        assert_eq!(gone(RunState::Halted), OutReason::Off);
    }
}
