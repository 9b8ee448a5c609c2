//! Lazy FP/SIMD switching in QEMU (`partita_core::partition::fp`): every
//! vCPU reads back the FP/SIMD values it wrote, across slot switches,
//! round-robin turns and migrations, while the trace shows the values
//! moving only when another vCPU on the same pCPU needs the registers.

mod common;

use common::*;
use partita::config::raw::{RawCore, RawPlan};
use partita::run::RunOptions;
use partita::trace::read_file;
use partita_core::trace::{Event, Kind, Trace};

const MS: u64 = 1000;
/// Ring size: the boots' set/way traps and the FP window's switches fit.
const EVENTS: u32 = 120_000;

/// The `fp:` line of vCPU `vcpu`: its rounds and mismatches.
fn fp_result(boot: &Boot, partition: &str, vcpu: u32) -> (u64, u64) {
    let prefix = format!("fp: vcpu {vcpu} rounds ");
    let line = boot
        .log(partition)
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("{partition}: no {prefix:?} line\n{}", boot.log(partition)))
        .to_string();
    let words: Vec<&str> = line.split_whitespace().collect();
    let number = |i: usize| words[i].parse::<u64>().unwrap_or_else(|_| panic!("{line:?}"));
    (number(4), number(6))
}

fn loads(trace: &Trace, cpu: usize) -> Vec<&Event> {
    trace.cpus[cpu].iter().filter(|e| e.kind == Kind::FpLoad).collect()
}

/// The vCPU whose values a load saved first, as (partition, vCPU).
fn saved_first(event: &Event) -> Option<(u8, u8)> {
    (event.arg != 0).then(|| (((event.arg >> 16) - 1) as u8, (event.arg & 0xffff) as u8))
}

/// pCPU 1 alternates `a` and `b` in 1 ms slots, both keeping values in
/// the FP/SIMD registers; pCPU 2 alternates `c`, which does too, and `d`,
/// which never touches them. Nobody loses a value; on pCPU 1 each turn
/// loads its values once, saving the other's, while on pCPU 2 `c` loads its
/// values once in the whole run: `d`'s slots cost it nothing.
#[test]
fn fp_simd_values_move_only_when_another_vcpu_needs_the_registers() {
    // One window for all, past every boot.
    let fp = "fp_at_ms=4000 fp_ms=500 ticks=1 period_ms=1";
    let plain = "ticks=10 period_ms=40";
    let main = RawPlan::new("main")
        .core(RawCore::new(1, 2 * MS).slot("a", 0, 0, MS).slot("b", 0, MS, MS))
        // Off pCPU 1's edges: under -icount, QEMU may hand a busy pCPU the
        // whole budget up to the next deadline when both take theirs at once
        // (see qemu_sched's cyclic test), and starve the other's slot.
        .core(RawCore::new(2, 2 * MS).slot("c", 0, MS / 2, MS).slot("d", 0, 3 * MS / 2, MS / 2));
    let config =
        machine([part("a", &[1], fp), part("b", &[1], fp), part("c", &[2], fp), part("d", &[2], plain)]).plan(main);
    let opts = RunOptions { seconds: Some(HANG_LIMIT), icount: Some(4), ..RunOptions::default() };
    let boot = boot_with("qemu-fp-cyclic", &config.trace(EVENTS), opts);
    assert_powered_off(&boot);
    for name in ["a", "b", "c"] {
        let (rounds, mismatches) = fp_result(&boot, name, 0);
        assert_eq!(mismatches, 0, "{name}: {}", boot.log(name));
        assert!(rounds >= 100, "{name}: only {rounds} rounds");
    }
    let (_, trace) = read_file(&out_dir("qemu-fp-cyclic").join("trace.bin")).expect("the trace parses");
    assert!(trace.lost.iter().all(|&n| n == 0), "lost events: {:?}", trace.lost);
    let (a, b, c, d) = (0u8, 1u8, 2u8, 3u8);
    let on1 = loads(&trace, 1);
    assert!(on1.iter().all(|l| l.partition == a || l.partition == b), "only a and b load on pCPU 1");
    // After the first of each, every load saves the other FP user's values.
    let later: Vec<&&Event> = on1.iter().skip(2).collect();
    assert!(later.len() >= 100, "only {} loads on pCPU 1", on1.len());
    for load in &later {
        let other = if load.partition == a { b } else { a };
        assert_eq!(saved_first(load), Some((other, 0)), "{load:?}");
    }
    let on2 = loads(&trace, 2);
    assert_eq!(on2.len(), 1, "c's values stay in pCPU 2's registers: {on2:?}");
    assert_eq!((on2[0].partition, saved_first(on2[0])), (c, None));
    assert!(trace.cpus.iter().flatten().all(|ev| ev.kind != Kind::FpLoad || ev.partition != d));
    println!("{} FP/SIMD loads on pCPU 1, {} on pCPU 2", on1.len(), on2.len());
}

/// vlk's migration with FP/SIMD: `gpos`'s vCPU 0 keeps values in the
/// registers while it moves between pCPU 1, whenever `rtos` idles, and
/// pCPU 2, where its sibling vCPU 1 keeps values of its own. A migrating
/// vCPU takes its values along as it leaves; both read back theirs. Wall
/// clock, as `qemu_sched`'s round trip, for the same reason.
#[test]
fn a_migrating_vcpu_takes_its_fp_simd_values_along() {
    let config = machine([
        // Bursts for 3 s and values kept for 2 s: on the wall clock the two
        // boots end at different times, and the windows must still overlap.
        part("rtos", &[1], "duty_busy_ms=2 duty_idle_ms=8 duty_cycles=300 ticks=1 period_ms=1").priority(200),
        part("gpos", &[1, 2], "fp_ms=2000 ticks=1 period_ms=1").migrate(0, &[2]),
    ]);
    let boot = boot("qemu-fp-migration", &config.trace(EVENTS), HANG_LIMIT);
    assert_powered_off(&boot);
    for vcpu in [0, 1] {
        let (rounds, mismatches) = fp_result(&boot, "gpos", vcpu);
        assert_eq!(mismatches, 0, "vCPU {vcpu}: {}", boot.log("gpos"));
        assert!(rounds >= 100, "vCPU {vcpu}: only {rounds} rounds");
    }
    let (_, trace) = read_file(&out_dir("qemu-fp-migration").join("trace.bin")).expect("the trace parses");
    let moves = trace.cpus[1].iter().filter(|e| e.kind == Kind::Migrate && (e.partition, e.vcpu) == (1, 0)).count();
    let away = loads(&trace, 2).into_iter().filter(|l| (l.partition, l.vcpu) == (1, 0)).count();
    assert!(moves >= 50, "only {moves} moves");
    assert!(away >= 10, "vCPU 0 loaded its values on pCPU 2 only {away} times in {moves} moves");
    println!("{moves} moves; vCPU 0 loaded its values on pCPU 2 {away} times");
}
