//! What happens when a guest leaves EL1. [`handle`] resolves the context
//! once (the system, this pCPU, the vCPU, its partition), lets a handler
//! act on the guest's registers and say what it found ([`exit::Exit`]),
//! turns that into a decision (`partita_core::scheduler::decide`) after
//! the health monitor and the partition's life cycle have had their say,
//! and carries the decision out in one place: the vCPU resumes, or it
//! leaves its pCPU for whatever the scheduler runs next.

pub mod exit;
mod firmware;
mod mmio;

use crate::health;
use crate::partition::lifecycle::{self, Cause};
use crate::partition::{Partition, Vcpu};
use crate::scheduler::{self, runnable::runnable};
use crate::state::{self, PerCpu, System};
use crate::{trace, vgic};
use exit::{Exit, Fault};
use partita_arch::cpu;
use partita_arch::exception::{kind, Regs};
use partita_core::health::{Action, Consequence, Event};
use partita_core::partition::lifecycle::Change;
use partita_core::scheduler::decide::{self, AfterTrap};
use partita_core::trace::{Kind, OutReason};
use partita_core::trap::esr::{self, Trap};
use partita_core::trap::sysreg::{self, Policy};

/// The trap's context, resolved once at entry.
struct Here {
    sys: &'static System,
    me: &'static PerCpu,
    slot: usize,
    vcpu: &'static Vcpu,
    part: &'static Partition,
}

/// Every exception from a guest.
pub fn handle(regs: &mut Regs, kind: u64) {
    let sys = state::system();
    let me = sys.here();
    let slot = me.current().expect("guest trap with no vCPU on this CPU");
    let vcpu = me.vcpus[slot];
    let here = Here { sys, me, slot, vcpu, part: sys.partition_of(vcpu) };
    vgic::note_completions(vcpu);
    let exit = match kind {
        kind::SYNC => synchronous(&here, regs),
        kind::IRQ => interrupts(&here),
        _ => Exit::Fault(Fault { what: "SError or FIQ from the guest", class: 0x2f, address: None }),
    };
    let quantum_over = matches!(exit, Exit::Tick);
    let decision = resolve(&here, regs, exit, kind == kind::IRQ);
    carry_out(&here, regs, decision, quantum_over)
}

/// What becomes of the vCPU: the health monitor hears of faults and due
/// deadlines, the partition's life cycle changes as its policy or PSCI
/// asks, then `decide::after_trap` reads the state that results.
fn resolve(here: &Here, regs: &mut Regs, exit: Exit, interrupt: bool) -> AfterTrap {
    let Here { sys, me, vcpu, part, .. } = *here;
    if matches!(exit, Exit::Tick) {
        scheduler::wake_due_timers(me);
        if health::watchdog_due(sys, me) {
            // Served from the scheduler loop, where no vCPU is loaded.
            return AfterTrap::Leave(OutReason::Preempted);
        }
        if let Some((seen, used_us)) = scheduler::overran(vcpu) {
            let action = health::raise_at(part, vcpu, Event::BudgetOverrun, used_us, seen);
            let fault = Fault { what: "budget overrun", class: 0, address: None };
            if let Some(leave) = health_action(here, regs, action, &fault) {
                return leave;
            }
        }
    }
    if interrupt {
        scheduler::after_interrupt(sys, me, part.rank);
    }
    let asked_to_wait = match exit {
        Exit::Fault(fault) => {
            let action = health::raise(part, vcpu, Event::of_fault(fault.class), fault.address.unwrap_or(regs.pc));
            if action.consequence() == Consequence::GoOn {
                // Execution goes on after it; a load it made reads as zero.
                regs.skip_instruction();
            }
            if let Some(leave) = health_action(here, regs, action, &fault) {
                return leave;
            }
            false
        }
        Exit::Health(action, fault) => {
            if let Some(leave) = health_action(here, regs, action, &fault) {
                return leave;
            }
            false
        }
        Exit::Restart => {
            lifecycle::change(sys, part, Change::Restart, Cause::Psci);
            return AfterTrap::Leave(decide::leaving(Change::Restart));
        }
        Exit::Wait => true,
        Exit::Resume | Exit::Tick => false,
    };
    decide::after_trap(asked_to_wait, vcpu.is_waiting(), part.state(), runnable(sys, me, vcpu))
}

