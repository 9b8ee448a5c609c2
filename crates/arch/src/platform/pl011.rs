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
        super::write_polled(BASE.load(Ordering::Relaxed), FR, FR_TXFF, DR, bytes);
    }
}
