//! `partita bench pcs` and `partita bench slots`: what a cyclic pCPU's
//! partition context switch (PCS) costs, and how much of its slots a
//! partition loses to it, after XtratuM's counting-partition experiment
//! (its Table 1, slots of 1000 ms down to 1 ms). Both report; neither asserts.
//!
//! `bench pcs` times each switch twice: from the trace, where Partita
//! notes when it put the slot's vCPU on the pCPU, and from the incoming
//! partition itself, which times its own loop and finds the batches a slot
//! of the other partition interrupted ([`Gaps`]). Only the second works
//! with tracing off, which is how a configuration usually runs, and it
//! reaches the partition's first instruction, past the restore and the
//! `eret` the trace's `entered` precedes.
//!
//! Every partition of a run counts over one window of counter time
//! (`count_at_ms`), since under QEMU one vCPU's speed depends on what the
//! others do: wall-clock they share the host's cores, and under `-icount`
//! they share one thread, guest time advancing with the instructions of
//! whichever vCPU runs. That is also why, under `-icount`, the reference
//! partition of `bench slots` counts in a boot of its own (see [`Reference`]).

use super::qemu;
use super::report::{self, today, Column, Table};
use super::stats::{extremes, median};
use super::{progress_bar, Board, Mode, Pass, NOMINAL_HZ};
use crate::build::BuildOutput;
use crate::config::raw::{RawConfig, RawCore, RawPartition, RawPlan};
use crate::config::Config;
use crate::guests;
use crate::paths;
use crate::profile::{self, PlatformProfile};
use crate::run::RunOptions;
use crate::trace::slots::{self, SlotRun};
use crate::trace::{self, TraceMeta};
use anyhow::{bail, ensure, Context, Result};
use indicatif::ProgressBar;
use partita_core::trace::Trace;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub const DEFAULT_RUNS: u32 = 3;
/// With 4, one counter tick of QEMU virt's 62.5 MHz is one instruction.
pub const DEFAULT_SHIFT: u32 = 4;
/// `<out>/bench/<name>/` of each command.
pub const PCS_NAME: &str = "pcs";
pub const SLOTS_NAME: &str = "slots";
/// The board `bench slots` runs on and predicts from; `bench pcs` takes its board as an option.
pub const BOARD: &str = "qemu-virt";
/// XtratuM's Table 1: slot duration (ms), measured overhead (%), theoretical PL (%).
pub const XTRATUM_TABLE_1: [(u64, f64, f64); 7] = [
    (1000, 0.000, 0.001),
    (500, 0.001, 0.002),
    (100, 0.009, 0.011),
    (50, 0.019, 0.022),
    (10, 0.099, 0.110),
    (5, 0.202, 0.220),
    (1, 1.074, 1.100),
];
/// `bench pcs`: a thousand 1 ms slots of each partition in the window.
pub const PCS_SLOT_MS: u64 = 1;
pub const PCS_COUNT_MS: u64 = 1000;
/// The shortest window `bench slots` counts over.
pub const MIN_COUNT_MS: u64 = 2000;
/// Enough for the boot's traps and every slot of the window without the
/// ring overwriting the window (16 bytes an event; three pCPUs take 6 MiB
/// of the quarter of hypervisor memory the trace may use).
const EVENTS_PER_CPU: u32 = 131_072;
/// The cyclic pCPU. pCPU 0 runs no partition; pCPU 2 is the reference
/// partition's.
const CYCLIC_CPU: u32 = 1;
/// First guesses (wall-clock, icount) at a window start every partition
/// has booted by, in counter milliseconds; a run that finds a partition
/// late moves the window later for every run after it. Two partitions
/// booting in 1 ms slots take longest.
const PCS_START_MS: [u64; 2] = [1_500, 3_000];
const SLOTS_START_MS: [u64; 2] = [2_000, 3_000];
const MAX_LATE_RETRIES: usize = 3;
/// Only a hung run takes this long: the longest, 1000 ms slots under
/// -icount, ends within a minute.
const RUN_LIMIT_S: u64 = 600;

/// What the profile keeps a switch in for this pass.
pub fn unit(pass: Pass) -> &'static str {
    match pass.shift {
        Some(_) => "instructions",
        None => "ns",
    }
}

/// Counter ticks in [`unit`]: under icount each instruction is 2^shift ns
/// of guest time, so ticks become instructions only while one vCPU runs;
/// with several busy ones guest time advances with all their instructions.
pub fn from_ticks(pass: Pass, ticks: f64, hz: u64) -> f64 {
    let ns = ticks * 1e9 / hz as f64;
    match pass.shift {
        Some(shift) => ns / profile::ns_per_instruction(shift) as f64,
        None => ns,
    }
}

/// Where the reference partition of `bench slots` counts in this pass.
pub fn reference(pass: Pass) -> Reference {
    match pass.mode {
        Mode::Wall => Reference::Beside,
        Mode::Icount => Reference::Alone,
    }
}

/// Which of the first guesses at a window start a pass takes.
fn guess(starts: [u64; 2], pass: Pass) -> u64 {
    starts[usize::from(pass.mode == Mode::Icount)]
}

/// Where `bench slots`' reference partition `r`, with a whole pCPU, counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reference {
    /// Beside `p` and `q`, in the same boot and window: wall-clock, where
    /// every vCPU is a host thread of its own, so the host's load falls on
    /// the reference and the measured partitions alike.
    Beside,
    /// Alone in a boot of its own, over the same window: under `-icount`.
    /// There a busy `r` would take guest time in whatever shares QEMU's
    /// round robin gives the two busy vCPUs (anything from 6 % to 50 % of
    /// it, depending on how the slot timers fall), and `p` and `q` would
    /// count the rest. With one busy vCPU per boot, guest time is that
    /// vCPU's instructions, and the reference is exact and the same in
    /// every run.
    Alone,
}

