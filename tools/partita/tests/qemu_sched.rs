//! Scheduling in QEMU: cyclic plans read back from the trace, fixed
//! priorities, vCPU states and migration. Runs use `-icount` where they
//! assert on timing, so host load cannot decide the outcome.

mod common;

use common::*;
use partita::config::raw::{RawCore, RawPlan, RawRight};
use partita::run::RunOptions;
use partita::trace::slots::{self, SlotRun, JITTER_BOUND_US};
use partita::trace::{read_file, Clock};

/// Counter ticks per microsecond on QEMU virt (62.5 MHz).
const TICKS_PER_US: u64 = 62;
const MS: u64 = 1000;

/// Ring size of the traced runs: room for the boots' set/way operations,
/// each two traced traps (a 16 MiB partition's 32 KiB slice in 16 KiB
/// steps).
const EVENTS: u32 = 98304;

/// `out/<name>/trace.bin`.
fn trace_of(name: &str) -> std::path::PathBuf {
    out_dir(name).join("trace.bin")
}

fn icount() -> RunOptions {
    RunOptions { seconds: Some(HANG_LIMIT), icount: Some(4), ..RunOptions::default() }
}

/// Two partitions share pCPU 1 in three slots with idle gaps, a third has
/// half of pCPU 2. Across fifty major frames every slot starts on time, no
/// vCPU runs outside its own slots, and the frame never drifts.
#[test]
fn cyclic_slots_start_on_time_and_nobody_runs_outside_them() {
    let args = "ticks=20 period_ms=25";
    let main = RawPlan::new("main")
        .core(RawCore::new(1, 10 * MS).slot("a", 0, 0, 3 * MS).slot("b", 0, 4 * MS, 3 * MS).slot(
            "a",
            0,
            7 * MS,
            2 * MS,
        ))
        .core(RawCore::new(2, 10 * MS).slot("c", 0, 0, 5 * MS));
    let config = machine([part("a", &[1], args), part("b", &[1], args), part("c", &[2], args)]).plan(main);
    let boot = boot_with("qemu-cyclic", &config.trace(EVENTS), icount());
    assert_powered_off(&boot);
    for name in ["a", "b", "c"] {
        assert!(boot.log(name).lines().any(|l| l == "tick 20"), "{name}: {}", boot.log(name));
    }
    let (meta, trace) = read_file(&trace_of("qemu-cyclic")).expect("the trace parses");
    assert!(trace.lost.iter().all(|&n| n == 0), "lost events: {:?}", trace.lost);
    let runs = slots::slot_runs(&meta, &trace);
    let on = |cpu: usize| runs.iter().filter(|r| r.cpu == cpu).copied().collect::<Vec<SlotRun>>();
    assert!(on(1).len() >= 50 * 3 && on(2).len() >= 50, "{} and {} slots", on(1).len(), on(2).len());
    assert!(on(0).is_empty() && on(3).is_empty(), "fixed-priority pCPUs have no slots");
    let bound = JITTER_BOUND_US * TICKS_PER_US;
    // The first frame is left out: under -icount, QEMU may not give a pCPU
    // back for the rest of a slot after its first timer write (its round
    // robin hands the other busy vCPU a budget up to the next deadline).
    let frame_ticks = 625_000;
    let first = runs.iter().map(|r| r.planned).min().unwrap_or(0);
    let settled: Vec<SlotRun> = runs.iter().filter(|r| r.planned >= first + frame_ticks).copied().collect();
    for run in &settled {
        assert!(run.seen - run.planned <= bound, "slot seen {} ticks late: {run:?}", run.seen - run.planned);
        if let Some(entered) = run.entered {
            assert!(entered < run.end, "vCPU entered after its slot: {run:?}");
        }
    }
    // The same QEMU turn can come at a later slot too: a pCPU that arms
    // its timer as both pCPUs start slots hands its turn to the other,
    // whose guest spins until that timer (a slot's length of guest time,
    // in which the trace of the first shows nothing at all). So the entry
    // bound holds for all but one slot in a hundred.
    let late: Vec<&SlotRun> =
        settled.iter().filter(|r| r.entered.is_some_and(|entered| entered - r.planned > bound)).collect();
    assert!(late.len() * 100 <= settled.len(), "{} of {} slots entered late: {late:?}", late.len(), settled.len());
    let outside: Vec<_> = slots::outside_slots(&meta, &trace, bound)
        .into_iter()
        .filter(|v| v.interval.start >= first + frame_ticks)
        .collect();
    assert!(outside.is_empty(), "{} interval(s) outside their slots, first {:?}", outside.len(), outside[0]);
    // No drift: slot 0 of pCPU 1 starts exactly one frame (625,000 ticks) after its predecessor.
    let starts: Vec<u64> = on(1).iter().filter(|r| r.slot == 0).map(|r| r.planned).collect();
    assert!(starts.windows(2).all(|w| w[1] - w[0] == 625_000), "{starts:?}");
    // Both cyclic pCPUs share the frame origin.
    let first = |cpu| on(cpu).iter().find(|r| r.slot == 0).map(|r| r.planned).unwrap();
    assert_eq!((first(2) - first(1)) % 625_000, 0, "pCPU 2's frames are not aligned with pCPU 1's");
    let j = slots::jitter(&runs, &Clock::of(&trace));
    println!(
        "{} slots, seen late mean {:.3} max {:.3} us, entered late mean {:.3} max {:.3} us",
        j.slots, j.seen_mean_us, j.seen_max_us, j.entry_mean_us, j.entry_max_us
    );
}

