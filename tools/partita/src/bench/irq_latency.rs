//! `partita bench irq-latency`: virtual-timer interrupt latency of the test
//! guest's `irq-bench` mode, natively and under Partita, reported rather
//! than asserted.
//!
//! It runs on QEMU `virt` (GICv3), on `xlnx-zcu102` (GIC-400, GICv2), or on
//! both in one invocation, each setup booted on one board and then the
//! other, so that the two interrupt paths are compared under the same load
//! of the host.
//!
//! Every run boots QEMU afresh and is stopped as soon as the measured guest
//! has printed its `irq-bench hist:` line. That matters for the shared
//! setup, whose low-criticality partition spins for ten minutes and so
//! would never let the machine power off by itself.

use super::qemu::{self, Until};
use super::report::{self, Column, Table};
use super::stats::median;
use super::{progress_bar, Board, Mode, Pass, NOMINAL_HZ};
use crate::build::BuildOutput;
use crate::config::raw::{RawConfig, RawCriticality};
use crate::config::Config;
use crate::guests;
use crate::paths;
use crate::run::{self, RunOptions, Source};
use anyhow::{bail, ensure, Context, Result};
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub const DEFAULT_RUNS: u32 = 3;
pub const DEFAULT_SAMPLES: u32 = 10_000;
/// The test guest keeps at most this many samples.
pub const MAX_SAMPLES: u32 = 16_384;
/// `<out>/bench/<name>/` gets the reports, `target/bench/<name>-*.toml` the configurations.
pub const DEFAULT_NAME: &str = "irq-latency";
/// A boot takes well under a second; this only catches a hung one.
const RUN_LIMIT: Duration = Duration::from_secs(60);
const LAST_LINE: &str = "irq-bench hist:";
/// The partition that is measured under Partita.
const MEASURED: &str = "rt";
/// What `gpos` does on the shared core: spin with interrupts masked for ten
/// minutes, far longer than any run.
const HOG_BOOTARGS: &str = "mask-spin=600000 ticks=1";
/// The preempt setup's shortest delay, in counter ticks (80 µs): longer than
/// `rt`'s way out to `gpos` (its WFI, the switch), so that every timer
/// comes due while `gpos` spins and each sample is the preemption. With
/// the default 200 most came due while Partita was still switching to
/// `gpos`, and the row timed the rest of that switch as well.
const PREEMPT_DELAY_TICKS: u64 = 5000;
/// When the preempt setup's samples start, in counter ms: after `gpos`'s
/// boot (its set/way clean traps line by line), which `rt` sleeps through,
/// so that `gpos` spins rather than traps when a timer comes due.
const PREEMPT_START_MS: u64 = 3000;

/// What to run; [`Options::default`] is what the command line does without flags.
#[derive(Clone, Debug)]
pub struct Options {
    pub runs: u32,
    pub samples: u32,
    /// Adds a pass with `-icount shift=N` after the wall-clock one.
    pub icount: Option<u32>,
    pub name: String,
    /// In the report's order; each setup runs on each, one after the other.
    pub boards: Vec<Board>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            runs: DEFAULT_RUNS,
            samples: DEFAULT_SAMPLES,
            icount: None,
            name: DEFAULT_NAME.to_string(),
            boards: vec![Board::QemuVirt],
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
    /// The same, with `interrupts = "direct"`: the timer never exits.
    Direct,
    /// Partita, `rt` sharing its pCPU with a busy low-criticality `gpos`.
    Shared,
    /// The same, with `rt` waiting in WFI between samples: `gpos` runs, and
    /// each sample is `rt`'s timer preempting it.
    Preempt,
}

impl Setup {
    pub const ALL: [Setup; 5] = [Setup::Native, Setup::Exclusive, Setup::Direct, Setup::Shared, Setup::Preempt];

