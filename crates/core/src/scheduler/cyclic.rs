//! Where a cyclic core is in its major frame, and when it must next act.
//!
//! Every instant is an absolute counter value computed from the major frame
//! origin in one step: slot `k` of frame `n` starts at
//! `origin + ticks(n * frame_us + start_us[k])`. With a frequency that does
//! not divide a slot evenly (62.5 MHz and 333 us), each instant is then at
//! most one tick early however many frames have passed, whereas adding
//! rounded durations would drift a little further at every slot (Xen's
//! ARINC 653 scheduler drifted by 3.5 ms over 21 frames until 2025).
//!
//! The conversion rounds down, so a slot owns the counter tick in which it
//! starts and gives up the one in which it ends.

use crate::config::model::CyclicCore;
use alloc::vec::Vec;

const US_PER_S_64: u64 = 1_000_000;
const US_PER_S: u128 = US_PER_S_64 as u128;

/// Counter ticks from the origin to `us` microseconds after it, rounded down.
/// u128: microseconds since boot times a GHz counter overflows u64 in hours.
/// Split at whole seconds, the usual case needs no 128-bit division (a
/// library routine of hundreds of instructions on every slot boundary):
/// `floor(us * hz / 10^6) = secs * hz + floor(rest * hz / 10^6)`.
fn ticks(us: u128, hz: u64) -> u128 {
    if let Ok(us) = u64::try_from(us) {
        let (secs, rest) = (us / 1_000_000, us % 1_000_000);
        if let Some(part) = rest.checked_mul(hz) {
            return u128::from(secs) * u128::from(hz) + u128::from(part / 1_000_000);
        }
    }
    us.saturating_mul(u128::from(hz)) / US_PER_S
}

/// `us * hz` as whole ticks and the remainder in millionths of a tick
/// (see [`Frame`]), when both fit 64 bits.
fn split_ticks(us: u128, hz: u64) -> Option<(u64, u64)> {
    let us = u64::try_from(us).ok()?;
    let (secs, rest) = (us / US_PER_S_64, us % US_PER_S_64);
    let scaled = rest.checked_mul(hz)?;
    let ticks = secs.checked_mul(hz)?.checked_add(scaled / US_PER_S_64)?;
    Some((ticks, scaled % US_PER_S_64))
}

/// The counter value `us` microseconds after `origin`; saturates, so a value
/// beyond the counter's range reads as "never".
fn counter_at(origin: u64, hz: u64, us: u128) -> u64 {
    origin.saturating_add(u64::try_from(ticks(us, hz)).unwrap_or(u64::MAX))
}

/// The index of the major frame that contains `now`: the last `n` with
/// `ticks(n * frame_us) <= now - origin`. `None` before the origin, and for a
/// zero frequency or frame (validation refuses the latter): no frame ends.
fn frame_index(origin: u64, hz: u64, frame_us: u64, now: u64) -> Option<u128> {
    let elapsed = u128::from(now.checked_sub(origin)?);
    let frame = u128::from(frame_us) * u128::from(hz);
    // floor(n * frame / 10^6) <= elapsed  <=>  n * frame < (elapsed + 1) * 10^6
    (frame != 0).then(|| ((elapsed + 1) * US_PER_S - 1) / frame)
}

/// The counter value at which the major frame containing `now` started;
/// `origin` when `now` precedes it.
pub fn frame_start(origin: u64, hz: u64, frame_us: u64, now: u64) -> u64 {
    frame_index(origin, hz, frame_us, now).map_or(origin, |n| counter_at(origin, hz, n * u128::from(frame_us)))
}

/// One major frame of a core, placed on the counter.
#[derive(Clone, Copy)]
struct Frame<'c> {
    core: &'c CyclicCore,
    origin: u64,
    hz: u64,
    /// Microseconds from the origin to this frame's start.
    base_us: u128,
    /// The frame's start split as `base_us * hz = ticks * 10^6 + rem`:
    /// an offset inside the frame then costs one 64-bit division,
    /// `floor((base_us + off) * hz / 10^6) = ticks + floor((rem + off * hz) / 10^6)`,
    /// instead of [`ticks`] per slot edge on every slot boundary. `None`
    /// past 64 bits, where [`Frame::at`] takes the exact 128-bit path.
    split: Option<(u64, u64)>,
}

