//! What happens when a guest leaves EL1: decode, act, then resume it,
//! switch to another vCPU, or stop its partition.

use crate::boot::{system, PerCpu};
use crate::console::log;
use crate::irq;
use crate::partition::{Partition, RunState, Vcpu};
use crate::scheduler::{self, deschedule, must_yield, runnable};
use crate::trace;
use partita_arch::exception::{kind, Regs};
use partita_arch::{cpu, firmware, gic};
use partita_core::health::{Action as HmAction, Event};
use partita_core::partition::vcpu::{Op, Refused, State};
use partita_core::trace::{Kind, OutReason};
use partita_core::trap::esr::{self, MmioAccess, SysRegAccess, Trap};
use partita_core::trap::psci::{self, ret, Call};
use partita_core::trap::sysreg::{self, Policy};
use partita_core::trap::vuart;

/// Why a partition is stopped.
pub struct Fault {
    pub what: &'static str,
    pub class: u8,
    pub address: Option<u64>,
}

/// What the trap handler decided.
pub enum Action {
    Resume,
    /// The health monitor decided something other than going on about an
    /// event of this call (already logged).
    Health(HmAction, Fault),
    /// The EL2 timer fired: a quantum ended or a waiting vCPU's timer is due.
    Tick,
    /// The vCPU waits for an interrupt and has none: it leaves the pCPU.
    Wait,
    Stop(Fault),
    Restart,
}

pub fn handle(regs: &mut Regs, kind: u64) {
    let me = &system().cpus[cpu::index()];
    let slot = me.current().expect("guest trap with no vCPU on this CPU");
    let vcpu = me.vcpus[slot];
    let part = &system().partitions[vcpu.partition];
    irq::note_completions(vcpu);
    let action = match kind {
        kind::SYNC => synchronous(regs, part, vcpu),
        kind::IRQ => interrupts(vcpu),
        _ => Action::Stop(Fault { what: "SError or FIQ from the guest", class: 0x2f, address: None }),
    };
    let quantum_over = matches!(action, Action::Tick);
    if quantum_over {
        scheduler::wake_due_timers(me);
        if crate::health::watchdog_due(me) {
            // Served from the scheduler loop, where no vCPU is loaded.
            switch_away(vcpu, regs, OutReason::Preempted);
        }
        if let Some((seen, used_us)) = scheduler::overran(vcpu) {
            budget_overrun(part, vcpu, regs, seen, used_us);
        }
    }
    if kind == kind::IRQ && !me.cyclic && !me.exclusive {
        // A vCPU woke here while this one keeps the pCPU: it may move away.
        let _ = scheduler::rebalance(cpu::index(), me, Some(part.rank));
    }
    match action {
        Action::Stop(fault) => on_fault(part, vcpu, regs, &fault),
        Action::Health(action, fault) => apply(part, vcpu, regs, action, &fault),
        Action::Restart => restart(part, vcpu, regs, "PSCI SYSTEM_RESET"),
        Action::Wait if vcpu.is_waiting() => switch_away(vcpu, regs, OutReason::Waiting),
        // A restarting partition's vCPU 0 is chosen for its reload, but its
        // guest must not go on.
        _ if !runnable(vcpu) || part.state() != RunState::Running => switch_away(vcpu, regs, gone(part)),
        _ => stay_or_yield(me, slot, regs, quantum_over),
    }
}

/// The vCPU may go on: it does unless something more urgent (or, with
/// its quantum over, as urgent) waits for the pCPU. The ready queue is
/// looked at once for both questions.
fn stay_or_yield(me: &PerCpu, slot: usize, regs: &Regs, quantum_over: bool) {
    let vcpu = me.vcpus[slot];
    let contender = scheduler::contender(me);
    if must_yield(me, slot, quantum_over, contender) {
        switch_away(vcpu, regs, OutReason::Preempted);
    }
    // The timer is re-armed only for a vCPU that stays: a switch arms it
    // for the next one anyway.
    if quantum_over {
        scheduler::arm_timer(me, Some(slot));
    } else {
        scheduler::start_sharing(me, slot, contender);
    }
    irq::flush(vcpu)
}

/// Why a vCPU that may no longer run left its pCPU.
fn gone(part: &Partition) -> OutReason {
    match part.state() {
        RunState::Stopped => OutReason::Stopped,
        _ => OutReason::Off,
    }
}

fn switch_away(vcpu: &Vcpu, regs: &Regs, reason: OutReason) -> ! {
    deschedule(vcpu, regs, reason);
    scheduler::run(cpu::index())
}