/// Counter ticks in `ms` milliseconds, as the guest computes them.
pub fn ms_ticks(ms: u64, hz: u64) -> u64 {
    (hz / 1000) * ms + (hz % 1000) * ms / 1000
}

/// `count: <iterations> in <ms> ms` -> (iterations, ms).
pub fn parse_count(log: &str) -> Option<(u64, u64)> {
    log.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("count: ")?;
        let (iterations, ms) = rest.split_once(" in ")?;
        Some((iterations.parse().ok()?, ms.strip_suffix(" ms")?.parse().ok()?))
    })
}

/// `count: started <us> us late`: the guest reached the window after it began.
pub fn parse_late(log: &str) -> Option<u64> {
    log.lines().find_map(|line| line.trim().strip_prefix("count: started ")?.strip_suffix(" us late")?.parse().ok())
}

/// `count: <n> gaps, <t> ticks beyond the shortest batch (<b> ticks), at
/// most <m>`: a counting partition's batches of `count_gap_ticks` or more,
/// each of which a slot of another partition interrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gaps {
    pub gaps: u64,
    /// Summed over the gaps: what each took beyond the shortest batch.
    pub beyond_ticks: u64,
    pub shortest_ticks: u64,
    /// The longest gap beyond the shortest batch.
    pub longest_ticks: u64,
}

impl Gaps {
    /// Both partitions' gaps as one set.
    pub fn merge(self, other: Gaps) -> Gaps {
        Gaps {
            gaps: self.gaps + other.gaps,
            beyond_ticks: self.beyond_ticks + other.beyond_ticks,
            shortest_ticks: self.shortest_ticks.min(other.shortest_ticks),
            longest_ticks: self.longest_ticks.max(other.longest_ticks),
        }
    }

    /// The switches into the partition, mean and max in ticks: a gap is the
    /// other partition's slot (`slot_ticks`) and the time from its planned
    /// end to this partition's next instruction. The partition's last
    /// instruction before it came at the end of its own slot, as the EL2
    /// timer that ends a slot fires at that tick.
    pub fn switches(&self, slot_ticks: u64) -> Option<(f64, u64)> {
        (self.gaps > 0).then(|| {
            let mean = self.beyond_ticks as f64 / self.gaps as f64 - slot_ticks as f64;
            (mean, self.longest_ticks.saturating_sub(slot_ticks))
        })
    }
}

pub fn parse_gaps(log: &str) -> Option<Gaps> {
    log.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("count: ")?;
        let (gaps, rest) = rest.split_once(" gaps, ")?;
        let (beyond, rest) = rest.split_once(" ticks beyond the shortest batch (")?;
        let (shortest, longest) = rest.split_once(" ticks), at most ")?;
        Some(Gaps {
            gaps: gaps.parse().ok()?,
            beyond_ticks: beyond.parse().ok()?,
            shortest_ticks: shortest.parse().ok()?,
            longest_ticks: longest.parse().ok()?,
        })
    })
}

/// A window start after `late_us` more, with a second to spare, in whole seconds.
pub fn later_start(start_ms: u64, late_us: u64) -> u64 {
    (start_ms + late_us.div_ceil(1000) + 1000).next_multiple_of(1000)
}

/// The share a partition with half a pCPU missed: 1 - shared / (alone / 2),
/// where `alone` counted over the same window with a whole pCPU.
pub fn loss(shared: u64, alone: u64) -> Option<f64> {
    (alone > 0).then(|| 1.0 - 2.0 * shared as f64 / alone as f64)
}

/// How long `bench slots` counts with slots of `duration_ms`: whole major
/// frames (two slots), so that the window holds exactly half of the pCPU for
/// each partition whatever its phase; at least [`MIN_COUNT_MS`] and two frames.
pub fn count_ms(duration_ms: u64) -> u64 {
    let frame = 2 * duration_ms;
    MIN_COUNT_MS.max(2 * frame).next_multiple_of(frame)
}

/// PCS / D, with PCS from the profile in the pass's unit.
pub fn predicted_loss(profile: &PlatformProfile, pass: Pass, duration_ms: u64) -> f64 {
    let pcs_ns = match pass.shift {
        Some(shift) => profile.pcs_instructions as f64 * profile::ns_per_instruction(shift) as f64,
        None => profile.pcs_ns as f64,
    };
    pcs_ns / (duration_ms as f64 * 1e6)
}

/// XtratuM's measured overhead and theoretical PL (%) for slots of `duration_ms`.
pub fn xtratum(duration_ms: u64) -> Option<(f64, f64)> {
    XTRATUM_TABLE_1.iter().find(|row| row.0 == duration_ms).map(|&(_, measured, model)| (measured, model))
}

/// Switch costs seen from the incoming partition, in counter ticks.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Switches {
    /// Slot instances counted.
    pub slots: usize,
    /// `entered - planned`: the PCS.
    pub mean_ticks: f64,
    pub max_ticks: u64,
    /// `seen - planned`: the part before Partita noticed the slot's start
    /// (timer delivery, and finishing whatever it was doing).
    pub seen_mean_ticks: f64,
}

/// The slot instances of `cpu` planned to start in `[from, to)` whose vCPU
/// entered; `None` if there are none.
pub fn switches(runs: &[SlotRun], cpu: usize, from: u64, to: u64) -> Option<Switches> {
    let kept: Vec<(u64, u64)> = runs
        .iter()
        .filter(|r| r.cpu == cpu && (from..to).contains(&r.planned))
        .filter_map(|r| Some((r.entered? - r.planned, r.seen - r.planned)))
        .collect();
    if kept.is_empty() {
        return None;
    }
    let n = kept.len() as f64;
    Some(Switches {
        slots: kept.len(),
        mean_ticks: kept.iter().map(|k| k.0 as f64).sum::<f64>() / n,
        max_ticks: kept.iter().map(|k| k.0).max().unwrap_or(0),
        seen_mean_ticks: kept.iter().map(|k| k.1 as f64).sum::<f64>() / n,
    })
}

