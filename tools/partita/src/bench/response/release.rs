//! Δ_VM^relEv (Ker-ONE eq. 3): the RTOS's tick-to-released-task latency.
//!
//! The RTOS's `relev=N` mode (`guests/rtos/bench/relev.c`) puts its most
//! urgent task to sleep one tick at a time, N times, and times each release
//! from the compare value of the tick that woke it to the task running
//! again: the timer event, the interrupt, the tick handler, the scheduler
//! and the switch. [`measure`] boots it in one [`ReleaseSetup`] and reads
//! back the statistics ([`parse`]); eq. 3 is a virtualized setup's worst
//! release minus the best native one ([`delta_rel_ev`]).

use crate::bench::qemu::{self, Until};
use crate::bench::{Mode, NOMINAL_HZ};
use crate::config::raw::{RawConfig, RawCriticality};
use crate::guests;
use crate::paths;
use crate::run::{self, RunOptions, Source};
use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// The most releases the guest takes in one boot.
pub const MAX_SAMPLES: u32 = 1_000_000;
/// A release takes a few thousand counter ticks at worst, so at 1 kHz
/// (62,500 ticks a period) none runs into the next tick; and under
/// `-icount 4` the busy neighbour of `shared` runs only 62,500
/// instructions between two releases, which keeps 10,000 of them to
/// seconds of the host's time.
pub const TICK_HZ: u32 = 1000;
/// The partition the RTOS runs in under Partita.
const RTOS: &str = "rtos";
/// What shares the RTOS's pCPU in `shared`: the test guest spinning with
/// its interrupts masked for ten minutes, longer than any run, so that
/// every release is the RTOS taking the pCPU back from a busy GPOS that
/// would never give it up.
const HOG_BOOTARGS: &str = "mask-spin=600000 ticks=1";
/// The RTOS's last line. In `shared` the machine never powers off by
/// itself, so QEMU is stopped there.
const LAST_LINE: &str = "bench done";
/// What the boot itself may take, beyond the releases' guest time.
const BOOT_ALLOWANCE: Duration = Duration::from_secs(60);
/// Wall-clock guest time runs slower than the host's when QEMU's threads
/// outnumber its cores.
const SLOWDOWN: u32 = 3;

/// Where the RTOS runs; on pCPU 1 in both setups under Partita, so that
/// only what is beside it differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReleaseSetup {
    /// QEMU alone, the RTOS as its kernel.
    Native,
    /// Partita, the RTOS of high criticality and exclusive on pCPU 1.
    Alone,
    /// Partita, the RTOS of high criticality sharing pCPU 1 with a spinning
    /// low-criticality test guest.
    Shared,
}

impl ReleaseSetup {
    pub const ALL: [ReleaseSetup; 3] = [ReleaseSetup::Native, ReleaseSetup::Alone, ReleaseSetup::Shared];

    pub fn name(self) -> &'static str {
        match self {
            ReleaseSetup::Native => "native",
            ReleaseSetup::Alone => "alone",
            ReleaseSetup::Shared => "shared",
        }
    }
}

/// One boot's releases, in counter ticks (one per instruction under
/// `-icount 4` at 62.5 MHz).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseSample {
    /// The releases timed.
    pub n: u64,
    pub min: u64,
    /// Rounded down.
    pub mean: u64,
    pub max: u64,
    /// Releases a later tick overtook (one took a whole period), counted
    /// but not timed; not in `n`.
    pub late: u64,
    /// Bucket `b` counts the latencies of `b` significant bits (0; 1; 2-3;
    /// 4-7; ...), the last one also every longer latency.
    pub hist: Vec<u64>,
    pub counter_hz: u64,
}

/// Ker-ONE's eq. 3: the worst release of a virtualized setup minus the
/// best native one, in counter ticks; negative if Partita's worst beat the
/// native best.
pub fn delta_rel_ev(virtualized: &ReleaseSample, native: &ReleaseSample) -> i64 {
    virtualized.max as i64 - native.min as i64
}

/// The RTOS's bootargs for `samples` releases.
pub fn bootargs(samples: u32) -> String {
    format!("relev={samples} tick_hz={TICK_HZ}")
}

