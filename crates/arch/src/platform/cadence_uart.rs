//! Partita's console on a Cadence UART (the ZynqMP's UART0 and UART1):
//! polled transmit, like [`super::pl011`].

use super::{Console, Polled};
use core::sync::atomic::{AtomicUsize, Ordering};

/// Control register.
const CR: usize = 0x00;
/// Channel status register.
const SR: usize = 0x2c;
/// Transmit and receive FIFO.
const FIFO: usize = 0x30;
/// CR: transmitter and receiver enabled, neither reset nor disabled. The
/// boot firmware of a real board leaves them so; QEMU's reset value does
/// not, so Partita sets them rather than relying on what came before.
const CR_TX_RX_ENABLE: u32 = 0x14;
/// SR.TXEMPTY.
const SR_TXEMPTY: u32 = 1 << 3;
/// SR.TXFULL.
const SR_TXFULL: u32 = 1 << 4;
/// The ZynqMP's UART TX FIFO.
const FIFO_DEPTH: usize = 64;

static BASE: AtomicUsize = AtomicUsize::new(0);

pub struct CadenceUart;

impl Console for CadenceUart {
    /// Sets the UART's physical base and enables its transmitter. It must
    /// be identity mapped as device memory whenever the MMU is on.
    fn init(base: u64) {
        // SAFETY: `base` is the board's Cadence UART (the configuration's
        // console, or the board's fallback), device memory; CR is its
        // control register, and enabling TX and RX changes nothing else.
        unsafe { core::ptr::write_volatile((base as usize + CR) as *mut u32, CR_TX_RX_ENABLE) };
        BASE.store(base as usize, Ordering::Relaxed);
    }

    /// Writes bytes, waiting for FIFO room. Does nothing before `init`.
    fn write_bytes(bytes: &[u8]) {
        let base = BASE.load(Ordering::Relaxed);
        let uart = Polled { base, status: SR, empty: SR_TXEMPTY, full: SR_TXFULL, data: FIFO, depth: FIFO_DEPTH };
        super::write_polled(&uart, bytes);
    }
}
