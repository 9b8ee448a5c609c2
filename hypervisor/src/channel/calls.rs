//! The port and doorbell hypercalls.
//!
//! Every call checks, before it copies a byte, that the caller is one of
//! the partitions the channel lists (in the right direction) and that its
//! buffer lies in its own RAM; a copy is never longer than the port's
//! `max_message`. Bytes cross between the guest's buffer and the port's
//! storage with `partita_arch::guest_memory`, never through a reference
//! into guest RAM. A call that would wait (a full queue for a sender, an
//! empty one for a receiver) parks the vCPU off its pCPU until the other
//! side acts or the deadline passes, then the guest re-issues the call.

use super::{Channel, Queue, State, KIND_QUEUING, KIND_SAMPLING, KIND_SHARED_MEMORY};
use crate::partition::{Partition, Vcpu};
use crate::state::System;
use crate::trap::exit::Reply;
use crate::vgic;
use partita_arch::guest_memory;
use partita_arch::sync::Mutex;
use partita_arch::{platform, timer};
use partita_core::channel::{PortError, SamplingPort};
use partita_core::config::model::{ChannelKind, Endpoint};
use partita_core::hypercall::{status, POLL};
use partita_core::time::{ticks_to_us, us_to_ticks};

/// The channel `index` and where `caller` stands on it.
fn lookup(sys: &System, index: u64, caller: usize) -> Result<(&Channel, Endpoint), Reply> {
    let channel = sys.channels.get(index as usize).ok_or(Reply::Illegal(status::INVALID))?;
    let endpoint = channel.config.kind.endpoint(caller).ok_or(Reply::Illegal(status::DENIED))?;
    Ok((channel, endpoint))
}

fn buffer(part: &Partition, ipa: u64, len: u64, write: bool) -> Result<u64, Reply> {
    if len == 0 {
        return Ok(0);
    }
    part.config.translate_buffer(ipa, len, write).ok_or(Reply::Illegal(status::FAULT))
}

fn reply(result: Result<Reply, Reply>) -> Reply {
    result.unwrap_or_else(|refused| refused)
}

fn error(e: PortError) -> Reply {
    let needed = match e {
        PortError::BufferTooSmall { needed } => needed as u64,
        _ => 0,
    };
    Reply::Done(e.status(), [needed, 0, 0])
}

/// The port `index` for a caller that may `send` on it (else receive),
/// with its maximum message.
fn port<'s>(sys: &'s System, vcpu: &Vcpu, index: u64, send: bool) -> Result<(&'s Channel, u64), Reply> {
    let (channel, endpoint) = lookup(sys, index, vcpu.partition)?;
    if !(if send { endpoint.send } else { endpoint.receive }) {
        return Err(Reply::Illegal(status::DENIED));
    }
    let max = channel.max_message().ok_or(Reply::Illegal(status::INVALID))?;
    Ok((channel, max))
}

/// PORT_SEND: write a sampling message, or append to a queue.
pub fn send(sys: &System, part: &Partition, vcpu: &Vcpu, index: u64, ipa: u64, len: u64, deadline: u64) -> Reply {
    reply((|| {
        let (channel, max) = port(sys, vcpu, index, true)?;
        if len > max {
            return Ok(error(PortError::TooLong));
        }
        let pa = buffer(part, ipa, len, false)?;
        Ok(match &channel.state {
            State::Sampling(port) => write_sample(port, pa, len),
            State::Queuing(queue) => send_queued(sys, channel, queue, vcpu, Transfer { pa, len, deadline }),
            State::SharedMemory => unreachable!("max_message is None for shared memory"),
        })
    })())
}

/// PORT_SEND answered on the fast path (`trap::fast`), when all it changes
/// is the port: a sampling message, or a queued one with room and no
/// receiver parked. `None` when the full path must answer: the call parks
/// its caller or wakes a receiver (the scheduler's business), or it is
/// refused (the health monitor's); nothing has been done then.
pub fn send_at_once(sys: &System, part: &Partition, vcpu: &Vcpu, index: u64, ipa: u64, len: u64) -> Option<Reply> {
    let (channel, max) = port(sys, vcpu, index, true).ok()?;
    if len > max {
        return None;
    }
    let pa = buffer(part, ipa, len, false).ok()?;
    match &channel.state {
        State::Sampling(port) => Some(write_sample(port, pa, len)),
        State::Queuing(queue) => {
            let mut q = queue.lock();
            if q.receivers != 0 || q.port.is_full() {
                return None;
            }
            let result = q.port.send_with(len as usize, |slot| guest_memory::read(pa, slot));
            drop(q);
            vcpu.set_wake_at(None);
            Some(result.map_or_else(error, |()| Reply::Done(status::OK, [0; 3])))
        }
        State::SharedMemory => None,
    }
}

fn write_sample(port: &Mutex<SamplingPort<'static>>, pa: u64, len: u64) -> Reply {
    let result = port.lock().write_with(len as usize, timer::counter(), |slot| guest_memory::read(pa, slot));
    result.map_or_else(error, |()| Reply::Done(status::OK, [0; 3]))
}

/// A queuing call's guest buffer (checked, at physical address `pa`) and
/// how long the caller will wait.
struct Transfer {
    pa: u64,
    len: u64,
    deadline: u64,
}