/// The Partita configuration of a setup; `None` for `native`. pCPU 0 is
/// Partita's own, and a second pCPU is all the RTOS needs.
pub fn config(setup: ReleaseSetup, bootargs: &str, rtos: &Path, hog: &Path) -> Option<RawConfig> {
    let rtos = qemu::partition(RTOS, &[1], bootargs, rtos).criticality(RawCriticality::High);
    let machine = RawConfig::new().cpus(2);
    match setup {
        ReleaseSetup::Native => None,
        ReleaseSetup::Alone => Some(machine.partition(rtos.exclusive())),
        ReleaseSetup::Shared => {
            let hog = qemu::partition("gpos", &[1], HOG_BOOTARGS, hog).criticality(RawCriticality::Low);
            Some(machine.partition(rtos).partition(hog))
        }
    }
}

/// Boots the RTOS (from the built guests) in `setup` with `samples`
/// releases, under `-icount shift=N` if `icount` asks for it, and returns
/// what it measured. `hypervisor` is Partita's ELF (unused natively); the
/// logs go into `<out>/bench/<name>/<mode>-<setup>/`, the configuration
/// into `target/bench/<name>-<mode>-<setup>.toml`.
pub fn measure(
    setup: ReleaseSetup,
    icount: Option<u32>,
    samples: u32,
    hypervisor: &Path,
    name: &str,
) -> Result<ReleaseSample> {
    ensure!((1..=MAX_SAMPLES).contains(&samples), "samples must be 1 to {MAX_SAMPLES}");
    let rtos = guests::image("rtos.bin");
    ensure!(rtos.is_file(), "{} is missing: guests/rtos did not build it", rtos.display());
    let mode = if icount.is_some() { Mode::Icount } else { Mode::Wall };
    let variant = format!("{}-{}", mode.name(), setup.name());
    let dir = paths::bench_out(name).join(&variant);
    let args = bootargs(samples);
    let until = Until { line: LAST_LINE, is_it: |said| said.trim() == LAST_LINE };
    let limit = BOOT_ALLOWANCE + Duration::from_millis(u64::from(samples) * 1000 / u64::from(TICK_HZ)) * SLOWDOWN;
    let images = (guests::image("rtos.elf"), guests::image("test-guest.elf"));
    let followed = match config(setup, &args, &images.0, &images.1) {
        None => {
            // Started at EL2 on the same `virt` Partita gets; it drops to EL1 itself.
            let native = qemu::native_command(&rtos, true, 2, &args, icount);
            qemu::follow(native, &[], Source::Hypervisor, &dir, until, limit)
        }
        Some(config) => {
            let (config, output) = qemu::generated(name, &variant, &config, hypervisor)?;
            let names: Vec<String> = config.system.partitions.iter().map(|p| p.name.clone()).collect();
            let index = names.iter().position(|n| n == RTOS).context("no rtos partition")?;
            let command = run::qemu_command(&output, &config.system, &RunOptions { icount, ..RunOptions::default() });
            qemu::follow(command, &names, Source::Partition(index), &dir, until, limit)
        }
    };
    let context = || format!("relev, {} setup, logs in {}", setup.name(), dir.display());
    let followed = followed.with_context(context)?;
    if let Some(failure) = followed.failure {
        return Err(anyhow::anyhow!(failure)).with_context(context);
    }
    let sample = parse(&followed.text).with_context(context)?;
    ensure!(
        sample.n + sample.late == u64::from(samples),
        "{} setup: {} releases timed and {} late of the {samples} asked for",
        setup.name(),
        sample.n,
        sample.late
    );
    Ok(sample)
}

