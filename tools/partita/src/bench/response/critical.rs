//! ΔVMMcritical: the longest stretch Partita runs at EL2 with interrupts
//! masked, per path, on each kind of pCPU a high-criticality vCPU can run
//! on. Each setup boots a hypervisor built with the `residency` feature
//! under `-icount` and reads the `residency:` lines it prints at power-off.
//!
//! Only one pCPU is busy in each boot. Under `-icount` QEMU runs every
//! vCPU in one thread and one clock counts everybody's instructions, so a
//! second busy pCPU would add its turn to whatever stretch it interrupted.

use crate::bench::qemu;
use crate::config::raw::{RawAction, RawChannel, RawConfig, RawCriticality, RawHealth};
use crate::guests;
use crate::run::RunOptions;
use anyhow::{bail, Context, Result};
use partita_core::config::response::PcpuKind;
use partita_core::residency::{name, path, Line, LEFT_OUT};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// What lies outside a stretch as the hypervisor measures it: the vector's
/// first 17 instructions, the hooks' calls, the restore and the `eret`
/// (`partita_arch::residency`). Added to every figure here.
pub const OUTSIDE: u64 = 40;
/// A port's largest message (`docs/configuration.md`, channels).
pub const LARGEST_MESSAGE: u64 = 4096;
/// The partition whose pCPU the figures are for.
pub const MEASURED: &str = "rt";

/// A kind of pCPU the RTOS can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Setup {
    /// Fixed priority, shared with a GPOS that drives every path it can:
    /// random hypercalls on ports of the largest message, a partition that
    /// its watchdog restarts again and again, SGIs, list-register overflow,
    /// distributor writes.
    Shared,
    /// The RTOS alone on an exclusive pCPU, virtual delivery.
    Exclusive,
    /// The same with direct delivery.
    Direct,
    /// A cyclic pCPU: the RTOS and the GPOS in slots of a plan.
    Cyclic,
    /// Fixed priority, shared with a GPOS that runs jobs on two
    /// accelerators of one PRR, the fabric's logic on Partita's pCPU: every
    /// allocation path (assign, preempt, reconfigure, the signals).
    Fabric,
}

impl Setup {
    pub const ALL: [Setup; 5] = [Setup::Shared, Setup::Exclusive, Setup::Direct, Setup::Cyclic, Setup::Fabric];

    pub fn name(self) -> &'static str {
        match self {
            Setup::Shared => "shared",
            Setup::Exclusive => "exclusive",
            Setup::Direct => "direct",
            Setup::Cyclic => "cyclic",
            Setup::Fabric => "fabric",
        }
    }

    /// The kind of pCPU `check` files its figures under: the fabric's
    /// setup is a shared pCPU whose partitions have accelerators.
    pub fn kind(self) -> PcpuKind {
        match self {
            Setup::Shared | Setup::Fabric => PcpuKind::Shared,
            Setup::Exclusive => PcpuKind::Exclusive,
            Setup::Direct => PcpuKind::Direct,
            Setup::Cyclic => PcpuKind::Cyclic,
        }
    }
}

/// One path's figures on the measured pCPU, in instructions (counter ticks
/// under `-icount 4`), [`OUTSIDE`] included.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathFigures {
    pub path: String,
    pub switched: bool,
    pub count: u64,
    pub mean: u64,
    pub max: u64,
}

/// What one setup's boot showed on the measured pCPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub setup: Setup,
    pub pcpu: usize,
    /// Largest first; without the pCPU's boot, which comes before any
    /// guest runs.
    pub paths: Vec<PathFigures>,
    /// Stretches left out for having overlapped another pCPU's at EL2.
    pub overlapped: u64,
}

impl Measured {
    /// ΔVMMcritical of this pCPU: its longest stretch.
    pub fn worst(&self) -> Option<&PathFigures> {
        self.paths.first()
    }

    /// Each path's largest stretch, switching or not.
    pub fn max_by_path(&self) -> BTreeMap<String, u64> {
        let mut by_path = BTreeMap::new();
        for p in &self.paths {
            let max = by_path.entry(p.path.clone()).or_insert(0);
            *max = p.max.max(*max);
        }
        by_path
    }
}

