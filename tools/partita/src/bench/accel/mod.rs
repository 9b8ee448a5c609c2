//! `partita bench accel`: what an accelerator allocation costs, after
//! Ker-ONE's section 6. Reported, never asserted.
//!
//! - Table 4: each atomic cost, from the trace of boots that make one path
//!   happen over and over ([`scenarios`], [`steps`]);
//! - eq. 6: each path's latency as the requesting guest measured it, from
//!   its write to the write's return, against the path analysed from those
//!   costs;
//! - Section 6.1's OFDM run: an RTOS and a GPOS sharing four virtual
//!   devices over Ker-ONE's three PRRs ([`ofdm`]).
//!
//! Both a wall-clock pass and an `-icount` pass run; the costs `--save`
//! writes to the board's profile are the `-icount` pass's largest, in
//! nanoseconds of guest time, so that `partita check` bounds what a run
//! under `-icount` can show.

pub mod ofdm;
pub mod scenarios;
pub mod steps;

use super::accel_software::{self, Table6};
use super::report::{self, today, Column, Table};
use super::{ipc, qemu, Board, Mode, Pass};
use crate::guests;
use crate::paths;
use crate::profile;
use crate::run::RunOptions;
use anyhow::{bail, ensure, Context, Result};
use partita_core::config::allocation::{device_latencies, Wait};
use partita_core::fabric::bound::{AtomicCosts, KER_ONE_TABLE_4};
use partita_core::fabric::manager::Path;
use scenarios::Scenario;
use std::fmt::Write as _;
use std::path::PathBuf;
use steps::{Allocation, Cost, Write};

pub const DEFAULT_NAME: &str = "accel";
pub const DEFAULT_SHIFT: u32 = 4;
pub const DEFAULT_JOBS: u32 = 20;
pub const DEFAULT_OFDM_MS: u32 = 200;
const RUN_LIMIT_S: u64 = 300;
/// Ker-ONE Table 4's figure for `cost` (ns, on a 667 MHz Cortex-A9).
fn ker_one(cost: Cost) -> Option<u64> {
    let c = KER_ONE_TABLE_4;
    Some(match cost {
        Cost::Trap => c.trap,
        Cost::Search => c.search,
        Cost::Assign => c.assign,
        Cost::AssignReconfig => c.assign_reconfig,
        Cost::Preempt => c.preempt,
        Cost::PlIrq => c.pl_irq,
        Cost::IrqPcap => c.irq_pcap,
        Cost::IrqStop => c.irq_stop,
        Cost::Resume => c.resume,
        Cost::Wake => return None,
    })
}
pub const KER_ONE_MHZ: f64 = 667.0;

pub struct Options {
    /// The shift of the `-icount` pass, if one runs.
    pub shift: Option<u32>,
    /// Requests each scenario makes.
    pub jobs: u32,
    /// How long the OFDM run lasts, in ms of guest time.
    pub ofdm_ms: u32,
    /// Frames of each function in Table 6's runs.
    pub frames: u32,
    pub save: bool,
    pub name: String,
    /// The board to measure on, and whose profile `--save` writes.
    pub board: Board,
}

/// One scenario's boot in one pass.
pub struct ScenarioRun {
    pub scenario: &'static str,
    pub pass: Pass,
    pub hz: u64,
    pub allocations: Vec<Allocation>,
    /// Each path analysed for the scenario's requesting device, in ns,
    /// from the costs of the pass (filled in once every scenario ran).
    pub analysed: [Option<u64>; 4],
}

pub struct Report {
    pub board: Board,
    pub shift: u32,
    pub jobs: u32,
    pub runs: Vec<ScenarioRun>,
    /// The null hypercall on an exclusive pCPU, in instructions.
    pub hypercall: Option<u64>,
    /// Path 1 measured the same way (see `scenarios::assign_alone`):
    /// the mean in instructions, and how many requests took it.
    pub path1_alone: Option<(u64, usize)>,
    /// The costs measured in each pass, in ns of guest time (largest).
    pub costs: Vec<(Pass, AtomicCosts)>,
    pub ofdm: Vec<ofdm::Run>,
    pub table6: Table6,
    /// Where `--save` wrote.
    pub saved: Option<String>,
}