fn interrupts(vcpu: &Vcpu) -> Action {
    if scheduler::drain_interrupts(Some(vcpu)) {
        Action::Tick
    } else {
        Action::Resume
    }
}

/// WFI: with an interrupt to take it completes at once; otherwise the vCPU
/// waits off the pCPU. Waiting is announced before looking, so an interrupt
/// injected from another pCPU in between is never missed.
fn wait_for_interrupt(vcpu: &Vcpu) -> Action {
    irq::resample_timer();
    vcpu.set_waiting(true);
    if irq::has_pending(vcpu) {
        vcpu.set_waiting(false);
        return Action::Resume;
    }
    Action::Wait
}

fn synchronous(regs: &mut Regs, part: &Partition, vcpu: &Vcpu) -> Action {
    let syndrome = cpu::syndrome();
    let class = esr::class(syndrome.esr);
    let ipa = esr::fault_ipa(syndrome.hpfar, syndrome.far);
    trace::record(Kind::Trap, vcpu.partition, vcpu.index, u32::from(class));
    match esr::decode(syndrome.esr) {
        Trap::Wait { .. } => {
            regs.skip_instruction();
            wait_for_interrupt(vcpu)
        }
        Trap::Hvc { .. } => traced_call(regs, part, vcpu, false),
        Trap::Smc { .. } => {
            regs.skip_instruction();
            traced_call(regs, part, vcpu, true)
        }
        Trap::SysReg(access) => system_register(regs, part, vcpu, access),
        Trap::DataAbort { access, .. } => data_abort(regs, part, access, ipa),
        Trap::InstructionAbort { .. } => {
            Action::Stop(Fault { what: "stage-2 instruction abort", class, address: Some(ipa) })
        }
        Trap::Other { class } => Action::Stop(Fault { what: esr::class_name(class), class, address: None }),
    }
}

fn data_abort(regs: &mut Regs, part: &Partition, access: Option<MmioAccess>, ipa: u64) -> Action {
    let outside =
        Fault { what: "stage-2 data abort outside its memory", class: esr::ec::DABT_LOWER, address: Some(ipa) };
    let Some(access) = access else { return Action::Stop(outside) };
    let offset = ipa.wrapping_sub(part.config.console);
    if offset < vuart::PAGE_SIZE {
        console_access(regs, part, access, offset);
    } else if let Some(frame) = irq::frame(part, ipa) {
        gic_access(regs, part, access, frame);
    } else {
        return Action::Stop(outside);
    }
    regs.skip_instruction();
    Action::Resume
}

fn gic_access(regs: &mut Regs, part: &Partition, access: MmioAccess, frame: irq::Frame) {
    let rt = usize::from(access.rt);
    let value = access.write.then(|| regs.get(rt) & size_mask(access.size));
    let result = irq::mmio(part, frame, access.size, value);
    if !access.write {
        regs.set(rt, result & size_mask(access.size));
    }
}

fn console_access(regs: &mut Regs, part: &Partition, access: MmioAccess, offset: u64) {
    let rt = usize::from(access.rt);
    if access.write {
        let value = regs.get(rt) as u32;
        let byte = part.console.lock().uart.write(offset, value);
        if let Some(byte) = byte {
            part.console_byte(byte);
        }
    } else {
        let value = part.console.lock().uart.read(offset);
        regs.set(rt, u64::from(value) & size_mask(access.size));
    }
}

fn size_mask(size: u8) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (size * 8)) - 1
    }
}

fn system_register(regs: &mut Regs, part: &Partition, vcpu: &Vcpu, access: SysRegAccess) -> Action {
    let rt = usize::from(access.rt);
    match sysreg::policy(&access.reg) {
        Policy::GenerateSgi if !access.read => irq::generate_sgi(part, vcpu.index, regs.get(rt)),
        Policy::SetWay => part.clean_slice(),
        Policy::GenerateSgi | Policy::ReadZeroWriteIgnore => {
            if access.read {
                regs.set(rt, 0);
            }
        }
        Policy::Forbidden => {
            return Action::Stop(Fault {
                what: "forbidden system register access",
                class: esr::ec::SYSREG,
                address: None,
            });
        }
    }
    regs.skip_instruction();
    Action::Resume
}

fn traced_call(regs: &mut Regs, part: &Partition, vcpu: &Vcpu, smc: bool) -> Action {
    trace::record(Kind::HypercallEntry, vcpu.partition, vcpu.index, regs.x[0] as u32);
    let action = firmware_call(regs, part, vcpu, smc);
    trace::record(Kind::HypercallExit, vcpu.partition, vcpu.index, regs.x[0] as u32);
    action
}

