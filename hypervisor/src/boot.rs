//! From the boot payload to running partitions.

use crate::channel::{self, Channel};
use crate::console::log;
use crate::cyclic::Plans;
use crate::partition::{self, Partition, Shared, Vcpu};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use partita_arch::{boot as image, cpu, el2, firmware, gic, heap, mmu, stage2, uart};
use partita_core::config::image::{decode, payload_len, BootTable};
use partita_core::config::model::{Platform, Range};
use partita_core::scheduler::readyq::ReadyQueue;
use partita_core::time::us_to_ticks;
use spin::{Mutex, Once};

/// QEMU virt's PL011: used only to report a payload too broken to name its
/// own console.
const FALLBACK_CONSOLE: u64 = 0x0900_0000;
/// The boot heap follows the payload: first this much, enough to decode the
/// payload; then the rest of hypervisor memory (page tables, partitions,
/// vCPUs, trace rings).
const HEAP_SIZE: u64 = 8 << 20;
/// Upper bound on a payload, so a corrupt header cannot make Partita read
/// beyond any plausible hypervisor memory.
const MAX_PAYLOAD: usize = 512 << 20;

/// Everything the CPUs share once boot is done.
pub struct System {
    pub platform: Platform,
    pub partitions: Vec<Partition>,
    pub cpus: Vec<PerCpu>,
    /// Round-robin quantum in counter ticks.
    pub quantum: u64,
    /// Cyclic plans and the one in force.
    pub plans: Plans,
    /// The payload's data section, kept for partition restarts.
    pub data: &'static [u8],
    /// Inter-partition channels, in configuration order.
    pub channels: Vec<Channel>,
}

/// The vCPUs pinned to one pCPU and which of them is on it.
pub struct PerCpu {
    pub vcpus: Vec<&'static Vcpu>,
    current: AtomicUsize,
    /// One vCPU only on a fixed-priority pCPU: no tick, and its WFI does not
    /// leave the guest. `vcpus` also lists the vCPUs that may migrate here.
    pub exclusive: bool,
    /// Runs the slots of the plan in force instead of priorities.
    pub cyclic: bool,
    /// Fixed priority: the runnable vCPUs not loaded anywhere, by priority
    /// (only this pCPU touches it).
    pub ready: Mutex<ReadyQueue<MAX_SLOTS>>,
    /// Slots whose runnability may have changed since this pCPU last looked;
    /// any pCPU sets bits, only this one clears them.
    dirty: [AtomicU64; MAX_SLOTS / 64],
    /// Per partition: the TLB generation this pCPU last invalidated for.
    pub tlb_seen: Vec<AtomicU32>,
    /// Fixed priority: the running vCPU's quantum is armed (it shares the pCPU).
    pub sharing: AtomicBool,
    /// Cyclic: the end of the current slot or idle gap (counter value).
    pub until: AtomicU64,
    /// Cyclic: the major frame it was in when it last looked, where the
    /// next look starts searching.
    pub frame_hint: AtomicU64,
    /// Cyclic: the planned start of the last slot traced, so each is traced once.
    pub last_slot_start: AtomicU64,
    /// The physical virtual-timer PPI is masked here (see `irq::mask_timer`).
    pub timer_masked: AtomicBool,
    /// Partitions whose watchdog this pCPU watches: those with one whose
    /// vCPU 0 lives here.
    pub watchdogs: Vec<usize>,
}

const NONE: usize = usize::MAX;

impl PerCpu {
    pub fn current(&self) -> Option<usize> {
        let slot = self.current.load(Ordering::Relaxed);
        (slot != NONE).then_some(slot)
    }

