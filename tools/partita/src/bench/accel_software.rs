//! Ker-ONE's Table 6 on Partita: each accelerator's frame computed in
//! software on the CPU against the same frame through its virtual device.
//! The guest RTOS's `accel_table6=` mode (guests/rtos/bench/accel.c) times
//! N frames of each function with `accel_sw` (bit for bit the fabric's
//! computation) and then with `rtos_accel_run`, and prints one line per
//! function; this module boots it for each pass, wall-clock or under
//! `-icount`, and tabulates the per-frame figures beside Ker-ONE's.
//! Reported, never asserted.
//!
//! Ker-ONE's Table 6 (Xia et al., J. Systems Architecture 2019, section
//! 6.3) measured on the ZedBoard, per frame: QAM-16 47.0 µs on the
//! accelerator against 1,513 µs in software, QAM-64 31.0 against 1,174,
//! FFT-512 71.1 against 6,582, FFT-1024 90.6 against 12,784.

use super::qemu;
use super::report::{today, Column, Table};
use super::{Mode, Pass};
use crate::build::BuildOutput;
use crate::config::raw::{RawConfig, RawFabric, RawVirtualDevice};
use crate::config::Config;
use crate::guests;
use crate::run::RunOptions;
use anyhow::{bail, Context, Result};
use partita_core::fabric::compute::Function;
use std::fmt::Write as _;

/// `<out>/bench/<name>/` gets the boots' logs.
pub const DEFAULT_NAME: &str = "accel";
pub const DEFAULT_FRAMES: u32 = 20;
/// What the RTOS's buffers hold of the largest frames (FFT-1024's) in the
/// 16 MiB of a generated partition, with room to spare.
pub const MAX_FRAMES: u32 = 120;
const SEED: u32 = 1;
const RUN_LIMIT_S: u64 = 300;

/// Ker-ONE's Table 6, per frame in µs: (function, T_HW, T_SW).
pub const KER_ONE: [(Function, f64, f64); 4] = [
    (Function::Qam16, 47.0, 1_513.0),
    (Function::Qam64, 31.0, 1_174.0),
    (Function::Fft512, 71.1, 6_582.0),
    (Function::Fft1024, 90.6, 12_784.0),
];

/// One `accel-table6: fn ...` line: all `frames` frames' counter ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line {
    pub function: Function,
    pub frames: u64,
    pub sw: u64,
    pub hw: u64,
    pub hz: u64,
    pub sw_hash: u64,
    pub hw_hash: u64,
    pub result: u64,
}

impl Line {
    /// Both outputs the same, every frame done.
    pub fn agrees(&self) -> bool {
        self.sw_hash == self.hw_hash && self.result == self.frames
    }
}

/// Every well-formed result line of the RTOS's log, in its order.
pub fn parse(log: &str) -> Vec<Line> {
    log.lines()
        .filter_map(|l| {
            let words: Vec<&str> = l.strip_prefix("accel-table6: ")?.split_whitespace().collect();
            let ["fn", name, "frames", frames, "sw", sw, "hw", hw, "hz", hz, "sw-hash", sw_hash, "hw-hash", hw_hash, "result", result] =
                words[..]
            else {
                return None;
            };
            Some(Line {
                function: Function::from_name(name)?,
                frames: frames.parse().ok()?,
                sw: sw.parse().ok()?,
                hw: hw.parse().ok()?,
                hz: hz.parse().ok().filter(|&hz| hz > 0)?,
                sw_hash: u64::from_str_radix(sw_hash, 16).ok()?,
                hw_hash: u64::from_str_radix(hw_hash, 16).ok()?,
                result: result.parse().ok()?,
            })
        })
        .collect()
}

/// What is wrong with a boot's lines: a function missing, or one whose
/// two outputs differ or whose job stopped short.
pub fn check(log: &str, lines: &[Line]) -> Result<()> {
    if !log.lines().any(|l| l == "accel-table6: done") {
        bail!("the RTOS did not finish");
    }
    for f in Function::ALL {
        let Some(line) = lines.iter().find(|l| l.function == f) else {
            let why: Vec<&str> =
                log.lines().filter(|l| l.starts_with("accel-table6: ") && l.contains(f.name())).collect();
            bail!("no result for {f}: {}", if why.is_empty() { "no line".to_string() } else { why.join("; ") });
        };
        if !line.agrees() {
            bail!(
                "{f}: software hash {:016x}, accelerator hash {:016x}, {} of {} frames",
                line.sw_hash,
                line.hw_hash,
                line.result,
                line.frames
            );
        }
    }
    Ok(())
}

