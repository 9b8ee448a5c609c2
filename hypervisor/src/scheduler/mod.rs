//! Each pCPU's loop: choose a vCPU by its policy, load its state and enter
//! it; with nothing to run, wait for an interrupt. A fixed-priority pCPU
//! chooses its most urgent runnable vCPU, round robin among equals
//! ([`fixed`]); a cyclic one the owner of the current slot of the plan in
//! force ([`cyclic`]); an exclusive one its only vCPU. The decisions
//! themselves are `partita_core::scheduler::decide`; this module reads
//! the state they need and carries them out.
//!
//! One EL2 timer serves every deadline: the quantum (armed only when a peer
//! of the same priority could run), the end of a cyclic slot, the wake-up
//! of vCPUs that wait in WFI for one of their EL1 timers while they are off
//! the pCPU, watchdogs, budgets and timed outputs.

pub mod cyclic;
pub mod fixed;
pub mod runnable;
pub mod timer_trap;

use runnable::rank;

use crate::partition::{lifecycle, Context, Partition, Vcpu};
use crate::state::{FixedPriority, PerCpu, Policy, System};
use crate::{health, trace, vgic};
use core::sync::atomic::Ordering;
use cyclic::CyclicCpu;
use partita_arch::context::DebugContext;
use partita_arch::exception::{copy_frame, enter_guest, Regs};
use partita_arch::platform::{
    self, Gic, InterruptController, ListRegisters, Lrs, HYP_TIMER_INTID, MAINTENANCE_INTID, PTIMER_INTID,
};
use partita_arch::{cpu, el2, residency, stage2, timer};
use partita_core::partition::debug::Ownership;
use partita_core::partition::lifecycle::RunState;
use partita_core::partition::vcpu::{Op, State};
use partita_core::residency::path;
use partita_core::scheduler::decide::{AfterTrap, Turn};
use partita_core::time::ticks_to_us;
use partita_core::trace::{Kind, OutReason};
use partita_core::vgic::{timer_armed, TIMER_INTIDS, VTIMER_INTID};

/// Who runs once a vCPU has left its pCPU.
#[derive(Clone, Copy)]
pub enum Next {
    /// The loop looks: it serves due timers and watchdogs, then asks the
    /// policy.
    Ask,
    /// The trap already asked the policy (fixed priority, whose one look
    /// at the ready queue answered both whether the vCPU leaves and who
    /// follows it): this slot runs, or none; `quantum`: its round-robin
    /// quantum runs.
    Chosen { slot: Option<usize>, quantum: bool },
}

/// What a trap's decision comes to on its pCPU.
pub enum Verdict {
    /// The vCPU resumes.
    Stay,
    /// It leaves, and `Next` says who follows.
    Leave(OutReason, Next),
}

/// Runs vCPUs on `me` forever.
pub fn run(sys: &'static System, me: &'static PerCpu) -> ! {
    // What no switch changes: the traps are the pCPU's (its policy and its
    // delivery), and a load writes only the list registers it uses.
    el2::set_guest_traps(!me.policy.is_exclusive(), !me.direct);
    Lrs::clear_all();
    run_from(sys, me, Next::Ask)
}

/// The loop, starting with `next`.
fn run_from(sys: &'static System, me: &'static PerCpu, mut next: Next) -> ! {
    // Interrupts came during a watchdog's step: what they brought is
    // chosen before its next step.
    let mut watchdogs_wait = false;
    loop {
        let chosen = match core::mem::replace(&mut next, Next::Ask) {
            Next::Chosen { slot, quantum } => slot.map(|slot| (slot, quantum)),
            Next::Ask => {
                wake_due_timers(me);
                if !me.watchdogs.is_empty() && !watchdogs_wait && health::serve_watchdogs(sys, me) {
                    watchdogs_wait = take_pending_interrupts(sys, me);
                    continue;
                }
                let chosen = choose(sys, me);
                if chosen.is_none() && core::mem::take(&mut watchdogs_wait) {
                    continue;
                }
                watchdogs_wait = false;
                chosen
            }
        };
        if let Some((slot, quantum)) = chosen {
            let vcpu = me.vcpus[slot];
            if vcpu.claim(me.index) {
                let part = sys.partition_of(vcpu);
                if part.state() != RunState::Restarting {
                    // Back only when loading outlasted a cyclic slot.
                    switch_to(sys, me, part, slot, quantum);
                    continue;
                }
                // One step of its reload in its place. Its next step
                // follows unless an interrupt came meanwhile, the only way
                // the choice can change (a change on another pCPU kicks
                // this one, a deadline is the EL2 timer's), or the reload
                // is over: the ready queue's look, about 260 instructions,
                // is not in every step's stretch.
                residency::note(path::RESTART_STEP);
                lifecycle::restart_step(sys, part);
                vcpu.release();
                if !take_pending_interrupts(sys, me) && part.state() == RunState::Restarting {
                    next = Next::Chosen { slot: Some(slot), quantum };
                }
            }
            // Lost to another pCPU, or a reload step done: look again.
            continue;
        }
        me.set_current(None);
        if me.direct {
            // Its guest stopped: what it left pending in the physical GIC
            // would wake this core again and again.
            Gic::reset_direct();
        }
        arm_timer(sys, me, None, false);
        residency::end();
        trace::el2_leaving();
        cpu::wait_for_interrupt();
        trace::el2_entered();
        residency::begin(path::LOOP);
        drain_interrupts(sys, me, None);
    }
}

