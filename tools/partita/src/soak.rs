//! `partita soak`: the demo's system for minutes under Linux load, then
//! checked from the guests' own counters (`demo:` lines, see
//! [`crate::status`]), Partita's health-monitor log and the trace.
//!
//! The checks, each a violation when it fails:
//! - the RTOS's control task missed no deadline;
//! - Linux received the RTOS's telemetry with no number lost or repeated
//!   and no torn slot;
//! - no accelerator allocation in the trace took longer than the bound
//!   `partita check` analyses for its device, and every job's output was
//!   right (the RTOS compares with software; Linux sees no error bit);
//! - the timed outputs' largest error E is within the target (1 counter
//!   tick under `-icount`; under wall-clock time only when one is given,
//!   since guest time is then the host's and E is reported);
//! - the health monitor recorded no event (the demo expects none).
//!
//! The same analysis makes the demo's `summary.md` ([`crate::summary`]).
//!
//! Under wall-clock time these figures include the host's scheduling of
//! QEMU's threads; the soak isolates the RTOS's emulated core by default
//! ([`crate::isolate`]), which narrows that share without removing it, and
//! measures it for every late job beside Partita's ([`crate::host_share`]).

use crate::attribution;
use crate::host_share::{self, HostRecord};
use crate::profile;
use crate::status::Counters;
use crate::trace::stream::Stream;
use crate::trace::{self as host_trace, timed_io};
use crate::units;
use anyhow::Result;
use partita_core::config::allocation::{device_latencies, Wait};
use partita_core::config::model::System;
use partita_core::config::response;
use partita_core::trace::Trace;
use partita_core::trace::{AccelStep, Event, Kind};
use std::fmt::Write as _;
use std::path::Path;

/// The largest latency an accelerator connection's trace event can carry
/// (24 bits of counter ticks, `partita_core::trace::accel_connect_arg`).
const LATENCY_FIELD_MAX: u64 = 0xff_ffff;

/// An accelerator allocation in the trace: from its request to its
/// connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub partition: String,
    pub device: u8,
    /// The request's time, in counter ticks.
    pub request: u64,
    /// From the request to the connection, in counter ticks.
    pub ticks: u64,
    /// The analysed L_alloc (WCET) in ticks, when the device has one.
    pub bound: Option<u64>,
    /// Of `ticks`, those the fabric's pCPU did not execute (its `Resumed`
    /// steps inside the window): other cores' turns under `-icount`, the
    /// host's on its clock.
    pub absent: u64,
}

impl Allocation {
    /// Over its bound once the time the fabric's pCPU did not execute is
    /// granted: that time is no path of Partita's.
    pub fn over_bound(&self) -> bool {
        self.bound.is_some_and(|bound| self.partita() > bound)
    }

    /// Longer than its bound, before anything is granted.
    pub fn late(&self) -> bool {
        self.bound.is_some_and(|bound| self.ticks > bound)
    }

    /// Partita's share of the window: all of it but what the fabric's pCPU
    /// did not execute.
    pub fn partita(&self) -> u64 {
        self.ticks.saturating_sub(self.absent)
    }
}

/// What the fabric's pCPU did not execute while something of the logic
/// was due: the ticks of `[from, to]` that both an absence (`absences`:
/// each stretch's end and length) and a logic event's lateness (`due`:
/// each event's time and how late it came) cover. Only that time delayed
/// an allocation; an absence while nothing was due delayed nothing.
fn absent_while_due(absences: &[(u64, u64)], due: &[(u64, u64)], from: u64, to: u64) -> u64 {
    let mut late: Vec<(u64, u64)> = due
        .iter()
        .map(|&(end, length)| (end.saturating_sub(length).max(from), end.min(to)))
        .filter(|(start, end)| start < end)
        .collect();
    late.sort_unstable();
    // Merged, so that two events late across the same absence count it once.
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (start, end) in late {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged.iter().map(|&(start, end)| covered(absences, start, end)).sum()
}

/// The ticks of `[from, to]` that `spans` (each an end and a length) cover.
fn covered(spans: &[(u64, u64)], from: u64, to: u64) -> u64 {
    spans.iter().map(|&(end, length)| end.min(to).saturating_sub(end.saturating_sub(length).max(from))).sum()
}

/// One check's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    /// The figures behind it.
    pub detail: String,
}

