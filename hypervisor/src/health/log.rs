//! The health monitor's log (`partita_core::health::HmLog`): one for the
//! whole system, sized by the configuration, read by a system partition's
//! hypercall and checked at power-off.

use crate::partition::Partition;
use partita_arch::guest_memory;
use partita_arch::sync::Mutex;
use partita_core::config::limits::HM_LOG_ENTRIES;
use partita_core::health::{Action, HmLog, Report, RECORD_LEN};
use partita_core::hypercall::status;

/// The largest log the configuration may ask for (`hm_log_entries`).
const MAX_ENTRIES: usize = *HM_LOG_ENTRIES.end() as usize;
/// Records copied to a guest per step of a read, through a buffer on the
/// stack: a read of the whole log never needs the whole log's size there.
const RECORDS_PER_COPY: usize = 16;
/// The most records one PARTITA_HM_READ copies: the caller asks again from
/// the `from` it returns. The whole log (4,096 records, 128 KiB) in one
/// call held EL2, and the log's lock every pCPU records through, for as
/// long as 32 of the largest port messages.
const RECORDS_PER_CALL: usize = 2 * RECORDS_PER_COPY;

/// Empty (capacity 0) until `init` sizes it in place, so that it is all
/// zeros and lives in `.bss`: not 160 KiB of the image, and never a
/// temporary on a stack.
static LOG: Mutex<HmLog<MAX_ENTRIES>> = Mutex::new(HmLog::with_capacity(0));

/// Sizes the log as the configuration says (primary CPU, at boot).
pub fn init(entries: u32) {
    LOG.lock().set_capacity(entries as usize);
}

/// Records `report` with the action taken: its sequence number, `None`
/// when the action is `ignore`.
pub fn record(report: Report, action: Action) -> Option<u64> {
    LOG.lock().record(report, action)
}

/// PARTITA_HM_READ into the caller's buffer: x1 records, x2 the next
/// `from`, x3 records overwritten before anyone could read them.
pub fn read(part: &Partition, buffer: u64, size: u64, from: u64) -> Result<[u64; 3], i64> {
    let size = size.min((RECORDS_PER_CALL * RECORD_LEN) as u64);
    let pa = part.config.translate_buffer(buffer, size, true).ok_or(status::FAULT)?;
    let log = LOG.lock();
    let mut chunk = [0u8; RECORDS_PER_COPY * RECORD_LEN];
    let (mut written, mut next, mut count) = (0u64, from, 0u64);
    loop {
        let room = ((size - written) as usize).min(chunk.len());
        let page = log.read_encoded(next, &mut chunk[..room]);
        let bytes = page.count * RECORD_LEN;
        guest_memory::write(pa + written, &chunk[..bytes]);
        (written, next, count) = (written + bytes as u64, page.next, count + page.count as u64);
        if bytes < room || bytes == 0 {
            break;
        }
    }
    Ok([count, next, log.dropped()])
}

/// The log's invariants, for the state check at power-off.
pub fn check() -> Result<(), &'static str> {
    LOG.lock().check()
}