/// One RTOS on pCPU 0 with a virtual device of each function, on
/// Ker-ONE's fabric (its three PRRs, its timings) run by pCPU 1.
pub fn config(frames: u32, rtos: &std::path::Path) -> RawConfig {
    let args = format!("accel_table6=all accel_frames={frames} accel_seed={SEED} tick_hz=1000");
    let partition = Function::ALL
        .into_iter()
        .fold(qemu::partition("rtos", &[0], &args, rtos), |p, f| p.accelerator(RawVirtualDevice::new(f.name())));
    RawConfig::new().cpus(2).partition(partition).fabric(RawFabric::default())
}

/// The lines of each pass, in the order asked.
pub struct Table6 {
    pub frames: u32,
    pub passes: Vec<(Pass, Vec<Line>)>,
}

pub fn run(passes: &[Pass], frames: u32) -> Result<Table6> {
    if !(1..=MAX_FRAMES).contains(&frames) {
        bail!("frames must be 1 to {MAX_FRAMES}, not {frames}");
    }
    let hypervisor = qemu::prepare()?;
    let built = qemu::generated(DEFAULT_NAME, "table6", &config(frames, &guests::image("rtos.elf")), &hypervisor)?;
    let mut out = Vec::new();
    for (i, &pass) in passes.iter().enumerate() {
        out.push((pass, boot(&built, pass, i > 0)?));
    }
    Ok(Table6 { frames, passes: out })
}

fn boot((config, output): &(Config, BuildOutput), pass: Pass, quiet: bool) -> Result<Vec<Line>> {
    let opts = RunOptions { seconds: Some(RUN_LIMIT_S), icount: pass.shift, ..RunOptions::default() };
    let report = qemu::to_power_off(output, &config.system, &opts, quiet)?;
    let path = &report.partition_logs[0];
    let log = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let lines = parse(&log);
    check(&log, &lines).with_context(|| format!("{} pass; see {}", pass.label(), path.display()))?;
    Ok(lines)
}

const COLUMNS: [Column; 8] = [
    Column::left("function", "function", 8),
    Column::left("pass", "pass", 9),
    Column::right("software", "software per frame", 14),
    Column::right("accelerator", "accelerator per frame", 14),
    Column::right("speed-up", "speed-up", 8),
    Column::right("K1 T_SW µs", "Ker-ONE T_SW (µs)", 10),
    Column::right("K1 T_HW µs", "Ker-ONE T_HW (µs)", 10),
    Column::right("K1 speed-up", "Ker-ONE speed-up", 10),
];

impl Table6 {
    /// A figure per frame in the pass's unit: µs of wall-clock time, or
    /// under `-icount shift=S` the guest instructions that much counter
    /// time holds (each takes 2^S ns).
    fn per_frame(pass: Pass, line: &Line, ticks: u64) -> String {
        let ns = ticks as f64 * 1e9 / line.hz as f64 / line.frames.max(1) as f64;
        match (pass.mode, pass.shift) {
            (Mode::Icount, Some(shift)) => format!("{:.0} instr.", ns / f64::from(1u32 << shift)),
            _ => format!("{:.1} µs", ns / 1e3),
        }
    }

    pub fn rows(&self) -> Table {
        let mut table = Table::new(&COLUMNS);
        for (f, k1_hw, k1_sw) in KER_ONE {
            for (pass, lines) in &self.passes {
                let Some(line) = lines.iter().find(|l| l.function == f) else { continue };
                let speed_up =
                    if line.hw == 0 { "-".to_string() } else { format!("{:.1}x", line.sw as f64 / line.hw as f64) };
                table.row(vec![
                    f.name().to_string(),
                    pass.label(),
                    Self::per_frame(*pass, line, line.sw),
                    Self::per_frame(*pass, line, line.hw),
                    speed_up,
                    format!("{k1_sw:.0}"),
                    format!("{k1_hw:.1}"),
                    format!("{:.0}x", k1_sw / k1_hw),
                ]);
            }
        }
        table
    }

    pub fn markdown(&self) -> String {
        format!("# Software against accelerator: Ker-ONE's Table 6 ({})\n\n{}", today(), self.body())
    }

    /// The table and what it says, under a heading of `bench accel`'s report.
    pub fn section(&self) -> String {
        format!("\n## Table 6: software against accelerator\n\n{}", self.body())
    }

