//! Every numeric limit of a configuration, in one place.
//!
//! The validator checks a configuration against them, the hypervisor and
//! the architecture crate size their static tables by them, and
//! `docs/configuration.md` states them (a test below keeps its numbers in
//! step). A limit changed here therefore changes for all of them at once.
//! Ranges are inclusive, as the docs write them ("1 to 8").

use core::ops::RangeInclusive;

// The platform and Partita itself.

/// Physical CPUs Partita can bring up: the architecture crate reserves an
/// EL2 stack and an affinity entry for each, up to this many.
pub const MAX_PCPUS: u32 = 8;
/// `platform.cpus`.
pub const PCPUS: RangeInclusive<u32> = 1..=MAX_PCPUS;
/// Stage-2 and EL2 tables map 4 KiB pages, so every boundary sits on one.
pub const PAGE_SIZE: u64 = 0x1000;
/// The emulated PL011 of each partition occupies one page.
pub const CONSOLE_SIZE: u64 = PAGE_SIZE;
/// `hypervisor.quantum_us`: shorter slices would spend the pCPU on
/// switching, longer ones make round robin useless.
pub const QUANTUM_US: RangeInclusive<u32> = 100..=1_000_000;
/// Share of slot time that partition switches may take before `partita
/// check` warns, in basis points: above 0, at most everything.
pub const OVERHEAD_LIMIT_BP: RangeInclusive<u32> = 1..=10_000;
/// Entries of the health-monitor log (`hypervisor.hm_log_entries`), which
/// lives in hypervisor memory for the whole run.
pub const HM_LOG_ENTRIES: RangeInclusive<u32> = 16..=4096;
/// Slots of one pCPU's trace ring when tracing is on (0 means off).
pub const TRACE_EVENTS: RangeInclusive<u32> = 64..=1_048_576;
/// The trace rings come out of Partita's own memory, which also holds its
/// code, tables and heap, so they may take at most this share of it.
pub const TRACE_MEMORY_DIVISOR: u64 = 4;

// Partitions.

/// Partitions of one system.
pub const MAX_PARTITIONS: usize = 16;
/// vCPUs of one partition, and so also its `migrate` entries (one per vCPU).
pub const MAX_VCPUS_PER_PARTITION: usize = 8;
/// pCPUs one `migrate` entry may list: each of them once.
pub const MAX_MIGRATION_TARGETS: usize = MAX_PCPUS as usize;
/// vCPUs one pCPU may list, the hypervisor's per-pCPU table: those pinned
/// to it plus those that may migrate to it. A multiple of 64, since the
/// hypervisor keeps one bit per entry in 64-bit words.
///
/// The validator needs no rule of its own for it: a pCPU lists each vCPU
/// at most once, and the counts bound the vCPUs of the whole system (the
/// assertion below).
pub const MAX_VCPUS_PER_PCPU: usize = 128;
const _: () = assert!(MAX_PARTITIONS * MAX_VCPUS_PER_PARTITION <= MAX_VCPUS_PER_PCPU);
const _: () = assert!(MAX_VCPUS_PER_PCPU.is_multiple_of(64));
/// `[[partition.memory]]` regions of one partition.
pub const MAX_MEMORY_REGIONS: usize = 8;
/// `[[partition.image]]` entries of one partition (checked by the host
/// tool, which reads the image files).
pub const MAX_IMAGES: usize = 4;
/// `[[partition.device]]` entries of one partition.
pub const MAX_DEVICES: usize = 8;
/// Characters of a partition, device, plan or channel name.
pub const NAME_MAX_LEN: usize = 31;
/// Shared peripheral interrupts: the only INTIDs that can be routed to one
/// partition (SGIs and PPIs are per-CPU and belong to the hypervisor).
pub const SPI: RangeInclusive<u32> = 32..=1019;
/// Every partition's emulated PL011 raises this INTID (it is also the
/// physical interrupt of Partita's own UART on QEMU `virt`), so no device
/// may pass it through and no doorbell may use it.
pub const CONSOLE_INTID: u32 = 33;
/// A watchdog shorter than 1 ms could not be kicked by a guest that is
/// scheduled at all; one longer than a minute detects nothing in time.
pub const WATCHDOG_US: RangeInclusive<u64> = 1_000..=60_000_000;

// Plans.

/// `[[plan]]` entries of one system.
pub const MAX_PLANS: usize = 8;
/// A plan schedules each pCPU at most once.
pub const MAX_CYCLIC_CORES: usize = MAX_PCPUS as usize;
/// Slots of one core in one plan. The hypervisor scans them at every slot
/// boundary, so their number bounds that work.
pub const MAX_PLAN_SLOTS: usize = 64;

