//! Boots real configurations in QEMU and asserts on what the partitions and
//! Partita printed. Each test writes its configuration to
//! `target/qemu-tests/<name>.toml` (rerun one by hand with
//! `partita run target/qemu-tests/<name>.toml`) and leaves its logs in
//! `out/<name>/`.

mod common;

use common::*;
use partita::build;
use partita::config::raw::{RawCriticality, RawMemory, RawPartition};
use partita::paths;
use partita::run::{self, Ending, RunOptions, CUT_SHORT};

#[test]
fn three_partitions_on_four_cores_with_a_shared_core() {
    let args = "ticks=5 period_ms=100";
    let boot = boot(
        "qemu-three-partitions",
        &machine([part("alpha", &[1], args), part("beta", &[2], args), part("gamma", &[2, 3], args)]),
        HANG_LIMIT,
    );
    assert_powered_off(&boot);
    for (name, vcpus) in [("alpha", 1), ("beta", 1), ("gamma", 2)] {
        let log = boot.log(name);
        let greeting = format!("hello from partition {name}: {vcpus} vcpu(s), memory 0x40000000+0x1000000");
        assert!(log.contains(&greeting), "{name}: {log}");
        for line in ["set/way clean done", "psci version 1.1", "tick 5"] {
            assert!(log.lines().any(|l| l == line), "{name} lacks {line:?}: {log}");
        }
        for other in ["alpha", "beta", "gamma"].iter().filter(|o| **o != name) {
            assert!(!log.contains(&format!("partition {other}")), "{name}'s log holds {other}'s output");
        }
    }
    assert!(boot.log("gamma").lines().any(|l| l == "vcpu 1 up"), "PSCI CPU_ON failed: {}", boot.log("gamma"));
}

/// The offender, whose policy halts it at a fault, misbehaves before its
/// 2nd tick; two bystanders, one of them sharing a pCPU with the other,
/// must keep ticking after it is stopped.
fn misbehave(kind: &str, extra: &str, expected_stop: &str) {
    let name = format!("qemu-fault-{kind}");
    let offender = format!("ticks=6 period_ms=100 misbehave={kind} at=2 {extra}");
    let steady = "ticks=8 period_ms=100";
    let boot = boot(
        &name,
        &machine([
            part("offender", &[1], &offender).health(halt_on_faults()),
            part_at("calm", &[2], steady, 0x4800_0000),
            part("busy", &[2, 3], steady),
        ]),
        HANG_LIMIT,
    );
    assert_powered_off(&boot);
    let log = boot.log("offender");
    assert!(log.contains(&format!("misbehaving: {kind}")), "{log}");
    assert!(!log.contains("survived misbehaviour"), "the offender ran on: {log}");
    assert!(!log.contains("tick 2"), "the offender ticked after its fault: {log}");
    let stop = format!("[partita] partition offender vcpu 0 stopped: {expected_stop}");
    let stopped_at = boot.position(&stop);
    for bystander in ["calm", "busy"] {
        let after = boot.lines_after(stopped_at, &format!("[{bystander}] tick"));
        assert!(after >= 2, "{bystander} printed {after} tick(s) after the fault");
        assert!(boot.log(bystander).lines().any(|l| l == "tick 8"), "{bystander}: {}", boot.log(bystander));
    }
}

#[test]
fn write_outside_its_memory_stops_only_the_offender() {
    misbehave("write-outside", "", "stage-2 data abort outside its memory (EC 0x24, ELR 0x4000");
}

#[test]
fn reading_another_partitions_memory_stops_only_the_offender() {
    // 0x48000000 is where `calm`'s RAM really lives.
    misbehave("read-other", "addr=0x48000000", "stage-2 data abort outside its memory (EC 0x24, ELR 0x4000");
}