/// The slot of the vCPU `me` should run now, if any, and whether its
/// quantum runs.
fn choose(sys: &System, me: &PerCpu) -> Option<(usize, bool)> {
    match &me.policy {
        Policy::Exclusive => rank(sys, me, me.vcpus[0]).map(|_| (0, false)),
        Policy::FixedPriority(fp) => match fixed::turn(sys, me, fp, None, None, false) {
            Turn::Switch { next, quantum } => next.map(|(_, slot)| (slot, quantum)),
            Turn::Stay { .. } => None,
        },
        Policy::Cyclic(state) => {
            let owner = cyclic_owner(sys, me, state);
            owner.filter(|&slot| rank(sys, me, me.vcpus[slot]).is_some()).map(|slot| (slot, false))
        }
    }
}

/// The slot of the vCPU that owns the cyclic pCPU `me` now, if any; notes
/// until when that holds.
fn cyclic_owner(sys: &System, me: &PerCpu, state: &CyclicCpu) -> Option<usize> {
    let now = sys.plans.now(me.index, state, &me.vcpus, timer::counter());
    state.until.store(now.until, Ordering::Relaxed);
    now.owner
}

/// What becomes of the vCPU in `slot` once its trap decided `after`: it
/// resumes unless it leaves anyway or `me`'s policy wants another vCPU now
/// (a more urgent one, or an equal one once the quantum is over; the end of
/// its slot). The timer is re-armed for a vCPU that stays when its quantum
/// changed; a switch arms it for the next one anyway. `priority`: its
/// partition's rank.
pub fn after_trap(
    sys: &System,
    me: &PerCpu,
    slot: usize,
    priority: u8,
    after: AfterTrap,
    quantum_over: bool,
) -> Verdict {
    let stays = match &me.policy {
        Policy::FixedPriority(fp) => return after_fixed_trap(sys, me, fp, (priority, slot), after, quantum_over),
        Policy::Exclusive => after == AfterTrap::Stay,
        Policy::Cyclic(state) => {
            let over = timer::counter() >= state.until.load(Ordering::Relaxed);
            if after == AfterTrap::Stay && over && quantum_over {
                // The slot's end, seen by its timer: the trap woke the
                // waiting vCPUs and found no watchdog due, all the loop
                // would do before it looks at the plan.
                return Verdict::Leave(OutReason::Preempted, timer_trap::next_owner(sys, me, state, slot));
            }
            after == AfterTrap::Stay && !over
        }
    };
    match after {
        AfterTrap::Leave(reason) => Verdict::Leave(reason, Next::Ask),
        _ if !stays => Verdict::Leave(OutReason::Preempted, Next::Ask),
        _ => {
            if quantum_over {
                arm_timer(sys, me, Some(slot), false);
            }
            Verdict::Stay
        }
    }
}

