//! `partita bench ipc`: what communication costs a partition. The test
//! guest's `ipc-bench` mode (guests/test-guest/src/ipcbench.c) measures a
//! null hypercall, a queuing-port send and receive with the round trip
//! through an echo partition of lower priority on the same pCPU, and a
//! doorbell from that partition; this module boots it wall-clock and under
//! `-icount`, and reports medians. Reported, never asserted. On a GICv3
//! board a third boot, the partition alone with direct interrupt delivery,
//! measures the SGI it sends itself, which still traps (docs/interrupts.md).
//!
//! With `--board zcu102` or `both` it runs on the GIC-400 board as well,
//! each run booting on one board and then the other.
//!
//! Ker-ONE's anchor: a hypercall round trip of 0.20 µs on average on a
//! 667 MHz Cortex-A9, about 133 cycles.

use super::qemu;
use super::report::{self, today, Column, Table};
use super::stats::median;
use super::{Board, Mode, Pass, NOMINAL_HZ};
use crate::build::BuildOutput;
use crate::config::raw::{RawChannel, RawConfig, RawPartition};
use crate::config::Config;
use crate::guests;
use crate::paths;
use crate::run::RunOptions;
use anyhow::{bail, Context, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `<out>/bench/<name>/` gets the report and the boots' logs.
pub const DEFAULT_NAME: &str = "ipc";
pub const DEFAULT_RUNS: u32 = 3;
pub const DEFAULT_COUNT: u32 = 1000;
pub const DEFAULT_SHIFT: u32 = 4;
/// The doorbell INTID of the benchmark's shared-memory channel.
const BELL_INTID: u32 = 48;
const RUN_LIMIT_S: u64 = 300;
/// Ker-ONE's mean hypercall round trip (µs) and its clock (MHz).
pub const KER_ONE_HYPERCALL_US: f64 = 0.20;
pub const KER_ONE_MHZ: f64 = 667.0;
/// What the guest measures with its echo partition beside it, in the order
/// it prints them.
pub const MEASURES: [&str; 6] = ["empty", "hypercall", "send", "receive", "round-trip", "doorbell"];
/// What it measures alone on an exclusive pCPU (no channels).
pub const ALONE: [&str; 2] = ["empty", "hypercall"];
/// What it measures alone with direct delivery.
pub const DIRECT: [&str; 3] = ["empty", "hypercall", "sgi"];

pub struct Options {
    pub runs: u32,
    pub count: u32,
    pub shift: u32,
    pub name: String,
    /// In the report's order.
    pub boards: Vec<Board>,
}

/// One `ipc-bench: <what> n <n> min <a> mean <b> max <c> counts` line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    pub n: u64,
    pub min: u64,
    pub mean: u64,
    pub max: u64,
}

/// Reads every measurement line of the bench partition's log.
pub fn parse(log: &str) -> Vec<(String, Line)> {
    log.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("ipc-bench: ")?.strip_suffix(" counts")?;
            let words: Vec<&str> = rest.split_whitespace().collect();
            let [what, "n", n, "min", min, "mean", mean, "max", max] = words[..] else { return None };
            let line =
                Line { n: n.parse().ok()?, min: min.parse().ok()?, mean: mean.parse().ok()?, max: max.parse().ok()? };
            Some((what.to_string(), line))
        })
        .collect()
}

fn partition(name: &str, bootargs: &str, guest: &Path) -> RawPartition {
    qemu::partition(name, &[1], bootargs, guest)
}

/// `bench` alone on pCPU 1, which is then exclusive: the hypercall alone.
pub fn alone_config(count: u32, guest: &Path) -> RawConfig {
    let bench = partition("bench", &format!("ipc-bench=bench ipc_n={count} ticks=1 period_ms=1"), guest);
    RawConfig::new().cpus(2).partition(bench)
}

/// `bench` alone on pCPU 1 with direct interrupt delivery, sending itself
/// SGIs as well.
pub fn direct_config(count: u32, guest: &Path) -> RawConfig {
    let args = format!("ipc-bench=bench ipc_n={count} ipc_sgi=1 ticks=1 period_ms=1");
    RawConfig::new().cpus(2).partition(partition("bench", &args, guest).exclusive().direct())
}

