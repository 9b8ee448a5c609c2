//! `partita bench linux`: vlk's Fig. 8. What Linux's throughput loses under
//! Partita: hackbench natively (QEMU alone, the same kernel, initramfs and
//! two vCPUs), under Partita alone on two pCPUs, and with a 1 kHz RTOS
//! taking a fraction f of one of those pCPUs at a higher priority, with and
//! without vlk's migration (the Linux vCPU leaves for the other pCPU while
//! the RTOS runs). Then cyclictest natively and under Partita alone.
//! Wall-clock and `-icount` passes. Reported, never asserted.
//!
//! hackbench's time alone cannot resolve 1 %: from boot to boot it moves
//! by a few percent even under `-icount`, and QEMU's turn-taking makes any
//! 1 kHz timer in the machine cost Linux time, on whichever pCPU it is.
//! So each boot runs hackbench several times, a control puts the same
//! RTOS on a pCPU of its own, and a traced boot measures what Partita
//! itself takes from Linux at each of the RTOS's activations.
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
use partita_core::trace::{OutReason, Trace};
use plotters::prelude::SeriesLabelPosition;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub const DEFAULT_NAME: &str = "linux";
pub const DEFAULT_RUNS: u32 = 1;
pub const DEFAULT_PER_BOOT: u32 = 5;
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
    /// hackbench runs in each boot.
    pub per_boot: u32,
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
            per_boot: DEFAULT_PER_BOOT,
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
    /// As alone, with the RTOS of `Shared { percent: 0 }` on a pCPU of its
    /// own: what its timer costs Linux through QEMU, not through Partita.
    Apart,
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
            Setup::Apart => "rtos0-apart".to_string(),
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
            Setup::Apart => "RTOS 0 %, own pCPU".into(),
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

