//! `partita bench linux`: vlk's Fig. 8. What Linux's throughput loses under
//! Partita: hackbench natively (QEMU alone, the same kernel, initramfs and
//! two vCPUs), under Partita alone on two pCPUs, and with a 1 kHz RTOS
//! taking a fraction f of one of those pCPUs at a higher priority, with and
//! without vlk's migration (the Linux vCPU leaves for the other pCPU while
//! the RTOS runs). Then cyclictest natively and under Partita alone.
//! Wall-clock and `-icount` passes. Reported, never asserted.
//!
//! vlk's anchor: 1.4 % throughput loss with a 1 kHz RTOS beside Linux.

use super::qemu::{self, Until};
use super::report::{self, today, Column, Table};
use super::stats::median;
use super::Pass;
use crate::chart::{self, palette, Curve, LineChart};
use crate::config::raw::{RawConfig, RawPartition};
use crate::guests;
use crate::paths;
use crate::run::{self, RunOptions, Source};
use anyhow::{bail, Context, Result};
use plotters::prelude::SeriesLabelPosition;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub const DEFAULT_NAME: &str = "linux";
pub const DEFAULT_RUNS: u32 = 1;
/// One instruction per nanosecond: a 1 GHz core, as on the boards Partita
/// targets, so that a fixed cost in instructions (a vCPU switch, an exit)
/// weighs in a 1 ms RTOS period as it would there. With 4, the other
/// benchmarks' choice, the core would run at 62.5 MHz and every such cost
/// would look 16 times heavier against the millisecond.
pub const DEFAULT_SHIFT: u32 = 0;
/// vlk's Fig. 8 axis: the RTOS's share of the pCPU it shares with Linux.
pub const DEFAULT_FRACTIONS: [u32; 5] = [0, 10, 30, 50, 70];
/// The RTOS's period: a 1 kHz task.
const RTOS_PERIOD_US: u64 = 1000;
/// vlk's loss with a 1 kHz RTOS beside Linux, in percent.
pub const VLK_LOSS_PERCENT: f64 = 1.4;
/// A boot that takes longer than this has hung.
const BOOT_LIMIT: Duration = Duration::from_secs(600);
/// Linux's memory, wherever the allocator puts it.
const LINUX_RAM: u64 = 0x4000_0000;
const LINUX_SIZE: u64 = 256 << 20;
const LINUX_PRIORITY: u8 = 64;
const RTOS_PRIORITY: u8 = 200;
/// The pCPUs Linux's two vCPUs run on; the RTOS shares the first.
const LINUX_CPUS: [u32; 2] = [2, 3];

#[derive(Clone, Debug)]
pub struct Options {
    pub runs: u32,
    pub fractions: Vec<u32>,
    pub shift: u32,
    /// Also a wall-clock pass (the `-icount` pass always runs).
    pub wall: bool,
    pub name: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            runs: DEFAULT_RUNS,
            fractions: DEFAULT_FRACTIONS.to_vec(),
            shift: DEFAULT_SHIFT,
            wall: true,
            name: DEFAULT_NAME.to_string(),
        }
    }
}

/// Where Linux runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Setup {
    /// QEMU alone, two CPUs.
    Native,
    /// Under Partita, alone on two pCPUs it owns (`exclusive`).
    Alone,
    /// Beside an RTOS busy `percent` of each millisecond on Linux's first
    /// pCPU, Linux's vCPU 0 leaving for the second while it runs, or not.
    Shared { percent: u32, migrate: bool },
}

impl Setup {
    /// The folder of its boots' logs.
    fn variant(self, job: Job, pass: Pass) -> String {
        let what = match self {
            Setup::Native => "native".to_string(),
            Setup::Alone => "alone".to_string(),
            Setup::Shared { percent, migrate: false } => format!("rtos{percent}"),
            Setup::Shared { percent, migrate: true } => format!("rtos{percent}-migrate"),
        };
        let pass = pass.shift.map_or("wall".to_string(), |s| format!("icount{s}"));
        format!("{}-{what}-{pass}", job.name())
    }

    pub fn label(self) -> String {
        match self {
            Setup::Native => "native".into(),
            Setup::Alone => "Partita, alone".into(),
            Setup::Shared { percent, migrate: false } => format!("RTOS {percent} %"),
            Setup::Shared { percent, migrate: true } => format!("RTOS {percent} %, migration"),
        }
    }
}

