//! The health monitor's decisions: which action an event calls for, the log
//! of what happened, and the partition watchdogs.
//!
//! The hypervisor detects events (traps, timers, hypercalls) and carries out
//! actions; what lies between, the per-partition policy from the
//! configuration and the bounded log a system partition and the host read,
//! lives here so that it can be tested without a board.

use crate::partition::lifecycle::Change;

/// What the health monitor heard about. `Reported` carries the code a
/// partition raised itself; other details (a fault address, an ESR, a
/// hypercall ID) travel in [`Report::detail`], so the policy looks only at
/// the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// An access outside the partition's stage-2 map.
    Stage2Fault,
    /// An undefined or forbidden instruction, or a system register the
    /// partition may not touch.
    Forbidden,
    /// A hypercall that does not exist or that the partition may not make.
    IllegalHypercall,
    /// The partition stopped kicking its watchdog.
    WatchdogExpired,
    /// The partition ran past its budget or deadline.
    BudgetOverrun,
    /// The partition reported an error of its own, with its code.
    Reported(u32),
}

/// An [`Event`] without its payload: what a [`Policy`] is indexed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Stage2Fault = 0,
    Forbidden = 1,
    IllegalHypercall = 2,
    WatchdogExpired = 3,
    BudgetOverrun = 4,
    Reported = 5,
}

impl EventKind {
    pub const COUNT: usize = 6;

    /// As `{:?}` spells it, without `core::fmt`'s machinery, which the
    /// hypervisor cannot afford on a path a guest drives at will.
    pub const fn name(self) -> &'static str {
        match self {
            EventKind::Stage2Fault => "Stage2Fault",
            EventKind::Forbidden => "Forbidden",
            EventKind::IllegalHypercall => "IllegalHypercall",
            EventKind::WatchdogExpired => "WatchdogExpired",
            EventKind::BudgetOverrun => "BudgetOverrun",
            EventKind::Reported => "Reported",
        }
    }
    pub const ALL: [EventKind; EventKind::COUNT] = [
        EventKind::Stage2Fault,
        EventKind::Forbidden,
        EventKind::IllegalHypercall,
        EventKind::WatchdogExpired,
        EventKind::BudgetOverrun,
        EventKind::Reported,
    ];

    /// The kind with this record code, if any.
    pub const fn from_code(code: u8) -> Option<EventKind> {
        if (code as usize) < EventKind::COUNT {
            Some(EventKind::ALL[code as usize])
        } else {
            None
        }
    }
}

impl Event {
    /// The event a guest fault of exception class `class` raises: a stage-2
    /// abort is an access outside its map, anything else something it may
    /// not do.
    pub const fn of_fault(class: u8) -> Event {
        match class {
            crate::trap::esr::ec::DABT_LOWER | crate::trap::esr::ec::IABT_LOWER => Event::Stage2Fault,
            _ => Event::Forbidden,
        }
    }

    pub const fn kind(self) -> EventKind {
        match self {
            Event::Stage2Fault => EventKind::Stage2Fault,
            Event::Forbidden => EventKind::Forbidden,
            Event::IllegalHypercall => EventKind::IllegalHypercall,
            Event::WatchdogExpired => EventKind::WatchdogExpired,
            Event::BudgetOverrun => EventKind::BudgetOverrun,
            Event::Reported(_) => EventKind::Reported,
        }
    }
}

/// What the hypervisor does about an event. The configuration names them
/// (`model::Health`) with the same type. The discriminants are the codes
/// of the log's records and of `partita.h`, so they never change and a new
/// action takes the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Action {
    /// Nothing, not even a log entry.
    Ignore = 0,
    /// A log entry; the partition runs on.
    Log = 1,
    Suspend = 2,
    Restart = 3,
    Halt = 4,
    /// The whole system restarts: for a fault the configuration says no
    /// partition can survive.
    ResetSystem = 5,
    /// A log entry, and the guest takes the exception the fault would have
    /// raised without Partita (`trap::inject`): a synchronous external
    /// abort for an access outside its memory, UNDEFINED for an instruction
    /// or register it is not given. Only for faults; one that has no such
    /// exception, or whose exception the guest could only take again and
    /// again, halts the partition instead.
    Inject = 6,
}

/// What an action does to the partition the event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consequence {
    /// It goes on (a faulting instruction is stepped over).
    GoOn,
    /// It goes on at its own exception vector.
    Inject,
    /// Its life cycle changes.
    Change(Change),
    /// The whole machine restarts.
    ResetSystem,
}