impl<'c> Frame<'c> {
    fn containing(core: &'c CyclicCore, origin: u64, hz: u64, now: u64) -> Option<Self> {
        let n = frame_index(origin, hz, core.major_frame_us, now)?;
        Some(Self::number(core, origin, hz, n))
    }

    fn number(core: &'c CyclicCore, origin: u64, hz: u64, n: u128) -> Self {
        let base_us = n * u128::from(core.major_frame_us);
        Self { core, origin, hz, base_us, split: split_ticks(base_us, hz) }
    }

    /// As [`Frame::containing`], trying frame `hint` and the one after it
    /// first: a pCPU that asks at every slot boundary finds its frame with a
    /// few multiplications instead of a 128-bit division.
    fn near(core: &'c CyclicCore, origin: u64, hz: u64, now: u64, hint: u64) -> Option<(Self, u64)> {
        let hint = u128::from(hint);
        for n in [hint, hint + 1] {
            let frame = Self::number(core, origin, hz, n);
            if frame.at(0) <= now && now < frame.at(core.major_frame_us) && core.major_frame_us != 0 {
                return Some((frame, u64::try_from(n).unwrap_or(u64::MAX)));
            }
        }
        let n = frame_index(origin, hz, core.major_frame_us, now)?;
        Some((Self::number(core, origin, hz, n), u64::try_from(n).unwrap_or(u64::MAX)))
    }

    fn at(&self, offset_us: u64) -> u64 {
        let fast = self.split.and_then(|(ticks, rem)| {
            let scaled = offset_us.checked_mul(self.hz)?.checked_add(rem)?;
            ticks.checked_add(scaled / US_PER_S_64)
        });
        match fast {
            Some(ticks) => self.origin.saturating_add(ticks),
            None => counter_at(self.origin, self.hz, self.base_us + u128::from(offset_us)),
        }
    }

    /// Each slot's index, first tick and first tick after it.
    fn slots(self) -> impl Iterator<Item = (usize, u64, u64)> + 'c {
        self.core.slots.iter().enumerate().map(move |(i, slot)| (i, self.at(slot.start_us), self.at(slot.end_us())))
    }
}

/// One slot of one major frame, placed on the counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Index in `core.slots`.
    pub index: usize,
    /// First counter tick the slot owns.
    pub start: u64,
    /// First counter tick after it.
    pub end: u64,
}

/// The slot that owns the counter value `now`; `None` in time no slot
/// claims (idle) and before the origin.
pub fn window_at(core: &CyclicCore, origin: u64, hz: u64, now: u64) -> Option<Window> {
    let frame = Frame::containing(core, origin, hz, now)?;
    frame.slots().find(|&(_, start, end)| start <= now && now < end).map(|(index, start, end)| Window {
        index,
        start,
        end,
    })
}

/// Where a cyclic pCPU stands: the slot it is in, if any, and until when
/// that holds (the slot's end, or the next boundary in idle time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub window: Option<Window>,
    pub until: u64,
    /// The index of the major frame `now` is in: the hint for next time.
    pub frame: u64,
}

/// [`window_at`] and [`next_boundary`] in one step, starting the search at
/// frame `hint` (the `frame` of the previous answer). `None` before the
/// origin and for a zero frame.
pub fn position(core: &CyclicCore, origin: u64, hz: u64, now: u64, hint: u64) -> Option<Position> {
    let (frame, n) = Frame::near(core, origin, hz, now, hint)?;
    let window = frame.slots().find(|&(_, start, end)| start <= now && now < end).map(|(index, start, end)| Window {
        index,
        start,
        end,
    });
    let until = match window {
        Some(w) => w.end,
        None => {
            let edges = frame.slots().flat_map(|(_, start, end)| [start, end]);
            edges.filter(|&edge| edge > now).fold(frame.at(core.major_frame_us), u64::min)
        }
    };
    Some(Position { window, until, frame: n })
}

