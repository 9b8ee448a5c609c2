//! `partita bench ready-queue`: what it costs the scheduler to find, take
//! and put back the only ready vCPU, as a function of that vCPU's priority,
//! for the two-level bitmap queue and for a linear scan from 255 down.
//!
//! That is the curve of Figure 3 in the seL4 scheduler study: the scan gets
//! slower the lower the priority it has to reach, the bitmap stays flat, and
//! near 255 the scan may win because it stops at once. Both queues are
//! timed in alternating batches of the same run, so drift in the host's
//! clock or load hits both alike. Nothing is asserted.

use super::report::{self, Column, Table};
use super::stats::median;
use crate::chart::{self, Curve, LineChart};
use crate::paths;
use anyhow::{ensure, Result};
use partita_core::scheduler::readyq::{LinearReadyQueue, Priority, QueueError, ReadyQueue};
use plotters::prelude::{SeriesLabelPosition, BLUE, RED};
use std::hint::black_box;
use std::time::Instant;

pub const DEFAULT_NAME: &str = "ready-queue";
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
    /// `<out>/bench/<name>/` gets the report.
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

/// Measures every priority, writes `<out>/bench/<name>/report.md` and `curve.svg`.
pub fn run(opts: &Options) -> Result<Report> {
    ensure!(opts.batches > 0 && opts.ops > 0, "batches and ops must be at least 1");
    let rows = priorities().into_iter().map(|priority| measure(priority, opts)).collect::<Result<_>>()?;
    let report = Report { batches: opts.batches, ops: opts.ops, optimized: !cfg!(debug_assertions), rows };
    let files = [("report.md".to_string(), report.markdown()), ("curve.svg".to_string(), curve_svg(&report)?)];
    report::write(&paths::bench_out(&opts.name), &files)?;
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

const COLUMNS: [Column; 4] = [
    Column::right("priority", "priority", 8),
    Column::right("bitmap ns", "bitmap ns/op", 12),
    Column::right("linear ns", "linear ns/op", 12),
    Column::right("linear/bitmap", "linear/bitmap", 14),
];

impl Report {
    fn summary(&self) -> String {
        let build = if self.optimized { "release build" } else { "debug build: not representative" };
        format!(
            "ready-queue, ns per find+dequeue+enqueue with one slot ready; medians of {} batches x {} ops ({build})",
            self.batches, self.ops
        )
    }

    fn rows(&self) -> Table {
        let mut table = Table::new(&COLUMNS);
        for row in &self.rows {
            table.row(vec![
                row.priority.to_string(),
                format!("{:.2}", row.bitmap_ns),
                format!("{:.2}", row.linear_ns),
                report::ratio(row.ratio()),
            ]);
        }
        table
    }

    pub fn table(&self) -> String {
        self.summary() + "\n" + &self.rows().terminal()
    }

    pub fn markdown(&self) -> String {
        let mut out = String::from("# Ready queue: scheduler cost versus priority found\n\n");
        out += &self.summary();
        out += ".\n\nEach operation finds the highest ready priority, dequeues its only slot and enqueues it back \
                at the same priority. `bitmap` is `partita_core::scheduler::readyq::ReadyQueue` (two count-leading-zeros); \
                `linear` is `LinearReadyQueue`, which scans the 256 priorities from 255 down. 255 is the highest \
                priority. The curves are in `curve.svg` (the seL4 scheduler study's Figure 3). Nothing is asserted.\n\n";
        out + &self.rows().markdown()
    }
}

/// Both curves over priority, one marker per measured point.
pub fn curve_svg(report: &Report) -> Result<String> {
    let top = report.rows.iter().map(|r| r.bitmap_ns.max(r.linear_ns)).fold(0.0, f64::max).max(1e-3) * 1.1;
    let curve = |name: &str, color, ns: fn(&Row) -> f64| Curve {
        name: name.to_string(),
        color,
        points: report.rows.iter().map(|r| (f64::from(r.priority), ns(r))).collect(),
        width: 2,
    };
    chart::line_chart(&LineChart {
        caption: "Ready queue: ns per find, dequeue and enqueue vs priority found".to_string(),
        size: (1000, 600),
        x: 0.0..f64::from(Priority::MAX),
        y: 0.0..top,
        x_desc: "priority of the ready slot (255 = highest)".to_string(),
        y_desc: "ns per operation".to_string(),
        y_label_area: 60,
        key_at: SeriesLabelPosition::UpperRight,
        dot: 4,
        curves: vec![
            curve("linear scan from 255", RED, |r| r.linear_ns),
            curve("two-level bitmap (clz)", BLUE, |r| r.bitmap_ns),
        ],
    })
}