impl Action {
    /// The one place an action is turned into what happens to a partition.
    pub const fn consequence(self) -> Consequence {
        match self {
            Action::Ignore | Action::Log => Consequence::GoOn,
            Action::Inject => Consequence::Inject,
            Action::Suspend => Consequence::Change(Change::Suspend),
            Action::Restart => Consequence::Change(Change::Restart),
            Action::Halt => Consequence::Change(Change::Stop),
            Action::ResetSystem => Consequence::ResetSystem,
        }
    }
}

impl Action {
    pub const ALL: [Action; 7] = [
        Action::Ignore,
        Action::Log,
        Action::Suspend,
        Action::Restart,
        Action::Halt,
        Action::ResetSystem,
        Action::Inject,
    ];

    /// As `{:?}` spells it (see [`EventKind::name`]).
    pub const fn name(self) -> &'static str {
        match self {
            Action::Ignore => "Ignore",
            Action::Log => "Log",
            Action::Suspend => "Suspend",
            Action::Restart => "Restart",
            Action::Halt => "Halt",
            Action::ResetSystem => "ResetSystem",
            Action::Inject => "Inject",
        }
    }

    /// The action with this record code, if any.
    pub const fn from_code(code: u8) -> Option<Action> {
        if (code as usize) < Action::ALL.len() {
            Some(Action::ALL[code as usize])
        } else {
            None
        }
    }

    /// Whether the event goes into the log. Every action but `Ignore` does,
    /// so that a partition suspended, restarted or halted always leaves a
    /// trace of why.
    pub const fn is_logged(self) -> bool {
        !matches!(self, Action::Ignore)
    }

    /// Whether a policy may map events of `kind` to this action: `inject`
    /// only faults, the events that have an exception to give.
    pub const fn applies_to(self, kind: EventKind) -> bool {
        !matches!(self, Action::Inject) || matches!(kind, EventKind::Stage2Fault | EventKind::Forbidden)
    }
}

/// One partition's action for each kind of event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    actions: [Action; EventKind::COUNT],
}

impl Policy {
    /// Faults become the guest's own exceptions, as on a machine without
    /// Partita: a stock kernel handles them (kills a process, reports an
    /// oops) where stopping the partition would take it all down. A missed
    /// watchdog halts, unless the configuration asks for a restart. Illegal
    /// hypercalls, reports and overruns are logged, since the partition can
    /// still be doing useful work. The same as `model::Health::DEFAULT`.
    pub const DEFAULT: Policy =
        Policy { actions: [Action::Inject, Action::Inject, Action::Log, Action::Halt, Action::Log, Action::Log] };

    /// The policy with `kind` mapped to `action`, for building a policy from
    /// the configuration in a `const` or a chain.
    pub const fn with(mut self, kind: EventKind, action: Action) -> Policy {
        self.actions[kind as usize] = action;
        self
    }

    pub fn set(&mut self, kind: EventKind, action: Action) {
        self.actions[kind as usize] = action;
    }

    pub const fn action(&self, event: Event) -> Action {
        self.actions[event.kind() as usize]
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::DEFAULT
    }
}

impl From<&crate::config::model::Health> for Policy {
    fn from(health: &crate::config::model::Health) -> Policy {
        Policy::DEFAULT
            .with(EventKind::Stage2Fault, health.stage2_fault)
            .with(EventKind::Forbidden, health.forbidden)
            .with(EventKind::IllegalHypercall, health.illegal_hypercall)
            .with(EventKind::WatchdogExpired, health.watchdog)
            .with(EventKind::BudgetOverrun, health.budget_overrun)
            .with(EventKind::Reported, health.reported)
    }
}

/// A partition's health-monitor state: its policy and how often it has been
/// restarted (so the hypervisor can report it, or escalate on it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionHm {
    pub policy: Policy,
    pub restarts: u32,
}

impl PartitionHm {
    pub const fn new(policy: Policy) -> Self {
        PartitionHm { policy, restarts: 0 }
    }

    /// The action for `event`, counting it if it is a restart. The count
    /// saturates rather than wraps so a partition that restarts forever
    /// never looks fresh again. `deliverable`: the event has an exception
    /// the guest can take; without one, `inject` halts the partition.
    pub fn decide(&mut self, event: Event, deliverable: bool) -> Action {
        let action = match self.policy.action(event) {
            Action::Inject if !deliverable => Action::Halt,
            action => action,
        };
        if action == Action::Restart {
            self.restarts = self.restarts.saturating_add(1);
        }
        action
    }

    /// [`PartitionHm::decide`] for an event with no exception, when the
    /// partition goes on after it (the action is `log` or `ignore`):
    /// `None`, with nothing counted, for any other action. The hypervisor's
    /// fast path answers such a call without the scheduler.
    pub fn decide_going_on(&mut self, event: Event) -> Option<Action> {
        match self.policy.action(event).consequence() {
            Consequence::GoOn => Some(self.decide(event, false)),
            _ => None,
        }
    }
}

