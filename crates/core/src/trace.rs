//! The event trace: one lock-free ring per physical CPU, in one block of
//! memory the host can copy out of a stopped machine and decode with the
//! same code.
//!
//! Layout, in 64-bit little-endian words:
//! - header, 8 words: magic, version | cpus << 32, events per CPU, counter
//!   frequency, then zeros;
//! - per CPU, 8 words of ring header (word 0: events ever written, the
//!   "head"), then 2 words per event slot.
//!
//! Only the owning CPU writes its ring, so a slot is written with relaxed
//! stores and the head is published with a release store; the reader (the
//! host, after the machine stopped) needs no synchronisation at all.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

pub const MAGIC: u64 = u64::from_le_bytes(*b"PTTRACE\0");
pub const VERSION: u32 = 1;
const HEADER_WORDS: usize = 8;
const RING_HEADER_WORDS: usize = 8;
const EVENT_WORDS: usize = 2;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Kind {
    /// A vCPU was put on the pCPU.
    VcpuIn = 1,
    /// A vCPU left the pCPU; `arg` is an [`OutReason`].
    VcpuOut = 2,
    /// A physical interrupt reached Partita; `arg` is its INTID.
    IrqTaken = 3,
    /// A virtual interrupt was written into a list register; `arg` is its INTID.
    IrqInjected = 4,
    /// The guest completed a virtual interrupt; `arg` is its INTID.
    IrqEoi = 5,
    /// `arg` is the function ID (low 32 bits).
    HypercallEntry = 6,
    /// `arg` is the result (low 32 bits).
    HypercallExit = 7,
    /// A synchronous trap; `arg` is the exception class.
    Trap = 8,
    /// A health-monitor event; `arg` is its code.
    Health = 9,
    /// A cyclic slot began, as its pCPU saw it: `arg` packs the lateness in
    /// counter ticks (bits 16..32, saturated), the plan (8..16) and the
    /// slot index (0..8). `partition` and `vcpu` name the slot's owner.
    SlotStart = 10,
    /// A vCPU moved to another pCPU (vlk migration); `arg` is that pCPU.
    Migrate = 11,
    /// A write to an unconnected interface page asked for a PRR. `vcpu`
    /// holds the partition's device index; `arg` is the accelerator.
    AccelRequest = 12,
    /// A virtual device was connected. `vcpu` holds the device index;
    /// `arg` packs the [`crate::fabric::manager::Path`] index (bits 24..32)
    /// and the ticks since the request (0..24, saturated).
    AccelConnect = 13,
    /// A step of the fabric manager's work, for the atomic costs of an
    /// allocation (Ker-ONE Table 4): `arg` packs the [`AccelStep`] (bits
    /// 24..32) and, for an event of the logic, how late it was handled in
    /// counter ticks (0..24, saturated). A step for a client has its
    /// partition and device index; one of the logic has its PRR in `vcpu`.
    AccelStep = 14,
    /// A timed output was written; the event's time is when the write was
    /// done. `vcpu` holds the values written, `arg` the pins (bits
    /// 24..32) and how much later than asked it was done, signed, in
    /// counter ticks (0..24): [`crate::timedio::from_trace_arg`].
    TimedIo = 15,
    /// A vCPU's first FP/SIMD access on its pCPU loaded its values
    /// (`crate::partition::fp`); `arg` names the vCPU whose values were
    /// saved first, as partition + 1 (bits 16..32) and vCPU index, or is 0.
    FpLoad = 16,
    /// A stretch at EL2, traced on the pCPUs that run a high-criticality
    /// vCPU: from the handler's first instruction to the guest's entry or
    /// to a WFI. The event's time is the stretch's end; `arg` its length
    /// in counter ticks (saturated). What the host attributes a late job's
    /// window to Partita with.
    El2 = 17,
    /// A timed output done more than a tick after its time, stamped as its
    /// [`Kind::TimedIo`]; `arg` is [`timed_io_late_arg`]: for one its pCPU
    /// began to serve in time, the counter's step across the asked time
    /// while it polled; for one begun late, how long its alarm's interrupt
    /// waited for the pCPU to enter EL2 with nothing of Partita's in the
    /// way. Neither is Partita's share of the error: a polling core reads
    /// the counter a tick or less apart, so a longer step is time it did
    /// not execute, and an interrupt pending at EL1 is taken at once; both
    /// are the host's (on QEMU's `-icount`, another vCPU's turn).
    TimedIoLate = 18,
}