/// A counting partition of the test guest on pCPU `cpu`.
fn partition(name: &str, cpu: u32, bootargs: &str, guest: &Path) -> RawPartition {
    qemu::partition(name, &[cpu], bootargs, guest)
}

/// pCPU 1 alternates `first` and `second` in back-to-back slots of `slot_ms`.
fn alternating(first: &str, second: &str, slot_ms: u64) -> RawPlan {
    let slot_us = slot_ms * 1000;
    let core = RawCore::new(CYCLIC_CPU, 2 * slot_us).slot(first, 0, 0, slot_us).slot(second, 0, slot_us, slot_us);
    RawPlan::new("alternate").core(core)
}

/// Traced, with rings deep enough for the whole window.
fn machine(cpus: u32) -> RawConfig {
    RawConfig::new().cpus(cpus).trace(EVENTS_PER_CPU)
}

/// What `bench pcs`'s partitions run: counting, timing the batches that
/// half a slot or more interrupted.
pub fn pcs_bootargs(start_ms: u64, hz: u64) -> String {
    let gap = ms_ticks(PCS_SLOT_MS, hz) / 2;
    format!("{} count_gap_ticks={gap}", counting_bootargs(PCS_COUNT_MS, start_ms))
}

/// What every counting partition runs. The tick ends the guest (it then
/// powers its partition off, and the machine once all are off).
pub fn counting_bootargs(count_ms: u64, start_ms: u64) -> String {
    format!("count_ms={count_ms} count_at_ms={start_ms} ticks=1 period_ms=1")
}

/// `bench pcs`: `a` and `b` alternate on pCPU 1 in 1 ms slots, traced or not.
pub fn pcs_config(bootargs: &str, guest: &Path, traced: bool) -> RawConfig {
    let machine = if traced { machine(2) } else { RawConfig::new().cpus(2) };
    machine
        .partition(partition("a", CYCLIC_CPU, bootargs, guest))
        .partition(partition("b", CYCLIC_CPU, bootargs, guest))
        .plan(alternating("a", "b", PCS_SLOT_MS))
}

/// `bench slots`: `p` and `q` alternate on pCPU 1 in slots of
/// `duration_ms`; with [`Reference::Beside`], `r` has pCPU 2 to itself.
pub fn slots_config(duration_ms: u64, reference: Reference, bootargs: &str, guest: &Path) -> RawConfig {
    let mut config = machine(3)
        .partition(partition("p", CYCLIC_CPU, bootargs, guest))
        .partition(partition("q", CYCLIC_CPU, bootargs, guest));
    if reference == Reference::Beside {
        config = config.partition(partition("r", CYCLIC_CPU + 1, bootargs, guest).exclusive());
    }
    config.plan(alternating("p", "q", duration_ms))
}

/// [`Reference::Alone`]'s boot: the same machine with only `r`. pCPU 1 runs
/// an empty plan, which wakes it once a second: with no timer armed at all,
/// QEMU's `-icount` warns on every boot, and a wake-up a second costs `r`
/// less than its count's resolution of one batch.
pub fn reference_config(bootargs: &str, guest: &Path) -> RawConfig {
    machine(3)
        .partition(partition("r", CYCLIC_CPU + 1, bootargs, guest).exclusive())
        .plan(RawPlan::new("idle").core(RawCore::new(CYCLIC_CPU, 1_000_000)))
}

/// One `bench pcs` boot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PcsRun {
    pub start_ms: u64,
    /// From the trace; `None` untraced.
    pub switches: Option<Switches>,
    /// What `a` and `b` saw of the switches into them, together.
    #[serde(default)]
    pub gaps: Option<Gaps>,
    /// What `a` and `b` counted: about equal when their slots are.
    pub counts: [u64; 2],
}

fn traced() -> bool {
    true
}

/// One pass of `bench pcs`: medians over the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PcsRow {
    pub pass: Pass,
    #[serde(default = "traced")]
    pub traced: bool,
    /// `entered - planned` from the trace, when traced.
    pub mean_ticks: Option<f64>,
    pub max_ticks: Option<f64>,
    pub seen_mean_ticks: Option<f64>,
    /// From the slot's planned start to the incoming partition's first
    /// instruction, as the partition timed it ([`Gaps::switches`]).
    #[serde(default)]
    pub first_mean_ticks: Option<f64>,
    #[serde(default)]
    pub first_max_ticks: Option<f64>,
    /// In [`unit`]: the trace's figure when traced, else the partition's.
    pub mean: f64,
    pub max: f64,
    pub runs: Vec<PcsRun>,
}

impl PcsRow {
    pub fn new(pass: Pass, traced: bool, runs: Vec<PcsRun>, counter_hz: u64) -> Self {
        let median_of = |pick: &dyn Fn(&PcsRun) -> Option<f64>| {
            let values: Option<Vec<f64>> = runs.iter().map(pick).collect();
            values.filter(|v| !v.is_empty()).map(median)
        };
        let mean_ticks = median_of(&|r| Some(r.switches?.mean_ticks));
        let max_ticks = median_of(&|r| Some(r.switches?.max_ticks as f64));
        let slot_ticks = ms_ticks(PCS_SLOT_MS, counter_hz);
        let first = |r: &PcsRun| r.gaps.and_then(|g| g.switches(slot_ticks));
        let first_mean_ticks = median_of(&|r| Some(first(r)?.0));
        let first_max_ticks = median_of(&|r| Some(first(r)?.1 as f64));
        let (mean, max) = if traced { (mean_ticks, max_ticks) } else { (first_mean_ticks, first_max_ticks) };
        PcsRow {
            pass,
            traced,
            mean_ticks,
            max_ticks,
            seen_mean_ticks: median_of(&|r| Some(r.switches?.seen_mean_ticks)),
            first_mean_ticks,
            first_max_ticks,
            mean: from_ticks(pass, mean.unwrap_or(f64::NAN), counter_hz),
            max: from_ticks(pass, max.unwrap_or(f64::NAN), counter_hz),
            runs,
        }
    }

