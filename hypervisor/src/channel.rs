//! Channels as Partita runs them: the ports' storage, carved once at boot
//! from the configuration, and the port and doorbell hypercalls.
//!
//! Every call checks, before it copies a byte, that the caller is one of
//! the partitions the channel lists (in the right direction) and that its
//! buffer lies in its own RAM; a copy is never longer than the port's
//! `max_message`. A call that would wait (a full queue for a sender, an
//! empty one for a receiver) parks the vCPU off its pCPU until the other
//! side acts or the deadline passes, then the guest re-issues the call.

use crate::boot::system;
use crate::irq;
use crate::partition::{Partition, Vcpu};
use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use partita_arch::cache::{with_guest_bytes, with_guest_bytes_mut};
use partita_arch::timer;
use partita_core::channel::{queuing_storage_len, sampling_storage_len, PortError, QueuingPort, SamplingPort};
use partita_core::config::model::{self, ChannelKind, Endpoint};
use partita_core::hypercall::{status, POLL};
use partita_core::time::{ticks_to_us, us_to_ticks};
use spin::Mutex;

/// Kinds as PORT_INFO reports them (`PARTITA_CHANNEL_*`).
const KIND_SAMPLING: u64 = 0;
const KIND_QUEUING: u64 = 1;
const KIND_SHARED_MEMORY: u64 = 2;

pub struct Channel {
    pub config: model::Channel,
    state: State,
}

enum State {
    Sampling(Mutex<SamplingPort<'static>>),
    Queuing(Mutex<Queue>),
    SharedMemory,
}

/// A queuing port and the vCPUs parked on it, as bit masks of vCPU indices
/// of its destination (`receivers`) and its source (`senders`).
struct Queue {
    port: QueuingPort<'static>,
    receivers: u64,
    senders: u64,
}

/// What a port, doorbell or health-monitor read call comes to.
pub enum Reply {
    /// Status and x1..x3.
    Done(i64, [u64; 3]),
    /// The vCPU is parked (already marked waiting): the call is re-issued
    /// when it runs again.
    Wait,
    /// An argument the caller may not pass: the status, and an
    /// `illegal-hypercall` event for the health monitor.
    Illegal(i64),
}

/// Builds every channel's state; storage is allocated here once and lives
/// as long as Partita.
pub fn build(channels: &[model::Channel]) -> Vec<Channel> {
    channels.iter().map(|config| Channel { state: state(&config.kind), config: config.clone() }).collect()
}

fn state(kind: &ChannelKind) -> State {
    match *kind {
        ChannelKind::Sampling { max_message, .. } => {
            let max = max_message as usize;
            let storage = storage(sampling_storage_len(max).expect("validated sampling port"));
            State::Sampling(Mutex::new(SamplingPort::new(storage, max).expect("sized above")))
        }
        ChannelKind::Queuing { max_message, depth, .. } => {
            let (max, depth) = (max_message as usize, depth as usize);
            let storage = storage(queuing_storage_len(max, depth).expect("validated queuing port"));
            let port = QueuingPort::new(storage, max, depth).expect("sized above");
            State::Queuing(Mutex::new(Queue { port, receivers: 0, senders: 0 }))
        }
        ChannelKind::SharedMemory { .. } => State::SharedMemory,
    }
}

fn storage(len: usize) -> &'static mut [u8] {
    Box::leak(vec![0u8; len].into_boxed_slice())
}

