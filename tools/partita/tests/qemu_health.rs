//! The health monitor in QEMU: a partition's `health` policy decides what a
//! fault does, and every event lands in `out/<config>/hm.log`.

mod common;

use common::*;
use partita::config::raw::{RawAction, RawHealth};
use partita::run::RunOptions;
use partita_core::hypercall::CALLS;
use partita_core::trap::psci::PARTITA_UID;

/// The time of an hm.log line (`<seq> at <us> us partition ...`).
fn hm_time_us(line: &str) -> u64 {
    let at = line.split(" at ").nth(1).and_then(|rest| rest.split(' ').next());
    at.and_then(|us| us.parse().ok()).unwrap_or_else(|| panic!("no time in {line:?}"))
}

/// `stage2-fault = "log"`: the write outside its memory is logged and
/// skipped, and the partition goes on to its last tick. Another partition
/// with `stage2-fault = "halt"` is halted by the same fault.
#[test]
fn a_logged_fault_lets_the_partition_go_on_and_the_default_halts() {
    let args = "ticks=4 period_ms=50 misbehave=write-outside at=2";
    let log = RawHealth { stage2_fault: Some(RawAction::Log), ..RawHealth::default() };
    let parts = [part("tolerated", &[1], args).health(log), part("halted", &[2], args).health(halt_on_faults())];
    let boot = boot("qemu-hm-log", &machine(parts), HANG_LIMIT);
    assert_powered_off(&boot);
    let tolerated = boot.log("tolerated");
    assert!(tolerated.contains("survived misbehaviour") && tolerated.lines().any(|l| l == "tick 4"), "{tolerated}");
    assert!(!boot.log("halted").contains("survived misbehaviour"), "{}", boot.log("halted"));
    assert!(boot.hypervisor.contains("partition halted vcpu 0 stopped: stage-2 data abort"), "{}", boot.hypervisor);
    let hm = hm_log("qemu-hm-log");
    let entries: Vec<&str> = hm.lines().collect();
    assert_eq!(entries.len(), 2, "{hm}");
    assert!(
        entries.iter().any(|l| l.contains("partition tolerated vcpu 0 Stage2Fault") && l.ends_with("action Log")),
        "{hm}"
    );
    assert!(
        entries.iter().any(|l| l.contains("partition halted vcpu 0 Stage2Fault") && l.ends_with("action Halt")),
        "{hm}"
    );
}

/// `forbidden = "restart"`: a forbidden instruction (an SMC that is not a
/// PSCI call) restarts the partition from its images, again at every
/// fault, while a bystander keeps ticking; each restart is in hm.log.
#[test]
fn a_restart_policy_restarts_the_partition_each_time() {
    let restart = RawHealth { forbidden: Some(RawAction::Restart), ..RawHealth::default() };
    let parts = [
        part("flaky", &[1], "ticks=3 period_ms=50 misbehave=smc at=2").health(restart),
        part("steady", &[2], "ticks=0 period_ms=100"),
    ];
    let boot = boot_with("qemu-hm-restart", &machine(parts), RunOptions { seconds: Some(8), ..RunOptions::default() });
    let greetings = boot.log("flaky").lines().filter(|l| l.starts_with("hello from partition flaky")).count();
    assert!(greetings >= 3, "{greetings} boots of flaky:\n{}", boot.log("flaky"));
    // Counted: the restart before the last greeting is number greetings - 1.
    let counted = format!("partition flaky restarting (health monitor; restart {})", greetings - 1);
    assert!(boot.hypervisor.contains(&counted), "no {counted:?} in:\n{}", boot.hypervisor);
    let restarts =
        hm_log("qemu-hm-restart").lines().filter(|l| l.contains("Forbidden") && l.ends_with("action Restart")).count();
    assert!(restarts + 1 >= greetings, "{restarts} logged restarts for {greetings} boots");
    assert!(boot.log("steady").lines().filter(|l| l.starts_with("tick")).count() >= 10, "{}", boot.log("steady"));
}

