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
//!
//! On the wall clock an EL2 stretch is host time: it holds every moment
//! the pCPU's QEMU thread was off its host core while at EL2 (waiting for
//! a core, or asleep on QEMU's big lock for a GIC, timer or counter
//! access). There Partita is granted the thread's whole off-CPU time in
//! the window before its share is set against the bound
//! ([`over_bound_after_grant`]).

use crate::host_share::HostShare;
use crate::status::LateJob;
use partita_core::config::response::{AddedResponse, ResponseCosts};
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
    /// Partita spent longer in the window than it promised, after the
    /// host's off-CPU time is granted to it ([`over_bound_after_grant`]).
    pub fn over_bound(&self, counter_hz: u64) -> bool {
        over_bound_after_grant(self.partita, self.bound, self.off_cpu(counter_hz))
    }

    /// The vCPU threads' off-CPU time in the window, in counter ticks
    /// rounded up; `None` where the host's share is unknown.
    pub fn off_cpu(&self, counter_hz: u64) -> Option<u64> {
        let ticks = |ns: u64| (u128::from(ns) * u128::from(counter_hz)).div_ceil(1_000_000_000);
        self.host.map(|h| u64::try_from(ticks(h.vcpu_off_cpu_ns)).unwrap_or(u64::MAX))
    }

    /// Partita's share less the off-CPU time granted: the EL2 time its
    /// pCPU surely executed in the window.
    pub fn executed(&self, counter_hz: u64) -> u64 {
        executed_at_least(self.partita, self.off_cpu(counter_hz))
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

/// The EL2 time a pCPU surely executed, of `partita` ticks measured at EL2
/// while its thread was off a host core for `off_cpu` ticks of the window
/// (`None`: not known, nothing granted).
pub fn executed_at_least(partita: u64, off_cpu: Option<u64>) -> u64 {
    partita - off_cpu.map_or(0, |off| off.min(partita))
}

/// Whether a late job is Partita's defect: its share `partita` of the
/// window, less all of the vCPU threads' off-CPU time `off_cpu` there,
/// still exceeds its `bound` (all in counter ticks).
///
/// On the wall clock the EL2 stretches are host time, and the pCPU's
/// thread may have been off its core in any of them: waiting for one (run
/// delay) or asleep on QEMU's big lock (which no run delay shows). The
/// samples are 1 ms apart and say nothing of where in a sample the thread
/// was off, so all of it is granted to Partita: an upper bound of the
/// host's part, which makes `partita - min(partita, off_cpu)` a lower
/// bound of the EL2 time executed, and a job over the bound by it surely
/// Partita's. With `off_cpu` unknown (`None`: in guest time, where the
/// host takes nothing, or where the samples do not cover the window), the
/// whole share counts.
pub fn over_bound_after_grant(partita: u64, bound: u64, off_cpu: Option<u64>) -> bool {
    executed_at_least(partita, off_cpu) > bound
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
    /// In a run under `icount`, with `costs` from the board's profile.
    pub fn of_run(costs: &ResponseCosts, icount: Option<u32>, counter_hz: u64) -> Self {
        Scale { ns_per_instruction: icount.map_or(costs.ns_per_instruction, |shift| 1 << shift), counter_hz }
    }

    pub fn ticks(&self, instructions: u64) -> u64 {
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
        assert!(!late.over_bound(62_500_000));
        assert_eq!((late.window(), late.rest()), (6_100, 5_650));
    }

    #[test]
    fn a_late_job_reads_as_both_shares() {
        let events = [injected(10_050), el2(10_300, 250)];
        let mut late = attribute("rtos", JOB, &[&events], &bound(), SCALE);
        assert_eq!(late.describe(62_500_000, false), "window 97.6 us: Partita 4.0 us (bound 16.0 us)");
        assert!(late.describe(62_500_000, true).ends_with("(bound 16.0 us), host: unknown"));
        late.host = Some(HostShare {
            vcpu_delay_ns: 90_000,
            vcpu_off_cpu_ns: 95_000,
            main_loop_delay_ns: 1_500,
            steal_ns: 0,
            span_ns: 0,
        });
        assert_eq!(
            late.describe(62_500_000, true),
            "window 97.6 us: Partita 4.0 us (bound 16.0 us), host: vCPU off-CPU 95.0 us (waited 90.0 us), main loop \
             1.5 us, steal 0.0 us"
        );
    }

    #[test]
    fn a_window_holding_more_el2_time_than_promised_is_partita_s_defect() {
        let events = [injected(10_050), el2(10_300, 250), el2(14_000, 3_000)];
        let late = attribute("rtos", JOB, &[&events], &bound(), SCALE);
        assert_eq!((late.partita, late.bound), (3_250, 1_000));
        assert!(late.over_bound(62_500_000));
    }

    #[test]
    fn over_the_bound_even_after_the_host_s_off_cpu_time_is_granted() {
        assert!(over_bound_after_grant(3_250, 1_000, Some(2_000)), "3,250 - 2,000 ticks still exceed 1,000");
        assert_eq!(executed_at_least(3_250, Some(2_000)), 1_250);
    }

    #[test]
    fn within_the_bound_once_the_off_cpu_time_is_granted() {
        assert!(!over_bound_after_grant(3_250, 1_000, Some(2_250)), "exactly the bound");
        assert!(!over_bound_after_grant(3_250, 1_000, Some(50_000)), "more off-CPU time than EL2 time");
        assert_eq!(executed_at_least(3_250, Some(50_000)), 0);
    }

    #[test]
    fn an_unknown_host_share_grants_nothing() {
        assert!(over_bound_after_grant(3_250, 1_000, None));
        assert!(!over_bound_after_grant(1_000, 1_000, None));
        assert_eq!(executed_at_least(3_250, None), 3_250);
    }

    #[test]
    fn a_late_job_is_granted_its_vcpu_s_off_cpu_time() {
        let events = [injected(10_050), el2(10_300, 250), el2(14_000, 3_000)];
        let mut late = attribute("rtos", JOB, &[&events], &bound(), SCALE);
        // 36 us off its core: 2,250 ticks at 62.5 MHz, leaving 1,000 executed, the bound.
        late.host = Some(HostShare { vcpu_off_cpu_ns: 36_000, ..HostShare::default() });
        assert_eq!((late.off_cpu(62_500_000), late.executed(62_500_000)), (Some(2_250), 1_000));
        assert!(!late.over_bound(62_500_000));
        // 35.99 us rounds up to the same ticks; 35.9 us leaves Partita over.
        late.host = Some(HostShare { vcpu_off_cpu_ns: 35_990, ..HostShare::default() });
        assert!(!late.over_bound(62_500_000));
        late.host = Some(HostShare { vcpu_off_cpu_ns: 35_900, ..HostShare::default() });
        assert!(late.over_bound(62_500_000));
    }
}
