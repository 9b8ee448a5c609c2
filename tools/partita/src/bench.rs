//! `partita bench irq-latency`: virtual-timer interrupt latency of the test
//! guest's `irq-bench` mode, natively and under Partita, reported rather
//! than asserted.
//!
//! Every run boots QEMU afresh and is stopped as soon as the measured guest
//! has printed its `irq-bench hist:` line. That matters for the shared
//! setup, whose low-criticality partition spins for ten minutes and so
//! would never let the machine power off by itself.

use crate::build::{self, BuildOutput};
use crate::config::{self, Config};
use crate::guests;
use crate::run::{self, Console, RunOptions, Source, Splitter};
use anyhow::{bail, ensure, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const DEFAULT_RUNS: u32 = 3;
pub const DEFAULT_SAMPLES: u32 = 10_000;
/// The test guest keeps at most this many samples.
pub const MAX_SAMPLES: u32 = 16_384;
/// `out/<name>/` gets the reports, `target/bench/<name>-*.toml` the configurations.
pub const DEFAULT_NAME: &str = "bench-irq-latency";
/// A boot takes well under a second; this only catches a hung one.
const RUN_LIMIT: Duration = Duration::from_secs(60);
const LAST_LINE: &str = "irq-bench hist:";
/// The partition that is measured under Partita.
const MEASURED: &str = "rt";
/// What `gpos` does on the shared core: spin with interrupts masked for ten
/// minutes, far longer than any run.
const HOG_BOOTARGS: &str = "mask-spin=600000 ticks=1";
/// What QEMU virt's generic timer runs at, for cortex-a72.
pub const NOMINAL_HZ: u64 = 62_500_000;

/// What to run; [`Options::default`] is what the command line does without flags.
#[derive(Clone, Debug)]
pub struct Options {
    pub runs: u32,
    pub samples: u32,
    /// Adds a pass with `-icount shift=N` after the wall-clock one.
    pub icount: Option<u32>,
    pub name: String,
}

impl Default for Options {
    fn default() -> Self {
        Self { runs: DEFAULT_RUNS, samples: DEFAULT_SAMPLES, icount: None, name: DEFAULT_NAME.to_string() }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Wall,
    Icount,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Wall => "wall",
            Mode::Icount => "icount",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Setup {
    /// QEMU alone, the guest at EL1.
    Native,
    /// Partita, `rt` alone on an exclusive pCPU.
    Exclusive,
    /// Partita, `rt` sharing its pCPU with a busy low-criticality `gpos`.
    Shared,
}

impl Setup {
    pub const ALL: [Setup; 3] = [Setup::Native, Setup::Exclusive, Setup::Shared];

    pub fn name(self) -> &'static str {
        match self {
            Setup::Native => "native",
            Setup::Exclusive => "exclusive",
            Setup::Shared => "shared",
        }
    }
}

/// What the guest printed in one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub n: u64,
    pub min: u64,
    pub mean: u64,
    pub max: u64,
    pub missed: u64,
    pub hist: Vec<u64>,
    pub counter_hz: u64,
}

/// One setup in one mode. Each statistic is the median of that statistic
/// over the runs, so one disturbed run cannot move it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub mode: Mode,
    pub setup: Setup,
    pub min_ticks: f64,
    pub mean_ticks: f64,
    pub max_ticks: f64,
    pub min_us: f64,
    pub mean_us: f64,
    pub max_us: f64,
    /// `None` when the native mean is 0, as it can be under icount.
    pub mean_over_native: Option<f64>,
    pub runs: Vec<Sample>,
}

/// `report.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub benchmark: String,
    pub runs: u32,
    pub samples: u32,
    pub counter_hz: u64,
    pub icount_shift: Option<u32>,
    /// Counter ticks per guest instruction under icount: 1 with shift 4 at 62.5 MHz.
    pub ticks_per_instruction: Option<f64>,
    pub rows: Vec<Row>,
}

