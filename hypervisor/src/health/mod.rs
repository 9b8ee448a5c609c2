//! The health monitor (`partita_core::health`): every fault and illegal
//! call a partition makes becomes an event, its partition's policy (from
//! the configuration's `health`) picks the action, and the event goes into
//! the bounded log ([`log`]). Each logged event is also printed as an `hm:`
//! line, which `partita run` collects into `out/<config>/hm.log`. A system
//! partition with the right `read-hm-log` reads the log by hypercall.
//!
//! Watchdogs: the pCPU of a partition's vCPU 0 watches its watchdog,
//! arming its timer for the deadline and acting on expiry from its
//! scheduler loop.

pub mod log;

use crate::console::{self, log};
use crate::partition::lifecycle::{self, Cause};
use crate::partition::{Partition, Vcpu};
use crate::state::{PerCpu, System};
use crate::trace;
use crate::trap::exit::{Exit, Fault};
use partita_arch::exception::Regs;
use partita_arch::{platform, timer};
use partita_core::health::{Action, Consequence, Event, Report};
use partita_core::hypercall::status;
use partita_core::partition::lifecycle::RunState;
use partita_core::time::ticks_to_us;
use partita_core::trace::Kind;
use partita_core::trap::esr;
use partita_core::trap::psci::ret;

/// Reports `event` of `vcpu` (with a fault address, syndrome or function
/// ID as `detail`) and returns what its partition's policy says to do.
pub fn raise(part: &Partition, vcpu: &Vcpu, event: Event, detail: u64) -> Action {
    raise_at(part, vcpu, event, detail, timer::counter())
}

/// [`raise`] for a fault whose exception the guest can take
/// (`deliverable`) or not: `inject` halts a partition that cannot.
pub fn raise_fault(part: &Partition, vcpu: &Vcpu, event: Event, detail: u64, deliverable: bool) -> Action {
    record(part, vcpu, event, detail, timer::counter(), deliverable)
}

/// [`raise`] for an event detected at counter value `time`: the log then
/// says when it happened, not when it was written down (a host that stalls
/// the pCPU in between would otherwise move the report).
pub fn raise_at(part: &Partition, vcpu: &Vcpu, event: Event, detail: u64, time: u64) -> Action {
    record(part, vcpu, event, detail, time, false)
}

fn record(part: &Partition, vcpu: &Vcpu, event: Event, detail: u64, time: u64, deliverable: bool) -> Action {
    let action = part.hm.lock().decide(event, deliverable);
    log_event(part, vcpu, event, detail, time, action);
    action
}

/// Raises `event` when its action lets the vCPU go on, for the fast path
/// (`trap::fast`); false, with nothing raised, when the full path must
/// carry the action out.
pub fn raise_going_on(part: &Partition, vcpu: &Vcpu, event: Event, detail: u64) -> bool {
    let Some(action) = part.hm.lock().decide_going_on(event) else { return false };
    log_event(part, vcpu, event, detail, timer::counter(), action);
    true
}

/// Into the log and on the console, as `action` says.
fn log_event(part: &Partition, vcpu: &Vcpu, event: Event, detail: u64, time: u64, action: Action) {
    let report = Report {
        time,
        partition: u8::try_from(vcpu.partition).unwrap_or(u8::MAX),
        vcpu: u8::try_from(vcpu.index).unwrap_or(u8::MAX),
        event,
        detail,
    };
    if let Some(seq) = log::record(report, action) {
        let us = ticks_to_us(report.time, platform::counter_frequency());
        // `hm: <seq> at <us> us partition <name> vcpu <i> <event> detail
        // 0x<detail> action <action>`, as `{:?}` would spell the event and
        // the action; a guest can report as often as it likes.
        let line = console::pieces().text("hm: ").decimal(seq).text(" at ").decimal(us);
        let line = line.text(" us partition ").text(part.name()).text(" vcpu ").decimal(vcpu.index as u64);
        let mut line = line.text(" ").text(event.kind().name());
        if let Event::Reported(code) = event {
            line = line.text("(").decimal(u64::from(code)).text(")");
        }
        line.text(" detail ").hex(detail).text(" action ").text(action.name()).end();
    }
    trace::record(Kind::Health, vcpu.partition, vcpu.index, event.kind() as u32);
}

