//! Each late job set against what Partita promised it: the time its pCPU
//! spent at EL2 inside the job's window (release to end), from the trace's
//! [`Kind::El2`] stretches, against the added-response bound `partita
//! check` prints (Ker-ONE eq. 4) for that window. The bound covers one
//! critical section and one scheduling decision, and a release latency for
//! every virtual interrupt delivered to the pCPU in the window (each tick,
//! each device interrupt is one release). A job whose window holds more EL2
//! time than that is Partita's defect; the others were late for reasons
//! outside Partita: the guest's own work, or time its pCPU did not execute
//! (the host's scheduling, or under `-icount` the other vCPUs' turns).

use crate::host_share::HostShare;
use crate::status::LateJob;
use partita_core::config::response::AddedResponse;
use partita_core::trace::{Event, Kind};

/// What the trace says about one late job's window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attributed {
    pub partition: String,
    pub job: LateJob,
    /// Counter ticks its pCPU spent at EL2 inside the window.
    pub partita: u64,
    /// Partita's bound for the window, in counter ticks.
    pub bound: u64,
    /// What the host took from the window on the wall clock; `None` in
    /// guest time or where the host's samples do not say.
    pub host: Option<HostShare>,
}

impl Attributed {
    /// Partita spent longer in the window than it promised.
    pub fn over_bound(&self) -> bool {
        self.partita > self.bound
    }

    /// The window's length.
    pub fn window(&self) -> u64 {
        self.job.end.saturating_sub(self.job.release)
    }

    /// The window less Partita's share: the guest's own work and the time
    /// its pCPU did not execute.
    pub fn rest(&self) -> u64 {
        self.window().saturating_sub(self.partita)
    }

    /// `window W us: Partita X us (bound B us)`, and with `host` the
    /// host's share after it.
    pub fn describe(&self, counter_hz: u64, host: bool) -> String {
        let us = |ticks: u64| if counter_hz == 0 { 0.0 } else { ticks as f64 * 1e6 / counter_hz as f64 };
        let mut text = format!(
            "window {:.1} us: Partita {:.1} us (bound {:.1} us)",
            us(self.window()),
            us(self.partita),
            us(self.bound)
        );
        if host {
            text += &format!(", {}", HostShare::describe(self.host.as_ref()));
        }
        text
    }
}

/// How a bound in instructions becomes counter ticks in a run.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    /// Nanoseconds one instruction takes: 2^shift under -icount; the
    /// profile's figure (measured under -icount 4) on the wall clock.
    pub ns_per_instruction: u64,
    pub counter_hz: u64,
}

impl Scale {
    fn ticks(&self, instructions: u64) -> u64 {
        (instructions * self.ns_per_instruction).saturating_mul(self.counter_hz).div_ceil(1_000_000_000)
    }
}

/// Counter ticks of the EL2 stretches in `events` (one pCPU's, oldest
/// first) that fall inside `from..to`, and the virtual interrupts
/// injected there. A pCPU's stretches follow one another, so only the
/// first one to end after the window can reach back into it.
pub fn el2_inside(events: &[Event], from: u64, to: u64) -> (u64, u64) {
    let mut ticks = 0;
    let mut injections = 0;
    let first = events.partition_point(|e| e.time < from);
    for event in &events[first..] {
        match event.kind {
            Kind::El2 => {
                let start = event.time.saturating_sub(u64::from(event.arg));
                if start < to {
                    ticks += event.time.min(to) - start.max(from);
                }
                if event.time >= to {
                    break;
                }
            }
            Kind::IrqInjected if event.time < to => injections += 1,
            _ => {}
        }
    }
    (ticks, injections)
}

/// Attributes `job` of `partition`, which ran on the pCPUs whose events
/// are `cpus`, with `bound` its per-release terms.
pub fn attribute(partition: &str, job: LateJob, cpus: &[&[Event]], bound: &AddedResponse, scale: Scale) -> Attributed {
    let (mut partita, mut injections) = (0, 0);
    for events in cpus {
        let (ticks, injected) = el2_inside(events, job.release, job.end);
        partita += ticks;
        injections += injected;
    }
    let instructions = bound.critical + bound.sched + bound.release * injections.max(1);
    Attributed { partition: partition.to_string(), job, partita, bound: scale.ticks(instructions), host: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use partita_core::trace::NONE;

    fn el2(end: u64, ticks: u32) -> Event {
        Event { time: end, kind: Kind::El2, partition: NONE, vcpu: NONE, arg: ticks }
    }

    fn injected(time: u64) -> Event {
        Event { time, kind: Kind::IrqInjected, partition: 0, vcpu: 0, arg: 27 }
    }

    fn bound() -> AddedResponse {
        AddedResponse { partition: 0, pcpu: 1, critical: 800, sched: 0, release: 200, critical_path: "mmio".into() }
    }

    /// One instruction a tick: a bound in instructions reads as ticks.
    const SCALE: Scale = Scale { ns_per_instruction: 16, counter_hz: 62_500_000 };

    const JOB: LateJob = LateJob { job: 7, release: 10_000, start: 16_000, end: 16_100 };

    #[test]
    fn only_the_part_of_a_stretch_inside_the_window_counts() {
        // 9,900-10,100 straddles the release; 12,000-12,300 inside; 16,050-16,300 straddles the end.
        let events = [el2(9_000, 100), el2(10_100, 200), injected(10_100), el2(12_300, 300), el2(16_300, 250)];
        assert_eq!(el2_inside(&events, JOB.release, JOB.end), (100 + 300 + 50, 1));
    }

    #[test]
    fn a_window_within_the_bound_is_late_for_reasons_outside_partita() {
        let events = [injected(10_050), el2(10_300, 250), injected(11_000), el2(11_200, 200)];
        let late = attribute("rtos", JOB, &[&events], &bound(), SCALE);
        assert_eq!((late.partita, late.bound), (450, 800 + 2 * 200));
        assert!(!late.over_bound());
        assert_eq!((late.window(), late.rest()), (6_100, 5_650));
    }

    #[test]
    fn a_late_job_reads_as_both_shares() {
        let events = [injected(10_050), el2(10_300, 250)];
        let mut late = attribute("rtos", JOB, &[&events], &bound(), SCALE);
        assert_eq!(late.describe(62_500_000, false), "window 97.6 us: Partita 4.0 us (bound 16.0 us)");
        assert!(late.describe(62_500_000, true).ends_with("(bound 16.0 us), host: unknown"));
        late.host = Some(HostShare { vcpu_delay_ns: 90_000, main_loop_delay_ns: 1_500, steal_ns: 0, span_ns: 0 });
        assert_eq!(
            late.describe(62_500_000, true),
            "window 97.6 us: Partita 4.0 us (bound 16.0 us), host: vCPU waited 90.0 us, main loop 1.5 us, steal 0.0 us"
        );
    }

    #[test]
    fn a_window_holding_more_el2_time_than_promised_is_partita_s_defect() {
        let events = [injected(10_050), el2(10_300, 250), el2(14_000, 3_000)];
        let late = attribute("rtos", JOB, &[&events], &bound(), SCALE);
        assert_eq!((late.partita, late.bound), (3_250, 1_000));
        assert!(late.over_bound());
    }
}
