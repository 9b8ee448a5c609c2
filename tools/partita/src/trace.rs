//! `partita trace OUT_DIR`: turns the event trace that `partita run` left in
//! `OUT_DIR/trace.bin` into a Perfetto timeline, a Gantt chart of vCPUs per
//! pCPU and a histogram of interrupt-injection latency.
//!
//! `trace.bin` is a host header followed by the machine's trace memory as
//! it was (decoded by `partita_core::trace`, the same code that wrote it):
//!
//! ```text
//! 0   8 bytes   magic "PTTRHOST"
//! 8   u32 LE    header version (1)
//! 12  u32 LE    length N of the JSON description
//! 16  N bytes   JSON: {"config": name, "cpus": pCPU count,
//!                      "partitions": [names in configuration order]}
//!     0-7 zero bytes, so that the trace memory starts 8-byte aligned
//!     the trace memory, byte for byte
//! ```

pub mod slots;
pub mod stream;
pub mod timed_io;

use crate::chart::palette::{BLUE, BROWN, GRAY, GREEN, ORANGE, PINK, PURPLE, RED};
use crate::chart::{self, Key, Mark, Strip};
use anyhow::{bail, ensure, Context, Result};
use partita_core::timedio;
use partita_core::trace::{decode, AccelStep, Event, Kind, OutReason, Trace, NONE};
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

pub const FILE_MAGIC: [u8; 8] = *b"PTTRHOST";
pub const FILE_VERSION: u32 = 1;
const FIXED_HEADER: usize = 16;
pub const TRACE_FILE: &str = "trace.bin";
pub const JSON_FILE: &str = "trace.json";
pub const GANTT_FILE: &str = "gantt.svg";
pub const LATENCY_FILE: &str = "irq-latency.svg";

/// What the host knows about the machine that wrote the trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceMeta {
    /// The configuration's name (`<out>/<config>`).
    pub config: String,
    /// Physical CPUs of the machine.
    pub cpus: u32,
    /// Partition names in configuration order: an event's partition number indexes it.
    pub partitions: Vec<String>,
    /// The configuration's cyclic plans, to place each traced slot start.
    #[serde(default)]
    pub plans: Vec<partita_core::config::model::Plan>,
    /// The pCPU that runs the emulated fabric, where it has one: no vCPU
    /// runs there, and the Gantt names it.
    #[serde(default)]
    pub fabric_cpu: Option<u32>,
}

/// `trace.bin`'s bytes for `ring` (the copied trace memory).
pub fn encode_file(meta: &TraceMeta, ring: &[u8]) -> Vec<u8> {
    let description = serde_json::to_vec(meta).expect("the description is plain data");
    let mut bytes = Vec::with_capacity(FIXED_HEADER + description.len() + 8 + ring.len());
    bytes.extend_from_slice(&FILE_MAGIC);
    bytes.extend_from_slice(&FILE_VERSION.to_le_bytes());
    bytes.extend_from_slice(&(description.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&description);
    bytes.resize(bytes.len().next_multiple_of(8), 0);
    bytes.extend_from_slice(ring);
    bytes
}

/// Splits `trace.bin`'s bytes into the description and the trace memory.
pub fn split_file(bytes: &[u8]) -> Result<(TraceMeta, &[u8])> {
    ensure!(bytes.len() >= FIXED_HEADER && bytes[..8] == FILE_MAGIC, "not a Partita trace file (bad magic)");
    let field = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let version = field(8);
    ensure!(version == FILE_VERSION, "trace file version {version}; this tool reads version {FILE_VERSION}");
    let end = FIXED_HEADER + field(12) as usize;
    ensure!(end <= bytes.len(), "the trace file is cut short inside its header");
    let meta: TraceMeta = serde_json::from_slice(&bytes[FIXED_HEADER..end]).context("bad trace file description")?;
    let ring = bytes.get(end.next_multiple_of(8)..).unwrap_or_default();
    Ok((meta, ring))
}

/// Reads and decodes a `trace.bin`.
pub fn read_file(path: &Path) -> Result<(TraceMeta, Trace)> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let (meta, ring) = split_file(&bytes).with_context(|| path.display().to_string())?;
    let trace = decode(ring).map_err(|error| anyhow::anyhow!("{}: damaged trace memory: {error:?}", path.display()))?;
    ensure!(trace.counter_hz > 0, "{}: the trace gives no counter frequency", path.display());
    Ok((meta, trace))
}

/// Counter ticks to microseconds since the trace's earliest event.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: u64,
    hz: u64,
}

impl Clock {
    pub fn of(trace: &Trace) -> Self {
        let origin = trace.cpus.iter().filter_map(|events| events.first()).map(|e| e.time).min().unwrap_or(0);
        Self { origin, hz: trace.counter_hz.max(1) }
    }

    pub fn micros(&self, time: u64) -> f64 {
        time.saturating_sub(self.origin) as f64 * 1e6 / self.hz as f64
    }

    pub fn span_micros(&self, ticks: u64) -> f64 {
        ticks as f64 * 1e6 / self.hz as f64
    }
}

/// The time of the trace's latest event.
fn last_time(trace: &Trace) -> u64 {
    trace.cpus.iter().filter_map(|events| events.last()).map(|e| e.time).max().unwrap_or(0)
}

/// A vCPU on a pCPU, in counter ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    pub cpu: usize,
    pub partition: u8,
    pub vcpu: u8,
    pub start: u64,
    pub end: u64,
    /// `None` when the trace ended (or the next vCPU came in) before it left.
    pub out: Option<u32>,
}

/// Every VcpuIn..VcpuOut pair, per pCPU in time order. A vCPU still on its
/// pCPU when the trace ends ran until the last event of the whole trace. A
/// first VcpuOut whose VcpuIn was overwritten in a full ring ran since the
/// oldest event the ring kept: nothing else ran on that pCPU in between.
pub fn vcpu_intervals(trace: &Trace) -> Vec<Interval> {
    let end = last_time(trace);
    let mut intervals = Vec::new();
    for (cpu, events) in trace.cpus.iter().enumerate() {
        let mut open: Option<Interval> = running_before_the_window(cpu, events);
        for event in events {
            match event.kind {
                Kind::VcpuIn => {
                    // A VcpuOut lost from the ring: the next VcpuIn still ends it.
                    intervals.extend(open.take().map(|i| Interval { end: event.time, ..i }));
                    let (partition, vcpu) = (event.partition, event.vcpu);
                    open = Some(Interval { cpu, partition, vcpu, start: event.time, end: event.time, out: None });
                }
                Kind::VcpuOut => {
                    intervals.extend(open.take().map(|i| Interval { end: event.time, out: Some(event.arg), ..i }));
                }
                _ => {}
            }
        }
        intervals.extend(open.map(|i| Interval { end: end.max(i.start), ..i }));
    }
    intervals
}

/// The vCPU that was on `cpu` when its retained events begin, known from
/// a VcpuOut that comes before any VcpuIn.
fn running_before_the_window(cpu: usize, events: &[Event]) -> Option<Interval> {
    let start = events.first()?.time;
    let first = events.iter().find(|e| matches!(e.kind, Kind::VcpuIn | Kind::VcpuOut))?;
    (first.kind == Kind::VcpuOut).then_some(Interval {
        cpu,
        partition: first.partition,
        vcpu: first.vcpu,
        start,
        end: start,
        out: None,
    })
}

