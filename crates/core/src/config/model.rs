//! The resolved system model: every address concrete, every default applied.
//!
//! The host CLI builds it from a TOML file, validates it, and serialises it
//! into the boot image; the hypervisor deserialises the very same types.

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

/// The whole system: one platform, several partitions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct System {
    /// Name of the configuration (the file stem), used for output folders.
    pub name: String,
    pub platform: Platform,
    pub hypervisor: Hypervisor,
    pub partitions: Vec<Partition>,
    /// Cyclic schedules; the first is the one the system boots with. Empty:
    /// no pCPU is cyclic, every one runs fixed priority.
    pub plans: Vec<Plan>,
    /// Inter-partition communication, in file order; the hypervisor numbers
    /// channels by their index here.
    pub channels: Vec<Channel>,
    /// The reconfigurable fabric and its accelerators; `None`: there is
    /// none, and no partition has a virtual device.
    pub fabric: Option<Fabric>,
    /// Timing-accurate I/O; `None`: no partition may ask for timed outputs.
    pub timed_io: Option<TimedIo>,
}

/// Timing-accurate I/O (BlueVisor): a GPIO controller (a PL061) that
/// Partita owns and writes at the times partitions ask for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimedIo {
    /// Host-physical base of the controller's 4 KiB of registers.
    pub device: u64,
    /// Furthest ahead of the call a request may be, in microseconds.
    pub horizon_us: u64,
    /// How long before an operation Partita's timer fires, in
    /// microseconds; the pCPU polls the counter for the rest.
    pub lead_us: u64,
    pub grants: Vec<TimedIoGrant>,
}

/// What one partition may drive.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimedIoGrant {
    /// Index into [`System::partitions`].
    pub partition: usize,
    /// Its lines, one bit each (bit n: GPIO n).
    pub pins: u8,
    /// Operations it may have pending at once.
    pub depth: u32,
    /// Guest-physical address of a read-only view of the controller's
    /// registers, where it reads the lines back; `None`: no view.
    pub view: Option<u64>,
}
/// QEMU `virt` with a GICv3 and a PL011.
pub const QEMU_VIRT: &str = "qemu-virt";
/// The Zynq UltraScale+ MPSoC of a ZCU102 (QEMU `xlnx-zcu102`): a GIC-400
/// and Cadence UARTs.
pub const ZCU102: &str = "zcu102";
/// Every board `platform.board` may name.
pub const BOARDS: [&str; 2] = [QEMU_VIRT, ZCU102];

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// Board name, one of [`BOARDS`].
    pub board: String,
    /// Number of physical CPUs Partita brings up.
    pub cpus: u32,
    /// Physical RAM.
    pub ram: Range,
    /// Partita's UART (the board's: a PL011 or a Cadence UART).
    pub console: Range,
    /// GIC distributor registers.
    pub gicd: Range,
    /// The GIC's per-CPU frames: on a GICv3 its redistributors (all CPUs'
    /// frames); on a GICv2 its CPU interface, virtual interface control and
    /// virtual CPU interface (GICC, GICH, GICV), one span from GICC.
    pub gicr: Range,
}

/// Where a GICv2's pages sit in [`Platform::gicr`]'s span, from GICC: the
/// virtual interface control (GICH), then the virtual CPU interface (GICV)
/// that a partition's GICC is mapped to.
pub const GICV2_GICH_OFFSET: u64 = 0x2_0000;
pub const GICV2_GICV_OFFSET: u64 = 0x4_0000;
/// The CPU interface a partition sees on a GICv2 board: two 4 KiB pages
/// (the second holds GICC_DIR), each repeated over 64 KiB as on the
/// GIC-400 of the ZynqMP.
pub const GICV2_GICC_SIZE: u64 = 0x2_0000;

impl Platform {
    /// The board's GIC is a GICv2 (GIC-400): its guests see a GICv2
    /// distributor and a memory-mapped CPU interface.
    pub fn gicv2(&self) -> bool {
        self.board == ZCU102
    }
}

