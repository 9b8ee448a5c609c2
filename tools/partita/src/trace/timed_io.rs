//! What a trace says about timed outputs: each operation's asked and done
//! counter values, the error E = |done - asked| per partition, and its
//! histogram.
//!
//! A `TimedIo` event is stamped when the write was done and carries the
//! signed difference to the asked time, so both come back exactly (within
//! the ±2^23 ticks the event keeps).

use super::{histogram_svg, partition_name, Histogram, TraceMeta};
use crate::units;
use anyhow::Result;
use partita_core::timedio::from_trace_arg;
use partita_core::trace::{from_timed_io_late_arg, Kind, Trace};

pub const HISTOGRAM_FILE: &str = "timed-io-error.svg";

/// One timed output as the trace recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    pub cpu: usize,
    pub partition: u8,
    pub pins: u8,
    pub values: u8,
    pub asked: u64,
    pub done: u64,
    /// For an output done more than a tick late ([`Kind::TimedIoLate`]):
    /// `Ok(step)` it began in time and the counter stepped that many ticks
    /// from the pCPU's last read before its time to the write's done time
    /// (a tick or less on a core that executes), or `Err(ticks)` it began
    /// late: its alarm waited that long for the pCPU to enter EL2, with the
    /// write's own step beyond a tick.
    pub late: Option<Result<u64, u64>>,
    /// The EL2 stretch its pCPU ended last before the one that served it,
    /// as (entered, left) in counter ticks: the one its alarm may have
    /// waited behind.
    pub before: Option<(u64, u64)>,
    /// The EL2 stretch that served it, as (entered, left): a turn of
    /// another vCPU can end inside it too, before the write.
    pub serving: Option<(u64, u64)>,
}

/// What an output that began late is granted of the EL2 stretch its alarm
/// waited behind: a stretch that ran past its alarm longer than any of
/// Partita's paths can (ΔVMMcritical, as `bench response` measures it)
/// held a turn of another vCPU, which only QEMU's -icount gives (see
/// docs/architecture.md, Known limits); the excess is not Partita's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// How far ahead of an output its alarm fires, in counter ticks.
    pub lead: u64,
    /// Partita's longest EL2 stretch on the serving pCPU, in counter ticks.
    pub el2_bound: u64,
}

impl Operation {
    /// E, in counter ticks.
    pub fn error(&self) -> u64 {
        self.done.abs_diff(self.asked)
    }

    /// Partita's share of E. An output that began in time was polled for
    /// with interrupts masked and nothing else to do, then written in four
    /// instructions: a core that executes goes from its last read before
    /// the asked time to the done time in a tick or less, so the counter's
    /// step beyond one tick is time the pCPU did not execute (QEMU can
    /// end a vCPU's turn at the store, a device access). One that began late waited first for its pCPU to take the
    /// alarm's interrupt, pending at EL1 where nothing masks it. Both
    /// waits are measured, and are the host's (on QEMU's -icount, another
    /// vCPU's turn), not Partita's.
    pub fn partita_error(&self, grant: Option<Grant>) -> u64 {
        let floor = self.error().min(1);
        match self.late {
            Some(Ok(step)) => self.error().saturating_sub(step.saturating_sub(1)).max(floor),
            // What its alarm's interrupt waited at EL1, and its write,
            // delayed it that much.
            Some(Err(waited)) => {
                self.error().saturating_sub(waited).saturating_sub(self.held_past_bound(grant)).max(floor)
            }
            _ => self.error(),
        }
    }

    /// How much longer than Partita's bound the EL2 stretches in its
    /// alarm's way ran past it ([`Grant`]): the one before the stretch that
    /// served the output, and that one's part up to the write; 0 without
    /// a grant.
    fn held_past_bound(&self, grant: Option<Grant>) -> u64 {
        let Some(grant) = grant else { return 0 };
        let alarm = self.asked.saturating_sub(grant.lead);
        let past_bound = |(entered, left): (u64, u64)| {
            left.min(self.done).saturating_sub(entered.max(alarm)).saturating_sub(grant.el2_bound)
        };
        self.before.map_or(0, past_bound) + self.serving.map_or(0, past_bound)
    }
}

/// Every timed output in the trace, per pCPU in time order.
pub fn operations(trace: &Trace) -> Vec<Operation> {
    let mut found = Vec::new();
    for (cpu, events) in trace.cpus.iter().enumerate() {
        let mut before = None;
        for (i, event) in events.iter().enumerate() {
            if event.kind == Kind::El2 {
                before = Some((event.time.saturating_sub(u64::from(event.arg)), event.time));
            }
            if event.kind != Kind::TimedIo {
                continue;
            }
            let (pins, late) = from_trace_arg(event.arg);
            let asked = event.time.saturating_add_signed(-late);
            // Recorded right after it, with the same stamp.
            let late = events
                .get(i + 1)
                .filter(|next| next.kind == Kind::TimedIoLate && next.time == event.time)
                .map(|next| from_timed_io_late_arg(next.arg));
            let serving = events[i + 1..]
                .iter()
                .find(|next| next.kind == Kind::El2)
                .map(|next| (next.time.saturating_sub(u64::from(next.arg)), next.time))
                .filter(|&(entered, _)| entered <= event.time);
            found.push(Operation {
                cpu,
                partition: event.partition,
                pins,
                values: event.vcpu,
                asked,
                done: event.time,
                late,
                before,
                serving,
            });
        }
    }
    found
}

