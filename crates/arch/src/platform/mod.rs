//! What differs from one board to the next, behind one interface: the
//! physical interrupt controller and its CPU interface, the virtual CPU
//! interface with its list registers, the console UART, the devices
//! Partita maps for itself, and the counter frequency.
//!
//! Each board is one module implementing [`Platform`]; [`Board`] names the
//! one this build is for (QEMU `virt`, or the ZynqMP with the `zcu102`
//! feature), and the aliases below ([`Gic`], [`Lrs`], [`Uart`]) are what
//! the rest of Partita calls. Only the chosen board's modules are
//! compiled: the other board's registers must never be touched.

#[cfg(feature = "zcu102")]
mod cadence_uart;
#[cfg(feature = "zcu102")]
mod gicv2;
#[cfg(not(feature = "zcu102"))]
mod gicv3;
#[cfg(not(feature = "zcu102"))]
mod gicv3_lrs;
#[cfg(not(feature = "zcu102"))]
mod pl011;
#[cfg(not(feature = "zcu102"))]
mod qemu_virt;
#[cfg(feature = "zcu102")]
mod zcu102;

use alloc::vec::Vec;
use partita_core::config::model::{self, Range};
use partita_core::vgic::lr::Refill;

/// The board this build runs on.
#[cfg(not(feature = "zcu102"))]
pub type Board = qemu_virt::QemuVirt;
/// The board this build runs on.
#[cfg(feature = "zcu102")]
pub type Board = zcu102::Zcu102;
/// Its physical interrupt controller.
pub type Gic = <Board as Platform>::Gic;
/// Its virtual CPU interface.
pub type Lrs = <Board as Platform>::Lrs;
/// Its console UART.
pub type Uart = <Board as Platform>::Uart;
/// Its programmable logic's window.
pub const PL_WINDOW: u64 = <Board as Platform>::PL_WINDOW;

// The interrupts every AArch64 core has, whatever its GIC.

/// The SGI Partita uses to make another CPU re-examine its vCPUs. The last
/// one: on a direct-delivery core it is Partita's, and guests' kernels
/// number their own IPIs from 0.
pub const KICK_SGI: u32 = 15;
/// The GIC maintenance interrupt (list registers need a refill).
pub const MAINTENANCE_INTID: u32 = 25;
/// The EL2 physical timer (CNTHP).
pub const HYP_TIMER_INTID: u32 = 26;
/// The EL1 virtual and physical timers: they belong to the running vCPU.
pub use partita_core::vgic::{PTIMER_INTID, VTIMER_INTID};
/// The most list registers of a virtual interface that Partita uses (the
/// supported boards have 4; GICv3 allows 16). Arrays of this many are
/// cleared and copied on the paths that refill and switch: at 16, a
/// refill's cleared array was a library memset of 69 instructions.
pub const MAX_LRS: usize = 8;

/// A board.
pub trait Platform {
    type Gic: InterruptController;
    type Lrs: ListRegisters;
    type Uart: Console;
    /// Where a payload too broken to name its own console reports.
    const FALLBACK_CONSOLE: u64;
    /// The programmable logic's window, where the static part's registers
    /// are (`partita_core::fabric::pl`): the PL's on a ZynqMP; on a board
    /// without one, where the emulated logic answers in its place.
    const PL_WINDOW: u64;
    /// The system counter's frequency in Hz.
    fn counter_frequency() -> u64;
    /// The device frames Partita maps for itself at EL2: its console and
    /// its interrupt controller's, as the configuration's platform names
    /// them.
    fn own_devices(platform: &model::Platform) -> Vec<Range>;
}