/// What an [`Kind::AccelStep`] event marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum AccelStep {
    /// The manager decided what an event needs: the search is over.
    Decided = 0,
    /// A client was connected: the page is writable, its vCPUs go on.
    Connected = 1,
    /// A client was disconnected (its context saved if it was stopped).
    Disconnected = 2,
    /// The accelerator in a PRR was asked to stop.
    StopAsked = 3,
    /// A download was handed to the reconfiguration port.
    ReconfigStarted = 4,
    /// A guest was signalled (WAIT, READY or PREEMPT).
    Signalled = 5,
    /// The logic's end-of-download interrupt reached the manager.
    Reconfigured = 6,
    /// The logic's accelerator-stopped interrupt reached the manager.
    Stopped = 7,
    /// Another event of the logic (a job started or over, a hold expired)
    /// reached the manager.
    LogicEvent = 8,
    /// The fabric's pCPU ran again after time it did not execute: its
    /// argument is that time, from a yield or from its timer's deadline
    /// to the first instruction after (see `FABRIC_ABSENCE_NOTED`).
    Resumed = 9,
}

/// The least absence of the fabric's pCPU a `Resumed` step records, in
/// counter ticks: shorter ones, a turn of another core that a yield let
/// run, are the round's usual cost and would fill the trace.
pub const FABRIC_ABSENCE_NOTED: u64 = 64;

impl AccelStep {
    pub const ALL: [AccelStep; 10] = [
        AccelStep::Decided,
        AccelStep::Connected,
        AccelStep::Disconnected,
        AccelStep::StopAsked,
        AccelStep::ReconfigStarted,
        AccelStep::Signalled,
        AccelStep::Reconfigured,
        AccelStep::Stopped,
        AccelStep::LogicEvent,
        AccelStep::Resumed,
    ];

    /// `arg` of its event; `late` only means something for the logic's events.
    pub fn arg(self, late_ticks: u64) -> u32 {
        ((self as u32) << 24) | late_ticks.min(0xff_ffff) as u32
    }

    /// The step and the lateness an `arg` packs.
    pub fn from_arg(arg: u32) -> Option<(AccelStep, u64)> {
        let step = AccelStep::ALL.into_iter().find(|s| *s as u32 == arg >> 24)?;
        Some((step, u64::from(arg & 0xff_ffff)))
    }

    pub fn name(self) -> &'static str {
        match self {
            AccelStep::Decided => "decided",
            AccelStep::Connected => "connected",
            AccelStep::Disconnected => "disconnected",
            AccelStep::StopAsked => "stop asked",
            AccelStep::ReconfigStarted => "download started",
            AccelStep::Signalled => "signalled",
            AccelStep::Reconfigured => "download over",
            AccelStep::Stopped => "accelerator stopped",
            AccelStep::LogicEvent => "logic event",
            AccelStep::Resumed => "fabric pCPU resumed",
        }
    }
}

/// A pCPU's EL2 stretches as the alarm of a late output sees them: the
/// open one's entry, the last closed one's entry and exit, and the exit of
/// the one before it, in counter ticks (0: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stretches {
    pub entered: u64,
    pub last_entered: u64,
    pub last_left: u64,
    pub previous_left: u64,
}

impl Stretches {
    /// How long an interrupt pending since `since` waited at EL1 before
    /// the open stretch, where nothing of Partita's masks it: the gap
    /// before the open stretch and the gap before the last closed one.
    /// Both count because the emulator, resuming a vCPU it had stopped at
    /// EL1, takes a synchronous exception of the instruction it resumes at
    /// before the interrupt, so one stretch of Partita's can lie between
    /// the two waits (a console byte's trap, say); the stretch itself is
    /// not counted.
    pub fn el1_wait(&self, since: u64) -> u64 {
        if self.entered == 0 {
            return 0;
        }
        let gap = |left: u64, entered: u64| entered.saturating_sub(since.max(left));
        gap(self.last_left, self.entered) + gap(self.previous_left, self.last_entered)
    }
}

/// Bit 31 of a [`Kind::TimedIoLate`] argument: the output began late.
pub const TIMED_IO_BEGAN_LATE: u32 = 1 << 31;