/// One partition's errors.
#[derive(Clone, Debug, PartialEq)]
pub struct Errors {
    pub partition: u8,
    pub count: usize,
    pub max: u64,
    pub mean: f64,
    /// The largest of Partita's shares ([`Operation::partita_error`]).
    pub partita_max: u64,
}

/// The errors of each partition that asked for outputs, in partition
/// order; `grant` gives what a partition's outputs are granted, if known.
pub fn errors_per_partition(operations: &[Operation], grant: impl Fn(u8) -> Option<Grant>) -> Vec<Errors> {
    let mut partitions: Vec<u8> = operations.iter().map(|o| o.partition).collect();
    partitions.sort_unstable();
    partitions.dedup();
    partitions
        .into_iter()
        .map(|partition| {
            let ours = || operations.iter().filter(move |o| o.partition == partition);
            let errors: Vec<u64> = ours().map(Operation::error).collect();
            let mean = errors.iter().sum::<u64>() as f64 / errors.len() as f64;
            let partita_max = ours().map(|o| o.partita_error(grant(partition))).max().unwrap_or(0);
            Errors { partition, count: errors.len(), max: errors.iter().copied().max().unwrap_or(0), mean, partita_max }
        })
        .collect()
}

/// A line per partition that asked for outputs; `None` when none did.
pub fn summary(meta: &TraceMeta, trace: &Trace) -> Option<String> {
    let operations = operations(trace);
    if operations.is_empty() {
        return None;
    }
    let mut text = String::from("timed I/O error E = |done - asked|:\n");
    for errors in errors_per_partition(&operations, |_| None) {
        text += &format!(
            "  {}: {} operations, max E {}, mean E {}\n",
            partition_name(meta, errors.partition),
            errors.count,
            units::us_ticks(errors.max, trace.counter_hz),
            units::us_ticks_mean(errors.mean, trace.counter_hz)
        );
    }
    Some(text)
}