    /// `wall, traced`, `icount 4, untraced`.
    pub fn label(&self) -> String {
        format!("{}, {}", self.pass.label(), if self.traced { "traced" } else { "untraced" })
    }
}

/// `<out>/bench/pcs/report.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PcsReport {
    /// Reports from before there was a second board were all of QEMU `virt`.
    #[serde(default)]
    pub board: Board,
    pub runs: u32,
    pub counter_hz: u64,
    pub rows: Vec<PcsRow>,
    /// The profile written with `--save`.
    pub saved: Option<String>,
}

const PCS_COLUMNS: [Column; 9] = [
    Column::left("mode", "mode", 20),
    Column::right("slots", "slots a run", 6),
    Column::right("mean ticks", "entered - planned, mean (ticks)", 10),
    Column::right("max ticks", "max (ticks)", 9),
    Column::right("seen ticks", "seen - planned, mean (ticks)", 10),
    Column::right("first ticks", "to first instruction, mean (ticks)", 11),
    Column::right("max", "max (ticks)", 7),
    Column::right("mean", "PCS mean", 12),
    Column::right("max", "PCS max", 12),
];

impl PcsReport {
    /// Each pass's medians, the PCS in `unit`s of the pass.
    fn rows(&self, unit: fn(Pass) -> &'static str) -> Table {
        let mut table = Table::new(&PCS_COLUMNS);
        let cell = |value: Option<f64>, decimals: usize| value.map_or("-".to_string(), |v| format!("{v:.decimals$}"));
        for row in &self.rows {
            let run = row.runs.first();
            let slots = run.and_then(|r| r.switches.map(|s| s.slots as u64).or(r.gaps.map(|g| g.gaps)));
            table.row(vec![
                row.label(),
                slots.unwrap_or(0).to_string(),
                cell(row.mean_ticks, 1),
                cell(row.max_ticks, 0),
                cell(row.seen_mean_ticks, 1),
                cell(row.first_mean_ticks, 1),
                cell(row.first_max_ticks, 0),
                format!("{:.0} {}", row.mean, unit(row.pass)),
                format!("{:.0} {}", row.max, unit(row.pass)),
            ]);
        }
        table
    }

    /// The traced row of `mode`: what the profile keeps.
    fn row(&self, mode: Mode) -> Option<&PcsRow> {
        self.rows.iter().find(|r| r.pass.mode == mode && r.traced)
    }

    /// What `--save` writes, when both passes ran.
    pub fn measured(&self, date: &str) -> Option<Measured> {
        let (wall, icount) = (self.row(Mode::Wall)?, self.row(Mode::Icount)?);
        let shift = icount.pass.shift?;
        let board = match self.board {
            Board::QemuVirt => String::new(),
            other => format!(" --board {}", other.name()),
        };
        Some(Measured {
            board: self.board,
            pcs_ns: wall.mean.round() as u64,
            pcs_instructions: icount.mean.round() as u64,
            pcs_max_ns: wall.max.round() as u64,
            pcs_max_instructions: icount.max.round() as u64,
            pcs_ns_per_instruction: profile::ns_per_instruction(shift),
            measured: format!(
                "partita bench pcs{board} --runs {runs} --save, {date}: medians over {runs} runs of the mean and max \
                 entry delay over {PCS_COUNT_MS} slots of {PCS_SLOT_MS} ms, wall-clock and -icount shift={shift}",
                runs = self.runs
            ),
        })
    }

    pub fn table(&self) -> String {
        let mut out = format!(
            "pcs on {} ({}): slot start to vCPU entry on a cyclic pCPU, {PCS_SLOT_MS} ms slots; medians of {} runs\n",
            self.board.name(),
            self.board.gic(),
            self.runs
        );
        out += &self.rows(short_unit).terminal();
        if let Some(saved) = &self.saved {
            let _ = writeln!(out, "saved to {saved}; rebuild partita for `check` to use it");
        }
        out
    }

    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# pcs\n\nOn {} ({}, board `{}`).\n\nPartition context switch (PCS) of a cyclic pCPU: partitions `a` and `b` alternate on pCPU 1 \
             in back-to-back {PCS_SLOT_MS} ms slots (major frame {} ms), both counting (`count_ms={PCS_COUNT_MS}`) \
             over one window of counter time, with tracing on and then off. For every slot instance planned inside \
             the window, the trace gives `planned` (the slot's start by the plan), `seen` (when Partita noticed it) \
             and `entered` (when the slot's vCPU was put on the pCPU); traced, PCS is the mean of `entered - \
             planned`, the time the incoming partition does not get. Each partition also times its own batches of \
             iterations (`count_gap_ticks`): a batch that a slot of the other interrupted took that slot plus the \
             time from its planned end to the partition's next instruction, the column `to first instruction`, \
             which needs no trace; untraced, PCS is that. Each figure is the median over {} runs of that run's \
             mean or max; the counter runs at {} MHz.\n\n",
            self.board.machine(),
            self.board.gic(),
            self.board.name(),
            2 * PCS_SLOT_MS,
            self.runs,
            self.counter_hz as f64 / 1e6
        );
        out += &self.rows(unit).markdown();
        out += "\nPer run (entered - planned and to the first instruction, mean / max ticks over the slots; counts of \
                `a` and `b`, window start):\n\n";
        let slot_ticks = ms_ticks(PCS_SLOT_MS, self.counter_hz);
        for row in &self.rows {
            for (i, run) in row.runs.iter().enumerate() {
                let traced = run.switches.map_or_else(
                    || "untraced".to_string(),
                    |s| format!("{:.1} / {} ticks over {} slots", s.mean_ticks, s.max_ticks, s.slots),
                );
                let first = run.gaps.and_then(|g| Some((g.gaps, g.switches(slot_ticks)?))).map_or_else(
                    || "no gaps".to_string(),
                    |(n, (mean, max))| format!("{mean:.1} / {max} ticks over {n} gaps"),
                );
                let _ = writeln!(
                    out,
                    "- {} run {}: {traced}; {first}; counts {} and {}; window from {} ms",
                    row.label(),
                    i + 1,
                    run.counts[0],
                    run.counts[1],
                    run.start_ms
                );
            }
        }
        out += "\nWall-clock, ticks are converted at 16 ns (62.5 MHz). Under `-icount`, one vCPU is busy here (pCPU 0 \
                idles), so a tick of guest time is 2^shift ns of that vCPU's instructions: with shift 4, one tick is \
                one instruction, and the PCS is counted in instructions of Partita's switch path plus QEMU's timer \
                delivery, independent of the host. `entered` is recorded before the incoming vCPU's registers are \
                loaded, so the restore and the `eret` are not in it; `to first instruction` includes them. The \
                profile (`--save`) keeps the traced figures.\n";
        if let Some(saved) = &self.saved {
            let _ = writeln!(out, "\nSaved to `{saved}`.");
        }
        out
    }
}

