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

use crate::bench::{self, Mode};
use crate::bench_sched::{self, Pass};
use crate::build::{self, BuildOutput};
use crate::config::{self, Config};
use crate::guests;
use crate::run::{self, Console, RunOptions, Source, Splitter};
use anyhow::{ensure, Context, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

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
/// What a boot may take beyond its benchmarks' guest time: the boot itself
/// and the scheduler probe, whose length the guest decides.
const BOOT_ALLOWANCE: Duration = Duration::from_secs(60);
/// Wall-clock guest time runs slower than the host's when QEMU's threads
/// outnumber its cores.
const SLOWDOWN: u32 = 3;
const RTOS_MEMORY: &str = "16M";

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
    /// As `alone`, plus a busy partition on another pCPU.
    Loaded,
    /// Partita, the RTOS (high priority) sharing its pCPU with a busy
    /// low-priority partition.
    Shared,
}

impl Setup {
    pub const ALL: [Setup; 4] = [Setup::Native, Setup::Alone, Setup::Loaded, Setup::Shared];
    pub const VIRTUALIZED: [Setup; 3] = [Setup::Alone, Setup::Loaded, Setup::Shared];

    pub fn name(self) -> &'static str {
        match self {
            Setup::Native => "native",
            Setup::Alone => "alone",
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
    /// Where `<suite>-<date>.md` and its charts go.
    pub results: PathBuf,
    /// `out/<logs>/` gets every boot's consoles, `target/bench/<logs>-*.toml`
    /// the configurations.
    pub logs: String,
}

impl Options {
    pub fn new(suite: Suite) -> Self {
        Options {
            suite,
            runs: DEFAULT_RUNS,
            icount: None,
            period_ms: DEFAULT_PERIOD_MS,
            coremark_ms: DEFAULT_COREMARK_MS,
            results: results_dir(),
            logs: "bench-rtos".to_string(),
        }
    }

    fn passes(&self) -> Vec<Pass> {
        let mut passes = vec![Pass::WALL];
        passes.extend(self.icount.map(Pass::icount));
        passes
    }
}

/// `bench/results/`.
pub fn results_dir() -> PathBuf {
    build::repo_root().join("bench").join("results")
}

// ---- What the guest prints ----

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    Ok,
    /// The guest's reason.
    Fail(String),
}

impl Check {
    fn parse(text: &str) -> Option<Check> {
        match text.trim() {
            "ok" => Some(Check::Ok),
            other => {
                let reason = other.strip_prefix("FAIL")?;
                Some(Check::Fail(reason.trim_start_matches(':').trim().to_string()))
            }
        }
    }
}

/// `tm <n> <name>: period <ms> ms events <count> check <ok|FAIL: reason>`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TmResult {
    pub number: u32,
    pub name: String,
    pub period_ms: u64,
    pub events: u64,
    pub check: Check,
}

impl TmResult {
    pub fn test(&self) -> String {
        format!("tm{} {}", self.number, self.name)
    }
}

/// `coremark: iterations <n> in <ms> ms, <x> iterations/s, crc 0x<hhhh> check <...>`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoreMarkResult {
    pub iterations: u64,
    pub ms: u64,
    pub per_second: f64,
    pub crc: u32,
    pub check: Check,
}

/// `schedprio <bitmap|linear>: prio <p> switch <ticks> counts`
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SchedPoint {
    pub queue: Queue,
    pub priority: u32,
    pub ticks: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    Tm(TmResult),
    CoreMark(CoreMarkResult),
    SchedPrio(SchedPoint),
    Done,
    /// Starts like a result but does not read as one.
    Malformed(String),
    /// Anything else the guest says (its banner, say).
    Other,
}

pub fn parse_line(line: &str) -> Line {
    let line = line.trim();
    let parsed = if line.starts_with("tm ") {
        parse_tm(line).map(Line::Tm)
    } else if line.starts_with("coremark:") {
        parse_coremark(line).map(Line::CoreMark)
    } else if line.starts_with("schedprio ") {
        parse_schedprio(line).map(Line::SchedPrio)
    } else if line == LAST_LINE {
        Some(Line::Done)
    } else {
        Some(Line::Other)
    };
    parsed.unwrap_or_else(|| Line::Malformed(line.to_string()))
}

fn parse_tm(line: &str) -> Option<TmResult> {
    let (head, rest) = line.strip_prefix("tm ")?.split_once(": ")?;
    let (number, name) = head.split_once(' ')?;
    let (period, rest) = rest.strip_prefix("period ")?.split_once(" ms events ")?;
    let (events, check) = rest.split_once(" check ")?;
    Some(TmResult {
        number: number.parse().ok()?,
        name: name.trim().to_string(),
        period_ms: period.parse().ok()?,
        events: events.parse().ok()?,
        check: Check::parse(check)?,
    })
}

fn parse_coremark(line: &str) -> Option<CoreMarkResult> {
    let rest = line.strip_prefix("coremark: iterations ")?;
    let (iterations, rest) = rest.split_once(" in ")?;
    let (ms, rest) = rest.split_once(" ms, ")?;
    let (per_second, rest) = rest.split_once(" iterations/s, crc ")?;
    let (crc, check) = rest.split_once(" check ")?;
    let per_second: f64 = per_second.parse().ok()?;
    Some(CoreMarkResult {
        iterations: iterations.parse().ok()?,
        ms: ms.parse().ok()?,
        per_second: per_second.is_finite().then_some(per_second)?,
        crc: u32::from_str_radix(crc.strip_prefix("0x")?, 16).ok()?,
        check: Check::parse(check)?,
    })
}