/// An SVG histogram of every operation's E, in microseconds of a
/// `counter_hz` counter.
pub fn error_svg(meta: &TraceMeta, operations: &[Operation], counter_hz: u64) -> Result<String> {
    let samples: Vec<f64> = operations.iter().map(|o| units::us(o.error() as f64, counter_hz)).collect();
    histogram_svg(&Histogram {
        title: format!(
            "{}: timed-output error E ({} operations; a counter tick is {:.3} µs)",
            meta.config,
            samples.len(),
            units::us(1.0, counter_hz)
        ),
        x: "E = |done - asked| (µs)",
        y: "operations (log scale)",
        empty: "no timed output in this trace",
        samples: &samples,
        unit: "µs",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use partita_core::timedio::trace_arg;
    use partita_core::trace::Event;

    fn output(partition: u8, asked: u64, done: u64) -> Event {
        Event { time: done, kind: Kind::TimedIo, partition, vcpu: 1, arg: trace_arg(0b1, asked, done) }
    }

    #[test]
    fn errors_come_back_per_partition_both_ways() {
        let trace = Trace {
            counter_hz: 62_500_000,
            cpus: vec![vec![output(0, 100, 101), output(1, 200, 200)], vec![output(0, 300, 297)]],
            lost: vec![0, 0],
        };
        let found = operations(&trace);
        let early = Operation {
            cpu: 1,
            partition: 0,
            pins: 1,
            values: 1,
            asked: 300,
            done: 297,
            late: None,
            before: None,
            serving: None,
        };
        assert_eq!(found[2], early);
        let errors = errors_per_partition(&found, |_| None);
        assert_eq!(errors[0], Errors { partition: 0, count: 2, max: 3, mean: 2.0, partita_max: 3 });
        assert_eq!(errors[1], Errors { partition: 1, count: 1, max: 0, mean: 0.0, partita_max: 0 });
        let meta = TraceMeta {
            config: "t".into(),
            cpus: 2,
            partitions: vec!["rt".into(), "io".into()],
            plans: vec![],
            fabric_cpu: None,
        };
        let text = summary(&meta, &trace).unwrap();
        assert!(text.contains("rt: 2 operations, max E 0.048 us (3 ticks), mean E 0.032 us (2.0 ticks)"), "{text}");
        let svg = error_svg(&meta, &found, trace.counter_hz).unwrap();
        assert!(svg.contains("timed-output error E (3 operations; a counter tick is 0.016 µs)"), "{svg}");
    }

    fn late(done: u64, arg: u32) -> Event {
        Event { time: done, kind: Kind::TimedIoLate, partition: 0, vcpu: 1, arg }
    }

    #[test]
    fn a_late_output_leaves_partita_only_what_its_pcpu_spent_at_el2() {
        use partita_core::trace::timed_io_late_arg;
        let trace = Trace {
            counter_hz: 62_500_000,
            cpus: vec![vec![
                // Begun in time, done 60,000 late: the counter stepped 60,010
                // ticks across its time while the pCPU polled.
                output(0, 1000, 61_000),
                late(61_000, timed_io_late_arg(1000, 0, 60_010, 0)),
                // Begun in time, the counter stepped a tick: all 40 ticks were Partita's.
                output(0, 80_000, 80_040),
                late(80_040, timed_io_late_arg(80_000, 79_000, 1, 0)),
                // Begun late; its alarm waited 13,000 ticks at EL1: 12,264 late, none of it Partita's.
                output(0, 90_000, 102_264),
                late(102_264, timed_io_late_arg(90_000, 102_231, 0, 13_000)),
                // Begun late with no wait at EL1: the EL2 stretch before it was in the way.
                output(0, 200_000, 203_104),
                late(203_104, timed_io_late_arg(200_000, 203_000, 0, 0)),
            ]],
            lost: vec![0],
        };
        let found = operations(&trace);
        assert_eq!(found.len(), 4, "the late events are not outputs of their own");
        assert_eq!((found[0].late, found[0].error(), found[0].partita_error(None)), (Some(Ok(60_010)), 60_000, 1));
        assert_eq!((found[1].late, found[1].partita_error(None)), (Some(Ok(1)), 40));
        assert_eq!((found[2].late, found[2].partita_error(None)), (Some(Err(13_000)), 1));
        assert_eq!((found[3].late, found[3].partita_error(None)), (Some(Err(0)), 3_104));
        assert_eq!(errors_per_partition(&found, |_| None)[0].partita_max, 3_104);
    }

    fn el2(left: u64, ticks: u32) -> Event {
        Event { time: left, kind: Kind::El2, partition: 255, vcpu: 255, arg: ticks }
    }

    #[test]
    fn an_el2_stretch_past_partita_s_bound_in_an_alarm_s_way_is_granted_beyond_the_bound() {
        use partita_core::trace::timed_io_late_arg;
        let grant = Some(Grant { lead: 1_250, el2_bound: 142 });
        let trace = Trace {
            counter_hz: 62_500_000,
            cpus: vec![vec![
                // Its alarm (69,750) came during a 31,000-tick stretch: another vCPU's turn held it.
                el2(100_000, 31_000),
                output(0, 71_000, 100_958),
                late(100_958, timed_io_late_arg(71_000, 100_940, 0, 8)),
                // Its alarm (199,750) came 50 ticks before a stretch within the bound ended.
                el2(199_800, 100),
                output(0, 200_000, 200_040),
                late(200_040, timed_io_late_arg(200_000, 200_010, 0, 8)),
            ]],
            lost: vec![0],
        };
        let found = operations(&trace);
        assert_eq!(found[0].before, Some((69_000, 100_000)));
        assert_eq!(
            (found[0].error(), found[0].partita_error(None), found[0].partita_error(grant)),
            (29_958, 29_950, 1)
        );
        assert_eq!((found[1].partita_error(None), found[1].partita_error(grant)), (32, 32));
        assert_eq!(errors_per_partition(&found, |_| grant)[0].partita_max, 32);
    }

    #[test]
    fn a_turn_lost_inside_the_stretch_that_serves_an_output_is_granted_beyond_the_bound() {
        use partita_core::trace::timed_io_late_arg;
        let grant = Some(Grant { lead: 1_250, el2_bound: 142 });
        let trace = Trace {
            counter_hz: 62_500_000,
            cpus: vec![vec![
                // Its alarm (28,750) waited 2,000 ticks at EL1; the stretch
                // entered at 30,750 held it 6,000 ticks before the write.
                output(0, 30_000, 36_800),
                late(36_800, timed_io_late_arg(30_000, 36_780, 0, 2_000)),
                el2(36_900, 6_150),
                // Served by a stretch entered after its time and within
                // the bound: nothing granted.
                output(0, 100_000, 100_160),
                late(100_160, timed_io_late_arg(100_000, 100_140, 0, 0)),
                el2(100_200, 150),
            ]],
            lost: vec![0],
        };
        let found = operations(&trace);
        assert_eq!((found[0].before, found[0].serving), (None, Some((30_750, 36_900))));
        // 6,800 late: 2,000 at EL1, 6,050 - 142 in the stretch.
        assert_eq!((found[0].partita_error(None), found[0].partita_error(grant)), (4_800, 1));
        assert_eq!(found[1].serving, Some((100_050, 100_200)));
        assert_eq!(found[1].partita_error(grant), 160);
    }
}