/// Settings of the hypervisor itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hypervisor {
    /// Physical memory reserved for Partita's code, data and tables.
    pub memory: Range,
    /// The image store: physical memory, outside Partita's own and every
    /// partition's, that holds the pristine bytes each partition starts
    /// from (its images and device tree, the boot payload's data section).
    /// The boot loader puts them there; Partita only reads them, at boot
    /// and at every restart, so images of any size cost no hypervisor
    /// memory.
    pub images: Range,
    /// Round-robin quantum when several vCPUs share a pCPU, in microseconds.
    pub quantum_us: u32,
    /// Slots of each pCPU's event-trace ring; 0 turns tracing off.
    pub trace_events: u32,
    /// Share of a partition's slot time that partition switches may take
    /// before `partita check` warns, in basis points (100 = 1 %): an integer
    /// rather than the file's decimal, so that the model keeps `Eq`.
    pub overhead_limit_bp: u32,
    /// Entries of the health monitor's log, which keeps the most recent
    /// events for a system partition to read.
    pub hm_log_entries: u32,
}

/// A half-open address range `[base, base + size)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Range {
    pub base: u64,
    pub size: u64,
}

impl Range {
    pub const fn new(base: u64, size: u64) -> Self {
        Self { base, size }
    }

    /// One past the last byte; saturates so that a bad range never wraps.
    pub const fn end(&self) -> u64 {
        self.base.saturating_add(self.size)
    }

    pub const fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr < self.end()
    }

    /// True when `other` lies entirely inside `self`.
    pub const fn covers(&self, other: &Range) -> bool {
        other.base >= self.base && other.end() <= self.end()
    }

    pub const fn overlaps(&self, other: &Range) -> bool {
        self.size != 0 && other.size != 0 && self.base < other.end() && other.base < self.end()
    }
}

/// How critical a partition is. Later capabilities order interrupt delivery
/// and scheduling by it; the derive order is the criticality order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Criticality {
    Low,
    Medium,
    High,
}

impl Criticality {
    /// The priority a partition of this criticality gets unless it names one.
    pub const fn default_priority(self) -> u8 {
        match self {
            Criticality::Low => 64,
            Criticality::Medium => 128,
            Criticality::High => 192,
        }
    }
}

/// How a partition's interrupts reach it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Delivery {
    /// Through Partita's virtual GIC: every interrupt exits to EL2 and is
    /// injected through a list register.
    #[default]
    Virtual,
    /// Straight from the physical GIC to EL1 on the partition's own
    /// (exclusive) pCPUs: its timers and its SGIs never exit. Partita keeps
    /// group 0 (FIQ) for itself there. `docs/interrupts.md` has the design.
    Direct,
}

/// One partition: an isolated virtual machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    pub name: String,
    pub criticality: Criticality,
    /// Scheduling priority on its pCPUs, 0 (lowest) to 255: the most
    /// urgent runnable vCPU runs, round robin among equals. Defaults follow
    /// the criticality (see [`Criticality::default_priority`]).
    pub priority: u8,
    /// vCPU `i` runs on physical CPU `vcpus[i]`.
    pub vcpus: Vec<u32>,
    /// Each vCPU has its pCPU to itself, so Partita need not keep a
    /// scheduler tick there and can let the guest's WFI sleep in the guest.
    pub exclusive: bool,
    /// How its interrupts reach it; `Direct` needs `exclusive`.
    pub interrupts: Delivery,
    /// What this partition may do to the others by hypercall; a partition
    /// with any right is a system partition.
    pub rights: Rights,
    /// vCPUs that leave their pCPU while a more urgent vCPU needs it (vlk).
    pub migrate: Vec<Migration>,
    /// What each vCPU may use on a fixed-priority pCPU; `None`: no bound,
    /// and no share in that pCPU's utilisation check.
    pub budget: Option<Budget>,
    pub memory: Vec<MemoryRegion>,
    pub devices: Vec<Device>,
    /// Guest-physical address of the emulated PL011 console.
    pub console: u64,
    /// Command line placed in the device tree's `/chosen/bootargs`.
    pub bootargs: String,
    /// What the health monitor does when this partition misbehaves.
    pub health: Health,
    /// Its virtual devices: accelerators of the fabric, each behind one
    /// interface page at a fixed guest-physical address.
    pub accelerators: Vec<VirtualDevice>,
    /// The most Partita may add to one release of a high-criticality
    /// partition's task, in microseconds (Ker-ONE eq. 4, from the board's
    /// profile); `partita check` refuses a configuration over it.
    pub max_added_response_us: Option<u64>,
}