/// The argument of [`Kind::TimedIoLate`] for an output asked `at` and
/// begun `start`: when it began in time, `step`, the counter's step from
/// its pCPU's last read before `at` to the write's done time
/// (`partita_arch::gpio::Written::step`); when
/// it began late, [`TIMED_IO_BEGAN_LATE`] and `waited`, the ticks its
/// pCPU did not execute while the output waited: its alarm's wait for the
/// pCPU to enter EL2, and the write's step beyond a tick (both saturated
/// to 31 bits).
pub fn timed_io_late_arg(at: u64, start: u64, step: u64, waited: u64) -> u32 {
    let field = |ticks: u64| ticks.min(u64::from(!TIMED_IO_BEGAN_LATE)) as u32;
    if start < at {
        field(step)
    } else {
        TIMED_IO_BEGAN_LATE | field(waited)
    }
}

/// What a [`Kind::TimedIoLate`] argument says: `Ok(step)` for an output
/// begun in time, `Err(waited)` for one begun late.
pub fn from_timed_io_late_arg(arg: u32) -> Result<u64, u64> {
    let field = u64::from(arg & !TIMED_IO_BEGAN_LATE);
    if arg & TIMED_IO_BEGAN_LATE == 0 {
        Ok(field)
    } else {
        Err(field)
    }
}

/// `arg` of [`Kind::AccelConnect`].
pub fn accel_connect_arg(path: usize, latency_ticks: u64) -> u32 {
    ((path as u32) << 24) | latency_ticks.min(0xff_ffff) as u32
}

impl Kind {
    pub fn from_u8(value: u8) -> Option<Kind> {
        use Kind::*;
        [
            VcpuIn,
            VcpuOut,
            IrqTaken,
            IrqInjected,
            IrqEoi,
            HypercallEntry,
            HypercallExit,
            Trap,
            Health,
            SlotStart,
            Migrate,
            AccelRequest,
            AccelConnect,
            AccelStep,
            TimedIo,
            FpLoad,
            El2,
            TimedIoLate,
        ]
        .into_iter()
        .find(|k| *k as u8 == value)
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::VcpuIn => "vcpu in",
            Kind::VcpuOut => "vcpu out",
            Kind::IrqTaken => "irq taken",
            Kind::IrqInjected => "irq injected",
            Kind::IrqEoi => "irq eoi",
            Kind::HypercallEntry => "hypercall entry",
            Kind::HypercallExit => "hypercall exit",
            Kind::Trap => "trap",
            Kind::Health => "health event",
            Kind::SlotStart => "slot start",
            Kind::Migrate => "migrate",
            Kind::AccelRequest => "accelerator request",
            Kind::AccelConnect => "accelerator connect",
            Kind::AccelStep => "accelerator step",
            Kind::TimedIo => "timed output",
            Kind::FpLoad => "FP/SIMD load",
            Kind::El2 => "EL2 stretch",
            Kind::TimedIoLate => "timed output late",
        }
    }
}

/// Why a vCPU left its pCPU (the `arg` of [`Kind::VcpuOut`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum OutReason {
    /// Its quantum ended or a more critical vCPU took the pCPU.
    Preempted = 0,
    /// It waited (WFI) with nothing pending.
    Waiting = 1,
    /// It powered off (CPU_OFF, SYSTEM_OFF) or its partition restarted.
    Off = 2,
    /// Its partition was stopped by Partita.
    Stopped = 3,
}

/// One event. `partition` and `vcpu` are 0xff when the event has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Generic counter (CNTPCT) value.
    pub time: u64,
    pub kind: Kind,
    pub partition: u8,
    pub vcpu: u8,
    pub arg: u32,
}

/// No partition or vCPU.
pub const NONE: u8 = 0xff;

impl Event {
    fn pack(&self) -> u64 {
        u64::from(self.kind as u8)
            | u64::from(self.partition) << 8
            | u64::from(self.vcpu) << 16
            | u64::from(self.arg) << 32
    }

    fn unpack(time: u64, word: u64) -> Option<Event> {
        Some(Event {
            time,
            kind: Kind::from_u8(word as u8)?,
            partition: (word >> 8) as u8,
            vcpu: (word >> 16) as u8,
            arg: (word >> 32) as u32,
        })
    }
}

/// Words needed for `cpus` rings of `events` slots each.
pub const fn words(cpus: usize, events: usize) -> usize {
    HEADER_WORDS + cpus * (RING_HEADER_WORDS + events * EVENT_WORDS)
}

