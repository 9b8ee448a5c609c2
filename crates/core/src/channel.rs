//! Inter-partition ports (sampling and queuing, as in ARINC 653 and
//! XtratuM): the state behind a channel, without the hypercalls that reach it.
//!
//! Every port keeps its messages in a byte slice the caller hands over once.
//! The hypervisor sizes and carves those slices at boot from the
//! configuration ([`sampling_storage_len`], [`queuing_storage_len`]), so a
//! message costs a bounded copy and never an allocation, and a port can never
//! hold more than the configuration granted it.
//!
//! Messages of zero bytes are allowed on both kinds of port. Message
//! boundaries are kept by a stored length, so an empty message is still a
//! distinct message (a pure event on a queuing port, "written, no payload" on
//! a sampling port); refusing it would buy no safety and cost a status code.
//!
//! A port whose `max_message` is zero, or a queuing port of depth zero, is a
//! configuration mistake and is refused when the port is built.

use crate::hypercall::status;

/// Why a port call did nothing. Every error leaves the port as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortError {
    /// The queue holds `depth` messages; the oldest is never overwritten,
    /// because a queuing port promises that nothing is lost.
    Full,
    /// The queue holds no message.
    Empty,
    /// The message is longer than `max_message`.
    TooLong,
    /// The caller's buffer is shorter than the message waiting; `needed`
    /// lets the guest retry with a buffer that fits.
    BufferTooSmall { needed: usize },
    /// A blocking call timed out. The ports here never block, so they never
    /// return this; it lives here so the hypervisor's blocking layer maps it
    /// with the rest.
    Timeout,
}

impl PortError {
    /// The negative status the hypercall returns in x0.
    pub const fn status(self) -> i64 {
        match self {
            PortError::Full => status::FULL,
            PortError::Empty => status::EMPTY,
            PortError::TooLong => status::TOO_LONG,
            PortError::BufferTooSmall { .. } => status::BUFFER_TOO_SMALL,
            PortError::Timeout => status::TIMEOUT,
        }
    }
}

impl core::fmt::Display for PortError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PortError::Full => f.write_str("the queuing port is full"),
            PortError::Empty => f.write_str("the queuing port is empty"),
            PortError::TooLong => f.write_str("the message is longer than the port's maximum"),
            PortError::BufferTooSmall { needed } => write!(f, "the buffer is too small: {needed} bytes needed"),
            PortError::Timeout => f.write_str("the port call timed out"),
        }
    }
}

impl core::error::Error for PortError {}

/// Why a port could not be built over its storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// `max_message` is zero: such a port could carry only empty messages,
    /// which is surely not what the configuration meant.
    ZeroMaxMessage,
    /// A queuing port of depth zero could never accept a message.
    ZeroDepth,
    /// The storage size does not fit in `usize`, or a message length does
    /// not fit in the 32-bit length each queue slot keeps.
    Overflow,
    /// The storage slice is not exactly the size the layout needs. Exact,
    /// not "at least", so a sizing mistake at boot shows up at once.
    WrongStorageLen { needed: usize, got: usize },
}

impl core::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LayoutError::ZeroMaxMessage => f.write_str("a port's maximum message size is zero"),
            LayoutError::ZeroDepth => f.write_str("a queuing port's depth is zero"),
            LayoutError::Overflow => f.write_str("a port's storage size overflows"),
            LayoutError::WrongStorageLen { needed, got } => {
                write!(f, "a port's storage is {got} bytes, its layout needs {needed}")
            }
        }
    }
}

impl core::error::Error for LayoutError {}

/// Bytes each queue slot spends on its message length.
const LEN_BYTES: usize = core::mem::size_of::<u32>();

/// The storage a sampling port of `max_message` bytes needs.
pub const fn sampling_storage_len(max_message: usize) -> Result<usize, LayoutError> {
    if max_message == 0 {
        return Err(LayoutError::ZeroMaxMessage);
    }
    Ok(max_message)
}

