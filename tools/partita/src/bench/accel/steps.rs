//! The atomic costs of each allocation, read from a run's trace and the
//! requesting guest's log (Ker-ONE Table 4).
//!
//! The guest stamps the counter just before the write that asks for a PRR
//! and again once that write has gone through; Partita's trace stamps the
//! same counter at the request, at the manager's decision after each event
//! and at the end of each action it carries out. Following one request
//! from handle to handle (a request's, then that of the logic's interrupt
//! its stop or download raised) splits its latency into Table 4's terms,
//! whatever path it took.

use partita_core::fabric::manager::Path;
use partita_core::trace::{AccelStep, Event, Kind, Trace};

/// Table 4's terms, and the two resumes this hypervisor tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cost {
    /// The guest's write until the manager has its request.
    Trap,
    /// The request until the manager's decision.
    Search,
    /// A decision until the client is connected (with the disconnection of
    /// the PRR's previous client).
    Assign,
    /// A decision until the download is handed to the PCAP.
    AssignReconfig,
    /// A decision until the running accelerator is asked to stop.
    Preempt,
    /// The logic's interrupt (a download over, a stop) until the manager
    /// takes it: how late the fabric's pCPU handled it.
    PlIrq,
    /// The end of a download until its client is connected.
    IrqPcap,
    /// A stop until the manager's decision on it (the preempted client's
    /// context is saved as it is disconnected, in the action that follows).
    IrqStop,
    /// The connection until the guest's write returns, on the pCPU that
    /// connected it (Path 1).
    Resume,
    /// The connection, made on the fabric's pCPU, until the guest's stalled
    /// write returns on its own.
    Wake,
}

impl Cost {
    pub const ALL: [Cost; 10] = [
        Cost::Trap,
        Cost::Search,
        Cost::Assign,
        Cost::AssignReconfig,
        Cost::Preempt,
        Cost::PlIrq,
        Cost::IrqPcap,
        Cost::IrqStop,
        Cost::Resume,
        Cost::Wake,
    ];

    /// Ker-ONE's name of the term.
    pub fn name(self) -> &'static str {
        match self {
            Cost::Trap => "T_trap",
            Cost::Search => "T_search",
            Cost::Assign => "T_solution1 (assign)",
            Cost::AssignReconfig => "T_solution2 (assign + reconfig)",
            Cost::Preempt => "T_solution3 (preempt)",
            Cost::PlIrq => "T_PL_irq",
            Cost::IrqPcap => "T_irq_pcap",
            Cost::IrqStop => "T_irq_stop",
            Cost::Resume => "T_resume",
            Cost::Wake => "T_resume (from the fabric's pCPU)",
        }
    }
}

/// One guest request: its write began at `t0` and went through at `t1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write {
    pub t0: u64,
    pub t1: u64,
}

/// One request followed through the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// The partition's device index.
    pub device: u8,
    pub path: Path,
    /// The guest's write, start to end, when its log has it.
    pub write: Option<Write>,
    /// What the trace splits it into, in ticks.
    pub costs: Vec<(Cost, u64)>,
    /// From the request to the connection, as Partita measured it.
    pub asked_to_connected: u64,
}

/// Every connection of `partition`'s devices in `trace`, followed back to
/// its request and matched with the guest's `writes`.
pub fn allocations(trace: &Trace, partition: u8, writes: &[Write]) -> Vec<Allocation> {
    let mut all = Vec::new();
    for connect in trace.cpus.iter().flatten().filter(|e| e.kind == Kind::AccelConnect && e.partition == partition) {
        let Some(path) = Path::ALL.get((connect.arg >> 24) as usize).copied() else { continue };
        let latency = u64::from(connect.arg & 0xff_ffff);
        let asked = connect.time.saturating_sub(latency);
        let write = writes.iter().copied().find(|w| w.t0 <= asked && asked <= w.t1);
        let costs = follow(trace, connect, asked, write).unwrap_or_default();
        all.push(Allocation { device: connect.vcpu, path, write, costs, asked_to_connected: latency });
    }
    all.sort_by_key(|a| a.write.map_or(u64::MAX, |w| w.t0));
    all
}