fn short_unit(pass: Pass) -> &'static str {
    match pass.shift {
        Some(_) => "instr",
        None => "ns",
    }
}

/// A profile as `bench pcs --save` writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measured {
    pub board: Board,
    pub pcs_ns: u64,
    pub pcs_instructions: u64,
    pub pcs_max_ns: u64,
    pub pcs_max_instructions: u64,
    pub pcs_ns_per_instruction: u64,
    pub measured: String,
}

/// The text of `platforms/<board>.toml`: the keys `check` reads, and the
/// maxima it does not.
pub fn profile_text(m: &Measured) -> String {
    let measured = toml::Value::String(m.measured.clone()).to_string();
    format!(
        "# Platform profile of {}: measured costs that `partita check` uses\n\
         # in its overhead model. `partita bench pcs{} --save` rewrites this file.\n\
         \n\
         # One partition context switch (PCS), wall-clock nanoseconds: the mean delay\n\
         # from a slot's planned start to its vCPU's entry. Under an emulator it\n\
         # measures the host, so `check` does not read it.\n\
         pcs_ns = {}\n\
         # The same switch in guest instructions, under QEMU -icount, and the guest\n\
         # nanoseconds of one instruction there (2^shift): their product is the PCS\n\
         # that `check` charges each slot.\n\
         pcs_instructions = {}\n\
         pcs_ns_per_instruction = {}\n\
         # How and when the numbers were produced.\n\
         measured = {measured}\n\
         \n\
         # The largest delay of a run (median over the runs); `check` names the\n\
         # largest count beside the mean.\n\
         pcs_max_ns = {}\n\
         pcs_max_instructions = {}\n",
        m.board.machine(),
        match m.board {
            Board::QemuVirt => String::new(),
            other => format!(" --board {}", other.name()),
        },
        m.pcs_ns,
        m.pcs_instructions,
        m.pcs_ns_per_instruction,
        m.pcs_max_ns,
        m.pcs_max_instructions
    )
}

/// One `bench slots` boot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlotsRun {
    pub start_ms: u64,
    /// What `p`, `q` (sharing pCPU 1) and `r` (alone on pCPU 2) counted.
    pub counts: [u64; 3],
    pub loss_p: f64,
    pub loss_q: f64,
    /// The mean of the two.
    pub loss: f64,
    /// The switches of pCPU 1 inside the window, from this run's trace.
    pub switches: Option<Switches>,
}

impl SlotsRun {
    pub fn new(start_ms: u64, counts: [u64; 3], switches: Option<Switches>) -> Result<Self> {
        let [p, q, r] = counts;
        let (loss_p, loss_q) = (loss(p, r), loss(q, r));
        let (Some(loss_p), Some(loss_q)) = (loss_p, loss_q) else { bail!("the reference partition counted nothing") };
        Ok(SlotsRun { start_ms, counts, loss_p, loss_q, loss: (loss_p + loss_q) / 2.0, switches })
    }
}

/// One slot duration in one pass of `bench slots`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlotsRow {
    pub pass: Pass,
    pub reference: Reference,
    pub duration_ms: u64,
    pub count_ms: u64,
    /// Median over the runs of the mean loss of `p` and `q`; then the runs' extremes.
    pub loss: f64,
    pub loss_min: f64,
    pub loss_max: f64,
    /// PCS / D with the profile's PCS.
    pub predicted: f64,
    /// PCS / D with this run's own PCS (median over the runs), in counter time.
    pub predicted_here: Option<f64>,
    pub runs: Vec<SlotsRun>,
}

impl SlotsRow {
    pub fn new(pass: Pass, duration_ms: u64, runs: Vec<SlotsRun>, profile: &PlatformProfile, hz: u64) -> Self {
        let losses: Vec<f64> = runs.iter().map(|r| r.loss).collect();
        let here: Vec<f64> = runs.iter().filter_map(|r| r.switches.map(|s| s.mean_ticks)).collect();
        let slot_ticks = ms_ticks(duration_ms, hz) as f64;
        SlotsRow {
            pass,
            reference: reference(pass),
            duration_ms,
            count_ms: count_ms(duration_ms),
            loss: median(losses.clone()),
            loss_min: extremes(&losses).0,
            loss_max: extremes(&losses).1,
            predicted: predicted_loss(profile, pass, duration_ms),
            predicted_here: (!here.is_empty()).then(|| median(here) / slot_ticks),
            runs,
        }
    }
}

/// `<out>/bench/slots/report.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlotsReport {
    pub runs: u32,
    pub counter_hz: u64,
    pub profile_pcs_ns: u64,
    pub profile_pcs_instructions: u64,
    pub profile_measured: String,
    pub rows: Vec<SlotsRow>,
}

fn percent(share: f64) -> String {
    format!("{:.3}", share * 100.0)
}

