//! `partita bench thread-metric|coremark|sched-prio|all`: the guest RTOS's
//! benchmarks (`guests/rtos/bench`), natively and under Partita in one
//! command, reported as Ker-ONE reports Thread-Metric (its Table 3 and
//! Figure 13): the native score, the virtualized score and R_P = S_vm /
//! S_native per test and setup. Nothing is asserted, but a guest self-check
//! that fails is reported as such and makes the command fail.
//!
//! Runs are interleaved (run 1 of every setup, then run 2, ...) rather than
//! taken setup by setup, so that a change in the host's load over the
//! minutes a bench takes falls on native and virtualized runs alike.
//!
//! Every boot is stopped at the RTOS's `bench done` line, because in the
//! `loaded` and `shared` setups a test guest spins forever and the machine
//! would never power off by itself.
//!
//! In layers: [`parse`] reads the guest's lines, [`setups`] boots the RTOS
//! in each setup, [`score`] turns runs into medians and R_P, [`report`]
//! writes the tables and [`chart`] the charts.

pub mod chart;
pub mod parse;
pub mod report;
pub mod score;
pub mod setups;

use super::{progress_bar, Mode, Pass};
use crate::paths;
use anyhow::{ensure, Result};
use report::Report;
use serde::{Deserialize, Serialize};
use setups::Machine;
use std::path::PathBuf;

pub const DEFAULT_RUNS: u32 = 3;
/// The guest's own defaults: a few seconds of guest time per test.
pub const DEFAULT_PERIOD_MS: u32 = 3000;
pub const DEFAULT_COREMARK_MS: u32 = 3000;
/// The RTOS's last line; it powers off right after.
pub const LAST_LINE: &str = "bench done";
/// The partition the RTOS runs in under Partita.
pub const RTOS: &str = "rtos";
/// The test guest ticking forever, busy-waiting on the counter between
/// ticks: a partition that never idles.
pub const BUSY_BOOTARGS: &str = "ticks=0 period_ms=1000";
/// Ker-ONE's Table 3 (para-virtualized uC/OS-II on a Zynq-7000): R_P in %
/// for the tests it ran, keyed by our test names.
pub const KER_ONE_RP: [(&str, f64); 7] = [
    ("basic", 98.6),
    ("preemptive", 90.1),
    ("message", 90.9),
    ("memory", 81.3),
    ("synchronization", 83.7),
    ("interrupt", 79.2),
    ("interrupt-preemption", 86.0),
];
/// XtratuM's CoreMark loss on one core, in %.
pub const XTRATUM_COREMARK_LOSS: f64 = 0.18;
/// Partita's targets, in % (SPEC: figures to beat).
pub const TARGET_RP: f64 = 99.0;
pub const TARGET_RP_INTERRUPT: f64 = 97.0;
pub const TARGET_COREMARK_LOSS: f64 = 0.1;
/// The Thread-Metric tests in the order `bench=all` runs them.
pub const TM_TESTS: [&str; 10] = ["tm0", "tm1", "tm2", "tm3", "tm4", "tm5", "tm6", "tm7", "tm3svc", "tm4svc"];

/// Which benchmarks: the subcommand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Suite {
    ThreadMetric,
    CoreMark,
    SchedPrio,
    All,
}

impl Suite {
    pub fn name(self) -> &'static str {
        match self {
            Suite::ThreadMetric => "thread-metric",
            Suite::CoreMark => "coremark",
            Suite::SchedPrio => "sched-prio",
            Suite::All => "all",
        }
    }

    fn scores(self) -> bool {
        self != Suite::SchedPrio
    }

    fn curve(self) -> bool {
        matches!(self, Suite::SchedPrio | Suite::All)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Setup {
    /// QEMU alone, the RTOS booted as the kernel.
    Native,
    /// Partita, the RTOS alone on an exclusive pCPU.
    Alone,
    /// As `alone`, with `interrupts = "direct"`: its timer and SGIs never
    /// exit.
    Direct,
    /// As `alone`, plus a busy partition on another pCPU.
    Loaded,
    /// Partita, the RTOS (high priority) sharing its pCPU with a busy
    /// low-priority partition.
    Shared,
}

impl Setup {
    pub const ALL: [Setup; 5] = [Setup::Native, Setup::Alone, Setup::Direct, Setup::Loaded, Setup::Shared];
    pub const VIRTUALIZED: [Setup; 4] = [Setup::Alone, Setup::Direct, Setup::Loaded, Setup::Shared];

    pub fn name(self) -> &'static str {
        match self {
            Setup::Native => "native",
            Setup::Alone => "alone",
            Setup::Direct => "direct",
            Setup::Loaded => "loaded",
            Setup::Shared => "shared",
        }
    }

    /// Under `-icount` guest time advances with the instructions of every
    /// busy vCPU, which QEMU runs round robin in one thread: a busy
    /// neighbour would take a share of the RTOS's guest time whatever
    /// Partita did, so `loaded` is a wall-clock setup only.
    pub fn runs_in(self, pass: Pass) -> bool {
        !(self == Setup::Loaded && pass.mode == Mode::Icount)
    }
}

/// The RTOS's ready queue (`sched=` bootarg).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Queue {
    Bitmap,
    Linear,
}

impl Queue {
    pub const ALL: [Queue; 2] = [Queue::Bitmap, Queue::Linear];

    pub fn name(self) -> &'static str {
        match self {
            Queue::Bitmap => "bitmap",
            Queue::Linear => "linear",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    pub suite: Suite,
    pub runs: u32,
    /// Adds a pass under `-icount shift=N` after the wall-clock one.
    pub icount: Option<u32>,
    pub period_ms: u32,
    pub coremark_ms: u32,
    /// `<out>/bench/<name>/` gets `<suite>-<date>.md`, its charts and every
    /// boot's consoles, `target/bench/<name>-*.toml` the configurations.
    pub name: String,
}

impl Options {
    pub fn new(suite: Suite) -> Self {
        Options {
            suite,
            runs: DEFAULT_RUNS,
            icount: None,
            period_ms: DEFAULT_PERIOD_MS,
            coremark_ms: DEFAULT_COREMARK_MS,
            name: suite.name().to_string(),
        }
    }

    fn passes(&self) -> Vec<Pass> {
        Pass::with_icount(self.icount)
    }
}

/// Runs every boot of the suite in every setup, pass and run, then writes
/// the report and its charts into `<out>/bench/<name>/`; returns the report
/// and the files written.
pub fn run(opts: &Options) -> Result<(Report, Vec<PathBuf>)> {
    ensure!(opts.runs >= 1, "--runs must be at least 1");
    ensure!(opts.period_ms >= 1 && opts.coremark_ms >= 1, "periods must be at least 1 ms");
    let machine = Machine::new(&opts.name)?;
    let specs = setups::boots(opts.suite, opts.period_ms, opts.coremark_ms);
    let passes = opts.passes();
    let setups_per_run: usize = passes.iter().map(|&pass| Setup::ALL.iter().filter(|s| s.runs_in(pass)).count()).sum();
    let progress = progress_bar(setups_per_run * specs.len() * opts.runs as usize);
    let measured = setups::measure(opts, &machine, &specs, &passes, &progress);
    // A failed run must not leave a half-drawn bar above its error.
    progress.finish_and_clear();
    let report = Report::new(opts, &super::report::today(), measured?);
    let written = report.write(&paths::bench_out(&opts.name))?;
    Ok((report, written))
}