/// The hypervisor log and one partition's lines, for failure messages.
fn lines(boot: &Boot, name: &str) -> String {
    format!("{name}:\n{}\nhypervisor:\n{}", boot.log(name), boot.hypervisor)
}

/// A partition starts its vCPU 1 by hypercall, suspends it (it stops
/// counting, an SGI sent meanwhile stays pending), resumes it (it counts
/// again and takes the SGI), halts it (final: neither start nor resume
/// brings it back).
#[test]
fn a_partition_starts_suspends_resumes_and_halts_its_own_vcpu() {
    let boot = boot("qemu-vcpu-states", &machine([part("own", &[1, 2], "vcpu-ctl=1 ticks=1")]), HANG_LIMIT);
    assert_powered_off(&boot);
    let log = boot.log("own");
    for expected in [
        "vcpu-ctl: start 0 state 2",
        "vcpu-ctl: suspend 0 state 3 advanced 0",
        "vcpu-ctl: sgi while suspended taken 0",
        "vcpu-ctl: resume 0 state 2 advanced yes sgi taken 1",
        "vcpu-ctl: halt 0 state 4 advanced 0",
        "vcpu-ctl: after halt start -4 resume -4; vcpu 7 suspend -2",
    ] {
        assert!(log.lines().any(|l| l == expected), "missing {expected:?} in\n{}", lines(&boot, "own"));
    }
}