/// Every `partita-linux: hackbench time=1.102` line -> 1.102 s each.
pub fn parse_hackbench(text: &str) -> Vec<f64> {
    text.lines().filter_map(|l| l.strip_prefix("partita-linux: hackbench time=")?.trim().parse().ok()).collect()
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

fn bootargs(job: Job, per_boot: u32) -> String {
    format!("console=ttyAMA0 partita.job={} partita.hackbench_runs={per_boot}", job.name())
}

/// Linux on [`LINUX_CPUS`], its console the emulated PL011 (the jobs need
/// no input), vCPU 0 migrating if asked.
fn linux_partition(job: Job, per_boot: u32, migrate: bool) -> RawPartition {
    let mut linux = RawPartition::new("linux", &LINUX_CPUS)
        .bootargs(&bootargs(job, per_boot))
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
fn rtos_partition(percent: u32, periods: u64, cpu: u32) -> RawPartition {
    let busy = RTOS_PERIOD_US * u64::from(percent) / 100;
    let idle = RTOS_PERIOD_US - busy;
    let args = format!("duty_busy_us={busy} duty_idle_us={idle} duty_cycles={periods} ticks=1 period_ms=1");
    qemu::partition("rtos", &[cpu], &args, &guests::image("test-guest.elf")).priority(RTOS_PRIORITY)
}

pub fn config(setup: Setup, job: Job, per_boot: u32) -> RawConfig {
    config_for(setup, job, per_boot, FOREVER)
}

/// [`config`] with an RTOS that stops after `periods` milliseconds.
pub fn config_for(setup: Setup, job: Job, per_boot: u32, periods: u64) -> RawConfig {
    let config = RawConfig::new().cpus(4);
    // Alone, Linux owns its pCPUs: its WFIs stay in the guest, as a
    // deployment that gives Linux whole cores would have it.
    let owned = || linux_partition(job, per_boot, false).exclusive();
    match setup {
        Setup::Native | Setup::Alone => config.partition(owned()),
        Setup::Apart => config.partition(rtos_partition(0, periods, 1).exclusive()).partition(owned()),
        Setup::Shared { percent, migrate } => config
            .partition(rtos_partition(percent, periods, LINUX_CPUS[0]))
            .partition(linux_partition(job, per_boot, migrate)),
    }
}

/// The same kernel, initramfs and command line on QEMU alone.
fn native_command(job: Job, per_boot: u32, icount: Option<u32>) -> Command {
    let mut qemu = Command::new("qemu-system-aarch64");
    qemu.args(["-machine", "virt,gic-version=3", "-cpu", "cortex-a72", "-smp", "2"])
        .args(["-m", &format!("{}M", LINUX_SIZE >> 20)])
        .args(run::HEADLESS)
        .arg("-kernel")
        .arg(linux_image("Image"))
        .arg("-initrd")
        .arg(linux_image("initramfs.cpio"))
        .args(["-append", &bootargs(job, per_boot)]);
    run::add_icount(&mut qemu, icount);
    qemu
}

struct Bench {
    hypervisor: PathBuf,
    name: String,
    per_boot: u32,
}

impl Bench {
    /// Boots `setup` until Linux's job is done; returns what Linux printed.
    fn boot(&self, setup: Setup, job: Job, pass: Pass) -> Result<qemu::Followed> {
        let variant = setup.variant(job, pass);
        let dir = paths::bench_out(&self.name).join(&variant);
        let followed = if setup == Setup::Native {
            let command = native_command(job, self.per_boot, pass.shift);
            qemu::follow(command, &[], Source::Hypervisor, &dir, job.until(), BOOT_LIMIT)?
        } else {
            let config = config(setup, job, self.per_boot);
            let (config, output) = qemu::generated(&self.name, &variant, &config, &self.hypervisor)?;
            let names: Vec<String> = config.system.partitions.iter().map(|p| p.name.clone()).collect();
            let index = names.iter().position(|n| n == "linux").context("no linux partition")?;
            let opts = RunOptions { icount: pass.shift, ..RunOptions::default() };
            let command = run::qemu_command(&output, &config.system, &opts);
            qemu::follow(command, &names, Source::Partition(index), &dir, job.until(), BOOT_LIMIT)?
        };
        if let Some(failure) = &followed.failure {
            bail!("{} ({}): {failure}; logs in {}", setup.label(), pass.label(), dir.display());
        }
        Ok(followed)
    }

    /// Every hackbench time of `runs` boots, and each boot's time to /init.
    fn hackbench(&self, setup: Setup, pass: Pass, runs: u32) -> Result<Samples> {
        let mut samples = Samples::default();
        for _ in 0..runs {
            let followed = self.boot(setup, Job::Hackbench, pass)?;
            let text = &followed.text;
            let these = parse_hackbench(text);
            if these.len() != self.per_boot as usize {
                bail!("{}: {} of {} hackbench times in\n{text}", setup.label(), these.len(), self.per_boot);
            }
            samples.hackbench.extend(these);
            let init = followed.seconds_to(INIT_MARKER);
            samples.boot.push(init.with_context(|| format!("{}: no {INIT_MARKER:?} in\n{text}", setup.label()))?);
        }
        Ok(samples)
    }

    /// A traced boot of Linux beside the RTOS at 0 %, until the RTOS's
    /// `ACTIVATION_PERIODS` are done and the machine powers off.
    fn activations(&self, pass: Pass) -> Result<Activation> {
        let setup = Setup::Shared { percent: 0, migrate: false };
        let config = config_for(setup, Job::Hackbench, 1, ACTIVATION_PERIODS).trace(ACTIVATION_EVENTS);
        let variant = format!("{}-traced", setup.variant(Job::Hackbench, pass));
        let (config, output) = qemu::generated(&self.name, &variant, &config, &self.hypervisor)?;
        let opts = RunOptions { icount: pass.shift, seconds: Some(BOOT_LIMIT.as_secs()), ..RunOptions::default() };
        let report = qemu::to_power_off(&output, &config.system, &opts, true)?;
        let path = report.trace.with_context(|| format!("the traced boot left no trace in {}", variant))?;
        let (_, trace) = crate::trace::read_file(&path)?;
        Activation::measure(&trace, LINUX_CPUS[0] as usize)
            .with_context(|| format!("no RTOS activation between two Linux intervals in {}", path.display()))
    }

    fn cyclictest(&self, setup: Setup, pass: Pass) -> Result<Latency> {
        let text = self.boot(setup, Job::Cyclictest, pass)?.text;
        parse_cyclictest(&text).with_context(|| format!("{}: no cyclictest summary in\n{text}", setup.label()))
    }
}

/// What /init prints once the system is up: boots are timed to it.
const INIT_MARKER: &str = "partita-linux: init ";

/// What the boots of one setup measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Samples {
    /// Every hackbench time, seconds.
    pub hackbench: Vec<f64>,
    /// Each boot's wall-clock time from QEMU's start to [`INIT_MARKER`].
    pub boot: Vec<f64>,
}

/// How long the traced boot of [`Bench::activations`] lasts, in the RTOS's
/// milliseconds: Linux's boot and one hackbench take about 1.3 s under
/// `-icount 0`; the ring then still holds them.
const ACTIVATION_PERIODS: u64 = 4000;
const ACTIVATION_EVENTS: u32 = 65536;

/// What Partita takes from Linux each time the RTOS runs on its pCPU, from
/// a trace: Linux's vCPU is preempted, the RTOS runs, Linux's vCPU is back.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Activation {
    pub samples: usize,
    /// Linux off the pCPU, from its leaving to its return; median, µs.
    pub away_us: f64,
    /// The RTOS on the pCPU meanwhile; median, µs.
    pub rtos_us: f64,
}

