//! From the schema to the model: defaults applied, addresses allocated.

use super::raw::{
    RawAction, RawChannel, RawChannelKind, RawConfig, RawCore, RawCriticality, RawDelivery, RawDevice, RawFabric,
    RawFormat, RawFunction, RawImage, RawInterrupt, RawMemory, RawPartition, RawPlan, RawPlatform, RawRange, RawRight,
    RawSlot, RawTimedIo, RawTrace,
};
use super::suggest::did_you_mean;
use super::virtio::{self, VirtioDevice};
use super::{Image, ImageFormat};
use partita_core::config::limits::{CONSOLE_INTID, SPI};
use partita_core::config::model::{
    self, Accelerator, Action, Budget, Channel, ChannelKind, Criticality, CyclicCore, Delivery, Device, Fabric,
    Function, Health, Hypervisor, Interrupt, MemoryRegion, Migration, Partition, Perms, Plan, Platform, Prr, Range,
    Rights, Slot, System, TimedIo, TimedIoGrant, VirtualDevice,
};
use partita_core::config::validate::{hex_range, slot_label, Issue};
use partita_core::fabric::interface::PAGE_SIZE as INTERFACE_PAGE;
use partita_core::timedio;
use std::collections::BTreeSet;
use std::path::Path;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// QEMU `virt`'s memory map.
pub const DEFAULT_BOARD: &str = "qemu-virt";
pub const DEFAULT_CPUS: u32 = 4;
pub const DEFAULT_RAM: Range = Range::new(0x4000_0000, GIB);
pub const DEFAULT_CONSOLE: Range = Range::new(0x0900_0000, 4 * KIB);
pub const DEFAULT_GICD: u64 = 0x0800_0000;
pub const DEFAULT_GICR: u64 = 0x080a_0000;
pub const GICD_SIZE: u64 = 64 * KIB;
/// One RD_base plus one SGI_base frame per CPU.
pub const GICR_SIZE_PER_CPU: u64 = 128 * KIB;
/// The Zynq UltraScale+ MPSoC's map (QEMU `xlnx-zcu102`, `docs/zcu102.md`):
/// DDR at 0 (the 2 GiB below the PL's windows; a ZCU102's other 2 GiB
/// sit at `0x800000000`), UART0, the GIC-400's distributor and CPU interface.
pub const ZCU102_RAM: Range = Range::new(0, 2 * GIB);
pub const ZCU102_CONSOLE: Range = Range::new(0xff00_0000, 4 * KIB);
pub const ZCU102_GICD: u64 = 0xf901_0000;
pub const ZCU102_GICC: u64 = 0xf902_0000;
/// A GICv2's CPU-side frames from GICC: GICC, GICH at +128 KiB and GICV at
/// +256 KiB, each 4 KiB repeated over 64 KiB on the GIC-400.
pub const GICV2_CPU_FRAMES_SIZE: u64 = 320 * KIB;
pub const DEFAULT_HYPERVISOR_SIZE: u64 = 32 * MIB;
pub const DEFAULT_QUANTUM_US: u32 = 1000;
pub const DEFAULT_TRACE_EVENTS: u32 = 16_384;
/// 1 %, in basis points.
pub const DEFAULT_OVERHEAD_LIMIT_BP: u32 = 100;
pub const DEFAULT_HM_LOG_ENTRIES: u32 = 256;
pub const DEFAULT_PARTITION_CONSOLE: u64 = 0x0900_0000;
/// Allocated regions start on 2 MiB so the stage-2 tables can use block mappings.
pub const ALLOCATION_ALIGN: u64 = 2 * MIB;
/// Zynq-7000's PCAP as Ker-ONE measured it: 128 MB/s, decimal.
/// QEMU `virt`'s PL061 GPIO controller.
pub const DEFAULT_TIMED_IO_DEVICE: u64 = 0x0903_0000;
pub const DEFAULT_TIMED_IO_HORIZON_US: u64 = 1_000_000;
pub const DEFAULT_TIMED_IO_LEAD_US: u64 = 50;
pub const DEFAULT_TIMED_IO_DEPTH: u32 = 16;
pub const DEFAULT_FABRIC_BANDWIDTH: u64 = 128_000_000;
pub const DEFAULT_FABRIC_HOLD_US: u64 = 1_000;
/// Short enough that, under `-icount`, the fabric's answers keep to the
/// measured costs (docs/configuration.md, `[fabric]`).
pub const DEFAULT_FABRIC_TURN_US: u64 = 50;
/// Ker-ONE's accelerators (Tables 5 and 6): name, function, time per
/// frame and δ_pre, in nanoseconds.
pub const DEFAULT_ACCELERATORS: [(&str, Function, u64, u64); 4] = [
    ("qam16", Function::Qam16, 47_000, 47_000),
    ("qam64", Function::Qam64, 31_000, 31_000),
    ("fft512", Function::Fft512, 71_100, 24_100),
    ("fft1024", Function::Fft1024, 90_600, 33_600),
];
/// Ker-ONE's PRRs: name, share of the fabric, bitstream bytes (Table 5's
/// T_RCFG of 231, 810 and 1,206 us at 128 MB/s), the accelerators it hosts.
pub const DEFAULT_PRRS: [(&str, u32, u64, &[&str]); 3] = [
    ("prr1", 2, 29_568, &["qam16", "qam64"]),
    ("prr2", 8, 103_680, &["qam16", "qam64", "fft512"]),
    ("prr3", 13, 154_368, &["fft512", "fft1024"]),
];
/// Where a partition sees accelerator `a`'s interface page unless it says
/// otherwise: `0x0b000000 + a x 4 KiB`, the same in every partition, as
/// Ker-ONE maps a device at one address in every VM. QEMU `virt` has
/// nothing between its virtio-mmio transports (`0x0a000000`, 16 KiB) and
/// its platform bus (`0x0c000000`), so no device a partition passes
/// through from the board sits there, and it is below RAM.
pub const DEFAULT_ACCELERATOR_WINDOW: u64 = 0x0b00_0000;
/// The first INTID of the signals allocated to virtual devices: the first
/// past QEMU `virt`'s own SPIs (UART 33, RTC 34, PCIe 35 to 38, GPIO 39,
/// virtio-mmio 48 to 79), so that a passthrough device rarely needs one.
pub const DEFAULT_SIGNAL_BASE: u32 = 80;
/// On the ZynqMP, interface pages sit where a partition of a real board
/// reaches the PL: the full-power domain's first AXI master window,
/// M_AXI_HPM0_FPD, so a partition sees its accelerators at the same address
/// whether the fabric is emulated or real.
pub const ZCU102_ACCELERATOR_WINDOW: u64 = 0xa000_0000;
/// And signals start at the PL-to-PS interrupts (IRQ0[0..7] are INTIDs 121
/// to 128), which no PS peripheral uses.
pub const ZCU102_SIGNAL_BASE: u32 = 121;