/// [`after_trap`] on a fixed-priority pCPU: one look at the ready queue
/// says whether the vCPU (`trapped`: priority, slot) goes on and, if not,
/// who follows it.
fn after_fixed_trap(
    sys: &System,
    me: &PerCpu,
    fp: &FixedPriority,
    trapped: (u8, usize),
    after: AfterTrap,
    quantum_over: bool,
) -> Verdict {
    let slot = trapped.1;
    let (running, reason) = match after {
        AfterTrap::Stay => (Some(trapped), OutReason::Preempted),
        AfterTrap::Leave(reason) => {
            // An expired watchdog is served by the loop, once the vCPU is
            // saved: its action may wait for its partition's vCPUs to leave.
            if !me.watchdogs.is_empty() && health::watchdog_due(sys, me) {
                return Verdict::Leave(reason, Next::Ask);
            }
            // What the loop would have woken before choosing.
            wake_due_timers(me);
            (None, reason)
        }
    };
    match fixed::turn(sys, me, fp, Some(slot), running, quantum_over) {
        Turn::Stay { quantum } => {
            // A peer that became runnable meanwhile starts the quantum,
            // which was not running while the vCPU was alone.
            if quantum_over || (quantum && !fp.sharing.load(Ordering::Relaxed)) {
                arm_timer(sys, me, Some(slot), quantum);
            }
            Verdict::Stay
        }
        Turn::Switch { next, quantum } => {
            Verdict::Leave(reason, Next::Chosen { slot: next.map(|(_, slot)| slot), quantum })
        }
    }
}

/// After an interrupt while the vCPU of priority `running` keeps `me`: a
/// vCPU that woke here may have to move away (vlk's migration).
pub fn after_interrupt(sys: &System, me: &PerCpu, running: u8) {
    if me.migrating.is_empty() {
        return;
    }
    if let Policy::FixedPriority(_) = me.policy {
        let _ = fixed::rebalance(sys, me, Some(running));
    }
}

/// Enters the vCPU in `slot`. Returns, with the vCPU saved and released,
/// only when loading it outlasted its cyclic slot: to `run`'s loop rather
/// than into `run` again, whose frames would pile up on the stack at every
/// such slot until it overflowed.
fn switch_to(sys: &'static System, me: &'static PerCpu, part: &'static Partition, slot: usize, quantum: bool) {
    residency::note_switch();
    let vcpu = me.vcpus[slot];
    me.set_current(Some(slot));
    if vcpu.state() == State::Boot {
        // Only its own pCPU enters it; a concurrent suspend or halt wins.
        let _ = vcpu.apply(Op::Enter);
        if me.direct {
            // A restarted guest finds the physical GIC as at power-on.
            Gic::reset_direct();
        }
    }
    // Every link of a vCPU to this pCPU's timer PPIs was released when it
    // left, so an activation still here is stale; left alone, it would keep
    // the incoming vCPU's timer from ever firing.
    Gic::deactivate_both(TIMER_INTIDS[0], TIMER_INTIDS[1]);
    let listed_timers = {
        let mut ctx = vcpu.context.lock();
        ctx.el1.restore();
        crate::partition::fp::enter(me, &ctx);
        let listed_timers = if me.direct { 0 } else { vgic::relink_private_hw(&mut ctx.vgic) };
        ctx.vgic.restore();
        load_debug(me, &ctx);
        vgic::note_loaded(vcpu, &ctx.vgic);
        listed_timers
    };
    stage2::activate(part.vttbr);
    refresh_tlb(me, vcpu.partition, part);
    if let Some(meter) = &vcpu.budget {
        meter.lock().enter(timer::counter());
    }
    vgic::unmask_timers(me);
    vgic::give_due_timers(sys, me, vcpu, listed_timers);
    vgic::flush(vcpu);
    arm_timer(sys, me, Some(slot), quantum);
    if let Policy::Cyclic(state) = &me.policy {
        if timer::counter() >= state.until.load(Ordering::Relaxed) {
            // Loading outlasted the slot: the next owner's time is not ours.
            // Its registers are still the saved ones. The slot's end is the
            // EL2 timer's, taken here, so that the next owner's load is a
            // stretch of its own (with this one's, it was 1,477).
            save(me, vcpu, None, false);
            take_pending_interrupts(sys, me);
            return;
        }
    }
    if timer::fired() && wake_due(me) {
        // A waiting vCPU's deadline came while this one was loaded: the
        // wake-up, which may preempt it, is looked at now, as entering
        // would only exit again at once. Its registers are still the saved
        // ones. (Any other deadline, its own budget's say, is the trap's.)
        save(me, vcpu, None, false);
        take_pending_interrupts(sys, me);
        return;
    }
    crate::trap::fast::enter(part, vcpu);
    // Traced last, so that a switch's cost in the trace includes loading.
    trace::record(Kind::VcpuIn, vcpu.partition, vcpu.index, 0);
    // Locked again for its registers, which the entry loads straight from
    // the context: not across the steps above, some of which take its
    // partition's distributor lock, which a distributor access elsewhere
    // holds while it reads a context.
    trace::el2_leaving();
    enter_guest(vcpu.context.lock(), |ctx| &ctx.regs)
}

