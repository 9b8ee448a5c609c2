//! Timed outputs (`partita_core::timedio`): the pCPU of a partition's
//! vCPU 0 serves its queue. Its EL2 timer fires `lead` ticks before an
//! operation (the earliest of every deadline it watches wins, see
//! `scheduler::arm_timer`); the pCPU then polls the counter for the rest
//! and writes the controller, whatever vCPU it was running. The polling is
//! the asking partition's time: its vCPU 0's budget is charged, the
//! running vCPU's excused.

use crate::partition::{Partition, Vcpu};
use crate::state::{PerCpu, System};
use crate::trace;
use core::sync::atomic::Ordering;
use partita_arch::platform::{Gic, InterruptController};
use partita_arch::sync::Mutex;
use partita_arch::{gpio, timer};
use partita_core::config::model::{TimedIo, TimedIoGrant};
use partita_core::hypercall::status;
use partita_core::partition::lifecycle::RunState;
use partita_core::time::us_to_ticks;
use partita_core::timedio::{trace_arg, Grant, Queue, Request};
use partita_core::trace::Kind;

/// Takes the controller and gives each granted partition its queue
/// (primary CPU, at boot).
pub fn init(config: &TimedIo, partitions: &mut [Partition]) {
    let outputs = config.grants.iter().fold(0, |pins, grant| pins | grant.pins);
    gpio::init(config.device, outputs);
    let hz = partita_arch::platform::counter_frequency();
    for grant in &config.grants {
        let limits = Grant {
            pins: grant.pins,
            horizon: us_to_ticks(config.horizon_us, hz),
            lead: us_to_ticks(config.lead_us, hz).max(1),
        };
        partitions[grant.partition].timed_io = Some(Mutex::new(Queue::new(limits, grant.depth as usize)));
    }
}

/// The grant of partition `p`, if it has one.
pub fn grant_of(config: Option<&TimedIo>, p: usize) -> Option<&TimedIoGrant> {
    config?.grants.iter().find(|grant| grant.partition == p)
}

/// The partitions whose queue pCPU `cpu` serves: those with one whose
/// vCPU 0 lives there.
pub fn served_by(cpu: usize, partitions: &[Partition]) -> alloc::vec::Vec<usize> {
    let served = |part: &Partition| part.timed_io.is_some() && part.vcpus[0].home == cpu;
    partitions.iter().enumerate().filter(|(_, part)| served(part)).map(|(p, _)| p).collect()
}

/// PARTITA_TIO_WRITE_AT: the status of `part`'s request (pins, values,
/// at, period).
pub fn write_at(sys: &System, part: &Partition, request: [u64; 4]) -> i64 {
    let Some(queue) = &part.timed_io else { return status::DENIED };
    let [pins, values, at, period] = request;
    let (Ok(pins), Ok(values)) = (u8::try_from(pins), u8::try_from(values)) else { return status::INVALID };
    let result = queue.lock().submit(Request { pins, values, at, period }, timer::now());
    match result {
        Ok(()) => {
            rearm(sys, part);
            status::OK
        }
        Err(refusal) => refusal.status(),
    }
}

/// PARTITA_TIO_CANCEL: status and how many pending operations went.
pub fn cancel(part: &Partition, pins: u64) -> (i64, u64) {
    match (&part.timed_io, u8::try_from(pins)) {
        (None, _) => (status::DENIED, 0),
        (Some(_), Err(_)) => (status::INVALID, 0),
        (Some(queue), Ok(pins)) => (status::OK, queue.lock().cancel(pins) as u64),
    }
}

/// PARTITA_TIO_STATS: operations done, largest and summed error.
pub fn stats(part: &Partition) -> Result<[u64; 3], i64> {
    let errors = part.timed_io.as_ref().ok_or(status::DENIED)?.lock().errors();
    Ok([errors.count, errors.max, errors.sum])
}

/// Drops a partition's pending outputs: at its restart, or when it no
/// longer runs.
pub fn forget(part: &Partition) {
    if let Some(queue) = &part.timed_io {
        queue.lock().clear();
    }
}

/// A new request may be earlier than the alarm the serving pCPU armed:
/// that pCPU is told and kicked, even when it is this one, and it arms its
/// timer again when it takes the kick, as after a tick, before the guest
/// runs on.
fn rearm(sys: &System, part: &Partition) {
    let server = part.vcpus[0].home;
    sys.cpus[server].timed_io_rearm.store(true, Ordering::Release);
    Gic::kick(server);
}

/// The earliest alarm of the queues `me` serves.
pub fn next_alarm(sys: &System, me: &PerCpu) -> Option<u64> {
    me.timed_io.iter().filter_map(|&p| sys.partitions[p].timed_io.as_ref()?.lock().alarm()).min()
}

