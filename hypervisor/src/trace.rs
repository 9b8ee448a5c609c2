//! Partita's event trace: when the configuration turns it on, one ring per
//! pCPU in boot-heap memory; `partita run` copies it out of the stopped
//! machine. When it is off, recording costs one branch.

use crate::console::log;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use partita_core::trace::{self, Event, Kind, TraceBuffer, NONE};
use spin::Once;

static TRACE: Once<TraceBuffer<'static>> = Once::new();

/// Allocates and announces the trace memory (primary CPU, at boot).
pub fn init(cpus: usize, events: u32) {
    if events == 0 {
        return;
    }
    let words: Vec<AtomicU64> = (0..trace::words(cpus, events as usize)).map(|_| AtomicU64::new(0)).collect();
    let words: &'static [AtomicU64] = Box::leak(words.into_boxed_slice());
    let hz = partita_arch::platform::counter_frequency();
    if let Some(buffer) = TraceBuffer::new(words, cpus, events as usize, hz) {
        log!(
            "trace: {cpus} ring(s) of {events} events at 0x{:x}, {} bytes",
            words.as_ptr() as usize,
            core::mem::size_of_val(words)
        );
        TRACE.call_once(|| buffer);
    }
}

/// Records an event on the running pCPU's ring. The question is in line
/// and the recording out of it: with tracing off, every switch asks it two
/// or three times, and a call with its arguments cost more than the answer.
#[inline(always)]
pub fn record(kind: Kind, partition: usize, vcpu: usize, arg: u32) {
    if enabled() {
        record_now(kind, partition, vcpu, arg);
    }
}

#[inline(never)]
fn record_now(kind: Kind, partition: usize, vcpu: usize, arg: u32) {
    record_at(partita_arch::timer::counter(), kind, partition, vcpu, arg);
}

/// Records an event stamped `time`: for an `arg` computed from that very
/// counter value.
#[inline]
pub fn record_at(time: u64, kind: Kind, partition: usize, vcpu: usize, arg: u32) {
    if let Some(buffer) = TRACE.get() {
        let event = Event { time, kind, partition: id(partition), vcpu: id(vcpu), arg };
        buffer.record(partita_arch::cpu::index(), &event);
    }
}

/// True when the configuration turned tracing on.
#[inline(always)]
pub fn enabled() -> bool {
    TRACE.get().is_some()
}

/// An event with no partition (a physical interrupt, say).
#[inline(always)]
pub fn record_cpu(kind: Kind, arg: u32) {
    record(kind, usize::from(NONE), usize::from(NONE), arg);
}

fn id(value: usize) -> u8 {
    u8::try_from(value).unwrap_or(NONE)
}

/// One pCPU's EL2 stretches, when it is watched ([`watch_el2`]): the
/// fields of [`partita_core::trace::Stretches`], 0 where none. Only its own
/// pCPU touches them, with interrupts masked.
struct El2Marks {
    /// Where its open stretch began; 0 while it is out of EL2.
    entered: AtomicU64,
    last_entered: AtomicU64,
    last_left: AtomicU64,
    previous_left: AtomicU64,
}

static EL2_MARKS: [El2Marks; partita_arch::MAX_CPUS] = [const {
    El2Marks {
        entered: AtomicU64::new(0),
        last_entered: AtomicU64::new(0),
        last_left: AtomicU64::new(0),
        previous_left: AtomicU64::new(0),
    }
}; partita_arch::MAX_CPUS];
/// Per pCPU: its EL2 stretches are traced.
static EL2_WATCHED: [AtomicBool; partita_arch::MAX_CPUS] = [const { AtomicBool::new(false) }; partita_arch::MAX_CPUS];
/// Some pCPU's are: without it, a trap pays one load and one branch at
/// each end, not the per-pCPU lookups.
static EL2_ANY: AtomicBool = AtomicBool::new(false);

/// Traces `cpu`'s EL2 stretches ([`Kind::El2`]) from now on: a pCPU that
/// runs a high-criticality vCPU, so that the host can tell Partita's share
/// of a late job's window. A no-op with tracing off.
pub fn watch_el2(cpu: usize) {
    if enabled() {
        if let Some(watched) = EL2_WATCHED.get(cpu) {
            watched.store(true, Ordering::Relaxed);
            EL2_ANY.store(true, Ordering::Relaxed);
        }
    }
}

/// This pCPU entered EL2 (a trap's handler, or a wake from WFI).
#[inline]
pub fn el2_entered() {
    if !EL2_ANY.load(Ordering::Relaxed) {
        return;
    }
    let cpu = partita_arch::cpu::index();
    if EL2_WATCHED.get(cpu).is_some_and(|w| w.load(Ordering::Relaxed)) {
        EL2_MARKS[cpu].entered.store(partita_arch::timer::counter(), Ordering::Relaxed);
    }
}

/// This pCPU leaves EL2 (into a guest, or into WFI): its stretch is traced.
#[inline]
pub fn el2_leaving() {
    if !EL2_ANY.load(Ordering::Relaxed) {
        return;
    }
    let cpu = partita_arch::cpu::index();
    let Some(marks) = EL2_MARKS.get(cpu) else { return };
    // Loads and stores, not swaps: only this pCPU writes its marks.
    let start = marks.entered.load(Ordering::Relaxed);
    if start != 0 {
        marks.entered.store(0, Ordering::Relaxed);
        let now = partita_arch::timer::counter();
        marks.previous_left.store(marks.last_left.load(Ordering::Relaxed), Ordering::Relaxed);
        marks.last_entered.store(start, Ordering::Relaxed);
        marks.last_left.store(now, Ordering::Relaxed);
        let ticks = u32::try_from(now.saturating_sub(start)).unwrap_or(u32::MAX);
        record_at(now, Kind::El2, usize::from(NONE), usize::from(NONE), ticks);
    }
}

/// On a watched pCPU, when it entered its open EL2 stretch.
pub fn el2_entry() -> Option<u64> {
    let entered = EL2_MARKS.get(partita_arch::cpu::index())?.entered.load(Ordering::Relaxed);
    (entered != 0).then_some(entered)
}

/// On a watched pCPU, how long an interrupt that became pending at
/// `since` waited at EL1 before its open EL2 stretch, with nothing of
/// Partita's in its way (at EL1 the guest cannot mask it): the gaps before
/// that stretch and before the last closed one
/// (`partita_core::trace::Stretches::el1_wait`). 0 when not watched.
pub fn el2_entry_after(since: u64) -> u64 {
    let Some(marks) = EL2_MARKS.get(partita_arch::cpu::index()) else { return 0 };
    let stretches = partita_core::trace::Stretches {
        entered: marks.entered.load(Ordering::Relaxed),
        last_entered: marks.last_entered.load(Ordering::Relaxed),
        last_left: marks.last_left.load(Ordering::Relaxed),
        previous_left: marks.previous_left.load(Ordering::Relaxed),
    };
    stretches.el1_wait(since)
}