/// A system partition suspends and resumes another: the victim prints
/// nothing in between and goes on afterwards. A partition without the
/// right is refused, and the refusal is logged.
#[test]
fn a_system_partition_suspends_and_resumes_another_and_rights_are_checked() {
    let config = machine([
        part("sys", &[3], "part-ctl=suspend target=1 ticks=1").rights(&[RawRight::Suspend, RawRight::Resume]),
        part("victim", &[1], "ticks=30 period_ms=20"),
        part("rogue", &[2], "part-ctl=halt target=1 ctl_after_ms=700 ticks=1"),
    ]);
    // Under -icount the victim's pCPU cannot fall behind the system
    // partition's 10 ms settling time, however loaded the host is.
    let boot = boot_with("qemu-partition-suspend", &config, icount());
    assert_powered_off(&boot);
    let sys = boot.log("sys");
    assert!(sys.lines().any(|l| l == "part-ctl: suspend 0 state 4"), "{}", lines(&boot, "sys"));
    assert!(sys.lines().any(|l| l == "part-ctl: resume 0 state 0"), "{}", lines(&boot, "sys"));
    // Until Partita resumed it: the system partition's own line comes once
    // its call has returned, and the victim may print before it.
    let (from, to) = (boot.position("part-ctl: suspend 0"), boot.position("partition sys: Resume of partition victim"));
    let during = boot.console[from + 1..to].iter().filter(|l| l.starts_with("[victim]")).count();
    assert_eq!(during, 0, "the suspended partition printed:\n{}", boot.console[from..=to].join("\n"));
    assert!(boot.lines_after(to, "[victim] tick") > 0, "the victim never resumed");
    assert!(boot.log("victim").lines().any(|l| l == "tick 30"), "{}", lines(&boot, "victim"));
    let refused = |l: &str| l.starts_with("part-ctl: halt -3 state ") && l.ends_with("; resume then -3");
    assert!(boot.log("rogue").lines().any(refused), "{}", lines(&boot, "rogue"));
    let hm = hm_log("qemu-partition-suspend");
    let denied: Vec<&str> = hm.lines().filter(|l| l.contains("partition rogue vcpu 0 IllegalHypercall")).collect();
    assert_eq!(denied.len(), 2, "halt and resume, both beyond rogue's rights, are health events:\n{hm}");
    assert!(denied.iter().all(|l| l.ends_with("action Log")), "{hm}");
}

/// One system partition restarts another from its images, a second one
/// halts it for good: resume is then refused, and the halted partition
/// counts as ended, so the machine powers off.
#[test]
fn a_system_partition_restarts_and_halts_another() {
    let config = machine([
        part("restarter", &[3], "part-ctl=restart target=1 ticks=1").rights(&[RawRight::Restart]),
        part("victim", &[1], "ticks=0 period_ms=20"),
        part("halter", &[2], "part-ctl=halt target=1 ctl_after_ms=2000 ticks=1")
            .rights(&[RawRight::Halt, RawRight::Resume]),
    ]);
    let boot = boot_with("qemu-partition-restart", &config, icount());
    assert_powered_off(&boot);
    // The call returns once the restart has begun: the victim reads as
    // restarting (3) until its pCPU has reloaded it, then running (0).
    let restarted = |l: &str| l == "part-ctl: restart 0 state 3" || l == "part-ctl: restart 0 state 0";
    assert!(boot.log("restarter").lines().any(restarted), "{}", lines(&boot, "restarter"));
    let greetings = boot.log("victim").lines().filter(|l| l.starts_with("hello from partition victim")).count();
    assert_eq!(greetings, 2, "{}", lines(&boot, "victim"));
    assert!(
        boot.log("halter").lines().any(|l| l == "part-ctl: halt 0 state 5; resume then -4"),
        "{}",
        lines(&boot, "halter")
    );
    let halted = boot.position("part-ctl: halt 0");
    assert_eq!(boot.lines_after(halted, "[victim]"), 0, "the halted partition went on");
}

