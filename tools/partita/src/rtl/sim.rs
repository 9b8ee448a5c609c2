//! Icarus Verilog: compiles a block with the shared testbench, replays a
//! vector file through it and reads back what the testbench printed.

use super::vectors::Vectors;
use super::{hardware, Block};
use anyhow::{bail, ensure, Context, Result};
use std::path::Path;
use std::process::Command;

/// Cycle counts of one tag's transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cycles {
    pub tag: u8,
    pub count: u64,
    pub min: u64,
    pub max: u64,
    pub total: u64,
}

impl Cycles {
    pub fn mean(&self) -> f64 {
        self.total as f64 / self.count.max(1) as f64
    }
}

/// What a simulation printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Transactions replayed.
    pub ops: u64,
    pub mismatches: u64,
    /// The testbench's MISMATCH lines, for the failure message.
    pub mismatch_lines: Vec<String>,
    pub cycles: Vec<Cycles>,
}

impl Outcome {
    pub fn cycles_of(&self, tag: u8) -> Option<&Cycles> {
        self.cycles.iter().find(|c| c.tag == tag)
    }
}

/// Compiles `block` (with each of `defines` set) and replays `vectors`,
/// working in `dir`.
pub fn run(block: Block, vectors: &Vectors, defines: &[&str], dir: &Path) -> Result<Outcome> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let file = dir.join("vectors.hex");
    std::fs::write(&file, vectors.text()).with_context(|| format!("cannot write {}", file.display()))?;
    let sim = dir.join("sim.vvp");
    let mut compile = Command::new("iverilog");
    let (name, value) = block.parameter();
    compile.args(["-g2012", "-Wall", "-Wno-timescale", "-Wno-sensitivity-entire-array", "-o"]).arg(&sim);
    compile.arg(format!("-Paxi_lite_tb.{name}={value}"));
    if matches!(block, Block::PrrMonitor { .. }) {
        compile.arg("-DDUT_PRR_MONITOR");
    }
    compile.args(defines.iter().map(|d| format!("-D{d}")));
    compile.arg("-I").arg(hardware()).args(block.sources()).arg(hardware().join("tb").join("axi_lite_tb.v"));
    checked(&mut compile, "iverilog")?;
    let printed = checked(Command::new("vvp").arg("-n").arg(&sim).arg(format!("+vectors={}", file.display())), "vvp")?;
    let outcome = parse(&printed)?;
    ensure!(
        outcome.ops == vectors.lines.len() as u64,
        "the testbench replayed {} of {} vectors",
        outcome.ops,
        vectors.lines.len()
    );
    Ok(outcome)
}

/// Runs `command`; its standard output, or an error with everything it
/// printed.
fn checked(command: &mut Command, what: &str) -> Result<String> {
    let output = command.output().with_context(|| format!("cannot run {what} (the Debian package iverilog has it)"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        bail!("{what} failed ({}):\n{stdout}{}", output.status, String::from_utf8_lossy(&output.stderr));
    }
    Ok(stdout)
}

/// The testbench's MISMATCH, CYCLES and DONE lines.
pub fn parse(printed: &str) -> Result<Outcome> {
    let mut outcome = Outcome::default();
    let mut done = false;
    for line in printed.lines() {
        if line.starts_with("MISMATCH") {
            outcome.mismatch_lines.push(line.to_string());
        } else if let Some(rest) = line.strip_prefix("CYCLES ") {
            let field = |key| field(rest, key).with_context(|| format!("no {key} in {line}"));
            let tag = u8::try_from(field("tag")?)?;
            outcome.cycles.push(Cycles {
                tag,
                count: field("count")?,
                min: field("min")?,
                max: field("max")?,
                total: field("total")?,
            });
        } else if let Some(rest) = line.strip_prefix("DONE ") {
            outcome.ops = field(rest, "ops").context("no ops in DONE")?;
            outcome.mismatches = field(rest, "mismatches").context("no mismatches in DONE")?;
            done = true;
        }
    }
    ensure!(done, "the simulation did not finish:\n{printed}");
    Ok(outcome)
}

/// The number after `key=` in a line of `key=value` fields.
fn field(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace().find_map(|f| f.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_testbench_lines_are_read_back() {
        let printed = "MISMATCH line=3 op=0 tag=3 addr=00000800 data=00000000 expected=00050002 got=00050001\n\
                       CYCLES tag=0 count=3 min=3 max=3 total=9\n\
                       CYCLES tag=3 count=2 min=3 max=4 total=7\n\
                       DONE ops=11 mismatches=1\n";
        let outcome = parse(printed).unwrap();
        assert_eq!((outcome.ops, outcome.mismatches, outcome.mismatch_lines.len()), (11, 1, 1));
        assert_eq!(outcome.cycles_of(3), Some(&Cycles { tag: 3, count: 2, min: 3, max: 4, total: 7 }));
        assert_eq!(outcome.cycles_of(3).unwrap().mean(), 3.5);
        assert!(outcome.cycles_of(1).is_none());
    }

    #[test]
    fn a_simulation_that_stops_early_is_an_error() {
        assert!(parse("CYCLES tag=0 count=1 min=3 max=3 total=3\n").is_err());
    }
}