pub fn run(opts: &Options) -> Result<Report> {
    ensure!(opts.jobs >= 2, "--jobs must be at least 2");
    ensure!(!opts.save || opts.shift.is_some(), "--save writes the -icount pass's costs: give --icount SHIFT");
    let hypervisor = qemu::prepare_board(opts.board)?;
    let guest = guests::image("test-guest.elf");
    let passes = Pass::with_icount(opts.shift);
    let mut runs = Vec::new();
    for scenario in scenarios::all() {
        let config =
            qemu::generated(&opts.name, scenario.name, &(scenario.config)(opts.jobs, &guest, opts.board), &hypervisor)?;
        for &pass in &passes {
            runs.push(scenario_run(&scenario, &config, pass)?);
        }
    }
    let mut costs = Vec::new();
    for &pass in &passes {
        let of_pass: Vec<&Allocation> = runs.iter().filter(|r| r.pass == pass).flat_map(|r| &r.allocations).collect();
        let hz = runs.iter().find(|r| r.pass == pass).map_or(super::NOMINAL_HZ, |r| r.hz);
        costs.push((pass, worst_costs(&of_pass, hz)));
    }
    for run in &mut runs {
        let Some((_, costs)) = costs.iter().find(|(pass, _)| *pass == run.pass) else { continue };
        let scenario = scenarios::all().into_iter().find(|s| s.name == run.scenario).expect("a scenario ran");
        let config = (scenario.config)(opts.jobs, &guest, opts.board);
        run.analysed = analysed(&config, scenario.requester, costs, &opts.name)?;
    }
    let (hypercall, path1_alone) = match opts.shift {
        Some(shift) => {
            (null_hypercall(opts, shift, &hypervisor, &guest)?, path1_alone(opts, shift, &hypervisor, &guest)?)
        }
        None => (None, None),
    };
    let ofdm = passes
        .iter()
        .map(|&pass| ofdm::run(opts, pass, &hypervisor, &guest, costs.iter().find(|c| c.0 == pass).map(|c| &c.1)))
        .collect::<Result<Vec<_>>>()?;
    let table6 = accel_software::run(&passes, opts.frames)?;
    let mut report = Report {
        board: opts.board,
        shift: opts.shift.unwrap_or(DEFAULT_SHIFT),
        jobs: opts.jobs,
        runs,
        hypercall,
        path1_alone,
        costs,
        ofdm,
        table6,
        saved: None,
    };
    if opts.save {
        report.saved = Some(save(&report)?);
    }
    Ok(report)
}

fn scenario_run(
    scenario: &Scenario,
    (config, output): &(crate::config::Config, crate::build::BuildOutput),
    pass: Pass,
) -> Result<ScenarioRun> {
    let opts = RunOptions { seconds: Some(RUN_LIMIT_S), icount: pass.shift, ..RunOptions::default() };
    let report = qemu::to_power_off(output, &config.system, &opts, true)?;
    let logs = qemu::logs(&config.system, &report)?;
    let index = logs.iter().position(|(name, _)| name == scenario.requester).context("the requesting partition")?;
    let writes = writes(&logs[index].1);
    ensure!(
        !writes.is_empty(),
        "{}: the requesting partition ran no job; see {}",
        scenario.name,
        output.out_dir.display()
    );
    let path =
        report.trace.with_context(|| format!("{}: no trace.bin in {}", scenario.name, output.out_dir.display()))?;
    let (_, trace) = crate::trace::read_file(&path)?;
    if trace.lost.iter().any(|&lost| lost > 0) {
        bail!("{}: the trace lost events; give it more room", scenario.name);
    }
    let allocations = steps::allocations(&trace, index as u8, &writes);
    Ok(ScenarioRun { scenario: scenario.name, pass, hz: trace.counter_hz, allocations, analysed: [None; 4] })
}