/// Carries out the health monitor's `action` about `fault` of the running
/// vCPU: `None` when the partition goes on.
fn health_action(here: &Here, regs: &Regs, action: Action, fault: &Fault) -> Option<AfterTrap> {
    let cause = Cause::Fault { vcpu: here.vcpu.index, fault, pc: regs.pc };
    health::carry_out(here.sys, here.part, action, cause);
    match action.consequence() {
        Consequence::GoOn => None,
        // The vCPU leaves whether or not the change applied: another pCPU
        // may have stopped its partition first.
        Consequence::Change(change) => Some(AfterTrap::Leave(decide::leaving(change))),
        Consequence::ResetSystem => unreachable!("a system reset does not return"),
    }
}

/// The one place a trap ends: back into the guest, or off the pCPU.
fn carry_out(here: &Here, regs: &Regs, decision: AfterTrap, quantum_over: bool) {
    let Here { sys, me, slot, vcpu, .. } = *here;
    match decision {
        AfterTrap::Stay if scheduler::keeps_cpu(sys, me, slot, quantum_over) => {
            // An interface page may have been disconnected meanwhile.
            scheduler::refresh_tlb(me, vcpu.partition, here.part);
            vgic::flush(vcpu)
        }
        AfterTrap::Stay => scheduler::switch_away(sys, me, vcpu, regs, OutReason::Preempted),
        AfterTrap::Leave(reason) => scheduler::switch_away(sys, me, vcpu, regs, reason),
    }
}

fn interrupts(here: &Here) -> Exit {
    if scheduler::drain_interrupts(here.sys, here.me, Some(here.vcpu)) {
        Exit::Tick
    } else {
        Exit::Resume
    }
}

/// WFI: with an interrupt to take it completes at once; otherwise the vCPU
/// waits off the pCPU. Waiting is announced before looking, so an interrupt
/// injected from another pCPU in between is never missed.
fn wait_for_interrupt(vcpu: &Vcpu) -> Exit {
    vgic::resample_timer();
    vcpu.set_waiting(true);
    if vgic::has_pending(vcpu) {
        vcpu.set_waiting(false);
        return Exit::Resume;
    }
    Exit::Wait
}

fn synchronous(here: &Here, regs: &mut Regs) -> Exit {
    let Here { vcpu, part, .. } = *here;
    let syndrome = cpu::syndrome();
    let class = esr::class(syndrome.esr);
    let ipa = esr::fault_ipa(syndrome.hpfar, syndrome.far);
    trace::record(Kind::Trap, vcpu.partition, vcpu.index, u32::from(class));
    match esr::decode(syndrome.esr) {
        Trap::Wait { .. } => {
            regs.skip_instruction();
            wait_for_interrupt(vcpu)
        }
        Trap::Hvc { .. } => firmware::call(here.sys, regs, part, vcpu, false),
        Trap::Smc { .. } => {
            regs.skip_instruction();
            firmware::call(here.sys, regs, part, vcpu, true)
        }
        Trap::SysReg(access) => system_register(regs, part, vcpu, access),
        Trap::DataAbort { access, .. } => {
            let fabric = here.sys.fabric.as_ref();
            match fabric.and_then(|fabric| fabric.write_fault(here.sys, vcpu, ipa)) {
                Some(exit) => exit,
                None => mmio::data_abort(here.sys, here.me, regs, part, access, ipa),
            }
        }
        Trap::InstructionAbort { .. } => {
            Exit::Fault(Fault { what: "stage-2 instruction abort", class, address: Some(ipa) })
        }
        Trap::Other { class } => Exit::Fault(Fault { what: esr::class_name(class), class, address: None }),
    }
}

fn system_register(regs: &mut Regs, part: &Partition, vcpu: &Vcpu, access: esr::SysRegAccess) -> Exit {
    let rt = usize::from(access.rt);
    match sysreg::policy(&access.reg) {
        Policy::GenerateSgi if !access.read => vgic::generate_sgi(part, vcpu.index, regs.get(rt)),
        Policy::SetWay => part.clean_slice(),
        Policy::GenerateSgi | Policy::ReadZeroWriteIgnore => {
            if access.read {
                regs.set(rt, 0);
            }
        }
        Policy::Forbidden => {
            return Exit::Fault(Fault {
                what: "forbidden system register access",
                class: esr::ec::SYSREG,
                address: None,
            });
        }
    }
    regs.skip_instruction();
    Exit::Resume
}