/// The model plus what only the host needs, and what went wrong on the way.
pub struct Resolved {
    pub system: System,
    /// Per partition, one slot per `[[partition.image]]`; `None` where the
    /// entry is contradictory (an issue says why), so indices match the file.
    pub images: Vec<Vec<Option<Image>>>,
    pub entries: Vec<Option<u64>>,
    /// The virtio devices QEMU must back.
    pub virtio: Vec<VirtioDevice>,
    pub issues: Vec<Issue>,
    /// Regions for which no space was found; their `pa` is meaningless.
    pub unallocated: Vec<String>,
    /// Entries (path and field) naming a partition that does not exist, so
    /// holding a meaningless index; an empty field: the whole entry is
    /// malformed and only its own issues count.
    pub unresolved: Vec<(String, &'static str)>,
}

pub fn resolve(raw: RawConfig, name: String, config_dir: &Path) -> Resolved {
    let mut issues = Vec::new();
    let platform = platform(&raw.platform, &mut issues);
    let hypervisor = Hypervisor {
        memory: range_or(&raw.hypervisor.memory, Range::new(platform.ram.base, DEFAULT_HYPERVISOR_SIZE)),
        quantum_us: raw.hypervisor.quantum_us.unwrap_or(DEFAULT_QUANTUM_US),
        trace_events: trace_events(&raw.trace),
        overhead_limit_bp: raw.hypervisor.overhead_limit_percent.map_or(DEFAULT_OVERHEAD_LIMIT_BP, basis_points),
        hm_log_entries: raw.hypervisor.hm_log_entries.unwrap_or(DEFAULT_HM_LOG_ENTRIES),
        // Placed by `allocate` unless the file gives a base.
        images: Range::new(raw.hypervisor.images.base.unwrap_or(UNPLACED), 0),
    };
    let mut images = Vec::new();
    let mut entries = Vec::new();
    let mut partitions = Vec::new();
    for (p, raw_partition) in raw.partition.iter().enumerate() {
        images.push(partition_images(p, raw_partition, config_dir, &mut issues));
        entries.push(raw_partition.entry);
        watchdog_without_period(p, raw_partition, &mut issues);
        partitions.push(partition(raw_partition));
    }
    let virtio = virtio::resolve(&raw.partition, &mut partitions, &platform.board, config_dir, &mut issues);
    let plans: Vec<Plan> = raw.plan.iter().map(|plan| resolve_plan(plan, &partitions)).collect();
    let mut unresolved = unknown_partitions(&raw.plan, &plans, &partitions, &mut issues);
    let mut channels = Vec::new();
    for (i, raw_channel) in raw.channel.iter().enumerate() {
        channels.push(channel(i, raw_channel, &partitions, &mut issues, &mut unresolved));
    }
    let fabric = raw.fabric.as_ref().map(|raw_fabric| {
        let mut fabric = fabric(raw_fabric, &mut issues, &mut unresolved);
        // None free: an index past the last pCPU, which the validator names.
        fabric.cpu =
            raw_fabric.cpu.unwrap_or_else(|| Fabric::free_cpu(platform.cpus, &partitions).unwrap_or(platform.cpus));
        fabric
    });
    let placement = FabricPlacement::of(&platform.board);
    for (p, raw_partition) in raw.partition.iter().enumerate() {
        let fabric = fabric.as_ref();
        let devices = virtual_devices(p, raw_partition, fabric, placement, &channels, &mut issues, &mut unresolved);
        partitions[p].accelerators = devices;
    }
    let timed_io = raw.timed_io.as_ref().map(|raw| timed_io(raw, &partitions, &mut issues, &mut unresolved));
    let mut system = System { name, platform, hypervisor, partitions, plans, channels, fabric, timed_io };
    let unallocated = allocate(&mut system, &raw, &images, &mut issues);
    // An unplaced fabric has no address to judge; its own issue says why.
    for own in [FABRIC_MEMORY, IMAGE_STORE] {
        if unallocated.iter().any(|path| path == own) {
            unresolved.push((own.into(), "base"));
        }
    }
    Resolved { system, images, entries, virtio, issues, unallocated, unresolved }
}

fn range_or(raw: &RawRange, default: Range) -> Range {
    Range::new(raw.base.unwrap_or(default.base), raw.size.map_or(default.size, |s| s.0))
}

/// The model has no separate switch: a ring size of 0 is "off".
fn trace_events(raw: &RawTrace) -> u32 {
    if raw.enabled.unwrap_or(false) {
        raw.events_per_cpu.unwrap_or(DEFAULT_TRACE_EVENTS)
    } else {
        0
    }
}

/// A percentage in basis points, rounded to the nearest. The range check is
/// the validator's, on the result, so a value that rounds into range must
/// not have been outside it: what is above 0 stays at least 1, what is above
/// 100 % stays above 10 000. Negative and NaN give 0, which is refused too.
fn basis_points(percent: f64) -> u32 {
    // `as` saturates, and turns NaN into 0.
    let bp = (percent * 100.0).round() as u32;
    if percent > 0.0 && bp == 0 {
        1
    } else if percent > 100.0 && bp <= 10_000 {
        10_001
    } else {
        bp
    }
}

/// What a board has where the file says nothing.
struct BoardDefaults {
    ram: Range,
    console: Range,
    gicd: u64,
    /// GICv3: the first redistributor; GICv2: GICC.
    gic_cpu: u64,
    /// A GICv2, whose CPU-side frames the file gives as `cpu_interface`;
    /// else a GICv3's redistributors, as `redistributor`.
    gicv2: bool,
}

/// An unknown board gets `virt`'s, so that only its name is reported.
fn board_defaults(board: &str) -> BoardDefaults {
    if board == model::ZCU102 {
        BoardDefaults { ram: ZCU102_RAM, console: ZCU102_CONSOLE, gicd: ZCU102_GICD, gic_cpu: ZCU102_GICC, gicv2: true }
    } else {
        BoardDefaults {
            ram: DEFAULT_RAM,
            console: DEFAULT_CONSOLE,
            gicd: DEFAULT_GICD,
            gic_cpu: DEFAULT_GICR,
            gicv2: false,
        }
    }
}

fn platform(raw: &RawPlatform, issues: &mut Vec<Issue>) -> Platform {
    let board = raw.board.clone().unwrap_or_else(|| DEFAULT_BOARD.into());
    let cpus = raw.cpus.unwrap_or(DEFAULT_CPUS);
    let defaults = board_defaults(&board);
    let gicv2 = defaults.gicv2;
    let (given, refused, wanted) = if gicv2 {
        (raw.gic.cpu_interface, raw.gic.redistributor.map(|_| "redistributor"), "cpu_interface")
    } else {
        (raw.gic.redistributor, raw.gic.cpu_interface.map(|_| "cpu_interface"), "redistributor")
    };
    if let Some(field) = refused {
        let kind =
            if gicv2 { "GICv2, which has no redistributors" } else { "GICv3, whose CPU interface is system registers" };
        let message = format!("board \"{board}\" has a {kind}: give `{wanted}` instead");
        issues.push(Issue { path: "platform.gic".into(), field, message });
    }
    let gic_cpu_size = if gicv2 { GICV2_CPU_FRAMES_SIZE } else { GICR_SIZE_PER_CPU.saturating_mul(u64::from(cpus)) };
    Platform {
        board,
        cpus,
        ram: range_or(&raw.ram, defaults.ram),
        console: range_or(&raw.console, defaults.console),
        gicd: Range::new(raw.gic.distributor.unwrap_or(defaults.gicd), GICD_SIZE),
        gicr: Range::new(given.unwrap_or(defaults.gic_cpu), gic_cpu_size),
    }
}

fn partition(raw: &RawPartition) -> Partition {
    let criticality = match raw.criticality {
        Some(RawCriticality::High) => Criticality::High,
        Some(RawCriticality::Medium) => Criticality::Medium,
        Some(RawCriticality::Low) | None => Criticality::Low,
    };
    Partition {
        name: raw.name.clone(),
        criticality,
        priority: raw.priority.unwrap_or(criticality.default_priority()),
        vcpus: raw.cpus.clone(),
        exclusive: raw.exclusive.unwrap_or(false),
        interrupts: match raw.interrupts {
            Some(RawDelivery::Direct) => Delivery::Direct,
            Some(RawDelivery::Virtual) | None => Delivery::Virtual,
        },
        rights: rights(raw.rights.as_deref().unwrap_or_default()),
        migrate: raw.migrate.iter().map(|m| Migration { vcpu: m.vcpu, to: m.to.clone() }).collect(),
        budget: raw.budget.map(|budget| Budget { time_us: budget.time.0, period_us: budget.period.0 }),
        memory: raw.memory.iter().map(memory_region).collect(),
        devices: raw.device.iter().map(device).collect(),
        console: raw.console.unwrap_or(DEFAULT_PARTITION_CONSOLE),
        bootargs: raw.bootargs.clone().unwrap_or_default(),
        health: health(raw),
        accelerators: Vec::new(),
        max_added_response_us: raw.max_added_response_us.map(|limit| limit.0),
    }
}

fn health(raw: &RawPartition) -> Health {
    let given = raw.health.unwrap_or_default();
    let or = |action: Option<RawAction>, default: Action| action.map_or(default, self::action);
    let default = Health::DEFAULT;
    Health {
        stage2_fault: or(given.stage2_fault, default.stage2_fault),
        forbidden: or(given.forbidden, default.forbidden),
        illegal_hypercall: or(given.illegal_hypercall, default.illegal_hypercall),
        watchdog: or(given.watchdog, default.watchdog),
        budget_overrun: or(given.budget_overrun, default.budget_overrun),
        reported: or(given.reported, default.reported),
        watchdog_us: raw.watchdog.map(|period| period.0),
    }
}

fn action(raw: RawAction) -> Action {
    match raw {
        RawAction::Ignore => Action::Ignore,
        RawAction::Log => Action::Log,
        RawAction::Suspend => Action::Suspend,
        RawAction::Restart => Action::Restart,
        RawAction::Halt => Action::Halt,
        RawAction::ResetSystem => Action::ResetSystem,
        RawAction::Inject => Action::Inject,
    }
}

/// Host-only: the model always holds a watchdog action, so only the file
/// tells whether one was asked for.
fn watchdog_without_period(p: usize, raw: &RawPartition, issues: &mut Vec<Issue>) {
    if raw.watchdog.is_none() && raw.health.is_some_and(|health| health.watchdog.is_some()) {
        let message =
            format!("partition \"{}\" sets a watchdog action but no watchdog period (watchdog = \"100ms\")", raw.name);
        issues.push(Issue { path: format!("partition[{p}].health"), field: "watchdog", message });
    }
}

fn rights(raw: &[RawRight]) -> Rights {
    let has = |right: RawRight| raw.contains(&right);
    Rights {
        suspend: has(RawRight::Suspend),
        resume: has(RawRight::Resume),
        restart: has(RawRight::Restart),
        halt: has(RawRight::Halt),
        switch_plan: has(RawRight::SwitchPlan),
        read_hm_log: has(RawRight::ReadHmLog),
    }
}

/// `pa` is provisional for regions that [`allocate`] places.
fn memory_region(raw: &RawMemory) -> MemoryRegion {
    let identity = raw.identity.unwrap_or(false);
    MemoryRegion {
        ipa: raw.base,
        pa: raw.phys.unwrap_or(raw.base),
        size: raw.size.0,
        perms: raw.perms.map_or(Perms::RWX, |p| p.0),
        identity,
    }
}

fn device(raw: &RawDevice) -> Device {
    Device {
        name: raw.name.clone(),
        compatible: raw.compatible.clone(),
        ipa: raw.base,
        pa: raw.phys.unwrap_or(raw.base),
        size: raw.size.0,
        interrupts: raw.interrupts.iter().map(interrupt).collect(),
    }
}

fn interrupt(raw: &RawInterrupt) -> Interrupt {
    match *raw {
        RawInterrupt::Bare(intid) => Interrupt { intid, vcpu: 0 },
        RawInterrupt::Routed(routed) => Interrupt { intid: routed.intid, vcpu: routed.vcpu.unwrap_or(0) },
    }
}

/// The index a slot gets when no partition has its name: beyond any table,
/// so the validator could never take it for a real partition.
const UNKNOWN_PARTITION: usize = usize::MAX;

fn resolve_plan(raw: &RawPlan, partitions: &[Partition]) -> Plan {
    Plan { name: raw.name.clone(), cores: raw.core.iter().map(|core| cyclic_core(core, partitions)).collect() }
}

fn cyclic_core(raw: &RawCore, partitions: &[Partition]) -> CyclicCore {
    CyclicCore {
        cpu: raw.cpu,
        major_frame_us: raw.major_frame_us.0,
        slots: raw.slot.iter().map(|slot| slot_of(slot, partitions)).collect(),
    }
}

fn slot_of(raw: &RawSlot, partitions: &[Partition]) -> Slot {
    Slot {
        partition: partitions.iter().position(|p| p.name == raw.partition).unwrap_or(UNKNOWN_PARTITION),
        vcpu: raw.vcpu.unwrap_or(0),
        start_us: raw.start_us.0,
        duration_us: raw.duration_us.0,
    }
}

/// Reports each slot naming no partition, with the name only the file
/// knows, and returns their paths: the validator's report of the same slot
/// could only cite the meaningless index.
fn unknown_partitions(
    raw: &[RawPlan],
    plans: &[Plan],
    partitions: &[Partition],
    issues: &mut Vec<Issue>,
) -> Vec<(String, &'static str)> {
    let mut unresolved = Vec::new();
    for (i, (plan, raw_plan)) in plans.iter().zip(raw).enumerate() {
        for (c, (core, raw_core)) in plan.cores.iter().zip(&raw_plan.core).enumerate() {
            let slots = core.slots.iter().zip(&raw_core.slot).enumerate();
            for (s, (slot, raw_slot)) in slots.filter(|(_, (slot, _))| slot.partition == UNKNOWN_PARTITION) {
                let path = format!("plan[{i}].core[{c}].slot[{s}]");
                let name = &raw_slot.partition;
                let label = slot_label(&plan.name, core.cpu, s, name, slot);
                let message = format!("{label}: no partition is named \"{name}\"{}", partition_hint(name, partitions));
                issues.push(Issue { path: path.clone(), field: "partition", message });
                unresolved.push((path, "partition"));
            }
        }
    }
    unresolved
}

/// `; did you mean "x"?` with the partition name nearest `name`.
fn partition_hint(name: &str, partitions: &[Partition]) -> String {
    did_you_mean(name, partitions.iter().map(|p| p.name.as_str()))
}

/// The fields each kind requires, then those it also takes.
fn channel_fields(kind: RawChannelKind) -> (&'static [&'static str], &'static [&'static str]) {
    match kind {
        RawChannelKind::Sampling => (&["source", "destinations", "max_message", "refresh"], &[]),
        RawChannelKind::Queuing => (&["source", "destination", "max_message", "depth"], &[]),
        RawChannelKind::SharedMemory => (&["partitions", "base", "size"], &["phys", "read_only", "doorbell_intid"]),
    }
}