/// Everything a run left that the checks read.
#[derive(Clone, Debug, Default)]
pub struct Analysis {
    pub counters: Counters,
    /// Per pCPU, events the trace overwrote; empty without a trace.
    pub lost_events: Vec<u64>,
    /// Counter frequency of the trace, Hz.
    pub counter_hz: u64,
    /// Accelerator allocations in the trace.
    pub allocations: Vec<Allocation>,
    /// Timed outputs in the trace, per partition that asked for them.
    pub timed_io: Vec<(String, timed_io::Errors)>,
    /// Copies of the rings merged while the run went; 0: the end's only.
    pub copies: u32,
    /// Per partition: times Partita switched one of its vCPUs out.
    pub switched_out: Vec<u64>,
    /// Counter ticks between the trace's first event and its last.
    pub span_ticks: u64,
    /// The run kept guest time (-icount): there every check holds exactly.
    pub guest_time: bool,
    /// Every late job the trace could attribute, in report order.
    pub late: Vec<attribution::Attributed>,
    /// Late jobs reported but not attributed (no bound on this board, or
    /// no trace).
    pub unattributed: usize,
    /// Connections timed from before their device's previous connection,
    /// which answered every request made until then: a stale request time.
    pub mistimed: usize,
    /// How the host's share of the late windows was measured, or why there
    /// is none.
    pub host_note: Option<String>,
}

/// True when a connection's `latency` reaches back past the device's
/// previous connection, `since` ticks before. A full field says only
/// "at least", which proves nothing against a longer gap.
fn reaches_back_too_far(latency: u64, since: u64) -> bool {
    latency > since && (latency < LATENCY_FIELD_MAX || since < LATENCY_FIELD_MAX)
}

impl Analysis {
    /// Reads `out_dir`'s logs and trace for `system`; the trace's figures
    /// come from `stream` instead when the run copied its rings as it went.
    /// `icount`: the run's -icount shift, if it kept guest time; `host`:
    /// what a wall-clock run sampled of the host.
    pub fn of(
        out_dir: &Path,
        system: &System,
        stream: Option<&Stream>,
        icount: Option<u32>,
        host: Option<&HostRecord>,
    ) -> Result<Self> {
        let names: Vec<String> = system.partitions.iter().map(|p| p.name.clone()).collect();
        let mut counters = Counters::new(&names);
        for (i, name) in names.iter().enumerate() {
            let log = std::fs::read_to_string(out_dir.join(format!("{name}.log"))).unwrap_or_default();
            counters.guest_log(i, &log);
        }
        let hm = std::fs::read_to_string(out_dir.join(crate::run::HM_LOG)).unwrap_or_default();
        for line in hm.lines() {
            counters.hypervisor_text(&format!("hm: {line}"));
        }
        let mut analysis = Analysis { counters, guest_time: icount.is_some(), ..Analysis::default() };
        let trace_file = out_dir.join(host_trace::TRACE_FILE);
        if let Some(stream) = stream {
            analysis.copies = stream.copies;
            let trace = stream.trace();
            analysis.add_trace(&names, &trace, system);
            analysis.add_timed_outputs(&names, &trace, system, icount);
            analysis.attribute(&trace, system, icount, host);
        } else if trace_file.exists() {
            let (meta, trace) = host_trace::read_file(&trace_file)?;
            analysis.add_trace(&meta.partitions, &trace, system);
            analysis.add_timed_outputs(&meta.partitions, &trace, system, icount);
            analysis.attribute(&trace, system, icount, host);
        }
        analysis.host_note = match (icount, host) {
            (Some(_), _) => Some(host_share::GUEST_TIME_NOTE.into()),
            (None, Some(host)) => Some(host.note(&host.clock.alignment(analysis.counter_hz))),
            (None, None) => None,
        };
        analysis.unattributed = analysis.counters.late_jobs.iter().map(Vec::len).sum::<usize>() - analysis.late.len();
        Ok(analysis)
    }

    /// Sets each late job the guests reported against Partita's share of
    /// its window ([`attribution`]), and the host's share beside it.
    fn attribute(&mut self, trace: &Trace, system: &System, icount: Option<u32>, host: Option<&HostRecord>) {
        let Some(costs) = profile::for_board(&system.platform.board).ok().and_then(|p| p.response) else { return };
        let bounds = response::added_responses(system, &costs);
        let scale = attribution::Scale::of_run(&costs, icount, trace.counter_hz);
        let alignment = host.map(|host| (host, host.clock.alignment(trace.counter_hz)));
        for (p, jobs) in self.counters.late_jobs.iter().enumerate() {
            let (Some(part), Some(bound)) = (system.partitions.get(p), bounds.iter().find(|b| b.partition == p)) else {
                continue;
            };
            let migrations = part.migrate.iter().flat_map(|m| m.to.iter());
            let pcpus: Vec<u32> = part.vcpus.iter().chain(migrations).copied().collect();
            let cpus: Vec<&[Event]> =
                pcpus.iter().filter_map(|&pcpu| trace.cpus.get(pcpu as usize).map(Vec::as_slice)).collect();
            for &job in jobs {
                let mut late = attribution::attribute(&part.name, job, &cpus, bound, scale);
                late.host = alignment.as_ref().and_then(|(host, alignment)| {
                    host.share(alignment, (job.release, job.end), &pcpus, trace.counter_hz)
                });
                self.late.push(late);
            }
        }
    }

