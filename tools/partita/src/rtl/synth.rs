//! Yosys: what a block costs in a Zynq-7000's fabric, from `synth_xilinx
//! -family xc7` out of context (no I/O buffers: the block sits inside a
//! design, behind an AXI interconnect).
//!
//! Yosys 0.23 has no timing model for these cells, so it gives no maximum
//! frequency; Vivado's timing report is where that comes from.

use super::Block;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

/// The cells a synthesized block is made of, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Resources {
    /// LUT1 to LUT6 used as logic.
    pub luts: u64,
    /// LUTs used as distributed RAM (a RAM64M or RAM32M is four).
    pub lutram: u64,
    pub flip_flops: u64,
    /// 36 Kbit block RAMs, an 18 Kbit one counted as a half.
    pub bram36: f64,
    pub carry4: u64,
    pub muxf: u64,
    /// Inverters Yosys leaves as cells; Vivado folds them into LUTs.
    pub inverters: u64,
}

/// Synthesizes `block` with its size parameter; Yosys's log goes to `dir`.
pub fn synthesize(block: Block, dir: &Path) -> Result<Resources> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let (name, value) = block.parameter();
    let [port, source] = block.sources();
    let script = format!(
        "read_verilog -sv -I {dir} {port} {source}; chparam -set {name} {value} {top}; \
         synth_xilinx -family xc7 -flatten -noiopad -top {top}; stat",
        dir = super::hardware().display(),
        port = port.display(),
        source = source.display(),
        top = block.name(),
    );
    let output = Command::new("yosys")
        .arg("-p")
        .arg(&script)
        .output()
        .context("cannot run yosys (the Debian package yosys has it)")?;
    let log = String::from_utf8_lossy(&output.stdout).into_owned();
    let log_file = dir.join(format!("{}-{value}.yosys.log", block.name()));
    std::fs::write(&log_file, &log).with_context(|| format!("cannot write {}", log_file.display()))?;
    if !output.status.success() {
        bail!("yosys failed on {} ({}); see {}", block.name(), output.status, log_file.display());
    }
    parse_stat(&log)
}

/// The cell counts of the last `stat` in a Yosys log.
pub fn parse_stat(log: &str) -> Result<Resources> {
    let at = log.rfind("Number of cells:").context("no cell counts in the Yosys log")?;
    let mut r = Resources::default();
    for line in log[at..].lines().skip(1) {
        let mut words = line.split_whitespace();
        let (Some(cell), Some(count), None) = (words.next(), words.next(), words.next()) else { break };
        let Ok(n) = count.parse::<u64>() else { break };
        match cell {
            "LUT1" | "LUT2" | "LUT3" | "LUT4" | "LUT5" | "LUT6" => r.luts += n,
            "RAM32M" | "RAM64M" => r.lutram += 4 * n,
            c if c.starts_with("RAM32X1") || c.starts_with("RAM64X1") || c.starts_with("RAM128X1") => r.lutram += n,
            c if c.starts_with("FD") => r.flip_flops += n,
            "RAMB36E1" => r.bram36 += n as f64,
            "RAMB18E1" => r.bram36 += n as f64 / 2.0,
            "CARRY4" => r.carry4 += n,
            "MUXF7" | "MUXF8" => r.muxf += n,
            "INV" => r.inverters += n,
            _ => {}
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_stat_is_read_by_cell_kind() {
        let lines = [
            "   Number of cells:     3",
            "     LUT2               1",
            "",
            "=== design hierarchy ===",
            "   Number of cells:     9",
            "     BUFG               1",
            "     CARRY4             2",
            "     FDRE              30",
            "     FDSE               2",
            "     INV                3",
            "     LUT4              10",
            "     LUT6               5",
            "     MUXF7              4",
            "     RAM64M             2",
            "     RAMB18E1           1",
            "",
            "End of script.",
        ];
        let log = lines.join("\n");
        let r = parse_stat(&log).unwrap();
        let expected = Resources { luts: 15, lutram: 8, flip_flops: 32, bram36: 0.5, carry4: 2, muxf: 4, inverters: 3 };
        assert_eq!(r, expected);
        assert!(parse_stat("nothing here").is_err());
    }
}