/// At the terminal: every row of every pass.
const SLOTS_COLUMNS: [Column; 7] = [
    Column::left("mode", "mode", 10),
    Column::right("D ms", "D (ms)", 6),
    Column::right("measured", "measured loss %", 10),
    Column::right("runs' range", "runs' range %", 17),
    Column::right("PCS/D", "predicted % (profile PCS / D)", 10),
    Column::right("own PCS/D", "predicted % (own PCS / D)", 10),
    Column::right("XtratuM", "XtratuM measured %", 9),
];

/// In the report: one table per pass, beside XtratuM's Table 1.
const PASS_COLUMNS: [Column; 8] = [
    Column::right("D ms", "D (ms)", 6),
    Column::right("window", "window (ms)", 8),
    Column::right("measured", "measured loss %", 10),
    Column::right("runs' range", "runs' range %", 17),
    Column::right("PCS/D", "predicted % (profile PCS / D)", 10),
    Column::right("own PCS/D", "predicted % (own PCS / D)", 10),
    Column::right("XtratuM", "XtratuM measured %", 9),
    Column::right("XtratuM PL", "XtratuM PL %", 9),
];

impl SlotsReport {
    pub fn new(runs: u32, counter_hz: u64, profile: &PlatformProfile, rows: Vec<SlotsRow>) -> Self {
        SlotsReport {
            runs,
            counter_hz,
            profile_pcs_ns: profile.pcs_ns,
            profile_pcs_instructions: profile.pcs_instructions,
            profile_measured: profile.measured.clone(),
            rows,
        }
    }

    fn passes(&self) -> Vec<Pass> {
        let mut passes: Vec<Pass> = Vec::new();
        for row in &self.rows {
            if !passes.contains(&row.pass) {
                passes.push(row.pass);
            }
        }
        passes
    }

    pub fn table(&self) -> String {
        let out =
            format!("slots: share of its slots a partition loses to switches (%), medians of {} runs\n", self.runs);
        let mut table = Table::new(&SLOTS_COLUMNS);
        for row in &self.rows {
            let xtratum = xtratum(row.duration_ms).map_or_else(String::new, |(m, _)| format!("{m:.3}"));
            table.row(vec![
                row.pass.label(),
                row.duration_ms.to_string(),
                percent(row.loss),
                format!("{}..{}", percent(row.loss_min), percent(row.loss_max)),
                percent(row.predicted),
                row.predicted_here.map_or_else(|| "n/a".to_string(), percent),
                xtratum,
            ]);
        }
        out + &table.terminal()
    }

    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# slots\n\nXtratuM's Table 1 on Partita: for each slot duration D, partitions `p` and `q` alternate on \
             pCPU 1 in back-to-back slots of D (major frame 2D), and `r` has pCPU 2 to itself (`exclusive`). All \
             three count loop iterations (`count_ms`) over one and the same window of counter time, a whole number \
             of frames long, so `p` and `q` each hold exactly half of pCPU 1 in it; wall-clock `r` counts beside \
             them in the same boot, under icount alone in a boot of its own (see the notes). Measured loss = \
             1 - count / (count of `r` / 2), the mean of `p` and `q`; the median over {} runs, with the runs' range. \
             Predicted = PCS / D, with PCS from the platform profile (`pcs_ns` = {} wall-clock, \
             `pcs_instructions` = {} under icount, as {} ns an instruction; profile: \"{}\"), and with this \
             run's own PCS, the mean `entered - planned` of pCPU 1's slots inside the window in its trace. \
             XtratuM's columns are its Table 1 (x86 Atom, PCS 11 µs); its anchor is {:.3} % lost at 1 ms.\n",
            self.runs,
            self.profile_pcs_ns,
            self.profile_pcs_instructions,
            self.passes()
                .iter()
                .find_map(|p| p.shift)
                .map_or_else(|| "2^shift".to_string(), |s| profile::ns_per_instruction(s).to_string()),
            self.profile_measured,
            XTRATUM_TABLE_1[6].1
        );
        for pass in self.passes() {
            let _ = write!(out, "\n## {}\n\n", pass.label());
            let mut table = Table::new(&PASS_COLUMNS);
            for row in self.rows.iter().filter(|r| r.pass == pass) {
                let (xm, xp) = xtratum(row.duration_ms)
                    .map_or((String::new(), String::new()), |(m, p)| (format!("{m:.3}"), format!("{p:.3}")));
                table.row(vec![
                    row.duration_ms.to_string(),
                    row.count_ms.to_string(),
                    percent(row.loss),
                    format!("{} .. {}", percent(row.loss_min), percent(row.loss_max)),
                    percent(row.predicted),
                    row.predicted_here.map_or_else(|| "n/a".to_string(), percent),
                    xm,
                    xp,
                ]);
            }
            out += &table.markdown();
        }
        out += "\nPer run (counts of `p`, `q`, `r`; loss of `p` and `q` %; own PCS, ticks over slots):\n\n";
        for row in &self.rows {
            for (i, run) in row.runs.iter().enumerate() {
                let own =
                    run.switches.map_or_else(|| "n/a".to_string(), |s| format!("{:.1} over {}", s.mean_ticks, s.slots));
                let _ = writeln!(
                    out,
                    "- {} D={} run {}: {} {} {}; {} {}; {own}; window from {} ms",
                    row.pass.label(),
                    row.duration_ms,
                    i + 1,
                    run.counts[0],
                    run.counts[1],
                    run.counts[2],
                    percent(run.loss_p),
                    percent(run.loss_q),
                    run.start_ms
                );
            }
        }
        out += NOTES;
        out
    }
}

const NOTES: &str = "
Notes:

- Under `-icount` QEMU runs every vCPU in one thread, round robin, and guest time advances with the
  instructions of whichever vCPU runs; how two busy vCPUs share it is QEMU's affair (in trials, pCPU 2
  got anywhere from 6 % to 50 % depending on how the slot timers fell). So there `r` counts alone, in a
  boot of its own over the same window: with one busy vCPU per boot, guest time is that vCPU's
  instructions, and every count is exact and repeats from run to run.
