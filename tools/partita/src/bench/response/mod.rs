//! `partita bench response`: what Partita adds to an RTOS task's response
//! time, as Ker-ONE measures it (section 6, Figure 14, equations 3-4):
//!
//! - ΔVMMcritical, the longest stretch Partita runs at EL2 with interrupts
//!   masked, from the residency the hypervisor keeps per trap kind when it
//!   is built with its `residency` feature ([`critical`]);
//! - ΔVMMsched, the RTOS preempting a busy GPOS (`bench irq-latency`'s
//!   `preempt` row);
//! - Δ_VM^relEv (eq. 3), the RTOS's worst tick-to-released-task latency
//!   under Partita minus the best one natively ([`release`]).
//!
//! ΔResponse = ΔVMMcritical + ΔVMMsched + Δ_VM^relEv (eq. 4).

pub mod critical;
pub mod release;

use super::irq_latency::{self, Setup as IrqSetup};
use super::qemu;
use super::report;
use crate::build;
use crate::paths;
use crate::profile;
use anyhow::{ensure, Context, Result};
use partita_core::config::response::{Critical, PcpuKind, ResponseCosts};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const NAME: &str = "response";
pub const DEFAULT_SHIFT: u32 = 4;
/// Ker-ONE's counts of 1,048,576 samples take hours under QEMU; these
/// keep a full run within minutes and its maxima steady.
pub const DEFAULT_SAMPLES: u32 = 5000;
pub const DEFAULT_FUZZ_CALLS: u32 = 100_000;

/// Ker-ONE's figures (Cortex-A9 at 667 MHz): µs, and cycles at that clock.
pub const KER_ONE_MHZ: f64 = 667.0;
pub const KER_ONE_CRITICAL_US: f64 = 1.47;
pub const KER_ONE_SCHED_MEAN_US: f64 = 0.98;
pub const KER_ONE_SCHED_MAX_US: f64 = 1.19;
pub const KER_ONE_RELEASE_US: f64 = 0.42;
pub const KER_ONE_RESPONSE_US: f64 = 3.08;

/// What to run; [`Options::default`] is the command line without flags.
#[derive(Clone, Debug)]
pub struct Options {
    pub shift: u32,
    pub runs: u32,
    pub samples: u32,
    pub fuzz_calls: u32,
    /// The ΔVMMcritical setups to boot.
    pub setups: Vec<critical::Setup>,
    /// `<out>/bench/<name>/` gets the report and the boots' logs.
    pub name: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            shift: DEFAULT_SHIFT,
            runs: 1,
            samples: DEFAULT_SAMPLES,
            fuzz_calls: DEFAULT_FUZZ_CALLS,
            setups: critical::Setup::ALL.to_vec(),
            name: NAME.to_string(),
        }
    }
}

/// min / mean / max of one term, in counter ticks (instructions under
/// `-icount 4`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Term {
    pub min: u64,
    pub mean: u64,
    pub max: u64,
}

/// Δ_VM^relEv's boots: the RTOS's tick-to-released-task latency natively,
/// alone on an exclusive pCPU and preempting a busy GPOS.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Release {
    pub native: Term,
    pub alone: Term,
    pub shared: Term,
}

impl Release {
    /// Eq. 3: the VM's worst release minus the native best. The VM's is
    /// the RTOS on its own pCPU; preempting a GPOS adds ΔVMMsched, which
    /// eq. 4 counts apart.
    pub fn delta(&self) -> u64 {
        self.alone.max.saturating_sub(self.native.min)
    }

    fn markdown(&self) -> String {
        let row = |name: &str, t: &Term| format!("| {name} | {} | {} | {} |\n", t.min, t.mean, t.max);
        format!(
            "## Δ_VM^relEv: the RTOS's release latency\n\n\
             From the tick's compare value to the released task's first instruction, in the project's RTOS \
             (`relev=N`).\n\n| setup | min | mean | max |\n|---|--:|--:|--:|\n{}{}{}\n\
             Eq. 3: alone's max minus native's min, {} instructions.\n\n",
            row("native", &self.native),
            row("alone (exclusive pCPU)", &self.alone),
            row("shared (preempting a GPOS)", &self.shared),
            self.delta()
        )
    }
}