    pub fn name(self) -> &'static str {
        match self {
            Setup::Native => "native",
            Setup::Exclusive => "exclusive",
            Setup::Direct => "direct",
            Setup::Shared => "shared",
            Setup::Preempt => "preempt",
        }
    }

    /// Why the setup cannot exist on `board`, if it cannot.
    pub fn missing_on(self, board: Board) -> Option<&'static str> {
        match (board, self) {
            (Board::Zcu102, Setup::Native) => Some(
                "QEMU makes no device tree for xlnx-zcu102, and the test guest finds its memory and its GIC in one; \
                 under Partita the partition gets its device tree from Partita",
            ),
            (Board::Zcu102, Setup::Direct) => Some(
                "`interrupts = \"direct\"` gives the partition the GIC's second interrupt group, which a GICv3 has \
                 and the GIC-400 without its Security Extensions does not; Partita refuses it on this board",
            ),
            _ => None,
        }
    }
}

/// A setup a board cannot have, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeftOut {
    pub board: Board,
    pub setup: Setup,
    pub why: String,
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
    pub board: Board,
    pub mode: Mode,
    pub setup: Setup,
    pub min_ticks: f64,
    pub mean_ticks: f64,
    pub max_ticks: f64,
    pub min_us: f64,
    pub mean_us: f64,
    pub max_us: f64,
    /// Against the native row of the same board and mode; `None` when that
    /// is 0, as it can be under icount, or missing.
    pub mean_over_native: Option<f64>,
    /// Against the `qemu-virt` row of the same mode and setup, when both
    /// boards ran: the GICv2 path over the GICv3 one.
    pub mean_over_qemu_virt: Option<f64>,
    pub runs: Vec<Sample>,
}

/// `report.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub benchmark: String,
    pub boards: Vec<Board>,
    pub left_out: Vec<LeftOut>,
    pub runs: u32,
    pub samples: u32,
    pub counter_hz: u64,
    pub icount_shift: Option<u32>,
    /// Counter ticks per guest instruction under icount: 1 with shift 4 at 62.5 MHz.
    pub ticks_per_instruction: Option<f64>,
    pub rows: Vec<Row>,
}

/// Runs every setup in every mode, writes `<out>/bench/<name>/report.md`
/// and `report.json`, and returns the report.
pub fn run(opts: &Options) -> Result<Report> {
    ensure!(opts.runs >= 1, "--runs must be at least 1");
    ensure!((1..=MAX_SAMPLES).contains(&opts.samples), "--samples must be 1 to {MAX_SAMPLES}");
    ensure!(!opts.boards.is_empty(), "no board to run on");
    let hypervisors = qemu::prepare_boards(&opts.boards)?;
    let passes = Pass::with_icount(opts.icount);
    let setups =
        opts.boards.iter().map(|&b| Setup::ALL.iter().filter(|s| s.missing_on(b).is_none()).count()).sum::<usize>();
    let progress = progress_bar(passes.len() * setups * opts.runs as usize);
    let measured = measure_all(opts, &passes, &hypervisors, &progress);
    // A failed run must not leave a half-drawn bar above its error.
    progress.finish_and_clear();
    let report = summarize(opts, measured?)?;
    let files = [("report.md".to_string(), report.markdown()), ("report.json".to_string(), report::json(&report)?)];
    report::write(&paths::bench_out(&opts.name), &files)?;
    Ok(report)
}

/// One boot of `setup` on QEMU `virt` under `-icount shift` (or the wall
/// clock), its logs under `<out>/bench/<name>/`: what `partita bench
/// response` takes for ΔVMMsched (the `preempt` setup).
pub fn measure_one(name: &str, setup: Setup, icount: Option<u32>, samples: u32, hypervisor: &Path) -> Result<Sample> {
    let opts = Options { samples, name: name.to_string(), ..Options::default() };
    let mode = if icount.is_some() { Mode::Icount } else { Mode::Wall };
    Target::prepare(&opts, Board::QemuVirt, setup, mode, hypervisor)?.measure(icount)
}

type Measured = Vec<(Board, Mode, Setup, Vec<Sample>)>;

