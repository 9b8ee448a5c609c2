//! From the boot payload to running partitions.
//!
//! The boot steps are `#[inline(never)]`: each runs once (or once per
//! pCPU), and inlined into `primary` they made the image larger.

use crate::channel;
use crate::console::log;
use crate::fabric::Fabric;
use crate::partition::{self, lifecycle, Dirty, Partition, Shared, Watcher};
use crate::scheduler::cyclic::Plans;
use crate::state::{self, PerCpu, Policy, System};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::AtomicU32;
use partita_arch::platform::{self, Console, Gic, InterruptController, Uart};
use partita_arch::{boot as image, cpu, el2, firmware, heap, mmu, stage2};
use partita_core::config::image::{decode_head, head_len, BootTable, Seal};
use partita_core::config::limits::{MAX_VCPUS_PER_PCPU, PAGE_SIZE};
use partita_core::config::model::{Delivery, Range};
use partita_core::time::us_to_ticks;

/// The boot heap follows the payload's head: first this much, enough to
/// decode it; then the rest of hypervisor memory (page tables, partitions,
/// vCPUs, trace rings).
const HEAP_SIZE: u64 = 8 << 20;
/// Upper bound on a payload's head, so a corrupt header cannot make Partita
/// read beyond any plausible hypervisor memory.
const MAX_HEAD: usize = 64 << 20;

/// The primary CPU: read the payload, set up EL2, build every partition,
/// start the other CPUs, then schedule.
pub fn primary() -> ! {
    let (table, seal) = read_head();
    let platform = &table.system.platform;
    Uart::init(platform.console.base);
    log!(
        "Partita {} starting on {} CPUs, configuration \"{}\"",
        env!("CARGO_PKG_VERSION"),
        platform.cpus,
        table.system.name
    );
    let data = read_image_store(&table, seal);
    let hypervisor = table.system.hypervisor.memory;
    // The fabric's memory holds the interface pages guests share uncached.
    let uncached = table.system.fabric.as_ref().map(|fabric| fabric.memory);
    let mut devices = platform::own_devices(platform);
    // The timed-I/O controller is Partita's to write.
    devices.extend(table.system.timed_io.as_ref().map(|t| Range::new(t.device, PAGE_SIZE)));
    mmu::init(platform.ram, hypervisor, &devices, uncached);
    Gic::init(platform);
    el2::init_cpu();
    stage2::init_cpu();
    crate::trace::init(platform.cpus as usize, table.system.hypervisor.trace_events);
    watch_critical_pcpus(&table.system);
    crate::health::log::init(table.system.hypervisor.hm_log_entries);
    let sys = state::publish(build_system(table, data));
    log!("{} partition(s) loaded; boot heap in use: {} KiB", sys.partitions.len(), heap::used() / 1024);
    let rndr = if cpu::has_rndr() { ", RNDR" } else { "" };
    log!("device-tree seeds from: build secrets, counter, partition, load count{rndr}");
    crate::vgic::configure_spis(sys);
    // Before any other CPU starts, so that every kick goes in the group
    // its target takes it in.
    for me in sys.cpus.iter().filter(|me| me.direct) {
        Gic::make_direct(me.index);
    }
    start_plans(sys);
    start_secondaries(sys.cpus.len());
    work(sys, 0)
}

/// The pCPUs a high-criticality vCPU may run on trace their EL2 stretches,
/// so that a late job of it can be set against Partita's share.
fn watch_critical_pcpus(system: &partita_core::config::model::System) {
    use partita_core::config::model::Criticality;
    for part in system.partitions.iter().filter(|p| p.criticality == Criticality::High) {
        let migrations = part.migrate.iter().flat_map(|m| m.to.iter());
        for &pcpu in part.vcpus.iter().chain(migrations) {
            crate::trace::watch_el2(pcpu as usize);
        }
    }
}

/// What pCPU `cpu` does from now on: run vCPUs, or be the fabric.
fn work(sys: &'static System, cpu: usize) -> ! {
    crate::console::start_draining();
    match &sys.fabric {
        Some(fabric) if fabric.logic.cpu() == cpu => crate::fabric::run::run(sys, fabric),
        _ => crate::scheduler::run(sys, &sys.cpus[cpu]),
    }
}