/// A partition's own error report and an unknown hypercall: by default both
/// are logged and the partition goes on; `reported = "restart"` restarts
/// the reporter at every report.
#[test]
fn reports_and_illegal_hypercalls_follow_the_policy() {
    let restart = RawHealth { reported: Some(RawAction::Restart), ..RawHealth::default() };
    let parts = [
        part("chatty", &[1], "hm-report=9 bad-hvc=1 ticks=2 period_ms=50"),
        part("strict", &[2], "hm-report=7 ticks=2 period_ms=50").health(restart),
    ];
    let boot = boot_with("qemu-hm-report", &machine(parts), RunOptions { seconds: Some(6), ..RunOptions::default() });
    let chatty = boot.log("chatty");
    for expected in ["bad-hvc: -1", "hm-report: 0", "tick 2"] {
        assert!(chatty.lines().any(|l| l == expected), "missing {expected:?}:\n{chatty}");
    }
    let strict = boot.log("strict");
    assert!(!strict.contains("hm-report: 0"), "the reporter went on:\n{strict}");
    assert!(strict.lines().filter(|l| l.starts_with("hello from partition strict")).count() >= 2, "{strict}");
    let hm = hm_log("qemu-hm-report");
    assert!(
        hm.lines().any(|l| l.contains("partition chatty vcpu 0 IllegalHypercall") && l.ends_with("action Log")),
        "{hm}"
    );
    assert!(hm.lines().any(|l| l.contains("partition chatty vcpu 0 Reported(9)") && l.ends_with("action Log")), "{hm}");
    assert!(
        hm.lines().any(|l| l.contains("partition strict vcpu 0 Reported(7)") && l.ends_with("action Restart")),
        "{hm}"
    );
}

/// The SMCCC discovery calls a stock Linux makes at every boot are
/// answered as firmware answers them, and none is a health event, even
/// where an unknown hypercall restarts the partition: the TRNG is not
/// supported, and the vendor hypervisor's UID is Partita's own (not KVM's,
/// which would make Linux try KVM's services), with its revision and call
/// count.
#[test]
fn linux_s_discovery_calls_are_answered_and_raise_no_health_event() {
    let strict = RawHealth { illegal_hypercall: Some(RawAction::Restart), ..RawHealth::default() };
    let prober = part("prober", &[1], "probe-firmware=1 ticks=2 period_ms=20").health(strict);
    let name = "qemu-hm-discovery";
    let boot = boot_with(name, &machine([prober]), RunOptions { seconds: Some(6), ..RunOptions::default() });
    let log = boot.log("prober");
    let expected = format!(
        "firmware: smccc 0x10001 trng -1 hyp-uid {:08x} {:08x} {:08x} {:08x} revision 1.0 calls {}",
        PARTITA_UID[0], PARTITA_UID[1], PARTITA_UID[2], PARTITA_UID[3], CALLS
    );
    assert!(log.lines().any(|l| l == expected), "missing {expected:?}:\n{log}");
    assert_eq!(log.matches("hello from partition prober").count(), 1, "restarted:\n{log}");
    assert!(log.contains("tick 2"), "{log}");
    let hm = hm_log(name);
    assert!(!hm.contains("IllegalHypercall"), "{hm}");
}