/// `bench` above `echo` on pCPU 1, requests and answers as queuing ports,
/// a shared window with a doorbell at `bench`.
pub fn config(count: u32, guest: &Path) -> RawConfig {
    let bench_args = format!("ipc-bench=bench ipc_n={count} doorbell={BELL_INTID} ticks=1 period_ms=1");
    RawConfig::new()
        .cpus(2)
        .partition(partition("bench", &bench_args, guest).priority(200))
        .partition(partition("echo", "ipc-bench=echo ticks=1 period_ms=1", guest).priority(100))
        .channel(RawChannel::queuing("request", "bench", "echo", 16, 4))
        .channel(RawChannel::queuing("answer", "echo", "bench", 16, 4))
        .channel(RawChannel::shared_memory("bell", &["bench", "echo"], 0x5000_0000, 4096).doorbell(BELL_INTID))
}

/// Each measure by name.
pub type Measures = Vec<(String, Line)>;

/// Medians over runs of each measure's mean, min and max, per board and pass.
pub struct Report {
    pub counter_hz: u64,
    pub count: u32,
    pub runs: u32,
    pub boards: Vec<Board>,
    pub passes: Vec<(Board, Mode, Option<u32>, Measures)>,
}

/// `shared` and `alone` on QEMU `virt`, as before there was another board;
/// `<board>-shared` and `<board>-alone` on the others.
fn variant(board: Board, setup: &str) -> String {
    match board {
        Board::QemuVirt => setup.to_string(),
        _ => format!("{}-{setup}", board.name()),
    }
}

/// One board's configurations, assembled; `direct` on a GICv3 board only.
struct Assembled {
    board: Board,
    shared: (Config, BuildOutput),
    alone: (Config, BuildOutput),
    direct: Option<(Config, BuildOutput)>,
}

/// The boots of one board in one pass.
#[derive(Default)]
struct Boots {
    shared: Vec<Measures>,
    alone: Vec<Measures>,
    direct: Vec<Measures>,
}

pub fn run(opts: &Options) -> Result<Report> {
    anyhow::ensure!(!opts.boards.is_empty(), "no board to run on");
    let guest = guests::image("test-guest.elf");
    let mut boards = Vec::new();
    for (board, hypervisor) in qemu::prepare_boards(&opts.boards)? {
        let generated = |setup: &str, config: RawConfig| {
            qemu::generated(&opts.name, &variant(board, setup), &config.board(board.name()), &hypervisor)
        };
        let shared = generated("shared", config(opts.count, &guest))?;
        let alone = generated("alone", alone_config(opts.count, &guest))?;
        let direct = match board {
            Board::QemuVirt => Some(generated("direct", direct_config(opts.count, &guest))?),
            _ => None,
        };
        boards.push(Assembled { board, shared, alone, direct });
    }
    let mut passes = Vec::new();
    for pass in [Pass::WALL, Pass::icount(opts.shift)] {
        let mut runs: Vec<Boots> = boards.iter().map(|_| Boots::default()).collect();
        // Board after board within a run, so that the host's load falls on both alike.
        for _ in 0..opts.runs {
            for (assembled, boots) in boards.iter().zip(&mut runs) {
                boots.shared.push(boot(&assembled.shared, pass.shift, &MEASURES)?);
                boots.alone.push(boot(&assembled.alone, pass.shift, &ALONE)?);
                if let Some(direct) = &assembled.direct {
                    boots.direct.push(boot(direct, pass.shift, &DIRECT)?);
                }
            }
        }
        for (assembled, boots) in boards.iter().zip(&runs) {
            let mut lines = medians(&boots.shared, &MEASURES);
            let alone = medians(&boots.alone, &ALONE);
            lines.extend(alone.into_iter().map(|(what, line)| (format!("{what} alone"), line)));
            if !boots.direct.is_empty() {
                let direct = medians(&boots.direct, &DIRECT);
                lines.extend(direct.into_iter().map(|(what, line)| (format!("{what} direct"), line)));
            }
            passes.push((assembled.board, pass.mode, pass.shift, lines));
        }
    }
    Ok(Report { counter_hz: NOMINAL_HZ, count: opts.count, runs: opts.runs, boards: opts.boards.clone(), passes })
}