/// The debug registers for the vCPU of `ctx`: its own values if it has
/// them, else their reset state behind a trap (see
/// `partita_core::partition::debug`).
fn load_debug(me: &PerCpu, ctx: &Context) {
    let load = ctx.debug_owner.load(me.debug_dirty.load(Ordering::Relaxed));
    if load.restore {
        ctx.debug.restore();
    } else if load.clear {
        DebugContext::RESET.restore();
    }
    el2::trap_debug(load.trap);
    me.debug_dirty.store(ctx.debug_owner.leaves_dirty(), Ordering::Relaxed);
}

/// The running `vcpu` touched a debug register for the first time: the
/// registers become its own, untrapped. They are in their reset state,
/// cleared when it was loaded, which is what it has never changed. False
/// when it has them already (its access trapped for another reason).
pub fn give_debug(me: &PerCpu, vcpu: &Vcpu) -> bool {
    let mut ctx = vcpu.context.lock();
    if ctx.debug_owner == Ownership::Given {
        return false;
    }
    ctx.debug_owner = Ownership::Given;
    el2::trap_debug(false);
    me.debug_dirty.store(true, Ordering::Relaxed);
    true
}

/// Invalidates `me`'s TLB entries of partition `p` (`part`, whose table is
/// the one loaded) if its stage-2 map changed since `me` last looked.
pub fn refresh_tlb(me: &PerCpu, p: usize, part: &crate::partition::Partition) {
    let generation = part.tlb_generation();
    if me.tlb_seen[p].load(Ordering::Relaxed) != generation {
        partita_arch::cache::invalidate_guest_tlb_local();
        // Published once the entries are gone, and after every write the
        // guest made through them: what `tlb_dropped_everywhere` reads.
        me.tlb_seen[p].store(generation, Ordering::Release);
    }
}

/// No pCPU can write partition `p`'s memory any more through a TLB entry
/// cached before its stage-2 map reached `generation`: each one running
/// it now has invalidated since, and every other one will before it
/// enters it again. The guest's writes made through older entries are
/// visible to the caller.
///
/// A pCPU publishes the vCPU it enters before it reads the generation
/// (both sequentially consistent, as is the generation's raise): were it
/// seen running no vCPU of `p`, it reads the raised generation once it
/// enters one.
pub fn tlb_dropped_everywhere(sys: &System, p: usize, generation: u32) -> bool {
    sys.cpus.iter().all(|cpu| {
        // Seen at `generation` or a later one, modulo wrapping.
        let seen = cpu.tlb_seen[p].load(Ordering::Acquire).wrapping_sub(generation) as i32 >= 0;
        seen || cpu.running_partition() != Some(p)
    })
}

/// Takes the running vCPU off its pCPU, saving everything it had loaded,
/// and runs `next`: the only way a trap leaves its vCPU.
pub fn switch_away(
    sys: &'static System,
    me: &'static PerCpu,
    vcpu: &Vcpu,
    regs: &Regs,
    reason: OutReason,
    next: Next,
) -> ! {
    trace::record(Kind::VcpuOut, vcpu.partition, vcpu.index, reason as u32);
    residency::note_switch();
    // A choice made in the trap queued the vCPU if it can run.
    save(me, vcpu, Some(regs), matches!(next, Next::Chosen { .. }));
    run_from(sys, me, look_for_interrupts(sys, me, next))
}

/// Between a switch's save and its load: an interrupt that came since the
/// trap's choice (the EL2 timer's, say, with a wake-up) is taken now,
/// before a vCPU is loaded only to leave again at once, and the choice is
/// made again. Either way interrupts were looked at here, so a more urgent
/// vCPU waits for one half of a switch, never for both (the two stretches
/// `partita bench response` measures).
fn look_for_interrupts(sys: &System, me: &PerCpu, next: Next) -> Next {
    if !take_pending_interrupts(sys, me) {
        return next;
    }
    // The choice took it off the ready queue: looked at again.
    if let Next::Chosen { slot: Some(slot), .. } = next {
        me.dirty.mark_own(slot);
    }
    Next::Ask
}