/// A plan switch asked for in the middle of a major frame takes effect
/// exactly at the next frame boundary, on the instant the call returned;
/// a partition without the right is refused. The two callers share pCPU 2:
/// under `-icount` QEMU runs its vCPUs round robin in one thread, and with a
/// third busy one a cyclic pCPU's timer can be taken a millisecond late.
#[test]
fn a_plan_switch_happens_exactly_at_the_next_major_frame() {
    let config = machine([
        part("worker", &[1], "ticks=20 period_ms=25"),
        part("sys", &[2], "plan-switch=1 ctl_after_ms=53 ticks=1").rights(&[RawRight::SwitchPlan]),
        part("rogue", &[2], "plan-switch=0 ticks=1"),
    ])
    .plan(RawPlan::new("normal").core(RawCore::new(1, 10 * MS).slot("worker", 0, 0, 5 * MS)))
    .plan(RawPlan::new("degraded").core(RawCore::new(1, 20 * MS).slot("worker", 0, 15 * MS, 5 * MS)));
    let boot = boot_with("qemu-plan-switch", &config.trace(EVENTS), icount());
    assert_powered_off(&boot);
    assert!(boot.log("rogue").lines().any(|l| l == "plan-switch: to 0 status -3 at 0x0"), "{}", lines(&boot, "rogue"));
    let sys = boot.log("sys");
    let line = sys
        .lines()
        .find(|l| l.starts_with("plan-switch: to 1 status 0 at 0x"))
        .unwrap_or_else(|| panic!("{}", lines(&boot, "sys")));
    let instant = u64::from_str_radix(line.rsplit("0x").next().unwrap(), 16).unwrap();
    assert!(sys.lines().any(|l| l.starts_with("plan-switch: now 1 from")), "{}", lines(&boot, "sys"));
    let (meta, trace) = read_file(&trace_of("qemu-plan-switch")).expect("the trace parses");
    let runs: Vec<SlotRun> = slots::slot_runs(&meta, &trace).into_iter().filter(|r| r.cpu == 1).collect();
    let (before, after): (Vec<&SlotRun>, Vec<&SlotRun>) = runs.iter().partition(|r| r.plan == 0);
    assert!(before.len() > 3 && after.len() > 3, "{} slots before, {} after", before.len(), after.len());
    assert!(before.iter().all(|r| r.planned < instant), "plan 0 ran past the switch");
    assert!(after.iter().all(|r| r.planned >= instant), "plan 1 ran before the switch");
    assert_eq!((instant - before[0].planned) % 625_000, 0, "the switch is not on a frame boundary of plan 0");
    assert_eq!(
        after[0].planned,
        instant + 15_000 * TICKS_PER_US + 15_000 / 2,
        "plan 1's first slot, 15 ms into its frame"
    );
    assert!(after.windows(2).all(|w| w[1].planned - w[0].planned == 1_250_000), "plan 1's 20 ms frames drift");
    let outside = slots::outside_slots(&meta, &trace, JITTER_BOUND_US * TICKS_PER_US);
    assert!(outside.is_empty(), "{outside:#?}");
}

/// vlk's migration: `gpos`'s vCPU 0 shares pCPU 1 with the more urgent
/// `rtos`. Whenever `rtos` becomes ready, vCPU 0 moves to pCPU 2 (where
/// its sibling vCPU 1 lives) and comes back when `rtos` idles. Across
/// hundreds of moves it keeps counting and loses no interrupt: every SGI
/// each way and every tick of its virtual timer arrive.
#[test]
fn a_migrating_vcpu_keeps_counting_and_loses_no_interrupt() {
    let config = machine([
        part("rtos", &[1], "mask-spin=300 timer_hz=200 timer_ticks=400 ticks=1 period_ms=10").priority(200),
        // vCPU 0 may move to pCPU 2.
        part("gpos", &[1, 2], "sgi=100 timer_hz=1000 timer_ticks=2000 ticks=20 period_ms=50").migrate(0, &[2]),
    ]);
    let boot = boot_with("qemu-migration", &config.trace(EVENTS), icount());
    assert_powered_off(&boot);
    let gpos = boot.log("gpos");
    for expected in ["sgi: vcpu 1 received 100", "sgi: sent 100 received 100", "tick 20"] {
        assert!(gpos.lines().any(|l| l == expected), "missing {expected:?}\n{}", lines(&boot, "gpos"));
    }
    assert_eq!(timer_counts(gpos).0, 2000, "{}", lines(&boot, "gpos"));
    assert_eq!(timer_counts(boot.log("rtos")).0, 400, "{}", lines(&boot, "rtos"));
    let (_, trace) = read_file(&trace_of("qemu-migration")).expect("the trace parses");
    assert!(trace.lost.iter().all(|&n| n == 0), "lost events: {:?}", trace.lost);
    let moves: Vec<(u64, u32)> = trace.cpus[1]
        .iter()
        .filter(|e| e.kind == partita_core::trace::Kind::Migrate && (e.partition, e.vcpu) == (1, 0))
        .map(|e| (e.time, e.arg))
        .collect();
    let away = moves.iter().filter(|m| m.1 == 2).count();
    let back = moves.iter().filter(|m| m.1 == 1).count();
    assert!(away >= 50 && back >= 50, "{away} moves away, {back} back");
    assert!(moves.windows(2).all(|w| w[0].1 != w[1].1), "moves must alternate: {moves:?}");
    let intervals = partita::trace::vcpu_intervals(&trace);
    let on = |cpu| intervals.iter().filter(|i| (i.partition, i.vcpu, i.cpu) == (1, 0, cpu)).count();
    assert!(on(1) > 0 && on(2) > 0, "vCPU 0 ran {} times on pCPU 1 and {} on pCPU 2", on(1), on(2));
    let (there, home) = migration_latencies(&trace, &moves);
    println!(
        "{away} moves away, {back} back; ran on pCPU 2 after {} of them, in median {:.1} mean {:.1} max {:.1} us; \
         back on pCPU 1 after {}, in median {:.1} mean {:.1} max {:.1} us",
        there.len(),
        median(&there),
        mean(&there),
        max(&there),
        home.len(),
        median(&home),
        mean(&home),
        max(&home)
    );
}