/// The test guest's job lines: `... alloc A ticks ... at T0`.
pub fn writes(log: &str) -> Vec<Write> {
    log.lines()
        .filter(|l| l.starts_with("accel: job ") && l.contains(" hash "))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let alloc: u64 = words.get(words.iter().position(|w| *w == "alloc")? + 1)?.parse().ok()?;
            let t0: u64 = words.get(words.iter().position(|w| *w == "at")? + 1)?.parse().ok()?;
            Some(Write { t0, t1: t0 + alloc })
        })
        .collect()
}

/// The largest of each term over `allocations`, in ns; the resume is
/// the larger of the two kinds.
pub fn worst_costs(allocations: &[&Allocation], hz: u64) -> AtomicCosts {
    let max = |cost: Cost| {
        let ticks = allocations.iter().flat_map(|a| &a.costs).filter(|c| c.0 == cost).map(|c| c.1).max();
        ticks_to_ns(ticks.unwrap_or(0), hz)
    };
    AtomicCosts {
        trap: max(Cost::Trap),
        resume: max(Cost::Resume).max(max(Cost::Wake)),
        pl_irq: max(Cost::PlIrq),
        search: max(Cost::Search),
        assign: max(Cost::Assign),
        assign_reconfig: max(Cost::AssignReconfig),
        preempt: max(Cost::Preempt),
        irq_pcap: max(Cost::IrqPcap),
        irq_stop: max(Cost::IrqStop),
    }
}

pub fn ticks_to_ns(ticks: u64, hz: u64) -> u64 {
    u64::try_from(u128::from(ticks) * 1_000_000_000 / u128::from(hz.max(1))).unwrap_or(u64::MAX)
}

/// Ns of guest time under `-icount shift=S` as instructions.
pub fn ns_to_instructions(ns: u64, shift: u32) -> u64 {
    ns >> shift
}

/// Eq. 6's four paths for `requester`'s first device, as `partita check`
/// computes them for `config` with `costs`.
fn analysed(
    config: &crate::config::raw::RawConfig,
    requester: &str,
    costs: &AtomicCosts,
    name: &str,
) -> Result<[Option<u64>; 4]> {
    let path = paths::scratch("bench").join(format!("{name}-analysed.toml"));
    config.write(&path)?;
    let loaded = crate::config::load(&path).map_err(|_| anyhow::anyhow!("{} does not load", path.display()))?;
    let system = &loaded.system;
    let p = system.partitions.iter().position(|p| p.name == requester).context("the requester")?;
    let latency = device_latencies(system, Some(costs)).into_iter().find(|d| d.partition == p && d.device == 0);
    match latency.map(|l| l.wait) {
        Some(Wait::Bounded { latency: Some(bound), .. }) => Ok(bound.paths),
        _ => Ok([None; 4]),
    }
}

/// The null hypercall round trip on an exclusive pCPU under `-icount`,
/// the yardstick of the Path 1 target.
fn null_hypercall(
    opts: &Options,
    shift: u32,
    hypervisor: &std::path::Path,
    guest: &std::path::Path,
) -> Result<Option<u64>> {
    let (config, output) =
        qemu::generated(&opts.name, "hypercall", &ipc::alone_config(1000, guest).board(opts.board.name()), hypervisor)?;
    let run = RunOptions { seconds: Some(RUN_LIMIT_S), icount: Some(shift), ..RunOptions::default() };
    let report = qemu::to_power_off(&output, &config.system, &run, true)?;
    let log = std::fs::read_to_string(&report.partition_logs[0]).context("the hypercall partition's log")?;
    let lines = ipc::parse(&log);
    let get = |what: &str| lines.iter().find(|(w, _)| w == what).map(|(_, l)| l.mean);
    let ticks = get("hypercall").zip(get("empty")).map(|(h, e)| h.saturating_sub(e));
    // 16 ns per tick of the 62.5 MHz counter.
    Ok(ticks.map(|t| ns_to_instructions(ticks_to_ns(t, super::NOMINAL_HZ), shift)))
}

