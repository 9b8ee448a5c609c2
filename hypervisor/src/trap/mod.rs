//! What happens when a guest leaves EL1. [`handle`] resolves the context
//! once (the system, this pCPU, the vCPU, its partition), lets a handler
//! act on the guest's registers and say what it found ([`exit::Exit`]),
//! turns that into a decision (`partita_core::scheduler::decide`) after
//! the health monitor and the partition's life cycle have had their say,
//! and carries the decision out in one place: the vCPU resumes, or it
//! leaves its pCPU for whatever the scheduler runs next.

pub mod exit;
pub mod fast;
mod firmware;
mod mmio;

use crate::health;
use crate::partition::lifecycle::{self, Cause};
use crate::partition::{Partition, Vcpu};
use crate::scheduler::{self, runnable::runnable, Verdict};
use crate::state::{self, PerCpu, System};
use crate::{trace, vgic};
use exit::{Exit, Fault};
use partita_arch::exception::{kind, Regs};
use partita_arch::platform::HYP_TIMER_INTID;
use partita_arch::{cpu, residency};
use partita_core::health::{Action, Consequence, Event};
use partita_core::partition::lifecycle::Change;
use partita_core::residency::path;
use partita_core::scheduler::decide::{self, AfterTrap};
use partita_core::trace::{Kind, OutReason};
use partita_core::trap::esr::{self, Trap};
use partita_core::trap::idreg;
use partita_core::trap::inject::{self, Entry, Exception};
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
    if kind == kind::IRQ && fast::acknowledged() == Some(HYP_TIMER_INTID) {
        // Returns only when the EL2 timer's news is not its plain case.
        scheduler::timer_trap::take(sys, me, slot, vcpu, here.part, regs);
    }
    vgic::note_completions(vcpu);
    let exit = match kind {
        kind::SYNC => synchronous(&here, regs),
        // FIQs are Partita's own interrupts on a direct-delivery core.
        kind::IRQ | kind::FIQ => interrupts(&here),
        // An asynchronous abort has no synchronous exception to give.
        _ => Exit::Fault(Fault::event("SError from the guest", 0x2f, None)),
    };
    let quantum_over = matches!(exit, Exit::Tick);
    let decision = resolve(&here, regs, exit, kind == kind::IRQ || kind == kind::FIQ);
    carry_out(&here, regs, decision, quantum_over)
}

