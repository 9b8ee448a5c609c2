//! The physical GICv3 belongs to Partita; guests see virtual interrupts,
//! except on a direct-delivery core, where the owning guest takes its
//! private interrupts from the physical CPU interface's group 1 and Partita
//! keeps group 0. The driver is the `arm-gic` crate.

use arm_gic::gicv3::registers::{Gicd, GicrSgi};
use arm_gic::gicv3::{GicCpuInterface, GicV3 as Driver, Group, SecureIntGroup, SgiTarget, SgiTargetGroup};
use arm_gic::{IntId, InterruptGroup, UniqueMmioPointer};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use spin::{Mutex, Once};

use super::{InterruptController, HYP_TIMER_INTID, KICK_SGI, MAINTENANCE_INTID, PTIMER_INTID, VTIMER_INTID};
use partita_core::config::model;
use partita_core::vgic::SPI_BASE;
/// Priority of Partita's own interrupts; forwarded ones get theirs from
/// their partition's criticality.
const OWN_PRIORITY: u8 = 0x80;
/// ICC_CTLR_EL1.EOImode: an EOI only drops the running priority;
/// deactivation is separate, so a guest can deactivate what it was given.
const EOI_MODE_SPLIT: u64 = 1 << 1;
/// GICD_ISPENDR<n> and GICD_ICPENDR<n>, which the driver does not cover.
const GICD_ISPENDR: u64 = 0x200;
const GICD_ICPENDR: u64 = 0x280;
/// A redistributor's frames (RD and SGI, no VLPI) and, in its SGI frame,
/// the banks the driver does not cover.
const GICR_STRIDE: u64 = 0x2_0000;
const GICR_SGI_FRAME: u64 = 0x1_0000;
const GICR_ISENABLER0: u64 = 0x100;
const GICR_ICENABLER0: u64 = 0x180;
const GICR_IPRIORITYR: u64 = 0x400;
const GICR_ICPENDR0: u64 = 0x280;
const GICR_ISACTIVER0: u64 = 0x300;
const GICR_ICACTIVER0: u64 = 0x380;
/// On a direct-delivery core Partita's interrupts are group 0 at the top
/// priority, and the guest's are scaled into the lower half, so none of
/// the guest's can hold off one of Partita's.
const DIRECT_OWN_PRIORITY: u8 = 0x00;
const DIRECT_GUEST_FLOOR: u8 = 0x80;
/// Partita's private interrupts on a direct-delivery core; the guest owns
/// the others.
const DIRECT_OWN: [u32; 3] = [KICK_SGI, HYP_TIMER_INTID, MAINTENANCE_INTID];
const DIRECT_OWN_MASK: u32 = 1 << KICK_SGI | 1 << HYP_TIMER_INTID | 1 << MAINTENANCE_INTID;
/// GICD_ISENABLER<n> and GICD_ICENABLER<n>.
const GICD_ISENABLER: u64 = 0x100;
const GICD_ICENABLER: u64 = 0x180;

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
static GICR_BASE: AtomicU64 = AtomicU64::new(0);
/// The direct-delivery cores ([`InterruptController::make_direct`]).
static DIRECT: [AtomicBool; crate::MAX_CPUS] = [const { AtomicBool::new(false) }; crate::MAX_CPUS];

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
        GICR_BASE.store(gicr, Ordering::Relaxed);
        GIC.call_once(|| Mutex::new(gic));
        Self::init_cpu(0);
    }

    /// Per-CPU set-up: system-register interface, priority mask, the kick SGI
    /// and the hypervisor timer. A direct-delivery core keeps the groups
    /// [`make_direct`] gave its private interrupts, and an EOI there also
    /// deactivates: the guest's own ICC_DIR_EL1 would reach only the
    /// virtual interface.
    fn init_cpu(cpu: usize) {
        GicCpuInterface::enable_system_register_el2(true);
        MPIDRS[cpu].store(crate::cpu::affinity(), Ordering::Relaxed);
        let direct = DIRECT[cpu].load(Ordering::Relaxed);
        let mut gic = GIC.get().expect("GIC not initialised").lock();
        if cpu != 0 {
            gic.0.init_cpu(cpu);
        }
        if !direct {
            let own = [KICK_SGI, HYP_TIMER_INTID, MAINTENANCE_INTID, VTIMER_INTID, PTIMER_INTID];
            for intid in own.map(intid_of) {
                let _ = gic.0.set_interrupt_priority(intid, Some(cpu), OWN_PRIORITY);
                let _ = gic.0.enable_interrupt(intid, Some(cpu), true);
            }
        }
        drop(gic);
        GicCpuInterface::set_priority_mask(0xff);
        let ctlr = crate::read_sysreg!("S3_0_C12_C12_4");
        let ctlr = if direct { ctlr & !EOI_MODE_SPLIT } else { ctlr | EOI_MODE_SPLIT };
        crate::cpu::write_sysreg!("S3_0_C12_C12_4", ctlr);
        GicCpuInterface::enable_group1(true);
        GicCpuInterface::enable_group0(direct);
    }

    /// Takes the highest-priority pending interrupt, if any: of group 0 on
    /// a direct-delivery core, where group 1 is the guest's.
    fn acknowledge() -> Option<u32> {
        GicCpuInterface::get_and_acknowledge_interrupt(own_group()).map(|id| id.raw_value())
    }

    /// Drops the running priority of an interrupt taken with [`acknowledge`];
    /// it stays active until [`deactivate`] or, when forwarded to a guest with
    /// the HW bit, until the guest's EOI.
    fn drop_priority(intid: u32) {
        GicCpuInterface::end_interrupt(intid_of(intid), own_group());
    }

    /// Both at once, asking once which group is Partita's here.
    fn end(intid: u32) {
        if DIRECT[crate::cpu::index()].load(Ordering::Relaxed) {
            GicCpuInterface::end_interrupt(intid_of(intid), InterruptGroup::Group0);
        } else {
            GicCpuInterface::end_interrupt(intid_of(intid), InterruptGroup::Group1);
            crate::cpu::write_sysreg!("S3_0_C12_C11_1", u64::from(intid));
            crate::cpu::isb();
        }
    }

    /// Deactivates an interrupt (ICC_DIR_EL1). On a direct-delivery core
    /// the EOI did already.
    fn deactivate(intid: u32) {
        if !DIRECT[crate::cpu::index()].load(Ordering::Relaxed) {
            crate::cpu::write_sysreg!("S3_0_C12_C11_1", u64::from(intid));
            crate::cpu::isb();
        }
    }

    /// With one question of the group and one barrier.
    fn deactivate_both(first: u32, second: u32) {
        if !DIRECT[crate::cpu::index()].load(Ordering::Relaxed) {
            crate::cpu::write_sysreg!("S3_0_C12_C11_1", u64::from(first));
            crate::cpu::write_sysreg!("S3_0_C12_C11_1", u64::from(second));
            crate::cpu::isb();
        }
    }

    /// GICR_ISACTIVER0 of this CPU's redistributor: a write sets only the
    /// bits written, so no lock is needed against the driver.
    fn activate_private(intid: u32) {
        let frame = redistributor_sgi(crate::cpu::index());
        // SAFETY: the word lies in this CPU's redistributor SGI frame, mapped
        // as device memory at EL2; setting one private interrupt's active
        // bit touches no other interrupt and no other CPU.
        unsafe { core::ptr::write_volatile((frame + GICR_ISACTIVER0) as *mut u32, 1 << intid) };
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

    /// GICD_ISENABLER<n> or GICD_ICENABLER<n>: a write changes only the
    /// bits written, so no lock is needed against the driver.
    fn enable_spis(first: u32, mask: u32, enable: bool) {
        let word = pending_word(if enable { GICD_ISENABLER } else { GICD_ICENABLER }, first);
        // SAFETY: the word lies in the distributor frame, mapped as device
        // memory at EL2; writing ones enables or disables only the SPIs
        // they name, which the caller's partition owns.
        unsafe { core::ptr::write_volatile(word, mask) };
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

    /// Writes the SPIs' bits of GICD_ISPENDR or GICD_ICPENDR: a write
    /// changes only the bits written, so no lock is needed.
    fn set_spis_pending(first: u32, mask: u32, pending: bool) {
        let word = pending_word(if pending { GICD_ISPENDR } else { GICD_ICPENDR }, first);
        // SAFETY: as in `spi_pending`; writing ones changes only the
        // pending latches of the SPIs they name.
        unsafe { core::ptr::write_volatile(word, mask) };
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
        let target = sgi_target(mpidr);
        let group =
            if DIRECT[cpu].load(Ordering::Relaxed) { SgiTargetGroup::Group0 } else { SgiTargetGroup::CurrentGroup1 };
        let _ = GicCpuInterface::send_sgi(IntId::sgi(KICK_SGI), target, group);
    }

    fn make_direct(cpu: usize) {
        DIRECT[cpu].store(true, Ordering::Relaxed);
        let mut gic = GIC.get().expect("GIC not initialised").lock();
        for intid in (0..SPI_BASE).map(intid_of) {
            let own = DIRECT_OWN.contains(&intid.raw_value());
            let (group, priority) = if own {
                (Group::Secure(SecureIntGroup::Group0), DIRECT_OWN_PRIORITY)
            } else {
                (Group::Group1NS, guest_priority(0xa0))
            };
            let _ = gic.0.set_group(intid, Some(cpu), group);
            let _ = gic.0.set_interrupt_priority(intid, Some(cpu), priority);
            let _ = gic.0.enable_interrupt(intid, Some(cpu), own);
        }
        gic.0.distributor().enable_group0(true);
        drop(gic);
        if crate::cpu::index() == cpu {
            Self::init_cpu(cpu);
        }
    }

    /// GICR_ISENABLER0 or GICR_ICENABLER0 of `cpu`: one write for a
    /// guest's whole register, and no lock, as a write changes only the
    /// bits written.
    fn set_direct_enables(cpu: usize, mask: u32, enabled: bool) {
        let mask = mask & !DIRECT_OWN_MASK;
        if mask == 0 {
            return;
        }
        let enable = if enabled { GICR_ISENABLER0 } else { GICR_ICENABLER0 };
        // SAFETY: the word lies in `cpu`'s redistributor SGI frame, mapped
        // as device memory at EL2; the mask spares Partita's own
        // interrupts, so only the guest's change.
        unsafe { core::ptr::write_volatile((redistributor_sgi(cpu) + enable) as *mut u32, mask) };
    }

    fn set_direct_priority(intid: u32, cpu: usize, priority: u8) {
        if intid >= SPI_BASE || DIRECT_OWN_MASK & 1 << intid != 0 {
            return;
        }
        // SAFETY: the byte lies in `cpu`'s redistributor SGI frame, mapped
        // as device memory at EL2, and is a private interrupt of the
        // guest's (checked above), so Partita's own are untouched. A byte
        // store changes no other interrupt's priority, so no lock is needed.
        unsafe {
            core::ptr::write_volatile(
                (redistributor_sgi(cpu) + GICR_IPRIORITYR + u64::from(intid)) as *mut u8,
                guest_priority(priority),
            );
        }
    }

    fn send_direct_sgi(intid: u32, cpu: usize) {
        let mpidr = MPIDRS[cpu].load(Ordering::Relaxed);
        if intid >= 16 || DIRECT_OWN.contains(&intid) || mpidr == u64::MAX {
            return;
        }
        let _ = GicCpuInterface::send_sgi(IntId::sgi(intid), sgi_target(mpidr), SgiTargetGroup::CurrentGroup1);
    }

    fn mpidr(cpu: usize) -> Option<u64> {
        let mpidr = MPIDRS.get(cpu)?.load(Ordering::Relaxed);
        (mpidr != u64::MAX).then_some(mpidr)
    }

    fn direct_reserved_sgis() -> u16 {
        DIRECT_OWN.iter().filter(|&&intid| intid < 16).fold(0, |mask, &intid| mask | 1 << intid)
    }

    fn reset_direct() {
        let cpu = crate::cpu::index();
        let guests = !DIRECT_OWN_MASK;
        let frame = redistributor_sgi(cpu);
        let _gic = GIC.get().expect("GIC not initialised").lock();
        for bank in [GICR_ICENABLER0, GICR_ICPENDR0, GICR_ICACTIVER0] {
            // SAFETY: the word lies in this CPU's redistributor SGI frame,
            // mapped as device memory at EL2; the GIC lock serialises it
            // with the driver, and the mask spares Partita's interrupts.
            unsafe { core::ptr::write_volatile((frame + bank) as *mut u32, guests) };
        }
        // ICC_AP1R0_EL1: active priorities of group 1 the guest acknowledged
        // and never completed; with 5 priority bits (QEMU, Cortex-A) the
        // first register holds them all.
        crate::cpu::write_sysreg!("S3_0_C12_C9_0", 0u64);
        crate::cpu::isb();
    }
}

/// The group of Partita's own interrupts on this CPU.
fn own_group() -> InterruptGroup {
    if DIRECT[crate::cpu::index()].load(Ordering::Relaxed) {
        InterruptGroup::Group0
    } else {
        InterruptGroup::Group1
    }
}

/// The physical priority of a guest's interrupt that it ranks `priority`.
const fn guest_priority(priority: u8) -> u8 {
    DIRECT_GUEST_FLOOR | priority >> 1
}

fn sgi_target(mpidr: u64) -> SgiTarget {
    SgiTarget::List {
        affinity3: (mpidr >> 32) as u8,
        affinity2: (mpidr >> 16) as u8,
        affinity1: (mpidr >> 8) as u8,
        target_list: 1 << (mpidr & 0xf),
    }
}

/// The distributor word of the bank at `bank` that holds `intid`'s bit.
/// The SGI frame of `cpu`'s redistributor.
fn redistributor_sgi(cpu: usize) -> u64 {
    GICR_BASE.load(Ordering::Relaxed) + cpu as u64 * GICR_STRIDE + GICR_SGI_FRAME
}

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
