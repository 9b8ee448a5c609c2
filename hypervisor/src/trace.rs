//! Partita's event trace: when the configuration turns it on, one ring per
//! pCPU in boot-heap memory; `partita run` copies it out of the stopped
//! machine. When it is off, recording costs one branch.

use crate::console::log;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::AtomicU64;
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