/// The distributor a partition sees is its own emulated one: disabling it
/// (GICD_CTLR = 0) is allowed and reaches no other partition.
#[test]
fn writing_the_gic_distributor_touches_only_its_own_virtual_gic() {
    let steady = "ticks=8 period_ms=100";
    let boot = boot(
        "qemu-gicd-write",
        &machine([
            part("writer", &[1], "ticks=6 period_ms=100 misbehave=gicd at=2"),
            part("calm", &[2], steady),
            part("busy", &[2, 3], steady),
        ]),
        HANG_LIMIT,
    );
    assert_powered_off(&boot);
    let log = boot.log("writer");
    let misbehaved = format!("misbehaving: gicd at {:#x}", board_gicd());
    assert!(log.contains(&misbehaved) && log.contains("survived misbehaviour"), "{log}");
    assert!(log.lines().any(|l| l == "tick 6"), "{log}");
    assert!(!boot.hypervisor.contains(" stopped: "), "{}", boot.hypervisor);
    for bystander in ["calm", "busy"] {
        assert!(boot.log(bystander).lines().any(|l| l == "tick 8"), "{bystander}: {}", boot.log(bystander));
    }
}

#[test]
fn an_smc_that_is_not_psci_stops_only_the_offender() {
    misbehave("smc", "", "SMC that is not a PSCI call (EC 0x17, ELR 0x4000");
}

/// The EL1 physical timer was once a forbidden system register that
/// stopped the partition; it is the guest's now, and the read is answered.
#[test]
fn reading_the_el1_physical_timer_is_answered() {
    let reader = part("reader", &[1], "ticks=3 period_ms=50 misbehave=sysreg at=2");
    let boot = boot("qemu-sysreg-cntp", &machine([reader]), HANG_LIMIT);
    assert_powered_off(&boot);
    let log = boot.log("reader");
    for expected in ["cntp_ctl_el0 = 0x0", "survived misbehaviour", "tick 3"] {
        assert!(log.lines().any(|l| l == expected), "missing {expected:?}:\n{log}");
    }
    assert!(!boot.hypervisor.contains(" stopped: "), "{}", boot.hypervisor);
}

#[test]
fn fault_addresses_are_logged() {
    // The address in the stop line is the guest-physical address touched.
    let boot = boot(
        "qemu-fault-address",
        &machine([
            part("offender", &[1], "ticks=3 period_ms=50 misbehave=read-other addr=0x48000000 at=1")
                .health(halt_on_faults()),
            part_at("calm", &[2], "ticks=3 period_ms=50", 0x4800_0000),
        ]),
        HANG_LIMIT,
    );
    assert_powered_off(&boot);
    assert!(boot.hypervisor.contains("address 0x48000000)"), "{}", boot.hypervisor);
}

#[test]
fn a_marker_in_one_partition_is_invisible_to_the_others() {
    let boot = boot(
        "qemu-isolation-marker",
        &machine([
            part("writer", &[1], "ticks=4 period_ms=100 marker=write+scan scan_at=3"),
            part("reader", &[2], "ticks=4 period_ms=100 marker=scan scan_at=3"),
            part("sharer", &[2, 3], "ticks=4 period_ms=100 marker=scan scan_at=3"),
        ]),
        HANG_LIMIT,
    );
    assert_powered_off(&boot);
    let hits = |name: &str| -> u64 {
        let log = boot.log(name);
        let line = log.lines().find(|l| l.starts_with("marker scan: ")).unwrap_or_else(|| panic!("{name}: {log}"));
        assert!(line.ends_with(" hit(s) in 16777216 bytes"), "{name} did not scan all its RAM: {line}");
        line["marker scan: ".len()..].split(' ').next().unwrap().parse().unwrap()
    };
    assert!(boot.log("writer").contains("marker written at 0x40"), "{}", boot.log("writer"));
    assert!(hits("writer") >= 1, "the writer cannot see its own marker: the scan is broken");
    assert_eq!(hits("reader"), 0, "the marker leaked into reader");
    assert_eq!(hits("sharer"), 0, "the marker leaked into sharer");
}