/// Path 1 on an exclusive pCPU under `-icount`, tracing off, as the null
/// hypercall is measured: the mean of the requests after the first (which
/// downloads), each the guest's write to its return, in instructions. The
/// hypervisor's count of Path 1 connections must match, or the figure
/// would mix paths.
fn path1_alone(
    opts: &Options,
    shift: u32,
    hypervisor: &std::path::Path,
    guest: &std::path::Path,
) -> Result<Option<(u64, usize)>> {
    let raw = scenarios::assign_alone(opts.jobs, guest, opts.board);
    let (config, output) = qemu::generated(&opts.name, "assign-alone", &raw, hypervisor)?;
    let run = RunOptions { seconds: Some(RUN_LIMIT_S), icount: Some(shift), ..RunOptions::default() };
    let report = qemu::to_power_off(&output, &config.system, &run, true)?;
    let log = std::fs::read_to_string(&report.partition_logs[0]).context("the requesting partition's log")?;
    let later: Vec<u64> = writes(&log).iter().skip(1).map(|w| w.t1 - w.t0).collect();
    let hv = std::fs::read_to_string(&report.hypervisor_log).context("the hypervisor's log")?;
    let assigned = hv
        .lines()
        .find_map(|l| l.strip_prefix("fabric: path assign: ")?.split_whitespace().next()?.parse::<usize>().ok());
    if later.is_empty() || assigned != Some(later.len()) {
        bail!(
            "assign-alone: {} request(s) after the first, {assigned:?} Path 1 connection(s); see {}",
            later.len(),
            output.out_dir.display()
        );
    }
    let mean = later.iter().sum::<u64>() / later.len() as u64;
    Ok(Some((ns_to_instructions(ticks_to_ns(mean, super::NOMINAL_HZ), shift), later.len())))
}

/// Rewrites the board's profile with the `-icount` pass's costs.
fn save(report: &Report) -> Result<String> {
    let (_, costs) = report.costs.iter().find(|(pass, _)| pass.mode == Mode::Icount).context("no -icount pass")?;
    let file = super::pcs::profile_path(report.board);
    let previous = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let board = match report.board {
        Board::QemuVirt => String::new(),
        other => format!(" --board {}", other.name()),
    };
    let measured = format!(
        "partita bench accel{board} --jobs {} --save, {}: the largest of each term, -icount shift={}",
        report.jobs,
        today(),
        report.shift
    );
    let text = profile::with_accel_costs(&previous, costs, &measured);
    profile::parse(&file.display().to_string(), &text)?;
    std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
    Ok(super::pcs::profile_file(report.board))
}

const TABLE_4_COLUMNS: [Column; 6] = [
    Column::left("term", "term", 34),
    Column::right("n", "n", 4),
    Column::right("icount", "instr. mean / max", 14),
    Column::right("wall", "wall µs mean / max", 16),
    Column::right("Ker-ONE", "Ker-ONE µs", 8),
    Column::right("cycles", "Ker-ONE cycles", 8),
];

const EQ_6_COLUMNS: [Column; 6] = [
    Column::left("path", "path", 18),
    Column::right("n", "n", 4),
    Column::right("measured", "measured instr. mean / max", 16),
    Column::right("analysed", "analysed instr.", 10),
    Column::right("wall", "wall µs mean / max", 16),
    Column::right("asked", "Partita: asked to connected, instr. max", 10),
];

impl Report {
    fn pass(&self, mode: Mode) -> Vec<&Allocation> {
        self.runs.iter().filter(|r| r.pass.mode == mode).flat_map(|r| &r.allocations).collect()
    }