/// Budgets at run time: a partition that computes 5 ms in every 10 ms
/// against a budget of 3 ms per 10 ms overruns in (nearly) every period,
/// and each overrun is logged once; one with a budget of 8 ms never does.
/// `budget-overrun = "suspend"` stops the third at its first overrun.
/// Booting (the guest's set/way sweep) keeps each busy for whole periods,
/// so only the overruns within the duty cycles (the counter times the
/// guest prints) are compared. Under `-icount` the cycles and the budgets
/// count the same instructions: on the wall clock, a host that stalls
/// QEMU between a cycle's end and its WFI charges the stall to the guest.
#[test]
fn budget_overruns_are_raised_once_per_period() {
    let duty = "duty_busy_ms=5 duty_idle_ms=5 duty_cycles=30 ticks=1 period_ms=1";
    let overrun = |action| RawHealth { budget_overrun: Some(action), ..RawHealth::default() };
    let parts = [
        part("greedy", &[1], duty).budget(3_000, 10_000).health(overrun(RawAction::Log)),
        part("modest", &[2], duty).budget(8_000, 10_000),
        part("stopped", &[3], duty).budget(3_000, 10_000).health(overrun(RawAction::Suspend)),
    ];
    let opts = RunOptions { seconds: Some(8), icount: Some(4), ..RunOptions::default() };
    let boot = boot_with("qemu-hm-budget", &machine(parts), opts);
    assert!(!boot.log("stopped").contains("duty: 30 cycles"), "{}", boot.log("stopped"));
    let hm = hm_log("qemu-hm-budget");
    let overruns = |name: &str| -> Vec<u64> {
        let tag = format!("partition {name} ");
        hm.lines().filter(|l| l.contains(&tag) && l.contains("BudgetOverrun")).map(hm_time_us).collect()
    };
    let in_duty = |name: &str| -> Vec<u64> {
        let (from, to) = duty_window(boot.log(name));
        overruns(name).into_iter().filter(|&t| t > from && t <= to).collect()
    };
    // 30 cycles of at least 10 ms: one that straddles a period boundary
    // may split its 5 ms below the budget.
    let (greedy, modest) = (in_duty("greedy"), in_duty("modest"));
    assert!(greedy.len() >= 20 && modest.is_empty(), "greedy {greedy:?}, modest {modest:?}:\n{hm}");
    // Once per period: a second report needs a new period and the budget
    // used again in it.
    for pair in overruns("greedy").windows(2) {
        assert!(pair[1] - pair[0] > 3_000, "two overruns {pair:?} us apart in one period:\n{hm}");
    }
    assert_eq!(overruns("stopped").len(), 1, "{hm}");
    assert!(boot.hypervisor.contains("partition stopped suspended by the health monitor"), "{}", boot.hypervisor);
}

/// The counter times, in microseconds, between which a guest ran its
/// duty cycles ("duty: ... from X us to Y us").
fn duty_window(log: &str) -> (u64, u64) {
    let line = log.lines().find(|l| l.contains("duty: 30 cycles")).unwrap_or_else(|| panic!("no duty cycles:\n{log}"));
    let time = |key: &str| -> u64 {
        let rest = line.split(key).nth(1).unwrap_or_else(|| panic!("no {key:?} in {line:?}"));
        rest.split(' ').next().and_then(|us| us.parse().ok()).unwrap_or_else(|| panic!("bad time in {line:?}"))
    };
    (time(" from "), time(" to "))
}

/// `reported = "reset-system"`: the report resets the whole machine, so
/// Partita boots again (and again, each time the partition reports), and
/// restarts by the health monitor are counted in the hypervisor's log.
#[test]
fn reset_system_reboots_the_machine_and_restarts_are_counted() {
    let reported = |action| RawHealth { reported: Some(action), ..RawHealth::default() };
    let parts = [
        part("fatal", &[1], "hm-report=5 ticks=2 period_ms=50").health(reported(RawAction::ResetSystem)),
        part("flaky", &[2], "hm-report=6 ticks=2 period_ms=50").health(reported(RawAction::Restart)),
    ];
    let boot = boot_with("qemu-hm-reset", &machine(parts), RunOptions { seconds: Some(6), ..RunOptions::default() });
    let boots = boot.hypervisor.lines().filter(|l| l.starts_with("Partita ") && l.contains(" starting on ")).count();
    assert!(boots >= 2, "{boots} boot(s) of Partita:\n{}", boot.hypervisor);
    assert!(boot.hypervisor.contains("partition fatal: the health monitor resets the system"), "{}", boot.hypervisor);
    assert!(boot.hypervisor.contains("partition flaky restarting (health monitor; restart 1)"), "{}", boot.hypervisor);
    let hm = hm_log("qemu-hm-reset");
    assert!(hm.lines().any(|l| l.contains("Reported(5)") && l.ends_with("action ResetSystem")), "{hm}");
}
