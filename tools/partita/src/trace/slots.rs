//! What a trace says about cyclic plans: when each slot started against
//! its plan, and whether any vCPU ran on a cyclic pCPU outside its slots.
//!
//! A `SlotStart` event carries the plan index, the slot index and how many
//! counter ticks late the pCPU saw the slot begin, so the planned start is
//! `time - lateness` and the plan in the trace description gives the end.

use super::{vcpu_intervals, Clock, Interval, TraceMeta};
use partita_core::config::model::{Plan, Slot};
use partita_core::trace::{Kind, Trace};

/// One slot instance as the trace recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotRun {
    pub cpu: usize,
    pub plan: usize,
    pub slot: usize,
    pub partition: u8,
    pub vcpu: u8,
    /// Planned first and past-the-end counter values.
    pub planned: u64,
    pub end: u64,
    /// When the pCPU saw it begin.
    pub seen: u64,
    /// When its vCPU entered, if it ran in this slot.
    pub entered: Option<u64>,
}

/// Every slot start in the trace, per pCPU in time order. Slots whose plan
/// or index the description does not know are left out.
pub fn slot_runs(meta: &TraceMeta, trace: &Trace) -> Vec<SlotRun> {
    let mut runs = Vec::new();
    for (cpu, events) in trace.cpus.iter().enumerate() {
        for (i, event) in events.iter().enumerate().filter(|(_, e)| e.kind == Kind::SlotStart) {
            let (late, plan, slot) =
                (u64::from(event.arg >> 16), (event.arg >> 8 & 0xff) as usize, (event.arg & 0xff) as usize);
            let Some(declared) = slot_of(&meta.plans, plan, cpu, slot) else { continue };
            let planned = event.time - late;
            let end = planned + ticks(declared.duration_us, trace.counter_hz);
            let entered = events[i + 1..]
                .iter()
                .take_while(|e| e.kind != Kind::SlotStart)
                .find(|e| e.kind == Kind::VcpuIn && (e.partition, e.vcpu) == (event.partition, event.vcpu))
                .map(|e| e.time);
            runs.push(SlotRun {
                cpu,
                plan,
                slot,
                partition: event.partition,
                vcpu: event.vcpu,
                planned,
                end,
                seen: event.time,
                entered,
            });
        }
    }
    runs
}

fn slot_of(plans: &[Plan], plan: usize, cpu: usize, slot: usize) -> Option<Slot> {
    let core = plans.get(plan)?.cores.iter().find(|core| core.cpu as usize == cpu)?;
    core.slots.get(slot).copied()
}

fn ticks(us: u64, hz: u64) -> u64 {
    (u128::from(us) * u128::from(hz) / 1_000_000) as u64
}

/// The pCPUs the plans run cyclically.
pub fn cyclic_cpus(meta: &TraceMeta) -> Vec<usize> {
    meta.plans.first().map(|plan| plan.cores.iter().map(|core| core.cpu as usize).collect()).unwrap_or_default()
}

/// Time a vCPU spent on a cyclic pCPU outside a slot of its own: each
/// interval must start at or after its slot's planned start and end no
/// more than `tolerance` ticks after the slot's planned end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Violation {
    pub interval: Interval,
    /// The slot in force when it began, if any.
    pub slot: Option<SlotRun>,
}

pub fn outside_slots(meta: &TraceMeta, trace: &Trace, tolerance: u64) -> Vec<Violation> {
    let runs = slot_runs(meta, trace);
    let cyclic = cyclic_cpus(meta);
    let first_slot = |cpu: usize| runs.iter().find(|r| r.cpu == cpu).map(|r| r.planned);
    vcpu_intervals(trace)
        .into_iter()
        .filter(|i| cyclic.contains(&i.cpu))
        // Before the first traced slot start (a ring that overwrote its
        // oldest events) there is nothing to compare with.
        .filter(|i| first_slot(i.cpu).is_some_and(|first| i.start >= first))
        .filter_map(|interval| {
            let slot = runs.iter().rfind(|r| r.cpu == interval.cpu && r.planned <= interval.start).copied();
            let inside = slot.is_some_and(|s| {
                (s.partition, s.vcpu) == (interval.partition, interval.vcpu) && interval.end <= s.end + tolerance
            });
            (!inside).then_some(Violation { interval, slot })
        })
        .collect()
}

/// Lateness figures in microseconds: of the pCPU seeing the slot begin,
/// and of the slot's vCPU entering (slots whose vCPU ran).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Jitter {
    pub slots: usize,
    pub seen_max_us: f64,
    pub seen_mean_us: f64,
    pub entered: usize,
    pub entry_max_us: f64,
    pub entry_mean_us: f64,
}