fn parse_schedprio(line: &str) -> Option<SchedPoint> {
    let (queue, rest) = line.strip_prefix("schedprio ")?.split_once(": prio ")?;
    let (priority, rest) = rest.split_once(" switch ")?;
    let ticks = rest.strip_suffix(" counts")?;
    let queue = match queue {
        "bitmap" => Queue::Bitmap,
        "linear" => Queue::Linear,
        _ => return None,
    };
    Some(SchedPoint { queue, priority: priority.parse().ok()?, ticks: ticks.parse().ok()? })
}

/// Everything one or more boots of the RTOS printed, read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Output {
    pub tm: Vec<TmResult>,
    pub coremark: Vec<CoreMarkResult>,
    pub schedprio: Vec<SchedPoint>,
    /// `bench done` lines.
    pub done: usize,
    pub malformed: Vec<String>,
}

pub fn parse_output(text: &str) -> Output {
    let mut output = Output::default();
    for line in text.lines() {
        match parse_line(line) {
            Line::Tm(tm) => output.tm.push(tm),
            Line::CoreMark(coremark) => output.coremark.push(coremark),
            Line::SchedPrio(point) => output.schedprio.push(point),
            Line::Done => output.done += 1,
            Line::Malformed(text) => output.malformed.push(text),
            Line::Other => {}
        }
    }
    output
}

impl Output {
    fn extend(&mut self, other: Output) {
        self.tm.extend(other.tm);
        self.coremark.extend(other.coremark);
        self.schedprio.extend(other.schedprio);
        self.done += other.done;
        self.malformed.extend(other.malformed);
    }

    /// What is wrong with this output of a boot that should have printed
    /// `expect`: failed self-checks, unreadable result lines, missing ones.
    pub fn problems(&self, expect: &Expect) -> Vec<String> {
        let mut problems: Vec<String> = Vec::new();
        for tm in &self.tm {
            if let Check::Fail(reason) = &tm.check {
                problems.push(format!("{}: self-check FAILED: {reason}", tm.test()));
            }
        }
        for coremark in &self.coremark {
            if let Check::Fail(reason) = &coremark.check {
                problems.push(format!("coremark: self-check FAILED: {reason}"));
            }
        }
        problems.extend(self.malformed.iter().map(|line| format!("unreadable result line: `{line}`")));
        if self.tm.len() != expect.tm {
            problems.push(format!("{} Thread-Metric lines, expected {}", self.tm.len(), expect.tm));
        }
        if self.coremark.len() != usize::from(expect.coremark) {
            problems.push(format!("{} coremark lines, expected {}", self.coremark.len(), u8::from(expect.coremark)));
        }
        match expect.schedprio {
            Some(queue) if !self.schedprio.iter().any(|p| p.queue == queue) => {
                problems.push(format!("no `schedprio {}:` lines", queue.name()));
            }
            _ => {}
        }
        if self.schedprio.iter().any(|p| Some(p.queue) != expect.schedprio) {
            problems.push("schedprio lines of a queue that was not asked for".to_string());
        }
        if self.done != 1 {
            problems.push(format!("no `{LAST_LINE}` line"));
        }
        problems
    }
}

// ---- Boots ----

/// What one boot is expected to print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expect {
    pub tm: usize,
    pub coremark: bool,
    pub schedprio: Option<Queue>,
}

/// One boot of the RTOS: what it runs, and the guest time that takes.
#[derive(Clone, Debug, PartialEq)]
pub struct BootSpec {
    pub label: String,
    pub bootargs: String,
    pub expect: Expect,
    pub guest_ms: u64,
}

/// The boots a suite takes per setup and run. Thread-Metric boots once per
/// test, since the guest selects one test or everything. `sched=` changes
/// the ready queue of the whole RTOS, so the linear scan gets a boot of its
/// own that runs only the probe.
pub fn boots(suite: Suite, period_ms: u32, coremark_ms: u32) -> Vec<BootSpec> {
    let (period, coremark) = (u64::from(period_ms), u64::from(coremark_ms));
    let tm = |test: &str| BootSpec {
        label: test.to_string(),
        bootargs: format!("bench={test} period_ms={period_ms}"),
        expect: Expect { tm: 1, ..Expect::default() },
        guest_ms: period,
    };
    let probe = |queue: Queue| BootSpec {
        label: format!("schedprio-{}", queue.name()),
        bootargs: format!("bench=schedprio sched={}", queue.name()),
        expect: Expect { schedprio: Some(queue), ..Expect::default() },
        guest_ms: 0,
    };
    match suite {
        Suite::ThreadMetric => TM_TESTS.iter().map(|t| tm(t)).collect(),
        Suite::CoreMark => vec![BootSpec {
            label: "coremark".to_string(),
            bootargs: format!("bench=coremark coremark_ms={coremark_ms}"),
            expect: Expect { coremark: true, ..Expect::default() },
            guest_ms: coremark,
        }],
        Suite::SchedPrio => Queue::ALL.into_iter().map(probe).collect(),
        Suite::All => vec![
            BootSpec {
                label: "all".to_string(),
                bootargs: format!("bench=all period_ms={period_ms} coremark_ms={coremark_ms} sched=bitmap"),
                expect: Expect { tm: TM_TESTS.len(), coremark: true, schedprio: Some(Queue::Bitmap) },
                guest_ms: TM_TESTS.len() as u64 * period + coremark,
            },
            probe(Queue::Linear),
        ],
    }
}

/// What a boot's time limit is: a hung guest, not a slow one, should hit it.
pub fn time_limit(guest_ms: u64) -> Duration {
    Duration::from_millis(guest_ms) * SLOWDOWN + BOOT_ALLOWANCE
}