/// One physical interrupt and its injection into a vCPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Injection {
    pub cpu: usize,
    pub intid: u32,
    pub taken: u64,
    pub injected: u64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Injections {
    pub matched: Vec<Injection>,
    /// IrqTaken events never followed by an injection of their INTID on
    /// their pCPU, per INTID: mostly Partita's own interrupts (its kick
    /// SGI, its EL2 timer), which no guest is meant to see.
    pub unmatched: BTreeMap<u32, usize>,
}

/// Pairs each IrqTaken with the next IrqInjected of the same INTID on the
/// same pCPU. A forwarded interrupt keeps its INTID in the guest, so the
/// pair measures Partita's path; several takes before one injection (a
/// level interrupt taken again) all end at that injection.
pub fn injections(trace: &Trace) -> Injections {
    let mut result = Injections::default();
    for (cpu, events) in trace.cpus.iter().enumerate() {
        let mut waiting: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for event in events {
            match event.kind {
                Kind::IrqTaken => waiting.entry(event.arg).or_default().push(event.time),
                Kind::IrqInjected => {
                    let taken = waiting.remove(&event.arg).unwrap_or_default();
                    let pairs =
                        taken.into_iter().map(|taken| Injection { cpu, intid: event.arg, taken, injected: event.time });
                    result.matched.extend(pairs);
                }
                _ => {}
            }
        }
        for (intid, taken) in waiting {
            *result.unmatched.entry(intid).or_default() += taken.len();
        }
    }
    result
}

impl Injections {
    pub fn latencies_us(&self, clock: &Clock) -> Vec<f64> {
        self.matched.iter().map(|i| clock.span_micros(i.injected - i.taken)).collect()
    }
}

/// How the tools name an event's partition.
fn partition_name(meta: &TraceMeta, partition: u8) -> String {
    match meta.partitions.get(usize::from(partition)) {
        Some(name) => name.clone(),
        None if partition == NONE => "-".into(),
        None => format!("partition{partition}"),
    }
}

fn interval_name(meta: &TraceMeta, interval: &Interval) -> String {
    format!("{}/vcpu{}", partition_name(meta, interval.partition), interval.vcpu)
}

fn out_reason(arg: u32) -> String {
    let known = [
        (OutReason::Preempted, "preempted"),
        (OutReason::Waiting, "waiting"),
        (OutReason::Off, "off"),
        (OutReason::Stopped, "stopped"),
    ];
    let name = known.iter().find(|(reason, _)| *reason as u32 == arg).map(|(_, name)| *name);
    name.map_or_else(|| format!("reason {arg}"), str::to_string)
}

/// Perfetto treats pid and tid 0 as the kernel's idle task and expects
/// tids to be unique across processes, so pCPU n is process n + 1 with one
/// thread for vCPU slices and one for point events (so that instants never
/// split a slice).
fn process_id(cpu: usize) -> usize {
    cpu + 1
}

fn vcpu_thread(cpu: usize) -> usize {
    2 * cpu + 1
}

fn event_thread(cpu: usize) -> usize {
    2 * cpu + 2
}

/// Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing): one process
/// per pCPU, vCPU intervals as complete events, the rest as instants.
/// Timestamps are microseconds from the earliest event.
pub fn chrome_json(meta: &TraceMeta, trace: &Trace) -> Value {
    let clock = Clock::of(trace);
    let mut events = Vec::new();
    for cpu in 0..trace.cpus.len() {
        events.extend(track_names(cpu));
    }
    let mut timed: Vec<(usize, f64, Value)> = Vec::new();
    for interval in vcpu_intervals(trace) {
        let ts = clock.micros(interval.start);
        timed.push((interval.cpu, ts, slice(meta, &clock, &interval)));
    }
    for (cpu, list) in trace.cpus.iter().enumerate() {
        for event in list.iter().filter(|e| !matches!(e.kind, Kind::VcpuIn | Kind::VcpuOut)) {
            let ts = clock.micros(event.time);
            timed.push((cpu, ts, instant(meta, cpu, ts, event)));
        }
    }
    timed.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    events.extend(timed.into_iter().map(|(_, _, event)| event));
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "config": meta.config,
            "counter_hz": trace.counter_hz,
            "lost_events": trace.lost,
        },
    })
}

fn track_names(cpu: usize) -> [Value; 4] {
    let pid = process_id(cpu);
    let meta =
        |name: &str, tid: usize, args: Value| json!({ "name": name, "ph": "M", "pid": pid, "tid": tid, "args": args });
    [
        meta("process_name", vcpu_thread(cpu), json!({ "name": format!("pCPU {cpu}") })),
        meta("process_sort_index", vcpu_thread(cpu), json!({ "sort_index": cpu })),
        meta("thread_name", vcpu_thread(cpu), json!({ "name": "vCPUs" })),
        meta("thread_name", event_thread(cpu), json!({ "name": "events" })),
    ]
}

fn slice(meta: &TraceMeta, clock: &Clock, interval: &Interval) -> Value {
    let mut args = json!({ "partition": partition_name(meta, interval.partition), "vcpu": interval.vcpu });
    args["out"] = interval.out.map_or_else(|| json!("trace ended"), |arg| json!(out_reason(arg)));
    json!({
        "name": interval_name(meta, interval),
        "cat": "vcpu",
        "ph": "X",
        "ts": clock.micros(interval.start),
        "dur": clock.span_micros(interval.end - interval.start),
        "pid": process_id(interval.cpu),
        "tid": vcpu_thread(interval.cpu),
        "args": args,
    })
}

fn instant(meta: &TraceMeta, cpu: usize, ts: f64, event: &Event) -> Value {
    json!({
        "name": event.kind.name(),
        "cat": category(event.kind),
        "ph": "i",
        "s": "t",
        "ts": ts,
        "pid": process_id(cpu),
        "tid": event_thread(cpu),
        "args": instant_args(meta, event),
    })
}

fn category(kind: Kind) -> &'static str {
    match kind {
        Kind::IrqTaken | Kind::IrqInjected | Kind::IrqEoi => "irq",
        Kind::HypercallEntry | Kind::HypercallExit => "hypercall",
        Kind::Trap | Kind::FpLoad | Kind::El2 => "trap",
        Kind::Health => "health",
        Kind::SlotStart | Kind::Migrate => "schedule",
        Kind::VcpuIn | Kind::VcpuOut => "vcpu",
        Kind::AccelRequest | Kind::AccelConnect | Kind::AccelStep => "fabric",
        Kind::TimedIo | Kind::TimedIoLate => "timed-io",
    }
}