/// The physical interrupt controller. Partita owns it; guests only see
/// virtual interrupts. Priority drop and deactivation are separate, so a
/// guest can deactivate a hardware interrupt it was given.
pub trait InterruptController {
    /// The controller and this CPU's interface (primary CPU, once, after
    /// the EL2 map covers its frames).
    fn init(platform: &model::Platform);
    /// A secondary CPU's interface.
    fn init_cpu(cpu: usize);
    /// Takes the highest-priority pending interrupt, if any.
    fn acknowledge() -> Option<u32>;
    /// Drops the running priority of an acknowledged interrupt; it stays
    /// active until [`InterruptController::deactivate`] or, when forwarded
    /// to a guest as a hardware interrupt, until the guest's EOI.
    fn drop_priority(intid: u32);
    fn deactivate(intid: u32);
    /// Makes a private interrupt of this CPU active without taking it: a
    /// vCPU's timer already due as it is loaded goes to the guest at once,
    /// linked to this physical interrupt, which stays silent until the
    /// guest completes it.
    fn activate_private(intid: u32);
    /// Ends one of Partita's own interrupts completely.
    fn end(intid: u32) {
        Self::drop_priority(intid);
        Self::deactivate(intid);
    }
    /// [`InterruptController::deactivate`] of two interrupts.
    fn deactivate_both(first: u32, second: u32) {
        Self::deactivate(first);
        Self::deactivate(second);
    }
    /// A passthrough SPI: `priority`, level, disabled, routed to `cpu`.
    fn configure_spi(intid: u32, priority: u8, cpu: usize);
    /// Enables or disables a private interrupt (SGI or PPI) of `cpu`.
    fn enable_private(intid: u32, cpu: usize, enable: bool);
    /// Enables or disables a passthrough SPI, following its guest.
    fn enable_spi(intid: u32, enable: bool) {
        Self::enable_spis(intid & !31, 1 << (intid % 32), enable);
    }
    /// The same for the SPIs `mask` names in the 32 from `first` (a
    /// multiple of 32): one register write for a guest's whole one.
    fn enable_spis(first: u32, mask: u32, enable: bool);
    /// A passthrough SPI's pending state: its latch or its asserted line.
    fn spi_pending(intid: u32) -> bool;
    /// Sets or clears a passthrough SPI's pending latch, following its guest
    /// (a level line still asserted keeps it pending).
    fn set_spi_pending(intid: u32, pending: bool) {
        Self::set_spis_pending(intid & !31, 1 << (intid % 32), pending);
    }
    /// The same for the SPIs `mask` names in the 32 from `first`.
    fn set_spis_pending(first: u32, mask: u32, pending: bool);
    fn route_spi(intid: u32, cpu: usize);
    /// Sends [`KICK_SGI`] to physical CPU `cpu`.
    fn kick(cpu: usize);

    // Direct delivery (`docs/interrupts.md`): the partition that owns a
    // core takes its private interrupts from the physical GIC at EL1, and
    // Partita keeps group 0 (FIQ) there.

    /// Makes `cpu` a direct-delivery core: Partita's own interrupts there
    /// become group 0 at a priority above any the guest can set, and its
    /// other private interrupts group 1, disabled. The primary CPU calls it
    /// before `cpu` starts, so no kick is ever sent in the wrong group.
    fn make_direct(cpu: usize);
    /// Follows the guest on a direct-delivery core: enables or disables
    /// the private interrupts `mask` names on `cpu` (Partita's own among
    /// them are left alone).
    fn set_direct_enables(cpu: usize, mask: u32, enabled: bool);
    /// The same for one private interrupt's priority, as the guest ranks
    /// it, scaled below Partita's own.
    fn set_direct_priority(intid: u32, cpu: usize, priority: u8);
    /// Sends the guest's SGI `intid` (group 1) to direct-delivery core `cpu`.
    fn send_direct_sgi(intid: u32, cpu: usize);
    /// The MPIDR_EL1 of physical CPU `cpu` once it has started, which a
    /// direct partition's SGI to a vCPU at home there names
    /// (`partita_core::vgic::direct`).
    fn mpidr(cpu: usize) -> Option<u64>;
    /// The SGIs a direct partition may not send, bit n for SGI n: Partita's.
    fn direct_reserved_sgis() -> u16;
    /// This direct-delivery core forgets everything its guest left in the
    /// physical GIC: its private interrupts disabled, neither pending nor
    /// active, and no active priority left on the CPU interface.
    fn reset_direct();
}