    /// The timed outputs' errors per partition, each output that began late
    /// granted what the EL2 stretch in its alarm's way held past Partita's
    /// bound on its pCPU ([`timed_io::Grant`]), where the board has one.
    fn add_timed_outputs(&mut self, partitions: &[String], trace: &Trace, system: &System, icount: Option<u32>) {
        let costs = profile::for_board(&system.platform.board).ok().and_then(|p| p.response);
        let bounds = costs.as_ref().map(|costs| response::added_responses(system, costs)).unwrap_or_default();
        let lead = system.timed_io.as_ref().map(|t| t.lead_us.saturating_mul(trace.counter_hz) / 1_000_000);
        let grant = |partition: u8| {
            let scale = attribution::Scale::of_run(costs.as_ref()?, icount, trace.counter_hz);
            let bound = bounds.iter().find(|b| b.partition == usize::from(partition))?;
            Some(timed_io::Grant { lead: lead?, el2_bound: scale.ticks(bound.critical) })
        };
        for errors in timed_io::errors_per_partition(&timed_io::operations(trace), grant) {
            let name = partitions.get(usize::from(errors.partition)).cloned();
            self.timed_io.push((name.unwrap_or_else(|| format!("#{}", errors.partition)), errors));
        }
    }

    /// The accelerator connections, timed outputs, the switches of vCPUs
    /// out of their pCPU and the lost events of `trace`.
    fn add_trace(&mut self, partitions: &[String], trace: &Trace, system: &System) {
        self.lost_events = trace.lost.clone();
        self.counter_hz = trace.counter_hz;
        let first = trace.cpus.iter().filter_map(|events| events.first()).map(|e| e.time).min();
        let last = trace.cpus.iter().filter_map(|events| events.last()).map(|e| e.time).max();
        self.span_ticks = last.zip(first).map_or(0, |(last, first)| last.saturating_sub(first));
        let costs = profile::for_board(&system.platform.board).ok().and_then(|p| p.accel);
        let bounds = device_latencies(system, costs.as_ref());
        // The analysed L_alloc(WCET) in counter ticks, rounded up.
        let bound_of = |partition: usize, device: usize| {
            bounds.iter().find(|b| b.partition == partition && b.device == device).and_then(|b| match &b.wait {
                Wait::Bounded { latency: Some(bound), .. } => {
                    Some(bound.worst.saturating_mul(trace.counter_hz).div_ceil(1_000_000_000))
                }
                _ => None,
            })
        };
        let name = |p: usize| partitions.get(p).cloned().unwrap_or_else(|| format!("#{p}"));
        let steps = |wanted: &[AccelStep]| -> Vec<(u64, u64)> {
            trace
                .cpus
                .iter()
                .flatten()
                .filter(|e| e.kind == Kind::AccelStep)
                .filter_map(|e| {
                    AccelStep::from_arg(e.arg)
                        .filter(|(step, _)| wanted.contains(step))
                        .map(|(_, ticks)| (e.time, ticks))
                })
                .collect()
        };
        let absences = steps(&[AccelStep::Resumed]);
        let due = steps(&[AccelStep::Reconfigured, AccelStep::Stopped, AccelStep::LogicEvent]);
        let mut connections: Vec<_> = trace.cpus.iter().flatten().filter(|e| e.kind == Kind::AccelConnect).collect();
        connections.sort_by_key(|e| e.time);
        let mut previous = std::collections::BTreeMap::new();
        for event in connections {
            let p = usize::from(event.partition);
            // The connection's argument: the path in its top byte, the ticks since the request below.
            let latency = u64::from(event.arg) & LATENCY_FIELD_MAX;
            self.allocations.push(Allocation {
                partition: name(p),
                device: event.vcpu,
                request: event.time.saturating_sub(latency),
                ticks: latency,
                bound: bound_of(p, usize::from(event.vcpu)),
                absent: absent_while_due(&absences, &due, event.time.saturating_sub(latency), event.time),
            });
            if let Some(before) = previous.insert((p, event.vcpu), event.time) {
                self.mistimed += usize::from(reaches_back_too_far(latency, event.time - before));
            }
        }
        self.switched_out = vec![0; partitions.len()];
        for event in trace.cpus.iter().flatten().filter(|e| e.kind == Kind::VcpuOut) {
            if let Some(n) = self.switched_out.get_mut(usize::from(event.partition)) {
                *n += 1;
            }
        }
    }

    fn num(&self, partition: usize, key: &str) -> Option<i64> {
        self.counters.number(partition, key)
    }

    /// The partition that prints `key`, the first if several do.
    fn with_key(&self, key: &str) -> Option<usize> {
        (0..self.counters.names.len()).find(|&i| self.counters.get(i, key).is_some())
    }