/// Each setup's worst boot of `opts.runs`.
fn measure_release(opts: &Options, product: &std::path::Path) -> Result<Release> {
    let term = |setup: release::ReleaseSetup| -> Result<Term> {
        let mut worst: Option<Term> = None;
        for _ in 0..opts.runs {
            let s = release::measure(setup, Some(opts.shift), opts.samples, product, &opts.name)?;
            let w = worst.get_or_insert(Term { min: s.min, mean: s.mean, max: s.max });
            *w = Term { min: w.min.min(s.min), mean: w.mean.max(s.mean), max: w.max.max(s.max) };
        }
        Ok(worst.unwrap_or_default())
    };
    use release::ReleaseSetup::{Alone, Native, Shared};
    Ok(Release { native: term(Native)?, alone: term(Alone)?, shared: term(Shared)? })
}

/// `report.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub shift: u32,
    pub counter_hz: u64,
    pub critical: Vec<critical::Measured>,
    /// ΔVMMsched: the `preempt` setup, its worst over the runs.
    pub sched: Term,
    /// The same setup natively: the timer's own latency, which is not
    /// Partita's.
    pub native_timer: Term,
    /// Δ_VM^relEv's measurements; `None` when they were not run.
    pub release: Option<Release>,
}

/// Runs every term and writes `<out>/bench/response/report.md` and
/// `report.json`.
pub fn run(opts: &Options) -> Result<Report> {
    ensure!(opts.runs >= 1, "--runs must be at least 1");
    ensure!(
        (1..=irq_latency::MAX_SAMPLES).contains(&opts.samples),
        "--samples must be 1 to {}",
        irq_latency::MAX_SAMPLES
    );
    let product = qemu::prepare()?;
    let residency =
        build::build_hypervisor_with(&paths::source(), partita_core::config::model::QEMU_VIRT, Some("residency"))?;
    let mut critical = Vec::new();
    for &setup in &opts.setups {
        eprintln!("response: ΔVMMcritical, {} pCPU", setup.name());
        critical.push(critical::measure(setup, opts.shift, opts.samples, opts.fuzz_calls, &residency, &opts.name)?);
    }
    eprintln!("response: ΔVMMsched, the RTOS preempting a busy GPOS");
    let mut sched = Vec::new();
    let mut native = Vec::new();
    for _ in 0..opts.runs {
        sched.push(irq_latency::measure_one(&opts.name, IrqSetup::Preempt, Some(opts.shift), opts.samples, &product)?);
        native.push(irq_latency::measure_one(&opts.name, IrqSetup::Native, Some(opts.shift), opts.samples, &product)?);
    }
    let worst = |samples: &[irq_latency::Sample]| Term {
        min: samples.iter().map(|s| s.min).min().unwrap_or(0),
        mean: samples.iter().map(|s| s.mean).sum::<u64>() / samples.len() as u64,
        max: samples.iter().map(|s| s.max).max().unwrap_or(0),
    };
    let counter_hz = sched.first().map_or(super::NOMINAL_HZ, |s| s.counter_hz);
    eprintln!("response: Δ_VM^relEv, the RTOS's tick to its released task");
    let release = Some(measure_release(opts, &product)?);
    let report =
        Report { shift: opts.shift, counter_hz, critical, sched: worst(&sched), native_timer: worst(&native), release };
    let date = report::today();
    let files = [
        ("report.md".to_string(), report.markdown(&date)),
        (format!("response-{date}.md"), report.markdown(&date)),
        ("report.json".to_string(), report::json(&report)?),
    ];
    report::write(&paths::bench_out(&opts.name), &files)?;
    Ok(report)
}