    fn body(&self) -> String {
        let mut out = format!(
            "The guest RTOS computes {} frames of Ker-ONE's length per function in software (`accel_sw`, bit for \
             bit the fabric's computation) and then through its virtual device (`rtos_accel_run`, the device \
             connected beforehand, so no download or wait for a PRR is counted), timing each with the generic \
             counter; both outputs hash the same. Per frame: µs in a wall-clock pass, guest instructions under \
             `-icount`. Ker-ONE's figures: Table 6 (Xia et al. 2019), on the ZedBoard's 667 MHz Cortex-A9 and \
             its fabric at 100 MHz.\n\n",
            self.frames
        );
        out += &self.rows().markdown();
        let _ = write!(
            out,
            "\nThe accelerator's time here is the emulated fabric's: its model's frame time (Ker-ONE's T_HW, \
             scaled to the frame) or, if the pCPU computing the frame is slower, that pCPU's, plus the job's \
             start and its READY signal to the waiting task. The software's is QEMU's emulation of an AArch64 \
             core, so its ratio to Ker-ONE's T_SW says how fast this host emulates, not how fast a core is.\n"
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "boot\n\
        accel-table6: fn qam16 frames 3 sw 27645 hw 249901 hz 62500000 sw-hash 1eb3733c46a95928 hw-hash 1eb3733c46a95928 result 3\n\
        accel-table6: fn qam64 frames 3 sw 6680 hw 48554 hz 62500000 sw-hash 81e14905b3fe6f26 hw-hash 81e14905b3fe6f26 result 3\n\
        accel-table6: no fft512 device: EINVAL\n\
        accel-table6: fn fft1024 frames 3 sw 442046 hw 328399 hz 62500000 sw-hash 6d5fb0d878582cc3 hw-hash 6d5fb0d878582cc4 result 3\n\
        accel-table6: fn fft1024 frames 3 sw x hw 1 hz 1 sw-hash 0 hw-hash 0 result 3\n\
        accel-table6: fn fft2048 frames 3 sw 1 hw 1 hz 1 sw-hash 0 hw-hash 0 result 3\n\
        accel-table6: fn qam16 frames 3 sw 1 hw 1 hz 0 sw-hash 0 hw-hash 0 result 3\n\
        accel-table6: done\n";

    #[test]
    fn parses_well_formed_result_lines_only() {
        let lines = parse(LOG);
        assert_eq!(
            lines.iter().map(|l| l.function).collect::<Vec<_>>(),
            [Function::Qam16, Function::Qam64, Function::Fft1024]
        );
        assert_eq!(
            lines[0],
            Line {
                function: Function::Qam16,
                frames: 3,
                sw: 27_645,
                hw: 249_901,
                hz: 62_500_000,
                sw_hash: 0x1eb3_733c_46a9_5928,
                hw_hash: 0x1eb3_733c_46a9_5928,
                result: 3,
            }
        );
        assert!(lines[0].agrees() && lines[1].agrees());
        assert!(!lines[2].agrees(), "the hashes differ");
    }

    #[test]
    fn a_missing_function_differing_hashes_or_no_done_line_is_an_error() {
        let lines = parse(LOG);
        let missing = check(LOG, &lines).unwrap_err().to_string();
        assert!(missing.contains("fft512") && missing.contains("no fft512 device"), "{missing}");
        let mut all = lines.clone();
        all.push(Line { function: Function::Fft512, ..lines[0] });
        let differ = check(LOG, &all).unwrap_err().to_string();
        assert!(differ.starts_with("fft1024: software hash 6d5fb0d878582cc3"), "{differ}");
        all[2].hw_hash = all[2].sw_hash;
        assert!(check(LOG, &all).is_ok());
        assert!(check(LOG.trim_end_matches("accel-table6: done\n"), &all).is_err());
        all[0].result = 2;
        assert!(check(LOG, &all).is_err(), "a job that stopped short");
    }

    #[test]
    fn per_frame_figures_are_in_each_pass_s_unit() {
        let line = Line {
            function: Function::Qam16,
            frames: 4,
            sw: 250_000,
            hw: 12_500,
            hz: 62_500_000,
            sw_hash: 1,
            hw_hash: 1,
            result: 4,
        };
        // 250,000 ticks at 62.5 MHz are 4 ms: 1 ms a frame.
        assert_eq!(Table6::per_frame(Pass::WALL, &line, line.sw), "1000.0 µs");
        assert_eq!(Table6::per_frame(Pass::WALL, &line, line.hw), "50.0 µs");
        // Under shift 4 an instruction takes 16 ns: 1 ms is 62,500 of them.
        assert_eq!(Table6::per_frame(Pass::icount(4), &line, line.sw), "62500 instr.");
        assert_eq!(Table6::per_frame(Pass::icount(3), &line, line.hw), "6250 instr.");
        let table = Table6 { frames: 4, passes: vec![(Pass::WALL, vec![line]), (Pass::icount(4), vec![line])] };
        let md = table.markdown();
        assert!(md.contains("| qam16 | wall | 1000.0 µs | 50.0 µs | 20.0x | 1513 | 47.0 | 32x |"), "{md}");
        assert!(md.contains("| qam16 | icount 4 | 62500 instr. | 3125 instr. | 20.0x |"), "{md}");
    }

    #[test]
    fn the_configuration_gives_the_rtos_every_function() {
        let config = config(7, std::path::Path::new("rtos.elf"));
        let rtos = &config.partition[0];
        assert!(rtos.bootargs.as_deref().is_some_and(|a| a.contains("accel_table6=all accel_frames=7")));
        let names: Vec<&str> = rtos.accelerators.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, Function::ALL.map(|f| f.name()));
        assert!(config.fabric.is_some());
    }
}