/// The virtual CPU interface of the running pCPU. List-register values
/// are in Partita's one form, the GICv3 ICH_LR<n>_EL2 layout
/// (`partita_core::vgic::lr::Lr`); an interface with another layout
/// translates in [`ListRegisters::read`] and [`ListRegisters::write`].
pub trait ListRegisters {
    /// How many list registers this CPU has (at most [`MAX_LRS`]).
    fn count() -> usize;
    fn read(n: usize) -> u64;
    fn write(n: usize, value: u64);
    /// Bit n set when list register n holds nothing.
    fn free() -> u64;
    /// Turns the interface on, asking for a maintenance interrupt when
    /// `refill` says the queue needs one.
    fn request_maintenance(refill: Refill);
    /// Saves the running vCPU's interface into `ctx` and turns it off.
    fn save(ctx: &mut VgicContext);
    /// Writes the registers `ctx` lists; the others must be free.
    fn restore(ctx: &VgicContext);
    /// Empties every register, whose reset value is UNKNOWN: once per
    /// pCPU, before its first vCPU is loaded.
    fn clear_all() {
        for n in 0..Self::count() {
            Self::write(n, 0);
        }
    }
    /// Finishes what the guest completed that the interface leaves to
    /// Partita (GICv2: the physical side of a link, see `gicv2`); the
    /// maintenance interrupt and a save call it.
    fn retire_completed() {}
}

/// A polled transmitter's registers, as the board's console UARTs share
/// them: a status register with "TX FIFO empty" and "TX FIFO full" bits and
/// a data register taking one byte per word store.
struct Polled {
    /// 0: not set up yet, nothing is written.
    base: usize,
    status: usize,
    empty: u32,
    full: u32,
    data: usize,
    /// Bytes the TX FIFO takes once it shows empty.
    depth: usize,
}

/// Writes `bytes`, waiting for room: an empty FIFO takes a run of `depth`
/// bytes with no status read between them, otherwise one byte once it is
/// not full. Reading the status for every byte cost as much as writing it,
/// in the kick stretches that write the console's ring out.
fn write_polled(uart: &Polled, bytes: &[u8]) {
    if uart.base == 0 {
        return;
    }
    let status = (uart.base + uart.status) as *const u32;
    let data = (uart.base + uart.data) as *mut u32;
    let mut rest = bytes;
    while !rest.is_empty() {
        // SAFETY: `base` is the console UART its driver was given at init,
        // mapped as device memory; reading its status has no effect.
        let flags = unsafe { core::ptr::read_volatile(status) };
        let room = if flags & uart.empty != 0 {
            uart.depth
        } else if flags & uart.full == 0 {
            1
        } else {
            continue;
        };
        let (run, more) = rest.split_at(room.min(rest.len()));
        for &byte in run {
            // SAFETY: the same UART's transmit register, which the status
            // just read shows has room for this byte.
            unsafe { core::ptr::write_volatile(data, u32::from(byte)) };
        }
        rest = more;
    }
}

/// The console Partita prints its lines on.
pub trait Console {
    /// Sets the UART's base; it must be mapped as device memory whenever
    /// the MMU is on.
    fn init(base: u64);
    /// Writes bytes, waiting for room. Does nothing before `init`.
    fn write_bytes(bytes: &[u8]);
}

/// A vCPU's virtual interface while it is off its pCPU: the list
/// registers, the virtual machine control register, the active-priority
/// registers and the interface's control register.
#[derive(Clone, Copy, Debug, Default)]
pub struct VgicContext {
    pub lrs: [u64; MAX_LRS],
    /// Bit n set when `lrs[n]` may hold something. Only those are written
    /// back: saving empties the ones it reads, and leaves the others as the
    /// interface says they were, free, so a load writes what its vCPU had
    /// and nothing else (most vCPUs have nothing listed at a switch).
    pub listed: u64,
    pub vmcr: u64,
    pub apr: [u64; 2],
    pub hcr: u64,
}

impl VgicContext {
    /// A vCPU at reset: nothing listed; the interface turns on when the
    /// vCPU is first loaded.
    pub fn reset() -> Self {
        Self::default()
    }

    pub fn save(&mut self) {
        Lrs::save(self)
    }

    pub fn restore(&self) {
        Lrs::restore(self)
    }
}

/// The counter frequency, in Hz.
pub fn counter_frequency() -> u64 {
    Board::counter_frequency()
}

/// The device frames Partita maps for itself.
pub fn own_devices(platform: &model::Platform) -> Vec<Range> {
    Board::own_devices(platform)
}

/// Where a payload too broken to name its console reports.
pub const FALLBACK_CONSOLE: u64 = Board::FALLBACK_CONSOLE;