impl Activation {
    /// Every preempted-RTOS-back triple on `cpu`. Medians, because under
    /// `-icount` a triple may span another CPU's turn in QEMU.
    pub fn measure(trace: &Trace, cpu: usize) -> Option<Activation> {
        let clock = crate::trace::Clock::of(trace);
        let on_cpu: Vec<_> = crate::trace::vcpu_intervals(trace).into_iter().filter(|i| i.cpu == cpu).collect();
        let linux = on_cpu.iter().map(|i| i.partition).max()?;
        let preempted = Some(OutReason::Preempted as u32);
        let (mut away, mut rtos) = (Vec::new(), Vec::new());
        for w in on_cpu.windows(3) {
            let (before, guest, after) = (&w[0], &w[1], &w[2]);
            if before.partition == linux
                && before.out == preempted
                && guest.partition != linux
                && after.partition == linux
            {
                away.push(clock.span_micros(after.start - before.end));
                rtos.push(clock.span_micros(guest.end - guest.start));
            }
        }
        (!away.is_empty()).then(|| Activation { samples: away.len(), away_us: median(away), rtos_us: median(rtos) })
    }

    /// Partita's own part of each activation, µs.
    pub fn partita_us(&self) -> f64 {
        self.away_us - self.rtos_us
    }

    /// The share of Linux's pCPU that Partita's part takes at the RTOS's
    /// 1 kHz.
    pub fn partita_share(&self) -> f64 {
        self.partita_us() * 1e3 / 1e6
    }
}

/// hackbench's time in one setup, and what it lost against native.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub setup: Setup,
    /// Seconds, median over every run of every boot.
    pub time: f64,
    /// The first and third quartiles of those runs, seconds.
    pub quartiles: (f64, f64),
    pub samples: usize,
    /// Wall-clock seconds from QEMU's start to /init, median over the boots.
    pub boot: f64,
    /// 1 - native time / this time: the share of native throughput lost.
    pub loss: f64,
    /// 1 - alone time / this time: what the RTOS beside Linux costs it,
    /// Partita's own cost for Linux apart.
    pub loss_to_alone: f64,
    /// 1 - time with the RTOS on its own pCPU / this time: Partita's part
    /// of what the RTOS beside Linux costs it.
    pub loss_to_apart: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PassResult {
    pub pass: Pass,
    pub points: Vec<Point>,
    /// Under `-icount` only: a wall-clock trace measures the host.
    pub activation: Option<Activation>,
    pub cyclictest_native: Latency,
    pub cyclictest_partita: Latency,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub runs: u32,
    pub per_boot: u32,
    pub fractions: Vec<u32>,
    pub passes: Vec<PassResult>,
}