impl Partition {
    /// Whether one of its vCPUs lives on pCPU `cpu` or may migrate there.
    pub fn uses_cpu(&self, cpu: u32) -> bool {
        self.vcpus.contains(&cpu) || self.migrate.iter().any(|m| m.to.contains(&cpu))
    }
}

/// The reconfigurable fabric (Ker-ONE section 4): partially
/// reconfigurable regions (PRRs) and the accelerators they can host,
/// shared by the partitions' virtual devices.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fabric {
    /// Host-physical memory, Partita's alone, that holds what the fabric
    /// keeps per virtual device: its interface page and its saved
    /// accelerator context.
    pub memory: Range,
    /// The reconfiguration port's bandwidth (PCAP), bytes per second: a
    /// PRR's bitstream takes its size over this to download.
    pub bandwidth: u64,
    /// How long a PRR allocated to a client waits for it to start (Hold)
    /// before it becomes Idle again, in microseconds.
    pub hold_us: u64,
    /// The longest the emulated fabric's pCPU goes without looking at its
    /// PRRs, in microseconds: its sleep with nothing due, and the other
    /// cores' share between two of its computing steps.
    pub turn_us: u64,
    /// The pCPU that runs the emulated fabric on a board without
    /// programmable logic (QEMU): no vCPU lives or migrates there.
    pub cpu: u32,
    pub prrs: Vec<Prr>,
    pub accelerators: Vec<Accelerator>,
}

impl Fabric {
    /// Host-physical address of virtual device `g`'s interface page, `g`
    /// counting every partition's devices in order: the pages come first,
    /// one per device, then the contexts.
    pub fn page_of(&self, g: usize) -> u64 {
        self.memory.base + g as u64 * crate::fabric::interface::PAGE_SIZE
    }

    /// Host-physical address of virtual device `g`'s saved context, when
    /// the fabric has `devices` in all.
    pub fn context_of(&self, g: usize, devices: usize) -> u64 {
        self.page_of(devices) + (g * crate::fabric::interface::CONTEXT_SIZE) as u64
    }

    /// The highest of `cpus` pCPUs on which no vCPU of `partitions` lives
    /// or may migrate: where the emulated fabric runs by default.
    pub fn free_cpu(cpus: u32, partitions: &[Partition]) -> Option<u32> {
        (0..cpus).rev().find(|&cpu| partitions.iter().all(|p| !p.uses_cpu(cpu)))
    }

    /// Bytes of `memory` that `devices` virtual devices need: an interface
    /// page and a saved accelerator context each, in whole pages, and never
    /// less than one page, so that a fabric always has a place of its own.
    pub const fn memory_needed(devices: usize) -> u64 {
        let each = crate::fabric::interface::PAGE_SIZE + crate::fabric::interface::CONTEXT_SIZE as u64;
        let page = crate::fabric::interface::PAGE_SIZE;
        let bytes = (devices as u64).saturating_mul(each);
        if bytes <= page {
            page
        } else {
            bytes.div_ceil(page).saturating_mul(page)
        }
    }
}

/// A partially reconfigurable region.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prr {
    pub name: String,
    /// Its share of the fabric's resources: the monitor prefers the
    /// smallest compatible PRR.
    pub size: u32,
    /// Bytes of each of its bitstreams (fixed by the region's area).
    pub bitstream: u64,
    /// The accelerators it can host, by index into `Fabric::accelerators`
    /// (a column of the compatibility table).
    pub hosts: Vec<usize>,
}

/// An accelerator the fabric can load into a PRR.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accelerator {
    pub name: String,
    /// What it computes.
    pub function: Function,
    /// Time to process one frame, in nanoseconds.
    pub frame_ns: u64,
    /// δ_pre: the longest it takes to reach a consistency point once asked
    /// to stop, in nanoseconds.
    pub preempt_ns: u64,
}

/// What an accelerator computes (the fabric's own type).
pub use crate::fabric::compute::Function;

