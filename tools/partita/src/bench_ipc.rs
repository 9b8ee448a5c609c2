//! `partita bench ipc`: what communication costs a partition. The test
//! guest's `ipc-bench` mode (guests/test-guest/src/ipcbench.c) measures a
//! null hypercall, a queuing-port send and receive with the round trip
//! through an echo partition of lower priority on the same pCPU, and a
//! doorbell from that partition; this module boots it wall-clock and under
//! `-icount`, and reports medians. Reported, never asserted.
//!
//! Ker-ONE's anchor: a hypercall round trip of 0.20 µs on average on a
//! 667 MHz Cortex-A9, about 133 cycles.

use crate::bench::{self, median, Mode};
use crate::bench_rtos::results_dir;
use crate::bench_sched::today;
use crate::build::{self, BuildOutput};
use crate::config::Config;
use crate::guests;
use crate::run::{self, Ending, RunOptions};
use anyhow::{bail, Context, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub const NAME: &str = "bench-ipc";
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

pub struct Options {
    pub runs: u32,
    pub count: u32,
    pub shift: u32,
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

/// `bench` alone on pCPU 1, which is then exclusive: the hypercall alone.
pub fn alone_text(count: u32, guest: &Path) -> String {
    format!(
        "[platform]\ncpus = 2\n\n[[partition]]\nname = \"bench\"\ncpus = [1]\n\
         bootargs = \"ipc-bench=bench ipc_n={count} ticks=1 period_ms=1\"\n\
         [[partition.memory]]\nbase = 0x40000000\nsize = \"16M\"\n[[partition.image]]\npath = \"{}\"\n",
        guest.display()
    )
}

/// The configuration: `bench` above `echo` on pCPU 1, requests and
/// answers as queuing ports, a shared window with a doorbell at `bench`.
pub fn config_text(count: u32, guest: &Path) -> String {
    let partition = |name: &str, priority: u32, args: &str| {
        format!(
            "[[partition]]\nname = \"{name}\"\ncpus = [1]\npriority = {priority}\nbootargs = \"{args} ticks=1 period_ms=1\"\n\
             [[partition.memory]]\nbase = 0x40000000\nsize = \"16M\"\n\
             [[partition.image]]\npath = \"{}\"\n\n",
            guest.display()
        )
    };
    let bench_args = format!("ipc-bench=bench ipc_n={count} doorbell={BELL_INTID}");
    format!(
        "[platform]\ncpus = 2\n\n{}{}\
         [[channel]]\nname = \"request\"\nkind = \"queuing\"\nsource = \"bench\"\ndestination = \"echo\"\nmax_message = 16\ndepth = 4\n\n\
         [[channel]]\nname = \"answer\"\nkind = \"queuing\"\nsource = \"echo\"\ndestination = \"bench\"\nmax_message = 16\ndepth = 4\n\n\
         [[channel]]\nname = \"bell\"\nkind = \"shared-memory\"\npartitions = [\"bench\", \"echo\"]\nsize = \"4K\"\n\
         base = 0x50000000\ndoorbell_intid = {BELL_INTID}\n",
        partition("bench", 200, &bench_args),
        partition("echo", 100, "ipc-bench=echo"),
    )
}

/// Each measure by name.
pub type Measures = Vec<(String, Line)>;

/// Medians over runs of each measure's mean, min and max, per pass.
pub struct Report {
    pub counter_hz: u64,
    pub count: u32,
    pub runs: u32,
    pub passes: Vec<(Mode, Option<u32>, Measures)>,
}

pub fn ipc(opts: &Options) -> Result<Report> {
    guests::build_all()?;
    let hypervisor = build::build_hypervisor(&build::repo_root())?;
    let guest = guests::output_dir(&build::repo_root()).join("test-guest.elf");
    let shared = bench::assemble_generated(NAME, "shared", &config_text(opts.count, &guest), &hypervisor)?;
    let alone = bench::assemble_generated(NAME, "alone", &alone_text(opts.count, &guest), &hypervisor)?;
    let mut passes = Vec::new();
    for (mode, shift) in [(Mode::Wall, None), (Mode::Icount, Some(opts.shift))] {
        let (mut runs, mut alone_runs) = (Vec::new(), Vec::new());
        for _ in 0..opts.runs {
            runs.push(boot(&shared, shift, &MEASURES)?);
            alone_runs.push(boot(&alone, shift, &ALONE)?);
        }
        let mut lines = medians(&runs, &MEASURES);
        let alone = medians(&alone_runs, &ALONE);
        lines.extend(alone.into_iter().map(|(what, line)| (format!("{what} alone"), line)));
        passes.push((mode, shift, lines));
    }
    Ok(Report { counter_hz: bench::NOMINAL_HZ, count: opts.count, runs: opts.runs, passes })
}

fn boot(
    (config, output): &(Config, BuildOutput),
    icount: Option<u32>,
    measures: &[&str],
) -> Result<Vec<(String, Line)>> {
    let opts = RunOptions { seconds: Some(RUN_LIMIT_S), icount, ..RunOptions::default() };
    let report = run::run(output, &config.system, &opts)?;
    let dir = output.out_dir.display();
    match report.ending {
        Ending::Exited(status) if status.success() => {}
        Ending::Exited(status) => bail!("QEMU failed ({status}); logs in {dir}"),
        Ending::TimedOut => bail!("the machine still ran after {RUN_LIMIT_S} s; logs in {dir}"),
        Ending::Interrupted => bail!("interrupted"),
    }
    let path: &PathBuf = &report.partition_logs[0];
    let log = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let lines = parse(&log);
    if !log.contains("ipc-bench: done") || lines.len() != measures.len() {
        bail!("the bench partition did not finish its measures; see {}", path.display());
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

impl Report {
    fn get(&self, mode: Mode, what: &str) -> Option<Line> {
        let (_, _, lines) = self.passes.iter().find(|(m, _, _)| *m == mode)?;
        lines.iter().find(|(w, _)| w == what).map(|(_, l)| *l)
    }

    /// Counter ticks as microseconds.
    fn us(&self, ticks: u64) -> f64 {
        ticks as f64 * 1e6 / self.counter_hz as f64
    }

    /// Mean minus the counter reads around it (in the same setup).
    fn net(&self, mode: Mode, what: &str) -> Option<u64> {
        let empty_of = if what.ends_with(" alone") { "empty alone" } else { "empty" };
        let empty = self.get(mode, empty_of)?.mean;
        Some(self.get(mode, what)?.mean.saturating_sub(empty))
    }

    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# Communication costs ({})\n\n`partita bench ipc --runs {} --count {}`: medians over {} boots of each pass; \
             each figure is a mean over {} operations, minus the counter reads around it (`empty`). Under `-icount` \
             one counter tick is one guest instruction.\n\n",
            today(),
            self.runs,
            self.count,
            self.runs,
            self.count
        );
        out += "| measure | icount mean (instr.) | icount min..max | wall mean (µs) | wall min..max (µs) |\n|---|--:|--:|--:|--:|\n";
        let rows = MEASURES.iter().map(|m| m.to_string()).chain(ALONE.iter().map(|m| format!("{m} alone")));
        for what in rows {
            let what = what.as_str();
            let (Some(i), Some(w)) = (self.get(Mode::Icount, what), self.get(Mode::Wall, what)) else { continue };
            let net_i = self.net(Mode::Icount, what).unwrap_or(i.mean);
            let net_w = self.net(Mode::Wall, what).unwrap_or(w.mean);
            let _ = writeln!(
                out,
                "| {what} | {net_i} | {}..{} | {:.2} | {:.2}..{:.2} |",
                i.min,
                i.max,
                self.us(net_w),
                self.us(w.min),
                self.us(w.max)
            );
        }
        if let (Some(shared), Some(alone)) =
            (self.net(Mode::Icount, "hypercall"), self.net(Mode::Icount, "hypercall alone"))
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
        if let (Some(tx), Some(rx)) = (self.net(Mode::Icount, "send"), self.net(Mode::Icount, "receive")) {
            let _ = writeln!(out, "Queuing-port send plus receive (16-byte message): {} instructions.", tx + rx);
        }
        out += "\nBoth partitions share one pCPU, the measuring one at the higher priority. `send` is a 16-byte \
                send that wakes the echo partition (which runs only once the sender waits); `receive` takes a \
                message already queued (two sent while the measuring partition slept on its timer); `round-trip` is the send, the sender blocking in its receive, a switch \
                to the echo partition, its receive, its send (which wakes the sender, and the sender preempts \
                it) and the switch back. The first round trip, which waits for the echo partition to boot, is not timed. `doorbell` runs from the echo partition's counter read just before it \
                rings to the measuring partition's return from WFI after its handler (ring, injection, switch, \
                interrupt entry and exit).\n";
        out
    }
}

/// Writes `bench/results/ipc-<date>.md`.
pub fn write(report: &Report) -> Result<PathBuf> {
    let dir = results_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("ipc-{}.md", today()));
    std::fs::write(&path, report.markdown()).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
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
        let text = config_text(10, Path::new("guest.elf"));
        assert!(text.contains("doorbell_intid = 48") && text.contains("doorbell=48"), "{text}");
        assert_eq!(text.matches("[[channel]]").count(), 3);
    }
}