/// What the hypervisor tells the log about one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    /// In the hypervisor's time unit (counter ticks).
    pub time: u64,
    pub partition: u8,
    pub vcpu: u8,
    pub event: Event,
    /// Whatever locates the event: a faulting address, an ESR, a hypercall
    /// function ID, an overrun length; 0 if nothing does.
    pub detail: u64,
}

/// One log entry: a report, the action taken, and its place in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Counts every entry ever logged from 0, dropped ones included, so a
    /// reader can page on and see exactly how many it missed.
    pub seq: u64,
    pub time: u64,
    pub partition: u8,
    pub vcpu: u8,
    pub event: Event,
    pub detail: u64,
    pub action: Action,
}

impl Entry {
    /// What an unused slot of the log holds (all zero bytes in practice).
    pub const EMPTY: Entry =
        Entry { seq: 0, time: 0, partition: 0, vcpu: 0, event: Event::Stage2Fault, detail: 0, action: Action::Ignore };
}

/// Bytes in an encoded [`Entry`].
pub const RECORD_LEN: usize = 32;

/// Why a record did not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer than [`RECORD_LEN`] bytes.
    Short,
    UnknownEvent(u8),
    UnknownAction(u8),
    /// A code in the `Reported` field of an event that is not `Reported`:
    /// the record was not written by [`Entry::encode`].
    StrayCode,
}

impl core::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DecodeError::Short => write!(f, "an HM record is shorter than {RECORD_LEN} bytes"),
            DecodeError::UnknownEvent(code) => write!(f, "unknown HM event code {code}"),
            DecodeError::UnknownAction(code) => write!(f, "unknown HM action code {code}"),
            DecodeError::StrayCode => f.write_str("an HM record carries a reported code for another event"),
        }
    }
}

impl core::error::Error for DecodeError {}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

impl Entry {
    /// The record a guest reads through its hypercall buffer and the host
    /// reads from `hm.log`, little-endian whatever the CPU:
    ///
    /// | bytes | field |
    /// |---|---|
    /// | 0..8 | seq |
    /// | 8..16 | time |
    /// | 16..24 | detail |
    /// | 24 | partition |
    /// | 25 | vcpu |
    /// | 26 | event kind ([`EventKind`] discriminant) |
    /// | 27 | action ([`Action`] discriminant) |
    /// | 28..32 | reported code, 0 for other events |
    pub fn encode(&self) -> [u8; RECORD_LEN] {
        let code = match self.event {
            Event::Reported(code) => code,
            _ => 0,
        };
        let mut record = [0; RECORD_LEN];
        record[0..8].copy_from_slice(&self.seq.to_le_bytes());
        record[8..16].copy_from_slice(&self.time.to_le_bytes());
        record[16..24].copy_from_slice(&self.detail.to_le_bytes());
        record[24] = self.partition;
        record[25] = self.vcpu;
        record[26] = self.event.kind() as u8;
        record[27] = self.action as u8;
        record[28..32].copy_from_slice(&code.to_le_bytes());
        record
    }

    /// Reads back a record [`Entry::encode`] wrote; extra bytes are ignored
    /// so a reader can pass the rest of its buffer.
    pub fn decode(record: &[u8]) -> Result<Entry, DecodeError> {
        let record = record.get(..RECORD_LEN).ok_or(DecodeError::Short)?;
        let code = u32::from_le_bytes([record[28], record[29], record[30], record[31]]);
        let kind = EventKind::from_code(record[26]).ok_or(DecodeError::UnknownEvent(record[26]))?;
        let event = match kind {
            EventKind::Reported => Event::Reported(code),
            _ if code != 0 => return Err(DecodeError::StrayCode),
            EventKind::Stage2Fault => Event::Stage2Fault,
            EventKind::Forbidden => Event::Forbidden,
            EventKind::IllegalHypercall => Event::IllegalHypercall,
            EventKind::WatchdogExpired => Event::WatchdogExpired,
            EventKind::BudgetOverrun => Event::BudgetOverrun,
        };
        Ok(Entry {
            seq: u64_at(record, 0),
            time: u64_at(record, 8),
            detail: u64_at(record, 16),
            partition: record[24],
            vcpu: record[25],
            event,
            action: Action::from_code(record[27]).ok_or(DecodeError::UnknownAction(record[27]))?,
        })
    }
}

/// Where a read of the log landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// The sequence number of the first entry returned. Larger than the
    /// `from` asked for when those entries were overwritten already; the
    /// difference is how many this reader missed.
    pub first: u64,
    /// Entries returned.
    pub count: usize,
    /// The `from` for the next read.
    pub next: u64,
}