/// What Linux runs: one of guests/linux's jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Job {
    Hackbench,
    Cyclictest,
}

impl Job {
    fn name(self) -> &'static str {
        match self {
            Job::Hackbench => "hackbench",
            Job::Cyclictest => "cyclictest",
        }
    }

    /// The job's last line; its result is the line before.
    fn until(self) -> Until {
        Until { line: "partita-linux: job ... exit=", is_it: |l| l.starts_with("partita-linux: job ") }
    }
}

/// `partita-linux: hackbench time=1.102` -> 1.102 s.
pub fn parse_hackbench(text: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix("partita-linux: hackbench time=")?.trim().parse().ok())
}

/// cyclictest's summary, in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Latency {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
}

/// `partita-linux: cyclictest min=73 avg=179 max=3698`.
pub fn parse_cyclictest(text: &str) -> Option<Latency> {
    let line = text.lines().find_map(|l| l.strip_prefix("partita-linux: cyclictest min="))?;
    let mut values = line.split(|c: char| !c.is_ascii_digit()).filter(|w| !w.is_empty()).map(str::parse::<f64>);
    Some(Latency { min: values.next()?.ok()?, avg: values.next()?.ok()?, max: values.next()?.ok()? })
}

fn linux_image(name: &str) -> PathBuf {
    guests::image(&format!("linux/{name}"))
}

fn bootargs(job: Job) -> String {
    format!("console=ttyAMA0 partita.job={}", job.name())
}

/// Linux on [`LINUX_CPUS`], its console the emulated PL011 (the jobs need
/// no input), vCPU 0 migrating if asked.
fn linux_partition(job: Job, migrate: bool) -> RawPartition {
    let mut linux = RawPartition::new("linux", &LINUX_CPUS)
        .bootargs(&bootargs(job))
        .memory(LINUX_RAM, LINUX_SIZE)
        .linux(&linux_image("Image"), Some(&linux_image("initramfs.cpio")))
        .priority(LINUX_PRIORITY);
    if migrate {
        linux = linux.migrate(0, &LINUX_CPUS[1..]);
    }
    linux
}

/// Periods the benchmark's RTOS runs: more than any boot lasts.
const FOREVER: u64 = 4_000_000_000;

/// The test guest as a 1 kHz task busy `percent` of each of `periods`.
fn rtos_partition(percent: u32, periods: u64) -> RawPartition {
    let busy = RTOS_PERIOD_US * u64::from(percent) / 100;
    let idle = RTOS_PERIOD_US - busy;
    let args = format!("duty_busy_us={busy} duty_idle_us={idle} duty_cycles={periods} ticks=1 period_ms=1");
    qemu::partition("rtos", &LINUX_CPUS[..1], &args, &guests::image("test-guest.elf")).priority(RTOS_PRIORITY)
}

pub fn config(setup: Setup, job: Job) -> RawConfig {
    config_for(setup, job, FOREVER)
}

/// [`config`] with an RTOS that stops after `periods` milliseconds.
pub fn config_for(setup: Setup, job: Job, periods: u64) -> RawConfig {
    let config = RawConfig::new().cpus(4);
    match setup {
        // Alone, Linux owns its pCPUs: its WFIs stay in the guest, as a
        // deployment that gives Linux whole cores would have it.
        Setup::Native | Setup::Alone => config.partition(linux_partition(job, false).exclusive()),
        Setup::Shared { percent, migrate } => {
            config.partition(rtos_partition(percent, periods)).partition(linux_partition(job, migrate))
        }
    }
}

/// The same kernel, initramfs and command line on QEMU alone.
fn native_command(job: Job, icount: Option<u32>) -> Command {
    let mut qemu = Command::new("qemu-system-aarch64");
    qemu.args(["-machine", "virt,gic-version=3", "-cpu", "cortex-a72", "-smp", "2"])
        .args(["-m", &format!("{}M", LINUX_SIZE >> 20)])
        .args(run::HEADLESS)
        .arg("-kernel")
        .arg(linux_image("Image"))
        .arg("-initrd")
        .arg(linux_image("initramfs.cpio"))
        .args(["-append", &bootargs(job)]);
    run::add_icount(&mut qemu, icount);
    qemu
}

struct Bench {
    hypervisor: PathBuf,
    name: String,
}

