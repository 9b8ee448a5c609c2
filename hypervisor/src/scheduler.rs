//! Each pCPU's loop: choose a vCPU pinned to it, load its state and enter
//! it; with nothing to run, wait for an interrupt. A fixed-priority pCPU
//! chooses its most urgent runnable vCPU (round robin among equals); a
//! cyclic one, the owner of the current slot of the plan in force.
//!
//! One EL2 timer serves every deadline: the quantum (armed only when a peer
//! of the same priority could run), the end of a cyclic slot, and the
//! wake-up of vCPUs that wait in WFI for their virtual timer while they are
//! off the pCPU.

use crate::boot::{system, PerCpu, MAX_SLOTS};
use crate::irq;
use crate::partition::{RunState, Vcpu};
use crate::trace;
use core::sync::atomic::Ordering;
use partita_arch::exception::{enter_guest, Regs};
use partita_arch::{cpu, el2, gic, stage2, timer};
use partita_core::partition::vcpu::{Op, State};
use partita_core::scheduler::readyq::ReadyQueue;
use partita_core::time::ticks_to_us;
use partita_core::trace::{Kind, OutReason};
use partita_core::vgic::VTIMER_INTID;
use spin::MutexGuard;

/// True when `vcpu` may run on this pCPU: it is up, has work, and has not
/// moved to another pCPU.
pub fn runnable(vcpu: &Vcpu) -> bool {
    wants_cpu(vcpu) && vcpu.pcpu() == cpu::index()
}

/// True when `vcpu` would run if it had a pCPU. A restarting partition's
/// vCPU 0 "runs" its reload, a step each time it is chosen.
fn wants_cpu(vcpu: &Vcpu) -> bool {
    match system().partitions[vcpu.partition].state() {
        RunState::Running => vcpu.state().schedulable() && !vcpu.is_waiting(),
        RunState::Restarting => vcpu.index == 0,
        _ => false,
    }
}

/// The priority of a vCPU this pCPU could load now (runnable here and not
/// still loaded on the pCPU it is coming back from).
fn rank(vcpu: &Vcpu) -> Option<u8> {
    (runnable(vcpu) && !vcpu.is_on_cpu()).then(|| priority(vcpu))
}

fn priority(vcpu: &Vcpu) -> u8 {
    system().partitions[vcpu.partition].rank
}

/// Runs vCPUs on `cpu` forever.
pub fn run(cpu: usize) -> ! {
    let me = &system().cpus[cpu];
    loop {
        wake_due_timers(me);
        crate::health::serve_watchdogs(me);
        if let Some(slot) = choose(cpu, me) {
            let vcpu = me.vcpus[slot];
            if vcpu.claim(cpu) {
                let part = &system().partitions[vcpu.partition];
                if part.state() != RunState::Restarting {
                    switch_to(me, slot);
                }
                // One step of its reload in its place, then look again,
                // after any interrupt that came meanwhile.
                part.restart_step(system().data);
                vcpu.release();
                drain_interrupts(None);
            }
            // Lost to another pCPU, or a reload step done: look again.
            continue;
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
        now.owner.filter(|&slot| rank(me.vcpus[slot]).is_some())
    } else {
        let mut ready = refresh(me);
        let mut best = highest(me, &mut ready);
        // A vCPU that came back and is off every pCPU can run at once.
        if rebalance(cpu, me, best.map(|(priority, _)| priority)) {
            drop(ready);
            ready = refresh(me);
            best = highest(me, &mut ready);
        }
        let (_, slot) = best?;
        ready.remove(slot);
        Some(slot)
    }
}

type Ready<'a> = MutexGuard<'a, ReadyQueue<MAX_SLOTS>>;

/// `me`'s ready queue, brought up to date with every vCPU marked since the
/// last look: the cost follows what changed, not how many vCPUs there are.
fn refresh(me: &PerCpu) -> Ready<'_> {
    let mut ready = me.ready.lock();
    for slot in me.take_dirty().filter(|&slot| slot < me.vcpus.len()) {
        match rank(me.vcpus[slot]) {
            Some(priority) if !ready.contains(slot) => {
                // Cannot fail: the slot is in range and not queued.
                let _ = ready.enqueue(slot, priority);
            }
            Some(_) => {}
            None => {
                ready.remove(slot);
            }
        }
    }
    ready
}