/// The last `N` health-monitor entries. When full, a new entry overwrites
/// the oldest: the log must never stop the hypervisor, and the newest events
/// are the ones that explain the present. Every overwrite is counted in
/// [`HmLog::dropped`], so a reader knows the log is incomplete and by how
/// much.
///
/// Entry `seq` lives in slot `seq % N`, so the ring needs no head index:
/// the entries held are exactly `oldest()..next_seq()`.
#[derive(Clone, Debug)]
pub struct HmLog<const N: usize> {
    /// Slot `seq % capacity` holds entry `seq` for every `seq` in
    /// `oldest()..next_seq()`; the other slots mean nothing. Plain entries,
    /// not `Option`s: an all-zero log lives in `.bss`, not in the image.
    entries: [Entry; N],
    /// Slots in use, at most `N`: the configuration's `hm_log_entries`.
    capacity: u64,
    next_seq: u64,
    dropped: u64,
}

impl<const N: usize> Default for HmLog<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> HmLog<N> {
    pub const fn new() -> Self {
        Self::with_capacity(N)
    }

    /// A log that keeps only the last `capacity` entries (at most `N`).
    pub const fn with_capacity(capacity: usize) -> Self {
        let capacity = if capacity < N { capacity } else { N };
        HmLog { entries: [Entry::EMPTY; N], capacity: capacity as u64, next_seq: 0, dropped: 0 }
    }

    /// Empties the log and keeps only the last `capacity` entries from now
    /// on (at most `N`): for a log that lives in a `static`.
    pub fn set_capacity(&mut self, capacity: usize) {
        // In place: a whole new log would be a temporary the size of the log.
        self.capacity = capacity.min(N) as u64;
        self.next_seq = 0;
        self.dropped = 0;
    }

    /// The sequence number the next entry will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The sequence number of the oldest entry held (`next_seq()` if none).
    pub fn oldest(&self) -> u64 {
        self.next_seq.saturating_sub(self.capacity)
    }

    pub fn len(&self) -> usize {
        // At most N, so the cast cannot truncate.
        (self.next_seq - self.oldest()) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.next_seq == 0
    }

    /// Entries overwritten before anyone could be sure to have read them.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Logs `report` with the action taken and returns its sequence number,
    /// or `None` if the action is [`Action::Ignore`], which the policy asks
    /// to leave no trace.
    pub fn record(&mut self, report: Report, action: Action) -> Option<u64> {
        if !action.is_logged() {
            return None;
        }
        let seq = self.next_seq;
        let entry = Entry {
            seq,
            time: report.time,
            partition: report.partition,
            vcpu: report.vcpu,
            event: report.event,
            detail: report.detail,
            action,
        };
        if self.capacity == 0 {
            self.dropped = self.dropped.saturating_add(1);
        } else {
            if seq >= self.capacity {
                // The slot holds entry `seq - capacity`, never read if unread.
                self.dropped = self.dropped.saturating_add(1);
            }
            self.entries[(seq % self.capacity) as usize] = entry;
        }
        self.next_seq += 1;
        Some(seq)
    }

    /// The entry with sequence number `seq`, if still held.
    pub fn get(&self, seq: u64) -> Option<&Entry> {
        if seq < self.oldest() || seq >= self.next_seq {
            return None;
        }
        Some(&self.entries[(seq % self.capacity) as usize])
    }

    /// Copies entries from `from` on into `out`, oldest first, as many as
    /// fit. A `from` older than the log skips to the oldest held.
    pub fn read(&self, from: u64, out: &mut [Entry]) -> Page {
        let first = from.clamp(self.oldest(), self.next_seq);
        let mut count = 0;
        for (slot, seq) in out.iter_mut().zip(first..self.next_seq) {
            if let Some(entry) = self.get(seq) {
                *slot = *entry;
                count += 1;
            }
        }
        Page { first, count, next: first + count as u64 }
    }

    /// The log's own invariants, for the hypervisor's state check: no more
    /// entries than its capacity, and each held where its number says.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.capacity > N as u64 || self.len() as u64 > self.capacity {
            return Err("health-monitor log holds more than its capacity");
        }
        if (self.oldest()..self.next_seq).any(|seq| self.get(seq).is_some_and(|e| e.seq != seq)) {
            return Err("health-monitor log entry out of place");
        }
        Ok(())
    }

    /// [`HmLog::read`] into a byte buffer of [`RECORD_LEN`]-byte records,
    /// for a hypercall that hands the guest its page directly.
    pub fn read_encoded(&self, from: u64, out: &mut [u8]) -> Page {
        let first = from.clamp(self.oldest(), self.next_seq);
        let mut count = 0;
        for (chunk, seq) in out.chunks_exact_mut(RECORD_LEN).zip(first..self.next_seq) {
            if let Some(entry) = self.get(seq) {
                chunk.copy_from_slice(&entry.encode());
                count += 1;
            }
        }
        Page { first, count, next: first + count as u64 }
    }
}