fn instant_args(meta: &TraceMeta, event: &Event) -> Value {
    let mut args = Map::new();
    if event.partition != NONE {
        args.insert("partition".into(), json!(partition_name(meta, event.partition)));
    }
    if event.vcpu != NONE {
        args.insert("vcpu".into(), json!(event.vcpu));
    }
    let (key, value) = match event.kind {
        Kind::IrqTaken | Kind::IrqInjected | Kind::IrqEoi => ("intid", json!(event.arg)),
        Kind::Trap => ("class", json!(format!("{:#04x}", event.arg))),
        Kind::HypercallEntry => ("function", json!(format!("{:#x}", event.arg))),
        Kind::HypercallExit => ("result", json!(format!("{:#x}", event.arg))),
        Kind::Health => ("code", json!(event.arg)),
        Kind::SlotStart => {
            ("slot", json!({ "index": event.arg & 0xff, "plan": event.arg >> 8 & 0xff, "late_ticks": event.arg >> 16 }))
        }
        Kind::Migrate => ("to_cpu", json!(event.arg)),
        Kind::AccelRequest => ("accelerator", json!(event.arg)),
        Kind::AccelConnect => ("connect", json!({ "path": event.arg >> 24, "latency_ticks": event.arg & 0xff_ffff })),
        Kind::AccelStep => match AccelStep::from_arg(event.arg) {
            Some((step, late)) => ("step", json!({ "step": step.name(), "late_ticks": late })),
            None => ("arg", json!(event.arg)),
        },
        Kind::TimedIo => {
            let (pins, late) = timedio::from_trace_arg(event.arg);
            let asked = event.time as i64 - late;
            ("output", json!({ "pins": format!("{pins:#04x}"), "asked": asked, "late_ticks": late }))
        }
        Kind::FpLoad => match event.arg {
            0 => ("saved_first", Value::Null),
            arg => (
                "saved_first",
                json!({ "partition": partition_name(meta, ((arg >> 16) - 1) as u8), "vcpu": arg & 0xffff }),
            ),
        },
        Kind::El2 => ("ticks", json!(event.arg)),
        Kind::TimedIoLate => match partita_core::trace::from_timed_io_late_arg(event.arg) {
            Ok(step) => ("counter_step_across_asked_ticks", json!(step)),
            Err(waited) => ("began_late_after_waiting_ticks", json!(waited)),
        },
        Kind::VcpuIn | Kind::VcpuOut => ("arg", json!(event.arg)),
    };
    args.insert(key.into(), value);
    Value::Object(args)
}

/// One color per partition, in configuration order.
const PARTITION_COLORS: [RGBColor; 8] = [BLUE, ORANGE, GREEN, RED, PURPLE, BROWN, PINK, GRAY];

fn partition_color(partition: u8) -> RGBColor {
    PARTITION_COLORS[usize::from(partition) % PARTITION_COLORS.len()]
}

const WIDTH: u32 = 1200;
const LEGEND_HEIGHT: u32 = 40;
/// The Gantt's zoomed window when no cyclic plan gives it a major frame.
pub const ZOOM_US: u64 = 50_000;

/// What runs on each pCPU, for the Gantt's rows: the partitions whose
/// vCPUs the trace shows there and the fabric on its pCPU (a trace from
/// before the description named it: a pCPU with accelerator events and no
/// vCPU), else `idle`.
pub fn pcpu_labels(meta: &TraceMeta, trace: &Trace, intervals: &[Interval]) -> Vec<String> {
    (0..trace.cpus.len())
        .map(|cpu| {
            let mut partitions: Vec<u8> = intervals.iter().filter(|i| i.cpu == cpu).map(|i| i.partition).collect();
            partitions.sort_unstable();
            partitions.dedup();
            let mut names: Vec<String> = partitions.iter().map(|&p| partition_name(meta, p)).collect();
            if runs_the_fabric(meta, trace, intervals, cpu) {
                names.insert(0, "fabric".into());
            }
            let what = match names.len() {
                0 => "idle".to_string(),
                1..=2 => names.join(", "),
                n => format!("{n} partitions"),
            };
            format!("pCPU {cpu}: {what}")
        })
        .collect()
}

/// True for the fabric's pCPU: the one the description names, or in a
/// trace from before it did, one with accelerator events and no vCPU.
fn runs_the_fabric(meta: &TraceMeta, trace: &Trace, intervals: &[Interval], cpu: usize) -> bool {
    match meta.fabric_cpu {
        Some(fabric) => fabric as usize == cpu,
        None => !intervals.iter().any(|i| i.cpu == cpu) && !fabric_events(trace, cpu).is_empty(),
    }
}

/// The times of the accelerator events on `cpu`: on the fabric's pCPU, its
/// work (each step of a PRR, each connection).
fn fabric_events(trace: &Trace, cpu: usize) -> Vec<u64> {
    let events = trace.cpus.get(cpu).map_or(&[][..], Vec::as_slice);
    events.iter().filter(|e| matches!(e.kind, Kind::AccelStep | Kind::AccelConnect)).map(|e| e.time).collect()
}

/// The Gantt's zoomed window, in counter ticks, and what it is: one major
/// frame of the first cyclic plan, the traced one that starts nearest the
/// middle of the run; without a plan, [`ZOOM_US`] about the middle. The
/// whole run when it is shorter.
pub fn zoom_window(meta: &TraceMeta, trace: &Trace) -> (u64, u64, String) {
    let clock = Clock::of(trace);
    let (first, last) = (clock.origin, last_time(trace).max(clock.origin));
    let middle = first + (last - first) / 2;
    let ticks = |us: u64| partita_core::time::us_to_ticks(us, trace.counter_hz);
    let frame = slots::slot_runs(meta, trace).into_iter().filter_map(|run| {
        let core = meta.plans.get(run.plan)?.cores.iter().find(|core| core.cpu as usize == run.cpu)?;
        let start = run.planned.checked_sub(ticks(core.slots.get(run.slot)?.start_us))?;
        Some((start, ticks(core.major_frame_us), &meta.plans[run.plan].name, core.major_frame_us))
    });
    if let Some((start, length, plan, us)) = frame.min_by_key(|f| f.0.abs_diff(middle)) {
        let what = format!("one major frame of plan {plan} ({} ms)", us as f64 / 1000.0);
        return (start, start + length, what);
    }
    let length = ticks(ZOOM_US);
    if last - first <= length {
        return (first, last, "the whole run".into());
    }
    let start = middle - length / 2;
    (start, start + length, format!("{} ms in the middle of the run", ZOOM_US as f64 / 1000.0))
}

/// One panel of the Gantt: a row per pCPU over `window` (counter ticks).
struct Panel<'a> {
    title: String,
    window: (u64, u64),
    /// A stretch of the window to shade: where the other panel zooms in.
    shade: Option<(u64, u64)>,
    labels: &'a [String],
    intervals: &'a [Interval],
    /// Per pCPU, the fabric's events to mark.
    marks: &'a [Vec<u64>],
    /// Per pCPU, the EL2 stretches to draw over its vCPU's bar, as (entered,
    /// left): only a window short enough shows them apart.
    el2: &'a [Vec<(u64, u64)>],
}