/// Each setup on every board before the next setup, so that a change in the
/// host's load between setups falls on both boards' rows alike.
fn measure_all(
    opts: &Options,
    passes: &[Pass],
    hypervisors: &[(Board, PathBuf)],
    progress: &ProgressBar,
) -> Result<Measured> {
    let mut measured = Vec::new();
    for &pass in passes {
        for setup in Setup::ALL {
            for (board, hypervisor) in hypervisors {
                let board = *board;
                if setup.missing_on(board).is_some() {
                    continue;
                }
                let target = Target::prepare(opts, board, setup, pass.mode, hypervisor)?;
                let samples = (1..=opts.runs).map(|run| {
                    progress.set_message(format!(
                        "{} {} {} run {run}/{}",
                        board.name(),
                        pass.label(),
                        setup.name(),
                        opts.runs
                    ));
                    let sample = target.measure(pass.shift);
                    progress.inc(1);
                    sample
                });
                measured.push((board, pass.mode, setup, samples.collect::<Result<Vec<_>>>()?));
            }
        }
    }
    Ok(measured)
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
    board: Board,
    setup: Setup,
    dir: PathBuf,
    partita: Option<(Config, BuildOutput)>,
    samples: u32,
}

impl Target {
    fn prepare(opts: &Options, board: Board, setup: Setup, mode: Mode, hypervisor: &Path) -> Result<Self> {
        let variant = variant(board, mode, setup);
        let dir = paths::bench_out(&opts.name).join(&variant);
        let partita = match setup {
            Setup::Native => None,
            _ => {
                let mut args = bootargs(opts.samples);
                if setup == Setup::Preempt {
                    args.push_str(&format!(
                        " irq-bench-wait=1 irq-bench-delay={PREEMPT_DELAY_TICKS} irq-bench-at-ms={PREEMPT_START_MS}"
                    ));
                }
                let config = config(setup, &args, &guests::image("test-guest.elf")).board(board.name());
                Some(qemu::generated(&opts.name, &variant, &config, hypervisor)?)
            }
        };
        Ok(Self { board, setup, dir, partita, samples: opts.samples })
    }

    fn names(&self) -> Vec<String> {
        self.partita
            .as_ref()
            .map_or_else(Vec::new, |(c, _)| c.system.partitions.iter().map(|p| p.name.clone()).collect())
    }

    /// The same flags `partita run` gives QEMU; natively without EL2 and
    /// with one CPU: the guest needs no more.
    fn command(&self, icount: Option<u32>) -> Command {
        match &self.partita {
            Some((config, output)) => {
                run::qemu_command(output, &config.system, &RunOptions { icount, ..RunOptions::default() })
            }
            None => {
                let guest = guests::image("test-guest.bin");
                qemu::native_command(&guest, false, 1, &bootargs(self.samples), icount)
            }
        }
    }

    /// Boots, and stops QEMU at the measured guest's last line rather than
    /// leaving it to power off.
    fn measure(&self, icount: Option<u32>) -> Result<Sample> {
        let names = self.names();
        // Natively every line is the guest's, and the splitter files untagged lines as Partita's.
        let watched = match names.iter().position(|n| n == MEASURED) {
            Some(index) => Source::Partition(index),
            None => Source::Hypervisor,
        };
        let until = Until { line: LAST_LINE, is_it: |said| said.starts_with(LAST_LINE) };
        let context =
            || format!("{} setup on {}, logs in {}", self.setup.name(), self.board.name(), self.dir.display());
        let followed =
            qemu::follow(self.command(icount), &names, watched, &self.dir, until, RUN_LIMIT).with_context(context)?;
        if let Some(failure) = followed.failure {
            return Err(anyhow::anyhow!(failure)).with_context(context);
        }
        let text = followed.text;
        parse_sample(&text).with_context(|| format!("{} setup: {text}", self.setup.name()))
    }
}

/// `<mode>-<setup>` on QEMU `virt`, as before there was another board;
/// `<board>-<mode>-<setup>` on the others.
pub fn variant(board: Board, mode: Mode, setup: Setup) -> String {
    match board {
        Board::QemuVirt => format!("{}-{}", mode.name(), setup.name()),
        _ => format!("{}-{}-{}", board.name(), mode.name(), setup.name()),
    }
}