/// A partition's watchdog: it must be kicked at least once a `period`, or
/// it expires at its deadline. Times are in the caller's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watchdog {
    period: u64,
    deadline: u64,
    /// The action of an expiry already reported, still to be carried out.
    held: Option<Action>,
}

impl Watchdog {
    /// A watchdog started at `now`. Its deadline saturates at `u64::MAX`, so
    /// a huge period means "practically never" instead of wrapping to a
    /// deadline in the past.
    pub const fn new(period: u64, now: u64) -> Self {
        Watchdog { period, deadline: now.saturating_add(period), held: None }
    }

    pub const fn period(&self) -> u64 {
        self.period
    }

    /// Pushes the deadline to a full period after `now`. A kick with a clock
    /// reading older than the last one (a kick from a lagging pCPU) never
    /// pulls the deadline earlier, so it cannot make the watchdog fire.
    pub fn kick(&mut self, now: u64) {
        self.deadline = self.deadline.max(now.saturating_add(self.period));
    }

    /// Expired once `now` reaches the deadline: the hypervisor arms its
    /// timer for [`Watchdog::next_deadline`], and the timer firing there
    /// must find the watchdog expired, not one tick short.
    pub const fn expired(&self, now: u64) -> bool {
        now >= self.deadline
    }

    pub const fn next_deadline(&self) -> u64 {
        self.deadline
    }

    /// An expiry seen at `now`: the deadline that passed, and a new period
    /// starts, so that an ignored or logged expiry is raised once per
    /// period, not at every look. `None` while not expired.
    pub fn expire(&mut self, now: u64) -> Option<u64> {
        let passed = self.expired(now).then_some(self.deadline);
        if passed.is_some() {
            self.kick(now);
        }
        passed
    }

    /// Keeps the action of a reported expiry for a step of its own, when it
    /// changes the partition's life: reporting and carrying out together
    /// held the hypervisor with interrupts masked for as long as both.
    pub fn hold(&mut self, action: Action) {
        if matches!(action.consequence(), Consequence::Change(_) | Consequence::ResetSystem) {
            self.held = Some(action);
        }
    }

    /// The held action, if any, which is no longer held.
    pub fn take_held(&mut self) -> Option<Action> {
        self.held.take()
    }

    /// True when an expiry or its held action waits to be served at `now`.
    pub const fn due(&self, now: u64) -> bool {
        self.held.is_some() || self.expired(now)
    }