/// Per pCPU, the EL2 stretches the trace recorded (a build that keeps
/// them, on the pCPUs of high-criticality partitions), as (entered, left).
fn el2_stretches(trace: &Trace) -> Vec<Vec<(u64, u64)>> {
    let stretch = |e: &Event| (e.time.saturating_sub(u64::from(e.arg)), e.time);
    trace.cpus.iter().map(|events| events.iter().filter(|e| e.kind == Kind::El2).map(stretch).collect()).collect()
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, clock: &Clock, panel: &Panel) -> Result<()> {
    let rows = panel.labels.len().max(1);
    let ms = |time: u64| clock.micros(time) / 1000.0;
    let (from, to) = (ms(panel.window.0), ms(panel.window.1).max(ms(panel.window.0) + 1e-3));
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(170)
        .build_cartesian_2d(from..to, -0.5..rows as f64 - 0.5)
        .map_err(chart::error)?;
    // Row r (from the bottom) shows pCPU rows-1-r, so pCPU 0 is on top.
    let cpu_label = |y: &f64| {
        let row = y.round();
        let on_row = (y - row).abs() < 1e-6 && row >= 0.0 && row < rows as f64;
        match panel.labels.get(rows.wrapping_sub(1).wrapping_sub(row as usize)) {
            Some(label) if on_row => label.clone(),
            _ => String::new(),
        }
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(rows + 1)
        .y_label_formatter(&cpu_label)
        .x_desc("time since the trace's first event (ms)")
        .draw()
        .map_err(chart::error)?;
    let row_of = |cpu: usize| (rows - 1 - cpu.min(rows - 1)) as f64;
    if let Some((start, end)) = panel.shade {
        let shade =
            Rectangle::new([(ms(start).max(from), -0.5), (ms(end).min(to), rows as f64 - 0.5)], GRAY.mix(0.2).filled());
        chart.draw_series(std::iter::once(shade)).map_err(chart::error)?;
    }
    // Only what the window holds, cut at its edges.
    let bars =
        panel.intervals.iter().filter(|i| i.end >= panel.window.0 && i.start <= panel.window.1).map(|interval| {
            let row = row_of(interval.cpu);
            let (x0, x1) = (ms(interval.start).max(from), ms(interval.end).min(to));
            Rectangle::new([(x0, row - 0.35), (x1, row + 0.35)], partition_color(interval.partition).filled())
        });
    chart.draw_series(bars).map_err(chart::error)?;
    // At least a pixel wide: a stretch of microseconds in a window of ms.
    let pixel = (to - from) / f64::from(WIDTH);
    for (cpu, stretches) in panel.el2.iter().enumerate() {
        let row = row_of(cpu);
        let inside = stretches.iter().filter(|&&(entered, left)| left >= panel.window.0 && entered <= panel.window.1);
        let bars = inside.map(|&(entered, left)| {
            let x0 = ms(entered).max(from);
            Rectangle::new([(x0, row - 0.2), ((ms(left).min(to)).max(x0 + pixel), row + 0.2)], BLACK.filled())
        });
        chart.draw_series(bars).map_err(chart::error)?;
    }
    for (cpu, times) in panel.marks.iter().enumerate() {
        let row = row_of(cpu);
        let inside = times.iter().filter(|&&t| t >= panel.window.0 && t <= panel.window.1);
        let ticks = inside.map(|&t| PathElement::new(vec![(ms(t), row - 0.3), (ms(t), row + 0.3)], BLACK.mix(0.6)));
        chart.draw_series(ticks).map_err(chart::error)?;
    }
    Ok(())
}

/// An SVG Gantt chart: a row per pCPU, named with what runs there, a bar
/// per vCPU interval colored by partition and a mark per accelerator event
/// on the fabric's pCPU; the whole run above, and below it a window short
/// enough to show each switch and each traced EL2 stretch
/// ([`zoom_window`]), shaded above.
pub fn gantt_svg(meta: &TraceMeta, trace: &Trace) -> Result<String> {
    let clock = Clock::of(trace);
    let rows = trace.cpus.len().max(1);
    let intervals = vcpu_intervals(trace);
    let labels = pcpu_labels(meta, trace, &intervals);
    let marks: Vec<Vec<u64>> = (0..trace.cpus.len())
        .map(|cpu| if runs_the_fabric(meta, trace, &intervals, cpu) { fabric_events(trace, cpu) } else { Vec::new() })
        .collect();
    let el2 = el2_stretches(trace);
    let whole = (clock.origin, last_time(trace).max(clock.origin));
    let (zoom_start, zoom_end, zoom_what) = zoom_window(meta, trace);
    let panel_height = 110 + 45 * rows as u32;
    let height = 2 * panel_height + LEGEND_HEIGHT;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart::error)?;
        let (top, rest) = root.split_vertically(panel_height);
        let (bottom, legend_area) = rest.split_vertically(panel_height);
        let seconds = clock.span_micros(whole.1 - whole.0) / 1e6;
        let whole_panel = Panel {
            title: format!("{}: vCPUs per pCPU, the whole run ({seconds:.1} s)", meta.config),
            window: whole,
            shade: Some((zoom_start, zoom_end)),
            labels: &labels,
            intervals: &intervals,
            marks: &marks,
            el2: &[],
        };
        draw_panel(&top, &clock, &whole_panel)?;
        let zoom_panel = Panel {
            title: format!(
                "zoomed (shaded above): {zoom_what}, {:.1} to {:.1} ms",
                clock.micros(zoom_start) / 1000.0,
                clock.micros(zoom_end) / 1000.0
            ),
            window: (zoom_start, zoom_end),
            shade: None,
            el2: &el2,
            ..whole_panel
        };
        draw_panel(&bottom, &clock, &zoom_panel)?;
        let fabric = marks.iter().any(|m| !m.is_empty());
        draw_legend(&legend_area, &meta.partitions, fabric, el2.iter().any(|s| !s.is_empty()))?;
        root.present().map_err(chart::error)?;
    }
    Ok(svg)
}

/// Colored squares with partition names in a strip under the chart.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    names: &[String],
    fabric: bool,
    el2: bool,
) -> Result<()> {
    let mut keys: Vec<Key> = names
        .iter()
        .enumerate()
        .map(|(index, name)| Key { name: name.clone(), color: partition_color(index as u8), mark: Mark::Square })
        .collect();
    if fabric {
        keys.push(Key { name: "fabric: an accelerator event".into(), color: GRAY, mark: Mark::Dash });
    }
    if el2 {
        keys.push(Key { name: "Partita at EL2 (zoomed, where traced)".into(), color: BLACK, mark: Mark::Square });
    }
    chart::legend(area, &keys, Strip { left: 95, font: 16, char_width: 9 })
}

/// An SVG histogram of injection latencies in microseconds; with none, an
/// empty chart that says so.
pub fn latency_svg(meta: &TraceMeta, latencies_us: &[f64]) -> Result<String> {
    histogram_svg(&Histogram {
        title: format!("{}: interrupt injection latency ({} samples)", meta.config, latencies_us.len()),
        x: "latency (µs)",
        y: "interrupts (log scale)",
        empty: "no interrupt was both taken and injected on one pCPU in this trace",
        samples: latencies_us,
        unit: "µs",
    })
}