/// What the RTOS printed in one boot, up to `bench done` or to what went wrong.
#[derive(Clone, Debug)]
pub struct Capture {
    pub text: String,
    /// Why the boot ended before `bench done`.
    pub failure: Option<String>,
    /// The boot's logs.
    pub dir: PathBuf,
}

/// QEMU without Partita, as the issue describes the native machine: the
/// same `virt` with EL2 and GICv3 that Partita gets, and the RTOS as the
/// kernel (started at EL2; it drops to EL1 itself).
pub fn native_command(bootargs: &str, icount: Option<u32>) -> Command {
    let guest = guests::output_dir(&build::repo_root()).join("rtos.bin");
    let mut qemu = Command::new("qemu-system-aarch64");
    qemu.args(["-machine", "virt,gic-version=3,virtualization=on", "-cpu", "cortex-a72", "-smp", "2", "-m", "256M"])
        .args(crate::run::HEADLESS)
        .arg("-kernel")
        .arg(guest)
        .args(["-append", bootargs]);
    if let Some(shift) = icount {
        qemu.arg("-icount").arg(format!("shift={shift},sleep=off"));
    }
    qemu
}

/// Boots the RTOS natively and returns what it printed; the consoles are
/// logged into `dir` (the guest's lines in `hypervisor.log`, as `partita
/// run` files untagged lines).
pub fn run_native(bootargs: &str, icount: Option<u32>, dir: &Path, limit: Duration) -> Result<Capture> {
    boot(native_command(bootargs, icount), &[], Source::Hypervisor, dir, limit)
}

/// The Partita configuration of a setup. pCPU 0 is Partita's own; the RTOS
/// is on pCPU 1 in every setup, so only what is beside it changes.
pub fn config_text(setup: Setup, bootargs: &str, rtos: &Path, busy: &Path) -> String {
    let part = |name: &str, extra: &str, cpu: u32, bootargs: &str, image: &Path, size: &str| {
        format!(
            "[[partition]]\nname = \"{name}\"\n{extra}cpus = [{cpu}]\nbootargs = \"{bootargs}\"\n\
             [[partition.memory]]\nbase = 0x40000000\nsize = \"{size}\"\n\
             [[partition.image]]\npath = \"{}\"\n\n",
            image.display()
        )
    };
    let exclusive = "criticality = \"high\"\nexclusive = true\n";
    let (cpus, rtos_extra) = match setup {
        Setup::Loaded => (3, exclusive),
        Setup::Shared => (2, "criticality = \"high\"\n"),
        Setup::Native | Setup::Alone => (2, exclusive),
    };
    let mut text = format!("[platform]\ncpus = {cpus}\n\n");
    text += &part(RTOS, rtos_extra, 1, bootargs, rtos, RTOS_MEMORY);
    match setup {
        Setup::Loaded => text += &part("busy", "criticality = \"low\"\n", 2, BUSY_BOOTARGS, busy, "16M"),
        Setup::Shared => text += &part("gpos", "criticality = \"low\"\n", 1, BUSY_BOOTARGS, busy, "16M"),
        Setup::Native | Setup::Alone => {}
    }
    text
}

/// Boots the RTOS in any setup, logging into `out/<logs>/<variant>/`.
pub struct Machine {
    hypervisor: PathBuf,
    logs: String,
}

impl Machine {
    /// Builds the guests and the hypervisor.
    pub fn new(logs: &str) -> Result<Self> {
        guests::build_all()?;
        let hypervisor = build::build_hypervisor(&build::repo_root())?;
        let rtos = guests::output_dir(&build::repo_root()).join("rtos.bin");
        ensure!(rtos.is_file(), "{} is missing: guests/rtos did not build it", rtos.display());
        Ok(Machine { hypervisor, logs: logs.to_string() })
    }

    pub fn log_dir(&self, variant: &str) -> PathBuf {
        bench::report_dir(&self.logs).join(variant)
    }

    pub fn boot(
        &self,
        setup: Setup,
        variant: &str,
        bootargs: &str,
        icount: Option<u32>,
        limit: Duration,
    ) -> Result<Capture> {
        let dir = self.log_dir(variant);
        if setup == Setup::Native {
            return run_native(bootargs, icount, &dir, limit);
        }
        let (config, output) = self.assemble(setup, variant, bootargs, &dir)?;
        let names: Vec<String> = config.system.partitions.iter().map(|p| p.name.clone()).collect();
        let index = names.iter().position(|n| n == RTOS).context("no rtos partition")?;
        let command = run::qemu_command(&output, &config.system, &RunOptions { icount, ..RunOptions::default() });
        let capture = boot(command, &names, Source::Partition(index), &dir, limit);
        // The socket `partita run`'s command line asks for is of no use to a killed QEMU.
        let _ = std::fs::remove_file(run::qmp_socket(&dir));
        capture
    }

    fn assemble(&self, setup: Setup, variant: &str, bootargs: &str, dir: &Path) -> Result<(Config, BuildOutput)> {
        let folder = build::repo_root().join("target").join("bench");
        std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
        let path = folder.join(format!("{}-{variant}.toml", self.logs));
        let images = guests::output_dir(&build::repo_root());
        let text = config_text(setup, bootargs, &images.join("rtos.elf"), &images.join("test-guest.elf"));
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        let config = config::load(&path).map_err(|errors| {
            let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
            anyhow::anyhow!("the generated configuration {} is invalid:\n{}", path.display(), lines.join("\n"))
        })?;
        let output = build::assemble(&config, &self.hypervisor, dir)?;
        Ok((config, output))
    }
}

