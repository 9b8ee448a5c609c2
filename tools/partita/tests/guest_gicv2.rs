//! The C guests on a GICv2, without Partita: QEMU `virt` with
//! `gic-version=2` gives them an `arm,cortex-a15-gic` node (a distributor
//! and a memory-mapped CPU interface, no redistributors, no ICC system
//! registers), as a ZynqMP's GIC-400 will. The test guest's interrupt tests
//! and the RTOS's self-test must print on it exactly what they print on
//! `gic-version=3`.

use partita::guests;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The guests are built once for all tests.
fn image(file: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| guests::build_all().expect("building the guests"));
    guests::image(file)
}

fn machine(gic: u32, el2: bool) -> String {
    let el2 = if el2 { ",virtualization=on" } else { "" };
    format!("virt,gic-version={gic}{el2}")
}

/// Boots `kernel` natively (EL1, or EL2 if `el2`, which the guests leave)
/// and returns its console; a minute at most.
fn native(kernel: &Path, gic: u32, el2: bool, cpus: u32, bootargs: &str) -> String {
    let output = Command::new("timeout")
        .args(["60", "qemu-system-aarch64", "-machine", &machine(gic, el2), "-cpu", "cortex-a72"])
        .args(["-smp", &cpus.to_string(), "-m", "256M"])
        .args(partita::run::HEADLESS)
        .arg("-kernel")
        .arg(kernel)
        .args(["-append", bootargs])
        .stdin(Stdio::null())
        .output()
        .expect("running QEMU");
    String::from_utf8_lossy(&output.stdout).replace('\r', "")
}

/// The compatible strings of the tree QEMU would give the guest.
fn board_tree(gic: u32) -> Vec<u8> {
    let dir = partita::paths::scratch("guest-gicv2");
    std::fs::create_dir_all(&dir).expect("creating the scratch folder");
    let dtb = dir.join(format!("virt-gic{gic}.dtb"));
    let status = Command::new("qemu-system-aarch64")
        .args(["-machine", &format!("{},dumpdtb={}", machine(gic, false), dtb.display())])
        .args(["-cpu", "cortex-a72", "-smp", "2", "-m", "256M"])
        .args(partita::run::HEADLESS)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("running QEMU");
    assert!(status.success(), "QEMU could not dump its device tree");
    std::fs::read(&dtb).expect("reading the dumped tree")
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The lines of `log` that start with one of `prefixes`, without the
/// figures about lateness, which differ from run to run.
fn interrupt_lines(log: &str, prefixes: &[&str]) -> Vec<String> {
    log.lines()
        .filter(|l| prefixes.iter().any(|p| l.starts_with(p)))
        .map(|l| l.split(", ").filter(|field| !field.contains("late")).collect::<Vec<_>>().join(", "))
        .filter(|l| !l.is_empty())
        .collect()
}

/// What the guests below are given is a GICv2 and nothing else.
#[test]
fn qemu_virt_with_gic_version_2_names_only_a_gicv2() {
    let v2 = board_tree(2);
    assert!(holds(&v2, "arm,cortex-a15-gic"), "no GICv2 node");
    assert!(!holds(&v2, "arm,gic-v3"), "a GICv3 node too");
    assert!(holds(&board_tree(3), "arm,gic-v3"));
}

/// Virtual-timer ticks, SGIs both ways between two CPUs, eight SGIs of
/// distinct priorities taken in priority order, a PL031 SPI routed to this
/// CPU, and level-sensitive SPIs and PPIs that follow their line.
#[test]
fn the_test_guest_takes_timer_ticks_sgis_and_spis_on_a_gicv2() {
    let guest = image("test-guest.bin");
    let runs = [
        ("timer_hz=1000 timer_ticks=1000 sgi=100 lr-overflow=1 ticks=1 period_ms=10", 2),
        ("spi=34 ticks=1 period_ms=10", 2),
        ("arch=level ticks=1 period_ms=1", 1),
        ("arch=ptimer ticks=1 period_ms=1", 1),
    ];
    let prefixes = ["vcpu ", "sgi: ", "timer: ", "lr overflow: ", "spi ", "level: ", "ptimer: ", "tick "];
    for (args, cpus) in runs {
        let v2 = native(&guest, 2, false, cpus, args);
        let v3 = native(&guest, 3, false, cpus, args);
        assert!(!v2.contains("gic: "), "{args}: the GICv2 was not set up\n{v2}");
        assert!(v2.lines().any(|l| l == "tick 1"), "{args}: did not finish\n{v2}");
        let lines = interrupt_lines(&v2, &prefixes);
        assert_eq!(lines, interrupt_lines(&v3, &prefixes), "{args}: GICv2\n{v2}\nGICv3\n{v3}");
        println!("{args}: {lines:?}");
    }
    let log = native(&guest, 2, false, 2, runs[0].0);
    for line in ["sgi: vcpu 1 received 100", "sgi: sent 100 received 100", "lr overflow: ok"] {
        assert!(log.lines().any(|l| l == line), "lacks {line:?}:\n{log}");
    }
    assert!(log.lines().any(|l| l.starts_with("timer: 1000 ticks at 1000 Hz")), "{log}");
    let spi = native(&guest, 2, false, 2, runs[1].0);
    assert!(spi.lines().any(|l| l == "spi 34: taken 5 of 5"), "{spi}");
    assert!(spi.lines().any(|l| l == "spi 34: enabled 1 priority 0xa0"), "{spi}");
}

/// The kernel's self-test (the tick, preemption, an SGI to itself among
/// the rest), started at EL2 as the benchmarks start it natively, on two
/// CPUs and on a uniprocessor GIC, whose ITARGETSR reads as zero.
#[test]
fn the_rtos_selftest_passes_on_a_gicv2() {
    let rtos = image("rtos.bin");
    for cpus in [2, 1] {
        let log = native(&rtos, 2, true, cpus, "bench=selftest");
        let summary = log.lines().find(|l| l.starts_with("selftest: ") && l.contains(" passed, "));
        let summary = summary.unwrap_or_else(|| panic!("{cpus} cpus: no selftest summary in\n{log}"));
        assert!(summary.ends_with(" passed, 0 failed"), "{cpus} cpus: {summary}\n{log}");
        for line in ["selftest: preempt ok", "selftest: sleep ok", "selftest: sgi ok"] {
            assert!(log.lines().any(|l| l == line), "{cpus} cpus lack {line:?}:\n{log}");
        }
        let v3 = native(&rtos, 3, true, cpus, "bench=selftest");
        assert!(v3.lines().any(|l| l == summary), "{cpus} cpus: GICv3 differs\n{v3}");
    }
}
