//! `partita bench ready-queue`: what it costs the scheduler to find, take
//! and put back the only ready vCPU, as a function of that vCPU's priority,
//! for the two-level bitmap queue and for a linear scan from 255 down.
//!
//! That is the curve of Figure 3 in the seL4 scheduler study: the scan gets
//! slower the lower the priority it has to reach, the bitmap stays flat, and
//! near 255 the scan may win because it stops at once. Both queues are
//! timed in alternating batches of the same run, so drift in the host's
//! clock or load hits both alike. Nothing is asserted.

use crate::bench::report_dir;
use anyhow::{ensure, Context, Result};
use partita_core::scheduler::readyq::{LinearReadyQueue, Priority, QueueError, ReadyQueue};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

pub const DEFAULT_NAME: &str = "bench-ready-queue";
/// Odd, so the median is one measured batch.
pub const DEFAULT_BATCHES: u32 = 15;
pub const DEFAULT_OPS: u32 = 100_000;
/// 255 is 17 steps of 15, so the lowest and highest priority are both measured.
pub const STEP: usize = 15;
/// A pCPU hosts a handful of vCPUs.
const SLOTS: usize = 8;
/// The one ready vCPU; any slot would do.
const SLOT: usize = 3;

#[derive(Clone, Debug)]
pub struct Options {
    /// Timed batches per queue and priority; the report shows their median.
    pub batches: u32,
    /// Find-dequeue-enqueue cycles per batch.
    pub ops: u32,
    /// `out/<name>/` gets the report.
    pub name: String,
}

impl Default for Options {
    fn default() -> Self {
        Self { batches: DEFAULT_BATCHES, ops: DEFAULT_OPS, name: DEFAULT_NAME.to_string() }
    }
}

/// One measured priority: median nanoseconds per cycle for each queue.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub priority: Priority,
    pub bitmap_ns: f64,
    pub linear_ns: f64,
}

