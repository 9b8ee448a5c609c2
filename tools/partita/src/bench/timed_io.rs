//! `partita bench timed-io`: how close to the asked counter value Partita
//! performs a timed output (BlueVisor's E = |T_done - T_asked|, in counter
//! ticks), read from the trace of boots of the test guest's `tio` mode:
//! alone on its pCPU, and beside a busy partition of lower priority on the
//! same pCPU, whose guest Partita interrupts for each output. Wall-clock
//! and under `-icount`; reported, never asserted.
//!
//! BlueVisor's anchor: E = 0 cycles, its I/O done by hardware.

use super::qemu;
use super::report::{self, today, Column, Table};
use super::stats::median;
use super::{progress_bar, Pass};
use crate::build::BuildOutput;
use crate::config::raw::{RawConfig, RawTimedIo};
use crate::config::Config;
use crate::guests;
use crate::paths;
use crate::run::RunOptions;
use crate::trace::read_file;
use crate::trace::timed_io::operations;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

pub const DEFAULT_NAME: &str = "timed-io";
pub const DEFAULT_RUNS: u32 = 3;
pub const DEFAULT_OUTPUTS: u32 = 200;
/// `-icount shift=0`: 16 instructions per counter tick.
pub const DEFAULT_SHIFT: u32 = 0;
pub const DEFAULT_LEAD_US: u64 = 20;
/// Between outputs at least: the guest reads its line back a quarter gap
/// before each output, which must come before Partita's timer takes the
/// pCPU, so a gap is over four leads.
const MIN_GAP_US: u64 = 500;
const RUN_LIMIT_S: u64 = 300;
/// QEMU `virt`'s PL061, where the guest reads its lines back.
const PL061: u64 = 0x0903_0000;
const TRACE_EVENTS: u32 = 65_536;

pub struct Options {
    pub runs: u32,
    pub outputs: u32,
    pub shift: u32,
    pub lead_us: u64,
    pub name: String,
}

/// The two setups: the outputs' partition alone on pCPU 1, or sharing it
/// with a spinning partition of lower priority.
pub const SETUPS: [&str; 2] = ["alone", "beside a busy partition"];

/// The gap between outputs for a lead of `lead_us`.
pub fn gap_us(lead_us: u64) -> u64 {
    MIN_GAP_US.max(5 * lead_us)
}

pub fn config(outputs: u32, lead_us: u64, busy: bool, guest: &Path) -> RawConfig {
    let gap = gap_us(lead_us);
    let args = format!("tio={outputs} tio_pins=1 tio_gap_us={gap} tio_at_ms=100 ticks=1 period_ms=1");
    let io = qemu::partition("io", &[1], &args, guest).priority(200);
    let mut config = RawConfig::new()
        .cpus(2)
        .partition(io)
        .timed_io(RawTimedIo::with_lead(lead_us).grant("io", &[0], 16, Some(PL061)))
        .trace(TRACE_EVENTS);
    if busy {
        // It ticks, spinning, until `io` (partition 0) has powered off.
        config = config.partition(qemu::partition("busy", &[1], "until-off=0 ticks=0 period_ms=5", guest).priority(50));
    }
    config
}

/// E of every output of one pass, in counter ticks.
#[derive(Clone, Debug, PartialEq)]
pub struct Errors {
    pub setup: &'static str,
    pub pass: Pass,
    pub ticks: Vec<u64>,
}

impl Errors {
    fn mean(&self) -> f64 {
        self.ticks.iter().sum::<u64>() as f64 / self.ticks.len().max(1) as f64
    }

    fn median(&self) -> f64 {
        median(self.ticks.iter().map(|&e| e as f64).collect())
    }

    fn max(&self) -> u64 {
        self.ticks.iter().copied().max().unwrap_or(0)
    }

    /// The share of outputs within one tick, in percent.
    fn within_one_tick(&self) -> f64 {
        let within = self.ticks.iter().filter(|&&e| e <= 1).count();
        100.0 * within as f64 / self.ticks.len().max(1) as f64
    }
}

pub struct Report {
    pub runs: u32,
    pub outputs: u32,
    pub lead_us: u64,
    pub passes: Vec<Errors>,
}

