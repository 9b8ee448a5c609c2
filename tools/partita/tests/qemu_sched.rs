//! Scheduling in QEMU: cyclic plans read back from the trace, fixed
//! priorities, vCPU states and migration. Runs use `-icount` where they
//! assert on timing, so host load cannot decide the outcome.

mod common;

use common::*;
use partita::build::repo_root;
use partita::run::RunOptions;
use partita::slots::{self, SlotRun, JITTER_BOUND_US};
use partita::trace::{read_file, Clock};

/// Counter ticks per microsecond on QEMU virt (62.5 MHz).
const TICKS_PER_US: u64 = 62;

fn part(name: &str, cpus: &str, bootargs: &str) -> String {
    Part { name, cpus, bootargs, phys: None }.toml(&guest("elf"))
}

fn slot(partition: &str, vcpu: u32, start: &str, duration: &str) -> String {
    format!("    [[plan.core.slot]]\n    partition = \"{partition}\"\n    vcpu = {vcpu}\n    start_us = \"{start}\"\n    duration_us = \"{duration}\"\n")
}

fn core(cpu: u32, frame: &str, slots: &[String]) -> String {
    format!("  [[plan.core]]\n  cpu = {cpu}\n  major_frame_us = \"{frame}\"\n{}", slots.concat())
}

fn plan(name: &str, cores: &[String]) -> String {
    format!("[[plan]]\nname = \"{name}\"\n{}\n", cores.concat())
}

const TRACED: &str = "[trace]\nenabled = true\nevents_per_cpu = 65536\n\n";

fn icount() -> RunOptions {
    RunOptions { seconds: Some(HANG_LIMIT), icount: Some(4), ..RunOptions::default() }
}

/// Two partitions share pCPU 1 in three slots with idle gaps, a third has
/// half of pCPU 2. Across fifty major frames every slot starts on time, no
/// vCPU runs outside its own slots, and the frame never drifts.
#[test]
fn cyclic_slots_start_on_time_and_nobody_runs_outside_them() {
    let args = "ticks=20 period_ms=25";
    let text = format!(
        "{TRACED}{}{}{}{}",
        part("a", "[1]", args),
        part("b", "[1]", args),
        part("c", "[2]", args),
        plan(
            "main",
            &[
                core(1, "10ms", &[slot("a", 0, "0us", "3ms"), slot("b", 0, "4ms", "3ms"), slot("a", 0, "7ms", "2ms")]),
                core(2, "10ms", &[slot("c", 0, "0us", "5ms")]),
            ]
        )
    );
    let boot = boot_with("qemu-cyclic", &text, icount());
    assert_powered_off(&boot);
    for name in ["a", "b", "c"] {
        assert!(boot.log(name).lines().any(|l| l == "tick 20"), "{name}: {}", boot.log(name));
    }
    let (meta, trace) = read_file(&repo_root().join("out/qemu-cyclic/trace.bin")).expect("the trace parses");
    assert!(trace.lost.iter().all(|&n| n == 0), "lost events: {:?}", trace.lost);
    let runs = slots::slot_runs(&meta, &trace);
    let on = |cpu: usize| runs.iter().filter(|r| r.cpu == cpu).copied().collect::<Vec<SlotRun>>();
    assert!(on(1).len() >= 50 * 3 && on(2).len() >= 50, "{} and {} slots", on(1).len(), on(2).len());
    assert!(on(0).is_empty() && on(3).is_empty(), "fixed-priority pCPUs have no slots");
    let bound = JITTER_BOUND_US * TICKS_PER_US;
    for run in &runs {
        assert!(run.seen - run.planned <= bound, "slot seen {} ticks late: {run:?}", run.seen - run.planned);
        if let Some(entered) = run.entered {
            assert!(entered - run.planned <= bound, "vCPU entered {} ticks late: {run:?}", entered - run.planned);
        }
    }
    let outside = slots::outside_slots(&meta, &trace, bound);
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