fn channel_kind_name(kind: RawChannelKind) -> &'static str {
    match kind {
        RawChannelKind::Sampling => "sampling",
        RawChannelKind::Queuing => "queuing",
        RawChannelKind::SharedMemory => "shared-memory",
    }
}

/// Resolves names to partition indices; a name that matches none is
/// reported here, where the name is still known, and marked unresolved.
fn channel(
    i: usize,
    raw: &RawChannel,
    partitions: &[Partition],
    issues: &mut Vec<Issue>,
    unresolved: &mut Vec<(String, &'static str)>,
) -> Channel {
    let path = format!("channel[{i}]");
    let present = [
        ("source", raw.source.is_some()),
        ("destinations", raw.destinations.is_some()),
        ("destination", raw.destination.is_some()),
        ("max_message", raw.max_message.is_some()),
        ("refresh", raw.refresh.is_some()),
        ("depth", raw.depth.is_some()),
        ("partitions", raw.partitions.is_some()),
        ("base", raw.base.is_some()),
        ("phys", raw.phys.is_some()),
        ("size", raw.size.is_some()),
        ("read_only", raw.read_only.is_some()),
        ("doorbell_intid", raw.doorbell_intid.is_some()),
    ];
    let (required, optional) = channel_fields(raw.kind);
    let kind_name = channel_kind_name(raw.kind);
    let mut malformed = false;
    for (field, given) in present {
        let message = if given && !required.contains(&field) && !optional.contains(&field) {
            format!("channel \"{}\": `{field}` is not a field of a {kind_name} channel", raw.name)
        } else if !given && required.contains(&field) {
            format!("channel \"{}\": a {kind_name} channel needs `{field}`", raw.name)
        } else {
            continue;
        };
        issues.push(Issue { path: path.clone(), field, message });
        malformed = true;
    }
    if malformed {
        unresolved.push((path.clone(), ""));
    }
    let mut index_of = |field: &'static str, name: &str| -> usize {
        partitions.iter().position(|p| p.name == name).unwrap_or_else(|| {
            if !malformed {
                let hint = partition_hint(name, partitions);
                let message = format!("channel \"{}\": no partition is named \"{name}\"{hint}", raw.name);
                issues.push(Issue { path: path.clone(), field, message });
                unresolved.push((path.clone(), field));
            }
            UNKNOWN_PARTITION
        })
    };
    let mut indices = |field: &'static str, names: &Option<Vec<String>>| -> Vec<usize> {
        names.iter().flatten().map(|name| index_of(field, name)).collect()
    };
    // A size beyond u32 is out of range anyway; saturating keeps it so.
    let max_message = raw.max_message.map_or(0, |size| u32::try_from(size.0).unwrap_or(u32::MAX));
    let kind = match raw.kind {
        RawChannelKind::Sampling => {
            let destinations = indices("destinations", &raw.destinations);
            let source = indices("source", &raw.source.clone().map(|s| vec![s])).first().copied();
            ChannelKind::Sampling {
                source: source.unwrap_or(UNKNOWN_PARTITION),
                destinations,
                max_message,
                refresh_us: raw.refresh.map_or(0, |refresh| refresh.0),
            }
        }
        RawChannelKind::Queuing => {
            let source = indices("source", &raw.source.clone().map(|s| vec![s])).first().copied();
            let destination = indices("destination", &raw.destination.clone().map(|s| vec![s])).first().copied();
            ChannelKind::Queuing {
                source: source.unwrap_or(UNKNOWN_PARTITION),
                destination: destination.unwrap_or(UNKNOWN_PARTITION),
                max_message,
                depth: raw.depth.unwrap_or(0),
            }
        }
        RawChannelKind::SharedMemory => {
            let base = raw.base.unwrap_or(0);
            ChannelKind::SharedMemory {
                partitions: indices("partitions", &raw.partitions),
                ipa: base,
                pa: raw.phys.unwrap_or(UNPLACED),
                size: raw.size.map_or(0, |size| size.0),
                read_only: indices("read_only", &raw.read_only),
                doorbell: raw.doorbell_intid,
            }
        }
    };
    Channel { name: raw.name.clone(), kind }
}