    /// The vCPU on this pCPU now, if any.
    pub fn current_vcpu(&self) -> Option<&'static Vcpu> {
        self.current().map(|slot| self.vcpus[slot])
    }

    pub fn set_current(&self, slot: Option<usize>) {
        self.current.store(slot.unwrap_or(NONE), Ordering::Relaxed);
    }

    /// Asks this pCPU to look at `slot` again (see [`PerCpu::take_dirty`]).
    pub fn mark(&self, slot: usize) {
        self.dirty[slot / 64].fetch_or(1 << (slot % 64), Ordering::SeqCst);
    }

    /// The slots marked since the last call, each once.
    pub fn take_dirty(&self) -> impl Iterator<Item = usize> + '_ {
        self.dirty.iter().enumerate().flat_map(|(w, word)| {
            let mut bits = word.swap(0, Ordering::SeqCst);
            core::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let bit = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    w * 64 + bit
                })
            })
        })
    }
}

/// vCPUs one pCPU may list: its own, plus those that may migrate to it.
pub const MAX_SLOTS: usize = 128;

static SYSTEM: Once<System> = Once::new();

pub fn system() -> &'static System {
    SYSTEM.get().expect("system not built")
}

/// `None` while the primary CPU is still building the system.
pub fn try_system() -> Option<&'static System> {
    SYSTEM.get()
}

/// The primary CPU: read the payload, set up EL2, build every partition,
/// start the other CPUs, then schedule.
pub fn primary() -> ! {
    let (table, data) = read_payload();
    let platform = &table.system.platform;
    uart::init(platform.console.base);
    log!(
        "Partita {} starting on {} CPUs, configuration \"{}\"",
        env!("CARGO_PKG_VERSION"),
        platform.cpus,
        table.system.name
    );
    check_model(&table);
    let hypervisor = table.system.hypervisor.memory;
    mmu::init(platform.ram, hypervisor, &[platform.console, platform.gicd, platform.gicr]);
    gic::init(platform.gicd.base, platform.gicr.base, platform.cpus as usize);
    el2::init_cpu();
    stage2::init_cpu();
    crate::trace::init(platform.cpus as usize, table.system.hypervisor.trace_events);
    crate::health::init(table.system.hypervisor.hm_log_entries);
    let system = build_system(table, data);
    log!("{} partition(s) loaded; boot heap in use: {} KiB", system.partitions.len(), heap::used() / 1024);
    let cpus = system.cpus.len();
    SYSTEM.call_once(|| system);
    crate::irq::configure_spis();
    start_plans();
    start_secondaries(cpus);
    crate::scheduler::run(0)
}

/// A secondary CPU: the shared state exists; set up this CPU and schedule.
pub fn secondary(cpu: usize) -> ! {
    mmu::enable();
    gic::init_cpu(cpu);
    el2::init_cpu();
    stage2::init_cpu();
    crate::scheduler::run(cpu)
}

fn read_payload() -> (BootTable, &'static [u8]) {
    let header = image::payload(32);
    let len = match payload_len(header) {
        Ok(len) if len <= MAX_PAYLOAD => len,
        other => fail_early(format_args!("no valid boot payload behind the image: {other:?}")),
    };
    let heap_start = (image::payload_start() + len as u64).next_multiple_of(4096);
    heap::init(heap_start, HEAP_SIZE);
    match decode(image::payload(len)) {
        Ok((table, data)) => {
            let end = Range::new(heap_start, HEAP_SIZE).end();
            let memory = table.system.hypervisor.memory;
            if end > memory.end() || image::image_start() < memory.base {
                uart::init(table.system.platform.console.base);
                panic!("image, payload and heap (up to 0x{end:x}) exceed hypervisor memory {memory:x?}");
            }
            if memory.end() > end {
                heap::extend(end, memory.end() - end);
            }
            (table, data)
        }
        Err(error) => fail_early(format_args!("boot payload rejected: {error:?}")),
    }
}

fn fail_early(message: core::fmt::Arguments) -> ! {
    uart::init(FALLBACK_CONSOLE);
    panic!("{message}")
}

/// The hypervisor runs the same validator as `partita check`, so a payload
/// built by anything else is held to the same rules.
fn check_model(table: &BootTable) {
    let issues = partita_core::config::validate::validate(&table.system);
    for issue in &issues {
        log!("configuration error: {}.{}: {}", issue.path, issue.field, issue.message);
    }
    assert!(issues.is_empty(), "invalid configuration in the boot payload");
}