/// The end of a stretch in the loop, where no vCPU is loaded: interrupts
/// that came during it are taken. True when there were any, and a new
/// choice is to be made.
fn take_pending_interrupts(sys: &System, me: &PerCpu) -> bool {
    residency::checkpoint(path::LOOP);
    if !timer::fired() && !cpu::interrupt_pending() {
        return false;
    }
    drain_interrupts(sys, me, None);
    // What the interrupts brought is served; a new stretch begins.
    residency::checkpoint(path::LOOP);
    true
}

/// Saves what `vcpu` had loaded on `me` and lets it go; `regs`, its trap
/// frame, unless its saved registers are current; `requeued`, see
/// `Vcpu::release_from`. When it waits, when its timers or its parked call
/// end the wait is worked out here, once, from what was just saved: the
/// pCPU asks at every decision.
fn save(me: &PerCpu, vcpu: &Vcpu, regs: Option<&Regs>, requeued: bool) {
    crate::trap::fast::leave();
    vgic::note_completions(vcpu);
    let mut ctx = vcpu.context.lock();
    if let Some(regs) = regs {
        copy_frame(&mut ctx.regs, regs);
    }
    ctx.el1.save();
    let virtual_timer = timer_armed(ctx.el1.cntv_ctl).then_some(ctx.el1.cntv_cval);
    let physical_timer = timer_armed(ctx.el1.cntp_ctl).then_some(ctx.el1.cntp_cval);
    vcpu.set_wake_deadline(earlier(earlier(virtual_timer, physical_timer), vcpu.wake_at()));
    crate::partition::fp::leave(me, vcpu, &mut ctx);
    ctx.vgic.save();
    if ctx.debug_owner.saves() {
        ctx.debug.save();
    }
    vgic::release_private_hw(&mut ctx.vgic);
    drop(ctx);
    vgic::release_queued_private_hw(vcpu);
    if let Some(meter) = &vcpu.budget {
        meter.lock().leave(timer::counter());
    }
    vcpu.release_from(me.dirty, requeued);
    // It moved while it ran here: its pCPU now may load it.
    let pcpu = vcpu.pcpu();
    if pcpu != cpu::index() {
        Gic::kick(pcpu);
    }
}

/// Once per period, when the running `vcpu` has used more than its
/// budget: when that was seen (counter) and what it used so far in this
/// period, in microseconds.
pub fn overran(vcpu: &Vcpu) -> Option<(u64, u64)> {
    let now = timer::counter();
    let mut meter = vcpu.budget.as_ref()?.lock();
    meter.overrun(now).then(|| (now, ticks_to_us(meter.used(now), platform::counter_frequency())))
}

/// True when the loaded `vcpu`, about to wait, would be woken at once: its
/// virtual or physical timer (enabled and not masked; both count the
/// physical counter, as CNTVOFF_EL2 is 0) or the deadline of the port call
/// it parks in has come. Read from the registers, as its saved context is
/// stale while it runs.
pub fn own_deadline_due(vcpu: &Vcpu) -> bool {
    let now = timer::counter();
    timer::virtual_timer_asserted() || timer::physical_timer_asserted() || vcpu.wake_at().is_some_and(|at| at <= now)
}

/// The earlier of two optional deadlines.
fn earlier(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// The vCPUs in WFI that `me` wakes: those here, not migrated away, and
/// off every pCPU (the one still loaded here is asked
/// [`own_deadline_due`] instead: its saved deadline is stale).
fn waiting_here<'a>(me: &'a PerCpu) -> impl Iterator<Item = &'static Vcpu> + 'a {
    me.vcpus.iter().copied().filter(|v| v.is_waiting() && v.pcpu() == me.index && !v.is_on_cpu())
}

/// True when a waiting vCPU of `me` is due to wake.
fn wake_due(me: &PerCpu) -> bool {
    let now = timer::counter();
    waiting_here(me).any(|vcpu| vcpu.wake_deadline().is_some_and(|deadline| deadline <= now))
}

/// Waiting vCPUs whose timer has expired become runnable; the timer
/// interrupt itself arrives once they are back on the pCPU.
pub fn wake_due_timers(me: &PerCpu) {
    let now = timer::counter();
    for vcpu in waiting_here(me) {
        if vcpu.wake_deadline().is_some_and(|deadline| deadline <= now) {
            vcpu.wake_from(me.dirty);
        }
    }
}

