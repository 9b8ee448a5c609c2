//! The GIC-400 (GICv2 with the virtualization extension) as far as it
//! exists: nothing yet. Its distributor and CPU interface (GICD, GICC) and
//! its virtual interface (GICH list registers, GICV for the guest) are
//! still to be written; the board stops before any of this is called
//! ([`super::Platform::MISSING`]), and a call that comes anyway is a
//! hypervisor bug, so it panics rather than pretend.

use super::{InterruptController, ListRegisters, VgicContext};
use partita_core::config::model;
use partita_core::vgic::lr::Refill;

pub struct GicV2;

#[cold]
fn missing(what: &str) -> ! {
    panic!("GICv2: {what} is not implemented")
}

impl InterruptController for GicV2 {
    fn init(_platform: &model::Platform) {
        missing("the distributor and CPU interface")
    }
    fn init_cpu(_cpu: usize) {
        missing("a secondary CPU's interface")
    }
    fn acknowledge() -> Option<u32> {
        missing("acknowledge")
    }
    fn drop_priority(_intid: u32) {
        missing("priority drop")
    }
    fn deactivate(_intid: u32) {
        missing("deactivation")
    }
    fn activate_private(_intid: u32) {
        missing("activating a private interrupt")
    }
    fn configure_spi(_intid: u32, _priority: u8, _cpu: usize) {
        missing("SPI configuration")
    }
    fn enable_private(_intid: u32, _cpu: usize, _enable: bool) {
        missing("enabling a private interrupt")
    }
    fn enable_spi(_intid: u32, _enable: bool) {
        missing("enabling an SPI")
    }
    fn spi_pending(_intid: u32) -> bool {
        missing("an SPI's pending state")
    }
    fn set_spi_pending(_intid: u32, _pending: bool) {
        missing("setting an SPI pending")
    }
    fn route_spi(_intid: u32, _cpu: usize) {
        missing("SPI routing")
    }
    fn kick(_cpu: usize) {
        missing("kicks between CPUs")
    }
    fn make_direct(_cpu: usize) {
        missing("direct delivery")
    }
    fn set_direct_private(_intid: u32, _cpu: usize, _enabled: bool, _priority: u8) {
        missing("direct delivery")
    }
    fn send_direct_sgi(_intid: u32, _cpu: usize) {
        missing("direct delivery")
    }
    fn reset_direct() {
        missing("direct delivery")
    }
}

impl ListRegisters for GicV2 {
    fn count() -> usize {
        missing("GICH list registers")
    }
    fn read(_n: usize) -> u64 {
        missing("GICH list registers")
    }
    fn write(_n: usize, _value: u64) {
        missing("GICH list registers")
    }
    fn free() -> u64 {
        missing("GICH list registers")
    }
    fn request_maintenance(_refill: Refill) {
        missing("maintenance interrupts")
    }
    fn save(_ctx: &mut VgicContext) {
        missing("saving GICH state")
    }
    fn restore(_ctx: &VgicContext) {
        missing("restoring GICH state")
    }
}
