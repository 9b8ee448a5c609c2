//! Partita's console output: whole lines, each tagged with who wrote it, so
//! the host can split one UART stream into per-partition logs.
//!
//! `[partita] ...` is the hypervisor; `[<partition>] ...` is a partition's
//! emulated console.
//!
//! A line goes into one ring, in the order lines are written on every pCPU,
//! and leaves it for the UART in chunks of [`CHUNK`] bytes: writing a line
//! in the trap that ended it, with its formatting, kept that trap at EL2
//! for several thousand instructions with interrupts masked (`partita bench
//! response`, paths `mmio`, `health-action`), and so did writing a whole
//! line of up to 235 bytes in one kick's stretch (path `kick`). The line's
//! writer sends its pCPU the kick SGI, and the kick's stretch writes the
//! oldest chunk; a pCPU that sees more waiting kicks itself again, so each
//! chunk goes out in a stretch of its own once any more urgent interrupt
//! has been taken. A run stopped between two stretches may end halfway
//! through a line: the host marks such a last line as cut short, and the
//! power-off's [`flush`] writes everything, so no byte is lost.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, Ordering};
use partita_arch::platform::{Console, Gic, InterruptController, Uart};
use partita_arch::sync::Mutex;
use partita_arch::{cpu, MAX_CPUS};

/// Room for bursts (the boot's lines, a restart's); a line that does not
/// fit pushes the oldest bytes out to the UART at once, so none is lost.
const RING: usize = 16 * 1024;
/// Bytes one kick's stretch writes out: about five instructions a byte
/// with QEMU's UART, so the stretch stays a few hundred instructions over
/// the kick's own handling; two FIFOs' worth on a PL011. A kick taken
/// where the loop has just done a step of other work (a restart's last
/// step, which writes a line) writes its chunk in that step's stretch: at
/// 64 bytes that stretch reached 1,686 instructions on the shared pCPU of
/// `partita bench response`, at 32 it is 1,542.
const CHUNK: usize = 32;
const _: () = assert!(RING.is_power_of_two());

struct Ring {
    bytes: [u8; RING],
    head: usize,
    len: usize,
}

impl Ring {
    /// Appends `bytes`: where they fit before the ring's end, in one copy
    /// inline (`partita_arch::bytes`, eight bytes a move); anything else in
    /// [`Ring::push_long`]. A byte at a time, with the wrap of each, an
    /// `hm:` line's dozen pieces cost about 1,000 instructions; a library
    /// copy costs some seventy however short.
    #[inline(always)]
    fn push(&mut self, bytes: &[u8]) {
        let tail = (self.head + self.len) % RING;
        let Some(room) = self.bytes.get_mut(tail..tail + bytes.len()) else { return self.push_long(bytes) };
        if self.len + bytes.len() > RING {
            return self.push_long(bytes);
        }
        partita_arch::bytes::copy(room, bytes);
        self.len += bytes.len();
    }

    /// Appends `bytes`, first writing out the oldest bytes when there is no
    /// room, in at most two copies per ring's worth.
    #[inline(never)]
    fn push_long(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(RING) {
            if self.len + chunk.len() > RING {
                self.write_out(self.len + chunk.len() - RING);
            }
            let tail = (self.head + self.len) % RING;
            let first = chunk.len().min(RING - tail);
            partita_arch::bytes::copy(&mut self.bytes[tail..tail + first], &chunk[..first]);
            partita_arch::bytes::copy(&mut self.bytes[..chunk.len() - first], &chunk[first..]);
            self.len += chunk.len();
        }
    }

    /// Writes up to `max` of the oldest bytes to the UART.
    fn write_out(&mut self, max: usize) {
        let mut left = max.min(self.len);
        while left > 0 {
            let run = left.min(RING - self.head);
            Uart::write_bytes(&self.bytes[self.head..self.head + run]);
            self.head = (self.head + run) % RING;
            self.len -= run;
            left -= run;
        }
    }
}

impl Write for Ring {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push(s.as_bytes());
        Ok(())
    }
}

static OUT: Mutex<Ring> = Mutex::new(Ring { bytes: [0; RING], head: 0, len: 0 });
/// Per pCPU: it schedules, so its GIC interface takes its own kick.
static KICKABLE: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];
/// Something waits in the ring: a hint, read without the lock.
static WAITING: AtomicBool = AtomicBool::new(false);