/// Most stretches a [`Timeline`] keeps; a plan that would need more (a
/// counter frequency that makes its cycle many frames long) takes the exact
/// path of [`position`] at every look instead.
pub const MAX_STRETCHES: usize = 256;

/// One core's plan placed on the counter once, when the plan is loaded:
/// every edge (a slot's start or end, a major frame's start) over a cycle
/// of whole frames that is a whole number of ticks long. Each cycle then
/// starts at `origin + n * cycle` exactly, and each edge is that plus a
/// fixed offset, so finding the slot at a switch compares counter values,
/// where [`position`] converts microseconds at every look. The offsets are
/// [`ticks`] of the edges, so both agree to the tick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    /// Ticks in one cycle.
    cycle: u64,
    /// In time order, the first starting at 0: where each stretch between
    /// two edges starts in the cycle, and the slot that owns it.
    stretches: Vec<Stretch>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stretch {
    start: u64,
    /// The slot's index and its own start and end in the cycle.
    slot: Option<(usize, u64, u64)>,
}

/// Where a pCPU last found itself on a [`Timeline`]: the cycle and the
/// stretch, where the next look starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    pub cycle: u64,
    pub stretch: usize,
}

/// Where a core stands on its [`Timeline`]: the slot it is in, if any, and
/// until when that holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub window: Option<Window>,
    pub until: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Timeline {
    /// `None` for a zero frame or frequency, and for a plan whose cycle
    /// would need more than [`MAX_STRETCHES`].
    pub fn new(core: &CyclicCore, hz: u64) -> Option<Self> {
        let frame_us = core.major_frame_us;
        if frame_us == 0 || hz == 0 {
            return None;
        }
        // A frame is frame_us * hz / 10^6 ticks; `frames` of them are whole.
        let rest = (u128::from(frame_us % US_PER_S_64) * u128::from(hz % US_PER_S_64) % US_PER_S) as u64;
        let frames = US_PER_S_64 / gcd(rest, US_PER_S_64);
        let per_frame = 2 * core.slots.len() + 1;
        if frames.checked_mul(per_frame as u64).is_none_or(|n| n > MAX_STRETCHES as u64) {
            return None;
        }
        let cycle = u64::try_from(ticks(u128::from(frames) * u128::from(frame_us), hz)).ok()?;
        // Relative to the cycle's start; a frame's own edges, past the cycle, saturate.
        let at = |frame: u64, offset_us: u64| {
            let us = u128::from(frame) * u128::from(frame_us) + u128::from(offset_us);
            u64::try_from(ticks(us, hz)).unwrap_or(u64::MAX)
        };
        let mut edges = Vec::with_capacity(frames as usize * per_frame);
        for frame in 0..frames {
            edges.push(at(frame, 0));
            for slot in &core.slots {
                edges.extend([at(frame, slot.start_us), at(frame, slot.end_us())]);
            }
        }
        edges.retain(|&edge| edge < cycle);
        edges.sort_unstable();
        edges.dedup();
        let stretches = edges
            .iter()
            .map(|&start| {
                // The frame of the cycle this edge falls in, then its slot
                // as `window_at` finds it: the first in the plan's order.
                let frame = (0..frames).rev().find(|&f| at(f, 0) <= start).unwrap_or(0);
                let slot = core.slots.iter().enumerate().find_map(|(i, slot)| {
                    let (from, to) = (at(frame, slot.start_us), at(frame, slot.end_us()));
                    (from <= start && start < to).then_some((i, from, to))
                });
                Stretch { start, slot }
            })
            .collect();
        Some(Timeline { cycle, stretches })
    }

    /// Where the core stands at `now` with the cycles counted from
    /// `origin`: [`position`]'s answer, looked up from `cursor` (updated),
    /// which at the next slot boundary is the stretch before. `None` before
    /// the origin.
    pub fn at(&self, origin: u64, now: u64, cursor: &mut Cursor) -> Option<Place> {
        let elapsed = now.checked_sub(origin)?;
        let mut base = cursor.cycle.saturating_mul(self.cycle);
        if elapsed < base || elapsed - base >= self.cycle {
            *cursor = Cursor { cycle: elapsed / self.cycle, stretch: 0 };
            base = cursor.cycle * self.cycle;
        }
        let offset = elapsed - base;
        let last = self.stretches.len() - 1;
        let mut k = cursor.stretch.min(last);
        if self.stretches[k].start > offset {
            k = 0;
        }
        while k < last && self.stretches[k + 1].start <= offset {
            k += 1;
        }
        cursor.stretch = k;
        let start = origin.saturating_add(base);
        Some(match self.stretches[k].slot {
            Some((index, from, to)) => {
                let window = Window { index, start: start.saturating_add(from), end: start.saturating_add(to) };
                Place { window: Some(window), until: window.end }
            }
            None => {
                let next = self.stretches.get(k + 1).map_or(self.cycle, |s| s.start);
                Place { window: None, until: start.saturating_add(next) }
            }
        })
    }
}