fn boot((config, output): &(Config, BuildOutput), icount: Option<u32>, measures: &[&str]) -> Result<Measures> {
    let opts = RunOptions { seconds: Some(RUN_LIMIT_S), icount, ..RunOptions::default() };
    let report = qemu::to_power_off(output, &config.system, &opts, false)?;
    let path = &report.partition_logs[0];
    let log = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let lines = parse(&log);
    if !log.contains("ipc-bench: done") || lines.len() != measures.len() {
        bail!("the bench partition did not finish its measures; see {}", path.display());
    }
    if let Some((_, sgi)) = lines.iter().find(|(what, _)| what == "sgi") {
        let taken = format!("ipc-bench: sgi taken {n} of {n}", n = sgi.n);
        if !log.lines().any(|l| l == taken) {
            bail!("the bench partition did not take every SGI it sent; see {}", path.display());
        }
    }
    Ok(lines)
}

fn medians(runs: &[Vec<(String, Line)>], measures: &[&str]) -> Vec<(String, Line)> {
    measures
        .iter()
        .map(|&what| {
            let of = |f: fn(&Line) -> u64| {
                median(
                    runs.iter().filter_map(|r| r.iter().find(|(w, _)| w == what)).map(|(_, l)| f(l) as f64).collect(),
                ) as u64
            };
            (what.to_string(), Line { n: of(|l| l.n), min: of(|l| l.min), mean: of(|l| l.mean), max: of(|l| l.max) })
        })
        .collect()
}

const COLUMNS: [Column; 5] = [
    Column::left("measure", "measure", 12),
    Column::right("icount", "icount mean (instr.)", 8),
    Column::right("range", "icount min..max", 12),
    Column::right("wall µs", "wall mean (µs)", 8),
    Column::right("range µs", "wall min..max (µs)", 12),
];

/// With both boards: each measure on one beside the other.
const SIDE_COLUMNS: [Column; 7] = [
    Column::left("measure", "measure", 12),
    Column::right("virt", "qemu-virt icount (instr.)", 8),
    Column::right("zcu102", "zcu102 icount (instr.)", 8),
    Column::right("ratio", "zcu102 / qemu-virt", 6),
    Column::right("virt µs", "qemu-virt wall (µs)", 8),
    Column::right("zcu102 µs", "zcu102 wall (µs)", 8),
    Column::right("ratio", "zcu102 / qemu-virt", 6),
];

/// Every row's name, in the tables' order.
fn row_names() -> impl Iterator<Item = String> {
    let alone = ALONE.iter().map(|m| format!("{m} alone"));
    let direct = DIRECT.iter().map(|m| format!("{m} direct"));
    MEASURES.iter().map(|m| m.to_string()).chain(alone).chain(direct)
}

impl Report {
    fn get(&self, board: Board, mode: Mode, what: &str) -> Option<Line> {
        let (_, _, _, lines) = self.passes.iter().find(|(b, m, _, _)| (*b, *m) == (board, mode))?;
        lines.iter().find(|(w, _)| w == what).map(|(_, l)| *l)
    }

    /// Counter ticks as microseconds.
    fn us(&self, ticks: u64) -> f64 {
        ticks as f64 * 1e6 / self.counter_hz as f64
    }

    /// Mean minus the counter reads around it (in the same setup).
    fn net(&self, board: Board, mode: Mode, what: &str) -> Option<u64> {
        let empty_of = match what.rsplit_once(' ') {
            Some((_, setup)) => format!("empty {setup}"),
            None => "empty".to_string(),
        };
        let empty_of = empty_of.as_str();
        let empty = self.get(board, mode, empty_of)?.mean;
        Some(self.get(board, mode, what)?.mean.saturating_sub(empty))
    }