impl Bench {
    /// Boots `setup` until Linux's job is done; returns what Linux printed.
    fn boot(&self, setup: Setup, job: Job, pass: Pass) -> Result<String> {
        let variant = setup.variant(job, pass);
        let dir = paths::bench_out(&self.name).join(&variant);
        let followed = if setup == Setup::Native {
            qemu::follow(native_command(job, pass.shift), &[], Source::Hypervisor, &dir, job.until(), BOOT_LIMIT)?
        } else {
            let (config, output) = qemu::generated(&self.name, &variant, &config(setup, job), &self.hypervisor)?;
            let names: Vec<String> = config.system.partitions.iter().map(|p| p.name.clone()).collect();
            let index = names.iter().position(|n| n == "linux").context("no linux partition")?;
            let opts = RunOptions { icount: pass.shift, ..RunOptions::default() };
            let command = run::qemu_command(&output, &config.system, &opts);
            qemu::follow(command, &names, Source::Partition(index), &dir, job.until(), BOOT_LIMIT)?
        };
        if let Some(failure) = followed.failure {
            bail!("{} ({}): {failure}; logs in {}", setup.label(), pass.label(), dir.display());
        }
        Ok(followed.text)
    }

    fn hackbench(&self, setup: Setup, pass: Pass, runs: u32) -> Result<f64> {
        let mut times = Vec::new();
        for _ in 0..runs {
            let text = self.boot(setup, Job::Hackbench, pass)?;
            times.push(
                parse_hackbench(&text).with_context(|| format!("{}: no hackbench time in\n{text}", setup.label()))?,
            );
        }
        Ok(median(times))
    }

    fn cyclictest(&self, setup: Setup, pass: Pass) -> Result<Latency> {
        let text = self.boot(setup, Job::Cyclictest, pass)?;
        parse_cyclictest(&text).with_context(|| format!("{}: no cyclictest summary in\n{text}", setup.label()))
    }
}

/// hackbench's time in one setup, and what it lost against native.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub setup: Setup,
    /// Seconds, median over the runs.
    pub time: f64,
    /// 1 - native time / this time: the share of native throughput lost.
    pub loss: f64,
    /// 1 - alone time / this time: what the RTOS beside Linux costs it,
    /// Partita's own cost for Linux apart.
    pub loss_to_alone: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PassResult {
    pub pass: Pass,
    pub points: Vec<Point>,
    pub cyclictest_native: Latency,
    pub cyclictest_partita: Latency,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub runs: u32,
    pub fractions: Vec<u32>,
    pub passes: Vec<PassResult>,
}

/// Every setup a pass measures, native first.
pub fn setups(fractions: &[u32]) -> Vec<Setup> {
    let shared = |migrate| fractions.iter().map(move |&percent| Setup::Shared { percent, migrate });
    [Setup::Native, Setup::Alone].into_iter().chain(shared(false)).chain(shared(true)).collect()
}

/// The share of native throughput lost in `time` (throughput is 1 / time).
pub fn loss(native: f64, time: f64) -> f64 {
    1.0 - native / time
}

pub fn run(opts: &Options) -> Result<Report> {
    let bench = Bench { hypervisor: qemu::prepare()?, name: opts.name.clone() };
    let mut passes = vec![Pass::icount(opts.shift)];
    if opts.wall {
        passes.push(Pass::WALL);
    }
    let setups = setups(&opts.fractions);
    let bar = super::progress_bar(passes.len() * (setups.len() * opts.runs as usize + 2));
    let mut results = Vec::new();
    for pass in passes {
        let mut times = Vec::new();
        for &setup in &setups {
            times.push((setup, bench.hackbench(setup, pass, opts.runs)?));
            bar.inc(u64::from(opts.runs));
        }
        let (native, alone) = (times[0].1, times[1].1);
        let point = |(setup, time)| Point { setup, time, loss: loss(native, time), loss_to_alone: loss(alone, time) };
        let points = times.into_iter().map(point).collect();
        let cyclictest_native = bench.cyclictest(Setup::Native, pass)?;
        let cyclictest_partita = bench.cyclictest(Setup::Alone, pass)?;
        bar.inc(2);
        results.push(PassResult { pass, points, cyclictest_native, cyclictest_partita });
    }
    bar.finish_and_clear();
    Ok(Report { runs: opts.runs, fractions: opts.fractions.clone(), passes: results })
}

const HACKBENCH_COLUMNS: [Column; 5] = [
    Column::left("setup", "setup", 26),
    Column::left("pass", "pass", 9),
    Column::right("time s", "hackbench (s)", 10),
    Column::right("loss", "loss vs native", 8),
    Column::right("vs alone", "loss vs Partita alone", 8),
];

