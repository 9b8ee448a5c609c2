//! The GIC-400 (GICv2 with the virtualization extension) of a ZynqMP:
//! Partita owns the distributor (GICD) and CPU interface (GICC); its
//! guests get the virtual CPU interface (GICV) in stage 2 and list
//! registers Partita fills through GICH.
//!
//! Written here rather than with the `arm-gic` crate: its GICv2 driver has
//! no split priority drop and deactivation (GICC_DIR), no active or
//! pending bits and no virtual interface, which are most of what a
//! hypervisor needs; the registers are plain words and bytes.
//!
//! On QEMU's `xlnx-zcu102` (no `secure=on`) the GIC has no Security
//! Extensions: every interrupt stays in group 0, signalled as IRQ. Direct
//! delivery needs GICv3's two groups per core and is refused on this board
//! by `partita check`.

use super::{InterruptController, ListRegisters, VgicContext, HYP_TIMER_INTID, KICK_SGI, MAINTENANCE_INTID, MAX_LRS};
use super::{PTIMER_INTID, VTIMER_INTID};
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use partita_core::config::model::{self, GICV2_GICH_OFFSET};
use partita_core::vgic::lr::{gicv2, Refill};
use partita_core::vgic::SPI_BASE;
use spin::Mutex;

/// Priority of Partita's own interrupts, as on the GICv3.
const OWN_PRIORITY: u8 = 0x80;

// Distributor.
const GICD_CTLR: u64 = 0x000;
const GICD_TYPER: u64 = 0x004;
const GICD_ISENABLER: u64 = 0x100;
const GICD_ICENABLER: u64 = 0x180;
const GICD_ISPENDR: u64 = 0x200;
const GICD_ICPENDR: u64 = 0x280;
const GICD_ISACTIVER: u64 = 0x300;
const GICD_ICACTIVER: u64 = 0x380;
const GICD_IPRIORITYR: u64 = 0x400;
const GICD_ITARGETSR: u64 = 0x800;
const GICD_ICFGR: u64 = 0xc00;
const GICD_SGIR: u64 = 0xf00;
/// Group 0 forwarded to the CPU interfaces (the only group in use).
const GICD_CTLR_ENABLE: u32 = 1;

// CPU interface.
const GICC_CTLR: u64 = 0x0000;
const GICC_PMR: u64 = 0x0004;
const GICC_IAR: u64 = 0x000c;
const GICC_EOIR: u64 = 0x0010;
/// GICC's second page: the ZynqMP's GIC-400 repeats each 4 KiB page over
/// 64 KiB, so it starts 64 KiB on (at 4 KiB on is the first page again,
/// and a write meant for DIR would land in GICC_CTLR).
const GICC_DIR: u64 = 0x1_0000;
/// Group 0 on, and EOImode: EOIR only drops the running priority, DIR
/// deactivates, so a guest's EOI of a linked interrupt can deactivate it.
const GICC_CTLR_VALUE: u32 = 1 | 1 << 9;
/// IAR values from 1020 up name no interrupt.
const IAR_SPURIOUS: u32 = 1020;
const IAR_INTID: u32 = 0x3ff;

// Virtual interface control.
const GICH_HCR: u64 = 0x000;
const GICH_VTR: u64 = 0x004;
const GICH_VMCR: u64 = 0x008;
const GICH_EISR0: u64 = 0x020;
const GICH_ELRSR0: u64 = 0x030;
const GICH_APR: u64 = 0x0f0;
const GICH_LR: u64 = 0x100;
const HCR_EN: u32 = 1 << 0;
const HCR_UIE: u32 = 1 << 1;
const HCR_NPIE: u32 = 1 << 3;

