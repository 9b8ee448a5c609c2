//! `partita test`: every test of the workspace, with one total at the end.
//!
//! Cargo prints one `test result:` line per test binary; the total sums them
//! into a plain `N passed, M failed` line that CI and people read the same way.

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

/// Runs `cargo test` in the repository with its output streamed through,
/// then prints the total. Returns whether everything passed.
pub fn test() -> Result<bool> {
    let root = crate::paths::source();
    let mut cargo = Command::new("cargo");
    cargo.current_dir(&root).arg("test").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = cargo.spawn().context("cannot start `cargo test` (is cargo installed?)")?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let tally = stream(BufReader::new(stdout), std::io::stdout())?;
    let status = child.wait().context("cannot wait for cargo test")?;
    if !status.success() && tally.failed == 0 {
        eprintln!("cargo test failed ({status})");
    }
    println!("{}", tally.summary());
    Ok(status.success() && tally.failed == 0)
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

    #[test]
    fn ignores_other_lines() {
        let mut tally = Tally::default();
        tally.add_line("test passed ... ok");
        tally.add_line("3 passed; 1 failed");
        assert_eq!(tally, Tally::default());
    }
}