/// Raises `event` for a hypercall whose result is already in the
/// registers: the call returns unless the policy says otherwise.
pub fn call_event(part: &Partition, vcpu: &Vcpu, event: Event, detail: u64, what: &'static str) -> Exit {
    match raise(part, vcpu, event, detail) {
        Action::Ignore | Action::Log => Exit::Resume,
        action => Exit::Health(action, Fault::event(what, esr::ec::HVC64, Some(detail))),
    }
}

/// A hypercall that does not exist: NOT_SUPPORTED, after the health
/// monitor has had its say (`illegal-hypercall`, logged by default).
pub fn illegal_call(part: &Partition, vcpu: &Vcpu, regs: &mut Regs) -> Exit {
    let function = regs.x[0];
    regs.x[0] = ret::NOT_SUPPORTED as u64;
    call_event(part, vcpu, Event::IllegalHypercall, function, "illegal hypercall")
}

/// PARTITA_WATCHDOG_KICK: the partition's watchdog starts a new period.
/// STATE when the configuration gives it no watchdog.
pub fn kick(part: &Partition) -> (i64, u64) {
    match part.watchdog.lock().as_mut() {
        Some(watchdog) => {
            watchdog.kick(timer::counter());
            (status::OK, watchdog.next_deadline())
        }
        None => (status::STATE, 0),
    }
}

/// The earliest watchdog deadline `me` watches, for its timer.
pub fn next_watchdog(sys: &System, me: &PerCpu) -> Option<u64> {
    watched(sys, me).filter_map(|part| part.watchdog.lock().map(|w| w.next_deadline())).min()
}

/// True when a watchdog `me` watches has expired, or the action of its
/// expiry waits.
pub fn watchdog_due(sys: &System, me: &PerCpu) -> bool {
    let now = timer::counter();
    watched(sys, me).any(|part| part.watchdog.lock().is_some_and(|w| w.due(now)))
}

/// The running partitions whose watchdog `me` watches (those whose vCPU 0
/// lives there): a suspended or stopped one cannot kick.
fn watched<'s>(sys: &'s System, me: &'s PerCpu) -> impl Iterator<Item = &'s Partition> + 's {
    me.watchdogs.iter().map(|&p| &sys.partitions[p]).filter(|part| part.state() == RunState::Running)
}

/// One step of serving the watchdogs `me` watches: the held action of an
/// expiry already reported is carried out, or else an expired watchdog is
/// reported (a new period starts) and the action its policy picks is held
/// for the next step. Each step is a stretch of its own in the scheduler
/// loop, which takes the interrupts that came during one before the next:
/// together they held EL2 for about 1,600 instructions. Called with no
/// vCPU loaded here, so a restart may wait for the partition's vCPUs to
/// leave other pCPUs. Never inlined: its lines' formatting would cost the
/// loop's every entry (a switch's) the setting up of their buffers. True
/// when it did a step, and the loop calls again.
#[inline(never)]
pub fn serve_watchdogs(sys: &System, me: &PerCpu) -> bool {
    let now = timer::counter();
    for part in watched(sys, me) {
        let mut watchdog = part.watchdog.lock();
        // The common case, asked at every look of the loop: nothing due.
        let Some(dog) = watchdog.as_mut().filter(|dog| dog.due(now)) else { continue };
        if let Some(action) = dog.take_held() {
            drop(watchdog);
            carry_out(sys, part, action, Cause::Health("watchdog expired"));
            return true;
        }
        if let Some(deadline) = dog.expire(now) {
            let action = raise(part, part.vcpus[0], Event::WatchdogExpired, deadline);
            dog.hold(action);
            return true;
        }
    }
    false
}

/// Carries out `action` on `part` for `cause`: the one place an action
/// becomes a change of the partition's life (see
/// `partita_core::health::Action::consequence`).
pub fn carry_out(sys: &System, part: &Partition, action: Action, cause: Cause) {
    match action.consequence() {
        // The trap that raised the fault gives the exception.
        Consequence::GoOn | Consequence::Inject => {}
        Consequence::Change(change) => {
            partita_arch::residency::note(partita_core::residency::path::HEALTH_ACTION);
            lifecycle::change(sys, part, change, cause);
        }
        Consequence::ResetSystem => {
            log!("partition {}: the health monitor resets the system ({})", part.name(), cause.why());
            crate::console::flush();
            partita_arch::firmware::system_reset()
        }
    }
}