static GICD: AtomicU64 = AtomicU64::new(0);
static GICC: AtomicU64 = AtomicU64::new(0);
static GICH: AtomicU64 = AtomicU64::new(0);
/// Each CPU's bit in the target masks: its CPU-interface number, which
/// need not be its index, as its own GICD_ITARGETSR0 reads it.
static TARGET: [AtomicU8; crate::MAX_CPUS] = [const { AtomicU8::new(0) }; crate::MAX_CPUS];
/// Per CPU, the last IAR value of each SGI: its EOIR and DIR must repeat
/// the sender's number IAR gave with it.
static SGI_IAR: [[AtomicU32; 16]; crate::MAX_CPUS] = [const { [const { AtomicU32::new(0) }; 16] }; crate::MAX_CPUS];
/// Serialises read-modify-writes of the configuration words.
static CONFIG: Mutex<()> = Mutex::new(());

fn reg(base: &AtomicU64, offset: u64) -> u64 {
    base.load(Ordering::Relaxed) + offset
}

fn read32(base: &AtomicU64, offset: u64) -> u32 {
    // SAFETY: `base` is one of the GIC's frames set by `init` from the
    // board's configuration, identity mapped as device memory (the EL2 map
    // covers the platform's GIC span), and `offset` a register inside it.
    unsafe { core::ptr::read_volatile(reg(base, offset) as *const u32) }
}

fn write32(base: &AtomicU64, offset: u64, value: u32) {
    // SAFETY: as in `read32`; every caller writes a register whose effect
    // is the one its name says, on interrupts Partita owns or forwards.
    unsafe { core::ptr::write_volatile(reg(base, offset) as *mut u32, value) }
}

fn write8(base: &AtomicU64, offset: u64, value: u8) {
    // SAFETY: as in `write32`; GICD_IPRIORITYR and GICD_ITARGETSR take
    // byte accesses, one per interrupt.
    unsafe { core::ptr::write_volatile(reg(base, offset) as *mut u8, value) }
}

fn read8(base: &AtomicU64, offset: u64) -> u8 {
    // SAFETY: as in `read32`, for a byte-accessible register.
    unsafe { core::ptr::read_volatile(reg(base, offset) as *const u8) }
}

/// The word and the bit of `intid` in a one-bit-per-interrupt bank.
const fn bit(bank: u64, intid: u32) -> (u64, u32) {
    (bank + 4 * (intid / 32) as u64, 1 << (intid % 32))
}

/// CPU `cpu`'s target bit; before it has started, its index's.
fn target(cpu: usize) -> u8 {
    match TARGET.get(cpu).map(|t| t.load(Ordering::Relaxed)) {
        Some(0) | None => 1 << (cpu % 8),
        Some(mask) => mask,
    }
}

/// The value EOIR and DIR need for `intid`: an SGI's with its sender.
fn iar_value(intid: u32) -> u32 {
    if intid < 16 {
        SGI_IAR[crate::cpu::index()][intid as usize].load(Ordering::Relaxed)
    } else {
        intid
    }
}

pub struct GicV2;

impl InterruptController for GicV2 {
    /// The distributor with every SPI off, then the primary CPU's interface.
    fn init(platform: &model::Platform) {
        GICD.store(platform.gicd.base, Ordering::Relaxed);
        GICC.store(platform.gicr.base, Ordering::Relaxed);
        GICH.store(platform.gicr.base + GICV2_GICH_OFFSET, Ordering::Relaxed);
        write32(&GICD, GICD_CTLR, 0);
        let lines = (read32(&GICD, GICD_TYPER) & 0x1f) + 1;
        for word in 1..lines {
            let offset = 4 * u64::from(word);
            write32(&GICD, GICD_ICENABLER + offset, u32::MAX);
            write32(&GICD, GICD_ICPENDR + offset, u32::MAX);
            write32(&GICD, GICD_ICACTIVER + offset, u32::MAX);
        }
        write32(&GICD, GICD_CTLR, GICD_CTLR_ENABLE);
        Self::init_cpu(0);
    }