impl Row {
    /// How many times slower the scan is; `None` when the bitmap's batch
    /// was too short for the clock to see.
    pub fn ratio(&self) -> Option<f64> {
        (self.bitmap_ns > 0.0).then(|| self.linear_ns / self.bitmap_ns)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub batches: u32,
    pub ops: u32,
    /// Debug builds time the bounds checks and calls, not the queues.
    pub optimized: bool,
    pub rows: Vec<Row>,
}

/// The priorities measured, lowest first: every [`STEP`]th, 0 and 255 included.
pub fn priorities() -> Vec<Priority> {
    let mut list: Vec<Priority> = (0..=Priority::MAX).step_by(STEP).collect();
    if list.last() != Some(&Priority::MAX) {
        list.push(Priority::MAX);
    }
    list
}

/// Measures every priority, writes `out/<name>/report.md` and `curve.svg`.
pub fn ready_queue(opts: &Options) -> Result<Report> {
    ensure!(opts.batches > 0 && opts.ops > 0, "batches and ops must be at least 1");
    let rows = priorities().into_iter().map(|priority| measure(priority, opts)).collect::<Result<_>>()?;
    let report = Report { batches: opts.batches, ops: opts.ops, optimized: !cfg!(debug_assertions), rows };
    write_reports(&report, &report_dir(&opts.name))?;
    Ok(report)
}

/// The two operations a scheduling decision is made of, so one timing loop
/// serves both queues.
trait Queue {
    fn take_highest(&mut self) -> Option<(Priority, usize)>;
    fn put_back(&mut self, slot: usize, priority: Priority) -> Result<(), QueueError>;
}

impl<const N: usize> Queue for ReadyQueue<N> {
    fn take_highest(&mut self) -> Option<(Priority, usize)> {
        self.pop_highest()
    }
    fn put_back(&mut self, slot: usize, priority: Priority) -> Result<(), QueueError> {
        self.enqueue(slot, priority)
    }
}

impl<const N: usize> Queue for LinearReadyQueue<N> {
    fn take_highest(&mut self) -> Option<(Priority, usize)> {
        self.pop_highest()
    }
    fn put_back(&mut self, slot: usize, priority: Priority) -> Result<(), QueueError> {
        self.enqueue(slot, priority)
    }
}

fn measure(priority: Priority, opts: &Options) -> Result<Row> {
    let mut bitmap = ReadyQueue::<SLOTS>::new();
    let mut linear = LinearReadyQueue::<SLOTS>::new();
    bitmap.enqueue(SLOT, priority)?;
    linear.enqueue(SLOT, priority)?;
    // Untimed, so the first timed batch finds warm caches and predictors.
    batch_ns(&mut bitmap, opts.ops);
    batch_ns(&mut linear, opts.ops);
    let (mut bitmap_ns, mut linear_ns) = (Vec::new(), Vec::new());
    for _ in 0..opts.batches {
        bitmap_ns.push(batch_ns(&mut bitmap, opts.ops));
        linear_ns.push(batch_ns(&mut linear, opts.ops));
    }
    // A wrong queue could be fast for the wrong reason.
    let expected = Some((priority, SLOT));
    ensure!(bitmap.highest() == expected && linear.highest() == expected, "priority {priority}: the slot went astray");
    Ok(Row { priority, bitmap_ns: median(bitmap_ns), linear_ns: median(linear_ns) })
}

/// Nanoseconds per cycle over `ops` cycles.
fn batch_ns(queue: &mut impl Queue, ops: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..ops {
        // Hidden from the optimiser each time, so no lookup is hoisted out
        // of the loop or folded into a constant.
        cycle(black_box(&mut *queue));
    }
    start.elapsed().as_nanos() as f64 / f64::from(ops)
}

/// One scheduling decision with a single ready vCPU: it is picked, then
/// becomes ready again at the same priority.
fn cycle(queue: &mut impl Queue) {
    if let Some((priority, slot)) = queue.take_highest() {
        black_box(queue.put_back(slot, priority).is_ok());
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let middle = samples.len() / 2;
    if samples.len() % 2 == 1 {
        samples[middle]
    } else {
        (samples[middle - 1] + samples[middle]) / 2.0
    }
}

fn write_reports(report: &Report, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (file, text) in [("report.md", report.markdown()), ("curve.svg", curve_svg(report)?)] {
        let path = dir.join(file);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

fn ratio_text(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "n/a".to_string(), |r| format!("{r:.2}"))
}

impl Report {
    fn summary(&self) -> String {
        let build = if self.optimized { "release build" } else { "debug build: not representative" };
        format!(
            "ready-queue, ns per find+dequeue+enqueue with one slot ready; medians of {} batches x {} ops ({build})",
            self.batches, self.ops
        )
    }

    pub fn table(&self) -> String {
        let mut out = self.summary() + "\n";
        let _ = writeln!(out, "{:>8} {:>12} {:>12} {:>14}", "priority", "bitmap ns", "linear ns", "linear/bitmap");
        for row in &self.rows {
            let ratio = ratio_text(row.ratio());
            let _ = writeln!(out, "{:>8} {:>12.2} {:>12.2} {ratio:>14}", row.priority, row.bitmap_ns, row.linear_ns);
        }
        out
    }

    pub fn markdown(&self) -> String {
        let mut out = String::from("# Ready queue: scheduler cost versus priority found\n\n");
        out += &self.summary();
        out += ".\n\nEach operation finds the highest ready priority, dequeues its only slot and enqueues it back \
                at the same priority. `bitmap` is `partita_core::scheduler::readyq::ReadyQueue` (two count-leading-zeros); \
                `linear` is `LinearReadyQueue`, which scans the 256 priorities from 255 down. 255 is the highest \
                priority. The curves are in `curve.svg` (the seL4 scheduler study's Figure 3). Nothing is asserted.\n\n";
        out += "| priority | bitmap ns/op | linear ns/op | linear/bitmap |\n|---:|---:|---:|---:|\n";
        for row in &self.rows {
            let ratio = ratio_text(row.ratio());
            let _ = writeln!(out, "| {} | {:.2} | {:.2} | {ratio} |", row.priority, row.bitmap_ns, row.linear_ns);
        }
        out
    }
}

fn plot_error(error: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing failed: {error}")
}

/// Both curves over priority, one marker per measured point.
pub fn curve_svg(report: &Report) -> Result<String> {
    let top = report.rows.iter().map(|r| r.bitmap_ns.max(r.linear_ns)).fold(0.0, f64::max).max(1e-3) * 1.1;
    let bitmap: Vec<(f64, f64)> = report.rows.iter().map(|r| (f64::from(r.priority), r.bitmap_ns)).collect();
    let linear: Vec<(f64, f64)> = report.rows.iter().map(|r| (f64::from(r.priority), r.linear_ns)).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Ready queue: ns per find, dequeue and enqueue vs priority found", ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..f64::from(Priority::MAX), 0.0..top)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc("priority of the ready slot (255 = highest)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .y_desc("ns per operation")
            .draw()
            .map_err(plot_error)?;
        draw_curve(&mut chart, &linear, RED, "linear scan from 255")?;
        draw_curve(&mut chart, &bitmap, BLUE, "two-level bitmap (clz)")?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The `line_series` feature of plotters is off, so the line is a path.
fn draw_curve(chart: &mut Chart, points: &[(f64, f64)], color: RGBColor, name: &str) -> Result<()> {
    chart
        .draw_series(std::iter::once(PathElement::new(points.to_vec(), color.stroke_width(2))))
        .map_err(plot_error)?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    chart.draw_series(points.iter().map(|&point| Circle::new(point, 4, color.filled()))).map_err(plot_error)?;
    Ok(())
}