    fn board_table(&self, board: Board) -> Table {
        let mut table = Table::new(&COLUMNS);
        for what in row_names() {
            let what = what.as_str();
            let (Some(i), Some(w)) = (self.get(board, Mode::Icount, what), self.get(board, Mode::Wall, what)) else {
                continue;
            };
            let net_i = self.net(board, Mode::Icount, what).unwrap_or(i.mean);
            let net_w = self.net(board, Mode::Wall, what).unwrap_or(w.mean);
            table.row(vec![
                what.to_string(),
                net_i.to_string(),
                format!("{}..{}", i.min, i.max),
                format!("{:.2}", self.us(net_w)),
                format!("{:.2}..{:.2}", self.us(w.min), self.us(w.max)),
            ]);
        }
        table
    }

    /// zcu102 beside `qemu-virt`, net of the counter reads, from the same run.
    fn side_by_side(&self) -> Table {
        let (virt, zcu) = (Board::QemuVirt, Board::Zcu102);
        let ratio = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) if a > 0 => report::ratio(Some(b as f64 / a as f64)),
            _ => report::ratio(None),
        };
        let cell = |v: Option<u64>| v.map_or_else(|| "n/a".to_string(), |v| v.to_string());
        let us = |v: Option<u64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{:.2}", self.us(v)));
        let mut table = Table::new(&SIDE_COLUMNS);
        for what in row_names().filter(|w| !w.starts_with("empty")) {
            let (vi, zi) = (self.net(virt, Mode::Icount, &what), self.net(zcu, Mode::Icount, &what));
            let (vw, zw) = (self.net(virt, Mode::Wall, &what), self.net(zcu, Mode::Wall, &what));
            table.row(vec![what, cell(vi), cell(zi), ratio(vi, zi), us(vw), us(zw), ratio(vw, zw)]);
        }
        table
    }

    fn hypercall_note(&self, board: Board) -> String {
        let mut out = String::new();
        if let (Some(shared), Some(alone)) =
            (self.net(board, Mode::Icount, "hypercall"), self.net(board, Mode::Icount, "hypercall alone"))
        {
            let ker_one_cycles = KER_ONE_HYPERCALL_US * KER_ONE_MHZ;
            let _ = write!(
                out,
                "\nHypercall round trip (`PARTITA_VERSION`): {alone} instructions under -icount on an exclusive pCPU, \
                 {shared} on a pCPU shared with another partition (where each trap also asks the ready queue whether \
                 to give way); at one instruction per cycle, {:.2} and {:.2} µs on a 1 GHz core. Ker-ONE: \
                 {KER_ONE_HYPERCALL_US} µs on a {KER_ONE_MHZ} MHz Cortex-A9, about {ker_one_cycles:.0} cycles \
                 ({:.1}x and {:.1}x that).\n",
                alone as f64 / 1000.0,
                shared as f64 / 1000.0,
                alone as f64 / ker_one_cycles,
                shared as f64 / ker_one_cycles
            );
        }
        if let (Some(tx), Some(rx)) = (self.net(board, Mode::Icount, "send"), self.net(board, Mode::Icount, "receive"))
        {
            let _ = writeln!(out, "Queuing-port send plus receive (16-byte message): {} instructions.", tx + rx);
        }
        if let Some(sgi) = self.net(board, Mode::Icount, "sgi direct") {
            let _ = writeln!(
                out,
                "A direct partition's SGI to itself (`sgi direct`): {sgi} instructions under -icount for the \
                 trapped write to ICC_SGI1R_EL1, checked and sent to the physical GIC by Partita; its delivery, \
                 from the GIC to the guest, costs what it costs natively and is not in the figure."
            );
        }
        out
    }

    pub fn markdown(&self) -> String {
        let boards: Vec<String> = self.boards.iter().map(|b| format!("{} ({})", b.name(), b.gic())).collect();
        let mut out = format!(
            "# Communication costs ({})\n\n`partita bench ipc --runs {} --count {}` on {}: medians over {} boots of each \
             pass; each figure is a mean over {} operations, minus the counter reads around it (`empty`). Under \
             `-icount` one counter tick is one guest instruction.\n",
            today(),
            self.runs,
            self.count,
            boards.join(" and "),
            self.runs,
            self.count
        );
        let several = self.boards.len() > 1;
        for &board in &self.boards {
            if several {
                let _ = write!(out, "\n## {} ({})\n", board.name(), board.gic());
            }
            out.push('\n');
            out += &self.board_table(board).markdown();
            out += &self.hypercall_note(board);
        }
        if several {
            out += "\n## Side by side\n\nBoth boards in this run, each boot on `qemu-virt` followed by the same on \
                    `zcu102`; each figure net of the counter reads. On zcu102 the partition's GICD traps and its list \
                    registers are written through GICH's MMIO; QEMU models a Cortex-A53 there and a Cortex-A72 on \
                    `virt`.\n\n";
            out += &self.side_by_side().markdown();
        }
        out += "\nBoth partitions share one pCPU, the measuring one at the higher priority. `send` is a 16-byte \
                send that wakes the echo partition (which runs only once the sender waits); `receive` takes a \
                message already queued (two sent while the measuring partition slept on its timer); `round-trip` is the send, the sender blocking in its receive, a switch \
                to the echo partition, its receive, its send (which wakes the sender, and the sender preempts \
                it) and the switch back. The first round trip, which waits for the echo partition to boot, is not timed. `doorbell` runs from the echo partition's counter read just before it \
                rings to the measuring partition's return from WFI after its handler (ring, injection, switch, \
                interrupt entry and exit). The `alone` rows are the measuring partition alone on its pCPU, \
                `direct` the same with `interrupts = \"direct\"` (GICv3 boards only): `sgi` is its write to \
                ICC_SGI1R_EL1 naming itself, IRQs masked around it so that the SGI is taken after the second \
                counter read.\n";
        out
    }
}