/// Every setup a pass measures, native first.
pub fn setups(fractions: &[u32]) -> Vec<Setup> {
    let shared = |migrate| fractions.iter().map(move |&percent| Setup::Shared { percent, migrate });
    [Setup::Native, Setup::Alone, Setup::Apart].into_iter().chain(shared(false)).chain(shared(true)).collect()
}

/// The share of native throughput lost in `time` (throughput is 1 / time).
pub fn loss(native: f64, time: f64) -> f64 {
    1.0 - native / time
}

pub fn run(opts: &Options) -> Result<Report> {
    let bench = Bench { hypervisor: qemu::prepare()?, name: opts.name.clone(), per_boot: opts.per_boot };
    let mut passes = vec![Pass::icount(opts.shift)];
    if opts.wall {
        passes.push(Pass::WALL);
    }
    let setups = setups(&opts.fractions);
    let bar = super::progress_bar(passes.len() * (setups.len() * opts.runs as usize + 3));
    let mut results = Vec::new();
    for pass in passes {
        let mut times = Vec::new();
        for &setup in &setups {
            times.push((setup, bench.hackbench(setup, pass, opts.runs)?));
            bar.inc(u64::from(opts.runs));
        }
        let points = points(times);
        let activation = if pass.shift.is_some() { Some(bench.activations(pass)?) } else { None };
        let cyclictest_native = bench.cyclictest(Setup::Native, pass)?;
        let cyclictest_partita = bench.cyclictest(Setup::Alone, pass)?;
        bar.inc(3);
        results.push(PassResult { pass, points, activation, cyclictest_native, cyclictest_partita });
    }
    bar.finish_and_clear();
    Ok(Report { runs: opts.runs, per_boot: opts.per_boot, fractions: opts.fractions.clone(), passes: results })
}

/// Each setup's samples as a point; `times` begins with native, alone and
/// apart, as [`setups`] orders them.
fn points(times: Vec<(Setup, Samples)>) -> Vec<Point> {
    let medians: Vec<f64> = times.iter().map(|(_, s)| median(s.hackbench.clone())).collect();
    let (native, alone, apart) = (medians[0], medians[1], medians[2]);
    let point = |((setup, samples), time): ((Setup, Samples), f64)| Point {
        setup,
        time,
        quartiles: quartiles(&samples.hackbench),
        samples: samples.hackbench.len(),
        boot: median(samples.boot),
        loss: loss(native, time),
        loss_to_alone: loss(alone, time),
        loss_to_apart: loss(apart, time),
    };
    times.into_iter().zip(medians).map(point).collect()
}

/// The first and third quartiles, by the nearest rank.
fn quartiles(samples: &[f64]) -> (f64, f64) {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.75))
}