/// Runs every setup in every mode, writes `out/<name>/report.md` and
/// `report.json`, and returns the report.
pub fn irq_latency(opts: &Options) -> Result<Report> {
    ensure!(opts.runs >= 1, "--runs must be at least 1");
    ensure!((1..=MAX_SAMPLES).contains(&opts.samples), "--samples must be 1 to {MAX_SAMPLES}");
    guests::build_all()?;
    let hypervisor = build::build_hypervisor(&build::repo_root())?;
    let modes = modes(opts);
    let progress = progress_bar(modes.len() * Setup::ALL.len() * opts.runs as usize);
    let measured = measure_all(opts, &modes, &hypervisor, &progress);
    // A failed run must not leave a half-drawn bar above its error.
    progress.finish_and_clear();
    let report = summarize(opts, measured?)?;
    write_reports(&report, &report_dir(&opts.name))?;
    Ok(report)
}

type Measured = Vec<(Mode, Setup, Vec<Sample>)>;

fn measure_all(
    opts: &Options,
    modes: &[(Mode, Option<u32>)],
    hypervisor: &Path,
    progress: &ProgressBar,
) -> Result<Measured> {
    let mut measured = Vec::new();
    for &(mode, icount) in modes {
        for setup in Setup::ALL {
            let target = Target::prepare(opts, setup, mode, hypervisor)?;
            let samples = (1..=opts.runs).map(|run| {
                progress.set_message(format!("{} {} run {run}/{}", mode_label(mode, icount), setup.name(), opts.runs));
                let sample = target.measure(icount);
                progress.inc(1);
                sample
            });
            measured.push((mode, setup, samples.collect::<Result<Vec<_>>>()?));
        }
    }
    Ok(measured)
}

/// Where `report.md` and `report.json` go.
pub fn report_dir(name: &str) -> PathBuf {
    build::repo_root().join("out").join(name)
}

fn modes(opts: &Options) -> Vec<(Mode, Option<u32>)> {
    let mut modes = vec![(Mode::Wall, None)];
    modes.extend(opts.icount.map(|shift| (Mode::Icount, Some(shift))));
    modes
}

pub fn mode_label(mode: Mode, shift: Option<u32>) -> String {
    match (mode, shift) {
        (Mode::Icount, Some(shift)) => format!("icount {shift}"),
        _ => mode.name().to_string(),
    }
}

pub fn progress_bar(total: usize) -> ProgressBar {
    let bar = ProgressBar::new(total as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} QEMU runs: {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// Both the native guest and `rt` take these. The one periodic tick is
/// there for its `cntfrq` line, the only place the guest prints the counter
/// frequency; `ticks=1 period_ms=1` ends the guest soon after the benchmark
/// should the run not be stopped at its last line.
fn bootargs(samples: u32) -> String {
    format!("timer_hz=1000 timer_ticks=1 irq-bench={samples} ticks=1 period_ms=1")
}

/// A bootable setup: QEMU's command line, the consoles, and where the logs go.
struct Target {
    setup: Setup,
    dir: PathBuf,
    partita: Option<(Config, BuildOutput)>,
    samples: u32,
}

impl Target {
    fn prepare(opts: &Options, setup: Setup, mode: Mode, hypervisor: &Path) -> Result<Self> {
        let dir = report_dir(&opts.name).join(format!("{}-{}", mode.name(), setup.name()));
        let partita = match setup {
            Setup::Native => None,
            _ => Some(assemble(opts, setup, hypervisor, &dir)?),
        };
        Ok(Self { setup, dir, partita, samples: opts.samples })
    }

    fn names(&self) -> Vec<String> {
        self.partita
            .as_ref()
            .map_or_else(Vec::new, |(c, _)| c.system.partitions.iter().map(|p| p.name.clone()).collect())
    }

    fn command(&self, icount: Option<u32>) -> Command {
        match &self.partita {
            Some((config, output)) => {
                run::qemu_command(output, &config.system, &RunOptions { icount, ..RunOptions::default() })
            }
            None => native_command(self.samples, icount),
        }
    }

    fn measure(&self, icount: Option<u32>) -> Result<Sample> {
        let names = self.names();
        // Natively every line is the guest's, and the splitter files untagged lines as Partita's.
        let watched = match names.iter().position(|n| n == MEASURED) {
            Some(index) => Source::Partition(index),
            None => Source::Hypervisor,
        };
        let text = boot(self.command(icount), &names, watched, &self.dir)
            .with_context(|| format!("{} setup, logs in {}", self.setup.name(), self.dir.display()))?;
        parse_sample(&text).with_context(|| format!("{} setup: {text}", self.setup.name()))
    }
}

/// The same flags `partita run` gives QEMU, less EL2, with one CPU: the
/// guest needs no more.
fn native_command(samples: u32, icount: Option<u32>) -> Command {
    let guest = guests::output_dir(&build::repo_root()).join("test-guest.bin");
    let mut qemu = Command::new("qemu-system-aarch64");
    qemu.args(["-machine", "virt,gic-version=3", "-cpu", "cortex-a72", "-smp", "1", "-m", "256M"])
        .args(crate::run::HEADLESS)
        .arg("-kernel")
        .arg(guest)
        .args(["-append", &bootargs(samples)]);
    if let Some(shift) = icount {
        qemu.arg("-icount").arg(format!("shift={shift},sleep=off"));
    }
    qemu
}

/// Writes the setup's configuration to `target/bench/` and assembles its
/// image into `dir`.
fn assemble(opts: &Options, setup: Setup, hypervisor: &Path, dir: &Path) -> Result<(Config, BuildOutput)> {
    let folder = build::repo_root().join("target").join("bench");
    std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
    let path = folder.join(format!("{}-{}.toml", opts.name, setup.name()));
    let guest = guests::output_dir(&build::repo_root()).join("test-guest.elf");
    let text = config_text(setup, &bootargs(opts.samples), &guest);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    let config = config::load(&path).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("the generated configuration is invalid:\n{}", lines.join("\n"))
    })?;
    let output = build::assemble(&config, hypervisor, dir)?;
    Ok((config, output))
}