impl Report {
    /// Nanoseconds of guest time per instruction under this `-icount`.
    pub fn ns_per_instruction(&self) -> u64 {
        1 << self.shift
    }

    /// ΔVMMsched: the preemption's latency less what the timer takes natively.
    pub fn sched(&self) -> Term {
        let native = self.native_timer.min;
        Term {
            min: self.sched.min.saturating_sub(native),
            mean: self.sched.mean.saturating_sub(native),
            max: self.sched.max.saturating_sub(native),
        }
    }

    /// ΔVMMcritical of the RTOS's pCPU in each setup, and the worst of all.
    pub fn critical(&self) -> Term {
        let worst: Vec<u64> = self.critical.iter().filter_map(|m| m.worst()).map(|p| p.max).collect();
        let means: Vec<u64> = self.critical.iter().filter_map(|m| m.worst()).map(|p| p.mean).collect();
        Term {
            min: worst.iter().copied().min().unwrap_or(0),
            mean: means.iter().copied().max().unwrap_or(0),
            max: worst.iter().copied().max().unwrap_or(0),
        }
    }

    /// Each kind of pCPU's paths and their worst stretches over the setups
    /// of that kind, for `check`.
    pub fn critical_by_path(&self) -> Vec<Critical> {
        let mut worst: BTreeMap<(PcpuKind, String), u64> = BTreeMap::new();
        for m in &self.critical {
            for (path, max) in m.max_by_path() {
                let slot = worst.entry((m.setup.kind(), path)).or_default();
                *slot = (*slot).max(max);
            }
        }
        worst.into_iter().map(|((pcpu, path), max)| Critical { pcpu, path, max }).collect()
    }

    /// The costs `check` reads.
    pub fn costs(&self) -> ResponseCosts {
        ResponseCosts {
            sched: self.sched().max,
            release: self.release.as_ref().map_or(0, |r| r.delta()),
            critical: self.critical_by_path(),
            ns_per_instruction: self.ns_per_instruction(),
        }
    }

    /// ΔResponse (eq. 4) for the RTOS beside a GPOS: the shared pCPU's
    /// ΔVMMcritical (the worse of the GPOS's two setups, with and without
    /// accelerators), ΔVMMsched and Δ_VM^relEv.
    pub fn response(&self) -> u64 {
        let shared = self.critical.iter().filter(|m| m.setup.kind() == PcpuKind::Shared);
        let critical = shared.filter_map(|m| m.worst()).map(|p| p.max).max().unwrap_or(0);
        critical + self.sched().max + self.release.as_ref().map_or(0, |r| r.delta())
    }

    fn us(&self, instructions: u64) -> String {
        format!("{:.3}", (instructions * self.ns_per_instruction()) as f64 / 1000.0)
    }

    /// A few lines for the terminal.
    pub fn summary(&self) -> String {
        let mut text = String::new();
        for m in &self.critical {
            if let Some(worst) = m.worst() {
                let switching = if worst.switched { ", switching" } else { "" };
                text += &format!(
                    "ΔVMMcritical, {} pCPU: {} instructions ({}{switching})\n",
                    m.setup.name(),
                    worst.max,
                    worst.path
                );
            }
        }
        let sched = self.sched();
        text += &format!("ΔVMMsched: mean {} max {} instructions\n", sched.mean, sched.max);
        if let Some(release) = &self.release {
            text += &format!("Δ_VM^relEv: {} instructions\n", release.delta());
        }
        text += &format!(
            "ΔResponse (eq. 4), the RTOS beside a GPOS: {} instructions ({} us)\n",
            self.response(),
            self.us(self.response())
        );
        text
    }