    /// Time left before expiry, 0 once expired.
    pub const fn remaining(&self, now: u64) -> u64 {
        self.deadline.saturating_sub(now)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_spelled_as_debug_spells_them() {
        for kind in super::EventKind::ALL {
            assert_eq!(kind.name(), alloc::format!("{kind:?}"));
        }
        for action in super::Action::ALL {
            assert_eq!(action.name(), alloc::format!("{action:?}"));
        }
    }

    #[test]
    fn aborts_are_stage_2_faults_and_every_other_class_is_forbidden() {
        use crate::trap::esr::ec;
        assert_eq!(Event::of_fault(ec::DABT_LOWER), Event::Stage2Fault);
        assert_eq!(Event::of_fault(ec::IABT_LOWER), Event::Stage2Fault);
        for class in [ec::UNKNOWN, ec::SMC64, ec::SYSREG, ec::HVC64, 0x2f] {
            assert_eq!(Event::of_fault(class), Event::Forbidden, "class 0x{class:x}");
        }
    }

    #[test]
    fn every_action_has_one_consequence_for_the_partition() {
        let expected = [
            (Action::Ignore, Consequence::GoOn),
            (Action::Log, Consequence::GoOn),
            (Action::Suspend, Consequence::Change(Change::Suspend)),
            (Action::Restart, Consequence::Change(Change::Restart)),
            (Action::Halt, Consequence::Change(Change::Stop)),
            (Action::ResetSystem, Consequence::ResetSystem),
            (Action::Inject, Consequence::Inject),
        ];
        assert_eq!(expected.len(), Action::ALL.len());
        for (action, consequence) in expected {
            assert_eq!(action.consequence(), consequence, "{action:?}");
        }
    }

    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    fn report(time: u64, event: Event) -> Report {
        Report { time, partition: 2, vcpu: 1, event, detail: 0x8000_1000 }
    }

    const EVENTS: [Event; 6] = [
        Event::Stage2Fault,
        Event::Forbidden,
        Event::IllegalHypercall,
        Event::WatchdogExpired,
        Event::BudgetOverrun,
        Event::Reported(7),
    ];

    #[test]
    fn the_default_policy() {
        let policy = Policy::default();
        let actions: Vec<Action> = EVENTS.iter().map(|&e| policy.action(e)).collect();
        assert_eq!(actions, [Action::Inject, Action::Inject, Action::Log, Action::Halt, Action::Log, Action::Log]);
    }

    #[test]
    fn a_policy_is_per_kind_whatever_the_reported_code() {
        let mut policy = Policy::DEFAULT.with(EventKind::Reported, Action::Suspend);
        assert_eq!(policy.action(Event::Reported(0)), Action::Suspend);
        assert_eq!(policy.action(Event::Reported(u32::MAX)), Action::Suspend);
        policy.set(EventKind::Stage2Fault, Action::ResetSystem);
        assert_eq!(policy.action(Event::Stage2Fault), Action::ResetSystem);
        assert_eq!(policy.action(Event::Forbidden), Action::Inject);
    }

    #[test]
    fn inject_is_for_faults_only_and_halts_what_cannot_be_delivered() {
        for kind in EventKind::ALL {
            let fault = matches!(kind, EventKind::Stage2Fault | EventKind::Forbidden);
            assert_eq!(Action::Inject.applies_to(kind), fault, "{kind:?}");
            assert!(Action::Halt.applies_to(kind));
        }
        let mut hm = PartitionHm::new(Policy::DEFAULT);
        assert_eq!(hm.decide(Event::Stage2Fault, true), Action::Inject);
        assert_eq!(hm.decide(Event::Forbidden, false), Action::Halt);
        assert_eq!(hm.decide(Event::IllegalHypercall, false), Action::Log);
    }

    #[test]
    fn kinds_and_actions_round_trip_through_their_codes() {
        for (i, kind) in EventKind::ALL.iter().enumerate() {
            assert_eq!(*kind as usize, i);
            assert_eq!(EventKind::from_code(i as u8), Some(*kind));
        }
        for (i, action) in Action::ALL.iter().enumerate() {
            assert_eq!(*action as usize, i);
            assert_eq!(Action::from_code(i as u8), Some(*action));
        }
        assert_eq!(EventKind::from_code(6), None);
        assert_eq!(Action::from_code(6), Some(Action::Inject));
        assert_eq!(Action::from_code(7), None);
        for event in EVENTS {
            assert_eq!(EventKind::ALL[event.kind() as usize], event.kind());
        }
    }

    #[test]
    fn a_wrapped_log_passes_its_own_check() {
        let mut log: HmLog<8> = HmLog::with_capacity(5);
        for t in 0..23 {
            log.record(report(t, EVENTS[t as usize % 6]), Action::Log);
            assert_eq!(log.check(), Ok(()));
        }
        assert_eq!(log.len(), 5);
    }

    #[test]
    fn a_smaller_capacity_keeps_fewer_entries() {
        let mut log: HmLog<8> = HmLog::with_capacity(3);
        for n in 0..5u64 {
            let report = Report { time: n, partition: 0, vcpu: 0, event: Event::Reported(1), detail: n };
            log.record(report, Action::Log);
        }
        assert_eq!((log.len(), log.oldest(), log.dropped()), (3, 2, 2));
        assert_eq!(log.get(2).map(|e| e.detail), Some(2));
        assert!(log.get(1).is_none());
        assert_eq!(HmLog::<4>::with_capacity(100).capacity, 4);
    }

    #[test]
    fn the_configuration_and_the_policy_agree() {
        assert_eq!(Policy::from(&crate::config::model::Health::DEFAULT), Policy::DEFAULT);
        let health =
            crate::config::model::Health { watchdog: Action::Restart, ..crate::config::model::Health::DEFAULT };
        assert_eq!(Policy::from(&health).action(Event::WatchdogExpired), Action::Restart);
    }

    #[test]
    fn restarts_are_counted_and_saturate() {
        let mut hm = PartitionHm::new(Policy::DEFAULT.with(EventKind::WatchdogExpired, Action::Restart));
        assert_eq!(hm.decide(Event::WatchdogExpired, false), Action::Restart);
        assert_eq!(hm.decide(Event::IllegalHypercall, false), Action::Log);
        assert_eq!(hm.restarts, 1);
        hm.restarts = u32::MAX;
        hm.decide(Event::WatchdogExpired, false);
        assert_eq!(hm.restarts, u32::MAX);
    }

    #[test]
    fn only_actions_that_go_on_are_decided_going_on() {
        for action in Action::ALL {
            let mut hm = PartitionHm::new(Policy::DEFAULT.with(EventKind::Reported, action));
            let decided = hm.decide_going_on(Event::Reported(7));
            let goes_on = action.consequence() == Consequence::GoOn;
            assert_eq!(decided, goes_on.then_some(action), "{action:?}");
            assert_eq!(hm.restarts, 0);
        }
    }

    #[test]
    fn ignored_events_leave_no_entry() {
        let mut log = HmLog::<4>::new();
        assert_eq!(log.record(report(1, Event::Forbidden), Action::Ignore), None);
        assert!(log.is_empty());
        assert_eq!(log.record(report(1, Event::Forbidden), Action::Halt), Some(0));
        assert_eq!(log.len(), 1);
    }

    #[test]
    fn a_full_log_overwrites_the_oldest_and_counts_it() {
        let mut log = HmLog::<3>::new();
        for t in 0..5 {
            log.record(report(t, Event::Reported(t as u32)), Action::Log);
        }
        assert_eq!((log.len(), log.oldest(), log.next_seq(), log.dropped()), (3, 2, 5, 2));
        assert_eq!(log.get(1), None);
        assert_eq!(log.get(2).unwrap().event, Event::Reported(2));
        assert_eq!(log.get(5), None);
    }

    #[test]
    fn a_log_of_nothing_drops_everything_and_says_so() {
        let mut log = HmLog::<0>::new();
        assert_eq!(log.record(report(0, Event::Stage2Fault), Action::Halt), Some(0));
        assert_eq!((log.len(), log.dropped()), (0, 1));
        assert_eq!(log.read(0, &mut []), Page { first: 1, count: 0, next: 1 });
    }

    #[test]
    fn a_reader_pages_through_and_learns_what_it_missed() {
        let mut log = HmLog::<4>::new();
        for t in 0..6 {
            log.record(report(t, Event::BudgetOverrun), Action::Log);
        }
        let blank = Entry {
            seq: 0,
            time: 0,
            partition: 0,
            vcpu: 0,
            event: Event::Stage2Fault,
            detail: 0,
            action: Action::Ignore,
        };
        let mut out = [blank; 3];
        let page = log.read(0, &mut out);
        assert_eq!(page, Page { first: 2, count: 3, next: 5 });
        assert_eq!(out.map(|e| e.seq), [2, 3, 4]);
        let page = log.read(page.next, &mut out);
        assert_eq!(page, Page { first: 5, count: 1, next: 6 });
        assert_eq!(out[0].time, 5);
        assert_eq!(log.read(page.next, &mut out), Page { first: 6, count: 0, next: 6 });
        assert_eq!(log.read(100, &mut out), Page { first: 6, count: 0, next: 6 });
    }

    #[test]
    fn an_encoded_page_decodes_to_the_entries() {
        let mut log = HmLog::<8>::new();
        log.record(report(10, Event::Stage2Fault), Action::Halt);
        log.record(report(11, Event::Reported(0xDEAD_BEEF)), Action::Log);
        // Room for one and a half records: only whole records are written.
        let mut buf = [0u8; RECORD_LEN * 3 / 2];
        let page = log.read_encoded(0, &mut buf);
        assert_eq!(page, Page { first: 0, count: 1, next: 1 });
        assert_eq!(Entry::decode(&buf).unwrap(), *log.get(0).unwrap());
        let page = log.read_encoded(page.next, &mut buf);
        assert_eq!(Entry::decode(&buf).unwrap(), *log.get(1).unwrap());
        assert_eq!(page.next, 2);
    }

    #[test]
    fn the_record_layout_is_fixed() {
        let entry = Entry {
            seq: 0x0102,
            time: 0x0304,
            partition: 5,
            vcpu: 6,
            event: Event::Reported(0x0708),
            detail: 0x090A,
            action: Action::Suspend,
        };
        let record = entry.encode();
        assert_eq!(record[0..2], [0x02, 0x01]);
        assert_eq!(record[8..10], [0x04, 0x03]);
        assert_eq!(record[16..18], [0x0A, 0x09]);
        assert_eq!(record[24..28], [5, 6, EventKind::Reported as u8, Action::Suspend as u8]);
        assert_eq!(record[28..32], [0x08, 0x07, 0, 0]);
    }

    #[test]
    fn bad_records_are_refused() {
        let good =
            Entry { seq: 1, time: 2, partition: 0, vcpu: 0, event: Event::Forbidden, detail: 3, action: Action::Halt }
                .encode();
        assert_eq!(Entry::decode(&good[..RECORD_LEN - 1]), Err(DecodeError::Short));
        let mut bad = good;
        bad[26] = 6;
        assert_eq!(Entry::decode(&bad), Err(DecodeError::UnknownEvent(6)));
        let mut bad = good;
        bad[27] = 0xFF;
        assert_eq!(Entry::decode(&bad), Err(DecodeError::UnknownAction(0xFF)));
        let mut bad = good;
        bad[28] = 1;
        assert_eq!(Entry::decode(&bad), Err(DecodeError::StrayCode));
    }

    #[test]
    fn a_watchdog_expires_at_its_deadline_unless_kicked() {
        let mut dog = Watchdog::new(100, 1000);
        assert_eq!(dog.next_deadline(), 1100);
        assert!(!dog.expired(1099));
        assert!(dog.expired(1100));
        dog.kick(1050);
        assert_eq!((dog.next_deadline(), dog.remaining(1100)), (1150, 50));
        assert!(!dog.expired(1149));
        assert_eq!(dog.remaining(2000), 0);
    }

    #[test]
    fn a_watchdog_never_wraps() {
        let mut dog = Watchdog::new(u64::MAX, 5);
        assert_eq!(dog.next_deadline(), u64::MAX);
        assert!(!dog.expired(u64::MAX - 1));
        let mut late = Watchdog::new(10, u64::MAX - 3);
        assert_eq!(late.next_deadline(), u64::MAX);
        late.kick(u64::MAX);
        assert_eq!(late.next_deadline(), u64::MAX);
        dog.kick(0);
        assert_eq!(dog.next_deadline(), u64::MAX);
    }

    #[test]
    fn an_expiry_starts_a_new_period_and_a_life_changing_action_is_held_once() {
        let mut dog = Watchdog::new(100, 1000);
        assert_eq!(dog.expire(1099), None);
        assert_eq!(dog.expire(1105), Some(1100));
        assert_eq!(dog.next_deadline(), 1205);
        assert!(!dog.due(1105));
        dog.hold(Action::Log);
        assert!(!dog.due(1105), "an action that goes on is done with the report");
        dog.hold(Action::Restart);
        assert!(dog.due(1105), "a held action is due before the next deadline");
        assert_eq!(dog.take_held(), Some(Action::Restart));
        assert_eq!(dog.take_held(), None);
        assert!(!dog.due(1105));
    }

    #[test]
    fn a_stale_kick_does_not_pull_the_deadline_in() {
        let mut dog = Watchdog::new(100, 1000);
        dog.kick(1080);
        dog.kick(1010);
        assert_eq!(dog.next_deadline(), 1180);
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            Just(Event::Stage2Fault),
            Just(Event::Forbidden),
            Just(Event::IllegalHypercall),
            Just(Event::WatchdogExpired),
            Just(Event::BudgetOverrun),
            any::<u32>().prop_map(Event::Reported),
        ]
    }