/// The channel `index` and where `caller` stands on it.
fn lookup(index: u64, caller: usize) -> Result<(&'static Channel, Endpoint), Reply> {
    let channel = system().channels.get(index as usize).ok_or(Reply::Illegal(status::INVALID))?;
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
fn port(vcpu: &Vcpu, index: u64, send: bool) -> Result<(&'static Channel, u64), Reply> {
    let (channel, endpoint) = lookup(index, vcpu.partition)?;
    if !(if send { endpoint.send } else { endpoint.receive }) {
        return Err(Reply::Illegal(status::DENIED));
    }
    let max = channel.max_message().ok_or(Reply::Illegal(status::INVALID))?;
    Ok((channel, max))
}

/// PORT_SEND: write a sampling message, or append to a queue.
pub fn send(part: &Partition, vcpu: &Vcpu, index: u64, ipa: u64, len: u64, deadline: u64) -> Reply {
    reply((|| {
        let (channel, max) = port(vcpu, index, true)?;
        if len > max {
            return Ok(error(PortError::TooLong));
        }
        let pa = buffer(part, ipa, len, false)?;
        Ok(match &channel.state {
            State::Sampling(port) => {
                let result = with_guest_bytes(pa, len as usize, |msg| port.lock().write(msg, timer::counter()));
                result.map_or_else(error, |()| Reply::Done(status::OK, [0; 3]))
            }
            State::Queuing(queue) => send_queued(channel, queue, vcpu, pa, len, deadline),
            State::SharedMemory => unreachable!("max_message is None for shared memory"),
        })
    })())
}

fn send_queued(channel: &Channel, queue: &Mutex<Queue>, vcpu: &Vcpu, pa: u64, len: u64, deadline: u64) -> Reply {
    let mut q = queue.lock();
    match with_guest_bytes(pa, len as usize, |msg| q.port.send(msg)) {
        Ok(()) => {
            let waiting = core::mem::take(&mut q.receivers);
            drop(q);
            vcpu.set_wake_at(None);
            wake(channel.destination(), waiting);
            Reply::Done(status::OK, [0; 3])
        }
        Err(PortError::Full) => park(&mut q.senders, vcpu, deadline, PortError::Full),
        Err(e) => error(e),
    }
}

/// PORT_RECEIVE: read the sampling message, or take the oldest queued one.
pub fn receive(part: &Partition, vcpu: &Vcpu, index: u64, ipa: u64, size: u64, deadline: u64) -> Reply {
    reply((|| {
        let (channel, max) = port(vcpu, index, false)?;
        // Never copy more than a message can be, whatever the buffer size.
        let size = size.min(max);
        let pa = buffer(part, ipa, size, true)?;
        Ok(match &channel.state {
            State::Sampling(port) => read_sample(channel, port, pa, size),
            State::Queuing(queue) => receive_queued(channel, queue, vcpu, pa, size, deadline),
            State::SharedMemory => unreachable!("max_message is None for shared memory"),
        })
    })())
}

fn read_sample(channel: &Channel, port: &Mutex<SamplingPort<'static>>, pa: u64, size: u64) -> Reply {
    let ChannelKind::Sampling { refresh_us, .. } = channel.config.kind else { unreachable!("a sampling port") };
    let hz = timer::frequency();
    let refresh = us_to_ticks(refresh_us, hz);
    let port = port.lock();
    if port.seq() == 0 {
        return Reply::Done(status::EMPTY, [0; 3]);
    }
    match with_guest_bytes_mut(pa, size as usize, |out| port.read(out, timer::counter(), refresh)) {
        Ok(read) => Reply::Done(status::OK, [read.len as u64, ticks_to_us(read.age, hz), u64::from(read.valid)]),
        Err(e) => error(e),
    }
}

fn receive_queued(channel: &Channel, queue: &Mutex<Queue>, vcpu: &Vcpu, pa: u64, size: u64, deadline: u64) -> Reply {
    let mut q = queue.lock();
    match with_guest_bytes_mut(pa, size as usize, |out| q.port.receive(out)) {
        Ok(len) => {
            let left = q.port.len() as u64;
            let waiting = core::mem::take(&mut q.senders);
            drop(q);
            vcpu.set_wake_at(None);
            wake(channel.source(), waiting);
            Reply::Done(status::OK, [len as u64, left, 0])
        }
        Err(PortError::Empty) => park(&mut q.receivers, vcpu, deadline, PortError::Empty),
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

/// Wakes the vCPUs of partition `partition` in the mask `waiting`.
fn wake(partition: usize, mut waiting: u64) {
    let part = &system().partitions[partition];
    while waiting != 0 {
        let index = waiting.trailing_zeros() as usize;
        waiting &= waiting - 1;
        if let Some(vcpu) = part.vcpus.get(index) {
            irq::wake(vcpu);
        }
    }
}

/// PORT_INFO: kind, maximum message (or window size), and depth, refresh
/// or window address.
pub fn info(vcpu: &Vcpu, index: u64) -> Reply {
    reply(lookup(index, vcpu.partition).map(|(channel, _)| {
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
pub fn ring(vcpu: &Vcpu, index: u64) -> Reply {
    reply((|| {
        let (channel, _) = lookup(index, vcpu.partition)?;
        let ChannelKind::SharedMemory { ref partitions, doorbell: Some(intid), .. } = channel.config.kind else {
            return Err(Reply::Illegal(status::INVALID));
        };
        for &p in partitions.iter().filter(|&&p| p != vcpu.partition) {
            irq::inject(&system().partitions[p], 0, intid, false);
        }
        Ok(Reply::Done(status::OK, [0; 3]))
    })())
}

impl Channel {
    /// The port's invariants, for the state check: a queue's own, and its
    /// parked vCPUs all of the partition they belong to.
    pub fn check(&self) -> Result<(), &'static str> {
        let State::Queuing(queue) = &self.state else { return Ok(()) };
        let q = queue.lock();
        let fits = |partition: usize, mask: u64| {
            mask.checked_shr(system().partitions[partition].vcpus.len() as u32).unwrap_or(0) == 0
        };
        if !fits(self.destination(), q.receivers) || !fits(self.source(), q.senders) {
            return Err("a parked vCPU that does not exist");
        }
        q.port.check()
    }

    fn max_message(&self) -> Option<u64> {
        match self.config.kind {
            ChannelKind::Sampling { max_message, .. } | ChannelKind::Queuing { max_message, .. } => {
                Some(max_message.into())
            }
            ChannelKind::SharedMemory { .. } => None,
        }
    }

    fn source(&self) -> usize {
        match self.config.kind {
            ChannelKind::Queuing { source, .. } | ChannelKind::Sampling { source, .. } => source,
            ChannelKind::SharedMemory { .. } => unreachable!("only ports have a source"),
        }
    }

    fn destination(&self) -> usize {
        match self.config.kind {
            ChannelKind::Queuing { destination, .. } => destination,
            _ => unreachable!("only queuing ports wake a destination"),
        }
    }
}

/// A window of a shared-memory channel as one partition maps it.
pub struct Window {
    pub ipa: u64,
    pub pa: u64,
    pub size: u64,
    pub write: bool,
}

/// The windows partition `p` maps and the doorbell INTIDs it owns, from
/// the configuration's shared-memory channels.
pub fn membership(channels: &[model::Channel], p: usize) -> (Vec<Window>, Vec<u32>) {
    let mut windows = Vec::new();
    let mut doorbells = Vec::new();
    for channel in channels {
        if let ChannelKind::SharedMemory { ref partitions, ipa, pa, size, ref read_only, doorbell } = channel.kind {
            if partitions.contains(&p) {
                windows.push(Window { ipa, pa, size, write: !read_only.contains(&p) });
                doorbells.extend(doorbell);
            }
        }
    }
    (windows, doorbells)
}