/// Outputs one call performs at most. Each polls up to `lead`, and each
/// brings the next within `lead` into reach, so outputs a third of their
/// period apart kept the pCPU at EL2 for ever; the rest wait for the timer,
/// armed again for their alarm, which has come, as the trap ends.
const OUTPUTS_PER_CALL: usize = 4;

/// Performs the outputs whose alarm has come, earliest first across the
/// queues `me` serves, at most [`OUTPUTS_PER_CALL`]; called when `me`'s
/// EL2 timer fires.
pub fn serve(sys: &System, me: &PerCpu) {
    drop_if_not_running(sys, me);
    // Where each output's poll counts the counter's step from: the entry
    // into EL2 for the first, on a pCPU that notes it (its path to the
    // poll is the same few hundred instructions each time, which
    // `partita bench timed-io` pins to E = 0 alone on a core), and the
    // previous output's done time for the next.
    let mut began = trace::el2_entry();
    for _ in 0..OUTPUTS_PER_CALL {
        let Some((p, due, start)) = earliest_due(sys, me) else { return };
        let began_at = began.map_or(start, |entered| entered.min(start));
        let part = &sys.partitions[p];
        partita_arch::residency::note(partita_core::residency::path::TIMED_OUTPUT);
        // Interrupts are masked here, so the timer only marks an instant.
        // Under QEMU's -icount the pCPUs take turns on one clock, and a
        // turn ends only at a timer's deadline: one tick after the output,
        // it ends another pCPU's turn there and this one comes next (with
        // at most one other pCPU busy; see docs/architecture.md), while a
        // turn of this one that reaches the output's tick still sees it.
        // At the output's own tick it would end this pCPU's turn just
        // before it looks. An output already late is written at once: a
        // deadline already past would end this pCPU's turn at the write.
        if start <= due.at {
            timer::arm_at(due.at + 1);
        }
        let written = gpio::write_at(due.at, due.pins, due.values, began_at);
        let done = written.done;
        began = Some(done);
        timer::disarm();
        let spun = done.saturating_sub(start);
        let mut lead = 0;
        if let Some(queue) = &part.timed_io {
            let mut queue = queue.lock();
            queue.record(due.at, done, spun);
            lead = queue.grant().lead;
        }
        trace::record_at(done, Kind::TimedIo, p, usize::from(due.values), trace_arg(due.pins, due.at, done));
        if done > due.at + 1 {
            let alarm = due.at.saturating_sub(lead);
            // What the store itself waited (a turn of another vCPU can end
            // at a device access) adds to the alarm's wait at EL1.
            let waited = trace::el2_entry_after(alarm) + written.write_step.saturating_sub(1);
            let arg = partita_core::trace::timed_io_late_arg(due.at, began_at, written.step, waited);
            trace::record_at(done, Kind::TimedIoLate, p, usize::from(due.values), arg);
        }
        charge(me, p, part, spun, done);
    }
}

/// Outputs belong to a running partition: a stopped, halted or suspended
/// one asked for none of what would follow.
fn drop_if_not_running(sys: &System, me: &PerCpu) {
    for &p in &me.timed_io {
        let part = &sys.partitions[p];
        if part.state() != RunState::Running {
            forget(part);
        }
    }
}

/// The output due first among the queues `me` serves, taken off its queue,
/// with its partition and the counter value it was taken at. The queues
/// are not held while the output is polled for: a call on another pCPU may
/// add or cancel meanwhile.
fn earliest_due(sys: &System, me: &PerCpu) -> Option<(usize, Request, u64)> {
    let now = timer::now();
    let alarm = |p: usize| sys.partitions[p].timed_io.as_ref()?.lock().alarm();
    let p = me.timed_io.iter().copied().filter_map(|p| Some((alarm(p)?, p))).min()?.1;
    let due = sys.partitions[p].timed_io.as_ref()?.lock().take_due(now)?;
    Some((p, due, now))
}

/// The polling was for partition `p`: the vCPU running here, if another
/// partition's, is excused it and `p`'s vCPU 0 is charged.
fn charge(me: &PerCpu, p: usize, part: &Partition, spun: u64, now: u64) {
    let running: Option<&Vcpu> = me.current_vcpu();
    if running.is_some_and(|vcpu| vcpu.partition == p) {
        return;
    }
    if let Some(meter) = running.and_then(|vcpu| vcpu.budget.as_ref()) {
        meter.lock().excuse(spun, now);
    }
    if let Some(meter) = &part.vcpus[0].budget {
        meter.lock().charge(spun, now);
    }
}