/// The measured pCPU's stretches from a hypervisor log, largest first.
pub fn parse(log: &str, pcpu: usize) -> Result<Vec<PathFigures>> {
    let mut paths: Vec<PathFigures> = log
        .lines()
        .filter_map(Line::parse)
        .filter(|line| line.cpu == pcpu && line.name != name(usize::from(path::BOOT)))
        .map(|line| PathFigures {
            path: line.name.to_string(),
            switched: line.switched,
            count: line.figures.count,
            mean: line.figures.mean() + OUTSIDE,
            max: line.figures.max + OUTSIDE,
        })
        .collect();
    if paths.is_empty() {
        bail!("no `residency:` line for pCPU {pcpu}: was the hypervisor built with its `residency` feature?");
    }
    paths.sort_by(|a, b| b.max.cmp(&a.max).then_with(|| a.path.cmp(&b.path)));
    Ok(paths)
}

/// How many of the measured pCPU's stretches the hypervisor left out.
pub fn overlapped(log: &str, pcpu: usize) -> u64 {
    let prefix = format!("{LEFT_OUT}{pcpu}: ");
    let count =
        log.lines().find_map(|l| l[l.find(&prefix)? + prefix.len()..].strip_suffix(" overlapped")?.parse().ok());
    count.unwrap_or(0)
}

/// The RTOS stand-in: the test guest waiting in WFI for each of its timer
/// interrupts, so that each one preempts whatever runs.
fn rt_bootargs(samples: u32) -> String {
    format!("timer_hz=1000 timer_ticks=1 irq-bench={samples} irq-bench-wait=1 ticks=1 period_ms=1")
}

/// The configuration of `setup`, two pCPUs: Partita's and the measured one.
pub fn config(setup: Setup, samples: u32, fuzz_calls: u32) -> RawConfig {
    let guest = guests::image("test-guest.elf");
    let part = |name: &str, bootargs: &str| qemu::partition(name, &[1], bootargs, &guest);
    let rt = part(MEASURED, &rt_bootargs(samples)).criticality(RawCriticality::High);
    let machine = RawConfig::new().cpus(2);
    match setup {
        Setup::Exclusive => machine.partition(rt.exclusive()),
        Setup::Direct => machine.partition(rt.exclusive().direct()),
        Setup::Shared => stress(machine.partition(rt.priority(200)), &guest, fuzz_calls),
        Setup::Cyclic => cyclic(machine.partition(rt), &guest, fuzz_calls),
        Setup::Fabric => fabric(machine.partition(rt.priority(200)), &guest, samples),
    }
}

/// Everything on the measured pCPU beside the RTOS: random hypercalls on
/// every kind of channel at the largest message, their peer, a partition
/// restarted by its watchdog until the RTOS is done, and one that sends
/// SGIs, overflows its list registers and writes the distributor.
fn stress(machine: RawConfig, guest: &Path, fuzz_calls: u32) -> RawConfig {
    let part = |name: &str, bootargs: &str| qemu::partition(name, &[1], bootargs, guest);
    let ignore = RawHealth {
        illegal_hypercall: Some(RawAction::Ignore),
        reported: Some(RawAction::Ignore),
        ..RawHealth::default()
    };
    let restart = RawHealth { watchdog: Some(RawAction::Restart), ..RawHealth::default() };
    // rt is partition 0: the others end once it has.
    machine
        .partition(part("fuzzer", &format!("fuzz={fuzz_calls} fuzz_seed=20261128 ticks=1 period_ms=1")).health(ignore))
        .partition(part("peer", "until-off=0 ticks=0 period_ms=50"))
        .partition(part("wd", "watchdog-kicks=10 kick_ms=20 until-off=0").watchdog_us(100_000).health(restart))
        .partition(part("traps", "lr-overflow=1 gicd-attack=41 mask-spin=50 sgi=100 ticks=1 period_ms=1"))
        .channel(RawChannel::queuing("out", "fuzzer", "peer", LARGEST_MESSAGE, 8))
        .channel(RawChannel::queuing("in", "peer", "fuzzer", LARGEST_MESSAGE, 8))
        .channel(RawChannel::sampling("state", "fuzzer", &["peer"], LARGEST_MESSAGE, 10_000))
        .channel(RawChannel::shared_memory("window", &["fuzzer", "peer"], 0x7000_0000, 64 << 10).doorbell(48))
}