/// Boots QEMU, logs its consoles into `dir` as `partita run` does, and
/// returns what `watched` printed up to `bench done`, where QEMU is killed.
/// A boot that ends otherwise still returns what it printed, with why.
fn boot(qemu: Command, names: &[String], watched: Source, dir: &Path, limit: Duration) -> Result<Capture> {
    let bench::Spawned { child, lines, mut console, errors } = bench::spawn_logged(qemu, names, dir)?;
    let (text, failure) = follow(&lines, &mut console, &Splitter::new(names), watched, limit)?;
    drop(child);
    let failure = failure.map(|failure| match errors.join().unwrap_or_default().trim() {
        "" => failure,
        said => format!("{failure}; QEMU said: {said}"),
    });
    Ok(Capture { text, failure, dir: dir.to_path_buf() })
}

fn follow(
    lines: &Receiver<String>,
    console: &mut Console,
    splitter: &Splitter,
    watched: Source,
    limit: Duration,
) -> Result<(String, Option<String>)> {
    let deadline = Instant::now() + limit;
    let mut text = String::new();
    loop {
        let line = match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                return Ok((text, Some(format!("no `{LAST_LINE}` line within {} s", limit.as_secs()))))
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Ok((text, Some(format!("QEMU stopped before the `{LAST_LINE}` line"))))
            }
        };
        console.line(&line)?;
        let (source, said) = splitter.split(&line);
        if source == watched {
            text += said;
            text.push('\n');
            if said.trim() == LAST_LINE {
                return Ok((text, None));
            }
        }
    }
}

// ---- Measuring ----

/// Everything one run of one setup printed (all its boots).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub pass: Pass,
    pub setup: Setup,
    pub run: u32,
    pub output: Output,
    /// Failed self-checks and anything else that went wrong, per boot.
    pub problems: Vec<String>,
}

impl Run {
    /// Reads the captures of a run's boots, in `boots(...)` order.
    pub fn from_captures(pass: Pass, setup: Setup, run: u32, boots: &[(BootSpec, Capture)]) -> Self {
        let mut output = Output::default();
        let mut problems = Vec::new();
        for (spec, capture) in boots {
            let read = parse_output(&capture.text);
            let mut found = read.problems(&spec.expect);
            if let Some(failure) = &capture.failure {
                // "No `bench done`" says less than why there was none.
                found.retain(|p| !p.contains(LAST_LINE));
                found.push(failure.clone());
            }
            // Relative, so that a report kept in the repository names no machine's paths.
            let root = build::repo_root();
            let logs = capture.dir.strip_prefix(&root).unwrap_or(&capture.dir).display();
            problems.extend(found.into_iter().map(|p| format!("{}: {p} (logs in {logs})", spec.label)));
            output.extend(read);
        }
        Run { pass, setup, run, output, problems }
    }
}

/// Runs every boot of the suite in every setup, pass and run, then writes
/// the report and its charts into `opts.results`; returns the report and
/// the files written.
pub fn bench(opts: &Options) -> Result<(Report, Vec<PathBuf>)> {
    ensure!(opts.runs >= 1, "--runs must be at least 1");
    ensure!(opts.period_ms >= 1 && opts.coremark_ms >= 1, "periods must be at least 1 ms");
    let machine = Machine::new(&opts.logs)?;
    let specs = boots(opts.suite, opts.period_ms, opts.coremark_ms);
    let passes = opts.passes();
    let setups_per_run: usize = passes.iter().map(|&pass| Setup::ALL.iter().filter(|s| s.runs_in(pass)).count()).sum();
    let progress = bench::progress_bar(setups_per_run * specs.len() * opts.runs as usize);
    let measured = measure(opts, &machine, &specs, &passes, &progress);
    // A failed run must not leave a half-drawn bar above its error.
    progress.finish_and_clear();
    let report = Report::new(opts, &bench_sched::today(), measured?);
    let written = report.write(&opts.results)?;
    Ok((report, written))
}

fn measure(
    opts: &Options,
    machine: &Machine,
    specs: &[BootSpec],
    passes: &[Pass],
    progress: &indicatif::ProgressBar,
) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for &pass in passes {
        for run in 1..=opts.runs {
            for setup in Setup::ALL.into_iter().filter(|s| s.runs_in(pass)) {
                let mut captures = Vec::new();
                for spec in specs {
                    let label = format!("{} {} {} run {run}/{}", pass.label(), setup.name(), spec.label, opts.runs);
                    progress.set_message(label);
                    let variant = format!("{}-{}-{}", pass.mode.name(), setup.name(), spec.label);
                    let capture =
                        machine.boot(setup, &variant, &spec.bootargs, pass.shift, time_limit(spec.guest_ms))?;
                    if let Some(failure) = &capture.failure {
                        progress.println(format!("{} {}: {failure}", setup.name(), spec.label));
                    }
                    captures.push((spec.clone(), capture));
                    progress.inc(1);
                }
                runs.push(Run::from_captures(pass, setup, run, &captures));
            }
        }
    }
    Ok(runs)
}

// ---- The report ----

/// One test in one pass and setup: the median score over the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub pass: Pass,
    pub setup: Setup,
    /// `tm3 interrupt`, `coremark`.
    pub test: String,
    /// Events per period, or CoreMark iterations per second.
    pub score: f64,
    /// S_vm / S_native in %; `None` natively or without a native score.
    pub rp: Option<f64>,
    /// A run's self-check of this test failed.
    pub failed: bool,
}

/// One priority of the scheduler probe: median switch cost in counter ticks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub pass: Pass,
    pub setup: Setup,
    pub queue: Queue,
    pub priority: u32,
    pub ticks: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub suite: Suite,
    pub date: String,
    pub runs: u32,
    pub period_ms: u32,
    pub coremark_ms: u32,
    pub passes: Vec<Pass>,
    pub scores: Vec<Score>,
    pub curve: Vec<CurvePoint>,
    /// `<pass> <setup> run <n>: <problem>`; empty when every check passed.
    pub failures: Vec<String>,
}