    /// The checks, in the order of the module comment. `tio_target` is the
    /// largest E allowed, in counter ticks; `None` reports E only.
    pub fn checks(&self, tio_target: Option<u64>) -> Vec<Check> {
        let mut checks = Vec::new();
        let name = |i: usize| self.counters.names[i].clone();
        // Deadlines.
        checks.push(match self.with_key("misses") {
            Some(i) => {
                let (misses, jobs) = (self.num(i, "misses").unwrap_or(-1), self.num(i, "jobs").unwrap_or(0));
                // On the host's clock a late job whose window held no more of
                // Partita than it promised, once granted its vCPU's off-CPU
                // time, was late for the host's reasons, and every one must
                // be accounted for; in guest time none may be.
                let over = self.late.iter().filter(|l| l.over_bound(self.counter_hz)).count();
                let accounted = self.late.len() as i64 == misses && self.unattributed == 0 && over == 0;
                Check {
                    name: "deadline misses",
                    ok: jobs > 0 && (misses == 0 || (!self.guest_time && accounted)),
                    detail: format!(
                        "{}: {misses} of {jobs} jobs, response up to {} us, start up to {} us after release{}{}",
                        name(i),
                        self.counters.get(i, "resp_max_us").unwrap_or("?"),
                        self.counters.get(i, "late_max_us").unwrap_or("?"),
                        // On an exclusive pCPU, a late start with no switch out
                        // was the host's doing: QEMU's thread of that pCPU waited.
                        self.switched_out
                            .get(i)
                            .map_or(String::new(), |n| format!("; Partita switched its vCPU out {n} time(s)")),
                        self.late_text(misses),
                    ),
                }
            }
            None => Check { name: "deadline misses", ok: false, detail: "no partition reported its jobs".into() },
        });
        // The channel.
        checks.push(match (self.with_key("sent"), self.with_key("received")) {
            (Some(tx), Some(rx)) => {
                let get = |key| self.num(rx, key).unwrap_or(-1);
                let (received, lost, dup, bad) = (get("received"), get("lost"), get("dup"), get("bad"));
                Check {
                    name: "channel messages",
                    ok: received > 0 && lost == 0 && dup == 0 && bad == 0,
                    detail: format!(
                        "{} sent {} (held back while the ring was full: {} periods), {} received {received}: lost {lost}, duplicated {dup}, torn {bad}",
                        name(tx),
                        self.counters.get(tx, "sent").unwrap_or("?"),
                        self.counters.get(tx, "full").unwrap_or("?"),
                        name(rx)
                    ),
                }
            }
            _ => Check { name: "channel messages", ok: false, detail: "no sender or no receiver reported".into() },
        });
        // The accelerators.
        let (over, within) = self.late_allocations();
        let bounded: Vec<&Allocation> = self.allocations.iter().filter(|a| a.bound.is_some()).collect();
        let worst = bounded.iter().max_by_key(|a| a.ticks).map_or((0, 0), |a| (a.ticks, a.absent));
        let bound = self.allocations.iter().filter_map(|a| a.bound).max().unwrap_or(0);
        let rtos_bad = self.with_key("accel_bad").map(|i| (i, self.num(i, "accel_bad").unwrap_or(-1)));
        let gpos_err = self.with_key("accel_err").map(|i| (i, self.num(i, "accel_err").unwrap_or(-1)));
        let jobs: Vec<String> = (0..self.counters.names.len())
            .filter_map(|i| self.counters.get(i, "accel_jobs").map(|j| format!("{} {j}", name(i))))
            .collect();
        checks.push(Check {
            name: "accelerator allocations",
            ok: !self.allocations.is_empty()
                && over.is_empty()
                && self.mistimed == 0
                && rtos_bad.is_none_or(|(_, n)| n == 0)
                && gpos_err.is_none_or(|(_, n)| n == 0),
            detail: format!(
                "{} allocation(s) in the trace, {} with a bound: {} over it{}, {} late only by time the fabric's pCPU was not run (worst {:.1} us{}{}, bound {:.1} us){}; jobs {}; wrong results {}, errors {}",
                self.allocations.len(),
                bounded.len(),
                over.len(),
                self.over_by_partition(&over),
                within.len(),
                self.micros(worst.0),
                if worst.0 >= LATENCY_FIELD_MAX { " or more: the trace's field is full" } else { "" },
                if worst.1 == 0 {
                    String::new()
                } else {
                    format!(", {:.1} us of it the fabric's pCPU not run", self.micros(worst.1))
                },
                self.micros(bound),
                if self.mistimed == 0 {
                    String::new()
                } else {
                    format!("; {} timed from before their device's previous connection", self.mistimed)
                },
                if jobs.is_empty() { "none".into() } else { jobs.join(", ") },
                rtos_bad.map_or("-".into(), |(_, n)| n.to_string()),
                gpos_err.map_or("-".into(), |(_, n)| n.to_string()),
            ),
        });
        // Timed outputs.
        let refused = self.with_key("tio_err").and_then(|i| self.num(i, "tio_err")).unwrap_or(0);
        // The target holds Partita's share: an output that began in time
        // and still ended late waited for its pCPU to execute.
        let worst_e = self.timed_io.iter().map(|t| t.1.partita_max).max();
        let hz = self.counter_hz;
        let mut detail = String::new();
        for (partition, e) in &self.timed_io {
            let _ = write!(
                detail,
                "{partition}: {} outputs, E max {}, mean {}, Partita's share max {}; ",
                e.count,
                units::us_ticks(e.max, hz),
                units::us_ticks_mean(e.mean, hz),
                units::us_ticks(e.partita_max, hz)
            );
        }
        if self.timed_io.is_empty() {
            detail += "no timed output in the trace; ";
        }
        // The trace keeps E in 23 bits; the hypervisor's own count (PARTITA_TIO_STATS) does not saturate.
        if let Some(i) = self.with_key("tio_max") {
            // The guest's own frequency, or the trace's when it gives none.
            let hz = self.counters.counter_hz(i).unwrap_or(hz);
            let ticks = |key| self.num(i, key).and_then(|n| u64::try_from(n).ok());
            let shown = |key| ticks(key).map_or("?".into(), |t| units::us_ticks(t, hz));
            let _ = write!(
                detail,
                "{} by PARTITA_TIO_STATS: {} outputs, E max {}, mean {}; ",
                name(i),
                self.counters.get(i, "tio_done").unwrap_or("?"),
                shown("tio_max"),
                shown("tio_mean")
            );
        }
        detail += &match tio_target {
            Some(target) => format!("target {}", units::us_ticks(target, hz)),
            None => "no target under wall-clock time (reported)".into(),
        };
        if refused != 0 {
            detail += &format!("; a call was refused ({refused})");
        }
        checks.push(Check {
            name: "timed-I/O error",
            ok: refused == 0 && worst_e.is_some() && tio_target.is_none_or(|t| worst_e.unwrap_or(0) <= t),
            detail,
        });
        // Health.
        let events: u64 = self.counters.hm_events.iter().sum();
        let mut detail = format!("{events} event(s)");
        for (i, last) in self.counters.last_hm.iter().enumerate() {
            if let Some((event, action)) = last {
                let _ = write!(detail, "; {} last {event} ({action})", name(i));
            }
        }
        checks.push(Check { name: "health-monitor events", ok: events == 0, detail });
        checks
    }

