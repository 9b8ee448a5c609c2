//! Debian's perf and gdb inside the Linux partition (guests/linux's
//! `tools` job, from the disk), the user-visible side of how Partita gives
//! a guest the PMU and the debug registers: the PMU is hidden from the ID
//! registers and the tree, so perf counts software events and reports
//! cycles as not supported, never as a counter that reads zero; the
//! breakpoints, watchpoints and single step are each vCPU's own, so gdb's
//! hardware-assisted session on busybox stops where it must. Linux shares
//! pCPU 2 with a 1 kHz RTOS of higher priority, so the debug state goes
//! through vCPU switches while gdb uses it. Every assertion is on what
//! Linux printed.

mod common;

use common::linux::*;
use common::*;
use std::time::Duration;

/// A value of the job's `partita-linux: <tool> k=v ...` line.
fn value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace().find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
}

fn summary(output: &str, tool: &str) -> String {
    let prefix = format!("partita-linux: {tool} ");
    let line = output.lines().find(|l| l.starts_with(&prefix));
    line.unwrap_or_else(|| panic!("no {tool} line in:\n{output}")).to_owned()
}

#[test]
fn perf_counts_without_a_pmu_and_gdb_uses_the_debug_hardware_on_a_shared_pcpu() {
    let rtos = part("rtos", &[2], "timer_hz=1000 timer_ticks=1000000 ticks=1 period_ms=10").priority(200);
    let config = machine([rtos, linux("console=hvc0 earlycon").priority(64)]);
    let mut linux = Session::start("linux-tools", config, None);
    linux.wait_for(MARKER, 1, Duration::from_secs(HANG_LIMIT));
    linux.run("dmesg -n 1");

    let output = linux.run("/jobs/tools");
    let perf = summary(&output, "perf");
    let task_clock: f64 = value(&perf, "task-clock").and_then(|v| v.parse().ok()).expect(&output);
    assert!(task_clock > 0.0, "perf counted no task-clock:\n{output}");
    assert!(value(&perf, "context-switches").and_then(|v| v.parse::<u64>().ok()).is_some(), "{output}");
    assert_eq!(value(&perf, "cycles"), Some("not-supported"), "the hidden PMU must not count:\n{output}");
    // Linux found no PMU to drive, and so said nothing about a broken one.
    let pmu = linux.run("ls /sys/bus/event_source/devices/");
    assert!(!pmu.contains("armv8"), "a PMU device under Linux: {pmu}");

    // gdb stopped at every step, where the native run stops (the job's
    // comment says what each figure is).
    let gdb = summary(&output, "gdb");
    assert_eq!(value(&gdb, "prologue"), Some("1"), "{output}");
    assert_eq!(value(&gdb, "stepi"), Some("8"), "single step:\n{output}");
    assert_eq!(value(&gdb, "hbreak"), Some("12"), "hardware breakpoint:\n{output}");
    let rwatch: u32 = value(&gdb, "rwatch").and_then(|v| v.parse().ok()).expect(&output);
    assert!(rwatch > 12, "read watchpoint at {rwatch}:\n{output}");
    assert_eq!(value(&gdb, "watch"), Some("4"), "write watchpoint:\n{output}");
    assert!(output.contains("Old value = 0"), "{output}");

    // The RTOS would tick on for long: the run ends here.
    linux.typist.hang_up();
    let boot = linux.finish();
    let hm = hm_log("linux-tools");
    assert!(hm.trim().is_empty(), "health events:\n{hm}\n{}", boot.hypervisor);
}

#[test]
fn a_summary_value_is_read_by_its_key() {
    let line = "partita-linux: gdb prologue=1 stepi=8 hbreak=12";
    assert_eq!(value(line, "stepi"), Some("8"));
    assert_eq!(value(line, "hbreak"), Some("12"));
    assert_eq!(value(line, "watch"), None);
}