/// Two pCPUs, Partita's own and `rt`'s, so that QEMU's threads do not
/// outnumber a small host's cores.
pub fn config(setup: Setup, bootargs: &str, guest: &Path) -> RawConfig {
    let partition =
        |name: &str, criticality, bootargs: &str| qemu::partition(name, &[1], bootargs, guest).criticality(criticality);
    let rt = partition(MEASURED, RawCriticality::High, bootargs);
    let machine = RawConfig::new().cpus(2);
    match setup {
        Setup::Exclusive => machine.partition(rt.exclusive()),
        Setup::Direct => machine.partition(rt.exclusive().direct()),
        Setup::Shared | Setup::Preempt => {
            machine.partition(rt).partition(partition("gpos", RawCriticality::Low, HOG_BOOTARGS))
        }
        Setup::Native => machine,
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
    // Both boards' counters run at 62.5 MHz; one frequency keeps ticks comparable across the table.
    let counter_hz = measured.first().and_then(|(_, _, _, s)| s.first()).map_or(NOMINAL_HZ, |s| s.counter_hz);
    ensure!(
        measured.iter().flat_map(|(_, _, _, s)| s).all(|s| s.counter_hz == counter_hz),
        "the guests reported different counter frequencies"
    );
    let mut rows: Vec<Row> =
        measured.into_iter().map(|(board, mode, setup, runs)| row(board, mode, setup, runs, counter_hz)).collect();
    let mean_of = |rows: &[Row], board: Board, mode: Mode, setup: Setup| {
        rows.iter().find(|r| (r.board, r.mode, r.setup) == (board, mode, setup)).map_or(0.0, |r| r.mean_ticks)
    };
    let ratio = |value: f64, base: f64| (base > 0.0).then(|| value / base);
    for i in 0..rows.len() {
        let (board, mode, setup, mean) = (rows[i].board, rows[i].mode, rows[i].setup, rows[i].mean_ticks);
        rows[i].mean_over_native = ratio(mean, mean_of(&rows, board, mode, Setup::Native));
        if board != Board::QemuVirt {
            rows[i].mean_over_qemu_virt = ratio(mean, mean_of(&rows, Board::QemuVirt, mode, setup));
        }
    }
    let left_out = opts
        .boards
        .iter()
        .flat_map(|&board| {
            Setup::ALL
                .into_iter()
                .filter_map(move |setup| Some(LeftOut { board, setup, why: setup.missing_on(board)?.to_string() }))
        })
        .collect();
    let ticks_per_instruction = opts.icount.map(|shift| (1u64 << shift) as f64 * counter_hz as f64 / 1e9);
    Ok(Report {
        benchmark: "irq-latency".to_string(),
        boards: opts.boards.clone(),
        left_out,
        runs: opts.runs,
        samples: opts.samples,
        counter_hz,
        icount_shift: opts.icount,
        ticks_per_instruction,
        rows,
    })
}

fn row(board: Board, mode: Mode, setup: Setup, runs: Vec<Sample>, counter_hz: u64) -> Row {
    let median_of = |pick: fn(&Sample) -> u64| median(runs.iter().map(|s| pick(s) as f64).collect());
    let (min, mean, max) = (median_of(|s| s.min), median_of(|s| s.mean), median_of(|s| s.max));
    let us = |ticks: f64| ticks * 1e6 / counter_hz as f64;
    Row {
        board,
        mode,
        setup,
        min_ticks: min,
        mean_ticks: mean,
        max_ticks: max,
        min_us: us(min),
        mean_us: us(mean),
        max_us: us(max),
        mean_over_native: None,
        mean_over_qemu_virt: None,
        runs,
    }
}

/// The table's cells, at the terminal and in `report.md` alike.
const COLUMNS: [Column; 10] = [
    Column::left("mode", "mode", 10),
    Column::left("board", "board", 9),
    Column::left("setup", "setup", 10),
    Column::right("min", "min (ticks)", 8),
    Column::right("mean", "mean (ticks)", 9),
    Column::right("max", "max (ticks)", 8),
    Column::right("min µs", "min (µs)", 8),
    Column::right("mean µs", "mean (µs)", 9),
    Column::right("max µs", "max (µs)", 8),
    Column::right("mean/native", "mean / native", 12),
];
/// With both boards: each zcu102 row against the `qemu-virt` row beside it.
const BOARD_COLUMN: Column = Column::right("mean/virt", "mean / qemu-virt", 10);

impl Report {
    fn mhz(&self) -> String {
        format!("{} MHz", self.counter_hz as f64 / 1e6)
    }

    fn label(&self, row: &Row) -> String {
        let shift = if row.mode == Mode::Icount { self.icount_shift } else { None };
        Pass { mode: row.mode, shift }.label()
    }

    fn both(&self) -> bool {
        self.boards.len() > 1
    }

    fn rows(&self) -> Table {
        let mut columns = COLUMNS.to_vec();
        if self.both() {
            columns.push(BOARD_COLUMN);
        }
        let mut table = Table::new(&columns);
        for row in &self.rows {
            let mut cells = vec![
                self.label(row),
                row.board.name().to_string(),
                row.setup.name().to_string(),
                format!("{:.0}", row.min_ticks),
                format!("{:.0}", row.mean_ticks),
                format!("{:.0}", row.max_ticks),
                format!("{:.3}", row.min_us),
                format!("{:.3}", row.mean_us),
                format!("{:.3}", row.max_us),
                report::ratio(row.mean_over_native),
            ];
            if self.both() {
                cells.push(match row.board {
                    Board::QemuVirt => String::new(),
                    _ => report::ratio(row.mean_over_qemu_virt),
                });
            }
            table.row(cells);
        }
        table
    }

    /// `qemu-virt (GICv3) and zcu102 (GIC-400, GICv2)`.
    fn board_names(&self) -> String {
        let names: Vec<String> = self.boards.iter().map(|b| format!("{} ({})", b.name(), b.gic())).collect();
        names.join(" and ")
    }

    /// One line per setup a board leaves out.
    fn left_out_lines(&self) -> String {
        self.left_out
            .iter()
            .map(|l| format!("- {} has no {} row: {}.\n", l.board.name(), l.setup.name(), l.why))
            .collect()
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
            "irq-latency on {}, counter ticks ({}); medians of {} runs x {} samples\n",
            self.board_names(),
            self.mhz(),
            self.runs,
            self.samples
        );
        out += &self.rows().terminal();
        out += &self.left_out_lines().replace('`', "");
        if let Some(note) = self.icount_note() {
            out += &note.replace('`', "");
            out.push('\n');
        }
        out
    }

    /// `report.md`.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# irq-latency\n\nVirtual-timer interrupt latency of the test guest's `irq-bench={}` on {}: the counter \
             read first thing in the IRQ vector minus the compare value that fired. Each number is the median \
             over {} runs of that run's min, mean or max; the counter runs at {}.\n\n",
            self.samples,
            self.board_names(),
            self.runs,
            self.mhz()
        );
        out += &self.rows().markdown();
        out += SETUPS;
        if self.both() {
            out += BOARDS;
        }
        if !self.left_out.is_empty() {
            out += "\nLeft out:\n\n";
            out += &self.left_out_lines();
        }
        if let Some(note) = self.icount_note() {
            out += &format!("\n{note}\n");
        }
        out
    }
}