const CYCLICTEST_COLUMNS: [Column; 5] = [
    Column::left("pass", "pass", 9),
    Column::left("where", "where", 10),
    Column::right("min", "min (µs)", 8),
    Column::right("avg", "avg (µs)", 8),
    Column::right("max", "max (µs)", 8),
];

fn percent(share: f64) -> String {
    format!("{:.1} %", share * 100.0)
}

impl Report {
    fn hackbench_table(&self) -> Table {
        let mut table = Table::new(&HACKBENCH_COLUMNS);
        for pass in &self.passes {
            for point in &pass.points {
                let loss = if point.setup == Setup::Native { "-".to_string() } else { percent(point.loss) };
                let shared = matches!(point.setup, Setup::Shared { .. });
                let to_alone = if shared { percent(point.loss_to_alone) } else { "-".to_string() };
                table.row(vec![point.setup.label(), pass.pass.label(), format!("{:.3}", point.time), loss, to_alone]);
            }
        }
        table
    }

    fn cyclictest_table(&self) -> Table {
        let mut table = Table::new(&CYCLICTEST_COLUMNS);
        for pass in &self.passes {
            for (place, l) in [("native", pass.cyclictest_native), ("Partita", pass.cyclictest_partita)] {
                let cells = [l.min, l.avg, l.max].map(|v| format!("{v:.0}"));
                table.row([vec![pass.pass.label(), place.to_string()], cells.to_vec()].concat());
            }
        }
        table
    }

    pub fn table(&self) -> String {
        format!("{}\n{}", self.hackbench_table().terminal(), self.cyclictest_table().terminal())
    }

    /// What a 1 kHz RTOS that does next to nothing (f = 0 %) costs Linux,
    /// against Linux alone under Partita and against native: what vlk's
    /// 1.4 % compares with.
    fn one_khz_loss(&self, pass: &PassResult) -> Option<(f64, f64)> {
        let point = pass.points.iter().find(|p| p.setup == Setup::Shared { percent: 0, migrate: false })?;
        Some((point.loss_to_alone, point.loss))
    }

    pub fn markdown(&self, chart_files: &[String]) -> String {
        let mut out = format!(
            "# Linux beside an RTOS: vlk's Fig. 8 ({})\n\n`partita bench linux --runs {} --fractions {}`. hackbench \
             (`-g 2 -f 10 -l 100`, guests/linux/jobs/hackbench) in Debian 12's arm64 kernel with two vCPUs: natively \
             on QEMU alone (`-smp 2`), under Partita alone on pCPUs 2 and 3, which it owns (`exclusive`), and \
             beside a 1 kHz RTOS (the test \
             guest's `duty` task) of higher priority that is busy f % of each millisecond on pCPU 2, without and \
             with vlk's migration (Linux's vCPU 0 moves to pCPU 3 while the RTOS runs). Throughput loss = 1 - \
             native time / time. Medians over {} boot(s) per point.\n\n",
            today(),
            self.runs,
            self.fractions.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
            self.runs
        );
        out += &self.hackbench_table().markdown();
        for pass in &self.passes {
            if let Some((to_alone, to_native)) = self.one_khz_loss(pass) {
                let _ = writeln!(
                    out,
                    "\n{}: a 1 kHz RTOS that only wakes on Linux's pCPU costs Linux {} of its throughput under \
                     Partita alone (target 1 %; vlk: {VLK_LOSS_PERCENT} %); {} against native.",
                    pass.pass.label(),
                    percent(to_alone),
                    percent(to_native)
                );
            }
        }
        out += "\n## cyclictest\n\nOne SCHED_FIFO thread at priority 80 waking every 1 ms, 2000 times \
                (guests/linux/jobs/cyclictest); natively and under Partita alone.\n\n";
        out += &self.cyclictest_table().markdown();
        for pass in &self.passes {
            let (n, p) = (pass.cyclictest_native, pass.cyclictest_partita);
            let _ = writeln!(
                out,
                "\n{}: average latency {:.2}x native, maximum {:.2}x.",
                pass.pass.label(),
                p.avg / n.avg.max(1.0),
                p.max / n.max.max(1.0)
            );
        }
        for file in chart_files {
            let _ = write!(out, "\n![throughput loss]({file})\n");
        }
        out += "\nUnder `-icount` guest time counts instructions, so the figures do not depend on the host's load, \
                but QEMU then runs all CPUs on one host thread in turn. Wall-clock figures come from QEMU's \
                multi-threaded TCG on a shared host and vary from run to run.\n";
        out
    }

