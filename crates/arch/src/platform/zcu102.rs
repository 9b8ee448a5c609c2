//! The Zynq UltraScale+ MPSoC of a ZCU102 (QEMU `xlnx-zcu102` with
//! `virtualization=on`): a GIC-400 (GICv2 with its virtualization
//! extension in MMIO), Cadence UARTs, and the counter frequency the boot
//! firmware leaves in CNTFRQ_EL0 (62.5 MHz under QEMU).
//!
//! Its GIC-400 is driven by [`super::gicv2`]; guests see a GICv2 whose CPU
//! interface is the physical GICV.

use super::cadence_uart::CadenceUart;
use super::gicv2::GicV2;
use super::Platform;
use alloc::vec;
use alloc::vec::Vec;
use partita_core::config::model::{self, Range};

pub struct Zcu102;

impl Platform for Zcu102 {
    type Gic = GicV2;
    type Lrs = GicV2;
    type Uart = CadenceUart;
    /// UART0.
    const FALLBACK_CONSOLE: u64 = 0xff00_0000;
    /// M_AXI_HPM0_FPD, the full-power domain's first window into the PL.
    const PL_WINDOW: u64 = 0xa000_0000;

    fn counter_frequency() -> u64 {
        crate::read_sysreg!("cntfrq_el0")
    }

    /// The console, the distributor, and GICC, GICH and GICV in one span
    /// (`model::Platform::gicr` on a GICv2 board).
    fn own_devices(platform: &model::Platform) -> Vec<Range> {
        vec![platform.console, platform.gicd, platform.gicr]
    }
}