    fn entry() -> impl Strategy<Value = Entry> {
        (any::<u64>(), any::<u64>(), any::<u8>(), any::<u8>(), event(), any::<u64>(), 0..7u8).prop_map(
            |(seq, time, partition, vcpu, event, detail, action)| Entry {
                seq,
                time,
                partition,
                vcpu,
                event,
                detail,
                action: Action::from_code(action).unwrap(),
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn every_entry_survives_its_record(entry in entry()) {
            prop_assert_eq!(Entry::decode(&entry.encode()), Ok(entry));
        }

        #[test]
        fn the_log_holds_the_last_n_and_counts_the_rest(
            actions in proptest::collection::vec(0..7u8, 0..40),
        ) {
            let mut log = HmLog::<5>::new();
            let mut logged = Vec::new();
            for (t, code) in actions.into_iter().enumerate() {
                let action = Action::from_code(code).unwrap();
                let seq = log.record(report(t as u64, Event::Reported(t as u32)), action);
                if action.is_logged() {
                    prop_assert_eq!(seq, Some(logged.len() as u64));
                    logged.push(t as u64);
                } else {
                    prop_assert_eq!(seq, None);
                }
            }
            let kept = logged.len().min(5);
            prop_assert_eq!(log.dropped(), (logged.len() - kept) as u64);
            let mut out = Vec::new();
            let mut from = 0;
            let mut buf = [0u8; RECORD_LEN * 2];
            loop {
                let page = log.read_encoded(from, &mut buf);
                if page.count == 0 {
                    break;
                }
                for record in buf.chunks_exact(RECORD_LEN).take(page.count) {
                    out.push(Entry::decode(record).unwrap().time);
                }
                from = page.next;
            }
            prop_assert_eq!(&out[..], &logged[logged.len() - kept..]);
        }
    }
}