/// The writer's view of the trace memory.
pub struct TraceBuffer<'a> {
    words: &'a [AtomicU64],
    cpus: usize,
    events: usize,
}

impl<'a> TraceBuffer<'a> {
    /// Formats `words` (exactly [`words`]`(cpus, events)` long, `events` > 0)
    /// as an empty trace.
    pub fn new(words: &'a [AtomicU64], cpus: usize, events: usize, counter_hz: u64) -> Option<Self> {
        if events == 0 || words.len() != self::words(cpus, events) {
            return None;
        }
        for word in words {
            word.store(0, Ordering::Relaxed);
        }
        words[1].store(u64::from(VERSION) | (cpus as u64) << 32, Ordering::Relaxed);
        words[2].store(events as u64, Ordering::Relaxed);
        words[3].store(counter_hz, Ordering::Relaxed);
        words[0].store(MAGIC, Ordering::Release);
        Some(Self { words, cpus, events })
    }

    fn ring(&self, cpu: usize) -> usize {
        HEADER_WORDS + cpu * (RING_HEADER_WORDS + self.events * EVENT_WORDS)
    }

    /// Appends an event to `cpu`'s ring, overwriting the oldest when full.
    /// Must only be called by `cpu` itself.
    pub fn record(&self, cpu: usize, event: &Event) {
        if cpu >= self.cpus {
            return;
        }
        let ring = self.ring(cpu);
        let head = self.words[ring].load(Ordering::Relaxed);
        let slot = ring + RING_HEADER_WORDS + (head as usize % self.events) * EVENT_WORDS;
        self.words[slot].store(event.time, Ordering::Relaxed);
        self.words[slot + 1].store(event.pack(), Ordering::Relaxed);
        self.words[ring].store(head + 1, Ordering::Release);
    }
}

/// A decoded trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    pub counter_hz: u64,
    /// Per CPU, oldest first.
    pub cpus: Vec<Vec<Event>>,
    /// Per CPU, events overwritten because the ring was full.
    pub lost: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceError {
    TooShort,
    BadMagic,
    BadVersion(u32),
    BadGeometry,
    BadEvent { cpu: usize, slot: usize },
}