/// A secondary CPU: the shared state exists; set up this CPU and schedule.
pub fn secondary(cpu: usize) -> ! {
    mmu::enable();
    Gic::init_cpu(cpu);
    el2::init_cpu();
    stage2::init_cpu();
    partita_arch::residency::wait_for_primary();
    work(state::system(), cpu)
}

#[inline(never)]
fn read_head() -> (BootTable, Seal) {
    let header = image::payload(40);
    let len = match head_len(header) {
        Ok(len) if len <= MAX_HEAD => len,
        other => fail_early(format_args!("no valid boot payload behind the image: {other:?}")),
    };
    let heap_start = (image::payload_start() + len as u64).next_multiple_of(4096);
    heap::init(heap_start, HEAP_SIZE);
    match decode_head(image::payload(len)) {
        Ok((table, seal)) => {
            let end = Range::new(heap_start, HEAP_SIZE).end();
            let memory = table.system.hypervisor.memory;
            if end > memory.end() || image::image_start() < memory.base {
                Uart::init(table.system.platform.console.base);
                panic!("image, payload and heap (up to 0x{end:x}) exceed hypervisor memory {memory:x?}");
            }
            if memory.end() > end {
                heap::extend(end, memory.end() - end);
            }
            (table, seal)
        }
        Err(error) => fail_early(format_args!("boot payload rejected: {error:?}")),
    }
}

/// The partitions' pristine bytes, once the validator has placed the image
/// store in RAM apart from everyone's memory.
#[inline(never)]
fn read_image_store(table: &BootTable, seal: Seal) -> &'static [u8] {
    let store = table.system.hypervisor.images;
    match seal.check(image::image_store(store)) {
        Ok(data) => data,
        Err(error) => panic!(
            "the image store at {:#x}..{:#x} does not hold this payload's images ({error:?}): \
             the boot loader must load images.bin there",
            store.base,
            store.end()
        ),
    }
}

fn fail_early(message: core::fmt::Arguments) -> ! {
    Uart::init(platform::FALLBACK_CONSOLE);
    panic!("{message}")
}

#[inline(never)]
fn build_system(table: BootTable, data: &'static [u8]) -> System {
    let BootTable { system, boot } = table;
    let fabric = Fabric::build(&system);
    if let Some(fabric) = &fabric {
        // Interface pages and contexts start zeroed, like partition RAM.
        partita_arch::cache::zero(fabric.config.memory.base, fabric.config.memory.size);
    }
    let timed_io = system.timed_io.as_ref();
    let mut partitions: Vec<Partition> = system
        .partitions
        .into_iter()
        .zip(boot)
        .enumerate()
        .map(|(i, (config, boot))| {
            let (windows, doorbells) = channel::membership(&system.channels, i);
            let interfaces = fabric.as_ref().map_or(Vec::new(), |f| f.interfaces(i));
            let signals = fabric.as_ref().map_or(Vec::new(), |f| f.signals(i));
            let gpio_view = crate::timedio::grant_of(timed_io, i)
                .and_then(|grant| grant.view)
                .map(|ipa| (ipa, timed_io.map_or(0, |t| t.device)));
            let gic_cpu = partition::gic_cpu_interface(&system.platform);
            let shared = Shared { windows, doorbells, interfaces, signals, gpio_view, gic_cpu };
            let part = partition::build(i, config, boot, shared);
            lifecycle::first_boot(&part, data);
            part
        })
        .collect();
    if let Some(config) = timed_io {
        crate::timedio::init(config, &mut partitions);
    }
    for window in system.channels.iter().filter_map(|c| c.kind.shared_window()) {
        // Shared pages start zeroed, like partition RAM.
        if mmu::is_partition_ram(window.base, window.size) {
            partita_arch::cache::zero(window.base, window.size);
        }
    }
    let channels = channel::build(&system.channels);
    let hz = partita_arch::platform::counter_frequency();
    let plans = Plans::new(system.plans, hz);
    let cpus: Vec<PerCpu> = (0..system.platform.cpus as usize).map(|cpu| build_cpu(cpu, &partitions, &plans)).collect();
    watch_vcpus(&partitions, &cpus);
    let quantum = us_to_ticks(system.hypervisor.quantum_us.into(), hz);
    System { platform: system.platform, partitions, cpus, quantum: quantum.max(1), plans, data, channels, fabric }
}