    /// What the trace says of the late jobs: how many of each kind, and the
    /// worst of each.
    fn late_text(&self, misses: i64) -> String {
        if misses <= 0 {
            return String::new();
        }
        let us = |ticks: u64| self.micros(ticks);
        let (over, within) = self.late_kinds();
        let mut text = format!("; late jobs: {} with Partita over its bound", over.len());
        if let Some(worst) = worst_over(&over, self.counter_hz) {
            let executed = if worst.host.is_some() {
                format!(", at least {:.1} us of it executed", us(worst.executed(self.counter_hz)))
            } else {
                String::new()
            };
            let _ = write!(
                text,
                " (worst: {:.1} us at EL2{executed}, bound {:.1} us{})",
                us(worst.partita),
                us(worst.bound),
                self.host_text(worst)
            );
        }
        let _ = write!(text, ", {} within it", within.len());
        if let Some(worst) = worst_within(&within) {
            let _ = write!(
                text,
                " (worst: a {:.1} us window, {:.1} us of it at EL2, {:.1} us the guest's own and time its pCPU did not execute{})",
                us(worst.window()),
                us(worst.partita),
                us(worst.rest()),
                self.host_text(worst)
            );
        }
        let unlisted = misses - self.late.len() as i64;
        if unlisted > 0 {
            let _ = write!(text, ", {unlisted} not attributed (not reported, or no bound on this board)");
        }
        text
    }

    /// The late jobs with Partita over its bound, and those within it
    /// ([`attribution::over_bound_after_grant`]).
    fn late_kinds(&self) -> (Vec<&attribution::Attributed>, Vec<&attribution::Attributed>) {
        self.late.iter().partition(|l| l.over_bound(self.counter_hz))
    }

    /// On the wall clock the host's share is measured, and shown.
    fn host_measured(&self) -> bool {
        !self.guest_time && self.host_note.is_some()
    }

    /// `; host: ...` for a late job, where the host's share is measured.
    fn host_text(&self, late: &attribution::Attributed) -> String {
        if self.host_measured() {
            format!("; {}", host_share::HostShare::describe(late.host.as_ref()))
        } else {
            String::new()
        }
    }