/// The R_P a test should reach, in %: Thread-Metric's interrupt tests
/// (the SVC variants included, which never leave the guest) get the lower
/// target, CoreMark the loss target.
pub fn target(test: &str) -> f64 {
    if test == "coremark" {
        100.0 - TARGET_COREMARK_LOSS
    } else if test.contains("interrupt") {
        TARGET_RP_INTERRUPT
    } else {
        TARGET_RP
    }
}

/// Ker-ONE's R_P for a test, where it ran it.
pub fn ker_one(test: &str) -> Option<f64> {
    let name = test.split_once(' ').map_or(test, |(_, name)| name);
    KER_ONE_RP.iter().find(|(n, _)| *n == name).map(|(_, rp)| *rp)
}

/// S_vm / S_native in %, `None` without a native score.
pub fn rp(vm: f64, native: f64) -> Option<f64> {
    (native > 0.0).then(|| 100.0 * vm / native)
}

impl Report {
    pub fn new(opts: &Options, date: &str, runs: Vec<Run>) -> Self {
        let passes = opts.passes();
        let mut report = Report {
            suite: opts.suite,
            date: date.to_string(),
            runs: opts.runs,
            period_ms: opts.period_ms,
            coremark_ms: opts.coremark_ms,
            passes: passes.clone(),
            scores: Vec::new(),
            curve: Vec::new(),
            failures: Vec::new(),
        };
        for run in &runs {
            report.failures.extend(
                run.problems.iter().map(|p| format!("{} {} run {}: {p}", run.pass.label(), run.setup.name(), run.run)),
            );
        }
        for &pass in &passes {
            for setup in Setup::ALL {
                let mine: Vec<&Run> = runs.iter().filter(|r| r.pass == pass && r.setup == setup).collect();
                report.scores.extend(scores(pass, setup, &mine));
                report.curve.extend(curve(pass, setup, &mine));
            }
        }
        let natives: Vec<(Pass, String, f64)> = report
            .scores
            .iter()
            .filter(|s| s.setup == Setup::Native)
            .map(|s| (s.pass, s.test.clone(), s.score))
            .collect();
        for score in report.scores.iter_mut().filter(|s| s.setup != Setup::Native) {
            let native = natives.iter().find(|(pass, test, _)| *pass == score.pass && *test == score.test);
            score.rp = native.and_then(|(_, _, native)| rp(score.score, *native));
        }
        report
    }

    /// `<suite>-<date>`: the report's file name without extension.
    pub fn stem(&self) -> String {
        format!("{}-{}", self.suite.name(), self.date)
    }

    /// The bar chart's file, if the suite has scores.
    pub fn bar_file(&self) -> Option<String> {
        self.suite.scores().then(|| format!("{}.svg", self.stem()))
    }

    /// The scheduler curve's file, if the suite runs the probe: the only
    /// chart of `sched-prio`, the second one of `all`.
    pub fn curve_file(&self) -> Option<String> {
        let suffix = if self.suite.scores() { "-sched-prio" } else { "" };
        self.suite.curve().then(|| format!("{}{suffix}.svg", self.stem()))
    }