    fn hz(&self) -> u64 {
        self.runs.first().map_or(super::NOMINAL_HZ, |r| r.hz)
    }

    /// Mean and max of `values` ticks, as instructions or µs.
    fn figures(&self, values: &[u64], mode: Mode) -> String {
        if values.is_empty() {
            return "-".into();
        }
        let mean = values.iter().sum::<u64>() / values.len() as u64;
        let max = values.iter().copied().max().unwrap_or(0);
        let ns = |t| ticks_to_ns(t, self.hz());
        match mode {
            Mode::Icount => {
                format!("{} / {}", ns_to_instructions(ns(mean), self.shift), ns_to_instructions(ns(max), self.shift))
            }
            Mode::Wall => format!("{:.2} / {:.2}", ns(mean) as f64 / 1e3, ns(max) as f64 / 1e3),
        }
    }

    fn table_4(&self) -> String {
        let mut table = Table::new(&TABLE_4_COLUMNS);
        for cost in Cost::ALL {
            let of = |mode| -> Vec<u64> {
                self.pass(mode).iter().flat_map(|a| &a.costs).filter(|c| c.0 == cost).map(|c| c.1).collect()
            };
            let (icount, wall) = (of(Mode::Icount), of(Mode::Wall));
            let ker_one = ker_one(cost);
            table.row(vec![
                cost.name().to_string(),
                icount.len().to_string(),
                self.figures(&icount, Mode::Icount),
                self.figures(&wall, Mode::Wall),
                ker_one.map_or("-".into(), |ns| format!("{:.2}", ns as f64 / 1e3)),
                ker_one.map_or("-".into(), |ns| format!("{:.0}", ns as f64 * KER_ONE_MHZ / 1e3)),
            ]);
        }
        table.markdown()
    }

    fn eq_6(&self) -> String {
        let mut table = Table::new(&EQ_6_COLUMNS);
        for (index, path) in Path::ALL.iter().enumerate().take(4) {
            let of = |mode: Mode| -> Vec<&Allocation> {
                self.runs
                    .iter()
                    .filter(|r| r.pass.mode == mode)
                    .flat_map(|r| &r.allocations)
                    .filter(|a| a.path == *path)
                    .collect()
            };
            let full = |list: &[&Allocation]| -> Vec<u64> {
                list.iter().filter_map(|a| a.write).map(|w| w.t1 - w.t0).collect()
            };
            let (icount, wall) = (of(Mode::Icount), of(Mode::Wall));
            let analysed = self
                .runs
                .iter()
                .filter(|r| r.pass.mode == Mode::Icount)
                .filter_map(|r| r.analysed[index])
                .max()
                .map_or("-".into(), |ns| ns_to_instructions(ns, self.shift).to_string());
            let asked: Vec<u64> = icount.iter().map(|a| a.asked_to_connected).collect();
            table.row(vec![
                format!("{} {}", index + 1, path.name()),
                icount.len().to_string(),
                self.figures(&full(&icount), Mode::Icount),
                analysed,
                self.figures(&full(&wall), Mode::Wall),
                asked
                    .iter()
                    .max()
                    .map_or("-".into(), |&t| ns_to_instructions(ticks_to_ns(t, self.hz()), self.shift).to_string()),
            ]);
        }
        table.markdown()
    }

