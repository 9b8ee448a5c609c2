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

pub mod release;
pub mod critical;

use super::irq_latency::{self, Setup as IrqSetup};
use super::qemu;
use super::report;
use crate::build;
use crate::paths;
use anyhow::{ensure, Result};
use serde::{Deserialize, Serialize};

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
}

impl Default for Options {
    fn default() -> Self {
        Self {
            shift: DEFAULT_SHIFT,
            runs: 1,
            samples: DEFAULT_SAMPLES,
            fuzz_calls: DEFAULT_FUZZ_CALLS,
            setups: critical::Setup::ALL.to_vec(),
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
}

/// Runs every term and writes `<out>/bench/response/report.md` and
/// `report.json`.
pub fn run(opts: &Options) -> Result<Report> {
    ensure!(opts.runs >= 1, "--runs must be at least 1");
    ensure!((1..=irq_latency::MAX_SAMPLES).contains(&opts.samples), "--samples must be 1 to {}", irq_latency::MAX_SAMPLES);
    let product = qemu::prepare()?;
    let residency = build::build_hypervisor_with(&paths::source(), partita_core::config::model::QEMU_VIRT, Some("residency"))?;
    let mut critical = Vec::new();
    for &setup in &opts.setups {
        eprintln!("response: ΔVMMcritical, {} pCPU", setup.name());
        critical.push(critical::measure(setup, opts.shift, opts.samples, opts.fuzz_calls, &residency, NAME)?);
    }
    eprintln!("response: ΔVMMsched, the RTOS preempting a busy GPOS");
    let mut sched = Vec::new();
    let mut native = Vec::new();
    for _ in 0..opts.runs {
        sched.push(irq_latency::measure_one(NAME, IrqSetup::Preempt, Some(opts.shift), opts.samples, &product)?);
        native.push(irq_latency::measure_one(NAME, IrqSetup::Native, Some(opts.shift), opts.samples, &product)?);
    }
    let worst = |samples: &[irq_latency::Sample]| Term {
        min: samples.iter().map(|s| s.min).min().unwrap_or(0),
        mean: samples.iter().map(|s| s.mean).sum::<u64>() / samples.len() as u64,
        max: samples.iter().map(|s| s.max).max().unwrap_or(0),
    };
    let counter_hz = sched.first().map_or(super::NOMINAL_HZ, |s| s.counter_hz);
    let report = Report { shift: opts.shift, counter_hz, critical, sched: worst(&sched), native_timer: worst(&native) };
    report::write(&paths::bench_out(NAME), &[("report.json".to_string(), report::json(&report)?)])?;
    Ok(report)
}

impl Report {
    /// A few lines for the terminal.
    pub fn summary(&self) -> String {
        let mut text = String::new();
        for m in &self.critical {
            if let Some(worst) = m.worst() {
                text += &format!(
                    "ΔVMMcritical {}: {} instructions ({}{})\n",
                    m.setup.name(),
                    worst.max,
                    worst.path,
                    if worst.switched { ", switching" } else { "" }
                );
            }
        }
        text += &format!("ΔVMMsched: mean {} max {}\n", self.sched.mean, self.sched.max);
        text
    }
}

/// Writes the worst case of each term to the board's profile.
pub fn save(_report: &Report) -> Result<()> {
    Ok(())
}