#[test]
fn system_reset_restarts_only_that_partition() {
    let boot = boot(
        "qemu-system-reset",
        &machine([
            part("resetter", &[1], "ticks=2 period_ms=50 end=reset"),
            part("steady", &[2], "ticks=0 period_ms=100"),
        ]),
        8,
    );
    assert_eq!(boot.ending, Ending::TimedOut, "steady runs until the time limit");
    let greetings = boot.log("resetter").matches("hello from partition resetter").count();
    assert!(greetings >= 2, "resetter started {greetings} time(s): {}", boot.log("resetter"));
    assert!(boot.hypervisor.contains("partition resetter restarting (PSCI SYSTEM_RESET)"), "{}", boot.hypervisor);
    let steady = boot.log("steady");
    assert_eq!(steady.matches("hello from partition steady").count(), 1, "steady restarted: {steady}");
    let ticks: Vec<u64> = steady.lines().filter_map(|l| l.strip_prefix("tick ")?.parse().ok()).collect();
    assert!(ticks.len() >= 3, "steady barely ran: {steady}");
    assert!(ticks.windows(2).all(|w| w[1] == w[0] + 1), "steady's ticks are not consecutive: {ticks:?}");
}

/// An initrd beside an ELF image, not a Linux kernel: the guest finds it
/// through `/chosen` as a test framework or an RTOS would, whole. Its
/// bytes are hashed by the guest and here.
#[test]
fn an_initrd_reaches_a_guest_that_is_not_linux() {
    let initrd = paths::scratch("qemu-tests").join("initrd.bin");
    let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    std::fs::create_dir_all(initrd.parent().unwrap()).unwrap();
    std::fs::write(&initrd, &bytes).unwrap();
    let hash = bytes.iter().fold(2_166_136_261u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(16_777_619));
    let config = machine([part("framework", &[1], "ticks=1 period_ms=10").initrd(&initrd)]);
    let boot = boot("qemu-initrd", &config, HANG_LIMIT);
    assert_powered_off(&boot);
    let log = boot.log("framework");
    let line = log.lines().find(|l| l.starts_with("initrd: ")).unwrap_or_else(|| panic!("no initrd line:\n{log}"));
    // Page aligned, ending at or below the top of the partition's 16 MiB.
    let (at, rest) = line["initrd: 0x".len()..].split_once("+0x").expect(line);
    let at = u64::from_str_radix(at, 16).expect(line);
    assert_eq!(at % 4096, 0, "{line}");
    assert!(at >= RAM_BASE && at + bytes.len() as u64 <= RAM_BASE + RAM_SIZE, "{line}");
    assert_eq!(rest, format!("{:x} fnv1a 0x{hash:08x}", bytes.len()), "{line}");
}

/// Every load of a partition finds new seeds in its device tree's
/// `/chosen`: two partitions that restart themselves, booted twice.
#[test]
fn device_tree_seeds_differ_per_partition_per_load_and_per_boot() {
    let args = "ticks=1 period_ms=10 print-seed=1 end=reset";
    let config = machine([part("first", &[1], args), part("second", &[2], args)]);
    let mut seen: Vec<(String, &str)> = Vec::new();
    let mut logs = Vec::new();
    for run in 0..2 {
        let boot = boot("qemu-seeds", &config, 5);
        for name in ["first", "second"] {
            logs.push((run, name, boot.log(name).to_string()));
        }
    }
    for (run, name, log) in &logs {
        // The time limit may stop QEMU halfway through a seed line.
        let whole = log.lines().filter(|l| !l.ends_with(CUT_SHORT));
        let seeds: Vec<&str> = whole.filter_map(|l| l.strip_prefix("seed: ")).collect();
        assert!(seeds.len() >= 2, "boot {run}: {name} did not restart with seeds: {log}");
        for seed in seeds {
            let (kaslr, rng) = seed_values(seed).unwrap_or_else(|| panic!("{name}: bad seed line {seed:?}"));
            assert_ne!(kaslr, 0, "{name}: {seed}");
            assert!(rng.len() == 128 && rng.chars().any(|c| c != '0'), "{name}: {seed}");
            seen.push((format!("boot {run}, {name}"), seed));
        }
    }
    for (i, (who, seed)) in seen.iter().enumerate() {
        for (other, again) in &seen[i + 1..] {
            let (one, two) = (seed_values(seed).unwrap(), seed_values(again).unwrap());
            assert!(one.0 != two.0 && one.1 != two.1, "{who} and {other} share a seed: {seed} / {again}");
        }
    }
}