    pub fn markdown(&self) -> String {
        let icount = self.costs.iter().any(|(pass, _)| pass.mode == Mode::Icount);
        let passes = if icount {
            format!(
                " --icount {}`: each scenario's requests, wall-clock and under `-icount shift={}` (where {} ns of \
                 guest time is one instruction).",
                self.shift,
                self.shift,
                1u64 << self.shift
            )
        } else {
            "`: each scenario's requests, wall-clock only (`--icount SHIFT` adds the pass in instructions).".into()
        };
        let mut out = format!(
            "# Accelerator allocation ({})\n\nOn {} ({}). `partita bench accel{} --jobs {}{passes} Every figure \
             comes from the requesting guest's counter around its write and the trace's stamps of the same \
             counter.\n\n## Table 4: the atomic costs\n\n",
            today(),
            self.board.machine(),
            self.board.gic(),
            match self.board {
                Board::QemuVirt => String::new(),
                other => format!(" --board {}", other.name()),
            },
            self.jobs,
        );
        out += &self.table_4();
        out += "\nT_PL_irq is how late the fabric's pCPU took the logic's interrupt (a download over, an accelerator \
                stopped) after the tick the model raised it. The resume is measured twice: on the pCPU that \
                connected the device (Path 1), and across pCPUs, when the fabric's pCPU connected a vCPU stalled \
                on its write (Paths 2 to 4); the analysis takes the larger.\n\n## Eq. 6: each path, measured \
                against analysed\n\n";
        out += &self.eq_6();
        out += "\nMeasured: the guest's write that asked, to its return. Analysed: eq. 6 from the largest atomic \
                costs of the `-icount` pass, with the scenario's δ_pre and T_RCFG, as `partita check` computes it.\n";
        if let (Some(hypercall), Some((alone, n))) = (self.hypercall, self.path1_alone) {
            let _ = writeln!(
                out,
                "\nPath 1 against the target (at most twice a null hypercall round trip), both measured alike: \
                 the guest's write to its return on a pCPU of its own, tracing off, {n} requests: {alone} \
                 instructions (mean) against 2 x {hypercall} = {} ({:.2}x the hypercall).",
                2 * hypercall,
                alone as f64 / hypercall as f64
            );
        }
        if let Some(path1) = self.path1_mean() {
            let _ = writeln!(
                out,
                "In the `assign` scenario above, traced and beside a peer whose turns `-icount` interleaves with \
                 the requester's: {path1} instructions (mean)."
            );
        }
        for run in &self.ofdm {
            out += &run.markdown(self.shift);
        }
        out += &self.table6.section();
        if let Some(saved) = &self.saved {
            let _ = writeln!(out, "\nSaved to `{saved}`; rebuild partita for `check` to use it.");
        }
        out
    }

    fn path1_mean(&self) -> Option<u64> {
        let full: Vec<u64> = self
            .pass(Mode::Icount)
            .iter()
            .filter(|a| a.path == Path::Assign)
            .filter_map(|a| a.write)
            .map(|w| w.t1 - w.t0)
            .collect();
        (!full.is_empty()).then(|| {
            ns_to_instructions(ticks_to_ns(full.iter().sum::<u64>() / full.len() as u64, self.hz()), self.shift)
        })
    }
}

/// What a board other than QEMU `virt` adds to the report's file names, so
/// that `--save` keeps each board's results side by side.
pub fn file_suffix(board: Board) -> String {
    match board {
        Board::QemuVirt => String::new(),
        other => format!("-{}", other.name()),
    }
}

/// Writes `<out>/bench/<name>/accel-<date>[-<board>].md` and the OFDM run's plot.
pub fn write(report: &Report, name: &str) -> Result<Vec<PathBuf>> {
    let mut files = vec![(format!("accel-{}{}.md", today(), file_suffix(report.board)), report.markdown())];
    for run in &report.ofdm {
        files.push((run.plot_file.clone(), run.plot()?));
    }
    report::write(&paths::bench_out(name), &files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_lines_give_each_write() {
        let log = "accel: job 0 frames 1 result 1 hash 00ff stat 0x1 alloc 250 ticks done 900 ticks fn qam16 at 1000\n\
                   accel: job 1 too large\naccel: done\n";
        assert_eq!(writes(log), vec![Write { t0: 1000, t1: 1250 }]);
    }

    #[test]
    fn icount_shift_4_makes_a_tick_an_instruction() {
        assert_eq!(ns_to_instructions(ticks_to_ns(1234, 62_500_000), 4), 1234);
    }
}