    /// Loss against f, a curve per pass and migration choice.
    pub fn chart(&self, pass: &PassResult) -> Result<String> {
        let curve = |migrate: bool, name: &str, color| Curve {
            name: name.to_string(),
            color,
            width: 2,
            points: pass
                .points
                .iter()
                .filter_map(|p| match p.setup {
                    Setup::Shared { percent, migrate: m } if m == migrate => Some((f64::from(percent), p.loss * 100.0)),
                    _ => None,
                })
                .collect(),
        };
        let alone = pass.points.iter().find(|p| p.setup == Setup::Alone).map_or(0.0, |p| p.loss * 100.0);
        let curves = vec![
            Curve {
                name: "Partita, alone".into(),
                color: palette::GRAY,
                width: 1,
                points: vec![(0.0, alone), (100.0, alone)],
            },
            curve(false, "RTOS beside Linux", palette::BLUE),
            curve(true, "RTOS beside Linux, migration", palette::ORANGE),
        ];
        let top = curves.iter().flat_map(|c| c.points.iter().map(|p| p.1)).fold(1.0, f64::max) * 1.15;
        let bottom = curves.iter().flat_map(|c| c.points.iter().map(|p| p.1)).fold(0.0, f64::min).min(0.0) * 1.15;
        chart::line_chart(&LineChart {
            caption: format!("Linux throughput loss vs RTOS share ({})", pass.pass.label()),
            size: (760, 480),
            x: 0.0..100.0,
            y: bottom..top,
            x_desc: "RTOS share of pCPU 2 (%)".into(),
            y_desc: "hackbench throughput loss (%)".into(),
            y_label_area: 50,
            key_at: SeriesLabelPosition::UpperLeft,
            dot: 3,
            curves,
        })
    }
}

/// Writes `<out>/bench/<name>/linux-<date>.md`, `report.json` and a chart
/// per pass.
pub fn write(report: &Report, name: &str) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for pass in &report.passes {
        let file = format!("fig8-{}.svg", pass.pass.label().replace(' ', ""));
        files.push((file, report.chart(pass)?));
    }
    let charts: Vec<String> = files.iter().map(|(f, _)| f.clone()).collect();
    files.push((format!("linux-{}.md", today()), report.markdown(&charts)));
    files.push(("report.json".to_string(), report::json(report)?));
    report::write(&paths::bench_out(name), &files)
}

/// The report's own path among what [`write`] wrote.
pub fn markdown_path(written: &[PathBuf]) -> Option<&Path> {
    written.iter().map(PathBuf::as_path).find(|p| p.extension().is_some_and(|e| e == "md"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_jobs_summaries() {
        let text = "Running in process mode\nTime: 1.102\npartita-linux: hackbench time=1.102\n";
        assert_eq!(parse_hackbench(text), Some(1.102));
        let text = "T: 0 ...\npartita-linux: cyclictest min=73 avg=179 max=3698\n";
        assert_eq!(parse_cyclictest(text), Some(Latency { min: 73.0, avg: 179.0, max: 3698.0 }));
        assert_eq!(parse_cyclictest("partita-linux: cyclictest failed: exit 1"), None);
    }

    #[test]
    fn every_fraction_is_measured_with_and_without_migration() {
        let all = setups(&[0, 50]);
        assert_eq!(all.len(), 6);
        assert_eq!(&all[..2], [Setup::Native, Setup::Alone]);
        assert!(all.contains(&Setup::Shared { percent: 50, migrate: true }));
        assert!((loss(1.0, 1.25) - 0.2).abs() < 1e-12);
    }

    #[test]
    fn the_rtos_shares_linuxs_first_pcpu_above_it() {
        let config = config(Setup::Shared { percent: 30, migrate: true }, Job::Hackbench);
        let (rtos, linux) = (&config.partition[0], &config.partition[1]);
        assert!(rtos.bootargs.as_deref().unwrap().contains("duty_busy_us=300 duty_idle_us=700"));
        assert!(rtos.priority > linux.priority);
        assert_eq!(linux.migrate.len(), 1);
        assert_eq!(config.partition.len(), 2);
        assert_eq!(super::config(Setup::Alone, Job::Cyclictest).partition.len(), 1);
    }
}
