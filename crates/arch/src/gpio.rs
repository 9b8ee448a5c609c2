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

/// A timed output as it was done: when, and how the counter passed its
/// time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// The counter once the write had left the core: the operation's done
    /// time.
    pub done: u64,
    /// The counter's step across the asked time and the write: from the
    /// last value read before it (or `since`, when none was) to `done`. A
    /// core that polls, stores and reads again steps a tick or less (a
    /// handful of instructions); more is time this core did not execute
    /// (the host's, or another vCPU's turn under QEMU's `-icount`, which
    /// can end at the store itself, a device access), measured rather than
    /// inferred.
    pub step: u64,
    /// The counter's step across the write alone: from the read that
    /// found the asked time come to `done`. A tick or less on a core that
    /// executes; for an output that began late, the one part of its wait
    /// `step` does not already cover.
    pub write_step: u64,
}

/// Waits until the counter reaches `at`, drives the lines of `pins` to the
/// matching bits of `values` and returns when that was done and how the
/// counter stepped across `at` and the write ([`Written`]); `since` is a counter value
/// read before the call. The wait is bounded by the caller, which asks
/// only for an `at` less than its lead ahead of now. Returns at once,
/// writing nothing, before [`init`].
pub fn write_at(at: u64, pins: u8, values: u8, since: u64) -> Written {
    let base = BASE.load(Ordering::Acquire);
    if base == 0 {
        return Written { done: crate::timer::now(), step: 0, write_step: 0 };
    }
    let data = base + (usize::from(pins) << 2);
    let (done, before, passed): (u64, u64, u64);
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
            "b.hs 2f",
            "mov {before}, {now}",
            "b 1b",
            "2: str {value:w}, [{data}]",
            "dsb sy",
            "isb",
            "mrs {done}, cntpct_el0",
            now = out(reg) passed,
            before = inout(reg) since => before,
            at = in(reg) at,
            value = in(reg) u32::from(values),
            data = in(reg) data,
            done = lateout(reg) done,
            options(nostack),
        );
    }
    Written { done, step: done.saturating_sub(before), write_step: done.saturating_sub(passed) }
}
