//! Architecture conformance in QEMU: the EL1 physical timer works for
//! guests, each vCPU with its own, and level-triggered interrupts keep
//! level semantics. The test guest's `arch=ptimer` and `arch=level` print
//! the same lines natively.

mod common;

use common::*;
use partita::config::raw::RawDevice;

/// `ptimer: ppi 30, <n> rounds of <ms> ms: fired .., early .., without
/// istatus .., extra .., <k> over 50 ms late, late max <us> us` -> (the
/// line up to the lateness, k).
fn ptimer_result(log: &str) -> (String, u32) {
    let line = log.lines().find(|l| l.starts_with("ptimer: ")).unwrap_or_else(|| panic!("no ptimer line in\n{log}"));
    let (counts, late) = line.rsplit_once(", ").and_then(|(head, _)| head.rsplit_once(", ")).expect(line);
    let over = late.split(' ').next().and_then(|k| k.parse().ok()).expect(line);
    (counts.to_owned(), over)
}

/// Every round fired once, never early, with ISTATUS, and no interrupt
/// came that this vCPU had not asked for. A vCPU left asleep past its
/// deadline is woken only by its guest's 5 s backstop, which makes every
/// sleeping round (half of them) late; a busy host may delay a few.
fn expect_rounds(log: &str, rounds: u32, ms: u32) {
    let (counts, late) = ptimer_result(log);
    let fired =
        format!("ptimer: ppi 30, {rounds} rounds of {ms} ms: fired {rounds}, early 0, without istatus 0, extra 0");
    assert_eq!(counts, fired, "{log}");
    assert!(late * 4 < rounds, "{late} rounds over 50 ms late:\n{log}");
}

/// One partition alone on its pCPU: every deadline gives exactly one PPI
/// 30 with ISTATUS set, never early, whether the vCPU waits in WFI (off
/// its pCPU) or spins.
#[test]
fn the_physical_timer_fires_at_its_deadline() {
    let boot = boot("qemu-ptimer", &machine([part("alone", &[1], "arch=ptimer ticks=1 period_ms=1")]), HANG_LIMIT);
    assert_powered_off(&boot);
    expect_rounds(boot.log("alone"), 20, 5);
}

/// Two partitions share a pCPU, round robin, each with its own physical
/// timer armed at other deadlines: each takes only its own interrupts,
/// none early. The one waiting in WFI while the other runs is woken at its
/// deadline; one that spins gets its interrupt when it is back.
#[test]
fn partitions_sharing_a_pcpu_each_have_their_own_physical_timer() {
    let parts = [
        part("three", &[1], "arch=ptimer ptimer_ms=3 ptimer_rounds=30 ticks=1 period_ms=1"),
        part("seven", &[1], "arch=ptimer ptimer_ms=7 ptimer_rounds=14 ticks=1 period_ms=1"),
    ];
    let boot = boot("qemu-ptimer-shared", &machine(parts), HANG_LIMIT);
    assert_powered_off(&boot);
    for (name, rounds, ms) in [("three", 30, 3), ("seven", 14, 7)] {
        expect_rounds(boot.log(name), rounds, ms);
    }
}

/// A slow handler on a shared pCPU: it holds its timer's line for 2 ms,
/// twice the quantum, so the other partition runs while its interrupt is
/// active. Natively an active interrupt does not signal again, and the line
/// is low by the completion; a vCPU switched out mid-handler must find it
/// so when it is back, not a second delivery of the same deadline.
#[test]
fn a_timer_handled_across_a_switch_is_delivered_once() {
    let parts = [
        part("slow", &[1], "arch=ptimer ptimer_ms=3 ptimer_rounds=20 ptimer_hold_us=2000 ticks=1 period_ms=1"),
        part("busy", &[1], "arch=ptimer ptimer_ms=7 ptimer_rounds=10 ptimer_hold_us=2000 ticks=1 period_ms=1"),
    ];
    let boot = boot("qemu-ptimer-slow", &machine(parts), HANG_LIMIT);
    assert_powered_off(&boot);
    for (name, rounds, ms) in [("slow", 20, 3), ("busy", 10, 7)] {
        expect_rounds(boot.log(name), rounds, ms);
    }
}

/// QEMU virt's PL031 passed through (SPI 2, INTID 34) and both EL1 timers:
/// a line that rose and fell while its interrupt was disabled is not
/// delivered once it is enabled, ISPENDR shows the line, and each
/// assertion is taken once.
#[test]
fn level_interrupts_follow_their_line() {
    let rtc = RawDevice::new("rtc", 0x0901_0000, 0x1000, &["arm,pl031", "arm,primecell"]).interrupts(&[34]);
    let boot =
        boot("qemu-level", &machine([part("level", &[1], "arch=level ticks=1 period_ms=1").device(rtc)]), HANG_LIMIT);
    assert_powered_off(&boot);
    let log = boot.log("level");
    for expected in [
        "level: spi 34 disabled: pending while high 1, after clear 0; taken after enable 0",
        "level: spi 34 enabled: 5 assertions, pending while masked 5, taken 5",
        "level: vtimer ppi 27 disabled: pending while high 1, after stop 0; taken after enable 0; armed: taken 1",
        "level: ptimer ppi 30 disabled: pending while high 1, after stop 0; taken after enable 0; armed: taken 1",
    ] {
        assert!(log.lines().any(|l| l == expected), "missing {expected:?} in\n{log}");
    }
    assert!(!boot.hypervisor.contains(" stopped: "), "{}", boot.hypervisor);
}
