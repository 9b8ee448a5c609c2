//! Configuration rules that need no file system.
//!
//! The host runs them before it builds an image, and the hypervisor runs them
//! again on the table it decodes at boot, so a stale or tampered payload is
//! refused by the same rules. That is why this module must stay `no_std`,
//! allocate only through `alloc`, and never panic, whatever it is given.
//!
//! Every [`Issue`] names its place with the TOML spelling (`partition[1].memory[0]`
//! plus a field such as `phys`), so the host can point at the line in the file.

use crate::config::model::{
    Budget, Channel, ChannelKind, CyclicCore, Device, Interrupt, MemoryRegion, Migration, Partition, Plan, Range, Slot,
    System,
};
use crate::config::utilisation::{cyclic_cpus, fixed_priority_loads, share_tenths_of_percent, tenths_text};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::ops::RangeInclusive;

/// The only board the hypervisor knows so far.
pub const BOARD: &str = "qemu-virt";
/// Physical CPUs Partita can bring up.
pub const CPUS: RangeInclusive<u32> = 1..=8;
pub const MAX_PARTITIONS: usize = 16;
pub const MAX_VCPUS: usize = 8;
pub const MAX_MEMORY_REGIONS: usize = 8;
pub const MAX_DEVICES: usize = 8;
/// Stage-2 and EL2 tables map 4 KiB pages, so every boundary sits on one.
pub const PAGE_SIZE: u64 = 0x1000;
/// The emulated PL011 of each partition occupies one page.
pub const CONSOLE_SIZE: u64 = PAGE_SIZE;
pub const QUANTUM_US: RangeInclusive<u32> = 100..=1_000_000;
/// Share of slot time that partition switches may take before `partita
/// check` warns, in basis points: above 0, at most everything.
pub const OVERHEAD_LIMIT_BP: RangeInclusive<u32> = 1..=10_000;
/// Slots of one pCPU's trace ring when tracing is on (0 means off).
pub const TRACE_EVENTS: RangeInclusive<u32> = 64..=1_048_576;
/// The trace rings come out of Partita's own memory, which also holds its
/// code, tables and heap, so they may take at most this share of it.
pub const TRACE_MEMORY_DIVISOR: u64 = 4;
/// Shared peripheral interrupts: the only INTIDs that can be routed to one
/// partition (SGIs and PPIs are per-CPU and belong to the hypervisor).
pub const SPI: RangeInclusive<u32> = 32..=1019;
/// Every partition's emulated PL011 raises this INTID (it is also the
/// physical interrupt of Partita's own UART on QEMU `virt`), so no device
/// may pass it through.
pub const CONSOLE_INTID: u32 = 33;
pub const NAME_MAX_LEN: usize = 31;
/// Partita tags its own console lines with this name.
pub const RESERVED_NAME: &str = "partita";
pub const MAX_PLANS: usize = 8;
/// A plan schedules each pCPU at most once.
pub const MAX_CYCLIC_CORES: usize = *CPUS.end() as usize;
/// Slots of one core in one plan. The hypervisor scans them at every slot
/// boundary, so their number bounds that work.
pub const MAX_SLOTS: usize = 64;
pub const MAX_CHANNELS: usize = 64;
/// Bytes of one sampling or queuing message: the hypervisor copies each
/// message through a buffer of its own, so it bounds the copy.
pub const MAX_MESSAGE: RangeInclusive<u32> = 1..=4096;
/// Messages a queuing channel holds.
pub const QUEUE_DEPTH: RangeInclusive<u32> = 1..=1024;
/// A queuing channel's messages (`max_message` x `depth`) live in memory
/// the hypervisor reserves for the channel, so their total is capped.
pub const MAX_QUEUE_BYTES: u64 = 1 << 20;
/// Entries of the health-monitor log.
pub const HM_LOG_ENTRIES: RangeInclusive<u32> = 16..=4096;
/// A watchdog shorter than 1 ms could not be kicked by a guest that is
/// scheduled at all; one longer than a minute detects nothing in time.
pub const WATCHDOG_US: RangeInclusive<u64> = 1_000..=60_000_000;

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// Where, in TOML spelling: `platform.ram`, `partition[1].memory[0]`; empty for the top level.
    pub path: String,
    /// The field inside `path`, e.g. `phys`; empty when the whole entry is meant.
    pub field: &'static str,
    pub message: String,
}

/// Checks every rule and returns all broken ones (empty when the system is valid).
pub fn validate(system: &System) -> Vec<Issue> {
    let mut v = Validator { system, issues: Vec::new() };
    v.platform();
    v.hypervisor();
    v.counts();
    // Pairwise rules are quadratic; on a table far beyond the limits (a
    // corrupt boot payload) they would only add noise and time.
    if v.within_limits() {
        v.partitions();
        v.unique_partition_names();
        v.host_memory_overlaps();
        v.device_overlaps();
        v.interrupt_claims();
        v.exclusive_pcpus();
        v.plans();
        v.budgets();
        v.channels();
    }
    v.issues
}

struct Validator<'a> {
    system: &'a System,
    issues: Vec<Issue>,
}

fn partition_path(p: usize) -> String {
    format!("partition[{p}]")
}

fn memory_path(p: usize, m: usize) -> String {
    format!("partition[{p}].memory[{m}]")
}

fn device_path(p: usize, d: usize) -> String {
    format!("partition[{p}].device[{d}]")
}

fn channel_path(i: usize) -> String {
    format!("channel[{i}]")
}

fn plan_path(i: usize) -> String {
    format!("plan[{i}]")
}

fn core_path(i: usize, c: usize) -> String {
    format!("plan[{i}].core[{c}]")
}

/// How every message names a slot, so the reader finds it without counting
/// tables: `plan "normal" core 2 slot 1 (control/vcpu0, 4000..6000 us)`.
pub fn slot_label(plan: &str, cpu: u32, index: usize, partition: &str, slot: &Slot) -> String {
    let (vcpu, start, end) = (slot.vcpu, slot.start_us, slot.end_us());
    format!("plan \"{plan}\" core {cpu} slot {index} ({partition}/vcpu{vcpu}, {start}..{end} us)")
}

/// One cyclic core of one plan, with how issues name it.
#[derive(Clone, Copy)]
struct CoreAt<'a> {
    /// Index of the plan, then of the core within it.
    i: usize,
    c: usize,
    plan: &'a Plan,
    core: &'a CyclicCore,
}

impl CoreAt<'_> {
    fn path(&self) -> String {
        core_path(self.i, self.c)
    }

    fn label(&self) -> String {
        format!("plan \"{}\" core {}", self.plan.name, self.core.cpu)
    }
}

/// `0x40000000..0x41000000`, the notation of every message.
pub fn hex_range(range: &Range) -> String {
    format!("{:#010x}..{:#010x}", range.base, range.end())
}

fn is_aligned(value: u64) -> bool {
    value & (PAGE_SIZE - 1) == 0
}

fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > NAME_MAX_LEN {
        return Some(format!("name \"{name}\" must have 1 to {NAME_MAX_LEN} characters"));
    }
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-';
    if !name.chars().all(allowed) {
        return Some(format!("name \"{name}\" may only use a-z, 0-9, '_' and '-'"));
    }
    None
}

