//! The physical GICv3 belongs to Partita; guests only ever see virtual
//! interrupts. The driver is the `arm-gic` crate.

use arm_gic::gicv3::registers::{Gicd, GicrSgi};
use arm_gic::gicv3::{GicCpuInterface, GicV3 as Driver, SgiTarget, SgiTargetGroup};
use arm_gic::{IntId, InterruptGroup, UniqueMmioPointer};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};
use spin::{Mutex, Once};

use super::{InterruptController, HYP_TIMER_INTID, KICK_SGI, MAINTENANCE_INTID, PTIMER_INTID, VTIMER_INTID};
use partita_core::config::model;
/// Priority of Partita's own interrupts; forwarded ones get theirs from
/// their partition's criticality.
const OWN_PRIORITY: u8 = 0x80;
/// ICC_CTLR_EL1.EOImode: an EOI only drops the running priority;
/// deactivation is separate, so a guest can deactivate what it was given.
const EOI_MODE_SPLIT: u64 = 1 << 1;
/// GICD_ISPENDR<n> and GICD_ICPENDR<n>, which the driver does not cover.
const GICD_ISPENDR: u64 = 0x200;
const GICD_ICPENDR: u64 = 0x280;

/// The driver holds raw MMIO pointers; one lock serialises all users.
struct Shared(Driver<'static>);

// SAFETY: the GIC registers are device memory reachable from every CPU; all
// access goes through the mutex below, so moving the handle between CPUs is
// sound.
unsafe impl Send for Shared {}

static GIC: Once<Mutex<Shared>> = Once::new();
static MPIDRS: [AtomicU64; crate::MAX_CPUS] = [const { AtomicU64::new(u64::MAX) }; crate::MAX_CPUS];
/// The distributor's base, for the registers the driver does not cover.
static GICD_BASE: AtomicU64 = AtomicU64::new(0);

pub struct GicV3;

impl InterruptController for GicV3 {
    /// Initialises the distributor and every redistributor (primary CPU, once,
    /// after the EL2 map covers `gicd` and `gicr`).
    fn init(platform: &model::Platform) {
        let (gicd, gicr, cpus) = (platform.gicd.base, platform.gicr.base, platform.cpus as usize);
        GicCpuInterface::enable_system_register_el2(true);
        // SAFETY: `gicd` and `gicr` are the platform's GIC frames, identity
        // mapped as device memory, and no other driver instance exists.
        let gic = unsafe {
            let gicd = UniqueMmioPointer::new(NonNull::new(gicd as *mut Gicd).expect("GICD address"));
            let gicr = NonNull::new(gicr as *mut GicrSgi).expect("GICR address");
            Driver::new(gicd, gicr, cpus).expect("GIC redistributors")
        };
        let mut gic = Shared(gic);
        gic.0.setup(0);
        GICD_BASE.store(gicd, Ordering::Relaxed);
        GIC.call_once(|| Mutex::new(gic));
        Self::init_cpu(0);
    }

    /// Per-CPU set-up: system-register interface, priority mask, the kick SGI
    /// and the hypervisor timer.
    fn init_cpu(cpu: usize) {
        GicCpuInterface::enable_system_register_el2(true);
        MPIDRS[cpu].store(crate::cpu::affinity(), Ordering::Relaxed);
        let mut gic = GIC.get().expect("GIC not initialised").lock();
        if cpu != 0 {
            gic.0.init_cpu(cpu);
        }
        let own = [KICK_SGI, HYP_TIMER_INTID, MAINTENANCE_INTID, VTIMER_INTID, PTIMER_INTID];
        for intid in own.map(intid_of) {
            let _ = gic.0.set_interrupt_priority(intid, Some(cpu), OWN_PRIORITY);
            let _ = gic.0.enable_interrupt(intid, Some(cpu), true);
        }
        drop(gic);
        GicCpuInterface::set_priority_mask(0xff);
        let ctlr = crate::read_sysreg!("S3_0_C12_C12_4");
        crate::cpu::write_sysreg!("S3_0_C12_C12_4", ctlr | EOI_MODE_SPLIT);
        GicCpuInterface::enable_group1(true);
    }

    /// Takes the highest-priority pending interrupt, if any.
    fn acknowledge() -> Option<u32> {
        GicCpuInterface::get_and_acknowledge_interrupt(InterruptGroup::Group1).map(|id| id.raw_value())
    }

    /// Drops the running priority of an interrupt taken with [`acknowledge`];
    /// it stays active until [`deactivate`] or, when forwarded to a guest with
    /// the HW bit, until the guest's EOI.
    fn drop_priority(intid: u32) {
        GicCpuInterface::end_interrupt(intid_of(intid), InterruptGroup::Group1);
    }

    /// Deactivates an interrupt (ICC_DIR_EL1).
    fn deactivate(intid: u32) {
        crate::cpu::write_sysreg!("S3_0_C12_C11_1", u64::from(intid));
        crate::cpu::isb();
    }

    /// Sets up a passthrough SPI: group 1, `priority`, level, disabled, routed to
    /// physical CPU `cpu`.
    fn configure_spi(intid: u32, priority: u8, cpu: usize) {
        let mut gic = GIC.get().expect("GIC not initialised").lock();
        let id = intid_of(intid);
        let _ = gic.0.set_group(id, None, arm_gic::gicv3::Group::Group1NS);
        let _ = gic.0.set_interrupt_priority(id, None, priority);
        let _ = gic.0.enable_interrupt(id, None, false);
        drop(gic);
        Self::route_spi(intid, cpu);
    }

    /// Enables or disables a private interrupt (SGI or PPI) of physical CPU `cpu`.
    fn enable_private(intid: u32, cpu: usize, enable: bool) {
        let mut gic = GIC.get().expect("GIC not initialised").lock();
        let _ = gic.0.enable_interrupt(intid_of(intid), Some(cpu), enable);
    }

    /// Enables or disables a passthrough SPI, following its guest.
    fn enable_spi(intid: u32, enable: bool) {
        let mut gic = GIC.get().expect("GIC not initialised").lock();
        let _ = gic.0.enable_interrupt(intid_of(intid), None, enable);
    }

    /// Reads the SPI's bit of GICD_ISPENDR, which for a level interrupt
    /// includes its asserted line.
    fn spi_pending(intid: u32) -> bool {
        let _gic = GIC.get().expect("GIC not initialised").lock();
        let word = pending_word(GICD_ISPENDR, intid);
        // SAFETY: the word lies in the distributor frame, mapped as device
        // memory at EL2; the GIC lock serialises it with the driver.
        let bits = unsafe { core::ptr::read_volatile(word) };
        bits & (1 << (intid % 32)) != 0
    }

    /// Writes the SPI's bit of GICD_ISPENDR or GICD_ICPENDR.
    fn set_spi_pending(intid: u32, pending: bool) {
        let _gic = GIC.get().expect("GIC not initialised").lock();
        let word = pending_word(if pending { GICD_ISPENDR } else { GICD_ICPENDR }, intid);
        // SAFETY: as in `spi_pending`; writing one bit changes only that
        // interrupt's pending latch.
        unsafe { core::ptr::write_volatile(word, 1 << (intid % 32)) };
    }

    /// Routes an SPI to physical CPU `cpu`.
    fn route_spi(intid: u32, cpu: usize) {
        let mpidr = MPIDRS[cpu].load(Ordering::Relaxed);
        let mpidr = if mpidr == u64::MAX { cpu as u64 } else { mpidr };
        let mut gic = GIC.get().expect("GIC not initialised").lock();
        let _ = gic.0.distributor().set_routing(intid_of(intid), Some(mpidr));
    }

    /// Sends the kick SGI to physical CPU `cpu`.
    fn kick(cpu: usize) {
        let mpidr = MPIDRS[cpu].load(Ordering::Relaxed);
        if mpidr == u64::MAX {
            return;
        }
        let target = SgiTarget::List {
            affinity3: (mpidr >> 32) as u8,
            affinity2: (mpidr >> 16) as u8,
            affinity1: (mpidr >> 8) as u8,
            target_list: 1 << (mpidr & 0xf),
        };
        let _ = GicCpuInterface::send_sgi(IntId::sgi(KICK_SGI), target, SgiTargetGroup::CurrentGroup1);
    }
}

/// The distributor word of the bank at `bank` that holds `intid`'s bit.
fn pending_word(bank: u64, intid: u32) -> *mut u32 {
    (GICD_BASE.load(Ordering::Relaxed) + bank + 4 * u64::from(intid / 32)) as *mut u32
}

const fn intid_of(raw: u32) -> IntId {
    match raw {
        0..16 => IntId::sgi(raw),
        16..32 => IntId::ppi(raw - 16),
        _ => IntId::spi(raw - 32),
    }
}