    /// `report.md`: Figure 14's terms beside Ker-ONE's, then every path.
    pub fn markdown(&self, date: &str) -> String {
        let ker_one = |us: f64| format!("{us:.2} µs ({:.0} cycles)", us * KER_ONE_MHZ);
        let row = |name: &str, t: Term, ker: String, target: &str| {
            format!("| {name} | {} | {} | {} | {} µs | {ker} | {target} |\n", t.min, t.mean, t.max, self.us(t.max))
        };
        let mut md = format!(
            "# What Partita adds to an RTOS task's response ({date})\n\n\
             `partita bench response --icount {}`: Ker-ONE's Figure 14 and equations 3-4 on QEMU `virt`. Under \
             `-icount {}` one counter tick is one instruction ({} ns of guest time). Figures are instructions; \
             Ker-ONE's are a Cortex-A9 at 667 MHz.\n\n\
             | term | min | mean | max | max (µs) | Ker-ONE | target |\n|---|--:|--:|--:|--:|--:|--:|\n",
            self.shift,
            self.shift,
            self.ns_per_instruction()
        );
        md += &row(
            "ΔVMMcritical (any pCPU of a high-criticality vCPU)",
            self.critical(),
            ker_one(KER_ONE_CRITICAL_US),
            "≤ 1,500",
        );
        md += &row(
            "ΔVMMsched (RTOS preempting a GPOS)",
            self.sched(),
            format!("{} mean, {}", ker_one(KER_ONE_SCHED_MEAN_US), ker_one(KER_ONE_SCHED_MAX_US)),
            "≤ 400 mean",
        );
        match &self.release {
            Some(release) => {
                let t = Term { min: release.delta(), mean: release.delta(), max: release.delta() };
                md += &row("Δ_VM^relEv (eq. 3)", t, ker_one(KER_ONE_RELEASE_US), "");
            }
            None => md += "| Δ_VM^relEv (eq. 3) | - | - | not measured | | | |\n",
        }
        let r = self.response();
        md += &format!(
            "| **ΔResponse (eq. 4)**, the RTOS beside a GPOS | | | **{r}** | {} µs | {} | ≤ 2,500 |\n\n",
            self.us(r),
            ker_one(KER_ONE_RESPONSE_US)
        );
        md += "ΔVMMsched is the `preempt` setup of `bench irq-latency` (the RTOS waits in WFI while a GPOS spins on its pCPU; each sample is \
               the counter in the RTOS's IRQ vector minus the compare value) less the native timer's own latency \
               (";
        md += &format!("{} instructions). ΔVMMcritical is each EL2 stretch from the exception's entry to its `eret` (or to a WFI, or to a point where a long piece of work looks for interrupts), kept per path by a hypervisor built with its `residency` feature, plus the {} instructions of entry and exit outside the hooks; in its row, min is the shortest of the kinds of pCPU's longest stretches, mean the highest mean of a longest path, max the longest stretch of all.\n\n", self.native_timer.min, critical::OUTSIDE);
        if let Some(release) = &self.release {
            md += &release.markdown();
        }
        md += "## ΔVMMcritical per kind of pCPU\n\nOne boot each, the RTOS stand-in (`rt`) on pCPU 1 and only that pCPU busy. The ten longest paths of each; `switch` marks stretches that switched vCPUs.\n\n";
        for m in &self.critical {
            md += &format!(
                "### {}\n\n{} stretch(es) left out for having overlapped another pCPU's.\n\n\
                 | path | switch | n | mean | max |\n|---|---|--:|--:|--:|\n",
                m.setup.name(),
                m.overlapped
            );
            for p in m.paths.iter().take(10) {
                md += &format!(
                    "| {} | {} | {} | {} | {} |\n",
                    p.path,
                    if p.switched { "yes" } else { "" },
                    p.count,
                    p.mean,
                    p.max
                );
            }
            md += "\n";
        }
        md
    }
}

/// Writes the worst case of each term to `platforms/qemu-virt.toml`.
pub fn save(report: &Report, date: &str) -> Result<std::path::PathBuf> {
    let path = paths::source().join("platforms").join("qemu-virt.toml");
    let previous = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let measured = format!("partita bench response --icount {} --save, {date}: the worst of each term", report.shift);
    let text = profile::with_response_costs(&previous, &report.costs(), &measured);
    profile::parse(&path.display().to_string(), &text)?;
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
