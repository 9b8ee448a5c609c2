//! Architecture conformance in QEMU: the test guest's `arch=...` tests
//! (a bare-metal guest that handles its own exceptions) under Partita's
//! default health policy. A fault outside the partition is the guest's own
//! synchronous external abort, a register it is not given is UNDEFINED,
//! the PMU is not advertised, and the debug registers are the vCPU's own:
//! breakpoints, software step and watchpoints work, and do not leak into
//! another partition on the same pCPU, across restarts included.

mod common;

use common::*;
use partita::run::RunOptions;

/// Lines of `name`'s log that start with `prefix`.
fn lines_of<'a>(boot: &'a Boot, name: &str, prefix: &str) -> Vec<&'a str> {
    boot.log(name).lines().filter(|l| l.starts_with(prefix)).collect()
}

fn assert_lines(boot: &Boot, name: &str, expected: &[&str]) {
    let log = boot.log(name);
    for line in expected {
        assert!(log.lines().any(|l| l == *line), "{name} lacks {line:?}:\n{log}\nhypervisor:\n{}", boot.hypervisor);
    }
}

/// The partition went on to its last tick and Partita stopped no one.
fn assert_went_on(boot: &Boot, name: &str, ticks: u64) {
    assert_lines(boot, name, &[&format!("tick {ticks}")]);
    assert!(!boot.hypervisor.contains(" stopped:"), "{}", boot.hypervisor);
}

/// A load, a branch, a load on SP_EL0 and a load at EL0, each outside its
/// memory: each a synchronous external abort at its own vector, with the
/// faulting address, handled, and logged as injected.
#[test]
fn accesses_outside_memory_are_the_guest_s_own_aborts() {
    let name = "qemu-arch-abort";
    let boot = boot(name, &machine([part("prober", &[1], "arch=abort ticks=2 period_ms=10")]), HANG_LIMIT);
    assert_powered_off(&boot);
    assert_lines(
        &boot,
        "prober",
        &[
            "arch abort: at 0x41000000",
            "arch abort: load: EC 0x25 FSC 0x10 ISV 0 FAR ok ELR ok vector 0x200",
            "arch abort: branch: EC 0x21 FSC 0x10 ISV 0 FAR ok ELR ok vector 0x200",
            "arch abort: load on sp_el0: EC 0x25 FSC 0x10 ISV 0 FAR ok ELR ok vector 0x0",
            "arch abort: load at el0: EC 0x24 FSC 0x10 ISV 0 FAR ok ELR ok vector 0x400",
            "arch abort: done",
        ],
    );
    assert_went_on(&boot, "prober", 2);
    let hm = hm_log(name);
    let injected =
        hm.lines().filter(|l| l.contains("partition prober vcpu 0 Stage2Fault detail 0x41000000 action Inject"));
    assert_eq!(injected.count(), 4, "{hm}");
}

/// An unallocated register is UNDEFINED for the guest, which goes on; the
/// EL1 physical timer is the guest's own and reads. An implementation-defined one
/// is UNDEFINED too where the core traps it (HCR_EL2.TIDCP); QEMU 7.2
/// does not, and the guest reads it as it would natively.
#[test]
fn registers_not_given_are_undefined_for_the_guest() {
    let name = "qemu-arch-undef";
    let boot = boot(name, &machine([part("prober", &[1], "arch=undef ticks=2 period_ms=10")]), HANG_LIMIT);
    assert_powered_off(&boot);
    assert_lines(
        &boot,
        "prober",
        &[
            "arch undef: s3_2_c3_c0_0: EC 0x0 IL 1 ELR ok vector 0x200",
            "arch undef: cntp_ctl_el0: read 0x0",
            "arch undef: done",
        ],
    );
    let impdef = lines_of(&boot, "prober", "arch undef: s3_1_c15_c2_0: ");
    assert!(
        impdef == ["arch undef: s3_1_c15_c2_0: EC 0x0 IL 1 ELR ok vector 0x200"]
            || impdef == ["arch undef: s3_1_c15_c2_0: read 0x0"],
        "{impdef:?}"
    );
    assert_went_on(&boot, "prober", 2);
}