impl Validator<'_> {
    fn push(&mut self, path: String, field: &'static str, message: String) {
        self.issues.push(Issue { path, field, message });
    }

    /// Base and size of a range: page aligned, size non-zero, no wrap-around.
    fn range(&mut self, path: &str, base_field: &'static str, size_field: &'static str, range: &Range) {
        if !is_aligned(range.base) {
            self.push(path.into(), base_field, format!("{:#x} is not 4 KiB aligned", range.base));
        }
        if range.size == 0 {
            self.push(path.into(), size_field, "size must not be zero".into());
        } else if !is_aligned(range.size) {
            self.push(path.into(), size_field, format!("size {:#x} is not a multiple of 4 KiB", range.size));
        }
        if range.base.checked_add(range.size).is_none() {
            self.push(path.into(), size_field, "range runs past the end of the 64-bit address space".into());
        }
    }

    fn platform(&mut self) {
        let platform = &self.system.platform;
        if platform.board != BOARD {
            let message = format!("board \"{}\" is not supported; the only board is \"{BOARD}\"", platform.board);
            self.push("platform".into(), "board", message);
        }
        if !CPUS.contains(&platform.cpus) {
            let message = format!("{} CPUs; the platform must have 1 to {}", platform.cpus, CPUS.end());
            self.push("platform".into(), "cpus", message);
        }
        self.range("platform.ram", "base", "size", &platform.ram);
        self.range("platform.console", "base", "size", &platform.console);
        self.range("platform.gic", "distributor", "distributor", &platform.gicd);
        self.range("platform.gic", "redistributor", "redistributor", &platform.gicr);
        self.platform_devices_apart();
    }

    fn platform_devices_apart(&mut self) {
        let platform = &self.system.platform;
        let fixed = [
            ("platform.console", "base", "the console", platform.console),
            ("platform.gic", "distributor", "the GIC distributor", platform.gicd),
            ("platform.gic", "redistributor", "the GIC redistributors", platform.gicr),
        ];
        for (i, (path, field, what, range)) in fixed.iter().enumerate() {
            if range.overlaps(&platform.ram) {
                let message =
                    format!("{what} ({}) overlaps platform RAM ({})", hex_range(range), hex_range(&platform.ram));
                self.push((*path).into(), field, message);
            }
            for (_, _, other, other_range) in fixed.iter().take(i) {
                if range.overlaps(other_range) {
                    let message =
                        format!("{what} ({}) overlaps {other} ({})", hex_range(range), hex_range(other_range));
                    self.push((*path).into(), field, message);
                }
            }
        }
    }

    fn hypervisor(&mut self) {
        let hypervisor = &self.system.hypervisor;
        let ram = self.system.platform.ram;
        self.range("hypervisor.memory", "base", "size", &hypervisor.memory);
        if !ram.covers(&hypervisor.memory) {
            let message = format!(
                "hypervisor memory {} is outside platform RAM {}",
                hex_range(&hypervisor.memory),
                hex_range(&ram)
            );
            self.push("hypervisor.memory".into(), "base", message);
        }
        if !QUANTUM_US.contains(&hypervisor.quantum_us) {
            let message = format!(
                "quantum {} us is out of range {}..={} us",
                hypervisor.quantum_us,
                QUANTUM_US.start(),
                QUANTUM_US.end()
            );
            self.push("hypervisor".into(), "quantum_us", message);
        }
        if !OVERHEAD_LIMIT_BP.contains(&hypervisor.overhead_limit_bp) {
            // No value in the message: basis points would misquote a negative
            // or fractional percentage from the file.
            let message = "the overhead limit must be more than 0 % and at most 100 %".into();
            self.push("hypervisor".into(), "overhead_limit_percent", message);
        }
        if !HM_LOG_ENTRIES.contains(&hypervisor.hm_log_entries) {
            let message = format!(
                "{} health-monitor log entries is out of range {}..={}",
                hypervisor.hm_log_entries,
                HM_LOG_ENTRIES.start(),
                HM_LOG_ENTRIES.end()
            );
            self.push("hypervisor".into(), "hm_log_entries", message);
        }
        self.trace();
    }

    /// Issues name the `[trace]` section, where the file sets this value.
    fn trace(&mut self) {
        let events = self.system.hypervisor.trace_events;
        if events == 0 {
            return;
        }
        if !TRACE_EVENTS.contains(&events) {
            let message =
                format!("{events} events per CPU is out of range {}..={}", TRACE_EVENTS.start(), TRACE_EVENTS.end());
            self.push("trace".into(), "events_per_cpu", message);
            return;
        }
        // A CPU count out of range has its own issue, and could overflow the size.
        let cpus = self.system.platform.cpus;
        if !CPUS.contains(&cpus) {
            return;
        }
        let bytes = crate::trace::words(cpus as usize, events as usize) as u64 * 8;
        let allowed = self.system.hypervisor.memory.size / TRACE_MEMORY_DIVISOR;
        if bytes > allowed {
            let message = format!(
                "the trace needs {} KiB ({cpus} CPUs x {events} events), more than a quarter of hypervisor memory ({} KiB)",
                bytes.div_ceil(1024),
                allowed / 1024
            );
            self.push("trace".into(), "events_per_cpu", message);
        }
    }

    fn counts(&mut self) {
        let partitions = &self.system.partitions;
        if partitions.is_empty() {
            self.push(String::new(), "partition", format!("no partitions; a system needs 1 to {MAX_PARTITIONS}"));
        } else if partitions.len() > MAX_PARTITIONS {
            let message = format!("{} partitions; at most {MAX_PARTITIONS} are allowed", partitions.len());
            self.push(String::new(), "partition", message);
        }
        for (p, partition) in partitions.iter().enumerate() {
            self.partition_counts(p, partition);
        }
        self.plan_counts();
        self.channel_counts();
    }

    fn channel_counts(&mut self) {
        let channels = &self.system.channels;
        if channels.len() > MAX_CHANNELS {
            let message = format!("{} channels; at most {MAX_CHANNELS} are allowed", channels.len());
            self.push(String::new(), "channel", message);
        }
        for (i, channel) in channels.iter().enumerate() {
            for (field, list) in endpoint_lists(&channel.kind) {
                if list.len() > MAX_PARTITIONS {
                    let message = format!(
                        "channel \"{}\" lists {} partitions; there are at most {MAX_PARTITIONS}",
                        channel.name,
                        list.len()
                    );
                    self.push(channel_path(i), field, message);
                }
            }
        }
    }

    fn plan_counts(&mut self) {
        let plans = &self.system.plans;
        if plans.len() > MAX_PLANS {
            self.push(String::new(), "plan", format!("{} plans; at most {MAX_PLANS} are allowed", plans.len()));
        }
        for (i, plan) in plans.iter().enumerate() {
            if plan.cores.len() > MAX_CYCLIC_CORES {
                let message = format!(
                    "plan \"{}\" has {} cores; a plan has at most {MAX_CYCLIC_CORES}",
                    plan.name,
                    plan.cores.len()
                );
                self.push(plan_path(i), "core", message);
            }
            for (c, core) in plan.cores.iter().enumerate().filter(|(_, core)| core.slots.len() > MAX_SLOTS) {
                let at = CoreAt { i, c, plan, core };
                let message = format!("{} has {} slots; a core has at most {MAX_SLOTS}", at.label(), core.slots.len());
                self.push(at.path(), "slot", message);
            }
        }
    }

    fn partition_counts(&mut self, p: usize, partition: &Partition) {
        let vcpus = partition.vcpus.len();
        if vcpus == 0 || vcpus > MAX_VCPUS {
            let message = format!("{vcpus} vCPUs; a partition needs 1 to {MAX_VCPUS}");
            self.push(partition_path(p), "cpus", message);
        }
        let regions = partition.memory.len();
        if regions == 0 || regions > MAX_MEMORY_REGIONS {
            let message = format!("{regions} memory regions; a partition needs 1 to {MAX_MEMORY_REGIONS}");
            self.push(partition_path(p), "memory", message);
        }
        if partition.devices.len() > MAX_DEVICES {
            let message = format!("{} devices; at most {MAX_DEVICES} are allowed", partition.devices.len());
            self.push(partition_path(p), "device", message);
        }
    }

    fn within_limits(&self) -> bool {
        let partitions = &self.system.partitions;
        let plans = &self.system.plans;
        partitions.len() <= MAX_PARTITIONS
            && partitions.iter().all(|p| {
                p.vcpus.len() <= MAX_VCPUS && p.memory.len() <= MAX_MEMORY_REGIONS && p.devices.len() <= MAX_DEVICES
            })
            && plans.len() <= MAX_PLANS
            && plans.iter().all(|plan| {
                plan.cores.len() <= MAX_CYCLIC_CORES && plan.cores.iter().all(|core| core.slots.len() <= MAX_SLOTS)
            })
            && self.system.channels.len() <= MAX_CHANNELS
            && self
                .system
                .channels
                .iter()
                .all(|channel| endpoint_lists(&channel.kind).iter().all(|(_, list)| list.len() <= MAX_PARTITIONS))
    }

    fn partitions(&mut self) {
        for (p, partition) in self.system.partitions.iter().enumerate() {
            self.partition_settings(p, partition);
            self.health(p, partition);
            self.vcpus(p, partition);
            self.migrations(p, partition);
            for (m, region) in partition.memory.iter().enumerate() {
                self.memory_region(p, m, region);
            }
            for (d, device) in partition.devices.iter().enumerate() {
                self.device(p, d, device);
            }
            self.unique_device_names(p, partition);
            self.guest_overlaps(p, partition);
        }
    }

    fn partition_settings(&mut self, p: usize, partition: &Partition) {
        if let Some(problem) = name_problem(&partition.name) {
            self.push(partition_path(p), "name", problem);
        } else if partition.name == RESERVED_NAME {
            self.push(partition_path(p), "name", format!("name \"{RESERVED_NAME}\" is reserved for the hypervisor"));
        }
        if !is_aligned(partition.console) {
            self.push(partition_path(p), "console", format!("{:#x} is not 4 KiB aligned", partition.console));
        }
        if partition.rights.switch_plan && self.system.plans.is_empty() {
            let message = "grants \"switch-plan\", but the configuration declares no [[plan]]".into();
            self.push(partition_path(p), "rights", message);
        }
        if partition.bootargs.contains('\0') {
            self.push(partition_path(p), "bootargs", "bootargs must not contain a NUL character".into());
        }
    }

    fn health(&mut self, p: usize, partition: &Partition) {
        let Some(period) = partition.health.watchdog_us else { return };
        if !WATCHDOG_US.contains(&period) {
            let message = format!(
                "partition \"{}\": the watchdog period of {period} us is out of range {}..={} us (1 ms to 60 s)",
                partition.name,
                WATCHDOG_US.start(),
                WATCHDOG_US.end()
            );
            self.push(partition_path(p), "watchdog", message);
        }
    }

    fn vcpus(&mut self, p: usize, partition: &Partition) {
        let cpus = self.system.platform.cpus;
        for (v, &pcpu) in partition.vcpus.iter().enumerate() {
            if pcpu >= cpus {
                let message = format!("vCPU {v} is on pCPU {pcpu}, which does not exist: platform.cpus is {cpus}");
                self.push(partition_path(p), "cpus", message);
            }
            if let Some(first) = partition.vcpus.iter().take(v).position(|&other| other == pcpu) {
                let message = format!(
                    "vCPU {v} and vCPU {first} are both on pCPU {pcpu}; a partition may put only one vCPU on a pCPU"
                );
                self.push(partition_path(p), "cpus", message);
            }
        }
    }

    /// A vCPU may move only between fixed-priority pCPUs that exist and
    /// that no exclusive partition owns; an exclusive partition never moves.
    fn migrations(&mut self, p: usize, partition: &Partition) {
        if partition.migrate.len() > MAX_VCPUS {
            let message = format!("{} entries; at most {MAX_VCPUS} are allowed", partition.migrate.len());
            self.push(partition_path(p), "migrate", message);
            return;
        }
        for (m, migration) in partition.migrate.iter().enumerate() {
            for (field, problem) in self.migration_problems(partition, m, migration) {
                self.push(format!("{}.migrate[{m}]", partition_path(p)), field, problem);
            }
        }
    }

    fn migration_problems(
        &self,
        partition: &Partition,
        m: usize,
        migration: &Migration,
    ) -> Vec<(&'static str, String)> {
        let cyclic = |cpu: u32| self.system.plans.first().is_some_and(|plan| plan.cores.iter().any(|c| c.cpu == cpu));
        let exclusive_owner = |cpu: u32| self.system.partitions.iter().find(|o| o.exclusive && o.vcpus.contains(&cpu));
        let vcpu = migration.vcpu;
        let Some(&home) = partition.vcpus.get(vcpu as usize) else {
            return alloc::vec![(
                "vcpu",
                format!("vCPU {vcpu} does not exist: the partition has {}", partition.vcpus.len())
            )];
        };
        let mut problems = Vec::new();
        if partition.exclusive {
            problems.push(("vcpu", "an exclusive partition's vCPUs never leave their pCPUs".into()));
        }
        if partition.migrate.iter().take(m).any(|other| other.vcpu == vcpu) {
            problems.push(("vcpu", format!("vCPU {vcpu} is listed twice")));
        }
        if cyclic(home) {
            problems.push(("vcpu", format!("vCPU {vcpu} is on pCPU {home}, which a plan runs cyclically")));
        }
        if migration.to.is_empty() || migration.to.len() > MAX_VCPUS {
            problems.push(("to", format!("{} pCPUs listed; 1 to {MAX_VCPUS} are allowed", migration.to.len())));
        }
        for &cpu in migration.to.iter().take(MAX_VCPUS) {
            let problem = if cpu >= self.system.platform.cpus {
                format!("pCPU {cpu} does not exist: platform.cpus is {}", self.system.platform.cpus)
            } else if cpu == home {
                format!("pCPU {cpu} is vCPU {vcpu}'s own")
            } else if cyclic(cpu) {
                format!("pCPU {cpu} is run cyclically by a plan")
            } else if let Some(owner) = exclusive_owner(cpu) {
                format!("pCPU {cpu} belongs to exclusive partition \"{}\"", owner.name)
            } else {
                continue;
            };
            problems.push(("to", problem));
        }
        problems
    }

    fn memory_region(&mut self, p: usize, m: usize, region: &MemoryRegion) {
        let path = memory_path(p, m);
        self.range(&path, "base", "size", &region.guest());
        if !is_aligned(region.pa) {
            self.push(path.clone(), "phys", format!("{:#x} is not 4 KiB aligned", region.pa));
        }
        if !region.perms.read {
            self.push(path.clone(), "perms", "permissions must include read (\"r\")".into());
        }
        if region.identity && region.pa != region.ipa {
            let message = format!(
                "identity region must have phys == base, but phys is {:#x} and base {:#x}",
                region.pa, region.ipa
            );
            self.push(path.clone(), "phys", message);
        }
        self.memory_region_host(&path, region);
    }

    fn memory_region_host(&mut self, path: &str, region: &MemoryRegion) {
        let ram = self.system.platform.ram;
        let host = region.host();
        if !ram.covers(&host) {
            let message = format!("memory region {} is outside platform RAM {}", hex_range(&host), hex_range(&ram));
            self.push(path.into(), "phys", message);
        }
        let hypervisor = self.system.hypervisor.memory;
        if host.overlaps(&hypervisor) {
            let message = format!("memory region overlaps hypervisor memory ({})", hex_range(&hypervisor));
            self.push(path.into(), "phys", message);
        }
    }

    fn device(&mut self, p: usize, d: usize, device: &Device) {
        let path = device_path(p, d);
        if let Some(problem) = name_problem(&device.name) {
            self.push(path.clone(), "name", problem);
        }
        self.range(&path, "base", "size", &device.guest());
        if !is_aligned(device.pa) {
            self.push(path.clone(), "phys", format!("{:#x} is not 4 KiB aligned", device.pa));
        }
        self.compatible(&path, device);
        self.interrupts(p, &path, device);
        self.device_host_fixed(&path, device);
    }

    fn interrupts(&mut self, p: usize, path: &str, device: &Device) {
        let vcpus = self.system.partitions.get(p).map_or(0, |partition| partition.vcpus.len());
        for &Interrupt { intid, vcpu } in &device.interrupts {
            if intid == CONSOLE_INTID {
                let message = format!("interrupt {intid} is reserved for the partition's emulated console");
                self.push(path.into(), "interrupts", message);
            } else if !SPI.contains(&intid) {
                let message = format!(
                    "interrupt {intid} is not an SPI; only {}..={} can be passed through",
                    SPI.start(),
                    SPI.end()
                );
                self.push(path.into(), "interrupts", message);
            }
            // The hypervisor indexes the partition's vCPUs with this number.
            if vcpu as usize >= vcpus {
                let message = format!(
                    "interrupt {intid} is routed to vCPU {vcpu}, but partition \"{}\" has {vcpus} vCPU(s): \
                     nobody would own it",
                    self.partition_name(p)
                );
                self.push(path.into(), "interrupts", message);
            }
        }
    }

    fn compatible(&mut self, path: &str, device: &Device) {
        if device.compatible.is_empty() {
            self.push(path.into(), "compatible", "at least one compatible string is required".into());
        }
        // Each string becomes NUL-terminated text in the device tree.
        let printable = |s: &String| !s.is_empty() && s.bytes().all(|b| (0x20..0x7f).contains(&b));
        if let Some(bad) = device.compatible.iter().find(|s| !printable(s)) {
            let message = format!("compatible string {bad:?} must be non-empty printable ASCII");
            self.push(path.into(), "compatible", message);
        }
    }

    fn device_host_fixed(&mut self, path: &str, device: &Device) {
        let platform = &self.system.platform;
        let host = device.host();
        let fixed = [
            ("platform RAM", platform.ram),
            ("Partita's console", platform.console),
            ("the GIC distributor", platform.gicd),
            ("the GIC redistributors", platform.gicr),
        ];
        for (what, range) in fixed {
            if host.overlaps(&range) {
                let message = format!("device {} overlaps {what} ({})", hex_range(&host), hex_range(&range));
                self.push(path.into(), "phys", message);
            }
        }
    }

    fn unique_device_names(&mut self, p: usize, partition: &Partition) {
        for (d, device) in partition.devices.iter().enumerate() {
            let earlier = partition.devices.iter().take(d).position(|other| other.name == device.name);
            if let Some(first) = earlier {
                let message = format!("duplicate device name \"{}\" (also device[{first}])", device.name);
                self.push(device_path(p, d), "name", message);
            }
        }
    }

    fn unique_partition_names(&mut self) {
        let partitions = &self.system.partitions;
        for (p, partition) in partitions.iter().enumerate() {
            if let Some(first) = partitions.iter().take(p).position(|other| other.name == partition.name) {
                let message = format!("duplicate partition name \"{}\" (also partition[{first}])", partition.name);
                self.push(partition_path(p), "name", message);
            }
        }
    }

    /// RAM, devices and the console must not share guest-physical addresses,
    /// nor hide the emulated GIC, which guests find at the platform's addresses.
    fn guest_overlaps(&mut self, p: usize, partition: &Partition) {
        let windows = guest_windows(p, partition);
        let platform = &self.system.platform;
        let gic = [("the virtual GIC distributor", platform.gicd), ("the virtual GIC redistributors", platform.gicr)];
        for window in &windows {
            for (label, range) in gic.iter().filter(|(_, range)| range.overlaps(&window.range)) {
                let message =
                    format!("{} overlaps {label} ({}) in guest-physical space", window.what, hex_range(range));
                self.push(window.path.clone(), window.field, message);
            }
        }
        for (i, window) in windows.iter().enumerate() {
            for other in windows.iter().take(i) {
                if window.range.overlaps(&other.range) {
                    let message = format!(
                        "{} overlaps {} ({}) in guest-physical space",
                        window.what,
                        other.label,
                        hex_range(&other.range)
                    );
                    self.push(window.path.clone(), window.field, message);
                }
            }
        }
    }

    /// Host-physical RAM belongs to exactly one partition region.
    fn host_memory_overlaps(&mut self) {
        let regions = all_memory(self.system);
        for (i, (p, m, region)) in regions.iter().enumerate() {
            for (q, n, other) in regions.iter().take(i) {
                if region.host().overlaps(&other.host()) {
                    let name = self.partition_name(*q);
                    let message = format!(
                        "memory region overlaps partition \"{name}\" memory[{n}] ({})",
                        hex_range(&other.host())
                    );
                    self.push(memory_path(*p, *m), "phys", message);
                }
            }
        }
    }

    /// A device's registers are passed through to one partition only.
    fn device_overlaps(&mut self) {
        let devices = all_devices(self.system);
        for (i, (p, d, device)) in devices.iter().enumerate() {
            for (q, _, other) in devices.iter().take(i) {
                if device.host().overlaps(&other.host()) {
                    let name = self.partition_name(*q);
                    let message = format!(
                        "device overlaps partition \"{name}\" device \"{}\" ({})",
                        other.name,
                        hex_range(&other.host())
                    );
                    self.push(device_path(*p, *d), "phys", message);
                }
            }
        }
    }

    /// Each physical interrupt is routed to exactly one partition.
    fn interrupt_claims(&mut self) {
        let mut owners: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
        for (p, d, device) in all_devices(self.system) {
            for &Interrupt { intid, .. } in &device.interrupts {
                if let Some(&(q, e)) = owners.get(&intid) {
                    let message = format!(
                        "interrupt {intid} is already claimed by partition \"{}\" device \"{}\"",
                        self.partition_name(q),
                        self.device_name(q, e)
                    );
                    self.push(device_path(p, d), "interrupts", message);
                } else {
                    owners.insert(intid, (p, d));
                }
            }
        }
    }

    /// Partita keeps no scheduler tick on an exclusive partition's pCPUs and
    /// lets its guest's WFI sleep there, so another vCPU on one of them
    /// would never be scheduled.
    fn exclusive_pcpus(&mut self) {
        let partitions = &self.system.partitions;
        for (p, partition) in partitions.iter().enumerate().filter(|(_, partition)| partition.exclusive) {
            for (v, &pcpu) in partition.vcpus.iter().enumerate() {
                let others = partitions.iter().enumerate().filter(|&(q, _)| q != p).map(|(_, other)| other);
                for other in others {
                    if let Some(w) = other.vcpus.iter().position(|&other_pcpu| other_pcpu == pcpu) {
                        let message = format!(
                            "partition \"{}\" is exclusive, but its vCPU {v} shares pCPU {pcpu} \
                             with partition \"{}\" vCPU {w}",
                            partition.name, other.name
                        );
                        self.push(partition_path(p), "exclusive", message);
                    }
                }
            }
        }
    }

    fn plans(&mut self) {
        let plans = &self.system.plans;
        for (i, plan) in plans.iter().enumerate() {
            self.plan_name(i, plan);
            for (c, core) in plan.cores.iter().enumerate() {
                self.cyclic_core(CoreAt { i, c, plan, core });
            }
            self.shared_major_frame(i, plan);
        }
        self.same_cores_in_every_plan();
        self.exclusive_not_cyclic();
    }

    fn plan_name(&mut self, i: usize, plan: &Plan) {
        if let Some(problem) = name_problem(&plan.name) {
            self.push(plan_path(i), "name", problem);
        }
        if let Some(first) = self.system.plans.iter().take(i).position(|other| other.name == plan.name) {
            self.push(plan_path(i), "name", format!("duplicate plan name \"{}\" (also plan[{first}])", plan.name));
        }
    }

    fn cyclic_core(&mut self, at: CoreAt) {
        let cpus = self.system.platform.cpus;
        let cpu = at.core.cpu;
        if cpu >= cpus {
            let message = format!("{}: pCPU {cpu} does not exist: platform.cpus is {cpus}", at.label());
            self.push(at.path(), "cpu", message);
        }
        if let Some(first) = at.plan.cores.iter().take(at.c).position(|other| other.cpu == cpu) {
            let message = format!("plan \"{}\" lists core {cpu} twice (also core[{first}])", at.plan.name);
            self.push(at.path(), "cpu", message);
        }
        if at.core.major_frame_us == 0 {
            self.push(at.path(), "major_frame_us", format!("{}: the major frame must be longer than 0 us", at.label()));
        }
        for s in 0..at.core.slots.len() {
            self.slot(at, s);
        }
    }

    fn slot(&mut self, at: CoreAt, s: usize) {
        let slot = &at.core.slots[s];
        let path = format!("{}.slot[{s}]", at.path());
        let label = slot_label(&at.plan.name, at.core.cpu, s, self.partition_name(slot.partition), slot);
        self.slot_timing(at, s, &path, &label);
        self.slot_owner(at, slot, &path, &label);
    }

    fn slot_timing(&mut self, at: CoreAt, s: usize, path: &str, label: &str) {
        let slot = &at.core.slots[s];
        let frame = at.core.major_frame_us;
        if slot.duration_us == 0 {
            self.push(path.into(), "duration_us", format!("{label} has a duration of 0 us; it must be longer"));
        } else if frame != 0 && slot.end_us() > frame {
            // A slot that even starts outside the frame is fixed at its start.
            let field = if slot.start_us >= frame { "start_us" } else { "duration_us" };
            self.push(path.into(), field, format!("{label} ends beyond the major frame ({frame} us)"));
        }
        if let Some(first) = at.core.slots.iter().take(s).position(|other| other.overlaps(slot)) {
            let other = &at.core.slots[first];
            let message = format!("{label} overlaps slot {first} ({}..{} us)", other.start_us, other.end_us());
            self.push(path.into(), "start_us", message);
        }
    }

    /// The slot's vCPU must exist and be pinned to the slot's core: the
    /// hypervisor runs a vCPU only on its own pCPU.
    fn slot_owner(&mut self, at: CoreAt, slot: &Slot, path: &str, label: &str) {
        let partitions = &self.system.partitions;
        let Some(partition) = partitions.get(slot.partition) else {
            let message =
                format!("{label}: partition {} does not exist; there are {}", slot.partition, partitions.len());
            self.push(path.into(), "partition", message);
            return;
        };
        let vcpu = slot.vcpu;
        let Some(&pcpu) = partition.vcpus.get(vcpu as usize) else {
            let message = format!(
                "{label}: partition \"{}\" has {} vCPU(s), so vCPU {vcpu} does not exist",
                partition.name,
                partition.vcpus.len()
            );
            self.push(path.into(), "vcpu", message);
            return;
        };
        if pcpu != at.core.cpu {
            let message = format!(
                "{label}: vCPU {vcpu} of partition \"{}\" is pinned to pCPU {pcpu}, not to core {}",
                partition.name, at.core.cpu
            );
            self.push(path.into(), "vcpu", message);
        }
    }

    /// XtratuM: all cores under cyclic scheduling share the major frame, so
    /// their frames start together and a plan switch happens on all at once.
    fn shared_major_frame(&mut self, i: usize, plan: &Plan) {
        let Some(first) = plan.cores.first() else { return };
        for (c, core) in plan.cores.iter().enumerate().skip(1) {
            if core.major_frame_us != first.major_frame_us {
                let at = CoreAt { i, c, plan, core };
                let message = format!(
                    "{} has a major frame of {} us, but core {} has {} us; all cyclic cores of a plan share one",
                    at.label(),
                    core.major_frame_us,
                    first.cpu,
                    first.major_frame_us
                );
                self.push(at.path(), "major_frame_us", message);
            }
        }
    }

    /// A plan switch changes slots, not policies: a core that became cyclic
    /// (or stopped being) would change scheduler under running vCPUs.
    fn same_cores_in_every_plan(&mut self) {
        let Some((first, rest)) = self.system.plans.split_first() else { return };
        let has = |plan: &Plan, cpu: u32| plan.cores.iter().any(|core| core.cpu == cpu);
        let differ = |cpu: u32, cyclic: &Plan, other: &Plan| {
            format!(
                "core {cpu} is cyclic in plan \"{}\" but not in plan \"{}\"; every plan must schedule the same cores",
                cyclic.name, other.name
            )
        };
        for (i, plan) in rest.iter().enumerate().map(|(i, plan)| (i + 1, plan)) {
            for (c, core) in plan.cores.iter().enumerate().filter(|(_, core)| !has(first, core.cpu)) {
                self.push(core_path(i, c), "cpu", differ(core.cpu, plan, first));
            }
            for core in first.cores.iter().filter(|core| !has(plan, core.cpu)) {
                self.push(plan_path(i), "core", differ(core.cpu, first, plan));
            }
        }
    }

    /// An exclusive partition's pCPUs keep no scheduler at all.
    fn exclusive_not_cyclic(&mut self) {
        let (partitions, plans) = (&self.system.partitions, &self.system.plans);
        for (p, partition) in partitions.iter().enumerate().filter(|(_, partition)| partition.exclusive) {
            for (v, &pcpu) in partition.vcpus.iter().enumerate() {
                let cyclic = plans.iter().find(|plan| plan.cores.iter().any(|core| core.cpu == pcpu));
                if let Some(plan) = cyclic {
                    let message = format!(
                        "partition \"{}\" is exclusive, but its vCPU {v} is on pCPU {pcpu}, \
                         which plan \"{}\" schedules cyclically",
                        partition.name, plan.name
                    );
                    self.push(partition_path(p), "exclusive", message);
                }
            }
        }
    }

    fn budgets(&mut self) {
        let cyclic = cyclic_cpus(self.system);
        for (p, partition) in self.system.partitions.iter().enumerate() {
            let Some(budget) = &partition.budget else { continue };
            self.budget(p, partition, budget);
            let pcpus = &partition.vcpus;
            if !pcpus.is_empty() && pcpus.iter().all(|pcpu| cyclic.contains(pcpu)) {
                let list: Vec<String> = pcpus.iter().map(|pcpu| format!("{pcpu}")).collect();
                let message = format!(
                    "partition \"{}\" has a budget, but all its vCPUs are on cyclic pCPUs ({}), where the \
                     plan's slots bound their time; a budget applies only on fixed-priority pCPUs",
                    partition.name,
                    list.join(", ")
                );
                self.push(partition_path(p), "budget", message);
            }
        }
        self.fixed_priority_utilisation();
    }

    fn budget(&mut self, p: usize, partition: &Partition, budget: &Budget) {
        let path = format!("{}.budget", partition_path(p));
        let name = &partition.name;
        if budget.time_us == 0 {
            self.push(path.clone(), "time", format!("partition \"{name}\": the budget time must be longer than 0 us"));
        }
        if budget.period_us == 0 {
            let message = format!("partition \"{name}\": the budget period must be longer than 0 us");
            self.push(path.clone(), "period", message);
        }
        if budget.time_us > budget.period_us && budget.period_us != 0 {
            let message = format!(
                "partition \"{name}\": the budget time ({} us) is longer than its period ({} us)",
                budget.time_us, budget.period_us
            );
            self.push(path, "time", message);
        }
    }

    /// The budgets of the vCPUs that share a fixed-priority pCPU must fit in
    /// it together, or no priority order can give each its time. Reported at
    /// the last partition in the file that takes a share, where the sum
    /// becomes complete.
    fn fixed_priority_utilisation(&mut self) {
        for load in fixed_priority_loads(self.system) {
            if !load.utilisation.exceeds_one() {
                continue;
            }
            let shares: Vec<String> = load
                .budgeted
                .iter()
                .filter_map(|&p| {
                    let partition = self.system.partitions.get(p)?;
                    let share = share_tenths_of_percent(partition.budget.as_ref()?);
                    Some(format!("{} {} %", partition.name, tenths_text(share)))
                })
                .collect();
            let message = format!(
                "pCPU {} is over-subscribed: the budgets of its vCPUs add up to {} % ({}), more than 100 %",
                load.cpu,
                tenths_text(load.utilisation.tenths_of_percent()),
                shares.join(", ")
            );
            let last = load.budgeted.last().copied().unwrap_or_default();
            self.push(partition_path(last), "budget", message);
        }
    }

    fn channels(&mut self) {
        let system = self.system;
        for (i, channel) in system.channels.iter().enumerate() {
            let path = channel_path(i);
            self.channel_name(i, channel);
            let label = format!("channel \"{}\"", channel.name);
            // Rules between endpoints would only restate a missing partition.
            let known = self.channel_endpoints_exist(&path, &label, &channel.kind);
            match &channel.kind {
                &ChannelKind::Sampling { source, ref destinations, max_message, refresh_us } => {
                    self.message_size(&path, &label, max_message);
                    if refresh_us == 0 {
                        self.push(
                            path.clone(),
                            "refresh",
                            format!("{label}: the refresh period must be longer than 0 us"),
                        );
                    }
                    if destinations.is_empty() {
                        let message = format!("{label} has no destination; a sampling channel needs 1 or more readers");
                        self.push(path.clone(), "destinations", message);
                    }
                    if known {
                        self.sampling_directions(&path, &label, source, destinations);
                    }
                }
                &ChannelKind::Queuing { source, destination, max_message, depth } => {
                    self.message_size(&path, &label, max_message);
                    self.queue_depth(&path, &label, max_message, depth);
                    if known && source == destination {
                        let message = format!(
                            "{label}: partition \"{}\" is both the source and the destination",
                            self.partition_name(source)
                        );
                        self.push(path.clone(), "destination", message);
                    }
                }
                ChannelKind::SharedMemory { .. } => self.shared_memory(&path, &label, &channel.kind, known),
            }
        }
        self.channel_pairs();
    }

    fn channel_name(&mut self, i: usize, channel: &Channel) {
        if let Some(problem) = name_problem(&channel.name) {
            self.push(channel_path(i), "name", problem);
        }
        if let Some(first) = self.system.channels.iter().take(i).position(|other| other.name == channel.name) {
            let message = format!("duplicate channel name \"{}\" (also channel[{first}])", channel.name);
            self.push(channel_path(i), "name", message);
        }
    }

    fn channel_endpoints_exist(&mut self, path: &str, label: &str, kind: &ChannelKind) -> bool {
        let count = self.system.partitions.len();
        let mut known = true;
        for (field, p) in endpoints(kind) {
            if p >= count {
                let message = format!("{label}: partition {p} does not exist; there are {count}");
                self.push(path.into(), field, message);
                known = false;
            }
        }
        known
    }

    fn sampling_directions(&mut self, path: &str, label: &str, source: usize, destinations: &[usize]) {
        if destinations.contains(&source) {
            let message =
                format!("{label}: partition \"{}\" is both the source and a destination", self.partition_name(source));
            self.push(path.into(), "destinations", message);
        }
        self.listed_once(path, "destinations", label, destinations);
    }

    fn listed_once(&mut self, path: &str, field: &'static str, label: &str, list: &[usize]) {
        for (k, &p) in list.iter().enumerate() {
            if list.iter().take(k).any(|&other| other == p) {
                let message = format!("{label} lists partition \"{}\" twice in {field}", self.partition_name(p));
                self.push(path.into(), field, message);
            }
        }
    }

    fn message_size(&mut self, path: &str, label: &str, max_message: u32) {
        if !MAX_MESSAGE.contains(&max_message) {
            let message = format!(
                "{label}: a message of {max_message} bytes is out of range {}..={} bytes",
                MAX_MESSAGE.start(),
                MAX_MESSAGE.end()
            );
            self.push(path.into(), "max_message", message);
        }
    }

    fn queue_depth(&mut self, path: &str, label: &str, max_message: u32, depth: u32) {
        if !QUEUE_DEPTH.contains(&depth) {
            let message = format!(
                "{label}: a depth of {depth} messages is out of range {}..={}",
                QUEUE_DEPTH.start(),
                QUEUE_DEPTH.end()
            );
            self.push(path.into(), "depth", message);
            return;
        }
        let bytes = u64::from(max_message) * u64::from(depth);
        if MAX_MESSAGE.contains(&max_message) && bytes > MAX_QUEUE_BYTES {
            let message = format!(
                "{label}: {depth} messages of {max_message} bytes take {} KiB; a queue may take at most {} KiB",
                bytes.div_ceil(1024),
                MAX_QUEUE_BYTES / 1024
            );
            self.push(path.into(), "depth", message);
        }
    }

    fn shared_memory(&mut self, path: &str, label: &str, kind: &ChannelKind, known: bool) {
        let &ChannelKind::SharedMemory { ref partitions, ipa, pa, size, ref read_only, doorbell } = kind else {
            return;
        };
        if partitions.len() < 2 {
            let message = format!("{label} has {} partition(s); shared memory needs 2 or more", partitions.len());
            self.push(path.into(), "partitions", message);
        }
        let guest = Range::new(ipa, size);
        self.range(path, "base", "size", &guest);
        if !is_aligned(pa) {
            self.push(path.into(), "phys", format!("{pa:#x} is not 4 KiB aligned"));
        }
        self.shared_memory_host(path, label, Range::new(pa, size));
        if let Some(intid) = doorbell {
            self.doorbell_range(path, label, intid);
        }
        if !known {
            return;
        }
        self.listed_once(path, "partitions", label, partitions);
        self.read_only(path, label, partitions, read_only);
        for (k, &p) in partitions.iter().enumerate() {
            if partitions.iter().take(k).any(|&other| other == p) {
                continue;
            }
            self.shared_memory_guest(path, label, p, guest);
            if let Some(intid) = doorbell {
                self.doorbell_passthrough(path, label, p, intid);
            }
        }
    }

    fn read_only(&mut self, path: &str, label: &str, partitions: &[usize], read_only: &[usize]) {
        for &p in read_only {
            if !partitions.contains(&p) {
                let message = format!(
                    "{label}: partition \"{}\" is read-only but does not map the channel: it is not in partitions",
                    self.partition_name(p)
                );
                self.push(path.into(), "read_only", message);
            }
        }
        self.listed_once(path, "read_only", label, read_only);
        if !partitions.is_empty() && partitions.iter().all(|p| read_only.contains(p)) {
            let message = format!("{label}: every partition maps it read-only, so nobody could write to it");
            self.push(path.into(), "read_only", message);
        }
    }

    fn shared_memory_host(&mut self, path: &str, label: &str, host: Range) {
        let ram = self.system.platform.ram;
        if !ram.covers(&host) {
            let message =
                format!("{label}: host memory {} is outside platform RAM {}", hex_range(&host), hex_range(&ram));
            self.push(path.into(), "phys", message);
        }
        let hypervisor = self.system.hypervisor.memory;
        if host.overlaps(&hypervisor) {
            let message = format!("{label}: host memory overlaps hypervisor memory ({})", hex_range(&hypervisor));
            self.push(path.into(), "phys", message);
        }
        for (q, m, region) in all_memory(self.system) {
            if host.overlaps(&region.host()) {
                let message = format!(
                    "{label}: host memory {} overlaps partition \"{}\" memory[{m}] ({})",
                    hex_range(&host),
                    self.partition_name(q),
                    hex_range(&region.host())
                );
                self.push(path.into(), "phys", message);
            }
        }
    }

    /// Each partition maps the pages at `base`, so they must be free in
    /// every one of them.
    fn shared_memory_guest(&mut self, path: &str, label: &str, p: usize, guest: Range) {
        let Some(partition) = self.system.partitions.get(p) else { return };
        let platform = &self.system.platform;
        let gic = [("the virtual GIC distributor", platform.gicd), ("the virtual GIC redistributors", platform.gicr)];
        let windows = guest_windows(p, partition);
        let clashes = windows.iter().map(|w| (w.label.as_str(), w.range)).chain(gic);
        for (what, range) in clashes.filter(|(_, range)| range.overlaps(&guest)) {
            let message = format!(
                "{label} at {} overlaps {what} ({}) of partition \"{}\" in guest-physical space",
                hex_range(&guest),
                hex_range(&range),
                partition.name
            );
            self.push(path.into(), "base", message);
        }
    }

    fn doorbell_range(&mut self, path: &str, label: &str, intid: u32) {
        if intid == CONSOLE_INTID {
            let message = format!("{label}: doorbell INTID {intid} is the emulated console's");
            self.push(path.into(), "doorbell_intid", message);
        } else if !SPI.contains(&intid) {
            let message =
                format!("{label}: doorbell INTID {intid} is out of range {}..={} (an SPI)", SPI.start(), SPI.end());
            self.push(path.into(), "doorbell_intid", message);
        }
    }

    /// The doorbell is injected into the partition's virtual GIC, where a
    /// passthrough SPI keeps its physical number.
    fn doorbell_passthrough(&mut self, path: &str, label: &str, p: usize, intid: u32) {
        let Some(partition) = self.system.partitions.get(p) else { return };
        for device in partition.devices.iter().filter(|d| d.interrupts.iter().any(|irq| irq.intid == intid)) {
            let message = format!(
                "{label}: doorbell INTID {intid} is already partition \"{}\" device \"{}\"'s interrupt",
                partition.name, device.name
            );
            self.push(path.into(), "doorbell_intid", message);
        }
    }

    /// Shared-memory channels own their host pages alone, and a doorbell
    /// names one channel.
    fn channel_pairs(&mut self) {
        let channels = &self.system.channels;
        for (i, channel) in channels.iter().enumerate() {
            let ChannelKind::SharedMemory { partitions, ipa, pa, size, doorbell, .. } = &channel.kind else { continue };
            for other in channels.iter().take(i) {
                let ChannelKind::SharedMemory {
                    partitions: other_partitions,
                    ipa: other_ipa,
                    pa: other_pa,
                    size: other_size,
                    doorbell: other_doorbell,
                    ..
                } = &other.kind
                else {
                    continue;
                };
                let label = format!("channel \"{}\"", channel.name);
                let (host, other_host) = (Range::new(*pa, *size), Range::new(*other_pa, *other_size));
                if host.overlaps(&other_host) {
                    let message = format!(
                        "{label}: host memory overlaps channel \"{}\" ({})",
                        other.name,
                        hex_range(&other_host)
                    );
                    self.push(channel_path(i), "phys", message);
                }
                let (guest, other_guest) = (Range::new(*ipa, *size), Range::new(*other_ipa, *other_size));
                let count = self.system.partitions.len();
                let common = partitions.iter().find(|&&p| p < count && other_partitions.contains(&p));
                if let Some(&p) = common.filter(|_| guest.overlaps(&other_guest)) {
                    let message = format!(
                        "{label} at {} overlaps channel \"{}\" ({}) in partition \"{}\"'s guest-physical space",
                        hex_range(&guest),
                        other.name,
                        hex_range(&other_guest),
                        self.partition_name(p)
                    );
                    self.push(channel_path(i), "base", message);
                }
                if doorbell.is_some() && doorbell == other_doorbell {
                    let message = format!(
                        "{label}: doorbell INTID {} is already channel \"{}\"'s",
                        doorbell.unwrap_or_default(),
                        other.name
                    );
                    self.push(channel_path(i), "doorbell_intid", message);
                }
            }
        }
    }

    fn partition_name(&self, p: usize) -> &str {
        self.system.partitions.get(p).map_or("?", |partition| partition.name.as_str())
    }

    fn device_name(&self, p: usize, d: usize) -> &str {
        let device = self.system.partitions.get(p).and_then(|partition| partition.devices.get(d));
        device.map_or("?", |device| device.name.as_str())
    }
}