const SETUPS: &str = "
- native: QEMU alone, the guest at EL1.
- exclusive: Partita, `rt` (high criticality, `exclusive = true`) alone on pCPU 1.
- direct: the same with `interrupts = \"direct\"`: the guest takes its timer from the physical GIC, with no exit.
- shared: Partita, `rt` (high) sharing pCPU 1 with `gpos` (low), which spins with interrupts masked. Partita
  runs the most critical runnable vCPU and `irq-bench` spins rather than waits, so `gpos` gets the pCPU only
  while `rt` waits (during its boot and its one periodic tick): this row measures the interrupt path of a
  shared pCPU, not time-slicing.
- preempt: the same pair, but `rt` waits in WFI for each sample (`irq-bench-wait=1`), so `gpos` runs until
  `rt`'s timer comes due: each sample is the RTOS preempting the GPOS (Partita's EL2 timer, the switch from
  `gpos` to `rt`, then `rt`'s own timer interrupt). So that `gpos` spins when a timer comes due, rather than
  traps or is still being switched to, `rt` starts at 3000 ms, after `gpos`'s boot (`irq-bench-at-ms`), and
  its delays start at 5000 ticks rather than 200 (`irq-bench-delay`). Its ratio is against the native row,
  which spins.
";

const BOARDS: &str = "
Both boards ran in this invocation, each setup on `qemu-virt` and then on `zcu102` before the next setup.
`mean / qemu-virt` is a zcu102 row's mean over the `qemu-virt` row of the same mode and setup: the GIC-400's
path (list registers written through GICH's MMIO) against GICv3's system registers. The EOI maintenance
interrupt zcu102 takes per forwarded hardware interrupt comes after the guest's EOI, outside what is
measured here. The boards differ in more than their GIC (QEMU models a Cortex-A53 on `xlnx-zcu102`, a
Cortex-A72 on `virt`), so the ratio is of the whole path on each.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(mean: u64) -> Sample {
        Sample { n: 10, min: mean - 1, mean, max: mean + 1, missed: 0, hist: vec![10], counter_hz: NOMINAL_HZ }
    }

    #[test]
    fn zcu102_rows_stand_beside_virts_with_their_ratio() {
        let opts = Options { boards: vec![Board::QemuVirt, Board::Zcu102], ..Options::default() };
        let measured = vec![
            (Board::QemuVirt, Mode::Wall, Setup::Native, vec![sample(100)]),
            (Board::QemuVirt, Mode::Wall, Setup::Exclusive, vec![sample(200)]),
            (Board::Zcu102, Mode::Wall, Setup::Exclusive, vec![sample(300)]),
        ];
        let report = summarize(&opts, measured).unwrap();
        let zcu = report.rows.iter().find(|r| r.board == Board::Zcu102).unwrap();
        assert_eq!((zcu.mean_over_native, zcu.mean_over_qemu_virt), (None, Some(1.5)), "no native row on zcu102");
        let virt = report.rows.iter().find(|r| (r.board, r.setup) == (Board::QemuVirt, Setup::Exclusive)).unwrap();
        assert_eq!((virt.mean_over_native, virt.mean_over_qemu_virt), (Some(2.0), None));
        let left: Vec<(Board, Setup)> = report.left_out.iter().map(|l| (l.board, l.setup)).collect();
        assert_eq!(left, [(Board::Zcu102, Setup::Native), (Board::Zcu102, Setup::Direct)]);
        let markdown = report.markdown();
        assert!(markdown.contains("| wall | zcu102 | exclusive |") && markdown.contains("| 1.50 |"), "{markdown}");
        assert!(markdown.contains("- zcu102 has no direct row: "), "{markdown}");
    }

    #[test]
    fn one_board_has_no_board_ratio_and_keeps_its_folders() {
        let report =
            summarize(&Options::default(), vec![(Board::QemuVirt, Mode::Wall, Setup::Native, vec![sample(5)])]);
        let markdown = report.unwrap().markdown();
        assert!(!markdown.contains("mean / qemu-virt") && !markdown.contains("Left out"), "{markdown}");
        assert_eq!(variant(Board::QemuVirt, Mode::Wall, Setup::Shared), "wall-shared");
        assert_eq!(variant(Board::Zcu102, Mode::Icount, Setup::Shared), "zcu102-icount-shared");
    }

    #[test]
    fn zcu102_leaves_out_native_and_direct_only() {
        let kept: Vec<Setup> = Setup::ALL.into_iter().filter(|s| s.missing_on(Board::Zcu102).is_none()).collect();
        assert_eq!(kept, [Setup::Exclusive, Setup::Shared, Setup::Preempt]);
        assert!(Setup::ALL.iter().all(|s| s.missing_on(Board::QemuVirt).is_none()));
        let config = config(Setup::Shared, "", Path::new("g.elf")).board(Board::Zcu102.name());
        assert_eq!(config.platform.board.as_deref(), Some("zcu102"));
    }
}