/// [`window_at`] as its index in `core.slots` and the counter value at
/// which it ends.
pub fn slot_at(core: &CyclicCore, origin: u64, hz: u64, now: u64) -> Option<(usize, u64)> {
    window_at(core, origin, hz, now).map(|w| (w.index, w.end))
}

/// The counter value at which the major frame after the one containing
/// `now` starts (the origin itself before it).
pub fn next_frame_start(origin: u64, hz: u64, frame_us: u64, now: u64) -> u64 {
    match frame_index(origin, hz, frame_us, now) {
        Some(n) => counter_at(origin, hz, (n + 1) * u128::from(frame_us)),
        None if now < origin => origin,
        None => u64::MAX,
    }
}

/// Which plan the cyclic cores run, from which origin, and a requested
/// switch waiting for the next major frame (ARINC 653 mode change). Every
/// cyclic core derives its slots from this one value, so all switch at the
/// same instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub plan: usize,
    pub origin: u64,
    /// The plan to run next and the counter value from which it runs.
    pub switch: Option<(usize, u64)>,
}

impl Schedule {
    pub const fn new(plan: usize, origin: u64) -> Self {
        Self { plan, origin, switch: None }
    }

    /// The plan in force at `now` and its origin; a due switch becomes the
    /// current plan, its instant the new origin.
    pub fn at(&mut self, now: u64) -> (usize, u64) {
        if let Some((plan, instant)) = self.switch.filter(|&(_, instant)| now >= instant) {
            *self = Self::new(plan, instant);
        }
        (self.plan, self.origin)
    }

    /// Asks for `plan` from the next major frame of the current one (whose
    /// frame is `frame_us` long) and returns that instant. A later request
    /// before the instant replaces this one; asking for the plan in force
    /// cancels a pending switch.
    pub fn request(&mut self, plan: usize, frame_us: u64, hz: u64, now: u64) -> u64 {
        self.at(now);
        let instant = next_frame_start(self.origin, hz, frame_us, now);
        self.switch = (plan != self.plan).then_some((plan, instant));
        instant
    }
}