/// What one histogram shows.
pub struct Histogram<'a> {
    pub title: String,
    pub x: &'static str,
    pub y: &'static str,
    /// Said across an empty chart.
    pub empty: &'static str,
    pub samples: &'a [f64],
    /// The samples' unit, for the outliers listed under the chart.
    pub unit: &'static str,
}

/// The shares of the samples, smallest first, that a histogram's x axis
/// may span when the rest would stretch it, widest first: one outlier of
/// milliseconds among microseconds would put every other sample in one
/// bar. The next is taken while the widest bar still holds more than
/// [`ONE_BAR`] of the body.
pub const BODY_QUANTILES: [f64; 2] = [0.999, 0.99];
/// The share of a body's samples in one bar past which it shows no shape.
const ONE_BAR: f64 = 0.9;
/// Outliers listed by value under a histogram; the rest are counted.
const OUTLIERS_LISTED: usize = 8;

/// A histogram's body and its outliers.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    /// Equal-width bins `(from, to, count)` over the body.
    pub bins: Vec<(f64, f64, usize)>,
    /// The samples beyond the body, largest first; empty when every sample
    /// is in it.
    pub outliers: Vec<f64>,
}

/// Every sample in bins, unless one bar would hold more than [`ONE_BAR`]
/// of them: then the samples up to one of [`BODY_QUANTILES`] in bins and
/// those beyond it apart, where they would more than double the axis.
pub fn body(samples: &[f64]) -> Body {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut chosen = Body { bins: histogram(&sorted), outliers: Vec::new() };
    let (Some(&low), Some(&high)) = (sorted.first(), sorted.last()) else { return chosen };
    for quantile in BODY_QUANTILES {
        if !one_bar(&chosen.bins) {
            break;
        }
        let kept = ((sorted.len() as f64 * quantile).ceil() as usize).clamp(1, sorted.len());
        let cut = sorted[kept - 1];
        if high - low <= 2.0 * (cut - low) {
            continue;
        }
        let split = sorted.partition_point(|&s| s <= cut);
        chosen = Body { bins: histogram(&sorted[..split]), outliers: sorted[split..].iter().rev().copied().collect() };
    }
    chosen
}

/// True when one bin holds more than [`ONE_BAR`] of the samples.
fn one_bar(bins: &[(f64, f64, usize)]) -> bool {
    let total: usize = bins.iter().map(|b| b.2).sum();
    bins.iter().any(|b| b.2 as f64 > ONE_BAR * total as f64)
}

/// A value of the unit the charts use, with the places that matter.
fn value(v: f64) -> String {
    if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The lines under a histogram that name what its axis left out; none when
/// it left nothing out.
pub fn outlier_lines(body: &Body, total: usize, unit: &str) -> Vec<String> {
    let (Some(&largest), Some(&smallest)) = (body.outliers.first(), body.outliers.last()) else {
        return Vec::new();
    };
    let top = body.bins.last().map_or(0.0, |b| b.1);
    let listed: Vec<String> = body.outliers.iter().take(OUTLIERS_LISTED).map(|&v| value(v)).collect();
    let mut list = format!("{} {unit}", listed.join(", "));
    if body.outliers.len() > OUTLIERS_LISTED {
        let rest = &body.outliers[OUTLIERS_LISTED..];
        list += &format!(", and {} more from {} to {} {unit}", rest.len(), value(smallest), value(rest[0]));
    }
    vec![
        format!(
            "The axis spans the smallest {:.2} % of the {total} samples, up to {} {unit}; beyond it, {} sample(s) up to {} {unit}:",
            (total - body.outliers.len()) as f64 * 100.0 / total as f64,
            value(top),
            body.outliers.len(),
            value(largest)
        ),
        list,
    ]
}

/// Room under a histogram for its outlier lines.
const OUTLIER_HEIGHT: u32 = 56;

/// An SVG histogram of `what.samples`, counts on a log scale so that a bin
/// of a few samples shows beside one of thousands, its axis on the body
/// ([`body`]) with the outliers listed beneath; with no samples, an empty
/// chart that says so.
pub fn histogram_svg(what: &Histogram) -> Result<String> {
    let body = body(what.samples);
    let lines = outlier_lines(&body, what.samples.len(), what.unit);
    let height = 600 + if lines.is_empty() { 0 } else { OUTLIER_HEIGHT };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart::error)?;
        let (chart_area, notes) = root.split_vertically(600);
        let bins = &body.bins;
        let low = bins.first().map_or(0.0, |b| b.0);
        let high = bins.last().map_or(1.0, |b| b.1);
        let top = bins.iter().map(|b| b.2).max().unwrap_or(1).max(1) as f64 * 2.0;
        // Bars rise from below 1, so that a bin of one sample shows.
        let floor = 0.7;
        let mut chart = ChartBuilder::on(&chart_area)
            .caption(&what.title, ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(low..high, (floor..top).log_scale())
            .map_err(chart::error)?;
        chart
            .configure_mesh()
            .x_desc(what.x)
            .y_desc(what.y)
            .y_label_formatter(&|count| if *count >= 1.0 { format!("{count:.0}") } else { String::new() })
            .draw()
            .map_err(chart::error)?;
        // A sliver of each bin stays blank, so neighbouring bars stay apart.
        let bars = bins.iter().filter(|b| b.2 > 0).map(|&(x0, x1, count)| {
            let gap = (x1 - x0) * 0.04;
            Rectangle::new([(x0 + gap, floor), (x1 - gap, count as f64)], PARTITION_COLORS[0].filled())
        });
        chart.draw_series(bars).map_err(chart::error)?;
        if what.samples.is_empty() {
            root.draw(&Text::new(what.empty, (WIDTH as i32 / 2 - 260, 290), ("sans-serif", 18)))
                .map_err(chart::error)?;
        }
        for (i, line) in lines.iter().enumerate() {
            notes.draw(&Text::new(line.clone(), (75, 6 + 22 * i as i32), ("sans-serif", 15))).map_err(chart::error)?;
        }
        root.present().map_err(chart::error)?;
    }
    Ok(svg)
}

/// Equal-width bins `(from, to, count)` over the samples' range.
fn histogram(samples: &[f64]) -> Vec<(f64, f64, usize)> {
    let Some(low) = samples.iter().copied().reduce(f64::min) else {
        return Vec::new();
    };
    let high = samples.iter().copied().fold(low, f64::max);
    let count = ((samples.len() as f64).sqrt().ceil() as usize).clamp(1, 50);
    let width = ((high - low) / count as f64).max(1e-3);
    let mut bins: Vec<(f64, f64, usize)> =
        (0..count).map(|i| (low + i as f64 * width, low + (i + 1) as f64 * width, 0)).collect();
    for &sample in samples {
        let index = (((sample - low) / width) as usize).min(count - 1);
        bins[index].2 += 1;
    }
    bins
}

/// min / mean / max of non-empty samples.
pub fn min_mean_max(samples: &[f64]) -> Option<(f64, f64, f64)> {
    let min = samples.iter().copied().reduce(f64::min)?;
    let max = samples.iter().copied().fold(min, f64::max);
    Some((min, samples.iter().sum::<f64>() / samples.len() as f64, max))
}