/// The most urgent queued vCPU, with its priority. An entry that can no
/// longer run (it changed after it was marked and looked at) is dropped; it
/// is marked, and queued again, when it can.
fn highest(me: &PerCpu, ready: &mut Ready<'_>) -> Option<(u8, usize)> {
    while let Some((priority, slot)) = ready.highest() {
        if rank(me.vcpus[slot]).is_some() {
            return Some((priority, slot));
        }
        ready.remove(slot);
    }
    None
}

/// vlk's migration, decided by a vCPU's home pCPU: a vCPU that could run
/// but has something more urgent (`urgent`) at home moves to its first
/// target; one that moved comes back once nothing more urgent is left.
/// The pCPU it leaves is kicked, and kicks back once its registers are
/// saved (see [`deschedule`]). Returns true if a vCPU came back.
pub fn rebalance(cpu: usize, me: &PerCpu, urgent: Option<u8>) -> bool {
    let mut back = false;
    for vcpu in me.vcpus.iter().filter(|v| v.home == cpu && !v.migrate_to.is_empty()) {
        let outranked = urgent.is_some_and(|u| u > priority(vcpu));
        let away = vcpu.pcpu() != cpu;
        let target = if !away && outranked && wants_cpu(vcpu) {
            vcpu.migrate_to[0]
        } else if away && !outranked {
            cpu
        } else {
            continue;
        };
        let from = vcpu.pcpu();
        vcpu.move_to(target);
        trace::record(Kind::Migrate, vcpu.partition, vcpu.index, target as u32);
        gic::kick(if target == cpu { from } else { target });
        back |= target == cpu;
    }
    back
}

/// On a fixed-priority pCPU shared by several vCPUs: the priority of the
/// most urgent one waiting for it, besides the one running.
pub fn contender(me: &PerCpu) -> Option<u8> {
    if me.exclusive || me.cyclic {
        return None;
    }
    highest(me, &mut refresh(me)).map(|(priority, _)| priority)
}

/// True when the vCPU in `slot` must give way now. Fixed priority: a more
/// urgent one is runnable (`contender`), or its quantum is over and a peer
/// of equal priority waits. Cyclic: its slot is over.
pub fn must_yield(me: &PerCpu, slot: usize, quantum_over: bool, contender: Option<u8>) -> bool {
    if me.exclusive {
        return false;
    }
    if me.cyclic {
        return timer::counter() >= me.until.load(Ordering::Relaxed);
    }
    let mine = priority(me.vcpus[slot]);
    contender.is_some_and(|other| other > mine || (quantum_over && other == mine))
}

fn switch_to(me: &PerCpu, slot: usize) -> ! {
    let vcpu = me.vcpus[slot];
    me.set_current(Some(slot));
    if vcpu.state() == State::Boot {
        // Only its own pCPU enters it; a concurrent suspend or halt wins.
        let _ = vcpu.apply(Op::Enter);
    }
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
    let part = &system().partitions[vcpu.partition];
    stage2::activate(part.vttbr);
    let generation = part.tlb_generation();
    if me.tlb_seen[vcpu.partition].swap(generation, Ordering::Relaxed) != generation {
        partita_arch::cache::invalidate_guest_tlb_local();
    }
    el2::trap_wfi(!me.exclusive);
    if let Some(meter) = &vcpu.budget {
        meter.lock().enter(timer::counter());
    }
    irq::unmask_timer();
    irq::flush(vcpu);
    arm_timer(me, Some(slot));
    if me.cyclic && timer::counter() >= me.until.load(Ordering::Relaxed) {
        // Loading outlasted the slot: the next owner's time is not ours.
        save(vcpu, &regs);
        run(cpu::index())
    }
    // Traced last, so that a switch's cost in the trace includes loading.
    trace::record(Kind::VcpuIn, vcpu.partition, vcpu.index, 0);
    enter_guest(regs)
}

/// Takes the running vCPU off its pCPU, saving everything it had loaded.
pub fn deschedule(vcpu: &Vcpu, regs: &Regs, reason: OutReason) {
    trace::record(Kind::VcpuOut, vcpu.partition, vcpu.index, reason as u32);
    save(vcpu, regs);
}

