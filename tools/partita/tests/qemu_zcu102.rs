//! The ZCU102 in QEMU (`xlnx-zcu102,virtualization=on`): `configs/zcu102.toml`
//! builds the hypervisor for the board and boots it like `partita run`.
//! Partita enters at EL2, prints its banner on the Cadence UART0, finds the
//! image store the generic loader put in DDR, and then stops by itself,
//! saying the GICv2 vGIC is missing: QEMU exits because Partita powered the
//! machine off, not because the test gave up on it.

mod common;

use common::*;
use partita::config;
use partita::paths;
use partita::run::{Ending, RunOptions};

#[test]
fn boots_to_its_banner_then_stops_for_want_of_a_gicv2_vgic() {
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
    let expected = [
        format!("Partita {} starting on 4 CPUs, configuration \"zcu102\"", env!("CARGO_PKG_VERSION")),
        "GICv2 (GIC-400) vGIC not supported yet: stopping".to_owned(),
    ];
    let lines: Vec<&str> = boot.hypervisor.lines().collect();
    assert_eq!(lines, expected, "console:\n{}", boot.console.join("\n"));
    assert_eq!(boot.log("guest"), "", "no partition may run without a vGIC");
}