    /// This CPU's banked interrupts: all off but Partita's own, at its
    /// priority; then its interface, with split EOI.
    fn init_cpu(cpu: usize) {
        let mine = read8(&GICD, GICD_ITARGETSR);
        TARGET[cpu].store(mine, Ordering::Relaxed);
        write32(&GICD, GICD_ICENABLER, u32::MAX);
        write32(&GICD, GICD_ICPENDR, u32::MAX);
        write32(&GICD, GICD_ICACTIVER, u32::MAX);
        for intid in [KICK_SGI, HYP_TIMER_INTID, MAINTENANCE_INTID, VTIMER_INTID, PTIMER_INTID] {
            write8(&GICD, GICD_IPRIORITYR + u64::from(intid), OWN_PRIORITY);
            let (word, mask) = bit(GICD_ISENABLER, intid);
            write32(&GICD, word, mask);
        }
        write32(&GICC, GICC_PMR, 0xff);
        write32(&GICC, GICC_CTLR, GICC_CTLR_VALUE);
    }

    fn acknowledge() -> Option<u32> {
        let iar = read32(&GICC, GICC_IAR);
        let intid = iar & IAR_INTID;
        if intid >= IAR_SPURIOUS {
            return None;
        }
        if intid < 16 {
            SGI_IAR[crate::cpu::index()][intid as usize].store(iar, Ordering::Relaxed);
        }
        Some(intid)
    }

    fn drop_priority(intid: u32) {
        write32(&GICC, GICC_EOIR, iar_value(intid));
    }

    fn deactivate(intid: u32) {
        write32(&GICC, GICC_DIR, iar_value(intid));
    }

    /// This CPU's banked active bit: GICD_ISACTIVER0 is per CPU.
    fn activate_private(intid: u32) {
        write32(&GICD, GICD_ISACTIVER, 1 << intid);
    }

    fn configure_spi(intid: u32, priority: u8, cpu: usize) {
        let (enable, mask) = bit(GICD_ICENABLER, intid);
        write32(&GICD, enable, mask);
        write8(&GICD, GICD_IPRIORITYR + u64::from(intid), priority);
        let _guard = CONFIG.lock();
        // Two bits per interrupt; 0b00 in the upper one: level-sensitive.
        let word = GICD_ICFGR + 4 * u64::from(intid / 16);
        let shift = 2 * (intid % 16) + 1;
        write32(&GICD, word, read32(&GICD, word) & !(1 << shift));
        write8(&GICD, GICD_ITARGETSR + u64::from(intid), target(cpu));
    }

    /// Only this CPU's own bank is reachable on a GICv2, and that is the
    /// only one Partita changes (the running vCPU's timers).
    fn enable_private(intid: u32, cpu: usize, enable: bool) {
        debug_assert_eq!(cpu, crate::cpu::index(), "GICv2 banks private interrupts per CPU");
        let (word, mask) = bit(if enable { GICD_ISENABLER } else { GICD_ICENABLER }, intid);
        write32(&GICD, word, mask);
    }

    fn enable_spis(first: u32, mask: u32, enable: bool) {
        let (word, _) = bit(if enable { GICD_ISENABLER } else { GICD_ICENABLER }, first);
        write32(&GICD, word, mask);
    }

    fn spi_pending(intid: u32) -> bool {
        let (word, mask) = bit(GICD_ISPENDR, intid);
        read32(&GICD, word) & mask != 0
    }

    fn set_spis_pending(first: u32, mask: u32, pending: bool) {
        let (word, _) = bit(if pending { GICD_ISPENDR } else { GICD_ICPENDR }, first);
        write32(&GICD, word, mask);
    }

    fn route_spi(intid: u32, cpu: usize) {
        if intid >= SPI_BASE {
            write8(&GICD, GICD_ITARGETSR + u64::from(intid), target(cpu));
        }
    }

    /// GICD_SGIR with the target list naming `cpu`.
    fn kick(cpu: usize) {
        write32(&GICD, GICD_SGIR, u32::from(target(cpu)) << 16 | KICK_SGI);
    }