/// A partition's virtual device: accelerator `accelerator` behind an
/// interface page at `ipa`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VirtualDevice {
    /// Index into `Fabric::accelerators`.
    pub accelerator: usize,
    /// Guest-physical address of its 4 KiB interface page.
    pub ipa: u64,
    /// The virtual SPIs that signal IPC_WAIT, IPC_READY and IPC_PREEMPT.
    pub signals: [u32; 3],
    /// The longest allocation latency this partition accepts, in
    /// microseconds: `partita check` rejects a configuration whose bound
    /// exceeds it.
    pub deadline_us: Option<u64>,
}

/// Hypercall rights over other partitions, each granted by the configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rights {
    pub suspend: bool,
    pub resume: bool,
    pub restart: bool,
    pub halt: bool,
    /// Request a plan switch (at the next major frame).
    pub switch_plan: bool,
    /// Read the health monitor's log (every partition's events).
    pub read_hm_log: bool,
}

/// A vCPU that may run elsewhere: when a vCPU of higher priority becomes
/// runnable on its own pCPU, it moves to the first of `to` and shares that
/// pCPU; it comes back when its own pCPU has nothing more urgent to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Migration {
    /// Index into the partition's `vcpus`.
    pub vcpu: u32,
    /// pCPUs it may move to, in order of preference.
    pub to: Vec<u32>,
}

/// `time_us` of processor time in every `period_us`, for each vCPU on its
/// own pCPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    pub time_us: u64,
    pub period_us: u64,
}

/// Access rights of a memory region, as the stage-2 tables enforce them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Perms {
    pub read: bool,
    pub write: bool,
    pub exec: bool,
}

impl Perms {
    pub const RWX: Perms = Perms { read: true, write: true, exec: true };
    pub const RW: Perms = Perms { read: true, write: true, exec: false };
}

/// A region of normal, cacheable RAM given to a partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryRegion {
    /// Guest-physical base address.
    pub ipa: u64,
    /// Host-physical base address (equal to `ipa` for identity regions).
    pub pa: u64,
    pub size: u64,
    pub perms: Perms,
    /// Guest-physical equals host-physical, as passthrough DMA needs.
    pub identity: bool,
}

impl MemoryRegion {
    pub const fn guest(&self) -> Range {
        Range::new(self.ipa, self.size)
    }

    pub const fn host(&self) -> Range {
        Range::new(self.pa, self.size)
    }

    /// Host-physical address of `ipa`, when this region maps it.
    pub fn translate(&self, ipa: u64) -> Option<u64> {
        self.guest().contains(ipa).then(|| self.pa + (ipa - self.ipa))
    }
}

/// A passthrough device: MMIO mapped as device memory, plus its interrupts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    pub name: String,
    /// Device-tree `compatible` strings for the generated node.
    pub compatible: Vec<String>,
    /// Guest-physical base address.
    pub ipa: u64,
    /// Host-physical base address.
    pub pa: u64,
    pub size: u64,
    /// Physical interrupts routed to the partition, each to one of its vCPUs.
    pub interrupts: Vec<Interrupt>,
}

/// One entry of the interrupt routing table: a physical SPI and the vCPU of
/// the device's partition that receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interrupt {
    /// Physical interrupt ID (INTID; SPIs are 32 and up).
    pub intid: u32,
    /// Index into the partition's `vcpus`.
    pub vcpu: u32,
}

impl Device {
    pub const fn host(&self) -> Range {
        Range::new(self.pa, self.size)
    }

    pub const fn guest(&self) -> Range {
        Range::new(self.ipa, self.size)
    }
}

impl Partition {
    /// Host-physical address of a guest-physical RAM address of this partition.
    pub fn translate_ram(&self, ipa: u64) -> Option<u64> {
        self.memory.iter().find_map(|r| r.translate(ipa))
    }

    /// Host-physical address of the buffer `[ipa, ipa + len)` when all of it
    /// lies in one RAM region of this partition (a writable one if `write`):
    /// the only buffers a hypercall copies to or from. A buffer that
    /// straddles two regions is refused even if they are adjacent, since
    /// their host pages need not be.
    pub fn translate_buffer(&self, ipa: u64, len: u64, write: bool) -> Option<u64> {
        let end = ipa.checked_add(len)?;
        let region = self.memory.iter().find(|r| r.guest().contains(ipa) && end <= r.guest().end())?;
        (!write || region.perms.write).then(|| region.pa + (ipa - region.ipa))
    }
}