/// Writes `<out>/bench/<name>/ipc-<date>.md`.
pub fn write(report: &Report, name: &str) -> Result<PathBuf> {
    let files = [(format!("ipc-{}.md", today()), report.markdown())];
    let written = report::write(&paths::bench_out(name), &files)?;
    Ok(written.into_iter().next().expect("one file was written"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_measure_lines_only() {
        let log = "hello\nipc-bench: hypercall n 1000 min 380 mean 401 max 900 counts\n\
                   ipc-bench: 1000 polls for 1000 answers\nipc-bench: done\n";
        assert_eq!(parse(log), vec![("hypercall".to_string(), Line { n: 1000, min: 380, mean: 401, max: 900 })]);
    }

    #[test]
    fn the_configuration_rings_the_bench_partitions_doorbell() {
        let config = config(10, Path::new("guest.elf"));
        let bell = config.channel.iter().find(|c| c.name == "bell").expect("a bell channel");
        assert_eq!(bell.doorbell_intid, Some(48));
        assert!(config.partition[0].bootargs.as_deref().is_some_and(|args| args.contains("doorbell=48")));
        assert_eq!(config.channel.len(), 3);
    }

    #[test]
    fn the_direct_setup_is_alone_on_its_pcpu_and_sends_itself_sgis() {
        let config = direct_config(10, Path::new("guest.elf"));
        let [bench] = &config.partition[..] else { panic!("one partition") };
        assert_eq!(bench.exclusive, Some(true));
        assert_eq!(bench.interrupts, Some(crate::config::raw::RawDelivery::Direct));
        assert!(bench.bootargs.as_deref().is_some_and(|args| args.contains("ipc_sgi=1")));
        assert!(config.channel.is_empty());
    }

    #[test]
    fn each_setup_is_net_of_its_own_empty_loop() {
        let line = |mean| Line { n: 10, min: mean, mean, max: mean };
        let lines = [("empty", 2), ("hypercall", 99), ("empty alone", 3), ("hypercall alone", 100)]
            .into_iter()
            .chain([("empty direct", 4), ("sgi direct", 44)])
            .map(|(what, mean)| (what.to_string(), line(mean)))
            .collect();
        let report = Report {
            counter_hz: NOMINAL_HZ,
            count: 10,
            runs: 1,
            boards: vec![Board::QemuVirt],
            passes: vec![(Board::QemuVirt, Mode::Icount, Some(4), lines)],
        };
        let net = |what| report.net(Board::QemuVirt, Mode::Icount, what);
        assert_eq!((net("hypercall"), net("hypercall alone"), net("sgi direct")), (Some(97), Some(97), Some(40)));
        assert_eq!(net("hypercall direct"), None);
    }
}