/// `kaslr=0x<16 hex digits> rng=<hex>` -> (kaslr, rng).
fn seed_values(line: &str) -> Option<(u64, &str)> {
    let (kaslr, rng) = line.strip_prefix("kaslr=0x")?.split_once(" rng=")?;
    Some((u64::from_str_radix(kaslr, 16).ok()?, rng))
}

/// PSCI under contention: vCPUs 0 and 1 start vCPU 2 at the same moment,
/// round after round. One start succeeds, the other is told ON_PENDING or
/// ALREADY_ON, and vCPU 2 runs with the winner's context, never the
/// loser's. On wall clock, so the two callers really run at once.
#[test]
fn simultaneous_cpu_on_starts_the_target_once_with_the_winner_s_context() {
    let racers = part("racers", &[1, 2, 3], "ticks=1 period_ms=10 cpu-on-race=200");
    let boot = boot("qemu-psci-race", &machine([racers]).cpus(4), HANG_LIMIT);
    assert_powered_off(&boot);
    let log = boot.log("racers");
    assert!(log.lines().any(|l| l == "cpu-on race: 200 rounds, 0 bad"), "{log}");
}

#[test]
fn psci_cpu_off_affinity_info_and_features() {
    let boot = boot("qemu-psci", &machine([part("smp", &[1, 2], "ticks=2 period_ms=50 cpu-off=1")]), HANG_LIMIT);
    assert_powered_off(&boot);
    let log = boot.log("smp");
    let expected = [
        "psci version 1.1",
        "psci features: cpu_on 0, migrate -1",
        "vcpu 1 up",
        "vcpu 1 off (affinity info 1)",
        "vcpu 1 up",
        "tick 2",
    ];
    let mut lines = log.lines();
    for line in expected {
        assert!(lines.any(|l| l == line), "missing or out of order: {line:?} in\n{log}");
    }
    assert!(!log.contains("cpu_off returned"), "CPU_OFF returned to the guest: {log}");
}

/// A raw image, a second RAM region mapped guest-physical = host-physical,
/// and QEMU virt's PL031 real-time clock passed through.
#[test]
fn raw_image_identity_region_and_passthrough_device() {
    let passed = board_device();
    let io = RawPartition::new("io", &[1])
        .bootargs(&format!("ticks=2 period_ms=50 peek={:#x} marker=scan scan_at=1", passed.id_register))
        .memory(RAM_BASE, RAM_SIZE)
        .region(RawMemory::new(0x4800_0000, 2 << 20).identity().perms("rw"))
        .raw_image(&guest("bin"), RAM_BASE)
        .device(passed.device);
    let boot = boot("qemu-passthrough", &machine([io]), HANG_LIMIT);
    assert_powered_off(&boot);
    let log = boot.log("io");
    assert!(log.contains("memory 0x40000000+0x1000000, 0x48000000+0x200000"), "{log}");
    // The guest read the real device.
    let peeked = format!("peek {:#x} = {:#x}", passed.id_register, passed.id_value);
    assert!(log.lines().any(|l| l == peeked), "{log}");
    assert!(log.lines().any(|l| l == "marker scan: 0 hit(s) in 18874368 bytes"), "{log}");
    assert!(log.lines().any(|l| l == "tick 2"), "{log}");
}

