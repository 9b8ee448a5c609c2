//! The report of a suite: the terminal summary, `<suite>-<date>.md` with
//! failures first, then scores and R_P, the scheduler curve as a table, and
//! the files that go with it.

use super::chart::{bar_svg, curve_svg};
use super::score::{ker_one, target, CurvePoint, Score};
use super::{Queue, Setup, Suite, TARGET_COREMARK_LOSS, TARGET_RP, TARGET_RP_INTERRUPT, XTRATUM_COREMARK_LOSS};
use crate::bench::{report, Pass};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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

impl Report {
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
        report::write(dir, &self.files()?)
    }

    /// The tests with a score, in the order the guest ran them.
    pub(super) fn tests(&self) -> Vec<String> {
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

    pub(super) fn setups(&self, pass: Pass) -> Vec<Setup> {
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
- direct: as alone, with `interrupts = \"direct\"`: its timer and SGIs come from the physical GIC without an exit.
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
