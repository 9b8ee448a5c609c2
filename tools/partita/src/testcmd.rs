//! `partita test`: every test of the workspace, with one total at the end.
//!
//! Cargo prints one `test result:` line per test binary; the total sums them
//! into a plain `N passed, M failed` line that CI and people read the same way.
//!
//! A second pass runs the QEMU suites a second board must pass as well, with
//! `PARTITA_BOARD` naming it: the same tests and configurations, with the
//! board changed.

use anyhow::{Context, Result};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// Summed counts of every `test result:` line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub passed: u64,
    pub failed: u64,
    /// Number of `test result:` lines seen.
    pub suites: u64,
}

impl Tally {
    /// Adds one line of libtest output if it is a `test result:` line.
    pub fn add_line(&mut self, line: &str) {
        let Some(rest) = line.trim_start().strip_prefix("test result:") else {
            return;
        };
        self.suites += 1;
        self.passed += count(rest, "passed");
        self.failed += count(rest, "failed");
    }

    pub fn add(&mut self, other: Tally) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.suites += other.suites;
    }

    pub fn summary(&self) -> String {
        format!("{} passed, {} failed", self.passed, self.failed)
    }
}

/// The number before `word` in `ok. 3 passed; 0 failed; ...`.
fn count(text: &str, word: &str) -> u64 {
    let words: Vec<&str> =
        text.split(|c: char| c.is_whitespace() || c == ';' || c == '.').filter(|w| !w.is_empty()).collect();
    words.windows(2).filter(|pair| pair[1] == word).filter_map(|pair| pair[0].parse::<u64>().ok()).sum()
}

/// The QEMU suites run again on the ZynqMP (QEMU `xlnx-zcu102`).
pub const ZCU102_SUITES: &[&str] = &[
    "qemu",
    "qemu_channels",
    "qemu_health",
    "qemu_sched",
    "qemu_rtos",
    "qemu_rtos_ipc",
    "qemu_fabric",
    "qemu_fabric_rtos",
];

/// Tests of those suites left out on the ZynqMP. Both bound a
/// delay under `-icount`, where QEMU 7.2's `xlnx-zcu102` lets a busy core
/// run on for 1 to 2 ms past another core's timer, and moves one core's
/// time on by 2 s at once (docs/zcu102.md, "Timing under -icount"); on
/// `virt` the same runs stay within 50 us.
pub const ZCU102_SKIPPED: &[&str] = &[
    "cyclic_slots_start_on_time_and_nobody_runs_outside_them",
    "a_migrating_vcpu_keeps_counting_and_loses_no_interrupt",
];

/// Runs `cargo test` in the repository with its output streamed through,
/// then the second board's pass, then prints the total. Returns whether
/// everything passed.
pub fn test() -> Result<bool> {
    // Every suite runs even when one fails, so the total counts them all.
    let mut everything = Command::new("cargo");
    everything.args(["test", "--no-fail-fast"]);
    let (mut tally, mut passed) = run_cargo(everything)?;
    println!("\nThe QEMU suites again on zcu102 (PARTITA_BOARD=zcu102):");
    let (zcu102, ok) = run_cargo(board_pass("zcu102", ZCU102_SUITES, ZCU102_SKIPPED))?;
    tally.add(zcu102);
    passed &= ok;
    println!("{}", tally.summary());
    Ok(passed && tally.failed == 0)
}

/// `cargo test` of `suites` on `board`, without the tests `skipped` names.
fn board_pass(board: &str, suites: &[&str], skipped: &[&str]) -> Command {
    let mut cargo = Command::new("cargo");
    cargo.env("PARTITA_BOARD", board).args(["test", "--no-fail-fast", "-p", "partita"]);
    for suite in suites {
        cargo.args(["--test", suite]);
    }
    cargo.args(["--", "--exact"]);
    for test in skipped {
        cargo.args(["--skip", test]);
    }
    cargo
}

/// Runs one `cargo test` command in the repository, streaming its output.
fn run_cargo(mut cargo: Command) -> Result<(Tally, bool)> {
    cargo.current_dir(crate::paths::source()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = cargo.spawn().context("cannot start `cargo test` (is cargo installed?)")?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let tally = stream(BufReader::new(stdout), std::io::stdout())?;
    let status = child.wait().context("cannot wait for cargo test")?;
    if !status.success() && tally.failed == 0 {
        eprintln!("cargo test failed ({status})");
    }
    Ok((tally, status.success()))
}

/// Echoes each line to `out` as it comes and tallies it.
pub fn stream(mut input: impl BufRead, mut out: impl Write) -> Result<Tally> {
    let mut tally = Tally::default();
    let mut line = Vec::new();
    while input.read_until(b'\n', &mut line).context("cannot read cargo test's output")? > 0 {
        out.write_all(&line)?;
        out.flush()?;
        tally.add_line(&String::from_utf8_lossy(&line));
        line.clear();
    }
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_result_lines() {
        let output = "\
running 2 tests
test a ... ok
test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

test result: FAILED. 5 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.20s
   Doc-tests partita
test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
        let mut echoed = Vec::new();
        let tally = stream(output.as_bytes(), &mut echoed).unwrap();
        assert_eq!(tally, Tally { passed: 7, failed: 3, suites: 3 });
        assert_eq!(echoed, output.as_bytes());
        assert_eq!(tally.summary(), "7 passed, 3 failed");
    }

    /// A renamed test would otherwise stop being skipped without a word, or
    /// a suite stop being run.
    #[test]
    fn the_second_board_s_suites_and_skips_exist() {
        let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
        let sources: Vec<String> = ZCU102_SUITES
            .iter()
            .map(|suite| std::fs::read_to_string(tests.join(format!("{suite}.rs"))).expect("a suite's file"))
            .collect();
        for test in ZCU102_SKIPPED {
            let defined = format!("fn {test}()");
            assert!(sources.iter().any(|source| source.contains(&defined)), "no suite defines {test}");
        }
        let args: Vec<String> =
            board_pass("zcu102", &["qemu"], &["slow"]).get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        let expected = ["test", "--no-fail-fast", "-p", "partita", "--test", "qemu", "--", "--exact", "--skip", "slow"];
        assert_eq!(args, expected);
    }

    #[test]
    fn ignores_other_lines() {
        let mut tally = Tally::default();
        tally.add_line("test passed ... ok");
        tally.add_line("3 passed; 1 failed");
        assert_eq!(tally, Tally::default());
    }
}