    /// The files of the report: (name, contents).
    pub fn files(&self) -> Result<Vec<(String, String)>> {
        let mut files = vec![(format!("{}.md", self.stem()), self.markdown())];
        if let Some(name) = self.bar_file() {
            files.push((name, bar_svg(self)?));
        }
        if let Some(name) = self.curve_file() {
            files.push((name, curve_svg(self)?));
        }
        Ok(files)
    }

    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut written = Vec::new();
        for (name, text) in self.files()? {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
            written.push(path);
        }
        Ok(written)
    }

    /// The tests with a score, in the order the guest ran them.
    fn tests(&self) -> Vec<String> {
        let mut tests: Vec<String> = Vec::new();
        for score in &self.scores {
            if !tests.contains(&score.test) {
                tests.push(score.test.clone());
            }
        }
        tests
    }

    pub fn score(&self, pass: Pass, setup: Setup, test: &str) -> Option<&Score> {
        self.scores.iter().find(|s| s.pass == pass && s.setup == setup && s.test == test)
    }

    fn setups(&self, pass: Pass) -> Vec<Setup> {
        Setup::ALL.into_iter().filter(|s| s.runs_in(pass)).collect()
    }

    fn settings(&self) -> String {
        let icount = self
            .passes
            .iter()
            .find_map(|p| p.shift)
            .map_or_else(String::new, |shift| format!(", then again under `-icount shift={shift}`"));
        let lengths = match self.suite {
            Suite::ThreadMetric => format!("; Thread-Metric period {} ms of guest time", self.period_ms),
            Suite::CoreMark => format!("; CoreMark {} ms of guest time", self.coremark_ms),
            Suite::SchedPrio => String::new(),
            Suite::All => {
                format!("; Thread-Metric period {} ms, CoreMark {} ms of guest time", self.period_ms, self.coremark_ms)
            }
        };
        format!("medians of {} run(s) per setup, wall-clock{icount}{lengths}", self.runs)
    }

    /// The terminal summary.
    pub fn table(&self) -> String {
        let mut out = format!("RTOS benchmarks ({}): {}\n", self.suite.name(), self.settings().replace('`', ""));
        for &pass in &self.passes {
            let setups = self.setups(pass);
            if self.suite.scores() {
                let _ = write!(out, "\n{:<30} {:>12}", format!("{}: score", pass.label()), "native");
                for setup in &setups[1..] {
                    let _ = write!(out, " {:>12} {:>8}", setup.name(), "R_P");
                }
                out += "  target\n";
                for test in self.tests() {
                    let cell = |setup: Setup| self.score(pass, setup, &test);
                    let _ = write!(out, "{:<30} {:>12}", test, score_text(cell(Setup::Native)));
                    for &setup in &setups[1..] {
                        let _ = write!(out, " {:>12} {:>8}", score_text(cell(setup)), rp_text(cell(setup), &test));
                    }
                    let _ = writeln!(out, "  >= {:.1} %", target(&test));
                }
            }
            if self.suite.curve() {
                out += &self.curve_table(pass, false);
            }
        }
        out += &self.failure_text(false);
        out
    }

    fn failure_text(&self, markdown: bool) -> String {
        if self.failures.is_empty() {
            return if markdown { String::new() } else { "\nevery guest self-check passed\n".to_string() };
        }
        let mut out = if markdown {
            format!(
                "## SELF-CHECK FAILURES\n\n**{} problem(s); the scores below are not to be trusted:**\n\n",
                self.failures.len()
            )
        } else {
            format!("\nSELF-CHECK FAILURES ({}):\n", self.failures.len())
        };
        for failure in &self.failures {
            let _ = writeln!(out, "- {failure}");
        }
        if markdown {
            out.push('\n');
        }
        out
    }

    /// Switch cost per priority: one column per queue and setup.
    fn curve_table(&self, pass: Pass, markdown: bool) -> String {
        let columns: Vec<(Queue, Setup)> =
            Queue::ALL.into_iter().flat_map(|q| self.setups(pass).into_iter().map(move |s| (q, s))).collect();
        let mut priorities: Vec<u32> = self.curve.iter().filter(|p| p.pass == pass).map(|p| p.priority).collect();
        priorities.sort_unstable();
        priorities.dedup();
        let cell = |queue: Queue, setup: Setup, priority: u32| {
            self.curve
                .iter()
                .find(|p| p.pass == pass && p.queue == queue && p.setup == setup && p.priority == priority)
                .map_or_else(|| "-".to_string(), |p| format!("{:.0}", p.ticks))
        };
        let mut out = String::new();
        if markdown {
            out += "| priority |";
            for (queue, setup) in &columns {
                let _ = write!(out, " {} {} |", queue.name(), setup.name());
            }
            out += "\n|--:|";
            out += &"--:|".repeat(columns.len());
            out.push('\n');
            for &priority in &priorities {
                let _ = write!(out, "| {priority} |");
                for &(queue, setup) in &columns {
                    let _ = write!(out, " {} |", cell(queue, setup, priority));
                }
                out.push('\n');
            }
        } else {
            let _ = write!(out, "\n{}: switch cost, counter ticks\n{:>8}", pass.label(), "priority");
            for (queue, setup) in &columns {
                let _ = write!(out, " {:>14}", format!("{} {}", queue.name(), setup.name()));
            }
            out.push('\n');
            for &priority in &priorities {
                let _ = write!(out, "{priority:>8}");
                for &(queue, setup) in &columns {
                    let _ = write!(out, " {:>14}", cell(queue, setup, priority));
                }
                out.push('\n');
            }
        }
        out
    }

    /// `<suite>-<date>.md`.
    pub fn markdown(&self) -> String {
        let mut out = format!("# RTOS benchmarks: {}, {}\n\n", self.suite.name(), self.date);
        out += &self.failure_text(true);
        let _ = writeln!(
            out,
            "The guest RTOS (`guests/rtos`) natively and under Partita, on the same QEMU and the same binary; {}. \
             Generated by `partita bench {}`.\n",
            self.settings(),
            self.suite.name()
        );
        if self.suite.scores() {
            out += &self.scores_markdown();
        }
        if self.suite.curve() {
            out += "## Scheduler cost versus priority\n\n\
                    The seL4-style probe: the cost of a switch to a task of each priority, in counter ticks \
                    (62.5 MHz wall-clock; under `-icount shift=4` a tick is one instruction), for the RTOS's O(1) \
                    bitmap ready queue (`sched=bitmap`) and a linear scan of its 32 priorities (`sched=linear`). \
                    Medians over the runs.\n\n";
            for &pass in &self.passes {
                let _ = writeln!(out, "### {}\n", pass.label());
                out += &self.curve_table(pass, true);
                out.push('\n');
            }
            let _ = writeln!(out, "![switch cost versus priority]({})\n", self.curve_file().unwrap_or_default());
        }
        out += SETUPS;
        out
    }

    fn scores_markdown(&self) -> String {
        let mut out = String::from(
            "## Scores and R_P\n\n\
             Thread-Metric scores are events per period, CoreMark's iterations per second. \
             R_P = S_vm / S_native (Ker-ONE's Table 3), against the native score of the same pass; a cell \
             marked FAIL had a failed self-check in some run, and R_P below its target is marked ✗.\n\n",
        );
        for &pass in &self.passes {
            let setups = self.setups(pass);
            let _ = writeln!(out, "### {}\n", pass.label());
            out += "| test | native |";
            for setup in &setups[1..] {
                let _ = write!(out, " {0} | R_P {0} |", setup.name());
            }
            out += " target | Ker-ONE R_P |\n|---|--:|";
            out += &"--:|--:|".repeat(setups.len() - 1);
            out += "--:|--:|\n";
            for test in self.tests() {
                let cell = |setup: Setup| self.score(pass, setup, &test);
                let _ = write!(out, "| {test} | {} |", score_text(cell(Setup::Native)));
                for &setup in &setups[1..] {
                    let _ = write!(out, " {} | {} |", score_text(cell(setup)), rp_text(cell(setup), &test));
                }
                let ker_one = ker_one(&test).map_or_else(String::new, |rp| format!("{rp:.1} %"));
                let _ = writeln!(out, " >= {:.1} % | {ker_one} |", target(&test));
            }
            let losses: Vec<String> = setups[1..]
                .iter()
                .filter_map(|&setup| {
                    let rp = self.score(pass, setup, "coremark")?.rp?;
                    Some(format!("{} {:.3} %", setup.name(), 100.0 - rp))
                })
                .collect();
            if !losses.is_empty() {
                let _ = writeln!(
                    out,
                    "\nCoreMark loss (100 % - R_P): {}; XtratuM loses {XTRATUM_COREMARK_LOSS} % on one core, \
                     the target is <= {TARGET_COREMARK_LOSS} %.",
                    losses.join(", ")
                );
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "![R_P per test and setup]({})\n\n\
             Anchors: Ker-ONE's R_P runs from 79.2 % (interrupt handling) to 98.6 % (calibration, our `basic`) for \
             para-virtualized uC/OS-II on a Zynq-7000 (Table 3; Xen-ARM lower, Figure 13); XtratuM loses \
             {XTRATUM_COREMARK_LOSS} % of CoreMark on one core. Partita's targets: R_P >= {TARGET_RP} % on every \
             non-interrupt test, >= {TARGET_RP_INTERRUPT} % on the interrupt tests, CoreMark loss <= \
             {TARGET_COREMARK_LOSS} %.\n",
            self.bar_file().unwrap_or_default()
        );
        out
    }
}