fn word(bytes: &[u8], index: usize) -> Option<u64> {
    let at = index.checked_mul(8)?;
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// Decodes a copy of the trace memory (little-endian bytes).
pub fn decode(bytes: &[u8]) -> Result<Trace, TraceError> {
    let w = |i| word(bytes, i).ok_or(TraceError::TooShort);
    if w(0)? != MAGIC {
        return Err(TraceError::BadMagic);
    }
    let version = w(1)? as u32;
    if version != VERSION {
        return Err(TraceError::BadVersion(version));
    }
    let cpus = (w(1)? >> 32) as usize;
    let events = w(2)? as usize;
    let counter_hz = w(3)?;
    if events == 0 || cpus == 0 || cpus > 256 || events > 1 << 24 {
        return Err(TraceError::BadGeometry);
    }
    if bytes.len() < words(cpus, events) * 8 {
        return Err(TraceError::TooShort);
    }
    let mut trace = Trace { counter_hz, cpus: Vec::new(), lost: Vec::new() };
    for cpu in 0..cpus {
        let ring = HEADER_WORDS + cpu * (RING_HEADER_WORDS + events * EVENT_WORDS);
        let head = w(ring)?;
        let count = head.min(events as u64);
        let mut list = Vec::with_capacity(count as usize);
        for n in head - count..head {
            let slot = (n % events as u64) as usize;
            let at = ring + RING_HEADER_WORDS + slot * EVENT_WORDS;
            let event = Event::unpack(w(at)?, w(at + 1)?).ok_or(TraceError::BadEvent { cpu, slot })?;
            list.push(event);
        }
        trace.cpus.push(list);
        trace.lost.push(head - count);
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alarm_waits_at_el1_before_and_after_one_stretch_of_partitas() {
        // A console byte's trap (1,200 to 1,229) came between the alarm (at
        // 1,000) and the stretch that took it (from 1,237): 200 + 8 at EL1.
        let s = Stretches { entered: 1_237, last_entered: 1_200, last_left: 1_229, previous_left: 900 };
        assert_eq!(s.el1_wait(1_000), 208);
        // The alarm came during that trap: only the wait after it.
        assert_eq!(s.el1_wait(1_210), 8);
        // It came after: nothing before the open stretch waited on it.
        assert_eq!(s.el1_wait(1_237), 0);
        assert_eq!(Stretches::default().el1_wait(1_000), 0, "no open stretch");
    }

    fn bytes(words: &[AtomicU64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes()).collect()
    }

    fn event(time: u64, kind: Kind, arg: u32) -> Event {
        Event { time, kind, partition: 1, vcpu: 0, arg }
    }

    #[test]
    fn an_accelerator_step_packs_its_step_and_lateness() {
        for step in AccelStep::ALL {
            assert_eq!(AccelStep::from_arg(step.arg(1234)), Some((step, 1234)));
        }
        assert_eq!(AccelStep::from_arg(AccelStep::Stopped.arg(u64::MAX)), Some((AccelStep::Stopped, 0xff_ffff)));
        assert_eq!(AccelStep::from_arg(0xee00_0000), None);
        assert_eq!(Kind::from_u8(14), Some(Kind::AccelStep));
    }

    #[test]
    fn a_late_output_s_argument_says_how_the_counter_stepped_or_how_long_it_waited() {
        assert_eq!(from_timed_io_late_arg(timed_io_late_arg(1_000, 900, 300, 7)), Ok(300));
        assert_eq!(from_timed_io_late_arg(timed_io_late_arg(1_000, 1_000, 300, 7)), Err(7));
        let saturated = u64::from(u32::MAX >> 1);
        assert_eq!(from_timed_io_late_arg(timed_io_late_arg(1_000, 1_500, 0, u64::MAX)), Err(saturated));
        assert_eq!(from_timed_io_late_arg(timed_io_late_arg(1_000, 900, u64::MAX, 0)), Ok(saturated));
    }

    #[test]
    fn events_round_trip_per_cpu() {
        let memory: Vec<AtomicU64> = (0..words(2, 4)).map(|_| AtomicU64::new(7)).collect();
        let trace = TraceBuffer::new(&memory, 2, 4, 62_500_000).unwrap();
        trace.record(0, &event(10, Kind::VcpuIn, 0));
        trace.record(1, &event(11, Kind::IrqTaken, 27));
        trace.record(0, &event(12, Kind::VcpuOut, OutReason::Waiting as u32));
        let decoded = decode(&bytes(&memory)).unwrap();
        assert_eq!(decoded.counter_hz, 62_500_000);
        assert_eq!(decoded.cpus[0], [event(10, Kind::VcpuIn, 0), event(12, Kind::VcpuOut, 1)]);
        assert_eq!(decoded.cpus[1], [event(11, Kind::IrqTaken, 27)]);
        assert_eq!(decoded.lost, [0, 0]);
    }

    #[test]
    fn a_full_ring_keeps_the_newest_events_in_order() {
        let memory: Vec<AtomicU64> = (0..words(1, 3)).map(|_| AtomicU64::new(0)).collect();
        let trace = TraceBuffer::new(&memory, 1, 3, 1).unwrap();
        for t in 0..5 {
            trace.record(0, &event(t, Kind::Trap, t as u32));
        }
        trace.record(9, &event(99, Kind::Trap, 0)); // no such CPU: ignored
        let decoded = decode(&bytes(&memory)).unwrap();
        let times: Vec<u64> = decoded.cpus[0].iter().map(|e| e.time).collect();
        assert_eq!(times, [2, 3, 4]);
        assert_eq!(decoded.lost, [2]);
    }

    #[test]
    fn damaged_memory_is_rejected() {
        let memory: Vec<AtomicU64> = (0..words(1, 2)).map(|_| AtomicU64::new(0)).collect();
        let trace = TraceBuffer::new(&memory, 1, 2, 1).unwrap();
        trace.record(0, &event(1, Kind::Trap, 0));
        let mut raw = bytes(&memory);
        assert_eq!(decode(&raw[..raw.len() - 8]).unwrap_err(), TraceError::TooShort);
        raw[(HEADER_WORDS + RING_HEADER_WORDS + 1) * 8] = 0xee;
        assert_eq!(decode(&raw).unwrap_err(), TraceError::BadEvent { cpu: 0, slot: 0 });
        raw[0] = 0;
        assert_eq!(decode(&raw).unwrap_err(), TraceError::BadMagic);
        assert!(TraceBuffer::new(&memory[1..], 1, 2, 1).is_none());
    }
}