/// ID_AA64DFR0_EL1 advertises no PMU (nor SPE or trace) but keeps the
/// breakpoint and watchpoint counts; every register of the ID space reads;
/// a PMU register is UNDEFINED, injected by Partita and logged.
#[test]
fn the_pmu_is_not_advertised_and_its_registers_are_undefined() {
    let name = "qemu-arch-pmu";
    let boot = boot(name, &machine([part("prober", &[1], "arch=pmu ticks=2 period_ms=10")]), HANG_LIMIT);
    assert_powered_off(&boot);
    assert_lines(
        &boot,
        "prober",
        &[
            "arch pmu: id_aa64dfr0_el1 0x10305006 pmuver 0 pmsver 0 tracever 0 brps 6 wrps 4",
            "arch pmu: id_dfr0_el1 perfmon 0",
            "arch pmu: pmcr_el0 EC 0x0",
        ],
    );
    let read = lines_of(&boot, "prober", "arch pmu: 56 id registers read, ");
    assert!(read.len() == 1 && read[0].contains("read, 0 undefined"), "{read:?}");
    assert_went_on(&boot, "prober", 2);
    let hm = hm_log(name);
    assert!(
        hm.lines().any(|l| l.contains("partition prober vcpu 0 Forbidden") && l.ends_with("action Inject")),
        "{hm}"
    );
}

/// A hardware breakpoint, three software steps and a watchpoint, each
/// taken by the guest at its own EL1 with the class the architecture gives.
#[test]
fn breakpoints_steps_and_watchpoints_reach_the_guest() {
    let boot = boot("qemu-arch-debug", &machine([part("prober", &[1], "arch=debug ticks=2 period_ms=10")]), HANG_LIMIT);
    assert_powered_off(&boot);
    assert_lines(
        &boot,
        "prober",
        &[
            "arch debug: 6 breakpoints, 4 watchpoints",
            "arch debug: breakpoint EC 0x31 ELR ok, returned 42",
            "arch debug: 3 steps EC 0x33 at +4 +8 +12",
            "arch debug: watchpoint EC 0x35 FAR ok WnR 1, stored 7",
            "arch debug: done",
        ],
    );
    assert_went_on(&boot, "prober", 2);
}

/// Two partitions time-sliced on pCPU 2 each fill every breakpoint and
/// watchpoint register with values of their own and check them for 40
/// rounds, with breakpoint 0 armed on the same address in both: each finds
/// the registers in their reset state, keeps its values and takes its own
/// breakpoint every round. A third that restarts at each end finds them
/// clean at every boot, and a fourth that never touches them shares the
/// core too.
#[test]
fn debug_registers_stay_with_their_vcpu() {
    let keep = |seed: u64| format!("arch=debug-keep arch_seed={seed} ticks=1 period_ms=1");
    let parts = [
        part("one", &[2], &keep(1)),
        part("two", &[2], &keep(2)),
        part("again", &[2], &format!("{} end=reset", keep(3))),
        part("plain", &[2], "ticks=0 period_ms=20"),
    ];
    let opts = RunOptions { seconds: Some(20), ..RunOptions::default() };
    let boot = boot_with("qemu-arch-debug-keep", &machine(parts), opts);
    for (name, seed) in [("one", 1), ("two", 2)] {
        let expected =
            format!("arch debug-keep: seed {seed}, clean at start yes, 40 rounds, 40 breakpoint hits, 0 changed");
        assert_lines(&boot, name, &[&expected]);
    }
    let again = lines_of(&boot, "again", "arch debug-keep: ");
    assert!(again.len() >= 2, "{} boot(s) of again:\n{}", again.len(), boot.log("again"));
    let expected = "arch debug-keep: seed 3, clean at start yes, 40 rounds, 40 breakpoint hits, 0 changed";
    assert!(again.iter().all(|l| *l == expected), "{again:#?}");
    assert!(lines_of(&boot, "plain", "tick ").len() >= 10, "{}", boot.log("plain"));
    assert!(!boot.hypervisor.contains(" stopped:"), "{}", boot.hypervisor);
}