/// A payload damaged after `partita build` is refused at boot with a panic
/// that names the CPU, the exception class, ELR and FAR.
#[test]
fn a_corrupt_payload_is_refused_with_a_panic_report() {
    let elf = hypervisor_elf();
    let name = "qemu-corrupt-payload";
    let config = write_config(name, &machine([part("victim", &[1], "ticks=1")]));
    let out = build::assemble(&config, elf, &out_dir(name)).unwrap();
    let mut image = std::fs::read(&out.image).unwrap();
    let last = image.len() - 1;
    image[last] ^= 0xff;
    std::fs::write(&out.image, image).unwrap();
    let report = run::run(&out, &config.system, &RunOptions { seconds: Some(5), ..RunOptions::default() }).unwrap();
    let log = std::fs::read_to_string(&report.hypervisor_log).unwrap();
    assert!(log.contains("PANIC on cpu 0: boot payload rejected: BadChecksum"), "{log}");
    assert!(log.contains("(last exception: EC 0x") && log.contains(", ELR 0x") && log.contains(", FAR 0x"), "{log}");
    assert!(std::fs::read_to_string(&report.partition_logs[0]).unwrap().is_empty(), "the victim ran");
}

/// A traced run: the trace parses, and its vCPU switches agree with the
/// configuration and with what the guests printed.
#[test]
fn the_trace_of_a_short_run_agrees_with_the_guests() {
    let args = "ticks=3 period_ms=50";
    let parts = [
        part("left", &[1], args),
        part("right", &[1], args),
        part("alone", &[2], "timer_hz=1000 timer_ticks=50 ticks=3 period_ms=50"),
    ];
    // Each boot's set/way operations trap twice (a 16 MiB partition's
    // 32 KiB slice in 16 KiB steps), every trap traced.
    let boot = boot("qemu-trace", &machine(parts).trace(98304), HANG_LIMIT);
    assert_powered_off(&boot);
    let path = out_dir("qemu-trace").join("trace.bin");
    let (meta, trace) = partita::trace::read_file(&path).expect("the trace parses");
    assert_eq!(meta.partitions, ["left", "right", "alone"]);
    assert!(trace.lost.iter().all(|&n| n == 0), "a 96k ring is enough: {:?}", trace.lost);
    let intervals = partita::trace::vcpu_intervals(&trace);
    for (index, name) in ["left", "right", "alone"].iter().enumerate() {
        let mine: Vec<_> = intervals.iter().filter(|i| usize::from(i.partition) == index).collect();
        let expected_cpu = if *name == "alone" { 2 } else { 1 };
        assert!(!mine.is_empty(), "{name} printed {} lines but never ran", boot.log(name).lines().count());
        assert!(mine.iter().all(|i| i.cpu == expected_cpu), "{name} ran off its pCPU: {mine:?}");
        assert!(boot.log(name).lines().any(|l| l == "tick 3"), "{name}: {}", boot.log(name));
    }
    // Two partitions share pCPU 1, so it switched between them; pCPU 2 ran `alone` once.
    let on_cpu1: Vec<u8> = intervals.iter().filter(|i| i.cpu == 1).map(|i| i.partition).collect();
    assert!(on_cpu1.windows(2).any(|w| w[0] != w[1]), "pCPU 1 never switched: {on_cpu1:?}");
    assert_eq!(intervals.iter().filter(|i| i.cpu == 2).count(), 1, "the exclusive pCPU never switches");
    // Every virtual timer tick of `alone` was taken, injected and completed.
    let count = |kind| trace.cpus[2].iter().filter(|e| e.kind == kind && e.arg == 27).count();
    use partita_core::trace::Kind;
    assert_eq!(timer_counts(boot.log("alone")).0, 50);
    assert!(
        count(Kind::IrqTaken) >= 50 && count(Kind::IrqInjected) >= 50,
        "{:?}",
        (count(Kind::IrqTaken), count(Kind::IrqInjected))
    );
    assert!(count(Kind::IrqEoi) >= 50, "only {} EOIs of 50 ticks", count(Kind::IrqEoi));
}

/// Boots the test guest natively (QEMU alone, EL1, real GICv3) with `bootargs`.
fn native(bootargs: &str, cpus: u32) -> String {
    hypervisor_elf();
    let output = std::process::Command::new("timeout")
        .args(["60", "qemu-system-aarch64", "-machine", "virt,gic-version=3", "-cpu", "cortex-a72"])
        .args(["-smp", &cpus.to_string(), "-m", "256M"])
        .args(partita::run::HEADLESS)
        .arg("-kernel")
        .arg(guest("bin"))
        .args(["-append", bootargs])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("running QEMU");
    String::from_utf8_lossy(&output.stdout).replace('\r', "")
}

