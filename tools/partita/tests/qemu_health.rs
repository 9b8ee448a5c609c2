//! The health monitor in QEMU: a partition's `health` policy decides what a
//! fault does, and every event lands in `out/<config>/hm.log`.

mod common;

use common::*;
use partita::build::repo_root;
use partita::run::RunOptions;

fn hm_log(name: &str) -> String {
    std::fs::read_to_string(repo_root().join("out").join(name).join("hm.log")).expect("hm.log")
}

/// `stage2-fault = "log"`: the write outside its memory is logged and
/// skipped, and the partition goes on to its last tick. Another partition
/// with the default policy is halted by the same fault, as before.
#[test]
fn a_logged_fault_lets_the_partition_go_on_and_the_default_halts() {
    let args = "ticks=4 period_ms=50 misbehave=write-outside at=2";
    let text = format!(
        "{}{}",
        with_field(part("tolerated", "[1]", args), "health", "{ stage2-fault = \"log\" }"),
        part("halted", "[2]", args),
    );
    let boot = boot_toml("qemu-hm-log", &text, HANG_LIMIT);
    assert_powered_off(&boot);
    let tolerated = boot.log("tolerated");
    assert!(tolerated.contains("survived misbehaviour") && tolerated.lines().any(|l| l == "tick 4"), "{tolerated}");
    assert!(!boot.log("halted").contains("survived misbehaviour"), "{}", boot.log("halted"));
    assert!(boot.hypervisor.contains("partition halted vcpu 0 stopped: stage-2 data abort"), "{}", boot.hypervisor);
    let hm = hm_log("qemu-hm-log");
    let entries: Vec<&str> = hm.lines().collect();
    assert_eq!(entries.len(), 2, "{hm}");
    assert!(entries.iter().any(|l| l.contains("partition tolerated vcpu 0 Stage2Fault") && l.ends_with("action Log")), "{hm}");
    assert!(entries.iter().any(|l| l.contains("partition halted vcpu 0 Stage2Fault") && l.ends_with("action Halt")), "{hm}");
}

/// `forbidden = "restart"`: a forbidden system-register access restarts the
/// partition from its images, again at every fault, while a bystander
/// keeps ticking; each restart is in hm.log.
#[test]
fn a_restart_policy_restarts_the_partition_each_time() {
    let text = format!(
        "{}{}",
        with_field(part("flaky", "[1]", "ticks=3 period_ms=50 misbehave=sysreg at=2"), "health", "{ forbidden = \"restart\" }"),
        part("steady", "[2]", "ticks=0 period_ms=100"),
    );
    let boot = boot_with("qemu-hm-restart", &text, RunOptions { seconds: Some(8), ..RunOptions::default() });
    let greetings = boot.log("flaky").lines().filter(|l| l.starts_with("hello from partition flaky")).count();
    assert!(greetings >= 3, "{greetings} boots of flaky:\n{}", boot.log("flaky"));
    assert!(boot.hypervisor.contains("partition flaky restarting (health monitor)"), "{}", boot.hypervisor);
    let restarts = hm_log("qemu-hm-restart").lines().filter(|l| l.contains("Forbidden") && l.ends_with("action Restart")).count();
    assert!(restarts + 1 >= greetings, "{restarts} logged restarts for {greetings} boots");
    assert!(boot.log("steady").lines().filter(|l| l.starts_with("tick")).count() >= 10, "{}", boot.log("steady"));
}

/// A partition's own error report and an unknown hypercall: by default both
/// are logged and the partition goes on; `reported = "restart"` restarts
/// the reporter at every report.
#[test]
fn reports_and_illegal_hypercalls_follow_the_policy() {
    let text = format!(
        "{}{}",
        part("chatty", "[1]", "hm-report=9 bad-hvc=1 ticks=2 period_ms=50"),
        with_field(part("strict", "[2]", "hm-report=7 ticks=2 period_ms=50"), "health", "{ reported = \"restart\" }"),
    );
    let boot = boot_with("qemu-hm-report", &text, RunOptions { seconds: Some(6), ..RunOptions::default() });
    let chatty = boot.log("chatty");
    for expected in ["bad-hvc: -1", "hm-report: 0", "tick 2"] {
        assert!(chatty.lines().any(|l| l == expected), "missing {expected:?}:\n{chatty}");
    }
    let strict = boot.log("strict");
    assert!(!strict.contains("hm-report: 0"), "the reporter went on:\n{strict}");
    assert!(strict.lines().filter(|l| l.starts_with("hello from partition strict")).count() >= 2, "{strict}");
    let hm = hm_log("qemu-hm-report");
    assert!(hm.lines().any(|l| l.contains("partition chatty vcpu 0 IllegalHypercall") && l.ends_with("action Log")), "{hm}");
    assert!(hm.lines().any(|l| l.contains("partition chatty vcpu 0 Reported(9)") && l.ends_with("action Log")), "{hm}");
    assert!(hm.lines().any(|l| l.contains("partition strict vcpu 0 Reported(7)") && l.ends_with("action Restart")), "{hm}");
}