pub fn run(opts: &Options) -> Result<Report> {
    let hypervisor = qemu::prepare()?;
    let guest = guests::image("test-guest.elf");
    let builds = [
        qemu::generated(&opts.name, "alone", &config(opts.outputs, opts.lead_us, false, &guest), &hypervisor)?,
        qemu::generated(&opts.name, "busy", &config(opts.outputs, opts.lead_us, true, &guest), &hypervisor)?,
    ];
    let passes = [Pass::WALL, Pass::icount(opts.shift)];
    let bar = progress_bar(passes.len() * builds.len() * opts.runs as usize);
    let mut results = Vec::new();
    for pass in passes {
        for (setup, build) in SETUPS.into_iter().zip(&builds) {
            let mut ticks = Vec::new();
            for _ in 0..opts.runs {
                bar.set_message(format!("{setup}, {}", pass.label()));
                ticks.extend(boot(build, pass.shift, bar.position() > 0)?);
                bar.inc(1);
            }
            results.push(Errors { setup, pass, ticks });
        }
    }
    bar.finish_and_clear();
    Ok(Report { runs: opts.runs, outputs: opts.outputs, lead_us: opts.lead_us, passes: results })
}

/// One boot's E of each output of partition `io`.
fn boot((config, output): &(Config, BuildOutput), icount: Option<u32>, quiet: bool) -> Result<Vec<u64>> {
    let opts = RunOptions { seconds: Some(RUN_LIMIT_S), icount, ..RunOptions::default() };
    let report = qemu::to_power_off(output, &config.system, &opts, quiet)?;
    let Some(path) = report.trace else { bail!("the boot left no trace in {}", output.out_dir.display()) };
    let (_, trace) = read_file(&path).with_context(|| format!("reading {}", path.display()))?;
    let errors: Vec<u64> = operations(&trace).iter().filter(|o| o.partition == 0).map(|o| o.error()).collect();
    if errors.is_empty() {
        bail!("no timed output in {}", path.display());
    }
    Ok(errors)
}

const COLUMNS: [Column; 7] = [
    Column::left("setup", "setup", 24),
    Column::left("pass", "pass", 9),
    Column::right("outputs", "outputs", 7),
    Column::right("median E", "median E (ticks)", 8),
    Column::right("mean E", "mean E (ticks)", 8),
    Column::right("max E", "max E (ticks)", 8),
    Column::right("≤ 1 tick", "within 1 tick (%)", 8),
];

impl Report {
    /// One row per setup and pass, for the terminal and the report alike.
    pub fn table(&self) -> Table {
        let mut table = Table::new(&COLUMNS);
        for errors in &self.passes {
            table.row(vec![
                errors.setup.to_string(),
                errors.pass.label(),
                errors.ticks.len().to_string(),
                format!("{:.0}", errors.median()),
                format!("{:.2}", errors.mean()),
                errors.max().to_string(),
                format!("{:.1}", errors.within_one_tick()),
            ]);
        }
        table
    }

    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# Timed-output error ({})\n\n`partita bench timed-io --runs {} --outputs {} --lead-us {}`: E = |done - asked| of \
             every output in counter ticks (62.5 MHz: 16 ns), from the trace of {} boots per line, one output every \
             {} µs; Partita's timer fires {} µs before each output (`--lead-us`) and the pCPU polls the counter for \
             the rest. BlueVisor: E = 0 cycles, in hardware.\n\n",
            today(),
            self.runs,
            self.outputs,
            self.lead_us,
            self.runs,
            gap_us(self.lead_us),
            self.lead_us
        );
        out += &self.table().markdown();
        out += "\nUnder wall-clock time guest time is the host's: an output is late by however long the host \
                kept QEMU's thread of that pCPU from running around the asked time (or by how much the timer \
                interrupt came after the lead); under `-icount` guest time counts instructions. The busy partition \
                spins at a lower priority on the same pCPU: Partita's timer takes the pCPU from it for each \
                output.\n";
        out
    }
}

/// Writes `<out>/bench/<name>/timed-io-<date>.md`.
pub fn write(report: &Report, name: &str) -> Result<PathBuf> {
    let files = [(format!("timed-io-{}.md", today()), report.markdown())];
    let written = report::write(&paths::bench_out(name), &files)?;
    Ok(written.into_iter().next().expect("one file was written"))
}