// Channels.

/// `[[channel]]` entries of one system.
pub const MAX_CHANNELS: usize = 64;
/// Bytes of one sampling or queuing message: the hypervisor copies each
/// message through a buffer of its own, so it bounds the copy.
pub const MAX_MESSAGE: RangeInclusive<u32> = 1..=4096;
/// Messages a queuing channel holds.
pub const QUEUE_DEPTH: RangeInclusive<u32> = 1..=1024;
/// A queuing channel's messages (`max_message` x `depth`) live in memory
/// the hypervisor reserves for the channel, so their total is capped.
pub const MAX_QUEUE_BYTES: u64 = 1 << 20;

// The fabric.

/// `[[fabric.prr]]` entries: the PRR monitor keeps the PRRs that can host
/// an accelerator as one bit each of a 32-bit mask.
pub const MAX_PRRS: usize = 32;
const _: () = assert!(MAX_PRRS == crate::fabric::monitor::MAX_PRRS);
/// `[[fabric.accelerator]]` entries: the virtual device manager's
/// compatibility table has a row for each.
pub const MAX_ACCELERATORS: usize = 32;
const _: () = assert!(MAX_ACCELERATORS == crate::fabric::manager::MAX_ACCELERATORS);
/// Entries of a partition's `accelerators`, its virtual devices: each
/// takes an interface page, a saved context and three virtual SPIs.
pub const MAX_VIRTUAL_DEVICES: usize = 8;
/// `fabric.hold`: shorter than an allocation's own path (Ker-ONE measured
/// 3 to 10 us) it would expire before the client could start; longer than
/// a second, a client that never starts keeps the PRR from everyone.
/// Pending timed outputs of one partition.
pub const TIMED_IO_DEPTH: RangeInclusive<u32> = 1..=64;

/// How far ahead a timed output may be asked for, in microseconds.
pub const TIMED_IO_HORIZON_US: RangeInclusive<u64> = 1..=60_000_000;

/// How early Partita's timer fires before a timed output, in microseconds.
pub const TIMED_IO_LEAD_US: RangeInclusive<u64> = 1..=10_000;