/// What becomes of the vCPU: the health monitor hears of faults and due
/// deadlines, the partition's life cycle changes as its policy or PSCI
/// asks, then `decide::after_trap` reads the state that results.
fn resolve(here: &Here, regs: &mut Regs, exit: Exit, interrupt: bool) -> AfterTrap {
    let Here { sys, me, vcpu, part, .. } = *here;
    if matches!(exit, Exit::Tick) {
        scheduler::wake_due_timers(me);
        if !me.watchdogs.is_empty() && health::watchdog_due(sys, me) {
            // Served from the scheduler loop, where no vCPU is loaded.
            return AfterTrap::Leave(OutReason::Preempted);
        }
        if let Some((seen, used_us)) = scheduler::overran(vcpu) {
            let action = health::raise_at(part, vcpu, Event::BudgetOverrun, used_us, seen);
            let fault = Fault::event("budget overrun", 0, None);
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
            let action = raise_fault(here, regs, &fault);
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
        Exit::Wait => {
            // Its wait is over before it began: leaving would only bring it
            // back (the timer's interrupt comes as soon as it resumes).
            if scheduler::own_deadline_due(vcpu) {
                vcpu.set_waiting(false);
            }
            true
        }
        Exit::Resume | Exit::Tick => false,
    };
    decide::after_trap(asked_to_wait, vcpu.is_waiting(), part.state(), runnable(part, me, vcpu))
}

/// Tells the health monitor of `fault` and does to the guest's registers
/// what its action asks: step over the faulting instruction (`log`,
/// `ignore`), or enter the guest's own vector (`inject`).
fn raise_fault(here: &Here, regs: &mut Regs, fault: &Fault) -> Action {
    let el1 = partita_arch::inject::el1();
    let entry = fault.exception.and_then(|exception| inject::enter(exception, regs.pc, regs.pstate, el1));
    let detail = fault.address.unwrap_or(regs.pc);
    let action = health::raise_fault(here.part, here.vcpu, Event::of_fault(fault.class), detail, entry.is_some());
    match (action.consequence(), entry) {
        // Execution goes on after it; a load it made reads as zero.
        (Consequence::GoOn, _) => regs.skip_instruction(),
        (Consequence::Inject, Some(entry)) => give_exception(regs, &entry),
        _ => {}
    }
    action
}

/// Carries out the health monitor's `action` about `fault` of the running
/// vCPU: `None` when the partition goes on.
fn health_action(here: &Here, regs: &Regs, action: Action, fault: &Fault) -> Option<AfterTrap> {
    let cause = Cause::Fault { vcpu: here.vcpu.index, fault, pc: regs.pc };
    health::carry_out(here.sys, here.part, action, cause);
    match action.consequence() {
        Consequence::GoOn | Consequence::Inject => None,
        // The vCPU leaves whether or not the change applied: another pCPU
        // may have stopped its partition first.
        Consequence::Change(change) => Some(AfterTrap::Leave(decide::leaving(change))),
        Consequence::ResetSystem => unreachable!("a system reset does not return"),
    }
}

/// The guest takes `entry`'s exception at its own EL1 when it resumes.
fn give_exception(regs: &mut Regs, entry: &Entry) {
    partita_arch::inject::write_el1(entry);
    regs.pc = entry.pc;
    regs.pstate = entry.pstate;
}

/// The one place a trap ends: back into the guest, or off the pCPU.
fn carry_out(here: &Here, regs: &Regs, decision: AfterTrap, quantum_over: bool) {
    let Here { sys, me, slot, vcpu, .. } = *here;
    match scheduler::after_trap(sys, me, slot, here.part.rank, decision, quantum_over) {
        Verdict::Stay => {
            // An interface page may have been disconnected meanwhile.
            scheduler::refresh_tlb(me, vcpu.partition, here.part);
            vgic::flush(vcpu)
        }
        Verdict::Leave(reason, next) => scheduler::switch_away(sys, me, vcpu, regs, reason, next),
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
    let trap = esr::decode(syndrome.esr);
    residency::note(partita_core::residency::of_trap(&trap, regs.x[0]));
    match trap {
        Trap::Wait { .. } => {
            regs.skip_instruction();
            wait_for_interrupt(vcpu)
        }
        Trap::Hvc { .. } => firmware::call(here.sys, regs, part, vcpu, false),
        Trap::Smc { .. } => {
            regs.skip_instruction();
            firmware::call(here.sys, regs, part, vcpu, true)
        }
        Trap::SysReg(access) => system_register(here, regs, access),
        // The access is decoded only once it is not an interface page's.
        Trap::DataAbort { .. } => {
            let fabric = here.sys.fabric.as_ref();
            fabric
                .and_then(|fabric| fabric.write_fault(here.sys, vcpu, ipa))
                .inspect(|_| residency::note(path::ACCEL_REQUEST))
                .or_else(|| mmio::data_abort(here.sys, here.me, regs, part, esr::data_access(syndrome.esr), ipa))
                .unwrap_or_else(|| {
                    residency::note(path::DATA_ABORT);
                    let what = "stage-2 data abort outside its memory";
                    let exception = Exception::abort(syndrome.esr, syndrome.far);
                    Exit::Fault(Fault { what, class, address: Some(ipa), exception })
                })
        }
        Trap::InstructionAbort { .. } => {
            let exception = Exception::abort(syndrome.esr, syndrome.far);
            Exit::Fault(Fault { what: "stage-2 instruction abort", class, address: Some(ipa), exception })
        }
        // Whatever else reaches EL2 synchronously is an instruction the
        // partition is not given (SVE, say, which the ID registers hide).
        Trap::Other { class } => Exit::Fault(Fault::undefined(esr::class_name(class), class, None)),
    }
}

fn system_register(here: &Here, regs: &mut Regs, access: esr::SysRegAccess) -> Exit {
    let Here { me, vcpu, part, .. } = *here;
    let rt = usize::from(access.rt);
    match sysreg::policy(&access.reg, access.read) {
        Policy::GenerateSgi if !access.read => vgic::generate_sgi(part, vcpu.index, regs.get(rt)),
        // Not stepped over until its slice is clean: it traps again.
        Policy::SetWay if !part.clean_step(vcpu) => return Exit::Resume,
        Policy::SetWay => {}
        Policy::IdRegister => regs.set(rt, id_register(&access.reg)),
        // Not stepped over: the access runs again, on the hardware.
        Policy::Debug if scheduler::give_debug(me, vcpu) => return Exit::Resume,
        Policy::GenerateSgi | Policy::ReadZeroWriteIgnore => {
            if access.read {
                regs.set(rt, 0);
            }
        }
        Policy::Debug | Policy::Forbidden => {
            let what = "forbidden system register access";
            return Exit::Fault(Fault::undefined(what, esr::ec::SYSREG, None));
        }
    }
    regs.skip_instruction();
    Exit::Resume
}

/// What the partition reads from an ID register: the hardware's value as
/// `idreg` shows it, without reading the hardware where it shows nothing.
fn id_register(reg: &esr::SysReg) -> u64 {
    match idreg::shown_bits(reg) {
        0 => 0,
        shown => cpu::id_register(reg.crm, reg.op2) & shown,
    }
}