/// Two pCPUs, Partita's own and `rt`'s, so that QEMU's threads do not
/// outnumber a small host's cores.
pub fn config_text(setup: Setup, bootargs: &str, guest: &Path) -> String {
    let exclusive = if setup == Setup::Exclusive { "exclusive = true\n" } else { "" };
    let mut text = "[platform]\ncpus = 2\n\n".to_string();
    text += &partition("rt", &format!("criticality = \"high\"\n{exclusive}"), bootargs, guest);
    if setup == Setup::Shared {
        text += &partition("gpos", "criticality = \"low\"\n", HOG_BOOTARGS, guest);
    }
    text
}

fn partition(name: &str, extra: &str, bootargs: &str, guest: &Path) -> String {
    format!(
        "[[partition]]\nname = \"{name}\"\n{extra}cpus = [1]\nbootargs = \"{bootargs}\"\n\
         [[partition.memory]]\nbase = 0x40000000\nsize = \"16M\"\n\
         [[partition.image]]\npath = \"{}\"\n\n",
        guest.display()
    )
}

/// Kills QEMU on every way out of a run.
pub struct Qemu(pub Child);

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Boots QEMU, logs its consoles into `dir` as `partita run` does, and
/// returns what `watched` printed up to its `irq-bench hist:` line; QEMU is
/// stopped there rather than left to power off.
fn boot(qemu: Command, names: &[String], watched: Source, dir: &Path) -> Result<String> {
    let Spawned { child, lines, mut console, errors } = spawn_logged(qemu, names, dir)?;
    let text = follow(&lines, &mut console, &Splitter::new(names), watched);
    drop(child);
    // The socket `partita run`'s command line asks for is of no use to a killed QEMU.
    let _ = std::fs::remove_file(run::qmp_socket(dir));
    text.map_err(|error| match errors.join().unwrap_or_default().trim() {
        "" => error,
        said => anyhow::anyhow!("{error:#}; QEMU said: {said}"),
    })
}

/// A QEMU a bench follows: its console lines as they come, the per-partition
/// logs they go to, and what it says on stderr (read when it has ended).
pub struct Spawned {
    pub child: Qemu,
    pub lines: Receiver<String>,
    pub console: Console,
    pub errors: JoinHandle<String>,
}

/// Starts `qemu` with its console logged into `dir` as `partita run` does
/// (`console.log` and one log per partition).
pub fn spawn_logged(mut qemu: Command, names: &[String], dir: &Path) -> Result<Spawned> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let raw = File::create(dir.join("console.log")).context("cannot create console.log")?;
    let console = Console::create(names, dir, None)?;
    qemu.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = Qemu(qemu.spawn().context("cannot start qemu-system-aarch64 (is it installed?)")?);
    let stdout = child.0.stdout.take().context("QEMU's stdout is not piped")?;
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || run::pump(stdout, raw, tx));
    let errors = read_stderr(&mut child.0);
    Ok(Spawned { child, lines, console, errors })
}