/// Partita's hypercalls, PSCI and SMCCC calls, over HVC or SMC. Anything
/// else over SMC is a fault; over HVC it is answered NOT_SUPPORTED.
fn firmware_call(regs: &mut Regs, part: &Partition, vcpu: &Vcpu, smc: bool) -> Action {
    let args = [regs.x[0], regs.x[1], regs.x[2], regs.x[3], regs.x[4]];
    if let Some(call) = partita_core::hypercall::decode(args) {
        return crate::hypercall::handle(regs, part, vcpu, call);
    }
    let call = psci::decode([args[0], args[1], args[2], args[3]]);
    let result = match call {
        Call::Immediate(value) => value,
        Call::CpuOn { target, entry, context } => cpu_on(part, target, entry, context),
        Call::AffinityInfo { target, lowest_level } => affinity_info(part, target, lowest_level),
        Call::CpuOff => {
            // Only a vCPU that is up runs to make this call.
            let _ = vcpu.apply(Op::PowerOff);
            return Action::Resume;
        }
        Call::SystemOff => {
            if part.leave_running(RunState::Off) {
                log!("partition {} powered off (PSCI SYSTEM_OFF)", part.name());
                kick_others(part);
                power_off_when_all_stopped();
            }
            return Action::Resume;
        }
        Call::SystemReset => return Action::Restart,
        Call::Unknown if smc => {
            return Action::Stop(Fault {
                what: "SMC that is not a PSCI call",
                class: esr::ec::SMC64,
                address: Some(regs.x[0]),
            });
        }
        Call::Unknown => return illegal_call(part, vcpu, regs),
    };
    regs.x[0] = result as u64;
    Action::Resume
}

fn cpu_on(part: &Partition, target: u64, entry: u64, context: u64) -> i64 {
    let Some(index) = psci::target_vcpu(target, part.vcpus.len()) else { return ret::INVALID_PARAMETERS };
    match start_vcpu(part, index, entry, context) {
        Ok(()) => ret::SUCCESS,
        Err(Start::BadEntry) => ret::INVALID_ADDRESS,
        Err(Start::Refused(Refused::AlreadyOn)) => ret::ALREADY_ON,
        Err(Start::Refused(_)) => ret::DENIED,
    }
}

/// Why a vCPU did not start.
pub enum Start {
    BadEntry,
    Refused(Refused),
}

/// Starts vCPU `index` of `part` at `entry` with x0 = `context`: PSCI
/// CPU_ON and the start hypercall alike.
pub fn start_vcpu(part: &Partition, index: usize, entry: u64, context: u64) -> Result<(), Start> {
    if part.config.translate_ram(entry).is_none() {
        return Err(Start::BadEntry);
    }
    let target = part.vcpus[index];
    if target.state() != State::Off {
        return Err(Start::Refused(target.state().next(Op::Start).err().unwrap_or(Refused::AlreadyOn)));
    }
    // It may still be saving its registers after CPU_OFF on its own pCPU,
    // which does so with interrupts masked: a short, bounded wait.
    while target.is_on_cpu() {
        core::hint::spin_loop();
    }
    target.reset(entry, context);
    target.apply(Op::Start).map_err(Start::Refused)?;
    irq::wake(target);
    Ok(())
}

fn affinity_info(part: &Partition, target: u64, lowest_level: u64) -> i64 {
    match psci::target_vcpu(target, part.vcpus.len()) {
        // A vCPU is off only once it has left its pCPU.
        Some(index) if lowest_level == 0 => {
            let vcpu = part.vcpus[index];
            let down = matches!(vcpu.state(), State::Off | State::Halted);
            i64::from(down && !vcpu.is_on_cpu())
        }
        _ => ret::INVALID_PARAMETERS,
    }
}

/// A fault goes to the health monitor, and the partition's policy decides:
/// go on past the faulting instruction, suspend, restart, halt (the
/// partition stops, every other goes on) or reset the machine.
fn on_fault(part: &Partition, vcpu: &Vcpu, regs: &mut Regs, fault: &Fault) {
    let event = match fault.class {
        esr::ec::DABT_LOWER | esr::ec::IABT_LOWER => Event::Stage2Fault,
        _ => Event::Forbidden,
    };
    let action = crate::health::raise(part, vcpu, event, fault.address.unwrap_or(regs.pc));
    if matches!(action, HmAction::Ignore | HmAction::Log) {
        // Execution goes on after it; a load it made reads as zero.
        regs.skip_instruction();
    }
    apply(part, vcpu, regs, action, fault)
}