    /// The report's first lines: how many late jobs of each kind, and the
    /// worst of each with both shares.
    pub fn late_lines(&self) -> Vec<String> {
        let (over, within) = self.late_kinds();
        let line = |kind: &str, jobs: &[&attribution::Attributed], worst: Option<&attribution::Attributed>| {
            let mut line = format!("Late jobs {kind}: {}", jobs.len());
            if let Some(worst) = worst {
                let describe = worst.describe(self.counter_hz, self.host_measured());
                let _ = write!(line, "; the worst, {} job {}: {describe}", worst.partition, worst.job.job);
            }
            line + "."
        };
        let mut lines = vec![
            line(
                "with Partita over its bound (Partita's defect: the verdict fails)",
                &over,
                worst_over(&over, self.counter_hz),
            ),
            line("with Partita within its bound", &within, worst_within(&within)),
        ];
        if self.unattributed > 0 {
            lines.push(format!(
                "Late jobs not attributed (no trace, or no bound on this board): {}.",
                self.unattributed
            ));
        }
        let (over, within) = self.late_allocations();
        lines.push(self.allocation_line("with Partita over its bound (Partita's defect: the verdict fails)", &over));
        lines.push(self.allocation_line("with Partita within its bound", &within));
        lines
    }

    /// The allocations longer than their bound: those still over it once
    /// the time the fabric's pCPU was not run is granted (Partita's
    /// defect), and those within it then.
    pub fn late_allocations(&self) -> (Vec<&Allocation>, Vec<&Allocation>) {
        self.allocations.iter().filter(|a| a.late()).partition(|a| a.over_bound())
    }

    /// `Late allocations <kind>: N; the worst, ...`: the one with the most
    /// of Partita's share.
    fn allocation_line(&self, kind: &str, allocations: &[&Allocation]) -> String {
        let mut line = format!("Late allocations {kind}: {}", allocations.len());
        if let Some(worst) = allocations.iter().max_by_key(|a| a.partita()) {
            let _ = write!(line, "; the worst, {}: {}", worst.partition, self.describe_allocation(worst));
        }
        line + "."
    }

    /// An allocation's window, both shares and its bound.
    pub fn describe_allocation(&self, a: &Allocation) -> String {
        format!(
            "device {} requested at {}, window {:.1} us: Partita {:.1} us, the fabric's pCPU not run {:.1} us; bound {:.1} us",
            a.device,
            units::us_ticks(a.request, self.counter_hz),
            self.micros(a.ticks),
            self.micros(a.partita()),
            self.micros(a.absent),
            self.micros(a.bound.unwrap_or(0))
        )
    }

    /// ` (rtos 1, linux 2)`: whose allocations went over their bound.
    fn over_by_partition(&self, over: &[&Allocation]) -> String {
        let counts: Vec<String> = self
            .counters
            .names
            .iter()
            .map(|name| (name, over.iter().filter(|a| &a.partition == name).count()))
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        if counts.is_empty() {
            String::new()
        } else {
            format!(" ({})", counts.join(", "))
        }
    }

    fn micros(&self, ticks: u64) -> f64 {
        if self.counter_hz == 0 {
            return 0.0;
        }
        ticks as f64 * 1e6 / self.counter_hz as f64
    }

    /// The guest time the trace covers, in seconds.
    pub fn guest_seconds(&self) -> Option<f64> {
        (self.counter_hz > 0 && self.span_ticks > 0).then(|| self.span_ticks as f64 / self.counter_hz as f64)
    }

    pub fn lost_total(&self) -> u64 {
        self.lost_events.iter().sum()
    }
}

/// The late job furthest over Partita's bound, by the EL2 time it surely
/// executed.
fn worst_over<'a>(over: &[&'a attribution::Attributed], counter_hz: u64) -> Option<&'a attribution::Attributed> {
    over.iter().copied().max_by_key(|l| l.executed(counter_hz).saturating_sub(l.bound))
}

/// The late job within Partita's bound with the longest window.
fn worst_within<'a>(within: &[&'a attribution::Attributed]) -> Option<&'a attribution::Attributed> {
    within.iter().copied().max_by_key(|l| l.window())
}

/// The checks as a Markdown table and a verdict line.
pub fn markdown(checks: &[Check]) -> String {
    let mut text = String::from("| check | verdict | figures |\n|---|---|---|\n");
    for check in checks {
        let _ = writeln!(text, "| {} | {} | {} |", check.name, if check.ok { "ok" } else { "VIOLATED" }, check.detail);
    }
    text
}

