//! The health monitor (`partita_core::health`): every fault and illegal call a
//! partition makes becomes an event, its partition's policy (from the
//! configuration's `health`) picks the action, and the event goes into the
//! bounded log. Each logged event is also printed as an `hm:` line, which
//! `partita run` collects into `out/<config>/hm.log`. A system partition
//! with the right `read-hm-log` reads the log by hypercall.
//!
//! Watchdogs: the pCPU of a partition's vCPU 0 watches its watchdog,
//! arming its timer for the deadline and acting on expiry from its
//! scheduler loop.

use crate::boot::{system, PerCpu};
use crate::console::log;
use crate::partition::{Partition, RunState, Vcpu};
use crate::{trace, trap};
use partita_core::health::{Action, Event, HmLog, Report, RECORD_LEN};
use partita_core::hypercall::status;
use partita_core::time::ticks_to_us;
use partita_core::trace::Kind;
use spin::Mutex;

/// The largest log the configuration may ask for (`hm_log_entries`).
const MAX_ENTRIES: usize = 4096;

/// Empty (capacity 0) until `init` sizes it in place, so that it is all
/// zeros and lives in `.bss`: not 160 KiB of the image, and never a
/// temporary on a stack.
static LOG: Mutex<HmLog<MAX_ENTRIES>> = Mutex::new(HmLog::with_capacity(0));

/// Sizes the log as the configuration says (primary CPU, at boot).
pub fn init(entries: u32) {
    LOG.lock().set_capacity(entries as usize);
}

/// Reports `event` of `vcpu` (with a fault address, syndrome or function
/// ID as `detail`) and returns what its partition's policy says to do.
pub fn raise(part: &Partition, vcpu: &Vcpu, event: Event, detail: u64) -> Action {
    raise_at(part, vcpu, event, detail, partita_arch::timer::counter())
}

/// [`raise`] for an event detected at counter value `time`: the log then
/// says when it happened, not when it was written down (a host that stalls
/// the pCPU in between would otherwise move the report).
pub fn raise_at(part: &Partition, vcpu: &Vcpu, event: Event, detail: u64, time: u64) -> Action {
    let action = part.hm.lock().decide(event);
    let report = Report {
        time,
        partition: u8::try_from(vcpu.partition).unwrap_or(u8::MAX),
        vcpu: u8::try_from(vcpu.index).unwrap_or(u8::MAX),
        event,
        detail,
    };
    if let Some(seq) = LOG.lock().record(report, action) {
        let us = ticks_to_us(report.time, partita_arch::timer::frequency());
        log!(
            "hm: {seq} at {us} us partition {} vcpu {} {:?} detail 0x{detail:x} action {:?}",
            part.name(),
            vcpu.index,
            event,
            action
        );
    }
    trace::record(Kind::Health, vcpu.partition, vcpu.index, event.kind() as u32);
    action
}

/// PARTITA_WATCHDOG_KICK: the partition's watchdog starts a new period.
/// STATE when the configuration gives it no watchdog.
pub fn kick(part: &Partition) -> (i64, u64) {
    match part.watchdog.lock().as_mut() {
        Some(watchdog) => {
            watchdog.kick(partita_arch::timer::counter());
            (status::OK, watchdog.next_deadline())
        }
        None => (status::STATE, 0),
    }
}

/// PARTITA_HM_READ into the caller's buffer: x1 records, x2 the next
/// `from`, x3 records overwritten before anyone could read them.
pub fn read(part: &Partition, buffer: u64, size: u64, from: u64) -> Result<[u64; 3], i64> {
    // Never more than the whole log, whatever the buffer's size.
    let size = size.min((MAX_ENTRIES * RECORD_LEN) as u64);
    let pa = part.config.translate_buffer(buffer, size, true).ok_or(status::FAULT)?;
    let log = LOG.lock();
    let page = partita_arch::cache::with_guest_bytes_mut(pa, size as usize, |out| log.read_encoded(from, out));
    Ok([page.count as u64, page.next, log.dropped()])
}

/// The earliest watchdog deadline this pCPU watches, for its timer.
pub fn next_watchdog(me: &PerCpu) -> Option<u64> {
    watched(me).filter_map(|part| part.watchdog.lock().map(|w| w.next_deadline())).min()
}

/// True when a watchdog this pCPU watches has expired.
pub fn watchdog_due(me: &PerCpu) -> bool {
    let now = partita_arch::timer::counter();
    watched(me).any(|part| part.watchdog.lock().is_some_and(|w| w.expired(now)))
}

/// The running partitions whose watchdog this pCPU watches (those whose
/// vCPU 0 lives here): a suspended or stopped one cannot kick.
fn watched(me: &PerCpu) -> impl Iterator<Item = &'static Partition> + '_ {
    me.watchdogs.iter().map(|&p| &system().partitions[p]).filter(|part| part.state() == RunState::Running)
}

/// Raises every expired watchdog this pCPU watches and carries out its
/// action. Called from the scheduler loop with no vCPU loaded here, so a
/// restart may wait for the partition's vCPUs to leave other pCPUs.
pub fn serve_watchdogs(me: &PerCpu) {
    let now = partita_arch::timer::counter();
    for part in watched(me) {
        let expired = {
            let mut watchdog = part.watchdog.lock();
            // A new period starts, so an ignored or logged expiry is raised
            // once per period, not at every look.
            watchdog.as_mut().filter(|w| w.expired(now)).map(|w| {
                let deadline = w.next_deadline();
                w.kick(now);
                deadline
            })
        };
        if let Some(deadline) = expired {
            let action = raise(part, part.vcpus[0], Event::WatchdogExpired, deadline);
            act_from_outside(part, action, "watchdog expired");
        }
    }
}

/// Carries out `action` on a partition none of whose vCPUs is loaded on
/// this pCPU.
fn act_from_outside(part: &Partition, action: Action, why: &str) {
    match action {
        Action::Ignore | Action::Log => {}
        Action::Suspend => suspend(part, why),
        Action::Restart => {
            if part.begin_restart(RunState::Running) {
                log!(
                    "partition {} restarting ({why}; restart {} by the health monitor)",
                    part.name(),
                    part.hm.lock().restarts
                );
                trap::kick_others(part);
            }
        }
        Action::Halt => {
            if part.leave_running(RunState::Stopped) {
                log!("partition {} stopped: {why}", part.name());
                trap::kick_others(part);
                trap::power_off_when_all_stopped();
            }
        }
        Action::ResetSystem => reset_system(part, why),
    }
}

/// The `suspend` action: the partition stops where it is until resumed.
pub fn suspend(part: &Partition, why: &str) {
    if part.change(RunState::Running, RunState::Suspended) {
        log!("partition {} suspended by the health monitor ({why})", part.name());
        trap::kick_others(part);
    }
}

/// The `reset-system` action.
pub fn reset_system(part: &Partition, why: &str) -> ! {
    log!("partition {}: the health monitor resets the system ({why})", part.name());
    partita_arch::firmware::system_reset()
}

/// The log's invariants, for the state check at power-off.
pub fn check() -> Result<(), &'static str> {
    LOG.lock().check()
}