/// The storage a queuing port of `depth` messages of at most `max_message`
/// bytes needs: each slot is a 32-bit length and `max_message` bytes.
pub const fn queuing_storage_len(max_message: usize, depth: usize) -> Result<usize, LayoutError> {
    if max_message == 0 {
        return Err(LayoutError::ZeroMaxMessage);
    }
    if depth == 0 {
        return Err(LayoutError::ZeroDepth);
    }
    if max_message > u32::MAX as usize {
        return Err(LayoutError::Overflow);
    }
    match max_message.checked_add(LEN_BYTES) {
        Some(stride) => match stride.checked_mul(depth) {
            Some(total) => Ok(total),
            None => Err(LayoutError::Overflow),
        },
        None => Err(LayoutError::Overflow),
    }
}

fn check_storage(needed: usize, got: usize) -> Result<(), LayoutError> {
    if needed == got {
        Ok(())
    } else {
        Err(LayoutError::WrongStorageLen { needed, got })
    }
}

/// What a sampling read found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleRead {
    /// Bytes copied into the caller's buffer.
    pub len: usize,
    /// Time since the message was written, in the caller's time unit;
    /// `u64::MAX` if nothing was ever written.
    pub age: u64,
    /// Written at least once and no older than the refresh period.
    pub valid: bool,
    /// The write that produced this message, counting from 1; 0 if nothing
    /// was ever written. Equal numbers on two reads mean the same message.
    pub seq: u64,
}

/// A sampling port: one message, the newest written, read any number of
/// times. The writer never waits and readers never consume, so a slow reader
/// sees stale data (and the `valid` flag says so) instead of a backlog.
#[derive(Debug)]
pub struct SamplingPort<'a> {
    storage: &'a mut [u8],
    len: usize,
    written_at: u64,
    seq: u64,
}

impl<'a> SamplingPort<'a> {
    /// A port of `max_message` bytes over `storage`, which must be exactly
    /// [`sampling_storage_len`] bytes.
    pub fn new(storage: &'a mut [u8], max_message: usize) -> Result<Self, LayoutError> {
        check_storage(sampling_storage_len(max_message)?, storage.len())?;
        Ok(SamplingPort { storage, len: 0, written_at: 0, seq: 0 })
    }

    pub fn max_message(&self) -> usize {
        self.storage.len()
    }

    /// The sequence number of the message held, 0 if none: lets a reader
    /// poll for news without copying.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Replaces the message with `msg`, stamped `now`.
    pub fn write(&mut self, msg: &[u8], now: u64) -> Result<(), PortError> {
        self.write_with(msg.len(), now, |slot| slot.copy_from_slice(msg))
    }

    /// Replaces the message with `len` bytes that `fill` writes into the
    /// port's storage, stamped `now`: the hypervisor copies a guest's
    /// buffer straight in, with no bounce buffer.
    pub fn write_with(&mut self, len: usize, now: u64, fill: impl FnOnce(&mut [u8])) -> Result<(), PortError> {
        let slot = self.storage.get_mut(..len).ok_or(PortError::TooLong)?;
        fill(slot);
        self.len = len;
        self.written_at = now;
        // Zero means "never written", so the count skips it on the (purely
        // theoretical) wrap instead of saturating, which would make every
        // later message look like the same one.
        self.seq = self.seq.wrapping_add(1).max(1);
        Ok(())
    }

    /// Copies the message into `out`. The message is valid if it is at most
    /// `refresh` old at `now`. A clock reading before the write stamp (a
    /// reader on a pCPU whose clock lags) counts as age 0, not as a huge age.
    pub fn read(&self, out: &mut [u8], now: u64, refresh: u64) -> Result<SampleRead, PortError> {
        self.read_with(out.len(), now, refresh, |msg| out[..msg.len()].copy_from_slice(msg))
    }

    /// As [`SamplingPort::read`], for a reader with room for `capacity`
    /// bytes that takes the message from `take`.
    pub fn read_with(
        &self,
        capacity: usize,
        now: u64,
        refresh: u64,
        take: impl FnOnce(&[u8]),
    ) -> Result<SampleRead, PortError> {
        if self.seq == 0 {
            return Ok(SampleRead { len: 0, age: u64::MAX, valid: false, seq: 0 });
        }
        if self.len > capacity {
            return Err(PortError::BufferTooSmall { needed: self.len });
        }
        take(&self.storage[..self.len]);
        let age = now.saturating_sub(self.written_at);
        Ok(SampleRead { len: self.len, age, valid: age <= refresh, seq: self.seq })
    }