/// The `[[partition.image]]` slots, then the kernel and the initrd, which
/// `images::check` blames on the partition's `kernel` and `initrd` fields.
fn partition_images(p: usize, raw: &RawPartition, config_dir: &Path, issues: &mut Vec<Issue>) -> Vec<Option<Image>> {
    let absolute = |file: &str| {
        let joined = config_dir.join(file);
        std::path::absolute(&joined).unwrap_or(joined)
    };
    let mut slots: Vec<Option<Image>> = raw
        .image
        .iter()
        .enumerate()
        .map(|(i, image)| {
            let format = image_format(image).map_err(|(field, message)| {
                issues.push(Issue { path: format!("partition[{p}].image[{i}]"), field, message: message.into() });
            });
            format.ok().map(|format| Image { path: absolute(&image.path), format })
        })
        .collect();
    let linux = [(&raw.kernel, ImageFormat::Linux), (&raw.initrd, ImageFormat::Initrd)];
    slots.extend(
        linux.into_iter().filter_map(|(file, format)| Some(Some(Image { path: absolute(file.as_ref()?), format }))),
    );
    if raw.entry.is_some() && raw.kernel.is_some() {
        let message = "a Linux kernel starts at its load address; leave `entry` out".into();
        issues.push(Issue { path: format!("partition[{p}]"), field: "entry", message });
    }
    slots
}