/// The RTOS and the fuzzer in 1 ms slots of a 2 ms frame on pCPU 1.
fn cyclic(machine: RawConfig, guest: &Path, fuzz_calls: u32) -> RawConfig {
    use crate::config::raw::{RawCore, RawPlan};
    let ignore = RawHealth { illegal_hypercall: Some(RawAction::Ignore), ..RawHealth::default() };
    let fuzzer =
        qemu::partition("fuzzer", &[1], &format!("fuzz={fuzz_calls} fuzz_seed=20261128 ticks=1 period_ms=1"), guest)
            .health(ignore);
    let core = RawCore::new(1, 2000).slot(MEASURED, 0, 0, 1000).slot("fuzzer", 0, 1000, 1000);
    machine.partition(fuzzer).plan(RawPlan::new("main").core(core))
}

/// The GPOS's jobs alternate between qam16 and qam64, which share a PRR, so
/// that each is reconfigured in turn; their number follows the RTOS's
/// samples, so that both end together.
fn fabric(machine: RawConfig, guest: &Path, samples: u32) -> RawConfig {
    use crate::config::raw::{Micros, RawFabric, RawVirtualDevice};
    let jobs = (samples / 25).max(4);
    let bootargs = format!(
        "ticks=1 period_ms=1 acc=0xb000000 acc-fn=qam16 acc-frames=4 acc-jobs={jobs} acc-seed=7 acc-gap-us=300 \
         acc2=0xb001000 acc2-fn=qam64"
    );
    let gpos = qemu::partition("gpos", &[1], &bootargs, guest)
        .accelerator(RawVirtualDevice::new("qam16"))
        .accelerator(RawVirtualDevice::new("qam64"));
    let fabric = RawFabric { cpu: Some(0), hold: Some(Micros(200)), ..RawFabric::default() }
        .prr("prr", 8, 103_680, &["qam16", "qam64"])
        .prr("others", 13, 103_680, &["fft512", "fft1024"]);
    machine.fabric(fabric).partition(gpos)
}

/// Boots `setup` on the residency build and reads the measured pCPU.
pub fn measure(
    setup: Setup,
    shift: u32,
    samples: u32,
    fuzz_calls: u32,
    hypervisor: &Path,
    name: &str,
) -> Result<Measured> {
    let variant = format!("critical-{}", setup.name());
    let (config, output) = qemu::generated(name, &variant, &config(setup, samples, fuzz_calls), hypervisor)?;
    let opts = RunOptions { icount: Some(shift), seconds: Some(900), ..RunOptions::default() };
    let report = qemu::to_power_off(&output, &config.system, &opts, true)
        .with_context(|| format!("the {} setup of ΔVMMcritical", setup.name()))?;
    let log = std::fs::read_to_string(&report.hypervisor_log)
        .with_context(|| format!("cannot read {}", report.hypervisor_log.display()))?;
    Ok(Measured { setup, pcpu: 1, paths: parse(&log, 1)?, overlapped: overlapped(&log, 1) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_gives_the_measured_pcpus_paths_largest_first() {
        let log = "\
[partita] residency: cpu 0 loop switch 0 n 3 mean 10 max 900
[partita] residency: cpu 1 hvc-port-send switch 0 n 10 mean 300 max 700
[partita] residency: cpu 1 hyp-timer switch 1 n 5 mean 600 max 1200
[partita] state check: ok (12 checks)
[partita] residency: cpu 1 hvc-port-send switch 1 n 2 mean 800 max 900
[partita] residency: cpu 1 boot switch 0 n 1 mean 90000 max 90000
[partita] residency left out on cpu 1: 3 overlapped
";
        let paths = parse(log, 1).expect("parses");
        let maxima: Vec<(&str, u64)> = paths.iter().map(|p| (p.path.as_str(), p.max)).collect();
        let o = OUTSIDE;
        assert_eq!(maxima, [("hyp-timer", 1200 + o), ("hvc-port-send", 900 + o), ("hvc-port-send", 700 + o)]);
        assert_eq!(overlapped(log, 1), 3);
        assert_eq!(overlapped(log, 0), 0);
        let measured = Measured { setup: Setup::Shared, pcpu: 1, paths, overlapped: 3 };
        assert_eq!(measured.worst().map(|p| p.max), Some(1200 + o));
        assert_eq!(measured.max_by_path().get("hvc-port-send"), Some(&(900 + o)));
    }

    #[test]
    fn a_log_without_residency_says_which_build_it_needs() {
        let error = parse("[partita] state check: ok\n", 1).unwrap_err().to_string();
        assert!(error.contains("`residency` feature"), "{error}");
    }
}
