//! Timing-accurate I/O (BlueVisor): a partition asks for an output at an
//! absolute counter value, Partita performs it then and keeps the error
//! E = |T_done - T_asked| of every operation.
//!
//! This module decides everything about a request: whether it is taken
//! (its pins, its time, the room left), where it goes in the queue, which
//! operation is due, when a periodic one comes again, and what the errors
//! add up to. The hypervisor only arms its timer for [`Queue::alarm`],
//! waits out the last ticks and writes the device.

use crate::hypercall::status;
use alloc::vec::Vec;

/// Lines of the device (a PL061 has eight), one bit each in a pin mask.
pub const PINS: u32 = 8;

/// One output: drive the lines in `pins` to the matching bits of `values`
/// when the counter reaches `at`, and again every `period` ticks if
/// `period` is not 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub pins: u8,
    pub values: u8,
    pub at: u64,
    pub period: u64,
}

/// Why a request was not taken; each has its own hypercall status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No pins, or a pin the configuration did not give the partition.
    Pins,
    /// `at` is not after the counter value of the call.
    Past,
    /// `at` is further ahead than the configured horizon.
    TooFar,
    /// A period too short to leave the pCPU any time between operations.
    Period,
    /// The partition's queue holds `depth` operations already.
    Full,
}

impl Refusal {
    /// The hypercall status that says it.
    pub const fn status(self) -> i64 {
        match self {
            Refusal::Pins => status::DENIED,
            Refusal::Past => status::LATE,
            Refusal::TooFar => status::TOO_FAR,
            Refusal::Period => status::INVALID,
            Refusal::Full => status::FULL,
        }
    }
}

/// What a partition may do, from its grant, in counter ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    pub pins: u8,
    /// Furthest ahead of the call a request may be.
    pub horizon: u64,
    /// How early Partita's timer fires before an operation; the pCPU
    /// polls the counter for the rest.
    pub lead: u64,
}

impl Grant {
    /// The shortest period: each operation may keep the pCPU polling for
    /// `lead`, so at most half of its time goes to one waveform.
    pub const fn min_period(&self) -> u64 {
        self.lead.saturating_mul(2)
    }

    /// Whether `request`, made at `now`, is one this grant allows.
    pub fn check(&self, request: &Request, now: u64) -> Result<(), Refusal> {
        if request.pins == 0 || request.pins & !self.pins != 0 {
            return Err(Refusal::Pins);
        }
        if request.at <= now {
            return Err(Refusal::Past);
        }
        if request.at - now > self.horizon {
            return Err(Refusal::TooFar);
        }
        if request.period != 0 && request.period < self.min_period() {
            return Err(Refusal::Period);
        }
        Ok(())
    }
}

/// A partition's pending operations, earliest first, requests of the same
/// time in the order they came. Its room is reserved once, so taking a
/// request never allocates.
#[derive(Clone, Debug)]
pub struct Queue {
    grant: Grant,
    pending: Vec<Request>,
    depth: usize,
    errors: Errors,
}

impl Queue {
    pub fn new(grant: Grant, depth: usize) -> Self {
        Self { grant, pending: Vec::with_capacity(depth), depth, errors: Errors::default() }
    }

    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// Takes `request`, made at `now`, or says why not.
    pub fn submit(&mut self, request: Request, now: u64) -> Result<(), Refusal> {
        self.grant.check(&request, now)?;
        if self.pending.len() >= self.depth {
            return Err(Refusal::Full);
        }
        self.insert(request);
        Ok(())
    }

    fn insert(&mut self, request: Request) {
        let at = self.pending.partition_point(|queued| queued.at <= request.at);
        self.pending.insert(at, request);
    }

    /// Drops every pending operation that drives a pin of `pins`: the
    /// number dropped.
    pub fn cancel(&mut self, pins: u8) -> usize {
        let before = self.pending.len();
        self.pending.retain(|queued| queued.pins & pins == 0);
        before - self.pending.len()
    }