/// One guest-physical window of a partition, with how messages name it.
struct GuestWindow {
    range: Range,
    path: String,
    field: &'static str,
    /// As the subject of a message.
    what: String,
    /// As the object of a message.
    label: String,
}

fn guest_windows(p: usize, partition: &Partition) -> Vec<GuestWindow> {
    let console = GuestWindow {
        range: Range::new(partition.console, CONSOLE_SIZE),
        path: partition_path(p),
        field: "console",
        what: "the console".into(),
        label: "the console".into(),
    };
    let memory = partition.memory.iter().enumerate().map(|(m, region)| GuestWindow {
        range: region.guest(),
        path: memory_path(p, m),
        field: "base",
        what: "memory region".into(),
        label: format!("memory[{m}]"),
    });
    let devices = partition.devices.iter().enumerate().map(|(d, device)| GuestWindow {
        range: device.guest(),
        path: device_path(p, d),
        field: "base",
        what: format!("device \"{}\"", device.name),
        label: format!("device \"{}\"", device.name),
    });
    let mut windows: Vec<GuestWindow> = memory.chain(devices).collect();
    windows.push(console);
    windows
}

/// Every partition list of a channel, with the field that holds it.
fn endpoint_lists(kind: &ChannelKind) -> Vec<(&'static str, &[usize])> {
    match kind {
        ChannelKind::Sampling { destinations, .. } => alloc::vec![("destinations", destinations.as_slice())],
        ChannelKind::Queuing { .. } => Vec::new(),
        ChannelKind::SharedMemory { partitions, read_only, .. } => {
            alloc::vec![("partitions", partitions.as_slice()), ("read_only", read_only.as_slice())]
        }
    }
}

