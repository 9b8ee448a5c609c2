//! Booting the RTOS: the boots each suite takes, the machine of each setup
//! (natively, or a configuration generated for Partita), and a measured run
//! of every setup, interleaved.

use super::parse::{parse_output, Expect, Output};
use super::{Options, Queue, Setup, Suite, BUSY_BOOTARGS, LAST_LINE, RTOS, TM_TESTS};
use crate::bench::qemu::{self, Until};
use crate::bench::Pass;
use crate::config::raw::{RawConfig, RawCriticality};
use crate::guests;
use crate::paths;
use crate::run::{self, RunOptions, Source};
use anyhow::{ensure, Context, Result};
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a boot may take beyond its benchmarks' guest time: the boot itself
/// and the scheduler probe, whose length the guest decides.
const BOOT_ALLOWANCE: Duration = Duration::from_secs(60);
/// Wall-clock guest time runs slower than the host's when QEMU's threads
/// outnumber its cores.
const SLOWDOWN: u32 = 3;
/// The RTOS's line that ends a boot.
const DONE: Until = Until { line: LAST_LINE, is_it: |said| said.trim() == LAST_LINE };

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

/// The Partita configuration of a setup. pCPU 0 is Partita's own; the RTOS
/// is on pCPU 1 in every setup, so only what is beside it changes.
pub fn config(setup: Setup, bootargs: &str, rtos: &Path, busy: &Path) -> RawConfig {
    let part = |name: &str, criticality, cpu: u32, bootargs: &str, image: &Path| {
        qemu::partition(name, &[cpu], bootargs, image).criticality(criticality)
    };
    let rtos = part(RTOS, RawCriticality::High, 1, bootargs, rtos);
    let busy = |name: &str, cpu: u32| part(name, RawCriticality::Low, cpu, BUSY_BOOTARGS, busy);
    match setup {
        Setup::Loaded => RawConfig::new().cpus(3).partition(rtos.exclusive()).partition(busy("busy", 2)),
        Setup::Shared => RawConfig::new().cpus(2).partition(rtos).partition(busy("gpos", 1)),
        Setup::Native | Setup::Alone => RawConfig::new().cpus(2).partition(rtos.exclusive()),
        Setup::Direct => RawConfig::new().cpus(2).partition(rtos.exclusive().direct()),
    }
}

/// Boots the RTOS in any setup, logging into `<out>/bench/<name>/<variant>/`.
pub struct Machine {
    hypervisor: PathBuf,
    name: String,
}

impl Machine {
    /// Builds the guests and the hypervisor.
    pub fn new(name: &str) -> Result<Self> {
        let hypervisor = qemu::prepare()?;
        let rtos = guests::image("rtos.bin");
        ensure!(rtos.is_file(), "{} is missing: guests/rtos did not build it", rtos.display());
        Ok(Machine { hypervisor, name: name.to_string() })
    }

    pub fn log_dir(&self, variant: &str) -> PathBuf {
        paths::bench_out(&self.name).join(variant)
    }

    /// Boots until `bench done`, where QEMU is killed; a boot that ends
    /// otherwise still returns what it printed, with why. Natively the RTOS
    /// is QEMU's kernel (started at EL2; it drops to EL1 itself) on the same
    /// `virt` with EL2 and GICv3 that Partita gets, and its lines are in
    /// `hypervisor.log`, as `partita run` files untagged lines.
    pub fn boot(
        &self,
        setup: Setup,
        variant: &str,
        bootargs: &str,
        icount: Option<u32>,
        limit: Duration,
    ) -> Result<Capture> {
        let dir = self.log_dir(variant);
        let followed = if setup == Setup::Native {
            let native = qemu::native_command(&guests::image("rtos.bin"), true, 2, bootargs, icount);
            qemu::follow(native, &[], Source::Hypervisor, &dir, DONE, limit)?
        } else {
            let images = (guests::image("rtos.elf"), guests::image("test-guest.elf"));
            let config = config(setup, bootargs, &images.0, &images.1);
            let (config, output) = qemu::generated(&self.name, variant, &config, &self.hypervisor)?;
            let names: Vec<String> = config.system.partitions.iter().map(|p| p.name.clone()).collect();
            let index = names.iter().position(|n| n == RTOS).context("no rtos partition")?;
            let command = run::qemu_command(&output, &config.system, &RunOptions { icount, ..RunOptions::default() });
            qemu::follow(command, &names, Source::Partition(index), &dir, DONE, limit)?
        };
        Ok(Capture { text: followed.text, failure: followed.failure, dir })
    }
}

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
        let out = paths::out();
        let base = out.parent().unwrap_or(&out);
        for (spec, capture) in boots {
            let read = parse_output(&capture.text);
            let mut found = read.problems(&spec.expect);
            if let Some(failure) = &capture.failure {
                // "No `bench done`" says less than why there was none.
                found.retain(|p| !p.contains(LAST_LINE));
                found.push(failure.clone());
            }
            // Relative, so that a report kept in the repository names no machine's paths.
            let logs = capture.dir.strip_prefix(base).unwrap_or(&capture.dir).display();
            problems.extend(found.into_iter().map(|p| format!("{}: {p} (logs in {logs})", spec.label)));
            output.extend(read);
        }
        Run { pass, setup, run, output, problems }
    }
}

/// Boots every spec of the suite in every setup, pass and run: a pass's
/// run 1 of every setup, then its run 2, and so on.
pub(super) fn measure(
    opts: &Options,
    machine: &Machine,
    specs: &[BootSpec],
    passes: &[Pass],
    progress: &ProgressBar,
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