const SETUPS: &str = "## Setups

- native: QEMU `virt` (EL2, GICv3, 2 CPUs) without Partita, the RTOS booted as the kernel.
- alone: Partita, the RTOS alone on pCPU 1 (`exclusive = true`).
- loaded: as alone, plus the test guest busy on pCPU 2 (`ticks=0`: it never idles). Wall-clock only: under
  `-icount` QEMU runs all vCPUs in one thread and guest time advances with every busy vCPU's instructions, so a
  busy neighbour would take the RTOS's guest time whatever Partita did.
- shared: Partita, the RTOS (high criticality) sharing pCPU 1 with the busy test guest (low criticality), the
  RTOS not exclusive: the guest gets the pCPU whenever the RTOS idles.

Wall-clock numbers depend on the host: each vCPU is a host thread, and a small host runs them beside each other
and everything else, so they move by a few percent from run to run (R_P above 100 % is noise). The `-icount`
pass counts instructions and repeats exactly; it is the one to compare against the targets.
";

fn score_text(score: Option<&Score>) -> String {
    match score {
        None => "-".to_string(),
        Some(s) if s.failed => format!("{:.0} FAIL", s.score),
        Some(s) => format!("{:.0}", s.score),
    }
}

fn rp_text(score: Option<&Score>, test: &str) -> String {
    match score.and_then(|s| s.rp) {
        None => "-".to_string(),
        Some(rp) if rp < target(test) => format!("{rp:.2} % ✗"),
        Some(rp) => format!("{rp:.2} %"),
    }
}

fn scores(pass: Pass, setup: Setup, runs: &[&Run]) -> Vec<Score> {
    let mut tests: Vec<(String, Vec<f64>, bool)> = Vec::new();
    let mut add = |test: String, value: f64, failed: bool| match tests.iter_mut().find(|(t, _, _)| *t == test) {
        Some((_, values, any_failed)) => {
            values.push(value);
            *any_failed |= failed;
        }
        None => tests.push((test, vec![value], failed)),
    };
    for run in runs {
        for tm in &run.output.tm {
            add(tm.test(), tm.events as f64, tm.check != Check::Ok);
        }
        for coremark in &run.output.coremark {
            add("coremark".to_string(), coremark.per_second, coremark.check != Check::Ok);
        }
    }
    tests
        .into_iter()
        .map(|(test, values, failed)| Score { pass, setup, test, score: bench::median(values), rp: None, failed })
        .collect()
}

fn curve(pass: Pass, setup: Setup, runs: &[&Run]) -> Vec<CurvePoint> {
    let mut keys: Vec<(Queue, u32)> =
        runs.iter().flat_map(|r| r.output.schedprio.iter().map(|p| (p.queue, p.priority))).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|(queue, priority)| {
            let values = runs
                .iter()
                .flat_map(|r| r.output.schedprio.iter())
                .filter(|p| p.queue == queue && p.priority == priority)
                .map(|p| p.ticks as f64)
                .collect();
            CurvePoint { pass, setup, queue, priority, ticks: bench::median(values) }
        })
        .collect()
}

// ---- Charts ----

fn plot_error(error: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing failed: {error}")
}

const SERIES_COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
];
const KER_ONE_COLOR: RGBColor = RGBColor(170, 170, 170);

/// Above this R_P the bars are cut and labelled: wall-clock noise can give
/// a few hundred percent, which would flatten the interesting part near 100.
const BAR_CAP: f64 = 130.0;
const TARGET_COLORS: [RGBColor; 2] = [RGBColor(0, 0, 0), RGBColor(214, 39, 40)];