/// Every partition a channel names, with the field that names it.
fn endpoints(kind: &ChannelKind) -> Vec<(&'static str, usize)> {
    let mut all = match *kind {
        ChannelKind::Sampling { source, .. } => alloc::vec![("source", source)],
        ChannelKind::Queuing { source, destination, .. } => {
            alloc::vec![("source", source), ("destination", destination)]
        }
        ChannelKind::SharedMemory { .. } => Vec::new(),
    };
    for (field, list) in endpoint_lists(kind) {
        all.extend(list.iter().map(|&p| (field, p)));
    }
    all
}

fn all_memory(system: &System) -> Vec<(usize, usize, &MemoryRegion)> {
    let per_partition = system.partitions.iter().enumerate();
    per_partition.flat_map(|(p, partition)| partition.memory.iter().enumerate().map(move |(m, r)| (p, m, r))).collect()
}

fn all_devices(system: &System) -> Vec<(usize, usize, &Device)> {
    let per_partition = system.partitions.iter().enumerate();
    per_partition.flat_map(|(p, partition)| partition.devices.iter().enumerate().map(move |(d, x)| (p, d, x))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::{Action, Criticality, Health, Hypervisor, Perms, Platform, Rights};
    use alloc::string::ToString;
    use alloc::vec;
    use proptest::prelude::*;

    const MIB: u64 = 1 << 20;

    fn region(ipa: u64, pa: u64) -> MemoryRegion {
        MemoryRegion { ipa, pa, size: 16 * MIB, perms: Perms::RWX, identity: false }
    }

    fn partition(name: &str, vcpus: Vec<u32>, pa: u64) -> Partition {
        Partition {
            name: name.into(),
            criticality: Criticality::Low,
            priority: 64,
            vcpus,
            exclusive: false,
            rights: Rights::default(),
            migrate: Vec::new(),
            budget: None,
            memory: vec![region(0x4000_0000, pa)],
            devices: Vec::new(),
            console: 0x0900_0000,
            bootargs: String::new(),
            health: Health::DEFAULT,
        }
    }

    fn spi(intid: u32) -> Interrupt {
        Interrupt { intid, vcpu: 0 }
    }

    fn gpio() -> Device {
        Device {
            name: "gpio".into(),
            compatible: vec!["arm,pl061".into()],
            ipa: 0x0903_0000,
            pa: 0x0903_0000,
            size: 0x1000,
            interrupts: vec![spi(39)],
        }
    }

    fn system() -> System {
        System {
            name: "test".into(),
            platform: Platform {
                board: BOARD.into(),
                cpus: 4,
                ram: Range::new(0x4000_0000, 1 << 30),
                console: Range::new(0x0900_0000, 0x1000),
                gicd: Range::new(0x0800_0000, 0x1_0000),
                gicr: Range::new(0x080a_0000, 4 * 0x2_0000),
            },
            hypervisor: Hypervisor {
                memory: Range::new(0x4000_0000, 32 * MIB),
                quantum_us: 1000,
                trace_events: 0,
                overhead_limit_bp: 100,
                hm_log_entries: 256,
            },
            partitions: vec![partition("rtos", vec![1], 0x4200_0000), partition("gpos", vec![2, 3], 0x4400_0000)],
            plans: Vec::new(),
            channels: Vec::new(),
        }
    }

    fn slot(partition: usize, vcpu: u32, start_us: u64, duration_us: u64) -> Slot {
        Slot { partition, vcpu, start_us, duration_us }
    }

    fn cyclic(cpu: u32, slots: Vec<Slot>) -> CyclicCore {
        CyclicCore { cpu, major_frame_us: 10_000, slots }
    }

    /// `system()` plus "control" on pCPU 2, and two plans that run pCPUs 2
    /// and 3 cyclically: slot 0 of core 2 is control's, slot 1 gpos's.
    fn planned() -> System {
        let mut s = system();
        s.partitions.push(partition("control", vec![2], 0x4600_0000));
        let normal = Plan {
            name: "normal".into(),
            cores: vec![
                cyclic(2, vec![slot(2, 0, 0, 4_000), slot(1, 0, 4_000, 5_000)]),
                cyclic(3, vec![slot(1, 1, 0, 10_000)]),
            ],
        };
        let degraded = Plan {
            name: "degraded".into(),
            cores: vec![cyclic(3, vec![slot(1, 1, 0, 2_000)]), cyclic(2, vec![slot(2, 0, 5_000, 5_000)])],
        };
        s.plans = vec![normal, degraded];
        s
    }

    /// Asserts exactly one issue, at `path.field`, whose message contains `text`.
    fn expect_one(system: &System, path: &str, field: &str, text: &str) {
        let issues = validate(system);
        assert_eq!(issues.len(), 1, "{issues:#?}");
        assert_eq!((issues[0].path.as_str(), issues[0].field), (path, field), "{issues:#?}");
        assert!(issues[0].message.contains(text), "{:?} lacks {text:?}", issues[0].message);
    }

    #[test]
    fn the_sample_is_valid() {
        assert_eq!(validate(&system()), vec![]);
    }

    #[test]
    fn host_overlap_between_partitions() {
        let mut s = system();
        s.partitions[1].memory[0].pa = 0x4280_0000;
        expect_one(
            &s,
            "partition[1].memory[0]",
            "phys",
            "overlaps partition \"rtos\" memory[0] (0x42000000..0x43000000)",
        );
    }

    #[test]
    fn host_overlap_with_hypervisor() {
        let mut s = system();
        s.partitions[0].memory[0].pa = 0x4100_0000;
        expect_one(&s, "partition[0].memory[0]", "phys", "overlaps hypervisor memory");
    }

    #[test]
    fn guest_overlap_inside_a_partition() {
        let mut s = system();
        s.partitions[0].memory.push(region(0x40ff_f000, 0x4600_0000));
        expect_one(
            &s,
            "partition[0].memory[1]",
            "base",
            "overlaps memory[0] (0x40000000..0x41000000) in guest-physical",
        );
    }

    #[test]
    fn console_overlapping_a_device() {
        let mut s = system();
        s.partitions[0].devices.push(gpio());
        s.partitions[0].console = 0x0903_0000;
        expect_one(&s, "partition[0]", "console", "overlaps device \"gpio\"");
    }

    #[test]
    fn guest_window_over_the_virtual_gic() {
        let mut s = system();
        let mut device = gpio();
        device.ipa = 0x080b_0000;
        s.partitions[0].devices.push(device);
        expect_one(&s, "partition[0].device[0]", "base", "overlaps the virtual GIC redistributors");
    }

    #[test]
    fn region_outside_ram() {
        let mut s = system();
        s.partitions[0].memory[0].pa = 0x7f80_0000;
        expect_one(&s, "partition[0].memory[0]", "phys", "outside platform RAM");
    }

    #[test]
    fn pcpu_out_of_range() {
        let mut s = system();
        s.partitions[0].vcpus = vec![4];
        expect_one(&s, "partition[0]", "cpus", "pCPU 4, which does not exist: platform.cpus is 4");
    }

    #[test]
    fn two_vcpus_on_one_pcpu() {
        let mut s = system();
        s.partitions[1].vcpus = vec![2, 2];
        expect_one(&s, "partition[1]", "cpus", "vCPU 1 and vCPU 0 are both on pCPU 2");
    }

    #[test]
    fn empty_vcpu_list() {
        let mut s = system();
        s.partitions[0].vcpus.clear();
        expect_one(&s, "partition[0]", "cpus", "0 vCPUs");
    }

    #[test]
    fn duplicate_names() {
        let mut s = system();
        s.partitions[1].name = "rtos".into();
        expect_one(&s, "partition[1]", "name", "duplicate partition name \"rtos\"");
        let mut s = system();
        let mut other = gpio();
        other.pa = 0x0904_0000;
        other.ipa = 0x0904_0000;
        other.interrupts = vec![spi(40)];
        s.partitions[0].devices = vec![gpio(), other];
        expect_one(&s, "partition[0].device[1]", "name", "duplicate device name \"gpio\"");
    }

    #[test]
    fn bad_and_reserved_names() {
        let mut s = system();
        s.partitions[0].name = "Bad Name".into();
        expect_one(&s, "partition[0]", "name", "may only use");
        s.partitions[0].name = "partita".into();
        expect_one(&s, "partition[0]", "name", "reserved");
        s.partitions[0].name = "x".repeat(32);
        expect_one(&s, "partition[0]", "name", "1 to 31 characters");
    }

    #[test]
    fn interrupt_claimed_twice() {
        let mut s = system();
        s.partitions[0].devices.push(gpio());
        let mut other = gpio();
        other.name = "uart".into();
        other.pa = 0x0904_0000;
        s.partitions[1].devices.push(other);
        expect_one(
            &s,
            "partition[1].device[0]",
            "interrupts",
            "interrupt 39 is already claimed by partition \"rtos\" device \"gpio\"",
        );
    }

    #[test]
    fn interrupt_outside_spi_range() {
        let mut s = system();
        let mut device = gpio();
        device.interrupts = vec![spi(27)];
        s.partitions[0].devices.push(device);
        expect_one(&s, "partition[0].device[0]", "interrupts", "interrupt 27 is not an SPI");
    }

    #[test]
    fn console_interrupt_is_reserved() {
        let mut s = system();
        let mut device = gpio();
        device.interrupts = vec![spi(CONSOLE_INTID)];
        s.partitions[0].devices.push(device);
        expect_one(&s, "partition[0].device[0]", "interrupts", "interrupt 33 is reserved");
    }

    #[test]
    fn interrupt_routed_to_a_missing_vcpu() {
        let mut s = system();
        let mut device = gpio();
        device.interrupts = vec![spi(39), Interrupt { intid: 40, vcpu: 1 }];
        s.partitions[1].devices.push(device);
        assert_eq!(validate(&s), vec![]);
        s.partitions[1].devices[0].interrupts[1].vcpu = 2;
        expect_one(
            &s,
            "partition[1].device[0]",
            "interrupts",
            "interrupt 40 is routed to vCPU 2, but partition \"gpos\" has 2 vCPU(s): nobody would own it",
        );
    }

    #[test]
    fn exclusive_partition_sharing_a_pcpu() {
        let mut s = system();
        s.partitions[0].exclusive = true;
        assert_eq!(validate(&s), vec![]);
        s.partitions[1].vcpus = vec![2, 1];
        expect_one(
            &s,
            "partition[0]",
            "exclusive",
            "partition \"rtos\" is exclusive, but its vCPU 0 shares pCPU 1 with partition \"gpos\" vCPU 1",
        );
        // Only the exclusive side is constrained: gpos may share its pCPUs.
        s.partitions[0].exclusive = false;
        assert_eq!(validate(&s), vec![]);
        s.partitions[1].exclusive = true;
        expect_one(&s, "partition[1]", "exclusive", "its vCPU 1 shares pCPU 1 with partition \"rtos\" vCPU 0");
    }

    #[test]
    fn device_overlapping_ram_or_platform_devices() {
        for (pa, text) in [
            (0x4800_0000, "overlaps platform RAM"),
            (0x0900_0000, "overlaps Partita's console"),
            (0x0800_0000, "overlaps the GIC distributor"),
            (0x080a_0000, "overlaps the GIC redistributors"),
        ] {
            let mut s = system();
            let mut device = gpio();
            device.pa = pa;
            s.partitions[0].devices.push(device);
            expect_one(&s, "partition[0].device[0]", "phys", text);
        }
    }

    #[test]
    fn device_overlapping_another_partitions_device() {
        let mut s = system();
        s.partitions[0].devices.push(gpio());
        let mut copy = gpio();
        copy.interrupts.clear();
        s.partitions[1].devices.push(copy);
        expect_one(&s, "partition[1].device[0]", "phys", "overlaps partition \"rtos\" device \"gpio\"");
    }

    #[test]
    fn alignment_and_zero_sizes() {
        let mut s = system();
        s.partitions[0].memory[0].pa = 0x4200_0800;
        expect_one(&s, "partition[0].memory[0]", "phys", "not 4 KiB aligned");
        let mut s = system();
        s.partitions[0].memory[0].size = 0x1800;
        expect_one(&s, "partition[0].memory[0]", "size", "not a multiple of 4 KiB");
        let mut s = system();
        s.partitions[0].memory[0].size = 0;
        expect_one(&s, "partition[0].memory[0]", "size", "must not be zero");
    }

    #[test]
    fn identity_region_with_other_phys() {
        let mut s = system();
        s.partitions[0].memory[0].identity = true;
        expect_one(&s, "partition[0].memory[0]", "phys", "identity region must have phys == base");
    }

    #[test]
    fn permissions_without_read() {
        let mut s = system();
        s.partitions[0].memory[0].perms = Perms { read: false, write: true, exec: false };
        expect_one(&s, "partition[0].memory[0]", "perms", "must include read");
    }

    #[test]
    fn counts() {
        let mut s = system();
        s.partitions.clear();
        expect_one(&s, "", "partition", "no partitions");
        let mut s = system();
        s.partitions = (0..17).map(|i| partition(&i.to_string(), vec![0], 0x4200_0000 + i * 16 * MIB)).collect();
        expect_one(&s, "", "partition", "17 partitions");
        let mut s = system();
        s.partitions[0].memory = (0..9).map(|i| region(0x4000_0000 + i * 16 * MIB, 0x4200_0000)).collect();
        expect_one(&s, "partition[0]", "memory", "9 memory regions");
    }

    #[test]
    fn hypervisor_settings() {
        let mut s = system();
        s.hypervisor.memory.base = 0x3000_0000;
        expect_one(&s, "hypervisor.memory", "base", "outside platform RAM");
        let mut s = system();
        s.hypervisor.quantum_us = 99;
        expect_one(&s, "hypervisor", "quantum_us", "out of range");
    }

    #[test]
    fn trace_settings() {
        let mut s = system();
        s.hypervisor.trace_events = 16_384;
        assert_eq!(validate(&s), vec![]);
        s.hypervisor.trace_events = 63;
        expect_one(&s, "trace", "events_per_cpu", "63 events per CPU is out of range 64..=1048576");
        s.hypervisor.trace_events = 1_048_577;
        expect_one(&s, "trace", "events_per_cpu", "out of range");
        // 4 CPUs x 1 Mi events x 16 bytes is 64 MiB, beyond a quarter of 32 MiB.
        s.hypervisor.trace_events = 1_048_576;
        expect_one(&s, "trace", "events_per_cpu", "more than a quarter of hypervisor memory (8192 KiB)");
        // 128 Ki events would take 8 MiB plus the headers: just too much.
        s.hypervisor.trace_events = 131_072;
        expect_one(&s, "trace", "events_per_cpu", "more than a quarter");
        s.hypervisor.trace_events = 131_000;
        assert_eq!(validate(&s), vec![]);
    }

    #[test]
    fn platform_settings() {
        let mut s = system();
        s.platform.board = "zcu102".into();
        expect_one(&s, "platform", "board", "not supported");
        let mut s = system();
        s.platform.cpus = 9;
        expect_one(&s, "platform", "cpus", "1 to 8");
        let mut s = system();
        s.platform.console.base = 0x4000_0000;
        expect_one(&s, "platform.console", "base", "overlaps platform RAM");
    }

    #[test]
    fn planned_sample_is_valid() {
        assert_eq!(validate(&planned()), vec![]);
    }

    #[test]
    fn overlapping_slots() {
        let mut s = planned();
        s.plans[0].cores[0].slots = vec![slot(1, 0, 2_000, 3_000), slot(2, 0, 4_000, 2_000)];
        expect_one(
            &s,
            "plan[0].core[0].slot[1]",
            "start_us",
            "plan \"normal\" core 2 slot 1 (control/vcpu0, 4000..6000 us) overlaps slot 0 (2000..5000 us)",
        );
        // Touching is not overlapping.
        s.plans[0].cores[0].slots[1].start_us = 5_000;
        assert_eq!(validate(&s), vec![]);
    }

    #[test]
    fn slot_beyond_the_major_frame() {
        let mut s = planned();
        s.plans[0].cores[0].slots[1].duration_us = 6_001;
        let text = "plan \"normal\" core 2 slot 1 (gpos/vcpu0, 4000..10001 us) ends beyond the major frame (10000 us)";
        expect_one(&s, "plan[0].core[0].slot[1]", "duration_us", text);
        s.plans[0].cores[0].slots[1] = slot(1, 0, 10_000, 1);
        expect_one(&s, "plan[0].core[0].slot[1]", "start_us", "ends beyond the major frame");
        s.plans[0].cores[0].slots[1] = slot(1, 0, u64::MAX, u64::MAX);
        expect_one(&s, "plan[0].core[0].slot[1]", "start_us", "ends beyond the major frame");
    }

    #[test]
    fn zero_durations() {
        let mut s = planned();
        s.plans[1].cores[0].slots[0].duration_us = 0;
        expect_one(&s, "plan[1].core[0].slot[0]", "duration_us", "has a duration of 0 us");
        let mut s = planned();
        for core in &mut s.plans[1].cores {
            core.major_frame_us = 0;
        }
        let issues = validate(&s);
        assert_eq!(issues.len(), 2, "{issues:#?}");
        assert!(issues.iter().all(|i| i.field == "major_frame_us" && i.message.contains("longer than 0 us")));
    }

    #[test]
    fn slot_of_a_missing_partition_or_vcpu() {
        let mut s = planned();
        s.plans[0].cores[0].slots[0].partition = 3;
        expect_one(
            &s,
            "plan[0].core[0].slot[0]",
            "partition",
            "plan \"normal\" core 2 slot 0 (?/vcpu0, 0..4000 us): partition 3 does not exist; there are 3",
        );
        let mut s = planned();
        s.plans[0].cores[1].slots[0].vcpu = 2;
        expect_one(&s, "plan[0].core[1].slot[0]", "vcpu", "partition \"gpos\" has 2 vCPU(s), so vCPU 2 does not exist");
    }

    #[test]
    fn slot_of_a_vcpu_pinned_elsewhere() {
        let mut s = planned();
        s.plans[0].cores[1].slots[0].vcpu = 0;
        expect_one(
            &s,
            "plan[0].core[1].slot[0]",
            "vcpu",
            "(gpos/vcpu0, 0..10000 us): vCPU 0 of partition \"gpos\" is pinned to pCPU 2, not to core 3",
        );
    }

    #[test]
    fn different_major_frames_in_one_plan() {
        let mut s = planned();
        s.plans[0].cores[1].major_frame_us = 20_000;
        expect_one(
            &s,
            "plan[0].core[1]",
            "major_frame_us",
            "plan \"normal\" core 3 has a major frame of 20000 us, but core 2 has 10000 us",
        );
        // Plans need not share it: each is its own hyperperiod.
        let mut s = planned();
        for core in &mut s.plans[1].cores {
            core.major_frame_us = 20_000;
        }
        assert_eq!(validate(&s), vec![]);
    }

    #[test]
    fn plan_names_and_cores() {
        let mut s = planned();
        s.plans[1].name = "normal".into();
        expect_one(&s, "plan[1]", "name", "duplicate plan name \"normal\" (also plan[0])");
        s.plans[1].name = "Normal".into();
        expect_one(&s, "plan[1]", "name", "may only use");
        let mut s = planned();
        s.plans[1].cores[1].cpu = 3;
        s.plans[1].cores[1].slots.clear();
        let issues = validate(&s);
        assert_eq!(issues.len(), 2, "{issues:#?}");
        assert_eq!((issues[0].path.as_str(), issues[0].field), ("plan[1].core[1]", "cpu"));
        assert!(issues[0].message.contains("plan \"degraded\" lists core 3 twice (also core[0])"));
        assert_eq!((issues[1].path.as_str(), issues[1].field), ("plan[1]", "core"), "core 2 is now missing");
    }

    #[test]
    fn cyclic_core_out_of_range() {
        let mut s = planned();
        s.plans[0].cores[1] = cyclic(4, vec![]);
        s.plans[1].cores[0] = cyclic(4, vec![]);
        let issues = validate(&s);
        assert_eq!(issues.len(), 2, "one per plan: {issues:#?}");
        assert_eq!((issues[0].path.as_str(), issues[0].field), ("plan[0].core[1]", "cpu"));
        assert_eq!(issues[0].message, "plan \"normal\" core 4: pCPU 4 does not exist: platform.cpus is 4");
    }

    #[test]
    fn every_plan_schedules_the_same_cores() {
        let mut s = planned();
        s.plans[1].cores.remove(1);
        expect_one(
            &s,
            "plan[1]",
            "core",
            "core 2 is cyclic in plan \"normal\" but not in plan \"degraded\"; every plan must schedule the same cores",
        );
        let mut s = planned();
        s.plans[0].cores.remove(0);
        expect_one(&s, "plan[1].core[1]", "cpu", "core 2 is cyclic in plan \"degraded\" but not in plan \"normal\"");
    }

    #[test]
    fn exclusive_partition_on_a_cyclic_core() {
        let mut s = planned();
        s.partitions[0].exclusive = true;
        assert_eq!(validate(&s), vec![]);
        s.partitions[2].exclusive = true;
        let issues = validate(&s);
        // Sharing pCPU 2 with gpos is the other half of the same mistake.
        assert_eq!(issues.len(), 2, "{issues:#?}");
        let issue = issues.iter().find(|i| i.message.contains("cyclically")).unwrap();
        assert_eq!((issue.path.as_str(), issue.field), ("partition[2]", "exclusive"));
        assert_eq!(
            issue.message,
            "partition \"control\" is exclusive, but its vCPU 0 is on pCPU 2, which plan \"normal\" schedules cyclically"
        );
    }

    #[test]
    fn plan_counts() {
        let mut s = planned();
        let template = s.plans[1].clone();
        s.plans.extend((0..7).map(|i| Plan { name: format!("p{i}"), ..template.clone() }));
        expect_one(&s, "", "plan", "9 plans; at most 8 are allowed");
        let mut s = planned();
        s.plans[0].cores[0].slots = (0..65).map(|i| slot(2, 0, i * 10, 10)).collect();
        expect_one(&s, "plan[0].core[0]", "slot", "plan \"normal\" core 2 has 65 slots; a core has at most 64");
        let mut s = planned();
        s.platform.cpus = 8;
        s.plans[0].cores = (0..9).map(|cpu| cyclic(cpu % 8, vec![])).collect();
        s.plans.truncate(1);
        expect_one(&s, "plan[0]", "core", "plan \"normal\" has 9 cores; a plan has at most 8");
    }

    fn budget(time_us: u64, period_us: u64) -> Option<Budget> {
        Some(Budget { time_us, period_us })
    }

    #[test]
    fn malformed_budgets() {
        let mut s = system();
        s.partitions[0].budget = budget(2_000, 10_000);
        assert_eq!(validate(&s), vec![]);
        s.partitions[0].budget = budget(0, 10_000);
        expect_one(&s, "partition[0].budget", "time", "partition \"rtos\": the budget time must be longer than 0 us");
        s.partitions[0].budget = budget(2_000, 0);
        expect_one(&s, "partition[0].budget", "period", "the budget period must be longer than 0 us");
        s.partitions[0].budget = budget(10_001, 10_000);
        expect_one(
            &s,
            "partition[0].budget",
            "time",
            "partition \"rtos\": the budget time (10001 us) is longer than its period (10000 us)",
        );
        s.partitions[0].budget = budget(10_000, 10_000);
        assert_eq!(validate(&s), vec![], "the whole pCPU is a budget too");
    }

    #[test]
    fn budget_of_a_partition_that_is_only_cyclic() {
        let mut s = planned();
        s.partitions[2].budget = budget(1_000, 10_000);
        expect_one(
            &s,
            "partition[2]",
            "budget",
            "partition \"control\" has a budget, but all its vCPUs are on cyclic pCPUs (2), where the plan's slots",
        );
        // rtos's pCPU 1 is not cyclic, so a budget applies there.
        s.partitions[2].budget = None;
        s.partitions[0].budget = budget(1_000, 10_000);
        assert_eq!(validate(&s), vec![]);
        s.partitions[1].vcpus = vec![2, 1];
        s.plans[0].cores[1].slots.clear();
        s.plans[1].cores[0].slots.clear();
        s.partitions[1].budget = budget(1_000, 10_000);
        assert_eq!(validate(&s), vec![], "one vCPU on a fixed-priority pCPU is enough");
    }

    #[test]
    fn over_subscribed_fixed_priority_pcpu() {
        let mut s = system();
        s.partitions[1].vcpus = vec![1, 2];
        s.partitions.push(partition("control", vec![1], 0x4600_0000));
        s.partitions[0].budget = budget(1_000, 3_000);
        s.partitions[1].budget = budget(2_000, 6_000);
        s.partitions[2].budget = budget(10, 30);
        assert_eq!(validate(&s), vec![], "three thirds fill pCPU 1 exactly");
        s.partitions[2].budget = budget(11, 30);
        expect_one(
            &s,
            "partition[2]",
            "budget",
            "pCPU 1 is over-subscribed: the budgets of its vCPUs add up to 103.4 % \
             (rtos 33.3 %, gpos 33.3 %, control 36.7 %), more than 100 %",
        );
        // Without a budget, control takes no share: it gets what is left.
        s.partitions[2].budget = None;
        assert_eq!(validate(&s), vec![]);
    }

    #[test]
    fn budgets_on_cyclic_pcpus_take_no_share() {
        let mut s = planned();
        // gpos: vCPU 0 on cyclic pCPU 2, vCPU 1 on fixed-priority pCPU 1 with rtos.
        s.partitions[1].vcpus = vec![2, 1];
        s.plans[0].cores[1].slots.clear();
        s.plans[1].cores[0].slots.clear();
        s.partitions[0].budget = budget(6_000, 10_000);
        s.partitions[1].budget = budget(4_000, 10_000);
        assert_eq!(validate(&s), vec![]);
        s.partitions[1].budget = budget(4_001, 10_000);
        expect_one(&s, "partition[1]", "budget", "pCPU 1 is over-subscribed");
    }

    #[test]
    fn overhead_limit_range() {
        let mut s = system();
        for bp in [1, 100, 10_000] {
            s.hypervisor.overhead_limit_bp = bp;
            assert_eq!(validate(&s), vec![]);
        }
        for bp in [0, 10_001] {
            s.hypervisor.overhead_limit_bp = bp;
            expect_one(&s, "hypervisor", "overhead_limit_percent", "more than 0 % and at most 100 %");
        }
    }

    /// `system()` with one channel of each kind between rtos (0) and gpos (1).
    fn linked() -> System {
        let mut s = system();
        s.channels = vec![
            Channel {
                name: "status".into(),
                kind: ChannelKind::Sampling { source: 0, destinations: vec![1], max_message: 64, refresh_us: 10_000 },
            },
            Channel {
                name: "commands".into(),
                kind: ChannelKind::Queuing { source: 1, destination: 0, max_message: 256, depth: 16 },
            },
            Channel {
                name: "frames".into(),
                kind: ChannelKind::SharedMemory {
                    partitions: vec![0, 1],
                    ipa: 0x5000_0000,
                    pa: 0x4600_0000,
                    size: 0x1_0000,
                    read_only: vec![1],
                    doorbell: Some(48),
                },
            },
        ];
        s
    }

    fn shared(s: &mut System) -> (&mut Vec<usize>, &mut u64, &mut u64, &mut u64, &mut Vec<usize>, &mut Option<u32>) {
        let ChannelKind::SharedMemory { partitions, ipa, pa, size, read_only, doorbell } = &mut s.channels[2].kind
        else {
            unreachable!("linked() puts shared memory third")
        };
        (partitions, ipa, pa, size, read_only, doorbell)
    }

    #[test]
    fn linked_sample_is_valid() {
        assert_eq!(validate(&linked()), vec![]);
    }

    #[test]
    fn channel_names_and_count() {
        let mut s = linked();
        s.channels[1].name = "status".into();
        expect_one(&s, "channel[1]", "name", "duplicate channel name \"status\" (also channel[0])");
        s.channels[1].name = "Status".into();
        expect_one(&s, "channel[1]", "name", "may only use");
        let mut s = linked();
        let template = s.channels[0].clone();
        s.channels = (0..65).map(|i| Channel { name: format!("c{i}"), ..template.clone() }).collect();
        expect_one(&s, "", "channel", "65 channels; at most 64 are allowed");
    }

    #[test]
    fn channel_of_a_missing_partition() {
        let mut s = linked();
        s.channels[1].kind = ChannelKind::Queuing { source: 1, destination: 2, max_message: 256, depth: 16 };
        expect_one(&s, "channel[1]", "destination", "channel \"commands\": partition 2 does not exist; there are 2");
        // Two missing partitions are not also "listed twice".
        let mut s = linked();
        shared(&mut s).0.extend([9, 9]);
        let issues = validate(&s);
        assert_eq!(issues.len(), 2, "{issues:#?}");
        assert!(issues.iter().all(|i| i.field == "partitions" && i.message.contains("partition 9 does not exist")));
    }

    #[test]
    fn sampling_endpoints() {
        let mut s = linked();
        s.channels[0].kind = ChannelKind::Sampling { source: 0, destinations: vec![], max_message: 64, refresh_us: 1 };
        expect_one(&s, "channel[0]", "destinations", "channel \"status\" has no destination");
        s.channels[0].kind =
            ChannelKind::Sampling { source: 0, destinations: vec![1, 0], max_message: 64, refresh_us: 1 };
        expect_one(&s, "channel[0]", "destinations", "partition \"rtos\" is both the source and a destination");
        s.channels[0].kind =
            ChannelKind::Sampling { source: 0, destinations: vec![1, 1], max_message: 64, refresh_us: 1 };
        expect_one(
            &s,
            "channel[0]",
            "destinations",
            "channel \"status\" lists partition \"gpos\" twice in destinations",
        );
        s.channels[0].kind = ChannelKind::Sampling { source: 0, destinations: vec![1], max_message: 64, refresh_us: 0 };
        expect_one(&s, "channel[0]", "refresh", "the refresh period must be longer than 0 us");
    }

    #[test]
    fn message_sizes_and_depths() {
        let queuing = |max_message, depth| ChannelKind::Queuing { source: 1, destination: 0, max_message, depth };
        let mut s = linked();
        for (max_message, depth) in [(1, 1), (4096, 256), (1024, 1024)] {
            s.channels[1].kind = queuing(max_message, depth);
            assert_eq!(validate(&s), vec![], "{max_message} x {depth}");
        }
        for max_message in [0, 4097] {
            s.channels[1].kind = queuing(max_message, 16);
            expect_one(&s, "channel[1]", "max_message", "out of range 1..=4096 bytes");
        }
        for depth in [0, 1025] {
            s.channels[1].kind = queuing(1, depth);
            expect_one(&s, "channel[1]", "depth", "out of range 1..=1024");
        }
        s.channels[1].kind = queuing(4096, 257);
        expect_one(
            &s,
            "channel[1]",
            "depth",
            "channel \"commands\": 257 messages of 4096 bytes take 1028 KiB; a queue may take at most 1024 KiB",
        );
        s.channels[1].kind = ChannelKind::Queuing { source: 0, destination: 0, max_message: 256, depth: 16 };
        expect_one(&s, "channel[1]", "destination", "partition \"rtos\" is both the source and the destination");
        let mut s = linked();
        s.channels[0].kind = ChannelKind::Sampling { source: 0, destinations: vec![1], max_message: 0, refresh_us: 1 };
        expect_one(&s, "channel[0]", "max_message", "channel \"status\": a message of 0 bytes is out of range");
    }

    #[test]
    fn shared_memory_partitions() {
        let mut s = linked();
        *shared(&mut s).0 = vec![0];
        shared(&mut s).4.clear();
        expect_one(
            &s,
            "channel[2]",
            "partitions",
            "channel \"frames\" has 1 partition(s); shared memory needs 2 or more",
        );
        let mut s = linked();
        shared(&mut s).0.push(1);
        expect_one(&s, "channel[2]", "partitions", "lists partition \"gpos\" twice in partitions");
        let mut s = linked();
        s.partitions.push(partition("control", vec![3], 0x4800_0000));
        *shared(&mut s).4 = vec![2];
        expect_one(&s, "channel[2]", "read_only", "partition \"control\" is read-only but does not map the channel");
        let mut s = linked();
        *shared(&mut s).4 = vec![1, 0];
        expect_one(&s, "channel[2]", "read_only", "every partition maps it read-only, so nobody could write to it");
    }

    #[test]
    fn shared_memory_sizes_and_host_memory() {
        let mut s = linked();
        *shared(&mut s).3 = 0x1800;
        expect_one(&s, "channel[2]", "size", "not a multiple of 4 KiB");
        *shared(&mut s).3 = 0;
        expect_one(&s, "channel[2]", "size", "must not be zero");
        let mut s = linked();
        *shared(&mut s).2 = 0x4200_0000;
        expect_one(
            &s,
            "channel[2]",
            "phys",
            "host memory 0x42000000..0x42010000 overlaps partition \"rtos\" memory[0]",
        );
        *shared(&mut s).2 = 0x4000_0000;
        expect_one(&s, "channel[2]", "phys", "host memory overlaps hypervisor memory");
        *shared(&mut s).2 = 0x8000_0000;
        expect_one(&s, "channel[2]", "phys", "is outside platform RAM");
        *shared(&mut s).2 = 0x4600_0800;
        expect_one(&s, "channel[2]", "phys", "0x46000800 is not 4 KiB aligned");
    }

    #[test]
    fn shared_memory_in_guest_physical_space() {
        for (ipa, text) in [
            (0x40ff_0000, "overlaps memory[0] (0x40000000..0x41000000) of partition \"rtos\""),
            (0x0900_0000, "overlaps the console (0x09000000..0x09001000) of partition \"rtos\""),
            (0x0800_0000, "overlaps the virtual GIC distributor"),
        ] {
            let mut s = linked();
            *shared(&mut s).1 = ipa;
            // Both partitions have the same layout: one issue each.
            let issues = validate(&s);
            assert_eq!(issues.len(), 2, "{issues:#?}");
            assert_eq!((issues[0].path.as_str(), issues[0].field), ("channel[2]", "base"));
            assert!(issues.iter().any(|i| i.message.contains(text)), "{text}: {issues:#?}");
        }
        let mut s = linked();
        s.partitions[1].devices.push(gpio());
        *shared(&mut s).1 = 0x0903_0000;
        expect_one(&s, "channel[2]", "base", "overlaps device \"gpio\" (0x09030000..0x09031000) of partition \"gpos\"");
    }

    #[test]
    fn doorbells() {
        let mut s = linked();
        for intid in [31, 1020] {
            *shared(&mut s).5 = Some(intid);
            expect_one(&s, "channel[2]", "doorbell_intid", "is out of range 32..=1019");
        }
        *shared(&mut s).5 = Some(CONSOLE_INTID);
        expect_one(&s, "channel[2]", "doorbell_intid", "doorbell INTID 33 is the emulated console's");
        *shared(&mut s).5 = None;
        assert_eq!(validate(&s), vec![], "a doorbell is optional");
        let mut s = linked();
        s.partitions[1].devices.push(gpio());
        *shared(&mut s).5 = Some(39);
        expect_one(
            &s,
            "channel[2]",
            "doorbell_intid",
            "doorbell INTID 39 is already partition \"gpos\" device \"gpio\"'s",
        );
        let mut s = linked();
        let mut copy = s.channels[2].clone();
        copy.name = "frames2".into();
        let ChannelKind::SharedMemory { ipa, pa, .. } = &mut copy.kind else { unreachable!() };
        (*ipa, *pa) = (0x5100_0000, 0x4610_0000);
        s.channels.push(copy);
        expect_one(&s, "channel[3]", "doorbell_intid", "doorbell INTID 48 is already channel \"frames\"'s");
    }

    #[test]
    fn shared_memory_channels_apart() {
        let mut s = linked();
        let mut copy = s.channels[2].clone();
        copy.name = "frames2".into();
        let ChannelKind::SharedMemory { ipa, doorbell, .. } = &mut copy.kind else { unreachable!() };
        (*ipa, *doorbell) = (0x5100_0000, None);
        s.channels.push(copy.clone());
        expect_one(&s, "channel[3]", "phys", "host memory overlaps channel \"frames\" (0x46000000..0x46010000)");
        let ChannelKind::SharedMemory { ipa, pa, .. } = &mut copy.kind else { unreachable!() };
        (*ipa, *pa) = (0x5000_8000, 0x4610_0000);
        s.channels[3] = copy;
        expect_one(
            &s,
            "channel[3]",
            "base",
            "overlaps channel \"frames\" (0x50000000..0x50010000) in partition \"rtos\"",
        );
    }

    #[test]
    fn health_settings() {
        let mut s = system();
        s.partitions[0].health = Health { watchdog: Action::Restart, watchdog_us: Some(100_000), ..Health::DEFAULT };
        assert_eq!(validate(&s), vec![]);
        for period in [999, 60_000_001] {
            s.partitions[0].health.watchdog_us = Some(period);
            expect_one(&s, "partition[0]", "watchdog", "is out of range 1000..=60000000 us (1 ms to 60 s)");
        }
        let mut s = system();
        for entries in [15, 4097] {
            s.hypervisor.hm_log_entries = entries;
            expect_one(&s, "hypervisor", "hm_log_entries", "health-monitor log entries is out of range 16..=4096");
        }
    }

    fn arbitrary_range() -> impl Strategy<Value = Range> {
        let edge = prop_oneof![Just(0u64), Just(u64::MAX), Just(0x4000_0000), any::<u64>()];
        (edge.clone(), edge).prop_map(|(base, size)| Range::new(base, size))
    }

    fn arbitrary_region() -> impl Strategy<Value = MemoryRegion> {
        (arbitrary_range(), any::<u64>(), any::<[bool; 4]>()).prop_map(|(r, pa, [read, write, exec, identity])| {
            MemoryRegion { ipa: r.base, pa, size: r.size, perms: Perms { read, write, exec }, identity }
        })
    }

    fn arbitrary_device() -> impl Strategy<Value = Device> {
        let strings =
            proptest::collection::vec(proptest::sample::select(&["", "x", "a\0b"][..]).prop_map(String::from), 0..3);
        let vcpu = prop_oneof![0u32..10, Just(u32::MAX)];
        let interrupt = (any::<u32>(), vcpu).prop_map(|(intid, vcpu)| Interrupt { intid, vcpu });
        (arbitrary_range(), any::<u64>(), strings, proptest::collection::vec(interrupt, 0..4)).prop_map(
            |(r, pa, compatible, interrupts)| Device {
                name: "d".into(),
                compatible,
                ipa: r.base,
                pa,
                size: r.size,
                interrupts,
            },
        )
    }

    const NAMES: &[&str] = &["", "a", "b", "partita", "Name With Spaces", "0123456789_0123456789_0123456789"];

    fn arbitrary_partition() -> impl Strategy<Value = Partition> {
        let vcpus = proptest::collection::vec(0u32..10, 0..10);
        let memory = proptest::collection::vec(arbitrary_region(), 0..10);
        let devices = proptest::collection::vec(arbitrary_device(), 0..10);
        let time = || prop_oneof![Just(0u64), Just(1), Just(3), Just(u64::MAX), any::<u64>()];
        let budget =
            proptest::option::of((time(), time()).prop_map(|(time_us, period_us)| Budget { time_us, period_us }));
        let watchdog = proptest::option::of(time());
        (proptest::sample::select(NAMES), vcpus, any::<bool>(), budget, memory, devices, any::<u64>(), watchdog)
            .prop_map(|(name, vcpus, exclusive, budget, memory, devices, console, watchdog_us)| Partition {
                name: name.into(),
                criticality: Criticality::High,
                priority: 192,
                vcpus,
                exclusive,
                rights: Rights::default(),
                migrate: Vec::new(),
                budget,
                memory,
                devices,
                console,
                bootargs: String::new(),
                health: Health { watchdog_us, ..Health::DEFAULT },
            })
    }

    fn arbitrary_channel() -> impl Strategy<Value = Channel> {
        let index = || prop_oneof![0usize..4, Just(usize::MAX)];
        let indices = || proptest::collection::vec(index(), 0..20);
        let small = || prop_oneof![Just(0u32), Just(1), Just(4096), Just(4097), any::<u32>()];
        let sampling =
            (index(), indices(), small(), any::<u64>()).prop_map(|(source, destinations, max_message, refresh_us)| {
                ChannelKind::Sampling { source, destinations, max_message, refresh_us }
            });
        let queuing = (index(), index(), small(), small()).prop_map(|(source, destination, max_message, depth)| {
            ChannelKind::Queuing { source, destination, max_message, depth }
        });
        let shared = (indices(), arbitrary_range(), any::<u64>(), indices(), proptest::option::of(small())).prop_map(
            |(partitions, r, pa, read_only, doorbell)| ChannelKind::SharedMemory {
                partitions,
                ipa: r.base,
                pa,
                size: r.size,
                read_only,
                doorbell,
            },
        );
        (proptest::sample::select(NAMES), prop_oneof![sampling, queuing, shared])
            .prop_map(|(name, kind)| Channel { name: name.into(), kind })
    }

    fn arbitrary_plan() -> impl Strategy<Value = Plan> {
        let time = || prop_oneof![Just(0u64), Just(5_000), Just(u64::MAX), any::<u64>()];
        let index = prop_oneof![0usize..4, Just(usize::MAX)];
        let slot = (index, prop_oneof![0u32..4, Just(u32::MAX)], time(), time())
            .prop_map(|(partition, vcpu, start_us, duration_us)| Slot { partition, vcpu, start_us, duration_us });
        let core = (prop_oneof![0u32..10, Just(u32::MAX)], time(), proptest::collection::vec(slot, 0..6))
            .prop_map(|(cpu, major_frame_us, slots)| CyclicCore { cpu, major_frame_us, slots });
        (proptest::sample::select(NAMES), proptest::collection::vec(core, 0..3))
            .prop_map(|(name, cores)| Plan { name: name.into(), cores })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

        /// The hypervisor runs these rules on whatever it decodes at boot.
        #[test]
        fn never_panics(
            ram in arbitrary_range(),
            hypervisor in arbitrary_range(),
            cpus in any::<u32>(),
            quantum_us in any::<u32>(),
            trace_events in prop_oneof![Just(0u32), Just(64), Just(1_048_576), any::<u32>()],
            overhead_limit_bp in any::<u32>(),
            partitions in proptest::collection::vec(arbitrary_partition(), 0..18),
            plans in proptest::collection::vec(arbitrary_plan(), 0..10),
            channels in proptest::collection::vec(arbitrary_channel(), 0..6),
            hm_log_entries in any::<u32>(),
        ) {
            let mut s = system();
            s.platform.ram = ram;
            s.platform.cpus = cpus;
            s.hypervisor = Hypervisor { memory: hypervisor, quantum_us, trace_events, overhead_limit_bp, hm_log_entries };
            s.partitions = partitions;
            s.plans = plans;
            s.channels = channels;
            let _ = validate(&s);
        }
    }
}
