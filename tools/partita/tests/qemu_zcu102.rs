//! The ZCU102 in QEMU (`xlnx-zcu102,virtualization=on`): `configs/zcu102.toml`
//! builds the hypervisor for the board and boots it like `partita run`.
//! Partita enters at EL2, prints on the Cadence UART0, brings up the other
//! cores, drives the GIC-400, and runs the test guest on pCPU 1 (a
//! secondary core) until it powers off: QEMU exits because the machine
//! was powered off, not because the test gave up on it.

mod common;

use common::linux::{linux_image, LINUX_RAM, LINUX_SIZE, MARKER};
use common::*;
use partita::config;
use partita::config::raw::RawPartition;
use partita::paths;
use partita::qmp::Qmp;
use partita::run::{self, Ending, RunOptions};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// QEMU starts the board with the options `partita run` gives it and says
/// nothing: no audio module probes, no GEM without a peer, and what is
/// left (the sound card's one line, which no option removes on QEMU 7.2)
/// is not shown after a run.
#[test]
fn qemu_starts_the_board_without_a_warning_to_show() {
    let dir = paths::scratch("qemu-zcu102-warnings");
    std::fs::create_dir_all(&dir).expect("creating the scratch folder");
    let socket = run::qmp_socket(&dir);
    let _ = std::fs::remove_file(&socket);
    let mut qemu = Command::new("qemu-system-aarch64")
        .args(run::machine_args("zcu102"))
        .args(run::HEADLESS)
        .args(["-m", "2048M", "-S", "-qmp"])
        .arg(run::qmp_option(&socket))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running QEMU");
    // The greeting comes once the machine is made and its devices checked.
    let connected = Qmp::connect_when_ready(&socket, Instant::now() + Duration::from_secs(60), || false)
        .and_then(|mut qmp| qmp.quit());
    if connected.is_err() {
        let _ = qemu.kill();
    }
    let output = qemu.wait_with_output().expect("waiting for QEMU");
    let stderr = String::from_utf8_lossy(&output.stderr);
    connected.unwrap_or_else(|error| panic!("QMP: {error:#}\n{stderr}"));
    assert!(run::qemu_messages(&stderr).is_empty(), "QEMU warned:\n{stderr}");
    assert!(stderr.lines().count() <= 1, "{stderr}");
}

#[test]
fn boots_the_test_guest_on_a_secondary_core_and_powers_off() {
    let path = paths::source().join("configs/zcu102.toml");
    let config = config::load(&path).unwrap_or_else(|errors| panic!("configs/zcu102.toml: {errors:#?}"));
    assert_eq!(config.system.platform.board, "zcu102");
    let elf = hypervisor_elf_for("zcu102");
    let opts = RunOptions { seconds: Some(HANG_LIMIT), ..RunOptions::default() };
    let boot = boot_config("qemu-zcu102", &config, &elf, opts);
    let Ending::Exited(status) = boot.ending else {
        panic!("QEMU did not power off by itself: {:?}\n{}", boot.ending, boot.console.join("\n"))
    };
    assert!(status.success(), "QEMU failed: {status}\n{}", boot.console.join("\n"));
    let console = boot.console.join("\n");
    let banner = format!("Partita {} starting on 4 CPUs, configuration \"zcu102\"", env!("CARGO_PKG_VERSION"));
    assert_eq!(boot.hypervisor.lines().next(), Some(banner.as_str()), "{console}");
    for line in ["partition guest powered off (PSCI SYSTEM_OFF)", "all partitions stopped; powering off"] {
        assert!(boot.hypervisor.contains(line), "no {line:?}:\n{console}");
    }
    let guest = boot.log("guest");
    for line in ["hello from partition guest: 1 vcpu(s)", "tick 3"] {
        assert!(guest.contains(line), "the guest did not print {line:?}:\n{console}");
    }
}

/// The GICv2 vGIC under the test guest's interrupt tests, on two vCPUs:
/// virtual-timer ticks at 1 kHz, SGIs both ways through the emulated
/// GICD_SGIR, and eight SGIs of distinct priorities overflowing the
/// GIC-400's four list registers, taken in priority order.
#[test]
fn the_gicv2_vgic_delivers_timer_ticks_and_sgis() {
    let args = "timer_hz=1000 timer_ticks=1000 sgi=100 lr-overflow=1 ticks=1 period_ms=10";
    let mut raw = machine([part("guest", &[1, 2], args)]);
    raw.platform.board = Some("zcu102".into());
    let config = write_config("qemu-zcu102-interrupts", &raw);
    let opts = RunOptions { seconds: Some(HANG_LIMIT), ..RunOptions::default() };
    let boot = boot_config("qemu-zcu102-interrupts", &config, &hypervisor_elf_for("zcu102"), opts);
    let console = boot.console.join("\n");
    assert!(matches!(boot.ending, Ending::Exited(_)), "QEMU did not power off by itself:\n{console}");
    let guest = boot.log("guest");
    for line in
        ["sgi: vcpu 1 received 100", "sgi: sent 100 received 100", "lr overflow: ok", "timer: 1000 ticks at 1000 Hz"]
    {
        assert!(guest.contains(line), "the guest did not print {line:?}:\n{console}");
    }
    assert!(guest.contains("lr overflow: taken 13 10 15 12 9 14 11 8"), "priority order:\n{console}");
}

/// Debian's Linux on two vCPUs of the GIC-400 board, beside the test guest
/// ticking at 1 kHz alone on its own core: Linux brings up its second CPU,
/// runs `/init` on the partition console (a PL011 Partita emulates: the
/// board has no virtio transports), runs hackbench on both CPUs and powers
/// off; the guest beside it gets every tick.
#[test]
fn linux_runs_hackbench_beside_a_1khz_guest() {
    let linux = RawPartition::new("linux", &[2, 3])
        .bootargs("console=ttyAMA0 partita.job=hackbench")
        .memory(LINUX_RAM, LINUX_SIZE)
        .linux(&linux_image("Image"), Some(&linux_image("initramfs.cpio")));
    let rtos = part("rtos", &[1], "timer_hz=1000 timer_ticks=5000 ticks=1 period_ms=10").exclusive();
    let mut raw = machine([rtos, linux]);
    raw.platform.board = Some("zcu102".into());
    let config = write_config("qemu-zcu102-linux", &raw);
    let opts = RunOptions { seconds: Some(HANG_LIMIT), ..RunOptions::default() };
    let boot = boot_config("qemu-zcu102-linux", &config, &hypervisor_elf_for("zcu102"), opts);
    let linux = boot.log("linux");
    let tail = common::linux::tail(linux, 40);
    assert!(linux.contains("smp: Brought up 1 node, 2 CPUs"), "{tail}");
    assert!(linux.contains(MARKER) && linux.contains("cpus=2"), "{tail}");
    assert!(linux.contains("partita-linux: hackbench time=") && linux.contains("job hackbench exit=0"), "{tail}");
    assert_powered_off(&boot);
    assert_eq!(timer_counts(boot.log("rtos")).0, 5000, "{}", boot.log("rtos"));
}