    /// Forgets the message, as if never written (for a restart of the
    /// channel); the storage keeps its bytes but nothing reads them.
    pub fn clear(&mut self) {
        self.len = 0;
        self.written_at = 0;
        self.seq = 0;
    }
}

/// A queuing port: a FIFO of up to `depth` messages. A send to a full queue
/// fails instead of overwriting, so every message sent is received exactly
/// once, in order.
///
/// Slot `i` of the storage is a little-endian `u32` length followed by
/// `max_message` bytes; the length lives with the bytes so the whole port is
/// one slice to allocate.
#[derive(Debug)]
pub struct QueuingPort<'a> {
    storage: &'a mut [u8],
    max_message: usize,
    depth: usize,
    /// Slot of the oldest message.
    head: usize,
    /// Messages held.
    len: usize,
}

impl<'a> QueuingPort<'a> {
    /// A port of `depth` messages of at most `max_message` bytes over
    /// `storage`, which must be exactly [`queuing_storage_len`] bytes.
    pub fn new(storage: &'a mut [u8], max_message: usize, depth: usize) -> Result<Self, LayoutError> {
        check_storage(queuing_storage_len(max_message, depth)?, storage.len())?;
        Ok(QueuingPort { storage, max_message, depth, head: 0, len: 0 })
    }

    pub fn max_message(&self) -> usize {
        self.max_message
    }

    pub fn depth(&self) -> usize {
        self.depth
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_full(&self) -> bool {
        self.len == self.depth
    }

    fn stride(&self) -> usize {
        LEN_BYTES + self.max_message
    }

    /// The storage of slot `index`: its length field and its bytes.
    fn slot(&self, index: usize) -> (&[u8], &[u8]) {
        let start = index * self.stride();
        self.storage[start..start + self.stride()].split_at(LEN_BYTES)
    }

    fn slot_mut(&mut self, index: usize) -> (&mut [u8], &mut [u8]) {
        let stride = self.stride();
        let start = index * stride;
        self.storage[start..start + stride].split_at_mut(LEN_BYTES)
    }

    /// The length of the oldest message, so a guest can size its buffer
    /// before receiving.
    pub fn peek_len(&self) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        let (len, _) = self.slot(self.head);
        // The field holds only lengths `send` checked against max_message,
        // so it fits in usize wherever a port could be built.
        Some(u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize)
    }

    /// Appends `msg`. A message too long is refused before fullness is
    /// checked: that error is permanent, and the sender should hear it even
    /// when the queue is also full.
    pub fn send(&mut self, msg: &[u8]) -> Result<(), PortError> {
        self.send_with(msg.len(), |slot| slot.copy_from_slice(msg))
    }

