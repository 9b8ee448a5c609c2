//! The ZCU102 in QEMU (`xlnx-zcu102,virtualization=on`): `configs/zcu102.toml`
//! builds the hypervisor for the board and boots it like `partita run`.
//! Partita enters at EL2, prints on the Cadence UART0, brings up the other
//! cores, drives the GIC-400, and runs the test guest on pCPU 1 (a
//! secondary core) until it powers off: QEMU exits because the machine
//! was powered off, not because the test gave up on it.

mod common;

use common::*;
use partita::config;
use partita::paths;
use partita::run::{Ending, RunOptions};

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