    /// Drops everything, as a restart of the partition does.
    pub fn clear(&mut self) {
        self.pending.clear();
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// When the timer must fire for the earliest operation: `lead` ticks
    /// before it.
    pub fn alarm(&self) -> Option<u64> {
        self.pending.first().map(|first| first.at.saturating_sub(self.grant.lead))
    }

    /// The earliest operation if its alarm has come at `now`, taken off
    /// the queue; a periodic one goes back for its next time, counted
    /// from its asked time so that the waveform keeps its phase.
    pub fn take_due(&mut self, now: u64) -> Option<Request> {
        if self.alarm()? > now {
            return None;
        }
        let due = self.pending.remove(0);
        if due.period != 0 {
            self.insert(Request { at: due.at.saturating_add(due.period), ..due });
        }
        Some(due)
    }

    /// Notes an operation asked for `asked` and done at `done`.
    pub fn record(&mut self, asked: u64, done: u64, spun: u64) {
        self.errors.record(asked, done, spun);
    }

    pub fn errors(&self) -> Errors {
        self.errors
    }
}

/// The errors of a partition's operations so far, in counter ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Errors {
    pub count: u64,
    pub max: u64,
    pub sum: u64,
    /// Ticks the pCPU polled the counter for this partition's operations.
    pub spun: u64,
}

impl Errors {
    pub fn record(&mut self, asked: u64, done: u64, spun: u64) {
        let error = done.abs_diff(asked);
        self.count += 1;
        self.max = self.max.max(error);
        self.sum = self.sum.saturating_add(error);
        self.spun = self.spun.saturating_add(spun);
    }
}

/// The trace's `arg` for an operation on `pins` done `done - asked` ticks
/// after it was asked for: the pins in bits 24..32, the signed difference
/// in 0..24, saturated, so the asked time comes back from the event's own.
pub fn trace_arg(pins: u8, asked: u64, done: u64) -> u32 {
    const LIMIT: i64 = (1 << 23) - 1;
    let late = (done as i128 - asked as i128).clamp(-LIMIT as i128, LIMIT as i128) as i32;
    (u32::from(pins) << 24) | (late as u32 & 0xff_ffff)
}