/// Arms the EL2 timer for the earliest of: a waiting vCPU's timer; the
/// policy's own deadline (the end of a cyclic slot or idle gap; the end of
/// the running vCPU's quantum when `quantum` says a peer of its priority
/// could use a fixed-priority pCPU); a watchdog; the running vCPU's
/// budget; the alarm of a timed output. Disarms it when none applies. The
/// timer is written only when that changes the instant it fires at.
fn arm_timer(sys: &System, me: &PerCpu, running: Option<usize>, quantum: bool) {
    let mut deadline = u64::MAX;
    let mut waker = usize::MAX;
    for (slot, vcpu) in me.vcpus.iter().enumerate() {
        if vcpu.is_waiting() && vcpu.pcpu() == me.index && !vcpu.is_on_cpu() {
            let at = vcpu.wake_deadline().unwrap_or(u64::MAX);
            if at < deadline {
                (deadline, waker) = (at, slot);
            }
        }
    }
    me.next_waker.store(waker, Ordering::Relaxed);
    match &me.policy {
        Policy::Exclusive => {}
        Policy::Cyclic(state) => deadline = deadline.min(state.until.load(Ordering::Relaxed)),
        Policy::FixedPriority(fp) => {
            let shared = running.is_some() && quantum;
            fp.sharing.store(shared, Ordering::Relaxed);
            if shared {
                deadline = deadline.min(timer::counter() + sys.quantum);
            }
        }
    }
    // Each asked only where it can apply: most pCPUs have none of them.
    if !me.watchdogs.is_empty() {
        deadline = deadline.min(health::next_watchdog(sys, me).unwrap_or(u64::MAX));
    }
    if let Some(meter) = running.and_then(|slot| me.vcpus[slot].budget.as_ref()) {
        deadline = deadline.min(meter.lock().deadline(timer::counter()).unwrap_or(u64::MAX));
    }
    if !me.timed_io.is_empty() {
        deadline = deadline.min(crate::timedio::next_alarm(sys, me).unwrap_or(u64::MAX));
    }
    if me.armed_at.load(Ordering::Relaxed) != deadline {
        me.armed_at.store(deadline, Ordering::Relaxed);
        if deadline == u64::MAX {
            timer::disarm();
        } else {
            timer::arm_at(deadline);
        }
    }
}

/// Acknowledges every pending physical interrupt: Partita's own are ended
/// here, the others are forwarded to their vCPU. Returns true if the EL2
/// timer fired. Kicks need no action: the caller looks at the vCPUs again.
pub fn drain_interrupts(sys: &System, me: &PerCpu, running: Option<&Vcpu>) -> bool {
    let mut timer_fired = false;
    let mut kicked = false;
    // One the fast path acknowledged comes first, asked for once.
    let mut acknowledged = crate::trap::fast::take_acknowledged();
    while let Some(intid) = acknowledged.take().or_else(Gic::acknowledge) {
        trace::record_cpu(Kind::IrqTaken, intid);
        match intid {
            HYP_TIMER_INTID => {
                residency::note(path::HYP_TIMER);
                timer::disarm();
                // Ended first: serving outputs waits for this timer again.
                Gic::end(intid);
                // Its outputs first: the timer fired a lead ahead of them.
                if !me.timed_io.is_empty() {
                    crate::timedio::serve(sys, me);
                }
                // Disarmed here and by the outputs: the next arming writes it.
                me.armed_at.store(u64::MAX, Ordering::Relaxed);
                timer_fired = true;
            }
            VTIMER_INTID | PTIMER_INTID => {
                residency::note(path::OWN_TIMER);
                vgic::forward(sys, me, intid, running)
            }
            32.. => {
                residency::note(path::PASSTHROUGH);
                vgic::forward(sys, me, intid, running)
            }
            MAINTENANCE_INTID => {
                residency::note(path::MAINTENANCE);
                if let Some(vcpu) = running {
                    vgic::refill(vcpu);
                }
                Gic::end(intid);
            }
            _ => {
                residency::note(path::KICK);
                Gic::end(intid);
                kicked = true;
            }
        }
    }
    // Only the kick comes there: it may be this pCPU's own, for the next
    // chunk of the console's lines. Written once the GIC has nothing more
    // to give, so that the kick it sends for the chunk after is taken in a
    // stretch of its own, not by this loop.
    if kicked {
        crate::console::drain();
    }
    // A timed output asked for on another pCPU: the timer is armed again
    // as after it fired.
    if me.timed_io_rearm.load(Ordering::Relaxed) && me.timed_io_rearm.swap(false, Ordering::Acquire) {
        timer_fired = true;
    }
    timer_fired
}