/// One unmodified guest binary: 1,000 virtual-timer ticks at 1 kHz and SGIs
/// both ways between its two vCPUs, natively and as a partition.
#[test]
fn the_same_guest_takes_its_timer_and_sgis_natively_and_virtualized() {
    let args = "timer_hz=1000 timer_ticks=1000 sgi=100 ticks=1 period_ms=10";
    let native = native(args, 2);
    let boot = boot("qemu-irq-same-binary", &machine([part("rt", &[1, 2], args)]), HANG_LIMIT);
    assert_powered_off(&boot);
    for (how, log) in [("native", native.as_str()), ("virtualized", boot.log("rt"))] {
        assert_eq!(timer_counts(log).0, 1000, "{how}: a tick was lost\n{log}");
        assert!(log.lines().any(|l| l == "sgi: vcpu 1 received 100"), "{how}:\n{log}");
        assert!(log.lines().any(|l| l == "sgi: sent 100 received 100"), "{how}:\n{log}");
        println!("{how}: {}", log.lines().filter(|l| l.starts_with("timer")).collect::<Vec<_>>().join("; "));
    }
}

#[test]
fn more_pending_interrupts_than_list_registers_arrive_in_priority_order() {
    let boot = boot("qemu-lr-overflow", &machine([part("many", &[1], "lr-overflow=1 ticks=1")]), HANG_LIMIT);
    assert_powered_off(&boot);
    let log = boot.log("many");
    assert!(log.lines().any(|l| l == "lr overflow: ok"), "{log}");
}

/// The attacker writes the distributor registers of the victim's SPI; the
/// victim's interrupt keeps its configuration and is delivered every time.
#[test]
fn distributor_writes_to_another_partitions_interrupt_change_nothing() {
    let owned = board_device();
    let spi = owned.intid;
    let parts = [
        part("victim", &[1], &format!("spi={spi} ticks=2 period_ms=50")).device(owned.device),
        part("attacker", &[2], &format!("gicd-attack={spi} ticks=2 period_ms=50")),
    ];
    let boot = boot("qemu-gicd-isolation", &machine(parts), HANG_LIMIT);
    assert_powered_off(&boot);
    let attacker = boot.log("attacker");
    assert!(attacker.contains(&format!("gicd attack on {spi} done")), "{attacker}");
    let ignored = format!("partition attacker wrote to interrupt {spi}, which it does not own: ignored");
    assert!(boot.hypervisor.contains(&ignored), "{}", boot.hypervisor);
    let victim = boot.log("victim");
    assert!(victim.lines().any(|l| l == format!("spi {spi}: taken 5 of 5")), "{victim}");
    assert!(victim.lines().any(|l| l == format!("spi {spi}: enabled 1 priority 0xa0")), "{victim}");
}

/// A low-criticality guest spins with interrupts masked on the pCPU it
/// shares with a high-criticality guest, with a long quantum: the high one
/// still gets every tick, on time.
#[test]
fn a_critical_guest_preempts_a_masked_spinning_one() {
    let config = machine([])
        .quantum_us(200_000)
        .partition(part("rt", &[1], "timer_hz=1000 timer_ticks=500 ticks=1").criticality(RawCriticality::High))
        .partition(part("hog", &[1], "mask-spin=2000 ticks=1"));
    // Guest time counts instructions, so host load cannot make ticks late.
    let boot = boot_with(
        "qemu-priority-separation",
        &config,
        RunOptions { seconds: Some(HANG_LIMIT), icount: Some(4), ..RunOptions::default() },
    );
    assert_powered_off(&boot);
    let (ticks, late) = timer_counts(boot.log("rt"));
    assert_eq!(ticks, 500, "{}", boot.log("rt"));
    println!("rt: {ticks} ticks, {late} late");
    assert_eq!(late, 0, "the masked spinner delayed the critical guest");
    assert!(boot.log("hog").contains("mask spin done"), "{}", boot.log("hog"));
}