    /// Appends a message of `len` bytes that `fill` writes straight into
    /// its slot; refused as [`QueuingPort::send`] refuses.
    pub fn send_with(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> Result<(), PortError> {
        if len > self.max_message {
            return Err(PortError::TooLong);
        }
        if self.is_full() {
            return Err(PortError::Full);
        }
        let tail = (self.head + self.len) % self.depth;
        let (len_field, bytes) = self.slot_mut(tail);
        // The layout refused max_message > u32::MAX, so this cannot truncate.
        len_field.copy_from_slice(&(len as u32).to_le_bytes());
        fill(&mut bytes[..len]);
        self.len += 1;
        Ok(())
    }

    /// Moves the oldest message into `out` and returns its length. If `out`
    /// is too short the message stays at the head, so the guest can retry
    /// with a larger buffer without losing it.
    pub fn receive(&mut self, out: &mut [u8]) -> Result<usize, PortError> {
        self.receive_with(out.len(), |msg| out[..msg.len()].copy_from_slice(msg))
    }

    /// As [`QueuingPort::receive`], for a receiver with room for
    /// `capacity` bytes that takes the message from `take`.
    pub fn receive_with(&mut self, capacity: usize, take: impl FnOnce(&[u8])) -> Result<usize, PortError> {
        let needed = self.peek_len().ok_or(PortError::Empty)?;
        if needed > capacity {
            return Err(PortError::BufferTooSmall { needed });
        }
        let (_, bytes) = self.slot(self.head);
        take(&bytes[..needed]);
        self.head = (self.head + 1) % self.depth;
        self.len -= 1;
        Ok(needed)
    }

    /// Drops every message (for a restart of the channel).
    pub fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    /// The port's own invariants, for the hypervisor's state check: the
    /// ring indices in range and every message held within `max_message`.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.len > self.depth || self.head >= self.depth {
            return Err("queuing port indices out of range");
        }
        let lengths = (0..self.len).map(|i| self.slot((self.head + i) % self.depth).0);
        if lengths
            .map(|len| u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize)
            .any(|l| l > self.max_message)
        {
            return Err("queuing port holds a message longer than max_message");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_used_queue_passes_its_own_check() {
        let mut storage = [0u8; (4 + 8) * 3];
        let mut q = QueuingPort::new(&mut storage, 8, 3).unwrap();
        for round in 0..10u8 {
            q.send(&[round; 5]).unwrap();
            if round % 3 == 0 {
                q.send(&[]).unwrap();
            }
            let mut out = [0u8; 8];
            while q.len() > 1 {
                q.receive(&mut out).unwrap();
            }
            assert_eq!(q.check(), Ok(()));
        }
    }
    use proptest::prelude::*;
    use std::collections::VecDeque;
    use std::vec;
    use std::vec::Vec;

    fn queuing_storage(max_message: usize, depth: usize) -> Vec<u8> {
        vec![0; queuing_storage_len(max_message, depth).unwrap()]
    }

    #[test]
    fn every_error_has_its_own_status_clear_of_the_hypercall_codes() {
        let errors = [
            PortError::Full,
            PortError::Empty,
            PortError::TooLong,
            PortError::BufferTooSmall { needed: 1 },
            PortError::Timeout,
        ];
        let statuses: Vec<i64> = errors.iter().map(|e| e.status()).collect();
        assert_eq!(statuses, [-6, -7, -8, -9, -10]);
        use crate::hypercall::status as hc;
        for s in statuses {
            assert!(![hc::OK, hc::NOT_SUPPORTED, hc::INVALID, hc::DENIED, hc::STATE, hc::BUSY].contains(&s));
        }
    }

    #[test]
    fn storage_sizes_are_checked() {
        assert_eq!(sampling_storage_len(64), Ok(64));
        assert_eq!(sampling_storage_len(0), Err(LayoutError::ZeroMaxMessage));
        assert_eq!(queuing_storage_len(64, 4), Ok(4 * 68));
        assert_eq!(queuing_storage_len(0, 4), Err(LayoutError::ZeroMaxMessage));
        assert_eq!(queuing_storage_len(64, 0), Err(LayoutError::ZeroDepth));
        assert_eq!(queuing_storage_len(1 << 20, usize::MAX / 2), Err(LayoutError::Overflow));
        #[cfg(target_pointer_width = "64")]
        assert_eq!(queuing_storage_len(u32::MAX as usize + 1, 1), Err(LayoutError::Overflow));
    }

    #[test]
    fn ports_want_storage_of_exactly_their_size() {
        let mut short = [0u8; 7];
        assert_eq!(SamplingPort::new(&mut short, 8).unwrap_err(), LayoutError::WrongStorageLen { needed: 8, got: 7 });
        let mut long = [0u8; 25];
        assert_eq!(
            QueuingPort::new(&mut long, 4, 3).unwrap_err(),
            LayoutError::WrongStorageLen { needed: 24, got: 25 }
        );
        let mut none = [0u8; 0];
        assert_eq!(QueuingPort::new(&mut none, 4, 0).unwrap_err(), LayoutError::ZeroDepth);
    }

    #[test]
    fn an_unwritten_sampling_port_reads_as_invalid_and_empty() {
        let mut storage = [0u8; 8];
        let port = SamplingPort::new(&mut storage, 8).unwrap();
        let read = port.read(&mut [], 100, u64::MAX).unwrap();
        assert_eq!(read, SampleRead { len: 0, age: u64::MAX, valid: false, seq: 0 });
    }

    #[test]
    fn the_newest_sample_wins_and_its_age_decides_validity() {
        let mut storage = [0u8; 8];
        let mut port = SamplingPort::new(&mut storage, 8).unwrap();
        port.write(b"old", 10).unwrap();
        port.write(b"newer", 20).unwrap();
        let mut out = [0u8; 8];
        let read = port.read(&mut out, 25, 5).unwrap();
        assert_eq!((read.len, read.age, read.valid, read.seq), (5, 5, true, 2));
        assert_eq!(&out[..5], b"newer");
        assert!(!port.read(&mut out, 26, 5).unwrap().valid);
        // A reader's clock behind the writer's is not a stale message.
        assert_eq!(port.read(&mut out, 0, 0).unwrap().age, 0);
    }

    #[test]
    fn sampling_boundaries() {
        let mut storage = [0u8; 4];
        let mut port = SamplingPort::new(&mut storage, 4).unwrap();
        assert_eq!(port.write(b"12345", 0), Err(PortError::TooLong));
        assert_eq!(port.seq(), 0);
        port.write(b"1234", 1).unwrap();
        let mut small = [0xAAu8; 3];
        assert_eq!(port.read(&mut small, 1, 0), Err(PortError::BufferTooSmall { needed: 4 }));
        assert_eq!(small, [0xAA; 3]);
        port.write(b"", 2).unwrap();
        let read = port.read(&mut [], 2, 0).unwrap();
        assert_eq!((read.len, read.valid, read.seq), (0, true, 2));
        port.clear();
        assert_eq!(port.read(&mut [], 2, 0).unwrap().seq, 0);
    }

    #[test]
    fn a_sampling_sequence_skips_zero_when_it_wraps() {
        let mut storage = [0u8; 1];
        let mut port = SamplingPort::new(&mut storage, 1).unwrap();
        port.seq = u64::MAX;
        port.write(b"x", 0).unwrap();
        assert_eq!(port.seq(), 1);
    }

    #[test]
    fn a_queue_keeps_order_and_refuses_when_full() {
        let mut storage = queuing_storage(4, 2);
        let mut port = QueuingPort::new(&mut storage, 4, 2).unwrap();
        let mut out = [0u8; 4];
        assert_eq!(port.receive(&mut out), Err(PortError::Empty));
        port.send(b"a").unwrap();
        port.send(b"bcde").unwrap();
        assert!(port.is_full());
        assert_eq!(port.send(b"f"), Err(PortError::Full));
        assert_eq!(port.len(), 2);
        assert_eq!(port.receive(&mut out), Ok(1));
        assert_eq!(&out[..1], b"a");
        port.send(b"").unwrap();
        assert_eq!(port.receive(&mut out), Ok(4));
        assert_eq!(&out, b"bcde");
        assert_eq!(port.receive(&mut []), Ok(0));
        assert!(port.is_empty());
    }

    #[test]
    fn refused_calls_leave_the_queue_alone() {
        let mut storage = queuing_storage(4, 1);
        let mut port = QueuingPort::new(&mut storage, 4, 1).unwrap();
        assert_eq!(port.send(b"12345"), Err(PortError::TooLong));
        assert!(port.is_empty());
        port.send(b"1234").unwrap();
        // Too long wins over full: it will never succeed.
        assert_eq!(port.send(b"12345"), Err(PortError::TooLong));
        let mut small = [0u8; 3];
        assert_eq!(port.receive(&mut small), Err(PortError::BufferTooSmall { needed: 4 }));
        assert_eq!((port.len(), port.peek_len(), small), (1, Some(4), [0; 3]));
        let mut out = [0u8; 8];
        assert_eq!(port.receive(&mut out), Ok(4));
        port.send(b"x").unwrap();
        port.clear();
        assert_eq!(port.receive(&mut out), Err(PortError::Empty));
    }

    #[derive(Clone, Debug)]
    enum QueueOp {
        Send(Vec<u8>),
        Receive(usize),
    }

    const MAX: usize = 8;
    const DEPTH: usize = 4;

    fn queue_op() -> impl Strategy<Value = QueueOp> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..MAX + 3).prop_map(QueueOp::Send),
            (0..MAX + 2).prop_map(QueueOp::Receive),
        ]
    }

    #[derive(Clone, Debug)]
    enum SampleOp {
        Write(Vec<u8>, u64),
        Read(usize, u64, u64),
    }

    fn sample_op() -> impl Strategy<Value = SampleOp> {
        prop_oneof![
            (proptest::collection::vec(any::<u8>(), 0..MAX + 3), 0..1000u64).prop_map(|(m, t)| SampleOp::Write(m, t)),
            (0..MAX + 2, 0..1000u64, 0..200u64).prop_map(|(n, t, r)| SampleOp::Read(n, t, r)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn a_queuing_port_behaves_like_a_bounded_fifo(ops in proptest::collection::vec(queue_op(), 0..96)) {
            let mut storage = queuing_storage(MAX, DEPTH);
            let mut port = QueuingPort::new(&mut storage, MAX, DEPTH).unwrap();
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            for op in ops {
                match op {
                    QueueOp::Send(msg) => {
                        let expected = if msg.len() > MAX {
                            Err(PortError::TooLong)
                        } else if model.len() == DEPTH {
                            Err(PortError::Full)
                        } else {
                            model.push_back(msg.clone());
                            Ok(())
                        };
                        prop_assert_eq!(port.send(&msg), expected);
                    }
                    QueueOp::Receive(room) => {
                        let mut out = vec![0u8; room];
                        let expected = match model.front() {
                            None => Err(PortError::Empty),
                            Some(m) if m.len() > room => Err(PortError::BufferTooSmall { needed: m.len() }),
                            Some(_) => Ok(model.pop_front().unwrap()),
                        };
                        match (port.receive(&mut out), expected) {
                            (Ok(n), Ok(m)) => prop_assert_eq!(&out[..n], &m[..]),
                            (got, want) => prop_assert_eq!(got, want.map(|m| m.len())),
                        }
                    }
                }
                prop_assert_eq!(port.len(), model.len());
                prop_assert_eq!(port.is_full(), model.len() == DEPTH);
                prop_assert_eq!(port.peek_len(), model.front().map(Vec::len));
            }
            let mut out = [0u8; MAX];
            while let Some(m) = model.pop_front() {
                let n = port.receive(&mut out).unwrap();
                prop_assert_eq!(&out[..n], &m[..]);
            }
            prop_assert_eq!(port.receive(&mut out), Err(PortError::Empty));
        }

        #[test]
        fn a_sampling_port_returns_the_newest_write_and_its_freshness(
            ops in proptest::collection::vec(sample_op(), 0..64),
        ) {
            let mut storage = [0u8; MAX];
            let mut port = SamplingPort::new(&mut storage, MAX).unwrap();
            let mut newest: Option<(Vec<u8>, u64, u64)> = None;
            let mut writes = 0u64;
            for op in ops {
                match op {
                    SampleOp::Write(msg, at) => {
                        if msg.len() > MAX {
                            prop_assert_eq!(port.write(&msg, at), Err(PortError::TooLong));
                        } else {
                            port.write(&msg, at).unwrap();
                            writes += 1;
                            newest = Some((msg, at, writes));
                        }
                    }
                    SampleOp::Read(room, now, refresh) => {
                        let mut out = vec![0u8; room];
                        let got = port.read(&mut out, now, refresh);
                        match &newest {
                            None => prop_assert_eq!(got, Ok(SampleRead { len: 0, age: u64::MAX, valid: false, seq: 0 })),
                            Some((m, _, _)) if m.len() > room => {
                                prop_assert_eq!(got, Err(PortError::BufferTooSmall { needed: m.len() }));
                            }
                            Some((m, at, seq)) => {
                                let age = now.saturating_sub(*at);
                                let read = got.unwrap();
                                prop_assert_eq!(read, SampleRead { len: m.len(), age, valid: age <= refresh, seq: *seq });
                                prop_assert_eq!(&out[..read.len], &m[..]);
                            }
                        }
                    }
                }
            }
        }
    }
}
