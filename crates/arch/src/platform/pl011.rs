//! Partita's own console: polled transmit on a PL011.
//!
//! Written here rather than through a driver crate because the hypervisor
//! needs only "wait for room, write a byte" under its own line lock, and a
//! panic must be able to print without any driver state.

use super::{Console, Polled};
use core::sync::atomic::{AtomicUsize, Ordering};

const DR: usize = 0x00;
const FR: usize = 0x18;
const LCR_H: usize = 0x2c;
const CR: usize = 0x30;
const FR_BUSY: u32 = 1 << 3;
const FR_TXFF: u32 = 1 << 5;
const FR_TXFE: u32 = 1 << 7;
const LCR_H_FEN: u32 = 1 << 4;
const CR_UARTEN: u32 = 1 << 0;
/// The TX FIFO of every PL011 revision holds at least 16 bytes (r1p5, 32).
const FIFO_DEPTH: usize = 16;

static BASE: AtomicUsize = AtomicUsize::new(0);

pub struct Pl011;

impl Console for Pl011 {
    /// Sets the UART's physical base and turns its FIFOs on. It must be
    /// identity mapped as device memory in the EL2 page tables (see
    /// [`crate::mmu`]) whenever the MMU is on.
    fn init(base: u64) {
        let reg = |offset: usize| (base as usize + offset) as *mut u32;
        // SAFETY: `base` is the board's PL011 (the configuration's console,
        // or the board's fallback), device memory. With its FIFOs off
        // (QEMU's reset value; firmware usually turns them on) TXFE means
        // one byte of room, not a FIFO's: Partita writes a FIFO's worth per
        // status read. LCR_H may change only while the UART is disabled
        // and idle, so it waits out a transmission, disables, sets FEN and
        // restores CR; the line settings are left as they were.
        unsafe {
            let lcr = core::ptr::read_volatile(reg(LCR_H));
            if lcr & LCR_H_FEN == 0 {
                let cr = core::ptr::read_volatile(reg(CR));
                while core::ptr::read_volatile(reg(FR)) & FR_BUSY != 0 {}
                core::ptr::write_volatile(reg(CR), cr & !CR_UARTEN);
                core::ptr::write_volatile(reg(LCR_H), lcr | LCR_H_FEN);
                core::ptr::write_volatile(reg(CR), cr);
            }
        }
        BASE.store(base as usize, Ordering::Relaxed);
    }

    /// Writes bytes, waiting for FIFO room. Does nothing before [`init`].
    fn write_bytes(bytes: &[u8]) {
        let base = BASE.load(Ordering::Relaxed);
        let uart = Polled { base, status: FR, empty: FR_TXFE, full: FR_TXFF, data: DR, depth: FIFO_DEPTH };
        super::write_polled(&uart, bytes);
    }
}
