//! Partita's console output: whole lines, each tagged with who wrote it, so
//! the host can split one UART stream into per-partition logs.
//!
//! `[partita] ...` is the hypervisor; `[<partition>] ...` is a partition's
//! emulated console.

use core::fmt::{self, Write};
use partita_arch::platform::{Console, Uart};
use partita_arch::sync::Mutex;

/// Serialises lines from all CPUs so they never interleave.
static LINE_LOCK: Mutex<()> = Mutex::new(());

/// The board's UART as a `fmt::Write` sink.
struct Line;

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        Uart::write_bytes(s.as_bytes());
        Ok(())
    }
}

/// Writes one tagged line.
pub fn line(tag: &str, text: fmt::Arguments) {
    let _guard = LINE_LOCK.lock();
    let _ = writeln!(Line, "[{tag}] {text}");
}

/// Writes one line of a partition's console output (already sanitised).
pub fn partition_line(name: &str, bytes: &[u8]) {
    let _guard = LINE_LOCK.lock();
    let _ = write!(Line, "[{name}] ");
    Uart::write_bytes(bytes);
    Uart::write_bytes(b"\n");
}

/// Writes a line even if another CPU died holding the lock (panics only).
pub fn emergency(text: fmt::Arguments) {
    // A panicking CPU must still be heard even if another CPU died holding
    // the lock, so the lock is only tried for a bounded number of spins.
    for _ in 0..1_000_000 {
        if let Some(_guard) = LINE_LOCK.try_lock() {
            let _ = writeln!(Line, "[partita] {text}");
            return;
        }
    }
    let _ = writeln!(Line, "[partita] {text}");
}

/// `log!("...")`: a line from the hypervisor itself.
macro_rules! log {
    ($($arg:tt)*) => { $crate::console::line("partita", format_args!($($arg)*)) };
}
pub(crate) use log;
