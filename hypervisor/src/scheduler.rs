//! Each pCPU's loop: pick the next runnable vCPU pinned to it (round robin),
//! load its state and enter it; with nothing to run, wait for an interrupt.

use crate::boot::{system, PerCpu};
use crate::partition::{RunState, Vcpu};
use partita_arch::exception::{enter_guest, Regs};
use partita_arch::{cpu, gic, stage2, timer};
use crate::trace;
use partita_core::sched::next_round_robin;
use partita_core::trace::{Kind, OutReason};
use partita_core::vcpu::Power;

/// True when `vcpu` may be put on its pCPU.
pub fn runnable(vcpu: &Vcpu) -> bool {
    vcpu.power() == Power::On && system().partitions[vcpu.partition].state() == RunState::Running
}

/// Runs vCPUs on `cpu` forever.
pub fn run(cpu: usize) -> ! {
    let me = &system().cpus[cpu];
    loop {
        if let Some(slot) = next_round_robin(me.current(), me.vcpus.len(), |i| runnable(me.vcpus[i])) {
            switch_to(me, slot);
        }
        me.set_current(None);
        timer::disarm();
        cpu::wait_for_interrupt();
        drain_interrupts();
    }
}

/// True when another vCPU on this pCPU could run instead of `slot`.
pub fn others_runnable(me: &PerCpu, slot: usize) -> bool {
    me.vcpus.iter().enumerate().any(|(i, v)| i != slot && runnable(v))
}

fn switch_to(me: &PerCpu, slot: usize) -> ! {
    let vcpu = me.vcpus[slot];
    me.set_current(Some(slot));
    vcpu.set_on_cpu(true);
    trace::record(Kind::VcpuIn, vcpu.partition, vcpu.index, 0);
    let regs = {
        let ctx = vcpu.context.lock();
        ctx.el1.restore();
        ctx.fp.restore();
        ctx.regs
    };
    stage2::activate(system().partitions[vcpu.partition].vttbr);
    if others_runnable(me, slot) {
        timer::arm_after(system().quantum);
    } else {
        timer::disarm();
    }
    enter_guest(regs)
}

/// Takes the running vCPU off its pCPU, saving everything it had loaded.
pub fn deschedule(vcpu: &Vcpu, regs: &Regs, reason: OutReason) {
    trace::record(Kind::VcpuOut, vcpu.partition, vcpu.index, reason as u32);
    let mut ctx = vcpu.context.lock();
    ctx.regs = *regs;
    ctx.el1.save();
    ctx.fp.save();
    drop(ctx);
    vcpu.set_on_cpu(false);
}

/// Acknowledges and ends every pending interrupt; returns true if the
/// scheduling tick was among them. Kicks need no action: the caller looks
/// at the vCPU states again afterwards.
pub fn drain_interrupts() -> bool {
    let mut tick = false;
    while let Some(intid) = gic::acknowledge() {
        trace::record_cpu(Kind::IrqTaken, intid);
        if intid == gic::HYP_TIMER_INTID {
            timer::disarm();
            tick = true;
        }
        gic::end(intid);
    }
    tick
}