pub fn read_stderr(child: &mut Child) -> JoinHandle<String> {
    let mut stderr = child.stderr.take();
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(stderr) = stderr.as_mut() {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    })
}

fn follow(lines: &Receiver<String>, console: &mut Console, splitter: &Splitter, watched: Source) -> Result<String> {
    let deadline = Instant::now() + RUN_LIMIT;
    let mut text = String::new();
    loop {
        let line = match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => bail!("no `{LAST_LINE}` line within {RUN_LIMIT:?}"),
            Err(RecvTimeoutError::Disconnected) => bail!("QEMU stopped before the `{LAST_LINE}` line"),
        };
        console.line(&line)?;
        let (source, said) = splitter.split(&line);
        if source == watched {
            text += said;
            text.push('\n');
            if said.starts_with(LAST_LINE) {
                return Ok(text);
            }
        }
    }
}

/// Reads the guest's `irq-bench:`, `irq-bench hist:`, `irq-bench: <m> missed`
/// and `timer latency: ... (cntfrq <f>)` lines.
pub fn parse_sample(text: &str) -> Result<Sample> {
    let numbers = |prefix: &str| -> Option<Vec<u64>> {
        let line = text.lines().find(|l| l.starts_with(prefix))?;
        line[prefix.len()..]
            .split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().ok())
            .collect()
    };
    let Some(&[n, min, mean, max]) = numbers("irq-bench: n ").as_deref() else {
        bail!("no `irq-bench: n <n> min <a> mean <b> max <c> counts` line");
    };
    let hist = numbers(LAST_LINE).context("no `irq-bench hist:` line")?;
    let missed = text.lines().find_map(|l| l.strip_prefix("irq-bench: ")?.strip_suffix(" missed")?.parse().ok());
    let counter_hz = numbers("timer latency: ").and_then(|v| v.last().copied()).unwrap_or(NOMINAL_HZ);
    ensure!(n > 0 && min <= mean && mean <= max, "the statistics do not add up");
    Ok(Sample { n, min, mean, max, missed: missed.unwrap_or(0), hist, counter_hz })
}

fn summarize(opts: &Options, measured: Measured) -> Result<Report> {
    let counter_hz = measured.first().and_then(|(_, _, s)| s.first()).map_or(NOMINAL_HZ, |s| s.counter_hz);
    ensure!(
        measured.iter().flat_map(|(_, _, s)| s).all(|s| s.counter_hz == counter_hz),
        "the guests reported different counter frequencies"
    );
    let mut rows: Vec<Row> =
        measured.into_iter().map(|(mode, setup, runs)| row(mode, setup, runs, counter_hz)).collect();
    let native: Vec<(Mode, f64)> =
        rows.iter().filter(|r| r.setup == Setup::Native).map(|r| (r.mode, r.mean_ticks)).collect();
    for row in &mut rows {
        let base = native.iter().find(|(mode, _)| *mode == row.mode).map_or(0.0, |(_, mean)| *mean);
        row.mean_over_native = (base > 0.0).then(|| row.mean_ticks / base);
    }
    let ticks_per_instruction = opts.icount.map(|shift| (1u64 << shift) as f64 * counter_hz as f64 / 1e9);
    Ok(Report {
        benchmark: "irq-latency".to_string(),
        runs: opts.runs,
        samples: opts.samples,
        counter_hz,
        icount_shift: opts.icount,
        ticks_per_instruction,
        rows,
    })
}

fn row(mode: Mode, setup: Setup, runs: Vec<Sample>, counter_hz: u64) -> Row {
    let median_of = |pick: fn(&Sample) -> u64| median(runs.iter().map(|s| pick(s) as f64).collect());
    let (min, mean, max) = (median_of(|s| s.min), median_of(|s| s.mean), median_of(|s| s.max));
    let us = |ticks: f64| ticks * 1e6 / counter_hz as f64;
    Row {
        mode,
        setup,
        min_ticks: min,
        mean_ticks: mean,
        max_ticks: max,
        min_us: us(min),
        mean_us: us(mean),
        max_us: us(max),
        mean_over_native: None,
        runs,
    }
}