/// Where an event sits: its CPU and index in that CPU's list.
type At = (usize, usize);

/// Table 4's terms of the request that ended in `connect`, asked at
/// `asked`; `None` if the trace lost part of its way.
fn follow(trace: &Trace, connect: &Event, asked: u64, write: Option<Write>) -> Option<Vec<(Cost, u64)>> {
    let request = find(trace, |e: &Event| {
        e.kind == Kind::AccelRequest && e.partition == connect.partition && e.vcpu == connect.vcpu && e.time == asked
    })?;
    let mine = |e: &Event| e.partition == connect.partition && e.vcpu == connect.vcpu;
    let mut costs = Vec::new();
    if let Some(w) = write {
        costs.push((Cost::Trap, asked.saturating_sub(w.t0)));
    }
    // What started the handle being read, and when.
    let (mut at, mut start, mut trigger) = (request, asked, None);
    // A request, at most a stop, at most a download: three handles.
    for _ in 0..3 {
        let steps = handle(trace, at);
        let decided = steps.iter().find(|s| s.0 == AccelStep::Decided)?.1;
        match trigger {
            None => costs.push((Cost::Search, decided - start)),
            Some(AccelStep::Stopped) => costs.push((Cost::IrqStop, decided - start)),
            _ => {}
        }
        if let Some(&(_, connected, _)) = steps.iter().find(|s| s.0 == AccelStep::Connected && mine(&s.2)) {
            costs.push(match trigger {
                // The handling of a download's end runs to the connection.
                Some(AccelStep::Reconfigured) => (Cost::IrqPcap, connected - start),
                _ => (Cost::Assign, connected - decided),
            });
            if let Some(w) = write {
                let resume = if at.0 == request.0 { Cost::Resume } else { Cost::Wake };
                costs.push((resume, w.t1.saturating_sub(connected)));
            }
            return Some(costs);
        }
        let &(step, sent, event) =
            steps.iter().find(|s| matches!(s.0, AccelStep::StopAsked | AccelStep::ReconfigStarted))?;
        let (cost, answer) = match step {
            AccelStep::StopAsked => (Cost::Preempt, AccelStep::Stopped),
            _ => (Cost::AssignReconfig, AccelStep::Reconfigured),
        };
        costs.push((cost, sent - decided));
        at = find(trace, |e: &Event| {
            e.kind == Kind::AccelStep
                && e.vcpu == event.vcpu
                && e.time >= sent
                && AccelStep::from_arg(e.arg).is_some_and(|(s, _)| s == answer)
        })?;
        let interrupt = trace.cpus[at.0][at.1];
        costs.push((Cost::PlIrq, AccelStep::from_arg(interrupt.arg)?.1));
        (start, trigger) = (interrupt.time, Some(answer));
    }
    None
}

/// The earliest event that `is_it`.
fn find(trace: &Trace, is_it: impl Fn(&Event) -> bool) -> Option<At> {
    let mut found: Option<(At, u64)> = None;
    for (cpu, events) in trace.cpus.iter().enumerate() {
        if let Some(i) = events.iter().position(&is_it) {
            if found.is_none_or(|(_, time)| events[i].time < time) {
                found = Some(((cpu, i), events[i].time));
            }
        }
    }
    found.map(|(at, _)| at)
}

/// The manager's steps that follow the event at `at` on its CPU, up to the
/// next request or interrupt of the logic: (step, time, the event).
fn handle(trace: &Trace, (cpu, index): At) -> Vec<(AccelStep, u64, Event)> {
    let mut steps = Vec::new();
    for event in &trace.cpus[cpu][index + 1..] {
        match event.kind {
            Kind::AccelStep => {
                let Some((step, _)) = AccelStep::from_arg(event.arg) else { continue };
                if matches!(step, AccelStep::Reconfigured | AccelStep::Stopped | AccelStep::LogicEvent) {
                    break;
                }
                steps.push((step, event.time, *event));
            }
            Kind::AccelRequest => break,
            _ => {}
        }
    }
    steps
}