fn build_system(table: BootTable, data: &'static [u8]) -> System {
    let BootTable { system, boot } = table;
    let partitions: Vec<Partition> = system
        .partitions
        .into_iter()
        .zip(boot)
        .enumerate()
        .map(|(i, (config, boot))| {
            let (windows, doorbells) = channel::membership(&system.channels, i);
            partition::build(i, config, boot, data, Shared { windows, doorbells })
        })
        .collect();
    for window in system.channels.iter().filter_map(|c| c.kind.shared_window()) {
        // Shared pages start zeroed, like partition RAM.
        if mmu::is_partition_ram(window.base, window.size) {
            partita_arch::cache::zero(window.base, window.size);
        }
    }
    let channels = channel::build(&system.channels);
    let hz = partita_arch::timer::frequency();
    let plans = Plans::new(system.plans, hz);
    let cpus = (0..system.platform.cpus as usize)
        .map(|cpu| {
            let vcpus: Vec<_> = partitions
                .iter()
                .flat_map(|p| p.vcpus.iter().copied())
                .filter(|v| v.home == cpu || v.migrate_to.contains(&cpu))
                .collect();
            assert!(vcpus.len() <= MAX_SLOTS, "pCPU {cpu} lists {} vCPUs; at most {MAX_SLOTS}", vcpus.len());
            for (slot, vcpu) in vcpus.iter().enumerate() {
                vcpu.place(cpu, slot);
            }
            let cyclic = plans.is_cyclic(cpu);
            PerCpu {
                // A pCPU that others may migrate to is shared, even while
                // empty; a budget needs WFI trapped, so idle time is not use.
                exclusive: !cyclic && vcpus.len() == 1 && vcpus[0].home == cpu && vcpus[0].budget.is_none(),
                cyclic,
                vcpus,
                current: AtomicUsize::new(NONE),
                timer_masked: AtomicBool::new(false),
                sharing: AtomicBool::new(false),
                tlb_seen: partitions.iter().map(|_| AtomicU32::new(0)).collect(),
                ready: Mutex::new(ReadyQueue::new()),
                // Everything is looked at once, at the first decision.
                dirty: [const { AtomicU64::new(u64::MAX) }; MAX_SLOTS / 64],
                until: AtomicU64::new(0),
                last_slot_start: AtomicU64::new(u64::MAX),
                frame_hint: AtomicU64::new(0),
                watchdogs: partitions
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.config.health.watchdog_us.is_some() && p.vcpus[0].home == cpu)
                    .map(|(i, _)| i)
                    .collect(),
            }
        })
        .collect();
    let quantum = us_to_ticks(system.hypervisor.quantum_us.into(), hz);
    System { platform: system.platform, partitions, cpus, quantum: quantum.max(1), plans, data, channels }
}

/// Cyclic pCPUs idle until the first major frame, which starts a little
/// after the other CPUs are called, so that all of them see its first slot.
fn start_plans() {
    const START_DELAY_US: u64 = 2_000;
    let plans = &system().plans;
    if plans.count() > 0 {
        let origin = partita_arch::timer::counter() + us_to_ticks(START_DELAY_US, partita_arch::timer::frequency());
        plans.start(origin);
        log!("{} plan(s); plan 0's first major frame starts at counter 0x{origin:x}", plans.count());
    }
}

/// Powers on the other physical CPUs through the firmware. QEMU virt numbers
/// them by Aff0; only the affinity fields are passed (QEMU 7.2 refuses a
/// target with bit 31 set).
fn start_secondaries(cpus: usize) {
    let base = gic::mpidr_of_boot_cpu() & !0xff;
    for cpu in 1..cpus {
        let mpidr = base | cpu as u64;
        if let Err(error) = firmware::cpu_on(mpidr, image::secondary_entry_address(), cpu as u64) {
            log!("CPU {cpu} (MPIDR 0x{mpidr:x}) did not start: {error:?}");
        }
    }
    cpu::isb();
}
