//! Channels as Partita runs them: the ports' storage, carved once at boot
//! from the configuration, and which shared-memory windows and doorbells
//! each partition gets. The hypercalls on them are in [`calls`].

pub mod calls;

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use partita_arch::sync::Mutex;
use partita_core::channel::{queuing_storage_len, sampling_storage_len, QueuingPort, SamplingPort};
use partita_core::config::model::{self, ChannelKind};

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

impl Channel {
    /// The port's invariants, for the state check: a queue's own, and its
    /// parked vCPUs all of the partition they belong to; `vcpus(p)` is
    /// how many vCPUs partition `p` has.
    pub fn check(&self, vcpus: impl Fn(usize) -> usize) -> Result<(), &'static str> {
        let State::Queuing(queue) = &self.state else { return Ok(()) };
        let q = queue.lock();
        let fits = |partition: usize, mask: u64| mask.checked_shr(vcpus(partition) as u32).unwrap_or(0) == 0;
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
