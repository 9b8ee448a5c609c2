//! QEMU `virt` with `virtualization=on,gic-version=3`: a GICv3 with its
//! system-register CPU interface, a PL011 console, and the counter
//! frequency the firmware (QEMU itself) leaves in CNTFRQ_EL0.

use super::gicv3::GicV3;
use super::gicv3_lrs::IchListRegisters;
use super::pl011::Pl011;
use super::Platform;
use alloc::vec;
use alloc::vec::Vec;
use partita_core::config::model::{self, Range};

pub struct QemuVirt;

impl Platform for QemuVirt {
    type Gic = GicV3;
    type Lrs = IchListRegisters;
    type Uart = Pl011;
    const FALLBACK_CONSOLE: u64 = 0x0900_0000;
    /// No PL: the hole where partitions see the emulated logic's interface
    /// pages stands for one.
    const PL_WINDOW: u64 = 0x0b00_0000;

    fn counter_frequency() -> u64 {
        crate::read_sysreg!("cntfrq_el0")
    }

    fn own_devices(platform: &model::Platform) -> Vec<Range> {
        vec![platform.console, platform.gicd, platform.gicr]
    }
}
