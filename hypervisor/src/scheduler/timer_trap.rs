//! The EL2 timer's two common errands, taken without the generic trap's
//! questions: the RTOS preempting a GPOS, and a cyclic slot's end.
//!
//! On a fixed-priority pCPU the EL2 timer's usual errand is one waiting
//! vCPU's wake-up (its EL1 timer came due while it was off the pCPU), and
//! when that vCPU is more urgent than the running one the answer is known
//! before anything is asked: the running one leaves for it. On a cyclic
//! pCPU it is the end of the running vCPU's slot, and the plan says who
//! follows. The full trap path asks it all the same (the health monitor,
//! the life cycle, vlk, the ready queue brought up to date), about 450
//! instructions of the preemption's 1,250 that Ker-ONE's ΔVMMsched counts.
//! [`take`] answers those cases alone, when nothing else
//! could change the answer: no trace to record it, no watchdog, budget,
//! timed output or migration on the pCPU, no mark from another pCPU since
//! the last look, and the one expected deadline due. Anything else goes
//! the full way, untouched.

use super::cyclic::CyclicCpu;
use super::{cyclic_owner, runnable::rank, switch_away, wake_due, Next};
use crate::partition::{Partition, Vcpu};
use crate::state::{FixedPriority, PerCpu, Policy, System};
use crate::trace;
use core::sync::atomic::Ordering;
use partita_arch::exception::Regs;
use partita_arch::platform::{Gic, InterruptController, HYP_TIMER_INTID};
use partita_arch::{residency, timer};
use partita_core::residency::path;
use partita_core::scheduler::decide;
use partita_core::trace::OutReason;

/// The running `vcpu` (of `part`, in `slot`) trapped for an IRQ, and the
/// fast path left the EL2 timer's to the full path: if that timer's news
/// is one of the two plain cases, the vCPU leaves here and this does not
/// return. Otherwise nothing has changed. Out of line: every other trap
/// passes it by.
#[inline(never)]
pub fn take(sys: &'static System, me: &'static PerCpu, slot: usize, vcpu: &Vcpu, part: &Partition, regs: &Regs) {
    if trace::enabled() || !me.timed_io.is_empty() || !me.watchdogs.is_empty() || vcpu.budget.is_some() {
        return;
    }
    match &me.policy {
        Policy::FixedPriority(fp) => preempt(sys, me, fp, slot, vcpu, part, regs),
        Policy::Cyclic(state) => slot_end(sys, me, state, slot, vcpu, regs),
        Policy::Exclusive => {}
    }
}

/// [`take`] on a fixed-priority pCPU: when the timer wakes a vCPU that
/// outranks the running one, the running one leaves for it.
fn preempt(
    sys: &'static System,
    me: &'static PerCpu,
    fp: &FixedPriority,
    slot: usize,
    vcpu: &Vcpu,
    part: &Partition,
    regs: &Regs,
) {
    if !me.migrating.is_empty() {
        return;
    }
    let Some((woken, priority)) = due_waker(sys, me) else { return };
    if !only_marked(me, slot, woken) || !super::runnable::runnable(part, me, vcpu) {
        return;
    }
    let mut ready = fp.ready.lock();
    if !decide::preempts(&mut ready, (part.rank, slot), priority) {
        return;
    }
    drop(ready);
    end_timer_interrupt(me);
    // Not marked: it runs now, never queued, as `fixed::refresh` gives a
    // vCPU that is the only one marked. Another vCPU due at the same
    // instant is woken by the timer that fires at once for it.
    me.vcpus[woken].end_wait();
    switch_away(sys, me, vcpu, regs, OutReason::Preempted, Next::Chosen { slot: Some(woken), quantum: false })
}

/// The waiting vCPU of `me` that the EL2 timer was last armed for, with its
/// priority, when its wait is over and it could run here once woken, and
/// only this pCPU lists it (its wake-up needs no mark).
fn due_waker(sys: &System, me: &PerCpu) -> Option<(usize, u8)> {
    let slot = me.next_waker.load(Ordering::Relaxed);
    let vcpu = *me.vcpus.get(slot)?;
    let waiting_here = vcpu.is_waiting() && vcpu.only_at(me.index) && vcpu.pcpu() == me.index && !vcpu.is_on_cpu();
    if !waiting_here || vcpu.wake_deadline().is_none_or(|at| at > timer::counter()) {
        return None;
    }
    let part = sys.partition_of(vcpu);
    decide::wants_cpu(part.state(), vcpu.state(), false, vcpu.index).then_some((slot, part.rank))
}

/// True when no vCPU of `me` but the running one (`running`) and the one
/// that wakes is marked: the ready queue is up to date for every other.
/// Their marks stay for the first look after the switch, which finds
/// nothing to change.
fn only_marked(me: &PerCpu, running: usize, woken: usize) -> bool {
    if me.vcpus.len() > 64 {
        return false;
    }
    me.dirty.peek_first() & !(1 << running | 1 << woken) == 0
}

/// [`take`] on a cyclic pCPU: when the timer marks the end of the running
/// vCPU's slot and nothing else, it leaves for the next slot's owner.
fn slot_end(sys: &'static System, me: &'static PerCpu, state: &CyclicCpu, slot: usize, vcpu: &Vcpu, regs: &Regs) {
    // A waiting vCPU's wake-up is the full path's, and so is a timer that
    // fired before the slot's end.
    if timer::counter() < state.until.load(Ordering::Relaxed) || wake_due(me) {
        return;
    }
    end_timer_interrupt(me);
    switch_away(sys, me, vcpu, regs, OutReason::Preempted, next_owner(sys, me, state, slot))
}

/// Who follows the vCPU in `slot` at its slot's end: the loop looks again
/// for a next slot of the same vCPU, which it sees saved.
pub(super) fn next_owner(sys: &System, me: &PerCpu, state: &CyclicCpu, slot: usize) -> Next {
    match cyclic_owner(sys, me, state) {
        Some(owner) if owner == slot => Next::Ask,
        owner => {
            let owner = owner.filter(|&owner| rank(sys, me, me.vcpus[owner]).is_some());
            Next::Chosen { slot: owner, quantum: false }
        }
    }
}

/// The EL2 timer's interrupt, which the fast path acknowledged, is ended
/// and the timer disarmed: the next arming writes it.
fn end_timer_interrupt(me: &PerCpu) {
    let _ = crate::trap::fast::take_acknowledged();
    residency::note(path::HYP_TIMER);
    timer::disarm();
    Gic::end(HYP_TIMER_INTID);
    me.armed_at.store(u64::MAX, Ordering::Relaxed);
}