/// `soak: PASS` or `soak: FAIL (n violation(s))`.
pub fn verdict(checks: &[Check]) -> String {
    let failed = checks.iter().filter(|c| !c.ok).count();
    if failed == 0 {
        "soak: PASS".into()
    } else {
        format!("soak: FAIL ({failed} violation(s))")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_fabric_s_absence_while_its_logic_was_due_inside_the_window_is_granted() {
        // Absences ending at 150 (50 long), 220 (10), 400 (300) and 90 (20).
        let absences = [(150, 50), (220, 10), (400, 300), (90, 20)];
        // Logic due from 0 to the end of the window: 30 of the first, all
        // of the second and 180 of the third; the last ended before it.
        assert_eq!(absent_while_due(&absences, &[(300, 300)], 120, 300), 30 + 10 + 180);
        assert_eq!(absent_while_due(&absences, &[(300, 300)], 500, 600), 0);
        // Two events late over 130..=160 and 140..=230 count 130..=230
        // once: 20 of the first absence, 10 of the second, 100 of the third.
        assert_eq!(absent_while_due(&absences, &[(160, 30), (230, 90)], 120, 300), 20 + 10 + 100);
        // Nothing was due: the absences delayed nothing.
        assert_eq!(absent_while_due(&absences, &[], 120, 300), 0);
    }

    fn allocation(partition: &str, ticks: u64, bound: Option<u64>) -> Allocation {
        Allocation { partition: partition.into(), device: 0, request: 5_000, ticks, bound, absent: 0 }
    }

    fn analysis(rtos: &str, linux: &str, hm: &[&str]) -> Analysis {
        let mut counters = Counters::new(&["rtos".to_string(), "linux".to_string()]);
        counters.guest_log(0, rtos);
        counters.guest_log(1, linux);
        for line in hm {
            counters.hypervisor_text(line);
        }
        Analysis {
            counters,
            lost_events: vec![0, 0],
            counter_hz: 62_500_000,
            allocations: vec![allocation("rtos", 1000, Some(2000)), allocation("linux", 90_000, None)],
            timed_io: vec![(
                "rtos".into(),
                timed_io::Errors { partition: 0, count: 10, max: 1, mean: 0.5, partita_max: 1 },
            )],
            copies: 0,
            switched_out: vec![1, 5],
            mistimed: 0,
            span_ticks: 62_500_000,
            guest_time: false,
            late: Vec::new(),
            unattributed: 0,
            host_note: None,
        }
    }

    const RTOS: &str =
        "demo: t=1 jobs=200 misses=0 sent=10 full=0\ndemo: t=1 tio_max=1 tio_err=0 accel_jobs=9 accel_bad=0";
    const LINUX: &str = "demo: t=1 received=10 lost=0 dup=0 bad=0 accel_jobs=1 accel_err=0";

    #[test]
    fn a_clean_run_passes() {
        let checks = analysis(RTOS, LINUX, &[]).checks(Some(1));
        assert!(checks.iter().all(|c| c.ok), "{checks:?}");
        assert_eq!(verdict(&checks), "soak: PASS");
    }

    fn late_job(job: u64, partita: u64, bound: u64) -> attribution::Attributed {
        let job = crate::status::LateJob { job, release: 1_000, start: 400_000, end: 400_100 };
        attribution::Attributed { partition: "rtos".into(), job, partita, bound, host: None }
    }

    fn deadline_check(analysis: &Analysis) -> Check {
        analysis.checks(Some(1)).into_iter().find(|c| c.name == "deadline misses").unwrap()
    }

    #[test]
    fn a_late_job_fails_the_verdict_only_when_partita_went_over_its_bound() {
        let one_miss = RTOS.replace("misses=0", "misses=1");
        let mut within = analysis(&one_miss, LINUX, &[]);
        within.late = vec![late_job(7, 900, 1_022)];
        let check = deadline_check(&within);
        assert!(check.ok, "on the host's clock a late job within Partita's bound is the host's: {}", check.detail);
        assert!(check.detail.contains("0 with Partita over its bound, 1 within it"), "{}", check.detail);
        let mut over = within.clone();
        over.late = vec![late_job(7, 5_000, 1_022)];
        let check = deadline_check(&over);
        assert!(
            !check.ok && check.detail.contains("1 with Partita over its bound (worst: 80.0 us"),
            "{}",
            check.detail
        );
        // On the wall clock Partita is granted its vCPU thread's off-CPU time first.
        let off_cpu = |ns| Some(host_share::HostShare { vcpu_off_cpu_ns: ns, ..Default::default() });
        over.late[0].host = off_cpu(40_000);
        let check = deadline_check(&over);
        assert!(
            !check.ok
                && check.detail.contains("(worst: 80.0 us at EL2, at least 40.0 us of it executed, bound 16.4 us"),
            "{}",
            check.detail
        );
        over.late[0].host = off_cpu(70_000);
        let check = deadline_check(&over);
        assert!(check.ok && check.detail.contains("0 with Partita over its bound, 1 within it"), "{}", check.detail);
        // Every miss must be accounted for, and in guest time none may happen.
        let mut unreported = within.clone();
        unreported.unattributed = 1;
        assert!(!deadline_check(&unreported).ok);
        let guest = Analysis { guest_time: true, ..within };
        assert!(!deadline_check(&guest).ok, "in guest time every deadline holds");
    }

    #[test]
    fn each_violation_is_caught() {
        let misses = RTOS.replace("misses=0", "misses=2");
        let lost = LINUX.replace("lost=0", "lost=1");
        let dup = LINUX.replace("dup=0", "dup=3");
        let cases: [(&str, &str, &[&str], &str); 4] = [
            (&misses, LINUX, &[], "deadline misses"),
            (RTOS, &lost, &[], "channel messages"),
            (RTOS, &dup, &[], "channel messages"),
            (
                RTOS,
                LINUX,
                &["hm: 1 at 5 us partition linux vcpu 0 Fault detail 0x0 action Log"],
                "health-monitor events",
            ),
        ];
        for (rtos, linux, hm, failing) in cases {
            let checks = analysis(rtos, linux, hm).checks(Some(1));
            let failed: Vec<&str> = checks.iter().filter(|c| !c.ok).map(|c| c.name).collect();
            assert_eq!(failed, [failing]);
        }
        let mut slow = analysis(RTOS, LINUX, &[]);
        slow.allocations[0].ticks = 2001;
        assert!(!slow.checks(Some(1))[2].ok, "an allocation over its bound");
        // The same window, of which the fabric's pCPU was not run for 2
        // ticks: within its bound once they are granted.
        assert!(slow.late_lines().iter().any(|l| l.starts_with(
            "Late allocations with Partita over its bound (Partita's defect: the verdict fails): 1; the worst, rtos: \
             device 0 requested at 80.0 us (5000 ticks), window 32.0 us: Partita 32.0 us, the fabric's pCPU not run 0.0 us; bound 32.0 us"
        )));
        slow.allocations[0].absent = 2;
        let check = &slow.checks(Some(1))[2];
        assert!(
            check.ok && check.detail.contains("0 over it, 1 late only by time the fabric's pCPU was not run"),
            "{check:?}"
        );
        let lines = slow.late_lines();
        assert!(
            lines.contains(
                &"Late allocations with Partita over its bound (Partita's defect: the verdict fails): 0.".into()
            ),
            "{lines:?}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with("Late allocations with Partita within its bound: 1; the worst, rtos:")),
            "{lines:?}"
        );
        let late = analysis(RTOS, LINUX, &[]);
        assert!(!late.checks(Some(0))[3].ok && late.checks(None)[3].ok, "E against the target, or reported");
        let mut stale = analysis(RTOS, LINUX, &[]);
        stale.mistimed = 1;
        let check = &stale.checks(Some(1))[2];
        assert!(!check.ok && check.detail.contains("1 timed from before"), "{check:?}");
    }

    #[test]
    fn the_timed_output_error_reads_in_microseconds_with_its_ticks() {
        let mut run = analysis(RTOS, LINUX, &[]);
        run.timed_io[0].1 = timed_io::Errors { partition: 0, count: 10, max: 121_078, mean: 2715.9, partita_max: 1 };
        let check = run.checks(Some(1)).into_iter().find(|c| c.name == "timed-I/O error").unwrap();
        assert!(
            check.detail.starts_with(
                "rtos: 10 outputs, E max 1937.2 us (121078 ticks), mean 43.5 us (2715.9 ticks), Partita's share \
                 max 0.016 us (1 tick); rtos by PARTITA_TIO_STATS: ? outputs, E max 0.016 us (1 tick), mean ?;"
            ) && check.detail.ends_with("target 0.016 us (1 tick)"),
            "{}",
            check.detail
        );
        // The guest's own counter frequency converts its own figures.
        let rtos = RTOS.replace("tio_max=1", "tio_max=1000 tio_mean=500 counter_hz=1000000");
        let check = analysis(&rtos, LINUX, &[]).checks(None).into_iter().find(|c| c.name == "timed-I/O error").unwrap();
        assert!(check.detail.contains("E max 1000.0 us (1000 ticks), mean 500.0 us (500 ticks)"), "{}", check.detail);
    }

    #[test]
    fn a_connection_timed_from_before_the_previous_one_is_stale() {
        assert!(!reaches_back_too_far(100, 5_000), "within the gap");
        assert!(!reaches_back_too_far(5_000, 5_000), "exactly the gap");
        assert!(reaches_back_too_far(5_001, 5_000));
        // A full field is only a lower bound: stale only if the gap is shorter.
        assert!(reaches_back_too_far(LATENCY_FIELD_MAX, 1_000));
        assert!(!reaches_back_too_far(LATENCY_FIELD_MAX, LATENCY_FIELD_MAX + 1));
    }
}
