//! The health monitor (`partita_core::hm`): every fault and illegal call a
//! partition makes becomes an event, its partition's policy (from the
//! configuration's `health`) picks the action, and the event goes into the
//! bounded log. Each logged event is also printed as an `hm:` line, which
//! `partita run` collects into `out/<config>/hm.log`.

use crate::console::log;
use crate::partition::{Partition, Vcpu};
use crate::trace;
use partita_core::hm::{Action, Event, HmLog, Report};
use partita_core::trace::Kind;
use spin::Mutex;

/// The largest log the configuration may ask for (`hm_log_entries`). It
/// lives in `.bss`, so building it never needs a stack-sized temporary.
const MAX_ENTRIES: usize = 4096;

static LOG: Mutex<HmLog<MAX_ENTRIES>> = Mutex::new(HmLog::new());

/// Sizes the log as the configuration says (primary CPU, at boot).
pub fn init(entries: u32) {
    LOG.lock().set_capacity(entries as usize);
}

/// Reports `event` of `vcpu` (with a fault address, syndrome or function
/// ID as `detail`) and returns what its partition's policy says to do.
pub fn raise(part: &Partition, vcpu: &Vcpu, event: Event, detail: u64) -> Action {
    let action = part.hm.lock().decide(event);
    let report = Report {
        time: partita_arch::timer::counter(),
        partition: u8::try_from(vcpu.partition).unwrap_or(u8::MAX),
        vcpu: u8::try_from(vcpu.index).unwrap_or(u8::MAX),
        event,
        detail,
    };
    if let Some(seq) = LOG.lock().record(report, action) {
        log!("hm: {seq} partition {} vcpu {} {:?} detail 0x{detail:x} action {:?}", part.name(), vcpu.index, event, action);
    }
    trace::record(Kind::Health, vcpu.partition, vcpu.index, event.kind() as u32);
    action
}