/// pCPU `cpu`: the vCPUs it lists and the policy that chooses among them.
#[inline(never)]
fn build_cpu(cpu: usize, partitions: &[Partition], plans: &Plans) -> PerCpu {
    let vcpus: Vec<_> = partitions
        .iter()
        .flat_map(|p| p.vcpus.iter().copied())
        .filter(|v| v.home == cpu || v.migrate_to.contains(&cpu))
        .collect();
    assert!(vcpus.len() <= MAX_VCPUS_PER_PCPU, "pCPU {cpu} lists {} vCPUs; at most {MAX_VCPUS_PER_PCPU}", vcpus.len());
    // A pCPU that others may migrate to is shared, even while empty; a
    // budget needs WFI trapped, so idle time is not use.
    let policy = if plans.is_cyclic(cpu) {
        Policy::cyclic(plans, cpu, &vcpus)
    } else if vcpus.len() == 1 && vcpus[0].home == cpu && vcpus[0].budget.is_none() {
        Policy::Exclusive
    } else {
        Policy::fixed_priority()
    };
    let direct = policy.is_exclusive() && partitions[vcpus[0].partition].config.interrupts == Delivery::Direct;
    let dirty: &'static Dirty = Box::leak(Box::new(Dirty::all()));
    let mut me = PerCpu::new(cpu, vcpus, policy, dirty);
    me.direct = direct;
    me.tlb_seen = partitions.iter().map(|_| AtomicU32::new(0)).collect();
    me.watchdogs = partitions
        .iter()
        .enumerate()
        .filter(|(_, p)| p.config.health.watchdog_us.is_some() && p.vcpus[0].home == cpu)
        .map(|(i, _)| i)
        .collect();
    me.timed_io = crate::timedio::served_by(cpu, partitions);
    me.migrating = (0..me.vcpus.len())
        .filter(|&slot| me.vcpus[slot].home == cpu && !me.vcpus[slot].migrate_to.is_empty())
        .collect();
    me
}

/// Tells each vCPU which pCPUs list it and at which slot, so a change to
/// it marks it for each of them. Only a fixed-priority pCPU reads its
/// marks (to keep its ready queue); the others look at their vCPUs
/// themselves, and marking for them would cost every change for nothing.
fn watch_vcpus(partitions: &[Partition], cpus: &[PerCpu]) {
    for vcpu in partitions.iter().flat_map(|p| p.vcpus.iter()) {
        let watching: Vec<(usize, Watcher)> = cpus
            .iter()
            .filter(|me| matches!(me.policy, Policy::FixedPriority(_)))
            .filter_map(|me| {
                let slot = me.vcpus.iter().position(|v| core::ptr::eq(*v, *vcpu))?;
                Some((me.index, Watcher { dirty: me.dirty, slot }))
            })
            .collect();
        let home_slot = watching.iter().find(|(cpu, _)| *cpu == vcpu.home).map(|(_, w)| w.slot);
        vcpu.watch(watching.into_iter().map(|(_, w)| w).collect(), home_slot);
    }
}

/// Cyclic pCPUs idle until the first major frame, which starts a little
/// after the other CPUs are called, so that all of them see its first slot.
#[inline(never)]
fn start_plans(sys: &System) {
    const START_DELAY_US: u64 = 2_000;
    let plans = &sys.plans;
    if plans.count() > 0 {
        let origin =
            partita_arch::timer::counter() + us_to_ticks(START_DELAY_US, partita_arch::platform::counter_frequency());
        plans.start(origin);
        log!("{} plan(s); plan 0's first major frame starts at counter 0x{origin:x}", plans.count());
    }
}

/// Powers on the other physical CPUs through the firmware. QEMU virt numbers
/// them by Aff0; only the affinity fields are passed (QEMU 7.2 refuses a
/// target with bit 31 set).
#[inline(never)]
fn start_secondaries(cpus: usize) {
    let base = cpu::affinity() & !0xff;
    for cpu in 1..cpus {
        let mpidr = base | cpu as u64;
        if let Err(error) = firmware::cpu_on(mpidr, image::secondary_entry_address(), cpu as u64) {
            log!("CPU {cpu} (MPIDR 0x{mpidr:x}) did not start: {error:?}");
        }
    }
    cpu::isb();
}