/// Ker-ONE's Figure 13, for Partita: R_P per test, one bar per virtualized
/// setup and pass, Ker-ONE's own beside them, and the two targets as lines.
pub fn bar_svg(report: &Report) -> Result<String> {
    let tests = report.tests();
    let slots = tests.len().max(1);
    let mut series: Vec<(String, RGBColor, Vec<Option<f64>>)> = Vec::new();
    for &pass in &report.passes {
        for setup in report.setups(pass).into_iter().skip(1) {
            let values: Vec<Option<f64>> =
                tests.iter().map(|t| report.score(pass, setup, t).and_then(|s| s.rp)).collect();
            if values.iter().any(Option::is_some) {
                let color = SERIES_COLORS[series.len() % SERIES_COLORS.len()];
                series.push((format!("{} {}", pass.label(), setup.name()), color, values));
            }
        }
    }
    series.push(("Ker-ONE (Table 3)".to_string(), KER_ONE_COLOR, tests.iter().map(|t| ker_one(t)).collect()));
    let values = series.iter().flat_map(|(_, _, v)| v.iter().flatten().copied());
    let (low, high) = values.fold((TARGET_RP_INTERRUPT, 100.0), |(lo, hi): (f64, f64), v| (lo.min(v), hi.max(v)));
    let (bottom, top) = ((low - 5.0).max(0.0).floor(), (high + 2.0).min(BAR_CAP));
    let width = (200 + 130 * slots) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let (chart_area, legend_area) = root.split_vertically(580);
        let labels = tests.clone();
        let mut chart = ChartBuilder::on(&chart_area)
            .caption(format!("R_P = S_vm / S_native per test ({})", report.stem()), ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..slots as f64, bottom..top)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(slots * 2 + 1)
            .x_label_formatter(&|x| {
                let index = x.floor() as usize;
                if (x - x.floor() - 0.5).abs() < 0.01 {
                    labels.get(index).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("R_P (%)")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(plot_error)?;
        let width = 0.8 / series.len() as f64;
        for (index, (_, color, values)) in series.iter().enumerate() {
            for (test, value) in values.iter().enumerate() {
                let Some(value) = *value else { continue };
                let x0 = test as f64 + 0.1 + index as f64 * width;
                let bar = Rectangle::new([(x0, bottom), (x0 + width * 0.9, value.min(top))], color.filled());
                chart.draw_series(std::iter::once(bar)).map_err(plot_error)?;
                if value > top {
                    let label = Text::new(format!("{value:.0}"), (x0, top), ("sans-serif", 11));
                    chart.draw_series(std::iter::once(label)).map_err(plot_error)?;
                }
            }
        }
        for (target, color) in [TARGET_RP, TARGET_RP_INTERRUPT].into_iter().zip(TARGET_COLORS) {
            let line = vec![(0.0, target), (slots as f64, target)];
            chart.draw_series(std::iter::once(PathElement::new(line, color.stroke_width(1)))).map_err(plot_error)?;
        }
        let mut entries: Vec<(String, RGBColor, bool)> = series.iter().map(|(n, c, _)| (n.clone(), *c, true)).collect();
        entries.push((format!("target {TARGET_RP} %"), TARGET_COLORS[0], false));
        entries.push((format!("target {TARGET_RP_INTERRUPT} % (interrupt tests)"), TARGET_COLORS[1], false));
        draw_legend(&legend_area, &entries)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// A strip under the chart: a square (a bar series) or a dash (a line) and
/// its name, for each entry.
fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, entries: &[(String, RGBColor, bool)]) -> Result<()> {
    let mut x = 80;
    for (name, color, bar) in entries {
        let mark = if *bar {
            Rectangle::new([(x, 12), (x + 14, 26)], color.filled())
        } else {
            Rectangle::new([(x, 18), (x + 14, 20)], color.filled())
        };
        area.draw(&mark).map_err(plot_error)?;
        area.draw(&Text::new(name.clone(), (x + 20, 12), ("sans-serif", 15))).map_err(plot_error)?;
        x += 40 + 8 * name.len() as i32;
    }
    Ok(())
}

/// The seL4 study's curve: switch cost over priority for both queues,
/// natively and alone under Partita, from the `-icount` pass if there is one.
pub fn curve_svg(report: &Report) -> Result<String> {
    let pass = report.passes.iter().rev().copied().find(|p| report.curve.iter().any(|c| c.pass == *p));
    let pass = pass.unwrap_or(Pass::WALL);
    let mut lines: Vec<Curve> = Vec::new();
    for (queue, setup, color) in [
        (Queue::Bitmap, Setup::Native, RGBColor(31, 119, 180)),
        (Queue::Bitmap, Setup::Alone, RGBColor(23, 190, 207)),
        (Queue::Linear, Setup::Native, RGBColor(214, 39, 40)),
        (Queue::Linear, Setup::Alone, RGBColor(255, 127, 14)),
    ] {
        let points: Vec<(f64, f64)> = report
            .curve
            .iter()
            .filter(|p| p.pass == pass && p.queue == queue && p.setup == setup)
            .map(|p| (f64::from(p.priority), p.ticks))
            .collect();
        lines.push((format!("{} {}", queue.name(), setup.name()), color, points));
    }
    let all = lines.iter().flat_map(|(_, _, points)| points.iter());
    let right = all.clone().map(|p| p.0).fold(31.0, f64::max);
    let top = all.map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("RTOS switch cost vs priority ({})", pass.label()), ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..right, 0.0..top)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc("priority of the task switched to (0 = most urgent)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc("counter ticks per switch")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(plot_error)?;
        for (name, color, points) in &lines {
            // Native underneath and wider, so that an equal virtualized curve leaves it visible.
            let width = if name.ends_with(Setup::Native.name()) { 5 } else { 2 };
            draw_curve(&mut chart, points, *color, name, width)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// A named, colored line of points.
type Curve = (String, RGBColor, Vec<(f64, f64)>);

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The `line_series` feature of plotters is off, so the line is a path.
fn draw_curve(chart: &mut Chart, points: &[(f64, f64)], color: RGBColor, name: &str, width: u32) -> Result<()> {
    chart
        .draw_series(std::iter::once(PathElement::new(points.to_vec(), color.stroke_width(width))))
        .map_err(plot_error)?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width)));
    chart.draw_series(points.iter().map(|&point| Circle::new(point, 3, color.filled()))).map_err(plot_error)?;
    Ok(())
}
