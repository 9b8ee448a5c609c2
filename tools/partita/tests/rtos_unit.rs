//! The guest RTOS's host unit tests (queues, semaphores, pools, the ready
//! queue): `make -C guests/rtos host-test` builds them with the host C
//! compiler and runs them. No QEMU involved.

use partita::guests;
use partita::paths;
use std::process::Command;

/// The runner's last line: `<passed> passed, <failed> failed`.
fn summary(output: &str) -> Option<(u32, u32)> {
    let line = output.lines().rev().find(|l| l.contains(" passed, "))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        [passed, "passed,", failed, "failed"] => Some((passed.parse().ok()?, failed.parse().ok()?)),
        _ => None,
    }
}

#[test]
fn rtos_host_unit_tests_pass() {
    let root = paths::source();
    let out = guests::output_dir();
    let run = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(root.join("guests").join("rtos"))
        .arg(format!("O={}", out.display()))
        .arg("host-test")
        .output()
        .expect("running make");
    let text = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    let (passed, failed) = summary(&text).unwrap_or_else(|| panic!("no summary line in:\n{text}"));
    assert!(run.status.success(), "host-test exited with {}:\n{text}", run.status);
    assert_eq!(failed, 0, "failures:\n{text}");
    assert!(passed >= 10, "only {passed} tests ran:\n{text}");
}