/// An ARINC 653 style schedule: the pCPUs it runs cyclically and their slots.
/// Several plans may be declared so that a system can switch between modes
/// (XtratuM's plans); a switch takes effect at a major frame boundary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub name: String,
    pub cores: Vec<CyclicCore>,
}

/// One pCPU that runs this plan's slots in a loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CyclicCore {
    pub cpu: u32,
    /// Shared by every cyclic core of the plan, so that they all start their
    /// frames at the same instants.
    pub major_frame_us: u64,
    pub slots: Vec<Slot>,
}

/// A window of the major frame given to one vCPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// Index into [`System::partitions`].
    pub partition: usize,
    /// Index into the partition's `vcpus`.
    pub vcpu: u32,
    /// Offset from the start of the major frame.
    pub start_us: u64,
    pub duration_us: u64,
}

impl Slot {
    /// Saturates so that a corrupt slot never wraps around into the frame.
    pub const fn end_us(&self) -> u64 {
        self.start_us.saturating_add(self.duration_us)
    }

    /// True when the two half-open intervals share a microsecond.
    pub const fn overlaps(&self, other: &Slot) -> bool {
        self.duration_us != 0
            && other.duration_us != 0
            && self.start_us < other.end_us()
            && other.start_us < self.end_us()
    }
}

pub use crate::health::Action;

/// The events the health monitor tells apart, each with its own action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// An access outside the partition's stage-2 mappings.
    pub stage2_fault: Action,
    /// A trapped instruction or system register the partition may not use.
    pub forbidden: Action,
    /// A hypercall that does not exist or that the partition has no right to.
    pub illegal_hypercall: Action,
    /// The partition did not kick its watchdog within `watchdog_us`.
    pub watchdog: Action,
    /// A vCPU used more than its budget in a period.
    pub budget_overrun: Action,
    /// The partition reported an error of its own by hypercall.
    pub reported: Action,
    /// Watchdog period; `None`: the partition has no watchdog.
    pub watchdog_us: Option<u64>,
}

impl Health {
    /// Faults become the guest's own exceptions, as hardware would raise
    /// them; a missed watchdog halts; everything else is only logged.
    pub const DEFAULT: Health = Health {
        stage2_fault: Action::Inject,
        forbidden: Action::Inject,
        illegal_hypercall: Action::Log,
        watchdog: Action::Halt,
        budget_overrun: Action::Log,
        reported: Action::Log,
        watchdog_us: None,
    };

    /// Every event with its action, under the name the configuration uses.
    pub const fn actions(&self) -> [(&'static str, Action); 6] {
        [
            ("stage2-fault", self.stage2_fault),
            ("forbidden", self.forbidden),
            ("illegal-hypercall", self.illegal_hypercall),
            ("watchdog", self.watchdog),
            ("budget-overrun", self.budget_overrun),
            ("reported", self.reported),
        ]
    }
}

impl Default for Health {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A named link between partitions, ARINC 653 style.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channel {
    pub name: String,
    pub kind: ChannelKind,
}

/// Partitions are indices into [`System::partitions`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChannelKind {
    /// One writer, any number of readers; a read returns the latest message,
    /// flagged invalid once it is older than `refresh_us`.
    Sampling { source: usize, destinations: Vec<usize>, max_message: u32, refresh_us: u64 },
    /// One writer, one reader, messages in order; a full queue refuses the
    /// writer rather than drop a message.
    Queuing { source: usize, destination: usize, max_message: u32, depth: u32 },
    /// Pages every listed partition maps at `ipa`; `doorbell` is the virtual
    /// INTID a partition raises at the others by hypercall.
    SharedMemory { partitions: Vec<usize>, ipa: u64, pa: u64, size: u64, read_only: Vec<usize>, doorbell: Option<u32> },
}

/// What one partition may do on a channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub send: bool,
    pub receive: bool,
}