/// Carries out what the health monitor decided about `fault`.
fn apply(part: &Partition, vcpu: &Vcpu, regs: &mut Regs, action: HmAction, fault: &Fault) {
    match action {
        HmAction::Ignore | HmAction::Log => irq::flush(vcpu),
        HmAction::Suspend => {
            crate::health::suspend(part, fault.what);
            switch_away(vcpu, regs, OutReason::Stopped)
        }
        HmAction::Restart => restart(part, vcpu, regs, HEALTH_MONITOR),
        HmAction::Halt => {
            stop(part, vcpu, regs, fault);
            switch_away(vcpu, regs, OutReason::Stopped)
        }
        HmAction::ResetSystem => crate::health::reset_system(part, fault.what),
    }
}

/// The running vCPU used more than its budget this period: the partition's
/// `budget-overrun` action (logged by default) decides what follows.
fn budget_overrun(part: &Partition, vcpu: &Vcpu, regs: &mut Regs, seen: u64, used_us: u64) {
    let action = crate::health::raise_at(part, vcpu, Event::BudgetOverrun, used_us, seen);
    if !matches!(action, HmAction::Ignore | HmAction::Log) {
        let fault = Fault { what: "budget overrun", class: 0, address: None };
        apply(part, vcpu, regs, action, &fault);
    }
}

/// A hypercall that does not exist: NOT_SUPPORTED, after the health
/// monitor has had its say (`illegal-hypercall`, logged by default).
pub fn illegal_call(part: &Partition, vcpu: &Vcpu, regs: &mut Regs) -> Action {
    let function = regs.x[0];
    regs.x[0] = ret::NOT_SUPPORTED as u64;
    call_event(part, vcpu, Event::IllegalHypercall, function, "illegal hypercall")
}

/// Raises `event` for a hypercall whose result is already in the
/// registers: the call returns unless the policy says otherwise.
pub fn call_event(part: &Partition, vcpu: &Vcpu, event: Event, detail: u64, what: &'static str) -> Action {
    match crate::health::raise(part, vcpu, event, detail) {
        HmAction::Ignore | HmAction::Log => Action::Resume,
        action => Action::Health(action, Fault { what, class: esr::ec::HVC64, address: Some(detail) }),
    }
}

/// Stops a partition that broke the rules; every other partition goes on.
fn stop(part: &Partition, vcpu: &Vcpu, regs: &Regs, fault: &Fault) {
    if !part.leave_running(RunState::Stopped) {
        return;
    }
    match fault.address {
        Some(address) => log!(
            "partition {} vcpu {} stopped: {} (EC 0x{:02x}, ELR 0x{:x}, address 0x{:x})",
            part.name(),
            vcpu.index,
            fault.what,
            fault.class,
            regs.pc,
            address
        ),
        None => log!(
            "partition {} vcpu {} stopped: {} (EC 0x{:02x}, ELR 0x{:x})",
            part.name(),
            vcpu.index,
            fault.what,
            fault.class,
            regs.pc
        ),
    }
    kick_others(part);
    power_off_when_all_stopped();
}

/// Makes every other pCPU running a vCPU of `part` look at it again.
pub fn kick_others(part: &Partition) {
    let me = cpu::index();
    for vcpu in &part.vcpus {
        let pcpu = vcpu.pcpu();
        if pcpu != me {
            gic::kick(pcpu);
        }
    }
}

pub fn power_off_when_all_stopped() {
    let all = system().partitions.iter().all(|p| p.state().ended());
    if all {
        crate::selfcheck::run();
        log!("all partitions stopped; powering off");
        firmware::system_off();
    }
}

/// PSCI SYSTEM_RESET or the health monitor: the partition starts again
/// from its images; nothing else is touched. Its vCPUs leave their pCPUs
/// and vCPU 0's pCPU reloads it in vCPU 0's time (`Partition::restart_step`).
fn restart(part: &Partition, vcpu: &Vcpu, regs: &Regs, why: &str) -> ! {
    if part.begin_restart(RunState::Running) {
        match why {
            HEALTH_MONITOR => log!("partition {} restarting ({why}; restart {})", part.name(), part.hm.lock().restarts),
            _ => log!("partition {} restarting ({why})", part.name()),
        }
        kick_others(part);
    }
    switch_away(vcpu, regs, OutReason::Off)
}

/// Why a restart happens when the partition's policy asked for it.
const HEALTH_MONITOR: &str = "health monitor";