    fn make_direct(_cpu: usize) {
        no_direct()
    }
    fn set_direct_enables(_cpu: usize, _mask: u32, _enabled: bool) {
        no_direct()
    }
    fn set_direct_priority(_intid: u32, _cpu: usize, _priority: u8) {
        no_direct()
    }
    fn send_direct_sgi(_intid: u32, _cpu: usize) {
        no_direct()
    }
    fn mpidr(_cpu: usize) -> Option<u64> {
        None
    }
    fn direct_reserved_sgis() -> u16 {
        u16::MAX
    }
    fn reset_direct() {
        no_direct()
    }
}

/// `partita check` refuses `interrupts = "direct"` on a GICv2 board, so a
/// call here is a hypervisor bug.
#[cold]
fn no_direct() -> ! {
    panic!("GICv2: direct delivery needs a GICv3")
}

fn list_registers() -> usize {
    ((read32(&GICH, GICH_VTR) & 0x3f) as usize + 1).min(MAX_LRS)
}

fn lr_offset(n: usize) -> u64 {
    GICH_LR + 4 * n as u64
}

/// The list registers through GICH; values cross in the ICH_LR layout.
impl ListRegisters for GicV2 {
    fn count() -> usize {
        list_registers()
    }

    fn read(n: usize) -> u64 {
        gicv2::to_lr_eoi_linked(read32(&GICH, lr_offset(n)))
    }

    /// A hardware link is kept by an EOI maintenance interrupt instead
    /// (`gicv2::from_lr_eoi_linked` says why), finished by
    /// [`ListRegisters::retire_completed`].
    fn write(n: usize, value: u64) {
        write32(&GICH, lr_offset(n), gicv2::from_lr_eoi_linked(value))
    }

    /// Each entry the guest completed that asked for a maintenance
    /// interrupt stood for a hardware link: its physical interrupt is
    /// deactivated here (a level line still asserted fires again), and the
    /// register emptied, which also ends its maintenance interrupt.
    fn retire_completed() {
        let completed = read32(&GICH, GICH_EISR0);
        for n in (0..list_registers()).filter(|n| completed & (1 << n) != 0) {
            let intid = read32(&GICH, lr_offset(n)) & IAR_INTID;
            write32(&GICH, lr_offset(n), 0);
            write32(&GICC, GICC_DIR, intid);
        }
    }

    fn free() -> u64 {
        u64::from(read32(&GICH, GICH_ELRSR0))
    }

    fn request_maintenance(refill: Refill) {
        let request = match refill {
            Refill::NotNeeded => 0,
            Refill::WhenNonePending => HCR_NPIE,
            Refill::WhenFewListed => HCR_UIE,
        };
        write32(&GICH, GICH_HCR, HCR_EN | request);
    }

    fn save(ctx: &mut VgicContext) {
        Self::retire_completed();
        let empty = Self::free();
        let mut listed = 0;
        for n in 0..list_registers() {
            ctx.lrs[n] = if empty & (1 << n) != 0 {
                0
            } else {
                let lr = Self::read(n);
                write32(&GICH, lr_offset(n), 0);
                listed |= 1 << n;
                lr
            };
        }
        ctx.listed = listed;
        ctx.vmcr = u64::from(read32(&GICH, GICH_VMCR));
        ctx.apr[0] = u64::from(read32(&GICH, GICH_APR));
        ctx.hcr = u64::from(read32(&GICH, GICH_HCR));
        write32(&GICH, GICH_HCR, 0);
    }

    fn restore(ctx: &VgicContext) {
        // Every other register is free: emptied by the save that listed it,
        // or free when that save looked.
        for n in (0..list_registers()).filter(|n| ctx.listed & (1 << n) != 0) {
            Self::write(n, ctx.lrs[n]);
        }
        write32(&GICH, GICH_VMCR, ctx.vmcr as u32);
        write32(&GICH, GICH_APR, ctx.apr[0] as u32);
        write32(&GICH, GICH_HCR, ctx.hcr as u32 | HCR_EN);
    }
}