/// VcpuIn events per partition, in configuration order.
pub fn switches_per_partition(meta: &TraceMeta, trace: &Trace) -> Vec<(String, usize)> {
    let ins = || trace.cpus.iter().flatten().filter(|e| e.kind == Kind::VcpuIn);
    let mut counts: Vec<(String, usize)> = meta
        .partitions
        .iter()
        .enumerate()
        .map(|(p, name)| (name.clone(), ins().filter(|e| usize::from(e.partition) == p).count()))
        .collect();
    let strays = ins().filter(|e| usize::from(e.partition) >= meta.partitions.len()).count();
    if strays > 0 {
        counts.push(("(unknown partition)".into(), strays));
    }
    counts
}

/// The lines `partita trace` prints.
pub fn summary(meta: &TraceMeta, trace: &Trace) -> String {
    let clock = Clock::of(trace);
    let span_ms = clock.micros(last_time(trace)) / 1000.0;
    let mut text = format!(
        "trace of {}: {} pCPU(s), counter {} Hz, {span_ms:.3} ms\n",
        meta.config,
        trace.cpus.len(),
        trace.counter_hz
    );
    for (cpu, (events, lost)) in trace.cpus.iter().zip(&trace.lost).enumerate() {
        text += &format!("  pCPU {cpu}: {} events, {lost} lost\n", events.len());
    }
    let switches: Vec<String> =
        switches_per_partition(meta, trace).iter().map(|(name, n)| format!("{name} {n}")).collect();
    text += &format!("vCPU switches in: {}\n", switches.join(", "));
    let injections = injections(trace);
    let latencies = injections.latencies_us(&clock);
    text += &match min_mean_max(&latencies) {
        Some((min, mean, max)) => format!(
            "injection latency: {} samples, min {min:.3} µs, mean {mean:.3} µs, max {max:.3} µs",
            latencies.len()
        ),
        None => "injection latency: no samples".to_string(),
    };
    text += &never_injected(&injections.unmatched);
    text += "\n";
    text += &slots::summary(meta, trace).unwrap_or_default();
    text += &timed_io::summary(meta, trace).unwrap_or_default();
    text
}

/// ` (taken, never injected: INTID 15 x3, 26 x9)`, the interrupts only
/// Partita saw, or nothing.
fn never_injected(unmatched: &BTreeMap<u32, usize>) -> String {
    if unmatched.is_empty() {
        return String::new();
    }
    let counts: Vec<String> = unmatched.iter().map(|(intid, n)| format!("{intid} x{n}")).collect();
    format!(" (taken, never injected: INTID {})", counts.join(", "))
}