fn image_format(image: &RawImage) -> Result<ImageFormat, (&'static str, &'static str)> {
    match (image.format.unwrap_or(RawFormat::Elf), image.load) {
        (RawFormat::Elf, None) => Ok(ImageFormat::Elf),
        (RawFormat::Raw, Some(load)) => Ok(ImageFormat::Raw { load }),
        (RawFormat::Elf, Some(_)) => {
            Err(("load", "load is only for raw images; an ELF image is placed by its program headers"))
        }
        (RawFormat::Raw, None) => Err(("format", "a raw image needs a load address (load = 0x...)")),
    }
}

/// `[timed_io]` with its defaults, partitions by index and pins as a mask.
fn timed_io(
    raw: &RawTimedIo,
    partitions: &[Partition],
    issues: &mut Vec<Issue>,
    unresolved: &mut Vec<(String, &'static str)>,
) -> TimedIo {
    let grants = raw
        .grant
        .iter()
        .enumerate()
        .map(|(g, grant)| {
            let path = format!("timed_io.grant[{g}]");
            let partition = partitions.iter().position(|p| p.name == grant.partition).unwrap_or_else(|| {
                let hint = partition_hint(&grant.partition, partitions);
                let message = format!("no partition is named \"{}\"{hint}", grant.partition);
                issues.push(Issue { path: path.clone(), field: "partition", message });
                unresolved.push((path.clone(), "partition"));
                UNKNOWN_PARTITION
            });
            TimedIoGrant {
                partition,
                pins: pin_mask(&path, &grant.pins, issues),
                depth: grant.depth.unwrap_or(DEFAULT_TIMED_IO_DEPTH),
                view: grant.view,
            }
        })
        .collect();
    TimedIo {
        device: raw.device.unwrap_or(DEFAULT_TIMED_IO_DEVICE),
        horizon_us: raw.horizon.map_or(DEFAULT_TIMED_IO_HORIZON_US, |h| h.0),
        lead_us: raw.lead.map_or(DEFAULT_TIMED_IO_LEAD_US, |l| l.0),
        grants,
    }
}

/// GPIO line numbers as a mask; a line the controller lacks, or one named
/// twice, is an issue of `pins`.
fn pin_mask(path: &str, pins: &[u32], issues: &mut Vec<Issue>) -> u8 {
    let mut mask = 0u8;
    for &pin in pins {
        let message = if pin >= timedio::PINS {
            format!("pin {pin} does not exist: the controller has lines 0 to {}", timedio::PINS - 1)
        } else if mask & 1 << pin != 0 {
            format!("pin {pin} is listed twice")
        } else {
            mask |= 1 << pin;
            continue;
        };
        issues.push(Issue { path: path.into(), field: "pins", message });
    }
    mask
}

const FABRIC_MEMORY: &str = "fabric.memory";

/// The fabric with its defaults, names of hosted accelerators resolved;
/// its memory's base is provisional when [`allocate`] places it.
fn fabric(raw: &RawFabric, issues: &mut Vec<Issue>, unresolved: &mut Vec<(String, &'static str)>) -> Fabric {
    let accelerators: Vec<Accelerator> = if raw.accelerator.is_empty() {
        let default = |&(name, function, frame_ns, preempt_ns): &(&str, Function, u64, u64)| Accelerator {
            name: name.into(),
            function,
            frame_ns,
            preempt_ns,
        };
        DEFAULT_ACCELERATORS.iter().map(default).collect()
    } else {
        let given = |a: &super::raw::RawAccelerator| Accelerator {
            name: a.name.clone(),
            function: function(a.function),
            frame_ns: a.frame.0,
            preempt_ns: a.preempt.0,
        };
        raw.accelerator.iter().map(given).collect()
    };
    let index_of = |name: &str| accelerators.iter().position(|a| a.name == name);
    let mut prrs = Vec::new();
    if raw.prr.is_empty() {
        let mut missing: Vec<&str> = Vec::new();
        for (r, &(name, size, bitstream, hosts)) in DEFAULT_PRRS.iter().enumerate() {
            let absent: Vec<&str> = hosts.iter().copied().filter(|host| index_of(host).is_none()).collect();
            if !absent.is_empty() {
                // Its rules would only restate the missing names.
                unresolved.push((format!("fabric.prr[{r}]"), ""));
            }
            for host in absent {
                if !missing.contains(&host) {
                    missing.push(host);
                }
            }
            let hosts = hosts.iter().filter_map(|host| index_of(host)).collect();
            prrs.push(Prr { name: name.into(), size, bitstream, hosts });
        }
        if !missing.is_empty() {
            let names: Vec<String> = missing.iter().map(|name| format!("\"{name}\"")).collect();
            let message = format!(
                "the default PRRs host accelerators the fabric does not declare ({}); with accelerators of \
                 your own, declare the PRRs too ([[fabric.prr]])",
                names.join(", ")
            );
            issues.push(Issue { path: "fabric".into(), field: "accelerator", message });
        }
    } else {
        for (r, raw_prr) in raw.prr.iter().enumerate() {
            let path = format!("fabric.prr[{r}]");
            let mut indices = Vec::new();
            for host in &raw_prr.hosts {
                indices.push(index_of(host).unwrap_or_else(|| {
                    let hint = did_you_mean(host, accelerators.iter().map(|a| a.name.as_str()));
                    let message = format!("PRR \"{}\": no accelerator is named \"{host}\"{hint}", raw_prr.name);
                    issues.push(Issue { path: path.clone(), field: "hosts", message });
                    unresolved.push((path.clone(), "hosts"));
                    UNKNOWN_ACCELERATOR
                }));
            }
            prrs.push(Prr {
                name: raw_prr.name.clone(),
                size: raw_prr.size,
                bitstream: raw_prr.bitstream.0,
                hosts: indices,
            });
        }
    }
    Fabric {
        memory: Range::new(raw.memory.base.unwrap_or(UNPLACED), raw.memory.size.map_or(0, |size| size.0)),
        bandwidth: raw.bandwidth.map_or(DEFAULT_FABRIC_BANDWIDTH, |size| size.0),
        hold_us: raw.hold.map_or(DEFAULT_FABRIC_HOLD_US, |hold| hold.0),
        turn_us: raw.turn.map_or(DEFAULT_FABRIC_TURN_US, |turn| turn.0),
        cpu: 0,
        prrs,
        accelerators,
    }
}

fn function(raw: RawFunction) -> Function {
    match raw {
        RawFunction::Qam16 => Function::Qam16,
        RawFunction::Qam64 => Function::Qam64,
        RawFunction::Fft512 => Function::Fft512,
        RawFunction::Fft1024 => Function::Fft1024,
    }
}

/// The index an entry gets when no accelerator has its name: beyond any
/// table, so the validator could never take it for a real one.
const UNKNOWN_ACCELERATOR: usize = usize::MAX;

/// Where a board puts virtual devices the file does not place.
#[derive(Clone, Copy)]
struct FabricPlacement {
    /// Accelerator `a`'s interface page is `window + a x 4 KiB`.
    window: u64,
    /// The first INTID given to signals.
    signal_base: u32,
}

impl FabricPlacement {
    fn of(board: &str) -> Self {
        if board == model::ZCU102 {
            FabricPlacement { window: ZCU102_ACCELERATOR_WINDOW, signal_base: ZCU102_SIGNAL_BASE }
        } else {
            FabricPlacement { window: DEFAULT_ACCELERATOR_WINDOW, signal_base: DEFAULT_SIGNAL_BASE }
        }
    }

    /// Accelerator `a`'s interface page.
    fn page(self, a: usize) -> u64 {
        self.window.saturating_add(INTERFACE_PAGE.saturating_mul(a as u64))
    }
}

/// Where a partition sees accelerator `a`'s interface page on `board` when
/// its configuration leaves it at the default.
pub fn default_interface_page(board: &str, a: usize) -> u64 {
    FabricPlacement::of(board).page(a)
}

/// A partition's virtual devices: names resolved, interface pages and
/// signals defaulted. Signals left out are the lowest free INTIDs from the
/// board's first ([`DEFAULT_SIGNAL_BASE`] on `virt`), three per device in
/// file order, skipping every INTID the partition already has: its devices'
/// interrupts, the doorbells of its channels and the signals given
/// explicitly.
fn virtual_devices(
    p: usize,
    raw: &RawPartition,
    fabric: Option<&Fabric>,
    placement: FabricPlacement,
    channels: &[Channel],
    issues: &mut Vec<Issue>,
    unresolved: &mut Vec<(String, &'static str)>,
) -> Vec<VirtualDevice> {
    let mut taken: BTreeSet<u32> =
        raw.device.iter().flat_map(|d| d.interrupts.iter().map(interrupt)).map(|i| i.intid).collect();
    for channel in channels {
        if let ChannelKind::SharedMemory { partitions, doorbell: Some(intid), .. } = &channel.kind {
            if partitions.contains(&p) {
                taken.insert(*intid);
            }
        }
    }
    taken.insert(CONSOLE_INTID);
    taken.extend(raw.accelerators.iter().filter_map(|device| device.signals.as_ref()).flatten());
    let mut free = (placement.signal_base..=*SPI.end()).filter(|intid| !taken.contains(intid));
    let mut devices = Vec::new();
    for (d, raw_device) in raw.accelerators.iter().enumerate() {
        let path = format!("partition[{p}].accelerators[{d}]");
        let accelerator = match fabric {
            // The validator reports a partition with devices and no fabric.
            None => UNKNOWN_ACCELERATOR,
            Some(fabric) => fabric.accelerators.iter().position(|a| a.name == raw_device.name).unwrap_or_else(|| {
                let hint = did_you_mean(&raw_device.name, fabric.accelerators.iter().map(|a| a.name.as_str()));
                let (partition, device) = (&raw.name, &raw_device.name);
                let message =
                    format!("partition \"{partition}\": the fabric has no accelerator named \"{device}\"{hint}");
                issues.push(Issue { path: path.clone(), field: "name", message });
                UNKNOWN_ACCELERATOR
            }),
        };
        if accelerator == UNKNOWN_ACCELERATOR && fabric.is_some() {
            // Its default page and every comparison with it would be made up.
            unresolved.push((path.clone(), ""));
        }
        let signals = match &raw_device.signals {
            Some(given) => <[u32; 3]>::try_from(given.as_slice()).unwrap_or_else(|_| {
                let message = format!(
                    "partition \"{}\" accelerator \"{}\": {} signal(s) given; a virtual device has three, \
                     for IPC_WAIT, IPC_READY and IPC_PREEMPT",
                    raw.name,
                    raw_device.name,
                    given.len()
                );
                issues.push(Issue { path: path.clone(), field: "signals", message });
                unresolved.push((path.clone(), "signals"));
                [0; 3]
            }),
            // Running out leaves 0, which the validator reports as no SPI.
            None => [free.next().unwrap_or(0), free.next().unwrap_or(0), free.next().unwrap_or(0)],
        };
        devices.push(VirtualDevice {
            accelerator,
            ipa: raw_device.ipa.unwrap_or_else(|| placement.page(accelerator)),
            signals,
            deadline_us: raw_device.deadline.map(|deadline| deadline.0),
        });
    }
    devices
}

/// Host address given to a region that found no place: beyond any physical
/// address an AArch64 core can issue.
const UNPLACED: u64 = 0xffff_0000_0000_0000;

fn needs_allocation(raw: &RawMemory) -> bool {
    raw.phys.is_none() && !raw.identity.unwrap_or(false)
}

/// Places every region without a fixed host address, in declaration order,
/// at the lowest 2 MiB-aligned free spot of platform RAM: the partitions'
/// regions first, then the shared-memory channels', then the fabric's
/// memory. Returns the paths of entries that did not fit.
fn allocate(
    system: &mut System,
    raw_config: &RawConfig,
    images: &[Vec<Option<Image>>],
    issues: &mut Vec<Issue>,
) -> Vec<String> {
    let (raw, raw_channels) = (&raw_config.partition, &raw_config.channel);
    let mut taken = vec![system.hypervisor.memory];
    let store = &raw_config.hypervisor.images;
    system.hypervisor.images.size = store.size.map_or_else(|| image_store_bound(images), |size| size.0);
    if store.base.is_some() {
        taken.push(system.hypervisor.images);
    }
    let fixed_fabric = raw_config.fabric.as_ref().is_some_and(|fabric| fabric.memory.base.is_some());
    if let Some(fabric) = system.fabric.as_ref().filter(|_| fixed_fabric) {
        taken.push(fabric.memory);
    }
    for (partition, raw_partition) in system.partitions.iter().zip(raw) {
        let fixed = partition.memory.iter().zip(&raw_partition.memory).filter(|(_, r)| !needs_allocation(r));
        taken.extend(fixed.map(|(region, _)| region.host()));
    }
    for channel in &system.channels {
        if let ChannelKind::SharedMemory { pa, size, .. } = channel.kind {
            if pa != UNPLACED {
                taken.push(Range::new(pa, size));
            }
        }
    }
    let ram = system.platform.ram;
    let mut unallocated = Vec::new();
    let mut place = |path: String, size: u64, pa: &mut u64, taken: &mut Vec<Range>| match lowest_free(ram, taken, size)
    {
        Some(free) => {
            *pa = free;
            taken.push(Range::new(free, size));
        }
        None => {
            let message = format!(
                "no free 2 MiB-aligned space of {size:#x} bytes left in platform RAM {}; \
                 shrink it, enlarge platform.ram, or give it a phys address",
                hex_range(&ram)
            );
            issues.push(Issue { path: path.clone(), field: "size", message });
            // Parked far outside any RAM, so that it cannot be reported
            // as overlapping the regions that did find a place.
            *pa = UNPLACED;
            unallocated.push(path);
        }
    };
    for (p, (partition, raw_partition)) in system.partitions.iter_mut().zip(raw).enumerate() {
        for (m, (region, raw_region)) in partition.memory.iter_mut().zip(&raw_partition.memory).enumerate() {
            if needs_allocation(raw_region) {
                place(format!("partition[{p}].memory[{m}]"), region.size, &mut region.pa, &mut taken);
            }
        }
    }
    for (i, (channel, raw_channel)) in system.channels.iter_mut().zip(raw_channels).enumerate() {
        if let ChannelKind::SharedMemory { pa, size, .. } = &mut channel.kind {
            if raw_channel.phys.is_none() {
                place(format!("channel[{i}]"), *size, pa, &mut taken);
            }
        }
    }
    let devices: usize = system.partitions.iter().map(|p| p.accelerators.len()).sum();
    if let Some(fabric) = system.fabric.as_mut() {
        if raw_config.fabric.as_ref().is_some_and(|fabric| fabric.memory.size.is_none()) {
            fabric.memory.size = Fabric::memory_needed(devices);
        }
        if !fixed_fabric {
            place(FABRIC_MEMORY.into(), fabric.memory.size, &mut fabric.memory.base, &mut taken);
        }
    }
    if store.base.is_none() {
        let images = &mut system.hypervisor.images;
        place(IMAGE_STORE.into(), images.size, &mut images.base, &mut taken);
    }
    unallocated
}

const IMAGE_STORE: &str = "hypervisor.images";

/// Enough image store for every image and device tree: a file holds at
/// least the bytes it loads (an ELF's segments are in it), and each load
/// is padded to 16 bytes; a page per image covers the padding.
fn image_store_bound(images: &[Vec<Option<Image>>]) -> u64 {
    let file_len = |image: &Image| std::fs::metadata(&image.path).map_or(0, |meta| meta.len());
    let bytes: u64 = images
        .iter()
        .map(|slots| {
            let files: u64 =
                slots.iter().flatten().map(|image| file_len(image).next_multiple_of(4 * KIB) + 4 * KIB).sum();
            files + crate::devicetree::DTB_WINDOW + 4 * KIB
        })
        .sum();
    bytes.max(1).next_multiple_of(ALLOCATION_ALIGN)
}

/// The lowest fit is either RAM's first aligned address or the first aligned
/// address after some taken range, so only those need trying.
pub fn lowest_free(ram: Range, taken: &[Range], size: u64) -> Option<u64> {
    let align_up = |value: u64| value.checked_next_multiple_of(ALLOCATION_ALIGN);
    let mut candidates: Vec<u64> =
        std::iter::once(ram.base).chain(taken.iter().map(Range::end)).filter_map(align_up).collect();
    candidates.sort_unstable();
    candidates.into_iter().find(|&base| {
        let wanted = Range::new(base, size);
        base.checked_add(size).is_some() && ram.covers(&wanted) && !taken.iter().any(|t| t.overlaps(&wanted))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_free_skips_taken_ranges_and_aligns() {
        let ram = Range::new(0x4000_0000, 0x1000_0000);
        let taken = [Range::new(0x4000_0000, 0x0200_1000), Range::new(0x4400_0000, MIB)];
        assert_eq!(lowest_free(ram, &taken, MIB), Some(0x4220_0000));
        assert_eq!(lowest_free(ram, &taken, 48 * MIB), Some(0x4420_0000));
        assert_eq!(lowest_free(ram, &taken, 0x1000_0000), None);
    }

    #[test]
    fn overhead_limits_in_basis_points() {
        assert_eq!(basis_points(1.0), 100);
        assert_eq!(basis_points(0.25), 25);
        assert_eq!(basis_points(1.1), 110, "not 111 from 110.00000000000001");
        assert_eq!(basis_points(100.0), 10_000);
        // Below the step or just above 100 %: kept on the side of the range they are on.
        assert_eq!(basis_points(0.001), 1);
        assert_eq!(basis_points(100.001), 10_001);
        for outside in [0.0, -0.0, -5.0, f64::NAN, f64::NEG_INFINITY] {
            assert_eq!(basis_points(outside), 0, "{outside}");
        }
        assert_eq!(basis_points(f64::INFINITY), u32::MAX);
    }

    #[test]
    fn the_default_bitstreams_download_in_table_5_s_times() {
        use partita_core::fabric::bound::reconfig_time;
        let micros: Vec<u64> = DEFAULT_PRRS
            .iter()
            .map(|&(_, _, bytes, _)| reconfig_time(bytes, DEFAULT_FABRIC_BANDWIDTH, 1_000_000))
            .collect();
        assert_eq!(micros, [231, 810, 1_206]);
        // Exactly, not rounded up to them.
        assert!(DEFAULT_PRRS
            .iter()
            .all(|&(_, _, bytes, _)| (bytes * 1_000_000).is_multiple_of(DEFAULT_FABRIC_BANDWIDTH)));
        for (_, _, _, hosts) in DEFAULT_PRRS {
            assert!(hosts.iter().all(|host| DEFAULT_ACCELERATORS.iter().any(|(name, ..)| name == host)));
        }
    }

    #[test]
    fn lowest_free_on_unaligned_ram() {
        let ram = Range::new(0x4010_0000, 0x0100_0000);
        assert_eq!(lowest_free(ram, &[], MIB), Some(0x4020_0000));
        assert_eq!(lowest_free(Range::new(u64::MAX - MIB, MIB), &[], 4 * KIB), None);
    }
}
