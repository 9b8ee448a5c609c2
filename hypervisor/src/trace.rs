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

/// Records an event on the running pCPU's ring.
#[inline]
pub fn record(kind: Kind, partition: usize, vcpu: usize, arg: u32) {
    if enabled() {
        record_at(partita_arch::timer::counter(), kind, partition, vcpu, arg);
    }
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
#[inline]
pub fn enabled() -> bool {
    TRACE.get().is_some()
}

/// An event with no partition (a physical interrupt, say).
#[inline]
pub fn record_cpu(kind: Kind, arg: u32) {
    record(kind, usize::from(NONE), usize::from(NONE), arg);
}

fn id(value: usize) -> u8 {
    u8::try_from(value).unwrap_or(NONE)
}

/// Per pCPU: where its open EL2 stretch began, when it is watched
/// ([`watch_el2`]); 0 otherwise. Only its own pCPU touches an entry, with
/// interrupts masked.
static EL2_SINCE: [AtomicU64; partita_arch::MAX_CPUS] = [const { AtomicU64::new(0) }; partita_arch::MAX_CPUS];
/// Per pCPU: where its last closed EL2 stretch ended, when it is watched.
static EL2_LEFT: [AtomicU64; partita_arch::MAX_CPUS] = [const { AtomicU64::new(0) }; partita_arch::MAX_CPUS];
/// Per pCPU: where its last closed EL2 stretch began, and where the one
/// before it ended ([`partita_core::trace::Stretches`]).
static EL2_LAST_SINCE: [AtomicU64; partita_arch::MAX_CPUS] = [const { AtomicU64::new(0) }; partita_arch::MAX_CPUS];
static EL2_PREVIOUS_LEFT: [AtomicU64; partita_arch::MAX_CPUS] = [const { AtomicU64::new(0) }; partita_arch::MAX_CPUS];
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
        EL2_SINCE[cpu].store(partita_arch::timer::counter(), Ordering::Relaxed);
    }
}

/// This pCPU leaves EL2 (into a guest, or into WFI): its stretch is traced.
#[inline]
pub fn el2_leaving() {
    if !EL2_ANY.load(Ordering::Relaxed) {
        return;
    }
    let cpu = partita_arch::cpu::index();
    let Some(since) = EL2_SINCE.get(cpu) else { return };
    // A load and a store, not a swap: only this pCPU writes its entry.
    let start = since.load(Ordering::Relaxed);
    if start != 0 {
        since.store(0, Ordering::Relaxed);
        let now = partita_arch::timer::counter();
        EL2_PREVIOUS_LEFT[cpu].store(EL2_LEFT[cpu].load(Ordering::Relaxed), Ordering::Relaxed);
        EL2_LAST_SINCE[cpu].store(start, Ordering::Relaxed);
        EL2_LEFT[cpu].store(now, Ordering::Relaxed);
        let ticks = u32::try_from(now.saturating_sub(start)).unwrap_or(u32::MAX);
        record_at(now, Kind::El2, usize::from(NONE), usize::from(NONE), ticks);
    }
}

/// On a watched pCPU, when it entered its open EL2 stretch.
pub fn el2_entry() -> Option<u64> {
    let entered = EL2_SINCE.get(partita_arch::cpu::index())?.load(Ordering::Relaxed);
    (entered != 0).then_some(entered)
}

/// On a watched pCPU, how long an interrupt that became pending at
/// `since` waited at EL1 before its open EL2 stretch, with nothing of
/// Partita's in its way (at EL1 the guest cannot mask it): the gaps before
/// that stretch and before the last closed one
/// (`partita_core::trace::Stretches::el1_wait`). 0 when not watched.
pub fn el2_entry_after(since: u64) -> u64 {
    let cpu = partita_arch::cpu::index();
    if cpu >= partita_arch::MAX_CPUS {
        return 0;
    }
    let stretches = partita_core::trace::Stretches {
        entered: EL2_SINCE[cpu].load(Ordering::Relaxed),
        last_entered: EL2_LAST_SINCE[cpu].load(Ordering::Relaxed),
        last_left: EL2_LEFT[cpu].load(Ordering::Relaxed),
        previous_left: EL2_PREVIOUS_LEFT[cpu].load(Ordering::Relaxed),
    };
    stretches.el1_wait(since)
}