/// Reads `out_dir/trace.bin`, writes the JSON and both charts beside it and
/// returns the summary.
pub fn draw(out_dir: &Path) -> Result<String> {
    let source = out_dir.join(TRACE_FILE);
    if !source.exists() {
        bail!(
            "{} does not exist: set `[trace] enabled = true` in the configuration and run it with `partita run`",
            source.display()
        );
    }
    let (meta, trace) = read_file(&source)?;
    let write = |name: &str, text: String| {
        let path = out_dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    let timeline = serde_json::to_string(&chrome_json(&meta, &trace)).context("cannot format the JSON")?;
    write(JSON_FILE, timeline)?;
    write(GANTT_FILE, gantt_svg(&meta, &trace)?)?;
    let latencies = injections(&trace).latencies_us(&Clock::of(&trace));
    write(LATENCY_FILE, latency_svg(&meta, &latencies)?)?;
    let operations = timed_io::operations(&trace);
    if !operations.is_empty() {
        write(timed_io::HISTOGRAM_FILE, timed_io::error_svg(&meta, &operations, trace.counter_hz)?)?;
    }
    let mut text = summary(&meta, &trace);
    text += &format!(
        "wrote {0}/{JSON_FILE} (open it in ui.perfetto.dev), {0}/{GANTT_FILE}, {0}/{LATENCY_FILE}",
        out_dir.display()
    );
    if !operations.is_empty() {
        text += &format!(", {}/{}", out_dir.display(), timed_io::HISTOGRAM_FILE);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use partita_core::trace::{words, TraceBuffer};
    use std::sync::atomic::{AtomicU64, Ordering};

    const HZ: u64 = 1_000_000;

    fn meta() -> TraceMeta {
        TraceMeta {
            config: "unit".into(),
            cpus: 2,
            partitions: vec!["rtos".into(), "gpos".into()],
            plans: vec![],
            fabric_cpu: None,
        }
    }

    fn event(time: u64, kind: Kind, partition: u8, vcpu: u8, arg: u32) -> Event {
        Event { time, kind, partition, vcpu, arg }
    }

    /// Records `per_cpu` into trace memory and wraps it as `trace.bin` would.
    fn trace_file(per_cpu: &[Vec<Event>], slots: usize, meta: &TraceMeta) -> Vec<u8> {
        let memory: Vec<AtomicU64> = (0..words(per_cpu.len(), slots)).map(|_| AtomicU64::new(0)).collect();
        let buffer = TraceBuffer::new(&memory, per_cpu.len(), slots, HZ).unwrap();
        for (cpu, events) in per_cpu.iter().enumerate() {
            events.iter().for_each(|e| buffer.record(cpu, e));
        }
        let ring: Vec<u8> = memory.iter().flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes()).collect();
        encode_file(meta, &ring)
    }

    fn decoded(per_cpu: &[Vec<Event>]) -> Trace {
        decoded_meta(per_cpu, &meta())
    }

    fn decoded_meta(per_cpu: &[Vec<Event>], meta: &TraceMeta) -> Trace {
        let bytes = trace_file(per_cpu, 64, meta);
        let (found, ring) = split_file(&bytes).unwrap();
        assert_eq!(&found, meta);
        decode(ring).unwrap()
    }

    /// pCPU 0: rtos vcpu0 100..300 (waits), gpos vcpu1 from 300 (still on at the end);
    /// pCPU 1: gpos vcpu0 leaving (its VcpuIn lost), gpos vcpu0 150..250, interrupts.
    fn sample() -> Trace {
        decoded(&[
            vec![
                event(100, Kind::VcpuIn, 0, 0, 0),
                event(120, Kind::IrqTaken, NONE, NONE, 27),
                event(125, Kind::IrqInjected, 0, 0, 27),
                event(300, Kind::VcpuOut, 0, 0, OutReason::Waiting as u32),
                event(300, Kind::VcpuIn, 1, 1, 0),
                event(350, Kind::Trap, 1, 1, 0x17),
            ],
            vec![
                event(130, Kind::Trap, 1, 0, 0x16),
                event(140, Kind::VcpuOut, 1, 0, 0),
                event(150, Kind::VcpuIn, 1, 0, 0),
                event(200, Kind::IrqTaken, NONE, NONE, 40),
                event(210, Kind::IrqTaken, NONE, NONE, 27),
                event(212, Kind::IrqTaken, NONE, NONE, 40),
                event(230, Kind::IrqInjected, 1, 0, 40),
                event(250, Kind::VcpuOut, 1, 0, OutReason::Preempted as u32),
                event(400, Kind::IrqInjected, 1, 0, 99),
            ],
        ])
    }

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let bytes = trace_file(&[vec![event(1, Kind::Trap, 0, 0, 1)]], 64, &meta());
        let (found, ring) = split_file(&bytes).unwrap();
        assert_eq!(found, meta());
        assert_eq!((bytes.len() - ring.len()) % 8, 0, "the trace memory starts 8-byte aligned");
        assert_eq!(decode(ring).unwrap().cpus[0].len(), 1);
        assert!(split_file(&bytes[..20]).is_err());
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(format!("{:#}", split_file(&bad).unwrap_err()).contains("magic"));
    }

    #[test]
    fn intervals_pair_in_and_out_per_pcpu() {
        let intervals = vcpu_intervals(&sample());
        let waiting = OutReason::Waiting as u32;
        assert_eq!(
            intervals,
            [
                Interval { cpu: 0, partition: 0, vcpu: 0, start: 100, end: 300, out: Some(waiting) },
                Interval { cpu: 0, partition: 1, vcpu: 1, start: 300, end: 400, out: None },
                Interval { cpu: 1, partition: 1, vcpu: 0, start: 130, end: 140, out: Some(0) },
                Interval { cpu: 1, partition: 1, vcpu: 0, start: 150, end: 250, out: Some(0) },
            ],
            "the open interval closes at the trace's last event (400, on the other pCPU); \
             the first VcpuOut on pCPU 1 began with its ring's oldest event"
        );
    }

    #[test]
    fn a_missing_out_is_closed_by_the_next_in() {
        let trace = decoded(&[vec![event(10, Kind::VcpuIn, 0, 0, 0), event(20, Kind::VcpuIn, 1, 0, 0)]]);
        let spans: Vec<(u64, u64)> = vcpu_intervals(&trace).iter().map(|i| (i.start, i.end)).collect();
        assert_eq!(spans, [(10, 20), (20, 20)]);
    }

    #[test]
    fn latency_pairs_take_and_injection_by_pcpu_and_intid() {
        let found = injections(&sample());
        let pairs: Vec<(usize, u32, u64, u64)> =
            found.matched.iter().map(|i| (i.cpu, i.intid, i.taken, i.injected)).collect();
        assert_eq!(pairs, [(0, 27, 120, 125), (1, 40, 200, 230), (1, 40, 212, 230)]);
        assert_eq!(found.unmatched, BTreeMap::from([(27, 1)]), "pCPU 1's INTID 27 is never injected there");
        let latencies = found.latencies_us(&Clock::of(&sample()));
        assert_eq!(latencies, [5.0, 30.0, 18.0]);
        assert_eq!(min_mean_max(&latencies), Some((5.0, 53.0 / 3.0, 30.0)));
        assert_eq!(min_mean_max(&[]), None);
    }

    fn of_phase<'a>(events: &'a [Value], phase: &str) -> Vec<&'a Value> {
        events.iter().filter(|e| e["ph"] == phase).collect()
    }

    #[test]
    fn chrome_json_has_processes_slices_and_instants() {
        let value = chrome_json(&meta(), &sample());
        let events = value["traceEvents"].as_array().unwrap();
        let names: Vec<&Value> = of_phase(events, "M")
            .into_iter()
            .filter(|e| e["name"] == "process_name")
            .map(|e| &e["args"]["name"])
            .collect();
        assert_eq!(names, ["pCPU 0", "pCPU 1"]);
        assert!(events.iter().all(|e| e["pid"] != 0 && e["tid"] != 0), "0 is the idle task's id in Perfetto");
        let slices = of_phase(events, "X");
        let summary: Vec<(u64, &str, f64, f64)> = slices
            .iter()
            .map(|e| {
                (
                    e["pid"].as_u64().unwrap(),
                    e["name"].as_str().unwrap(),
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap(),
                )
            })
            .collect();
        // The earliest event (pCPU 0 at 100 ticks, 1 MHz) is time 0.
        let expected = [
            (0, "rtos/vcpu0", 0.0, 200.0),
            (0, "gpos/vcpu1", 200.0, 100.0),
            (1, "gpos/vcpu0", 30.0, 10.0),
            (1, "gpos/vcpu0", 50.0, 100.0),
        ];
        assert_eq!(summary, expected.map(|(cpu, name, ts, dur)| (cpu + 1, name, ts, dur)), "pCPU n is process n + 1");
        assert_eq!(slices[0]["args"]["out"], "waiting");
        assert_eq!(slices[1]["args"]["out"], "trace ended");
        let instants = of_phase(events, "i");
        assert_eq!(instants.len(), 9, "every event but VcpuIn and VcpuOut");
        let trap = instants.iter().find(|e| e["name"] == "trap" && e["pid"] == 1).unwrap();
        assert_eq!(
            (trap["ts"].as_f64(), &trap["args"]["class"], &trap["args"]["partition"]),
            (Some(250.0), &json!("0x17"), &json!("gpos"))
        );
        let taken = instants.iter().find(|e| e["name"] == "irq taken").unwrap();
        assert_eq!(taken["args"], json!({ "intid": 27 }), "no partition for a physical interrupt");
        assert_eq!(value["otherData"]["lost_events"], json!([0, 0]));
    }

    #[test]
    fn chrome_json_events_are_in_time_order_per_pcpu() {
        let value = chrome_json(&meta(), &sample());
        let events = value["traceEvents"].as_array().unwrap();
        for pid in 1..=2 {
            let times: Vec<f64> = events
                .iter()
                .filter(|e| e["ph"] != "M" && e["pid"] == pid)
                .map(|e| e["ts"].as_f64().unwrap())
                .collect();
            assert!(times.windows(2).all(|w| w[0] <= w[1]), "pCPU {pid}: {times:?}");
        }
    }

    #[test]
    fn unknown_partitions_get_a_placeholder_name() {
        let trace = decoded(&[vec![event(1, Kind::VcpuIn, 7, 0, 0), event(2, Kind::VcpuOut, 7, 0, 0)]]);
        let value = chrome_json(&meta(), &trace);
        let slice = of_phase(value["traceEvents"].as_array().unwrap(), "X")[0].clone();
        assert_eq!(slice["name"], "partition7/vcpu0");
        let counts = switches_per_partition(&meta(), &trace);
        assert_eq!(counts, [("rtos".into(), 0), ("gpos".into(), 0), ("(unknown partition)".into(), 1)]);
    }

    #[test]
    fn histogram_bins_cover_every_sample() {
        let bins = histogram(&[1.0, 2.0, 2.0, 10.0]);
        assert_eq!(bins.iter().map(|b| b.2).sum::<usize>(), 4);
        assert_eq!((bins[0].0, bins.last().unwrap().1), (1.0, 10.0));
        assert_eq!(histogram(&[3.0]).len(), 1);
        assert!(histogram(&[]).is_empty());
    }

    fn is_svg(text: &str) -> bool {
        (text.starts_with("<svg") || text.starts_with("<?xml")) && text.trim_end().ends_with("</svg>")
    }

    #[test]
    fn gantt_chart_is_svg_with_every_partition_in_its_legend() {
        let svg = gantt_svg(&meta(), &sample()).unwrap();
        assert!(is_svg(&svg), "{}", &svg[..svg.len().min(200)]);
        for text in ["rtos", "gpos", "pCPU 0: rtos, gpos", "pCPU 1: gpos", "first event (ms)", "the whole run"] {
            assert!(svg.contains(text), "the chart lacks {text:?}");
        }
        assert!(svg.contains("zoomed (shaded above): the whole run"), "a run shorter than the window is all of it");
        assert!(
            svg.matches("<rect").count() >= 2 * 4 + 2,
            "a bar per interval in each panel and a legend square per partition"
        );
    }

    /// Three pCPUs: rtos alone on 0, gpos on 1, and 2 with only the
    /// fabric's accelerator events.
    fn with_fabric() -> Trace {
        let step = |time| event(time, Kind::AccelStep, NONE, 0, 0);
        decoded_meta(
            &[
                vec![
                    event(0, Kind::VcpuIn, 0, 0, 0),
                    event(100_010, Kind::El2, 0, 0, 5),
                    event(200_000, Kind::Trap, 0, 0, 0x16),
                ],
                vec![event(10, Kind::VcpuIn, 1, 0, 0), event(20, Kind::VcpuOut, 1, 0, 0)],
                vec![step(50), step(100_000)],
            ],
            &TraceMeta { cpus: 3, ..meta() },
        )
    }

    #[test]
    fn every_gantt_row_says_what_runs_on_its_pcpu_the_fabric_too() {
        let trace = with_fabric();
        let intervals = vcpu_intervals(&trace);
        let named = TraceMeta { cpus: 3, fabric_cpu: Some(2), ..meta() };
        assert_eq!(pcpu_labels(&named, &trace, &intervals), ["pCPU 0: rtos", "pCPU 1: gpos", "pCPU 2: fabric"]);
        // A trace from before the description named it: the pCPU with the
        // accelerator's events and no vCPU.
        let unnamed = TraceMeta { cpus: 3, ..meta() };
        assert_eq!(pcpu_labels(&unnamed, &trace, &intervals)[2], "pCPU 2: fabric");
        let mut quiet = trace.clone();
        quiet.cpus[2].clear();
        assert_eq!(pcpu_labels(&unnamed, &quiet, &intervals)[2], "pCPU 2: idle");
        let svg = gantt_svg(&named, &trace).unwrap();
        assert!(svg.contains("pCPU 2: fabric") && svg.contains("fabric: an accelerator event"), "{svg}");
        assert!(svg.contains("Partita at EL2"), "the traced EL2 stretch is keyed: {svg}");
        assert_eq!(el2_stretches(&trace)[0], [(100_005, 100_010)]);
    }

    #[test]
    fn the_zoomed_window_is_fifty_ms_about_the_middle_without_a_plan() {
        // 200 ms of a 1 MHz counter.
        let trace = with_fabric();
        let (start, end, what) = zoom_window(&meta(), &trace);
        assert_eq!((start, end), (75_000, 125_000));
        assert_eq!(what, "50 ms in the middle of the run");
        let svg = gantt_svg(&meta(), &trace).unwrap();
        assert!(svg.contains("zoomed (shaded above): 50 ms in the middle of the run, 75.0 to 125.0 ms"), "{svg}");
        assert_eq!(zoom_window(&meta(), &sample()).2, "the whole run");
    }

    #[test]
    fn the_zoomed_window_is_the_major_frame_nearest_the_middle() {
        // Plan p on pCPU 1: a 1 ms frame, slots at 0 and 500 us; frames
        // start every 1000 ticks, the run ends at 4000.
        let meta = slots::tests::meta();
        let start = |time, slot| event(time, Kind::SlotStart, 0, 0, slot);
        let starts: Vec<Event> = (0..8).map(|k| start(k * 500, (k % 2) as u32)).collect();
        let trace = decoded(&[vec![event(4_000, Kind::Trap, 0, 0, 0)], starts]);
        assert_eq!(zoom_window(&meta, &trace), (2_000, 3_000, "one major frame of plan p (1 ms)".into()));
    }

    #[test]
    fn a_histogram_zooms_on_its_body_and_lists_the_outliers() {
        let mut samples: Vec<f64> = (0..10_000).map(|i| 1.0 + (i % 100) as f64 / 100.0).collect();
        samples.extend([1000.0, 4000.0, 1500.0, 3000.0, 2000.0]);
        let found = body(&samples);
        assert_eq!(found.outliers, [4000.0, 3000.0, 2000.0, 1500.0, 1000.0]);
        assert_eq!(found.bins.iter().map(|b| b.2).sum::<usize>(), 10_000);
        assert!(found.bins.last().unwrap().1 < 2.0, "{:?}", found.bins.last());
        let lines = outlier_lines(&found, samples.len(), "µs");
        assert_eq!(
            lines,
            [
                "The axis spans the smallest 99.95 % of the 10005 samples, up to 1.990 µs; beyond it, 5 sample(s) up to 4000.0 µs:",
                "4000.0, 3000.0, 2000.0, 1500.0, 1000.0 µs"
            ]
        );
        let svg = latency_svg(&meta(), &samples).unwrap();
        assert!(svg.contains("log scale") && svg.contains("4000.0, 3000.0, 2000.0"), "{svg}");
        // Many outliers: the largest listed, the rest counted.
        samples.extend((0..20).map(|i| 500.0 + i as f64));
        let lines = outlier_lines(&body(&samples), samples.len(), "µs");
        assert!(lines[1].ends_with("and 17 more from 500.0 to 516.0 µs"), "{lines:?}");
    }

    #[test]
    fn a_histogram_without_outliers_keeps_every_sample_on_its_axis() {
        // Spread evenly, or too few for a quantile to leave any out.
        let even: Vec<f64> = (0..1000).map(f64::from).collect();
        assert!(body(&even).outliers.is_empty());
        assert!(body(&[1.0, 1.0, 1.0, 1000.0]).outliers.is_empty());
        assert!(outlier_lines(&body(&even), 1000, "µs").is_empty());
        assert_eq!(body(&[]).bins, []);
    }

    #[test]
    fn latency_histogram_is_svg_and_says_when_it_is_empty() {
        let latencies = injections(&sample()).latencies_us(&Clock::of(&sample()));
        let svg = latency_svg(&meta(), &latencies).unwrap();
        assert!(is_svg(&svg) && svg.contains("3 samples") && svg.contains("latency (µs)"));
        let empty = latency_svg(&meta(), &[]).unwrap();
        assert!(is_svg(&empty) && empty.contains("no interrupt was both taken and injected"));
    }

    #[test]
    fn summary_counts_events_switches_and_latency() {
        let text = summary(&meta(), &sample());
        assert!(text.contains("pCPU 0: 6 events, 0 lost"), "{text}");
        assert!(text.contains("vCPU switches in: rtos 1, gpos 2"), "{text}");
        assert!(text.contains("3 samples, min 5.000 µs"), "{text}");
        assert!(text.contains("(taken, never injected: INTID 27 x1)"), "{text}");
    }
}