fn save(vcpu: &Vcpu, regs: &Regs) {
    irq::note_completions(vcpu);
    let mut ctx = vcpu.context.lock();
    ctx.regs = *regs;
    ctx.el1.save();
    ctx.fp.save();
    ctx.vgic.save();
    irq::release_private_hw(&mut ctx.vgic.lrs);
    drop(ctx);
    if let Some(meter) = &vcpu.budget {
        meter.lock().leave(timer::counter());
    }
    vcpu.release();
    // It moved while it ran here: its pCPU now may load it.
    let pcpu = vcpu.pcpu();
    if pcpu != cpu::index() {
        gic::kick(pcpu);
    }
}

/// Once per period, when the running `vcpu` has used more than its
/// budget: when that was seen (counter) and what it used so far in this
/// period, in microseconds.
pub fn overran(vcpu: &Vcpu) -> Option<(u64, u64)> {
    let now = timer::counter();
    let mut meter = vcpu.budget.as_ref()?.lock();
    meter.overrun(now).then(|| (now, ticks_to_us(meter.used(now), timer::frequency())))
}

/// Every queued vCPU sits at its own priority (priorities never change at
/// run time), for the state check.
pub fn ready_queue_consistent(me: &PerCpu) -> bool {
    let ready = me.ready.lock();
    (0..me.vcpus.len()).all(|slot| ready.priority_of(slot).is_none_or(|p| p == priority(me.vcpus[slot])))
}

/// When a vCPU that is off its pCPU must wake: its virtual timer's compare
/// value (enabled and not masked), or the deadline of the port call it is
/// parked in, whichever comes first.
fn timer_deadline(vcpu: &Vcpu) -> Option<u64> {
    let ctx = vcpu.context.lock();
    let enabled_unmasked = ctx.el1.cntv_ctl & 0b11 == 0b01;
    let timer = enabled_unmasked.then_some(ctx.el1.cntv_cval);
    drop(ctx);
    timer.into_iter().chain(vcpu.wake_at()).min()
}

/// A vCPU in WFI that this pCPU wakes: it is here, not migrated away.
fn waiting_here(vcpu: &Vcpu) -> bool {
    vcpu.is_waiting() && vcpu.pcpu() == cpu::index()
}

/// Waiting vCPUs whose virtual timer has expired become runnable; the timer
/// interrupt itself arrives once they are back on the pCPU.
pub fn wake_due_timers(me: &PerCpu) {
    let now = timer::counter();
    for vcpu in me.vcpus.iter().filter(|v| waiting_here(v)) {
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
    let waiting = me.vcpus.iter().filter(|v| waiting_here(v)).filter_map(|v| timer_deadline(v)).min();
    let alone = me.cyclic || me.exclusive;
    let quantum = running.filter(|&slot| !alone && must_share(me, slot)).map(|_| timer::counter() + system().quantum);
    me.sharing.store(quantum.is_some(), Ordering::Relaxed);
    let policy = if me.cyclic { Some(me.until.load(Ordering::Relaxed)) } else { quantum };
    let watchdog = crate::health::next_watchdog(me);
    let budget =
        running.and_then(|slot| me.vcpus[slot].budget.as_ref()).and_then(|m| m.lock().deadline(timer::counter()));
    match waiting.into_iter().chain(policy).chain(watchdog).chain(budget).min() {
        Some(deadline) => timer::arm_at(deadline),
        None => timer::disarm(),
    }
}

/// Before the vCPU in `slot` resumes: a peer of its priority that became
/// runnable meanwhile (woken by an interrupt; `contender`) starts the
/// round-robin quantum, which was not running while the vCPU was alone.
pub fn start_sharing(me: &PerCpu, slot: usize, contender: Option<u8>) {
    let peer = contender.is_some_and(|other| other >= priority(me.vcpus[slot]));
    if !me.cyclic && !me.exclusive && !me.sharing.load(Ordering::Relaxed) && peer {
        arm_timer(me, Some(slot));
    }
}

fn must_share(me: &PerCpu, slot: usize) -> bool {
    let mine = priority(me.vcpus[slot]);
    highest(me, &mut refresh(me)).is_some_and(|(other, _)| other >= mine)
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
