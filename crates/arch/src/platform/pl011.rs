//! Partita's own console: polled transmit on a PL011.
//!
//! Written here rather than through a driver crate because the hypervisor
//! needs only "wait for room, write a byte" under its own line lock, and a
//! panic must be able to print without any driver state.

use super::Console;
use core::sync::atomic::{AtomicUsize, Ordering};

const DR: usize = 0x00;
const FR: usize = 0x18;
const FR_TXFF: u32 = 1 << 5;

static BASE: AtomicUsize = AtomicUsize::new(0);

pub struct Pl011;

impl Console for Pl011 {
    /// Sets the UART's physical base. It must be identity mapped as device
    /// memory in the EL2 page tables (see [`crate::mmu`]) whenever the MMU is on.
    fn init(base: u64) {
        BASE.store(base as usize, Ordering::Relaxed);
    }

    /// Writes bytes, waiting for FIFO room. Does nothing before [`init`].
    fn write_bytes(bytes: &[u8]) {
        let base = BASE.load(Ordering::Relaxed);
        if base == 0 {
            return;
        }
        for &byte in bytes {
            // SAFETY: `base` is the PL011 given to `init`, mapped as device
            // memory; FR and DR are its flag and data registers.
            unsafe {
                while core::ptr::read_volatile((base + FR) as *const u32) & FR_TXFF != 0 {}
                core::ptr::write_volatile((base + DR) as *mut u32, u32::from(byte));
            }
        }
    }
}