pub fn jitter(runs: &[SlotRun], clock: &Clock) -> Jitter {
    let seen: Vec<f64> = runs.iter().map(|r| clock.span_micros(r.seen - r.planned)).collect();
    let entry: Vec<f64> = runs.iter().filter_map(|r| r.entered.map(|t| clock.span_micros(t - r.planned))).collect();
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    Jitter {
        slots: runs.len(),
        seen_max_us: max(&seen),
        seen_mean_us: mean(&seen),
        entered: entry.len(),
        entry_max_us: max(&entry),
        entry_mean_us: mean(&entry),
    }
}

/// The lines `partita trace` adds for a trace of cyclic pCPUs.
pub fn summary(meta: &TraceMeta, trace: &Trace) -> Option<String> {
    let runs = slot_runs(meta, trace);
    if runs.is_empty() {
        return None;
    }
    let clock = Clock::of(trace);
    let j = jitter(&runs, &clock);
    let outside = outside_slots(meta, trace, ticks(JITTER_BOUND_US, trace.counter_hz));
    Some(format!(
        "cyclic slots: {} started, seen late by mean {:.3} µs / max {:.3} µs; {} entered, late by mean {:.3} µs / max {:.3} µs; \
         {} vCPU interval(s) outside their slots\n",
        j.slots, j.seen_mean_us, j.seen_max_us, j.entered, j.entry_mean_us, j.entry_max_us, outside.len()
    ))
}

/// How far past its slot's end a vCPU may still be leaving, in microseconds.
pub const JITTER_BOUND_US: u64 = 100;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use partita_core::config::model::CyclicCore;
    use partita_core::trace::Event;

    const HZ: u64 = 1_000_000;

    pub(crate) fn meta() -> TraceMeta {
        let slot = |partition, start_us, duration_us| Slot { partition, vcpu: 0, start_us, duration_us };
        let core = CyclicCore { cpu: 1, major_frame_us: 1_000, slots: vec![slot(0, 0, 400), slot(1, 500, 400)] };
        TraceMeta {
            config: "unit".into(),
            cpus: 2,
            partitions: vec!["a".into(), "b".into()],
            plans: vec![Plan { name: "p".into(), cores: vec![core] }],
            fabric_cpu: None,
        }
    }

    fn event(time: u64, kind: Kind, partition: u8, arg: u32) -> Event {
        Event { time, kind, partition, vcpu: 0, arg }
    }

    fn start(time: u64, partition: u8, slot: u32, late: u32) -> Event {
        event(time, Kind::SlotStart, partition, late << 16 | slot)
    }

    fn trace(cpu1: Vec<Event>) -> Trace {
        Trace { counter_hz: HZ, cpus: vec![vec![], cpu1], lost: vec![0, 0] }
    }

    #[test]
    fn slot_starts_give_planned_times_and_entries() {
        let t = trace(vec![
            start(1_003, 0, 0, 3),
            event(1_005, Kind::VcpuIn, 0, 0),
            event(1_401, Kind::VcpuOut, 0, 0),
            start(1_502, 1, 1, 2),
        ]);
        let runs = slot_runs(&meta(), &t);
        assert_eq!(runs.len(), 2);
        assert_eq!((runs[0].planned, runs[0].end, runs[0].entered), (1_000, 1_400, Some(1_005)));
        assert_eq!((runs[1].planned, runs[1].end, runs[1].entered), (1_500, 1_900, None), "b never ran");
        let j = jitter(&runs, &Clock::of(&t));
        assert_eq!((j.seen_max_us, j.entry_max_us, j.entered), (3.0, 5.0, 1));
        assert!(outside_slots(&meta(), &t, 10).is_empty());
    }

    #[test]
    fn running_past_the_slot_or_in_anothers_is_a_violation() {
        let late_exit =
            trace(vec![start(1_000, 0, 0, 0), event(1_001, Kind::VcpuIn, 0, 0), event(1_450, Kind::VcpuOut, 0, 0)]);
        assert_eq!(outside_slots(&meta(), &late_exit, 10).len(), 1);
        assert!(outside_slots(&meta(), &late_exit, 60).is_empty());
        let wrong =
            trace(vec![start(1_500, 1, 1, 0), event(1_501, Kind::VcpuIn, 0, 0), event(1_600, Kind::VcpuOut, 0, 0)]);
        let found = outside_slots(&meta(), &wrong, 10);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].slot.map(|s| s.partition), Some(1));
    }
}