fn send_queued(sys: &System, channel: &Channel, queue: &Mutex<Queue>, vcpu: &Vcpu, t: Transfer) -> Reply {
    let mut q = queue.lock();
    match q.port.send_with(t.len as usize, |slot| guest_memory::read(t.pa, slot)) {
        Ok(()) => {
            let waiting = core::mem::take(&mut q.receivers);
            drop(q);
            vcpu.set_wake_at(None);
            wake(&sys.partitions[channel.destination()], waiting);
            Reply::Done(status::OK, [0; 3])
        }
        Err(PortError::Full) => park(&mut q.senders, vcpu, t.deadline, PortError::Full),
        Err(e) => error(e),
    }
}

/// PORT_RECEIVE: read the sampling message, or take the oldest queued one.
pub fn receive(sys: &System, part: &Partition, vcpu: &Vcpu, index: u64, ipa: u64, size: u64, deadline: u64) -> Reply {
    reply((|| {
        let (channel, max) = port(sys, vcpu, index, false)?;
        // Never copy more than a message can be, whatever the buffer size.
        let size = size.min(max);
        let pa = buffer(part, ipa, size, true)?;
        Ok(match &channel.state {
            State::Sampling(port) => read_sample(channel, port, pa, size),
            State::Queuing(queue) => receive_queued(sys, channel, queue, vcpu, Transfer { pa, len: size, deadline }),
            State::SharedMemory => unreachable!("max_message is None for shared memory"),
        })
    })())
}

fn read_sample(channel: &Channel, port: &Mutex<SamplingPort<'static>>, pa: u64, size: u64) -> Reply {
    let ChannelKind::Sampling { refresh_us, .. } = channel.config.kind else { unreachable!("a sampling port") };
    let hz = platform::counter_frequency();
    let refresh = us_to_ticks(refresh_us, hz);
    let port = port.lock();
    if port.seq() == 0 {
        return Reply::Done(status::EMPTY, [0; 3]);
    }
    match port.read_with(size as usize, timer::counter(), refresh, |msg| guest_memory::write(pa, msg)) {
        Ok(read) => Reply::Done(status::OK, [read.len as u64, ticks_to_us(read.age, hz), u64::from(read.valid)]),
        Err(e) => error(e),
    }
}

fn receive_queued(sys: &System, channel: &Channel, queue: &Mutex<Queue>, vcpu: &Vcpu, t: Transfer) -> Reply {
    let mut q = queue.lock();
    match q.port.receive_with(t.len as usize, |msg| guest_memory::write(t.pa, msg)) {
        Ok(len) => {
            let left = q.port.len() as u64;
            let waiting = core::mem::take(&mut q.senders);
            drop(q);
            vcpu.set_wake_at(None);
            wake(&sys.partitions[channel.source()], waiting);
            Reply::Done(status::OK, [len as u64, left, 0])
        }
        Err(PortError::Empty) => park(&mut q.receivers, vcpu, t.deadline, PortError::Empty),
        Err(e) => error(e),
    }
}

/// The queue cannot serve `vcpu` now: it returns `busy` if it polls or its
/// deadline has passed; otherwise it is parked in `waiters` until the other
/// side wakes it or its deadline does. The caller holds the queue's lock,
/// so a wake-up between the check and the parking cannot be lost.
fn park(waiters: &mut u64, vcpu: &Vcpu, deadline: u64, busy: PortError) -> Reply {
    if deadline == POLL || deadline <= timer::counter() {
        vcpu.set_wake_at(None);
        return error(if deadline == POLL { busy } else { PortError::Timeout });
    }
    *waiters |= 1 << vcpu.index;
    vcpu.set_wake_at(Some(deadline));
    vcpu.set_waiting(true);
    Reply::Wait
}

/// Wakes the vCPUs of `part` in the mask `waiting`.
fn wake(part: &Partition, mut waiting: u64) {
    while waiting != 0 {
        let index = waiting.trailing_zeros() as usize;
        waiting &= waiting - 1;
        if let Some(vcpu) = part.vcpus.get(index) {
            vgic::wake(vcpu);
        }
    }
}

/// PORT_INFO: kind, maximum message (or window size), and depth, refresh
/// or window address.
pub fn info(sys: &System, vcpu: &Vcpu, index: u64) -> Reply {
    reply(lookup(sys, index, vcpu.partition).map(|(channel, _)| {
        let values = match channel.config.kind {
            ChannelKind::Sampling { max_message, refresh_us, .. } => [KIND_SAMPLING, max_message.into(), refresh_us],
            ChannelKind::Queuing { max_message, depth, .. } => [KIND_QUEUING, max_message.into(), depth.into()],
            ChannelKind::SharedMemory { size, ipa, .. } => [KIND_SHARED_MEMORY, size, ipa],
        };
        Reply::Done(status::OK, values)
    }))
}

/// DOORBELL_RING: the channel's doorbell INTID becomes pending at vCPU 0
/// of every other partition of it (latched where not yet enabled).
pub fn ring(sys: &System, vcpu: &Vcpu, index: u64) -> Reply {
    reply((|| {
        let (channel, _) = lookup(sys, index, vcpu.partition)?;
        let ChannelKind::SharedMemory { ref partitions, doorbell: Some(intid), .. } = channel.config.kind else {
            return Err(Reply::Illegal(status::INVALID));
        };
        for &p in partitions.iter().filter(|&&p| p != vcpu.partition) {
            vgic::inject(&sys.partitions[p], 0, intid, false);
        }
        Ok(Reply::Done(status::OK, [0; 3]))
    })())
}