- PCS in the trace runs from the slot's planned start to the moment Partita puts the incoming vCPU on
  the pCPU, before it loads that vCPU's registers and returns to it; the measured loss also pays for
  that last stretch, so it comes out above PCS / D.
- Wall-clock, `p`/`q` and `r` are different host threads, whose speeds differ by several percent from run
  to run and with the host's other load; at long slots that, not the switch, makes the measured loss.
";

/// Every QEMU boot of a bench goes through here.
struct Runner {
    hypervisor: PathBuf,
    guest: PathBuf,
    progress: ProgressBar,
    /// Whether a boot went through `run::run` yet (see [`qemu::to_power_off`]).
    armed: bool,
}

/// What one boot left: each partition's log and the trace.
struct Boot {
    dir: PathBuf,
    logs: Vec<(String, String)>,
    trace: Option<(TraceMeta, Trace)>,
}

impl Boot {
    fn log(&self, name: &str) -> &str {
        self.logs.iter().find(|(n, _)| n == name).map_or("", |(_, log)| log)
    }

    fn count(&self, name: &str) -> Result<u64> {
        let (iterations, _) = parse_count(self.log(name)).with_context(|| {
            format!("partition {name} printed no `count:` line (see {}/{name}.log)", self.dir.display())
        })?;
        Ok(iterations)
    }

    /// The latest any partition reached the window.
    fn late_us(&self) -> Option<u64> {
        self.logs.iter().filter_map(|(_, log)| parse_late(log)).max()
    }

    fn trace(&self) -> Result<&(TraceMeta, Trace)> {
        self.trace.as_ref().with_context(|| format!("the run left no trace in {}", self.dir.display()))
    }
}

impl Runner {
    fn new(total: usize, board: Board) -> Result<Self> {
        let hypervisor = qemu::prepare_board(board)?;
        Ok(Runner { hypervisor, guest: guests::image("test-guest.elf"), progress: progress_bar(total), armed: false })
    }

    /// Boots until the machine powers off. The first boot is not quiet:
    /// without going through `run::run`, QEMU would outlive an interrupted
    /// bench, paused at its power-off.
    fn boot(&mut self, config: &Config, output: &BuildOutput, icount: Option<u32>) -> Result<Boot> {
        let opts = RunOptions { seconds: Some(RUN_LIMIT_S), icount, ..RunOptions::default() };
        let system = &config.system;
        let report = if self.armed {
            qemu::to_power_off(output, system, &opts, true)?
        } else {
            self.armed = true;
            self.progress.suspend(|| qemu::to_power_off(output, system, &opts, false))?
        };
        let logs = qemu::logs(system, &report)?;
        let trace = report.trace.as_deref().map(trace::read_file).transpose()?;
        Ok(Boot { dir: output.out_dir.clone(), logs, trace })
    }

    /// Boots the configuration `config_for(start_ms)` makes, moving the
    /// window later while a partition reaches it late; `start_ms` keeps the
    /// start that worked, for the next run.
    fn counted(
        &mut self,
        name: &str,
        variant: &str,
        start_ms: &mut u64,
        icount: Option<u32>,
        config_for: impl Fn(u64) -> RawConfig,
    ) -> Result<Boot> {
        for _ in 0..=MAX_LATE_RETRIES {
            let (config, output) = qemu::generated(name, variant, &config_for(*start_ms), &self.hypervisor)?;
            let boot = self.boot(&config, &output, icount)?;
            match boot.late_us() {
                None => return Ok(boot),
                Some(late) => *start_ms = later_start(*start_ms, late),
            }
        }
        bail!("partitions still booted after the counting window began at {start_ms} ms")
    }

    fn finish(&self) {
        // A failed run must not leave a half-drawn bar above its error.
        self.progress.finish_and_clear();
    }
}

/// `report.md` and `report.json` into `<out>/bench/<name>/`.
fn write_reports(name: &str, markdown: String, report: &impl Serialize) -> Result<()> {
    let files = [("report.md".to_string(), markdown), ("report.json".to_string(), report::json(report)?)];
    report::write(&paths::bench_out(name), &files).map(drop)
}

/// `partita bench pcs`.
#[derive(Clone, Debug)]
pub struct PcsOptions {
    pub runs: u32,
    pub save: bool,
    pub shift: u32,
    /// Where it runs, and whose profile `save` writes.
    pub board: Board,
}

impl Default for PcsOptions {
    fn default() -> Self {
        PcsOptions { runs: DEFAULT_RUNS, save: false, shift: DEFAULT_SHIFT, board: Board::QemuVirt }
    }
}

/// `platforms/<board>.toml`, from the source tree's root.
pub fn profile_file(board: Board) -> String {
    format!("platforms/{}.toml", board.name())
}

/// Where `bench pcs --save` writes.
pub fn profile_path(board: Board) -> PathBuf {
    paths::source().join(profile_file(board))
}

pub fn pcs(opts: &PcsOptions) -> Result<PcsReport> {
    ensure!(opts.runs >= 1, "--runs must be at least 1");
    let icount = Pass::icount(opts.shift);
    let passes = [(Pass::WALL, true), (icount, true), (Pass::WALL, false), (icount, false)];
    let mut runner = Runner::new(passes.len() * opts.runs as usize, opts.board)?;
    let measured = measure_pcs(&mut runner, opts, &passes);
    runner.finish();
    let (counter_hz, rows) = measured?;
    let mut report = PcsReport { board: opts.board, runs: opts.runs, counter_hz, rows, saved: None };
    if opts.save {
        let measured = report.measured(&today()).context("--save needs both passes")?;
        let path = profile_path(opts.board);
        let previous = std::fs::read_to_string(&path).unwrap_or_default();
        let text = profile::keep_accel_costs(&profile_text(&measured), &previous);
        profile::parse(&path.display().to_string(), &text)?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        report.saved = Some(profile_file(opts.board));
    }
    write_reports(PCS_NAME, report.markdown(), &report)?;
    Ok(report)
}