const HACKBENCH_COLUMNS: [Column; 7] = [
    Column::left("setup", "setup", 26),
    Column::left("pass", "pass", 9),
    Column::right("time s", "hackbench (s)", 10),
    Column::right("quartiles", "quartiles (s)", 13),
    Column::right("loss", "loss vs native", 8),
    Column::right("vs alone", "loss vs Partita alone", 8),
    Column::right("vs apart", "loss vs RTOS on its own pCPU", 8),
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
                let beside = |share| if shared { percent(share) } else { "-".to_string() };
                let to_alone = if point.setup == Setup::Apart {
                    percent(point.loss_to_alone)
                } else {
                    beside(point.loss_to_alone)
                };
                let (low, high) = point.quartiles;
                table.row(vec![
                    point.setup.label(),
                    pass.pass.label(),
                    format!("{:.3}", point.time),
                    format!("{low:.3}-{high:.3}"),
                    loss,
                    to_alone,
                    beside(point.loss_to_apart),
                ]);
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

    /// What a 1 kHz RTOS that does next to nothing (f = 0 %) costs Linux:
    /// what vlk's 1.4 % compares with.
    fn one_khz_loss(pass: &PassResult) -> Option<&Point> {
        pass.points.iter().find(|p| p.setup == Setup::Shared { percent: 0, migrate: false })
    }

    /// The paragraph under the table for `pass`.
    fn one_khz_paragraph(pass: &PassResult) -> String {
        let mut out = String::new();
        if let Some(point) = Self::one_khz_loss(pass) {
            let _ = write!(
                out,
                "\n{}: a 1 kHz RTOS that only wakes on Linux's pCPU costs Linux {} of its hackbench throughput \
                 against Partita alone and {} against the same RTOS on a pCPU of its own (target 1 %; vlk: \
                 {VLK_LOSS_PERCENT} %).",
                pass.pass.label(),
                percent(point.loss_to_alone),
                percent(point.loss_to_apart)
            );
        }
        if let Some(a) = pass.activation {
            let _ = write!(
                out,
                " From a traced boot ({} activations): each time the RTOS runs, Linux's vCPU is off its pCPU for \
                 {:.2} µs (median), of which the RTOS runs {:.2} µs and Partita's switches take {:.2} µs: at 1 kHz \
                 that is {} of that pCPU, {} of Linux's two (tracing included).",
                a.samples,
                a.away_us,
                a.rtos_us,
                a.partita_us(),
                percent(a.partita_share()),
                percent(a.partita_share() / LINUX_CPUS.len() as f64)
            );
        }
        out + "\n"
    }

    pub fn markdown(&self, chart_files: &[String]) -> String {
        let mut out = format!(
            "# Linux beside an RTOS: vlk's Fig. 8 ({})\n\n`partita bench linux --runs {} --per-boot {} --fractions {}`. hackbench \
             (`-g 2 -f 10 -l 100`, guests/linux/jobs/hackbench) in Debian 12's arm64 kernel with two vCPUs: natively \
             on QEMU alone (`-smp 2`), under Partita alone on pCPUs 2 and 3, which it owns (`exclusive`), and \
             beside a 1 kHz RTOS (the test \
             guest's `duty` task) of higher priority that is busy f % of each millisecond on pCPU 2, without and \
             with vlk's migration (Linux's vCPU 0 moves to pCPU 3 while the RTOS runs). Throughput loss = 1 - \
             native time / time. Medians over {} boot(s) per point, each running hackbench {} times in a row; \
             the quartiles show the spread. The control \"RTOS 0 %, own pCPU\" puts the same RTOS on pCPU 1 \
             with Linux alone on its own two: under `-icount` QEMU runs the CPUs in turns cut at every timer \
             deadline, so a 1 kHz timer anywhere in the machine costs Linux time. Against it, the loss is \
             Partita's.\n\n",
            today(),
            self.runs,
            self.per_boot,
            self.fractions.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
            self.runs,
            self.per_boot
        );
        out += &self.hackbench_table().markdown();
        for pass in &self.passes {
            out += &Self::one_khz_paragraph(pass);
        }
        out += &self.boot_section();
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

    /// Boot to /init natively and under Partita alone, per pass.
    fn boot_section(&self) -> String {
        let mut out = "\n## Boot to /init\n\nWall-clock seconds from QEMU's start to /init's first line, median \
                       over the hackbench boots (QEMU's start included; under `-icount` this is how long the host \
                       took to emulate the boot, not guest time).\n\n| pass | native (s) | Partita alone (s) | ratio |\n\
                       |---|--:|--:|--:|\n"
            .to_string();
        for pass in &self.passes {
            let boot = |setup| pass.points.iter().find(|p| p.setup == setup).map_or(0.0, |p| p.boot);
            let (native, alone) = (boot(Setup::Native), boot(Setup::Alone));
            let _ =
                writeln!(out, "| {} | {native:.2} | {alone:.2} | {:.2} |", pass.pass.label(), alone / native.max(1e-9));
        }
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
        let level = |setup: Setup, color| {
            let loss = pass.points.iter().find(|p| p.setup == setup).map_or(0.0, |p| p.loss * 100.0);
            Curve { name: setup.label(), color, width: 1, points: vec![(0.0, loss), (100.0, loss)] }
        };
        let curves = vec![
            level(Setup::Alone, palette::GRAY),
            level(Setup::Apart, palette::GREEN),
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
/// per pass, `linux-<date>-fig8-<pass>.svg`.
pub fn write(report: &Report, name: &str) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for pass in &report.passes {
        let file = format!("linux-{}-fig8-{}.svg", today(), pass.pass.label().replace(' ', ""));
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
        let text = "Running in process mode\nTime: 1.102\npartita-linux: hackbench time=1.102\n\
                    Time: 0.98\npartita-linux: hackbench time=0.98\n";
        assert_eq!(parse_hackbench(text), [1.102, 0.98]);
        assert!(parse_hackbench("partita-linux: hackbench failed: exit 1, no time").is_empty());
        let text = "T: 0 ...\npartita-linux: cyclictest min=73 avg=179 max=3698\n";
        assert_eq!(parse_cyclictest(text), Some(Latency { min: 73.0, avg: 179.0, max: 3698.0 }));
        assert_eq!(parse_cyclictest("partita-linux: cyclictest failed: exit 1"), None);
    }

    #[test]
    fn every_fraction_is_measured_with_and_without_migration() {
        let all = setups(&[0, 50]);
        assert_eq!(all.len(), 7);
        assert_eq!(&all[..3], [Setup::Native, Setup::Alone, Setup::Apart]);
        assert!(all.contains(&Setup::Shared { percent: 50, migrate: true }));
        assert!((loss(1.0, 1.25) - 0.2).abs() < 1e-12);
    }

    #[test]
    fn the_rtos_shares_linuxs_first_pcpu_above_it() {
        let config = config(Setup::Shared { percent: 30, migrate: true }, Job::Hackbench, 5);
        let (rtos, linux) = (&config.partition[0], &config.partition[1]);
        assert!(rtos.bootargs.as_deref().unwrap().contains("duty_busy_us=300 duty_idle_us=700"));
        assert!(linux.bootargs.as_deref().unwrap().contains("partita.hackbench_runs=5"));
        assert!(rtos.priority > linux.priority);
        assert_eq!(linux.migrate.len(), 1);
        assert_eq!(config.partition.len(), 2);
        assert_eq!(rtos.cpus, linux.cpus[..1]);
        assert_eq!(super::config(Setup::Alone, Job::Cyclictest, 1).partition.len(), 1);
    }

    #[test]
    fn the_control_gives_the_rtos_a_pcpu_of_its_own() {
        let config = config(Setup::Apart, Job::Hackbench, 1);
        let (rtos, linux) = (&config.partition[0], &config.partition[1]);
        assert!(rtos.bootargs.as_deref().unwrap().contains("duty_busy_us=0 duty_idle_us=1000"));
        assert!(!linux.cpus.iter().any(|c| rtos.cpus.contains(c)));
        assert_eq!((rtos.exclusive, linux.exclusive), (Some(true), Some(true)));
    }

    #[test]
    fn points_compare_with_native_alone_and_the_control() {
        let samples = |hackbench: &[f64]| Samples { hackbench: hackbench.to_vec(), boot: vec![3.0, 2.0] };
        let times = vec![
            (Setup::Native, samples(&[1.0, 1.2, 1.1])),
            (Setup::Alone, samples(&[1.0, 1.0, 1.0, 1.0])),
            (Setup::Apart, samples(&[1.25])),
            (Setup::Shared { percent: 0, migrate: false }, samples(&[2.0, 1.6, 1.0, 1.4, 9.0])),
        ];
        let points = points(times);
        let shared = &points[3];
        assert_eq!((shared.time, shared.samples, shared.quartiles), (1.6, 5, (1.4, 2.0)));
        assert_eq!(shared.boot, 2.5);
        assert!((points[1].loss - (1.0 - 1.1)).abs() < 1e-12);
        assert!((shared.loss_to_alone - (1.0 - 1.0 / 1.6)).abs() < 1e-12);
        assert!((shared.loss_to_apart - (1.0 - 1.25 / 1.6)).abs() < 1e-12);
    }
}