/// Reads the RTOS's `relev:` lines: `relev: n <n> min <a> mean <b> max <c>
/// counts`, `relev hist: ...`, and if there are any, `relev: <k> late`;
/// the counter frequency from the first line, `relev: <N> releases, tick
/// <t> Hz, cntfrq <f>`.
pub fn parse(text: &str) -> Result<ReleaseSample> {
    let numbers = |prefix: &str| -> Option<Vec<u64>> {
        let line = text.lines().map(str::trim).find(|l| l.starts_with(prefix))?;
        line[prefix.len()..]
            .split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().ok())
            .collect()
    };
    let late = |line: &str| line.trim().strip_prefix("relev: ")?.strip_suffix(" late")?.parse::<u64>().ok();
    let late = text.lines().find_map(late).unwrap_or(0);
    if let Some(none) = text.lines().find(|l| l.trim().starts_with("relev: n 0,")) {
        bail!("no release was timed: `{}`", none.trim());
    }
    let Some(&[n, min, mean, max]) = numbers("relev: n ").as_deref() else {
        bail!("no `relev: n <n> min <a> mean <b> max <c> counts` line");
    };
    let hist = numbers("relev hist:").context("no `relev hist:` line")?;
    let counter_hz = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("relev: ")?.split_once(" cntfrq ")?.1.trim().parse().ok())
        .unwrap_or(NOMINAL_HZ);
    ensure!(n > 0 && min <= mean && mean <= max, "the statistics do not add up: n {n} min {min} mean {mean} max {max}");
    ensure!(hist.iter().sum::<u64>() == n, "the histogram holds {} releases, not {n}", hist.iter().sum::<u64>());
    Ok(ReleaseSample { n, min, mean, max, late, hist, counter_hz })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "hello\nrelev: 200 releases, tick 1000 Hz, cntfrq 62500000\n\
                          relev: n 198 min 251 mean 260 max 1391 counts\nrelev: 2 late\n\
                          relev hist: 0 0 0 0 0 0 0 0 190 0 7 1 0 0 0 0 0 0 0 0 0 0 0 0\nbench done\n";

    #[test]
    fn the_statistics_late_releases_histogram_and_frequency_are_read() {
        let sample = parse(OUTPUT).unwrap();
        assert_eq!((sample.n, sample.min, sample.mean, sample.max, sample.late), (198, 251, 260, 1391, 2));
        assert_eq!((sample.hist.len(), sample.hist[8], sample.counter_hz), (24, 190, 62_500_000));
        let json = serde_json::to_string(&sample).unwrap();
        assert_eq!(serde_json::from_str::<ReleaseSample>(&json).unwrap(), sample);
    }

    #[test]
    fn no_late_line_is_none_late_and_no_frequency_is_the_nominal_one() {
        let text = "relev: n 3 min 5 mean 6 max 9 counts\nrelev hist: 0 0 0 2 1\n";
        let sample = parse(text).unwrap();
        assert_eq!((sample.late, sample.counter_hz, sample.hist), (0, NOMINAL_HZ, vec![0, 0, 0, 2, 1]));
    }

    #[test]
    fn missing_or_inconsistent_lines_are_errors() {
        let error = |text: &str| parse(text).unwrap_err().to_string();
        assert!(error("relev: n 0, 7 late\nbench done\n").contains("no release was timed"));
        assert!(error("bench done\n").contains("no `relev: n"));
        assert!(error("relev: n 3 min 5 mean 6 max 9 counts\n").contains("no `relev hist:`"));
        assert!(error("relev: n 3 min 7 mean 6 max 9 counts\nrelev hist: 3\n").contains("do not add up"));
        assert!(error("relev: n 3 min 5 mean 6 max 9 counts\nrelev hist: 2\n").contains("holds 2 releases"));
        assert!(error("relev: n 3 min 5 mean 6 counts\nrelev hist: 3\n").contains("no `relev: n"));
    }

    #[test]
    fn eq_3_is_the_virtualized_worst_minus_the_native_best() {
        let sample =
            |min, max| ReleaseSample { n: 1, min, mean: min, max, late: 0, hist: vec![1], counter_hz: NOMINAL_HZ };
        assert_eq!(delta_rel_ev(&sample(900, 1400), &sample(251, 260)), 1149);
        assert_eq!(delta_rel_ev(&sample(100, 200), &sample(251, 260)), -51);
    }

    #[test]
    fn the_rtos_is_high_on_pcpu_1_and_shares_it_only_in_shared() {
        let (rtos, hog) = (Path::new("rtos.elf"), Path::new("hog.elf"));
        assert!(config(ReleaseSetup::Native, "relev=1", rtos, hog).is_none());
        let alone = config(ReleaseSetup::Alone, &bootargs(5), rtos, hog).unwrap();
        let shared = config(ReleaseSetup::Shared, &bootargs(5), rtos, hog).unwrap();
        for config in [&alone, &shared] {
            let rtos = &config.partition[0];
            assert_eq!((rtos.name.as_str(), rtos.cpus.as_slice()), (RTOS, &[1][..]));
            assert_eq!(
                (rtos.criticality, rtos.bootargs.as_deref()),
                (Some(RawCriticality::High), Some("relev=5 tick_hz=1000"))
            );
            assert_eq!(config.platform.cpus, Some(2));
        }
        assert_eq!((alone.partition.len(), alone.partition[0].exclusive), (1, Some(true)));
        let gpos = &shared.partition[1];
        assert_eq!((gpos.cpus.as_slice(), gpos.criticality), (&[1][..], Some(RawCriticality::Low)));
        assert_eq!((shared.partition.len(), gpos.bootargs.as_deref()), (2, Some(HOG_BOOTARGS)));
        let names: Vec<&str> = ReleaseSetup::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["native", "alone", "shared"]);
    }
}
