//! Each pCPU's loop: choose a vCPU pinned to it, load its state and enter
//! it; with nothing to run, wait for an interrupt. A fixed-priority pCPU
//! chooses its most urgent runnable vCPU (round robin among equals); a
//! cyclic one, the owner of the current slot of the plan in force.
//!
//! One EL2 timer serves every deadline: the quantum (armed only when a peer
//! of the same priority could run), the end of a cyclic slot, and the
//! wake-up of vCPUs that wait in WFI for their virtual timer while they are
//! off the pCPU.

use crate::boot::{system, PerCpu};
use crate::irq;
use crate::partition::{RunState, Vcpu};
use crate::trace;
use core::sync::atomic::Ordering;
use partita_arch::exception::{enter_guest, Regs};
use partita_arch::{cpu, el2, gic, stage2, timer};
use partita_core::sched::{contender, pick};
use partita_core::trace::{Kind, OutReason};
use partita_core::vcpu::{Op, State};
use partita_core::vgic::VTIMER_INTID;

/// True when `vcpu` may be put on its pCPU.
pub fn runnable(vcpu: &Vcpu) -> bool {
    vcpu.state().schedulable() && !vcpu.is_waiting() && system().partitions[vcpu.partition].state() == RunState::Running
}

/// A runnable vCPU's criticality rank.
fn rank(vcpu: &Vcpu) -> Option<u8> {
    runnable(vcpu).then(|| system().partitions[vcpu.partition].rank)
}

/// Runs vCPUs on `cpu` forever.
pub fn run(cpu: usize) -> ! {
    let me = &system().cpus[cpu];
    loop {
        wake_due_timers(me);
        if let Some(slot) = choose(cpu, me) {
            switch_to(me, slot);
        }
        me.set_current(None);
        arm_timer(me, None);
        cpu::wait_for_interrupt();
        drain_interrupts(None);
    }
}

/// The vCPU `me` should run now, if any.
fn choose(cpu: usize, me: &PerCpu) -> Option<usize> {
    if me.cyclic {
        let now = system().plans.now(cpu, me, timer::counter());
        me.until.store(now.until, Ordering::Relaxed);
        now.owner.filter(|&slot| runnable(me.vcpus[slot]))
    } else {
        pick(me.current(), me.vcpus.len(), |i| rank(me.vcpus[i]))
    }
}

/// True when the vCPU in `slot` must give way now. Fixed priority: a more
/// urgent one is runnable, or its quantum is over and a peer of equal
/// priority waits. Cyclic: its slot is over.
pub fn must_yield(me: &PerCpu, slot: usize, quantum_over: bool) -> bool {
    if me.cyclic {
        return timer::counter() >= me.until.load(Ordering::Relaxed);
    }
    let mine = system().partitions[me.vcpus[slot].partition].rank;
    let rank = |i: usize| rank(me.vcpus[i]);
    contender(slot, me.vcpus.len(), mine + 1, rank) || (quantum_over && contender(slot, me.vcpus.len(), mine, rank))
}

fn switch_to(me: &PerCpu, slot: usize) -> ! {
    let vcpu = me.vcpus[slot];
    me.set_current(Some(slot));
    vcpu.set_on_cpu(true);
    if vcpu.state() == State::Boot {
        // Only its own pCPU enters it; a concurrent suspend or halt wins.
        let _ = vcpu.apply(Op::Enter);
    }
    trace::record(Kind::VcpuIn, vcpu.partition, vcpu.index, 0);
    let regs = {
        let ctx = vcpu.context.lock();
        ctx.el1.restore();
        ctx.fp.restore();
        ctx.vgic.restore();
        if trace::enabled() {
            *vcpu.seen_lrs.lock() = ctx.vgic.lrs;
        }
        ctx.regs
    };
    stage2::activate(system().partitions[vcpu.partition].vttbr);
    el2::trap_wfi(!me.exclusive);
    irq::unmask_timer();
    irq::flush(vcpu);
    arm_timer(me, Some(slot));
    enter_guest(regs)
}

/// Takes the running vCPU off its pCPU, saving everything it had loaded.
pub fn deschedule(vcpu: &Vcpu, regs: &Regs, reason: OutReason) {
    trace::record(Kind::VcpuOut, vcpu.partition, vcpu.index, reason as u32);
    irq::note_completions(vcpu);
    let mut ctx = vcpu.context.lock();
    ctx.regs = *regs;
    ctx.el1.save();
    ctx.fp.save();
    ctx.vgic.save();
    irq::release_private_hw(&mut ctx.vgic.lrs);
    drop(ctx);
    vcpu.set_on_cpu(false);
}

/// The virtual-timer deadline of a vCPU that is off its pCPU: enabled and
/// not masked, its compare value.
fn timer_deadline(vcpu: &Vcpu) -> Option<u64> {
    let ctx = vcpu.context.lock();
    let enabled_unmasked = ctx.el1.cntv_ctl & 0b11 == 0b01;
    enabled_unmasked.then_some(ctx.el1.cntv_cval)
}

/// Waiting vCPUs whose virtual timer has expired become runnable; the timer
/// interrupt itself arrives once they are back on the pCPU.
fn wake_due_timers(me: &PerCpu) {
    let now = timer::counter();
    for vcpu in me.vcpus.iter().filter(|v| v.is_waiting()) {
        if timer_deadline(vcpu).is_some_and(|deadline| deadline <= now) {
            vcpu.set_waiting(false);
        }
    }
}

/// Arms the EL2 timer for the earliest of: a waiting vCPU's timer; on a
/// cyclic pCPU the end of the slot or idle gap; on a fixed-priority one the
/// end of the running vCPU's quantum when a peer of equal priority could
/// use the pCPU. Disarms it when none applies.
pub fn arm_timer(me: &PerCpu, running: Option<usize>) {
    let waiting = me.vcpus.iter().filter(|v| v.is_waiting()).filter_map(|v| timer_deadline(v)).min();
    let policy = if me.cyclic {
        Some(me.until.load(Ordering::Relaxed))
    } else {
        running.filter(|&slot| must_share(me, slot)).map(|_| timer::counter() + system().quantum)
    };
    match waiting.into_iter().chain(policy).min() {
        Some(deadline) => timer::arm_at(deadline),
        None => timer::disarm(),
    }
}

fn must_share(me: &PerCpu, slot: usize) -> bool {
    let mine = system().partitions[me.vcpus[slot].partition].rank;
    contender(slot, me.vcpus.len(), mine, |i| rank(me.vcpus[i]))
}

/// Acknowledges every pending physical interrupt: Partita's own are ended
/// here, the others are forwarded to their vCPU. Returns true if the EL2
/// timer fired. Kicks need no action: the caller looks at the vCPUs again.
pub fn drain_interrupts(running: Option<&Vcpu>) -> bool {
    let mut timer_fired = false;
    while let Some(intid) = gic::acknowledge() {
        trace::record_cpu(Kind::IrqTaken, intid);
        match intid {
            gic::HYP_TIMER_INTID => {
                timer::disarm();
                timer_fired = true;
                gic::end(intid);
            }
            VTIMER_INTID | 32.. => irq::forward(intid, running),
            gic::MAINTENANCE_INTID => {
                if let Some(vcpu) = running {
                    irq::refill(vcpu);
                }
                gic::end(intid);
            }
            _ => gic::end(intid),
        }
    }
    timer_fired
}

/// After the EL2 timer fired while `slot` ran: wake due vCPUs and re-arm.
pub fn timer_expired(me: &PerCpu, slot: usize) {
    wake_due_timers(me);
    arm_timer(me, Some(slot));
}