impl ChannelKind {
    /// Where `partition` stands on this channel; `None`: it is not one of
    /// its partitions, and may not name it at all. On a shared-memory
    /// channel `send` means it may write the window, `receive` that it maps
    /// it; any member may ring the doorbell.
    pub fn endpoint(&self, partition: usize) -> Option<Endpoint> {
        let (send, receive) = match self {
            ChannelKind::Sampling { source, destinations, .. } => {
                (*source == partition, destinations.contains(&partition))
            }
            ChannelKind::Queuing { source, destination, .. } => (*source == partition, *destination == partition),
            ChannelKind::SharedMemory { partitions, read_only, .. } => {
                let member = partitions.contains(&partition);
                (member && !read_only.contains(&partition), member)
            }
        };
        (send || receive).then_some(Endpoint { send, receive })
    }

    /// The host pages of a shared-memory channel.
    pub fn shared_window(&self) -> Option<Range> {
        match *self {
            ChannelKind::SharedMemory { pa, size, .. } => Some(Range::new(pa, size)),
            _ => None,
        }
    }

    /// The name the configuration gives the kind.
    pub const fn label(&self) -> &'static str {
        match self {
            ChannelKind::Sampling { .. } => "sampling",
            ChannelKind::Queuing { .. } => "queuing",
            ChannelKind::SharedMemory { .. } => "shared-memory",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn partition_with(memory: Vec<MemoryRegion>) -> Partition {
        Partition {
            name: "p".into(),
            criticality: Criticality::Low,
            priority: 64,
            vcpus: vec![0],
            exclusive: false,
            interrupts: Delivery::Virtual,
            rights: Rights::default(),
            migrate: Vec::new(),
            budget: None,
            memory,
            devices: Vec::new(),
            console: 0x0900_0000,
            bootargs: String::new(),
            health: Health::DEFAULT,
            accelerators: Vec::new(),
            max_added_response_us: None,
        }
    }

    fn region(ipa: u64, pa: u64, size: u64, perms: Perms) -> MemoryRegion {
        MemoryRegion { ipa, pa, size, perms, identity: false }
    }

    #[test]
    fn a_buffer_must_lie_in_one_region_writable_for_a_write() {
        let ro = Perms { read: true, write: false, exec: true };
        let p = partition_with(vec![
            region(0x4000_0000, 0x8000_0000, 0x1000, Perms::RW),
            region(0x4000_1000, 0x9000_0000, 0x1000, ro),
        ]);
        assert_eq!(p.translate_buffer(0x4000_0010, 16, true), Some(0x8000_0010));
        assert_eq!(p.translate_buffer(0x4000_0000, 0x1000, true), Some(0x8000_0000), "the whole region");
        assert_eq!(p.translate_buffer(0x4000_0ff0, 32, false), None, "straddles two regions");
        assert_eq!(p.translate_buffer(0x4000_1000, 8, false), Some(0x9000_0000));
        assert_eq!(p.translate_buffer(0x4000_1000, 8, true), None, "read-only region");
        assert_eq!(p.translate_buffer(0x3fff_fff8, 16, false), None, "starts outside");
        assert_eq!(p.translate_buffer(u64::MAX - 4, 16, false), None, "wraps");
    }

    #[test]
    fn endpoints_follow_the_channel_kind() {
        let sampling = ChannelKind::Sampling { source: 0, destinations: vec![1, 2], max_message: 8, refresh_us: 10 };
        assert_eq!(sampling.endpoint(0), Some(Endpoint { send: true, receive: false }));
        assert_eq!(sampling.endpoint(2), Some(Endpoint { send: false, receive: true }));
        assert_eq!(sampling.endpoint(3), None);
        let queuing = ChannelKind::Queuing { source: 1, destination: 0, max_message: 8, depth: 4 };
        assert_eq!(queuing.endpoint(0), Some(Endpoint { send: false, receive: true }));
        assert_eq!(queuing.endpoint(2), None);
        let shared = ChannelKind::SharedMemory {
            partitions: vec![0, 1],
            ipa: 0,
            pa: 0,
            size: 0x1000,
            read_only: vec![1],
            doorbell: None,
        };
        assert_eq!(shared.endpoint(0), Some(Endpoint { send: true, receive: true }));
        assert_eq!(shared.endpoint(1), Some(Endpoint { send: false, receive: true }));
        assert_eq!(shared.endpoint(2), None);
    }
}
