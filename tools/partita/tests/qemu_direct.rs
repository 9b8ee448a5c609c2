//! Direct interrupt delivery in QEMU (`interrupts = "direct"`,
//! docs/interrupts.md): a partition that owns its cores takes its timer
//! and its SGIs from the physical GIC with no exit, and cannot reach
//! Partita's interrupts there (group 0) nor another partition's. Its SGI
//! sends still trap, and untraced the EL2 vector answers them itself.
//! Wall clock, but for the SGI's cost: under -icount QEMU's round robin,
//! not Partita, would decide when a sender's SGI reaches another core.

mod common;

use common::*;
use partita::bench::ipc;
use partita::config::raw::{RawAction, RawHealth};
use partita::run::RunOptions;
use partita_core::trace::Kind;

const TIMER_TICKS: u64 = 500;

fn wall(seconds: u64) -> RunOptions {
    RunOptions { seconds: Some(seconds), ..RunOptions::default() }
}

/// The timer's interrupts and the SGIs between two vCPUs arrive, and the
/// trace shows Partita never took one of them: no interrupt taken but its
/// own kick (SGI 15, for CPU_ON), none injected, no list register used.
#[test]
fn a_direct_partition_takes_its_timer_and_sgis_without_exits() {
    let timer = format!("timer_hz=1000 timer_ticks={TIMER_TICKS} ticks=1 period_ms=1");
    let parts =
        [part("rt", &[1], &timer).exclusive().direct(), part("pair", &[2, 3], "sgi=100 ticks=1").exclusive().direct()];
    let boot = boot_with("qemu-direct", &machine(parts).trace(65536), wall(HANG_LIMIT));
    assert_powered_off(&boot);
    assert_eq!(timer_counts(boot.log("rt")).0, TIMER_TICKS, "{}", boot.log("rt"));
    assert!(boot.log("pair").contains("sgi: sent 100 received 100"), "{}", boot.log("pair"));
    let (_, trace) = partita::trace::read_file(&out_dir("qemu-direct").join("trace.bin")).expect("the trace parses");
    assert!(trace.lost.iter().all(|&n| n == 0), "{:?}", trace.lost);
    for cpu in 1..=3 {
        let taken: Vec<u32> = trace.cpus[cpu].iter().filter(|e| e.kind == Kind::IrqTaken).map(|e| e.arg).collect();
        assert!(taken.iter().all(|&intid| intid == 15), "pCPU {cpu} took {taken:?}");
        let injected = trace.cpus[cpu].iter().filter(|e| e.kind == Kind::IrqInjected).count();
        assert_eq!(injected, 0, "pCPU {cpu} injected virtual interrupts");
    }
}

/// A guest on a direct core zeroes the priority mask and group 0's enable,
/// disables and demotes Partita's kick and timer in its redistributor,
/// sends SGI 15 of both groups to every other core, masks every exception
/// class and spins. Partita's timer still ends each boot at its watchdog
/// and restarts it, and the neighbour on the next core, whose interrupts
/// are virtual, keeps its time and hears of nothing.
#[test]
fn a_direct_guest_cannot_mask_or_steal_partitas_interrupts_nor_reach_others() {
    const NEIGHBOUR_TICKS: u64 = 60;
    let restart = RawHealth { watchdog: Some(RawAction::Restart), ..RawHealth::default() };
    let attacker = part("attacker", &[1], "watchdog-kicks=1 cpuif-attack=1 mask-spin=60000 ticks=1")
        .exclusive()
        .direct()
        // Long enough for a boot's set/way sweep to end before it expires.
        .watchdog_us(400_000)
        .health(restart);
    let timer = format!("timer_hz=20 timer_ticks={NEIGHBOUR_TICKS} ticks=1 period_ms=1");
    let parts = [attacker, part("neighbour", &[2], &timer).exclusive()];
    let boot = boot_with("qemu-direct-attack", &machine(parts), wall(10));
    let log = boot.log("attacker");
    let attacks = log.lines().filter(|l| *l == "cpuif attack done").count();
    let greetings = log.lines().filter(|l| l.starts_with("hello from partition attacker")).count();
    assert!(attacks >= 2 && greetings > attacks - 1, "{attacks} attacks, {greetings} boots:\n{log}");
    assert!(!log.contains("mask spin done"), "{log}");
    let hm = hm_log("qemu-direct-attack");
    let expired = hm_entries(&hm, &["partition attacker vcpu 0 WatchdogExpired"]);
    assert!(expired.len() + 1 >= greetings, "{} expiries for {greetings} boots:\n{hm}", expired.len());
    let neighbour = boot.log("neighbour");
    assert_eq!(timer_counts(neighbour).0, NEIGHBOUR_TICKS, "{neighbour}");
    assert!(hm_entries(&hm, &["partition neighbour"]).is_empty(), "{hm}");
    assert!(!boot.hypervisor.contains("PANIC"), "{}", boot.hypervisor);
}

/// Untraced, so that the vector answers: SGIs between two vCPUs and from
/// every register (x0-x30; xzr, which names nobody) reach their target,
/// and every register comes back as it was. Values naming a vCPU the
/// partition does not have (the pCPU of one of them belongs to a direct
/// partition next door, which counts every SGI it takes), another
/// affinity or range, or Partita's SGI 15 send nothing, and a list naming
/// the sender and a missing vCPU reaches the sender alone.
#[test]
fn a_direct_partitions_sgis_reach_its_own_vcpus_and_nothing_else() {
    let pair = part("pair", &[1, 2], "sgi=100 sgi-probe=1 ticks=1").exclusive().direct();
    let watch = part("watch", &[3], "sgi-watch=1 until-off=0 ticks=0 period_ms=20").exclusive().direct();
    let boot = boot_with("qemu-direct-sgi", &machine([pair, watch]), wall(HANG_LIMIT));
    assert_powered_off(&boot);
    let log = boot.log("pair");
    assert!(log.contains("sgi: sent 100 received 100"), "{log}");
    assert!(log.contains("sgi-probe: reached 31 of 31, kept 38 of 38, refused 6 of 6"), "{log}");
    assert!(boot.log("watch").contains("sgi-watch: taken 0"), "{}", boot.log("watch"));
    assert!(!boot.hypervisor.contains("PANIC"), "{}", boot.hypervisor);
}

/// Under -icount, an SGI a direct partition sends itself costs the
/// vector's at most 40 instructions, and the trapped MSR (the test
/// guest's `ipc-bench`, as `partita bench ipc` runs it).
#[test]
fn a_direct_sgi_costs_at_most_the_vectors_40_instructions() {
    let args = "ipc-bench=bench ipc_n=200 ipc_sgi=1 ticks=1 period_ms=1";
    let bench = part("bench", &[1], args).exclusive().direct();
    let icount = RunOptions { seconds: Some(HANG_LIMIT), icount: Some(4), ..RunOptions::default() };
    let boot = boot_with("qemu-direct-sgi-cost", &machine([bench]), icount);
    assert_powered_off(&boot);
    let log = boot.log("bench");
    assert!(log.contains("ipc-bench: sgi taken 200 of 200"), "{log}");
    let lines = ipc::parse(log);
    let mean = |what: &str| lines.iter().find(|(w, _)| w == what).map(|(_, l)| l.mean).expect(what);
    let cost = mean("sgi") - mean("empty");
    assert!(cost <= 41, "{cost} instructions:\n{log}");
}
