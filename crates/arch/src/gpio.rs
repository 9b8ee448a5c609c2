//! The GPIO controller Partita drives for timed outputs, a PL061: its data
//! register masks a write by address bits 9..2, so one store changes
//! exactly the lines asked for, and pCPUs writing different lines never
//! need a lock between them.

use core::sync::atomic::{AtomicUsize, Ordering};

/// GPIODIR: a set bit makes its line an output.
const DIR: usize = 0x400;

static BASE: AtomicUsize = AtomicUsize::new(0);

/// Takes the controller at `base`, identity mapped as device memory at
/// EL2 (see [`crate::mmu`]), and makes `outputs` its output lines (primary
/// CPU, once, before any pCPU writes).
pub fn init(base: u64, outputs: u8) {
    let base = base as usize;
    // SAFETY: `base` is the controller's page, mapped as device memory;
    // GPIODIR is its direction register, read and written whole.
    unsafe {
        let dir = (base + DIR) as *mut u32;
        let was = core::ptr::read_volatile(dir);
        core::ptr::write_volatile(dir, was | u32::from(outputs));
    }
    BASE.store(base, Ordering::Release);
}

/// Waits until the counter reaches `at`, drives the lines of `pins` to the
/// matching bits of `values` and returns the counter value once the write
/// has left the core: the operation's done time. The wait is bounded by
/// the caller, which asks only for an `at` less than its lead ahead of
/// now. Returns at once, writing nothing, before [`init`].
pub fn write_at(at: u64, pins: u8, values: u8) -> u64 {
    let base = BASE.load(Ordering::Acquire);
    if base == 0 {
        return crate::timer::now();
    }
    let data = base + (usize::from(pins) << 2);
    let done: u64;
    // SAFETY: `data` is the data register's masked alias inside the
    // controller's page given to `init`, mapped as device memory; the
    // store changes only the lines in `pins`. The ISB in the loop keeps
    // each counter read from being taken early; DSB and ISB after the
    // store make the done time follow the write's completion. `now` is an
    // `out`, not a `lateout`: it is written while `at` is still read.
    unsafe {
        core::arch::asm!(
            "1: isb",
            "mrs {now}, cntpct_el0",
            "cmp {now}, {at}",
            "b.lo 1b",
            "str {value:w}, [{data}]",
            "dsb sy",
            "isb",
            "mrs {done}, cntpct_el0",
            now = out(reg) _,
            at = in(reg) at,
            value = in(reg) u32::from(values),
            data = in(reg) data,
            done = lateout(reg) done,
            options(nostack),
        );
    }
    done
}