/// This pCPU schedules from now on: it can send itself a kick to write
/// out the rest of a line.
pub fn start_draining() {
    KICKABLE[cpu::index()].store(true, Ordering::Release);
}

/// Writes one tagged line.
pub fn line(tag: &str, text: fmt::Arguments) {
    let mut out = OUT.lock();
    let _ = writeln!(out, "[{tag}] {text}");
    write_some(out);
}

/// Writes one line of a partition's console output (already sanitised).
pub fn partition_line(name: &str, bytes: &[u8]) {
    let mut out = OUT.lock();
    for piece in [b"[", name.as_bytes(), b"] ", bytes, b"\n"] {
        out.push(piece);
    }
    write_some(out);
}

/// A line put together piece by piece straight into the ring, for the
/// lines a guest can make Partita write as often as it likes (the health
/// monitor's, a restart's): through `core::fmt` one of those took about
/// 3,000 instructions with interrupts masked.
pub struct Pieces<'a> {
    out: partita_arch::sync::MutexGuard<'a, Ring>,
}

/// Starts a line of Partita's own (`[partita] `); [`Pieces::end`] writes
/// it.
pub fn pieces() -> Pieces<'static> {
    let mut out = OUT.lock();
    out.push(b"[partita] ");
    Pieces { out }
}

impl Pieces<'_> {
    pub fn text(mut self, text: &str) -> Self {
        self.out.push(text.as_bytes());
        self
    }

    pub fn decimal(mut self, value: u64) -> Self {
        let mut digits = [0u8; 20];
        self.out.push(partita_core::text::decimal(value, &mut digits));
        self
    }

    /// `0x` and the lowercase hexadecimal digits.
    pub fn hex(mut self, value: u64) -> Self {
        let mut text = [0u8; 18];
        self.out.push(partita_core::text::hex(value, &mut text));
        self
    }

    pub fn end(mut self) {
        self.out.push(b"\n");
        write_some(self.out);
    }
}

/// Leaves the line for [`drain`], in a stretch of its own, where this pCPU
/// can be kicked; at boot, before it can, writes everything at once.
fn write_some(out: partita_arch::sync::MutexGuard<'_, Ring>) {
    if KICKABLE[cpu::index()].load(Ordering::Acquire) {
        kick_for_more(out);
    } else {
        write_all(out);
    }
}

fn write_all(mut out: partita_arch::sync::MutexGuard<'_, Ring>) {
    let all = out.len;
    out.write_out(all);
    WAITING.store(false, Ordering::Release);
}

/// Kicks this pCPU if bytes wait: the kick's stretch writes the next chunk.
fn kick_for_more(out: partita_arch::sync::MutexGuard<'_, Ring>) {
    let more = out.len > 0;
    WAITING.store(more, Ordering::Release);
    drop(out);
    if more {
        Gic::kick(cpu::index());
    }
}

/// Writes the next chunk of what waits, if anything: each kick this pCPU
/// takes calls this. When another pCPU holds the ring it is left to it:
/// whoever holds it kicks itself for what remains once it lets go, so
/// nothing is stranded, and a kick here never waits on a line being
/// written elsewhere (under QEMU's `-icount` that wait was a whole turn of
/// every other vCPU, a millisecond, on the RTOS's pCPU).
pub fn drain() {
    if WAITING.load(Ordering::Acquire) {
        if let Some(mut out) = OUT.try_lock() {
            out.write_out(CHUNK);
            kick_for_more(out);
        }
    }
}

/// Writes everything that waits: before the machine powers off.
pub fn flush() {
    write_all(OUT.lock());
}

/// Writes a line even if another CPU died holding the lock (panics only).
pub fn emergency(text: fmt::Arguments) {
    // A panicking CPU must still be heard even if another CPU died holding
    // the lock, so the lock is only tried for a bounded number of spins;
    // what waits goes out first, to keep the order.
    for _ in 0..1_000_000 {
        if let Some(mut out) = OUT.try_lock() {
            let all = out.len;
            out.write_out(all);
            let _ = writeln!(Raw, "[partita] {text}");
            return;
        }
    }
    let _ = writeln!(Raw, "[partita] {text}");
}

/// The UART itself, for [`emergency`].
struct Raw;

impl Write for Raw {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        Uart::write_bytes(s.as_bytes());
        Ok(())
    }
}

/// `log!("...")`: a line from the hypervisor itself.
macro_rules! log {
    ($($arg:tt)*) => { $crate::console::line("partita", format_args!($($arg)*)) };
}
pub(crate) use log;