/// The middle value; the average of the two middle ones for an even count.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn write_reports(report: &Report, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let json = serde_json::to_string_pretty(report)? + "\n";
    for (file, text) in [("report.md", report.markdown()), ("report.json", json)] {
        let path = dir.join(file);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

impl Report {
    fn mhz(&self) -> String {
        format!("{} MHz", self.counter_hz as f64 / 1e6)
    }

    fn label(&self, row: &Row) -> String {
        mode_label(row.mode, self.icount_shift)
    }

    /// What a counter tick means under icount, for the note under the tables.
    fn icount_note(&self) -> Option<String> {
        let (shift, per) = (self.icount_shift?, self.ticks_per_instruction?);
        let what = if per == 1.0 {
            "one counter tick is one guest instruction".to_string()
        } else {
            format!("one guest instruction is {per} counter ticks")
        };
        Some(format!("Under `-icount shift={shift}` guest time counts instructions: {what}."))
    }

    /// The terminal table.
    pub fn table(&self) -> String {
        let mut out = format!(
            "irq-latency, counter ticks ({}); medians of {} runs x {} samples\n",
            self.mhz(),
            self.runs,
            self.samples
        );
        let _ = writeln!(
            out,
            "{:<10} {:<10} {:>8} {:>9} {:>8} {:>8} {:>9} {:>8} {:>12}",
            "mode", "setup", "min", "mean", "max", "min µs", "mean µs", "max µs", "mean/native"
        );
        for row in &self.rows {
            let _ = writeln!(
                out,
                "{:<10} {:<10} {:>8.0} {:>9.0} {:>8.0} {:>8.3} {:>9.3} {:>8.3} {:>12}",
                self.label(row),
                row.setup.name(),
                row.min_ticks,
                row.mean_ticks,
                row.max_ticks,
                row.min_us,
                row.mean_us,
                row.max_us,
                ratio(row.mean_over_native)
            );
        }
        if let Some(note) = self.icount_note() {
            out += &note.replace('`', "");
            out.push('\n');
        }
        out
    }

    /// `report.md`.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# irq-latency\n\nVirtual-timer interrupt latency of the test guest's `irq-bench={}`: the counter \
             read first thing in the IRQ vector minus the compare value that fired. Each number is the median \
             over {} runs of that run's min, mean or max; the counter runs at {}.\n\n",
            self.samples,
            self.runs,
            self.mhz()
        );
        out += "| mode | setup | min (ticks) | mean (ticks) | max (ticks) | min (µs) | mean (µs) | max (µs) | mean / native |\n";
        out += "|---|---|--:|--:|--:|--:|--:|--:|--:|\n";
        for row in &self.rows {
            let _ = writeln!(
                out,
                "| {} | {} | {:.0} | {:.0} | {:.0} | {:.3} | {:.3} | {:.3} | {} |",
                self.label(row),
                row.setup.name(),
                row.min_ticks,
                row.mean_ticks,
                row.max_ticks,
                row.min_us,
                row.mean_us,
                row.max_us,
                ratio(row.mean_over_native)
            );
        }
        out += SETUPS;
        if let Some(note) = self.icount_note() {
            out += &format!("\n{note}\n");
        }
        out
    }
}

const SETUPS: &str = "
- native: QEMU alone, the guest at EL1.
- exclusive: Partita, `rt` (high criticality, `exclusive = true`) alone on pCPU 1.
- shared: Partita, `rt` (high) sharing pCPU 1 with `gpos` (low), which spins with interrupts masked. Partita
  runs the most critical runnable vCPU and `irq-bench` spins rather than waits, so `gpos` gets the pCPU only
  while `rt` waits (during its boot and its one periodic tick): this row measures the interrupt path of a
  shared pCPU, not time-slicing.
";

fn ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |r| format!("{r:.2}"))
}

/// Writes a generated configuration to `target/bench/<name>-<variant>.toml`
/// and assembles its image into `out/<name>/<variant>/`.
pub fn assemble_generated(name: &str, variant: &str, text: &str, hypervisor: &Path) -> Result<(Config, BuildOutput)> {
    let folder = build::repo_root().join("target").join("bench");
    std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
    let path = folder.join(format!("{name}-{variant}.toml"));
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    let config = config::load(&path).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("the generated configuration is invalid:\n{}", lines.join("\n"))
    })?;
    let output = build::assemble(&config, hypervisor, &report_dir(name).join(variant))?;
    Ok((config, output))
}