pub const FABRIC_HOLD_US: RangeInclusive<u64> = 10..=1_000_000;
/// `fabric.turn`: shorter than 10 us, the emulation's own timer interrupts
/// would take most of QEMU's time; longer than 10 ms, a request under
/// `-icount`, which reaches the fabric's pCPU only in its turn, could wait
/// longer than a whole job.
pub const FABRIC_TURN_US: RangeInclusive<u64> = 10..=10_000;
/// An accelerator's `frame`, in nanoseconds: a frame longer than a second
/// would make every preemption wait that long.
pub const ACCELERATOR_FRAME_NS: RangeInclusive<u64> = 1..=1_000_000_000;

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::String;
    use alloc::vec;
    use alloc::vec::Vec;

    const DOCS: &str = include_str!("../../../../docs/configuration.md");

    /// The docs' spelling: digits in groups of three from five digits on.
    fn number(value: impl Into<u64>) -> String {
        let digits = format!("{}", value.into());
        if digits.len() < 5 {
            return digits;
        }
        let mut grouped = String::new();
        for (i, digit) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(' ');
            }
            grouped.push(digit);
        }
        grouped
    }

    fn span<T: Copy + Into<u64>>(range: &RangeInclusive<T>) -> String {
        format!("{} to {}", number(*range.start()), number(*range.end()))
    }

    #[test]
    fn the_docs_state_the_same_limits() {
        let n = |value: usize| number(value as u64);
        let expected = vec![
            format!("Physical CPUs Partita brings up, {}.", span(&PCPUS)),
            format!("`cpus` {}; console", span(&PCPUS)),
            format!("multiple of {} KiB", PAGE_SIZE / 1024),
            format!("emulated PL011 ({} KiB)", CONSOLE_SIZE / 1024),
            format!("share a pCPU that no [plan](#plan) runs cyclically, {}.", span(&QUANTUM_US)),
            format!("`quantum_us` {};", span(&QUANTUM_US)),
            format!("More than 0, at most {}.", OVERHEAD_LIMIT_BP.end() / 100),
            format!("for a system partition to read, {}.", span(&HM_LOG_ENTRIES)),
            format!("`hm_log_entries` {}.", span(&HM_LOG_ENTRIES)),
            format!("Slots of each pCPU's ring, {}.", span(&TRACE_EVENTS)),
            format!("`events_per_cpu` {},", span(&TRACE_EVENTS)),
            format!("A system has 1 to {} partitions.", n(MAX_PARTITIONS)),
            format!(
                "{} partitions; per partition 1 to {} vCPUs, 1 to {} memory regions, 1 to {} images, 0 to {} devices; \
                 0 to {} plans, per plan 0 to {} cores, per core 0 to {} slots; 0 to {} channels.",
                format!("1 to {}", n(MAX_PARTITIONS)),
                n(MAX_VCPUS_PER_PARTITION),
                n(MAX_MEMORY_REGIONS),
                n(MAX_IMAGES),
                n(MAX_DEVICES),
                n(MAX_PLANS),
                n(MAX_CYCLIC_CORES),
                n(MAX_PLAN_SLOTS),
                n(MAX_CHANNELS)
            ),
            format!("1 to {} entries, each below `platform.cpus`", n(MAX_VCPUS_PER_PARTITION)),
            format!("`to` lists 1 to {} pCPUs", n(MAX_MIGRATION_TARGETS)),
            format!("1 to {} `[[partition.memory]]` regions.", n(MAX_MEMORY_REGIONS)),
            format!("with `kernel` and `initrd`, 1 to {} images in all.", n(MAX_IMAGES)),
            format!("0 to {} `[[partition.device]]` entries.", n(MAX_DEVICES)),
            format!("1 to {} characters.", n(NAME_MAX_LEN)),
            format!("1 to {} characters from", n(NAME_MAX_LEN)),
            format!("SPIs only ({}), not {CONSOLE_INTID}", span(&SPI)),
            format!("`intid` is an SPI ({}) other than {CONSOLE_INTID}", span(&SPI)),
            format!("`watchdog` {} ms to {} s", WATCHDOG_US.start() / 1_000, WATCHDOG_US.end() / 1_000_000),
            format!("A system declares 0 to {} plans.", n(MAX_PLANS)),
            format!("0 to {} `[[plan.core]]` entries", n(MAX_CYCLIC_CORES)),
            format!("0 to {} `[[plan.core.slot]]` entries", n(MAX_PLAN_SLOTS)),
            format!("A system has 0 to {}\nchannels.", n(MAX_CHANNELS)),
            format!("Largest message in bytes, {}.", span(&MAX_MESSAGE)),
            format!("`max_message` {}.", span(&MAX_MESSAGE)),
            format!("Messages the queue holds, {}.", span(&QUEUE_DEPTH)),
            format!("`depth` {}, `max_message` × `depth` at most {} MiB", span(&QUEUE_DEPTH), MAX_QUEUE_BYTES >> 20),
            format!("`max_message` × `depth` must be at most {} MiB", MAX_QUEUE_BYTES >> 20),
            format!("0 to {} `[[fabric.accelerator]]` entries.", n(MAX_ACCELERATORS)),
            format!("0 to {} `[[fabric.prr]]` entries.", n(MAX_PRRS)),
            format!(
                "0 to {} PRRs, 0 to {} accelerators; per partition 0 to {} virtual devices.",
                n(MAX_PRRS),
                n(MAX_ACCELERATORS),
                n(MAX_VIRTUAL_DEVICES)
            ),
            format!("0 to {} [virtual devices](#virtual-devices)", n(MAX_VIRTUAL_DEVICES)),
            format!(
                "before it becomes Idle again, {} us to {} s.",
                FABRIC_HOLD_US.start(),
                FABRIC_HOLD_US.end() / 1_000_000
            ),
            format!("`hold` {} us to {} s;", FABRIC_HOLD_US.start(), FABRIC_HOLD_US.end() / 1_000_000),
            format!("{} us to {} ms.", FABRIC_TURN_US.start(), FABRIC_TURN_US.end() / 1_000),
            format!(
                "Time to process one frame, {} ns to {} s.",
                ACCELERATOR_FRAME_NS.start(),
                ACCELERATOR_FRAME_NS.end() / 1_000_000_000
            ),
            format!("`frame` {} ns to {} s", ACCELERATOR_FRAME_NS.start(), ACCELERATOR_FRAME_NS.end() / 1_000_000_000),
            format!("Each {} but not {CONSOLE_INTID}, and not one of the partition's passthrough", span(&SPI)),
        ];
        let missing: Vec<String> = expected.into_iter().filter(|text| !DOCS.contains(text.as_str())).collect();
        assert!(missing.is_empty(), "docs/configuration.md does not say {missing:#?}");
    }
}