/// The pins and the signed `done - asked` of an operation's trace `arg`.
pub fn from_trace_arg(arg: u32) -> (u8, i64) {
    let late = ((arg << 8) as i32 >> 8) as i64;
    ((arg >> 24) as u8, late)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GRANT: Grant = Grant { pins: 0b0000_0111, horizon: 1_000, lead: 10 };

    fn once(pins: u8, at: u64) -> Request {
        Request { pins, values: pins, at, period: 0 }
    }

    #[test]
    fn a_request_must_use_its_own_pins_in_the_future_within_the_horizon() {
        assert_eq!(GRANT.check(&once(0b001, 101), 100), Ok(()));
        assert_eq!(GRANT.check(&once(0, 200), 100), Err(Refusal::Pins), "no pins at all");
        assert_eq!(GRANT.check(&once(0b1001, 200), 100), Err(Refusal::Pins), "pin 3 is not given");
        assert_eq!(GRANT.check(&once(0b001, 100), 100), Err(Refusal::Past), "now is already too late");
        assert_eq!(GRANT.check(&once(0b001, 1_100), 100), Ok(()), "exactly the horizon");
        assert_eq!(GRANT.check(&once(0b001, 1_101), 100), Err(Refusal::TooFar));
        let periodic = |period| Request { period, ..once(0b010, 200) };
        assert_eq!(GRANT.check(&periodic(19), 100), Err(Refusal::Period));
        assert_eq!(GRANT.check(&periodic(20), 100), Ok(()));
    }

    #[test]
    fn every_refusal_has_its_own_status() {
        let all = [Refusal::Pins, Refusal::Past, Refusal::TooFar, Refusal::Period, Refusal::Full];
        let statuses: Vec<i64> = all.iter().map(|r| r.status()).collect();
        assert_eq!(statuses, [status::DENIED, status::LATE, status::TOO_FAR, status::INVALID, status::FULL]);
        assert!(statuses.iter().all(|&s| s < 0));
    }

    #[test]
    fn a_full_queue_refuses_and_keeps_what_it_has() {
        let mut queue = Queue::new(GRANT, 2);
        assert_eq!(queue.submit(once(1, 300), 0), Ok(()));
        assert_eq!(queue.submit(once(2, 200), 0), Ok(()));
        assert_eq!(queue.submit(once(4, 100), 0), Err(Refusal::Full));
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.alarm(), Some(190), "the earliest, lead ticks before");
        assert_eq!(queue.cancel(2), 1);
        assert_eq!(queue.submit(once(4, 100), 0), Ok(()), "room again");
    }

    #[test]
    fn operations_come_out_by_time_then_in_the_order_asked() {
        let mut queue = Queue::new(GRANT, 8);
        for (pins, at) in [(1, 500), (2, 300), (4, 500), (1, 400)] {
            queue.submit(once(pins, at), 0).unwrap();
        }
        assert_eq!(queue.take_due(289), None, "before the first alarm");
        let order: Vec<(u8, u64)> = core::iter::from_fn(|| queue.take_due(10_000)).map(|r| (r.pins, r.at)).collect();
        assert_eq!(order, [(2, 300), (1, 400), (1, 500), (4, 500)]);
    }

    #[test]
    fn a_periodic_operation_comes_back_in_phase_until_cancelled() {
        let mut queue = Queue::new(GRANT, 4);
        queue.submit(Request { pins: 1, values: 1, at: 100, period: 50 }, 0).unwrap();
        queue.submit(once(2, 170), 0).unwrap();
        // Served late: the next one keeps its asked time.
        let times: Vec<u64> = (0..4).filter_map(|_| queue.take_due(400)).map(|r| r.at).collect();
        assert_eq!(times, [100, 150, 170, 200]);
        assert_eq!(queue.alarm(), Some(240));
        assert_eq!(queue.cancel(1), 1);
        assert!(queue.is_empty());
    }

    #[test]
    fn errors_count_both_ways() {
        let mut queue = Queue::new(GRANT, 1);
        queue.record(100, 101, 7);
        queue.record(200, 197, 3);
        queue.record(300, 300, 0);
        assert_eq!(queue.errors(), Errors { count: 3, max: 3, sum: 4, spun: 10 });
    }

    #[test]
    fn the_trace_arg_keeps_pins_and_signed_difference() {
        assert_eq!(from_trace_arg(trace_arg(0b101, 1_000, 1_001)), (0b101, 1));
        assert_eq!(from_trace_arg(trace_arg(0xff, 1_000, 998)), (0xff, -2));
        assert_eq!(from_trace_arg(trace_arg(1, 0, u64::MAX)), (1, (1 << 23) - 1), "saturated");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// Whatever is asked, the queue never holds more than its depth,
        /// hands operations out in time order, never before their alarm,
        /// and keeps exactly the taken requests.
        #[test]
        fn the_queue_is_bounded_and_ordered(
            steps in proptest::collection::vec((0u8..8, 0u64..1_500, 0u64..60, 0u64..400), 1..60),
        ) {
            let depth = 5;
            let mut queue = Queue::new(GRANT, depth);
            let mut now = 0;
            for (pins, ahead, period, advance) in steps {
                let request = Request { pins, values: 0, at: now + ahead, period };
                let room = queue.len() < depth;
                let taken = queue.submit(request, now).is_ok();
                prop_assert_eq!(taken, GRANT.check(&request, now).is_ok() && room);
                prop_assert!(queue.len() <= depth);
                now += advance;
                let mut last = 0;
                while let Some(due) = queue.take_due(now) {
                    prop_assert!(due.at <= now + GRANT.lead);
                    prop_assert!(due.at >= last);
                    last = due.at;
                }
                prop_assert!(queue.alarm().is_none_or(|alarm| alarm > now));
            }
        }
    }
}