/// The first counter value after `now` at which a slot starts or ends, or
/// the next major frame starts (where a plan switch takes effect, even when
/// no slot starts there). Always after `now` unless the counter saturates.
pub fn next_boundary(core: &CyclicCore, origin: u64, hz: u64, now: u64) -> u64 {
    let Some(frame) = Frame::containing(core, origin, hz, now) else {
        return if now < origin { origin } else { u64::MAX };
    };
    let next_frame = frame.at(core.major_frame_us);
    let edges = frame.slots().flat_map(|(_, start, end)| [start, end]);
    edges.filter(|&edge| edge > now).fold(next_frame, u64::min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::Slot;
    use alloc::vec;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    fn slot(start_us: u64, duration_us: u64) -> Slot {
        Slot { partition: 0, vcpu: 0, start_us, duration_us }
    }

    fn core(major_frame_us: u64, slots: Vec<Slot>) -> CyclicCore {
        CyclicCore { cpu: 2, major_frame_us, slots }
    }

    const MHZ: u64 = 1_000_000;

    #[test]
    fn slots_and_idle_gaps_at_one_tick_per_microsecond() {
        // Out of order on purpose: the plan's order is not the time order.
        let c = core(10_000, vec![slot(5_000, 3_000), slot(1_000, 4_000)]);
        let origin = 500;
        assert_eq!(slot_at(&c, origin, MHZ, 0), None, "before the origin");
        assert_eq!(slot_at(&c, origin, MHZ, origin), None, "0..1000 is idle");
        assert_eq!(slot_at(&c, origin, MHZ, origin + 1_000), Some((1, origin + 5_000)));
        assert_eq!(slot_at(&c, origin, MHZ, origin + 4_999), Some((1, origin + 5_000)));
        assert_eq!(slot_at(&c, origin, MHZ, origin + 5_000), Some((0, origin + 8_000)));
        assert_eq!(slot_at(&c, origin, MHZ, origin + 8_000), None);
        assert_eq!(slot_at(&c, origin, MHZ, origin + 31_234), Some((1, origin + 35_000)), "frame 3");
    }

    #[test]
    fn boundaries_are_slot_edges_and_frame_starts() {
        let c = core(10_000, vec![slot(5_000, 3_000), slot(1_000, 4_000)]);
        let walk: Vec<u64> =
            core::iter::successors(Some(0), |&now| Some(next_boundary(&c, 100, MHZ, now))).skip(1).take(6).collect();
        assert_eq!(walk, [100, 1_100, 5_100, 8_100, 10_100, 11_100]);
    }

    #[test]
    fn frame_start_counts_whole_frames_from_the_origin() {
        assert_eq!(frame_start(1_000, MHZ, 10_000, 999), 1_000, "before the origin");
        assert_eq!(frame_start(1_000, MHZ, 10_000, 1_000), 1_000);
        assert_eq!(frame_start(1_000, MHZ, 10_000, 10_999), 1_000);
        assert_eq!(frame_start(1_000, MHZ, 10_000, 11_000), 11_000);
        assert_eq!(frame_start(1_000, MHZ, 10_000, 1_000 + 70_000 * 10_000 + 3), 1_000 + 70_000 * 10_000);
    }

    #[test]
    fn a_core_without_slots_is_idle_and_wakes_at_frame_starts() {
        let c = core(2_000, vec![]);
        assert_eq!(slot_at(&c, 0, MHZ, 1_500), None);
        assert_eq!(next_boundary(&c, 0, MHZ, 1_500), 2_000);
        assert_eq!(next_boundary(&c, 0, MHZ, 2_000), 4_000);
    }

    #[test]
    fn a_switch_waits_for_the_next_major_frame() {
        let mut schedule = Schedule::new(0, 1_000);
        assert_eq!(schedule.request(1, 10_000, MHZ, 14_000), 21_000);
        assert_eq!(schedule.at(20_999), (0, 1_000), "the old plan runs to the end of its frame");
        assert_eq!(schedule.at(21_000), (1, 21_000), "the new plan's frames start at the switch");
        assert_eq!(schedule.switch, None);
        assert_eq!(schedule.request(0, 4_000, MHZ, 21_000), 25_000, "a frame that just began runs to its end");
        assert_eq!(schedule.request(1, 4_000, MHZ, 22_000), 25_000);
        assert_eq!(schedule.switch, None, "asking for the plan in force cancels");
        assert_eq!(Schedule::new(0, 500).request(1, 100, MHZ, 10), 500, "before the origin: at the origin");
    }

    #[test]
    fn windows_carry_their_planned_start() {
        let c = core(10_000, vec![slot(5_000, 3_000), slot(1_000, 4_000)]);
        assert_eq!(window_at(&c, 100, MHZ, 10_100 + 6_000), Some(Window { index: 0, start: 15_100, end: 18_100 }));
        assert_eq!(next_frame_start(100, MHZ, 10_000, 10_099), 10_100);
        assert_eq!(next_frame_start(100, MHZ, 10_000, 10_100), 20_100);
        assert_eq!(next_frame_start(100, MHZ, 0, 10_100), u64::MAX);
    }

    #[test]
    fn degenerate_inputs_never_panic() {
        let c = core(0, vec![slot(0, 1)]);
        assert_eq!((slot_at(&c, 0, MHZ, 5), next_boundary(&c, 0, MHZ, 5)), (None, u64::MAX));
        let c = core(10, vec![slot(0, 5)]);
        assert_eq!(next_boundary(&c, 0, 0, 5), u64::MAX, "a stopped counter");
        let c = core(u64::MAX, vec![slot(u64::MAX, u64::MAX)]);
        assert_eq!(next_boundary(&c, u64::MAX - 1, u64::MAX, u64::MAX), u64::MAX);
        assert_eq!(slot_at(&c, 0, u64::MAX, u64::MAX), None);
        assert_eq!(frame_start(0, u64::MAX, u64::MAX, u64::MAX), 0);
    }

    /// 333 us is 20,812.5 ticks at 62.5 MHz. Adding rounded slot lengths
    /// would lose half a tick per slot; walking 10,000 frames by
    /// `next_boundary` must land on every ideal instant, rounded down.
    #[test]
    fn no_drift_over_ten_thousand_frames() {
        const HZ: u64 = 62_500_000;
        let origin = 123_456_789;
        let c = core(1_000, vec![slot(0, 333), slot(333, 333), slot(666, 333)]);
        let ideal = |us: u64| origin + us * 625 / 10;
        let mut now = origin;
        for n in 0..10_000u64 {
            for (offset, owner) in [(333, Some(1)), (666, Some(2)), (999, None), (1_000, Some(0))] {
                now = next_boundary(&c, origin, HZ, now);
                assert_eq!(now, ideal(n * 1_000 + offset), "frame {n}, offset {offset} us");
                assert_eq!(slot_at(&c, origin, HZ, now).map(|(i, _)| i), owner, "frame {n}, offset {offset} us");
            }
        }
        assert_eq!(now - origin, 625_000_000, "10 s at 62.5 MHz, to the tick");
        assert_eq!(frame_start(origin, HZ, 1_000, now + 62_499), now);
    }

    /// Slots in random order with random gaps, and the idle tail that makes
    /// the frame: `(gap before, duration)` pairs, then the tail.
    fn slot_set() -> impl Strategy<Value = (Vec<Slot>, u64)> {
        let pairs = proptest::collection::vec((0u64..700, 1u64..700), 0..8);
        (pairs, 1u64..700).prop_flat_map(|(pairs, tail)| {
            let mut cursor = 0;
            let slots: Vec<Slot> = pairs
                .into_iter()
                .map(|(gap, duration)| {
                    cursor += gap;
                    let s = slot(cursor, duration);
                    cursor += duration;
                    s
                })
                .collect();
            (Just(slots).prop_shuffle(), Just(cursor + tail))
        })
    }

    fn frequency() -> impl Strategy<Value = u64> {
        let usual = proptest::sample::select(vec![MHZ, 19_200_000, 24_000_000, 62_500_000, 1_000_000_000, 32_768]);
        prop_oneof![usual, 1u64..3_000_000_000]
    }

    /// The slot that owns tick `t` (counted from the origin) of frame `n`:
    /// the one inside whose `(start, end]` the end of that tick falls, in
    /// exact rational time.
    fn owner(slots: &[Slot], frame_us: u64, hz: u64, n: u64, t: u64) -> Option<(usize, u128)> {
        let tick_end = (u128::from(t) + 1) * US_PER_S;
        let instant = |offset: u64| (u128::from(n) * u128::from(frame_us) + u128::from(offset)) * u128::from(hz);
        let found = slots.iter().position(|s| instant(s.start_us) < tick_end && tick_end <= instant(s.end_us()));
        found.map(|i| (i, instant(slots[i].end_us()) / US_PER_S))
    }

    #[test]
    fn a_timeline_is_a_whole_number_of_ticks_long() {
        let c = core(2_000, vec![slot(0, 1_000), slot(1_000, 1_000)]);
        let t = Timeline::new(&c, 62_500_000).expect("two stretches");
        assert_eq!((t.cycle, t.stretches.len()), (125_000, 2), "one frame: 2 ms is 125,000 ticks");
        // A frame of 333 us is 20,812.5 ticks: two make a whole cycle.
        let c = core(333, vec![slot(0, 111), slot(111, 222)]);
        let t = Timeline::new(&c, 62_500_000).expect("a cycle of two frames");
        assert_eq!((t.cycle, t.stretches.len()), (41_625, 4));
        let mut cursor = Cursor::default();
        let at = t.at(100, 100 + 30_000, &mut cursor).expect("after the origin");
        assert_eq!(at.window, Some(Window { index: 1, start: 100 + 27_750, end: 100 + 41_625 }), "444 us to 666 us");
        assert_eq!(t.at(100, 99, &mut cursor), None, "before the origin");
        assert_eq!(Timeline::new(&core(0, vec![]), 1), None, "no frame");
        assert_eq!(Timeline::new(&c, 0), None, "no counter");
        // 7 us at 1,000,003 Hz is whole only after 10^6 frames.
        assert_eq!(Timeline::new(&core(7, vec![slot(0, 3)]), 1_000_003), None, "too many stretches");
    }

    #[test]
    fn a_timeline_walks_its_slots_without_dividing_and_catches_up_after_a_jump() {
        let c = core(10_000, vec![slot(5_000, 3_000), slot(1_000, 4_000)]);
        let t = Timeline::new(&c, MHZ).unwrap();
        let mut cursor = Cursor::default();
        let walk: Vec<(Option<usize>, u64)> = [0, 1_000, 5_000, 8_000, 10_000, 11_000, 31_200]
            .into_iter()
            .map(|off| t.at(500, 500 + off, &mut cursor).map(|p| (p.window.map(|w| w.index), p.until)).unwrap())
            .collect();
        assert_eq!(
            walk,
            [
                (None, 1_500),
                (Some(1), 5_500),
                (Some(0), 8_500),
                (None, 10_500),
                (None, 11_500),
                (Some(1), 15_500),
                (Some(1), 35_500)
            ]
        );
        assert_eq!(cursor, Cursor { cycle: 3, stretch: 1 });
    }

    /// The ticks of frame `n` from the origin: its start and its end.
    fn frame_ticks(n: u64, frame_us: u64, hz: u64) -> (u64, u64) {
        let at = |k: u64| ticks(u128::from(k) * u128::from(frame_us), hz) as u64;
        (at(n), at(n + 1))
    }

    /// Ticks worth probing in frame `n`: each slot edge and its neighbours,
    /// and `probes` spread over the frame.
    fn probe_ticks(c: &CyclicCore, n: u64, hz: u64, probes: Vec<u64>) -> (Vec<u64>, Vec<u64>) {
        let frame_us = c.major_frame_us;
        let (start, end) = frame_ticks(n, frame_us, hz);
        let edge = |us: u64| ticks(u128::from(n * frame_us + us), hz) as u64;
        let edges = c.slots.iter().flat_map(|s| [edge(s.start_us), edge(s.end_us())]);
        let near_edges = edges.flat_map(|e| [e.saturating_sub(1), e, e + 1]).collect();
        let random = probes.into_iter().map(|p| start + p % (end - start).max(1)).collect();
        (near_edges, random)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn a_timeline_answers_as_the_exact_conversion_does(
            (slots, frame_us) in slot_set(),
            hz in frequency(),
            origin in 0u64..1 << 40,
            n in prop_oneof![0u64..3, 0u64..10_000_000],
            probes in proptest::collection::vec(any::<u64>(), 16),
            hint in any::<(u64, usize)>(),
        ) {
            let c = core(frame_us, slots);
            let Some(t) = Timeline::new(&c, hz) else { return Ok(()) };
            let (start, end) = frame_ticks(n, frame_us, hz);
            let (near_edges, random) = probe_ticks(&c, n, hz, probes);
            let mut cursor = Cursor { cycle: hint.0, stretch: hint.1 };
            for t_rel in near_edges.into_iter().chain(random).chain([start, end.saturating_sub(1)]).filter(|t| (start..end).contains(t)) {
                let now = origin + t_rel;
                let exact = position(&c, origin, hz, now, 0).expect("inside a frame");
                let place = t.at(origin, now, &mut cursor).expect("after the origin");
                prop_assert_eq!(place.window, exact.window, "tick {} of frame {}", t_rel, n);
                prop_assert_eq!(place.until, exact.until, "tick {} of frame {}", t_rel, n);
            }
        }

        #[test]
        fn a_frame_places_its_offsets_as_the_exact_conversion_does(
            frame_us in prop_oneof![1u64..10_000, any::<u64>()],
            n in prop_oneof![0u64..10_000_000, any::<u64>()],
            hz in frequency(),
            origin in any::<u64>(),
            offset_us in prop_oneof![0u64..10_000, any::<u64>()],
        ) {
            let c = core(frame_us, vec![]);
            let frame = Frame::number(&c, origin, hz, u128::from(n));
            let exact = counter_at(origin, hz, u128::from(n) * u128::from(frame_us) + u128::from(offset_us));
            prop_assert_eq!(frame.at(offset_us), exact);
        }

        #[test]
        fn every_tick_maps_to_the_slot_containing_it(
            (slots, frame_us) in slot_set(),
            hz in frequency(),
            origin in 0u64..1 << 40,
            n in prop_oneof![0u64..3, 0u64..10_000_000],
            probes in proptest::collection::vec(any::<u64>(), 16),
        ) {
            let c = core(frame_us, slots);
            let (start, end) = frame_ticks(n, frame_us, hz);
            let (near_edges, random) = probe_ticks(&c, n, hz, probes);
            for t in near_edges.into_iter().chain(random).chain([start, end.saturating_sub(1)]).filter(|t| (start..end).contains(t)) {
                let now = origin + t;
                let expected = owner(&c.slots, frame_us, hz, n, t).map(|(i, end)| (i, origin + end as u64));
                prop_assert_eq!(slot_at(&c, origin, hz, now), expected, "tick {} of frame {}", t, n);
                prop_assert_eq!(frame_start(origin, hz, frame_us, now), origin + start);
                let boundary = next_boundary(&c, origin, hz, now);
                prop_assert!(boundary > now);
                prop_assert!(boundary <= origin + end, "past the frame's end");
                let before = slot_at(&c, origin, hz, boundary - 1).map(|(i, _)| i);
                prop_assert_eq!(before, expected.map(|(i, _)| i), "a boundary was skipped");
                for hint in [0, n.saturating_sub(1), n, n + 1, n + 7, u64::MAX] {
                    let at = position(&c, origin, hz, now, hint).expect("inside a frame");
                    prop_assert_eq!(at.frame, n, "hint {}", hint);
                    prop_assert_eq!(at.window, window_at(&c, origin, hz, now));
                    let until = at.window.map_or(boundary, |w| w.end);
                    prop_assert_eq!(at.until, until, "hint {}", hint);
                }
            }
        }
    }
}