/// For each move, the time until the vCPU entered the guest on its new
/// pCPU before it moved again, in microseconds: moves away, then moves back.
fn migration_latencies(trace: &partita_core::trace::Trace, moves: &[(u64, u32)]) -> (Vec<f64>, Vec<f64>) {
    let entry = |cpu: usize, from: u64, until: u64| {
        trace.cpus[cpu]
            .iter()
            .filter(|e| e.kind == partita_core::trace::Kind::VcpuIn && (e.partition, e.vcpu) == (1, 0))
            .find(|e| (from..until).contains(&e.time))
            .map(|e| (e.time - from) as f64 / TICKS_PER_US as f64)
    };
    let mut there = Vec::new();
    let mut home = Vec::new();
    for (i, &(time, to)) in moves.iter().enumerate() {
        let until = moves.get(i + 1).map_or(u64::MAX, |m| m.0);
        match (entry(to as usize, time, until), to) {
            (Some(us), 2) => there.push(us),
            (Some(us), _) => home.push(us),
            (None, _) => {}
        }
    }
    (there, home)
}

fn median(v: &[f64]) -> f64 {
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

/// Three partitions of priorities 150, 100 and 50 on one pCPU, under
/// -icount. `high` waits for its 100 Hz timer between ticks and preempts
/// whatever runs the moment each arrives: none is late. `mid` and `low` are
/// busy all the time: `low` does not even boot before `mid` has finished.
#[test]
fn fixed_priorities_preempt_in_the_configured_order() {
    let config = machine([]).quantum_us(2000).partitions([
        part("low", &[1], "ticks=10 period_ms=10").priority(50),
        part("high", &[1], "timer_hz=100 timer_ticks=50 ticks=1 period_ms=1").priority(150),
        part("mid", &[1], "ticks=30 period_ms=10").priority(100),
    ]);
    let boot = boot_with("qemu-fixed-priority", &config, icount());
    assert_powered_off(&boot);
    assert_eq!(timer_counts(boot.log("high")), (50, 0), "{}", lines(&boot, "high"));
    let mid_done = boot.position("[mid] tick 30");
    let low_starts = boot.position("[low] hello from partition low");
    assert!(mid_done < low_starts, "low ran before mid finished:\n{}", boot.console.join("\n"));
    assert!(boot.log("low").lines().any(|l| l == "tick 10"), "{}", lines(&boot, "low"));
}

/// `count: <n> in <ms> ms` -> n.
fn count(log: &str) -> u64 {
    let line = log
        .lines()
        .find(|l| l.starts_with("count: ") && l.ends_with(" ms"))
        .unwrap_or_else(|| panic!("no count in\n{log}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Two partitions of one priority count on one pCPU over the same absolute
/// one-second window, under -icount: round robin gives each half, within
/// one quantum's worth of iterations.
#[test]
fn round_robin_is_fair_within_a_priority() {
    const QUANTUM_MS: u64 = 5;
    const WINDOW_MS: u64 = 1000;
    let args = format!("count_ms={WINDOW_MS} count_at_ms=3000 ticks=1 period_ms=1");
    let config = machine([])
        .quantum_us((QUANTUM_MS * 1000) as u32)
        .partitions([part("left", &[1], &args), part("right", &[1], &args)]);
    let boot = boot_with("qemu-round-robin", &config, icount());
    assert_powered_off(&boot);
    for name in ["left", "right"] {
        assert!(!boot.log(name).contains("started"), "{name} began counting late:\n{}", lines(&boot, name));
    }
    let (left, right) = (count(boot.log("left")), count(boot.log("right")));
    let quantum_worth = (left + right) * QUANTUM_MS / WINDOW_MS;
    println!("left {left}, right {right}, difference {}, one quantum {quantum_worth}", left.abs_diff(right));
    assert!(left > 0 && right > 0);
    assert!(
        left.abs_diff(right) <= quantum_worth,
        "left {left}, right {right}: more than one quantum ({quantum_worth}) apart"
    );
}

/// Two partitions that sleep on their virtual timers share a pCPU: each
/// wakes on its own timer, and the less urgent one runs between the other's
/// wake-ups.
#[test]
fn two_sleepers_on_one_pcpu_both_get_their_timers() {
    let config = machine([
        part("rtos", &[1], "duty_busy_us=0 duty_idle_us=10000 duty_cycles=100 ticks=1 period_ms=1").priority(200),
        part("other", &[1], "duty_busy_us=0 duty_idle_us=7000 duty_cycles=140 ticks=1 period_ms=1").priority(64),
    ]);
    let boot = boot("qemu-two-sleepers", &config, HANG_LIMIT);
    assert_powered_off(&boot);
    assert!(boot.log("rtos").contains("duty: 100 cycles"), "{}", lines(&boot, "rtos"));
    assert!(boot.log("other").contains("duty: 140 cycles"), "{}", lines(&boot, "other"));
}

/// vlk's migration round trip: `rtos` sleeps 8 ms and computes 2 ms, a
/// hundred times, on pCPU 1; `gpos` busy-waits its ticks all along and moves
/// to the idle pCPU 2 for each of `rtos`'s bursts, then comes back. Wall
/// clock, not -icount: in QEMU's icount mode a WFI on pCPU 1 stops trapping
/// while the other vCPU runs (QEMU completes a WFI at once when it believes
/// work is pending), so `rtos` never looks idle there.
#[test]
fn a_migrating_vcpu_makes_the_round_trip_for_every_burst() {
    let config = machine([
        part("rtos", &[1], "duty_busy_ms=2 duty_idle_ms=8 duty_cycles=100 ticks=1 period_ms=1").priority(200),
        // vCPU 0 may move to pCPU 2.
        part("gpos", &[1], "ticks=300 period_ms=10").migrate(0, &[2]),
    ]);
    let boot = boot("qemu-migration-round-trip", &config.trace(EVENTS), HANG_LIMIT);
    assert_powered_off(&boot);
    assert!(boot.log("rtos").contains("duty: 100 cycles"), "{}", lines(&boot, "rtos"));
    assert!(boot.log("gpos").lines().any(|l| l == "tick 300"), "{}", lines(&boot, "gpos"));
    let (_, trace) = read_file(&trace_of("qemu-migration-round-trip")).expect("the trace parses");
    let moves: Vec<(u64, u32)> = trace.cpus[1]
        .iter()
        .filter(|e| e.kind == partita_core::trace::Kind::Migrate && (e.partition, e.vcpu) == (1, 0))
        .map(|e| (e.time, e.arg))
        .collect();
    let (there, home) = migration_latencies(&trace, &moves);
    let away = moves.iter().filter(|m| m.1 == 2).count();
    assert!(away >= 50, "only {away} moves away for 100 bursts");
    assert!(there.len() * 2 >= away, "the vCPU ran on pCPU 2 after only {} of {away} moves", there.len());
    println!(
        "{away} moves away; entered on pCPU 2 in median {:.1} max {:.1} us, back on pCPU 1 in median {:.1} max {:.1} us; \
         round trip median {:.1} us (wall clock)",
        median(&there), max(&there), median(&home), max(&home), median(&there) + median(&home)
    );
}