fn measure_pcs(runner: &mut Runner, opts: &PcsOptions, passes: &[(Pass, bool)]) -> Result<(u64, Vec<PcsRow>)> {
    // Both boards' counters run at the nominal rate; an untraced boot has no
    // trace to say otherwise.
    let mut counter_hz = NOMINAL_HZ;
    let mut rows = Vec::new();
    for &(pass, traced) in passes {
        let mut start_ms = guess(PCS_START_MS, pass);
        let mut runs = Vec::new();
        let label = format!("{}{}", pass.label(), if traced { "" } else { ", untraced" });
        for run in 1..=opts.runs {
            runner.progress.set_message(format!("{label} run {run}/{}", opts.runs));
            let guest = runner.guest.clone();
            let mut variant = match opts.board {
                Board::QemuVirt => pass.mode.name().to_string(),
                other => format!("{}-{}", other.name(), pass.mode.name()),
            };
            if !traced {
                variant += "-untraced";
            }
            let hz = counter_hz;
            let boot = runner.counted(PCS_NAME, &variant, &mut start_ms, pass.shift, |start| {
                pcs_config(&pcs_bootargs(start, hz), &guest, traced).board(opts.board.name())
            })?;
            let switches = if traced {
                let (meta, trace) = boot.trace()?;
                counter_hz = trace.counter_hz;
                let from = ms_ticks(start_ms, counter_hz);
                let to = from + ms_ticks(PCS_COUNT_MS, counter_hz);
                let found = switches(&slots::slot_runs(meta, trace), CYCLIC_CPU as usize, from, to)
                    .with_context(|| format!("no slot entered in the window; see {}", boot.dir.display()))?;
                Some(found)
            } else {
                None
            };
            let gaps = match (parse_gaps(boot.log("a")), parse_gaps(boot.log("b"))) {
                (Some(a), Some(b)) => Some(a.merge(b)),
                (a, b) => a.or(b),
            };
            runs.push(PcsRun { start_ms, switches, gaps, counts: [boot.count("a")?, boot.count("b")?] });
            runner.progress.inc(1);
        }
        rows.push(PcsRow::new(pass, traced, runs, counter_hz));
    }
    Ok((counter_hz, rows))
}

/// `partita bench slots`.
#[derive(Clone, Debug)]
pub struct SlotsOptions {
    pub runs: u32,
    pub shift: u32,
    pub durations_ms: Vec<u64>,
}

impl Default for SlotsOptions {
    fn default() -> Self {
        SlotsOptions {
            runs: DEFAULT_RUNS,
            shift: DEFAULT_SHIFT,
            durations_ms: XTRATUM_TABLE_1.iter().map(|row| row.0).collect(),
        }
    }
}

pub fn slots(opts: &SlotsOptions) -> Result<SlotsReport> {
    ensure!(opts.runs >= 1, "--runs must be at least 1");
    ensure!(opts.durations_ms.iter().all(|&d| d > 0), "slot durations must be longer than 0");
    let profile = profile::for_board(BOARD)?;
    let passes = [Pass::WALL, Pass::icount(opts.shift)];
    let mut runner = Runner::new(passes.len() * opts.durations_ms.len() * opts.runs as usize, Board::QemuVirt)?;
    let measured = measure_slots(&mut runner, opts, &passes, &profile);
    runner.finish();
    let (counter_hz, rows) = measured?;
    let report = SlotsReport::new(opts.runs, counter_hz, &profile, rows);
    write_reports(SLOTS_NAME, report.markdown(), &report)?;
    Ok(report)
}

fn measure_slots(
    runner: &mut Runner,
    opts: &SlotsOptions,
    passes: &[Pass],
    profile: &PlatformProfile,
) -> Result<(u64, Vec<SlotsRow>)> {
    let mut counter_hz = NOMINAL_HZ;
    let mut rows = Vec::new();
    for &pass in passes {
        let mut start_ms = guess(SLOTS_START_MS, pass);
        for &duration in &opts.durations_ms {
            let window = count_ms(duration);
            let mut runs = Vec::new();
            for run in 1..=opts.runs {
                runner.progress.set_message(format!("{} D={duration} ms run {run}/{}", pass.label(), opts.runs));
                let variant = format!("{}-{duration}ms", pass.mode.name());
                let guest = runner.guest.clone();
                let r_counts = reference(pass);
                let boot = runner.counted(SLOTS_NAME, &variant, &mut start_ms, pass.shift, |start| {
                    slots_config(duration, r_counts, &counting_bootargs(window, start), &guest)
                })?;
                let r = match r_counts {
                    Reference::Beside => boot.count("r")?,
                    Reference::Alone => {
                        // Its own window start: it must not move the measured boots' one.
                        let mut start = start_ms;
                        let variant = format!("{}-reference", pass.mode.name());
                        let alone = runner.counted(SLOTS_NAME, &variant, &mut start, pass.shift, |start| {
                            reference_config(&counting_bootargs(window, start), &guest)
                        })?;
                        alone.count("r")?
                    }
                };
                let own = match &boot.trace {
                    Some((meta, trace)) => {
                        counter_hz = trace.counter_hz;
                        let from = ms_ticks(start_ms, counter_hz);
                        let to = from + ms_ticks(window, counter_hz);
                        switches(&slots::slot_runs(meta, trace), CYCLIC_CPU as usize, from, to)
                    }
                    None => None,
                };
                let counts = [boot.count("p")?, boot.count("q")?, r];
                runs.push(SlotsRun::new(start_ms, counts, own)?);
                runner.progress.inc(1);
            }
            rows.push(SlotsRow::new(pass, duration, runs, profile, counter_hz));
        }
    }
    Ok((counter_hz, rows))
}
