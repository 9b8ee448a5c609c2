//! Configuration rules that need no file system.
//!
//! The host runs them before it builds an image, and the hypervisor runs them
//! again on the table it decodes at boot, so a stale or tampered payload is
//! refused by the same rules. That is why this module must stay `no_std`,
//! allocate only through `alloc`, and never panic, whatever it is given.
//!
//! Every [`Issue`] names its place with the TOML spelling (`partition[1].memory[0]`
//! plus a field such as `phys`), so the host can point at the line in the file.
//!
//! The rules are grouped by what they constrain, which is not always the
//! TOML section that holds the value:
//!
//! - `platform`: the board, its fixed frames, Partita's own memory and
//!   settings, the trace;
//! - `health`: the health monitor's log and each partition's watchdog, which
//!   sit in different sections but size and time the same monitor;
//! - `partitions`: each partition as a whole: counts, names, settings, and
//!   where its vCPUs run (pinning, exclusive pCPUs, migration);
//! - `mappings`: what a partition maps, memory regions and passthrough
//!   devices, in host and guest space, and the interrupts the devices bring;
//!   apart from `partitions` because they are address rules, which channels
//!   share;
//! - `plans`: cyclic plans, their cores and slots;
//! - `budgets`: budgets and the fixed-priority pCPUs they share; apart from
//!   `plans`, whose pCPUs they exclude;
//! - `channels`: sampling, queuing and shared-memory channels;
//! - `fabric`: the fabric's settings, memory, accelerators and PRRs, and
//!   each partition's virtual devices (their accelerator, interface page,
//!   signals and deadline);
//! - `timed_io`: the controller Partita owns for timed outputs, its timing,
//!   and which partition may drive which pins;
//! - `overlap`: the one place that finds which ranges share addresses, for
//!   every rule above that forbids it.
//!
//! One rule is the host's alone: whether a virtual device's `deadline` is
//! kept by the allocation-latency analysis ([`allocation_deadlines`]),
//! judged once everything else holds. The hypervisor keeps no deadline,
//! and the analysis need not be part of its image.
//!
//! The issues come out in a fixed order: that of the calls in [`validate`],
//! then file order. The host keeps it among the issues of one line, and the
//! hypervisor prints them in it.

mod budgets;
mod channels;
mod fabric;
mod health;
mod mappings;
mod overlap;
mod partitions;
mod plans;
mod platform;
mod timed_io;

#[cfg(test)]
pub(crate) mod fixtures;

use crate::config::limits::{
    MAX_CHANNELS, MAX_CYCLIC_CORES, MAX_DEVICES, MAX_MEMORY_REGIONS, MAX_PARTITIONS, MAX_PLANS, MAX_PLAN_SLOTS,
    MAX_VCPUS_PER_PARTITION, NAME_MAX_LEN, PAGE_SIZE,
};
use crate::config::model::{Range, System};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Display;
use core::ops::RangeInclusive;
use overlap::Overlaps;

pub use fabric::{allocation_deadlines, device_label, holders_text};
pub use plans::slot_label;

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
    // Rules between entries grow with the number of pairs; on a table far
    // beyond the limits (a corrupt boot payload) they would only add noise
    // and time.
    let entries = within_limits(system);
    let overlaps = Overlaps::of(system, entries);
    let mut v = Validator { system, overlaps: &overlaps, issues: Vec::new() };
    v.platform();
    v.hypervisor();
    v.counts();
    if entries {
        v.partitions();
        v.unique_partition_names();
        v.host_memory_overlaps();
        v.image_store();
        v.device_overlaps();
        v.interrupt_claims();
        v.exclusive_pcpus();
        v.direct_delivery();
        v.plans();
        v.budgets();
        v.channels();
        v.fabric();
        v.timed_io();
    }
    v.issues
}

/// The rules of every area are methods of this, each in its area's file.
struct Validator<'a> {
    system: &'a System,
    overlaps: &'a Overlaps,
    issues: Vec<Issue>,
}

fn within_limits(system: &System) -> bool {
    let partitions = &system.partitions;
    let plans = &system.plans;
    partitions.len() <= MAX_PARTITIONS
        && partitions.iter().all(|p| {
            p.vcpus.len() <= MAX_VCPUS_PER_PARTITION
                && p.memory.len() <= MAX_MEMORY_REGIONS
                && p.devices.len() <= MAX_DEVICES
        })
        && plans.len() <= MAX_PLANS
        && plans.iter().all(|plan| {
            plan.cores.len() <= MAX_CYCLIC_CORES && plan.cores.iter().all(|core| core.slots.len() <= MAX_PLAN_SLOTS)
        })
        && system.channels.len() <= MAX_CHANNELS
        && system
            .channels
            .iter()
            .all(|channel| channels::endpoint_lists(&channel.kind).iter().all(|(_, list)| list.len() <= MAX_PARTITIONS))
        && fabric::within_limits(system)
        && system.timed_io.as_ref().is_none_or(|timed_io| timed_io.grants.len() <= MAX_PARTITIONS)
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

fn accelerator_path(a: usize) -> String {
    format!("fabric.accelerator[{a}]")
}

fn prr_path(r: usize) -> String {
    format!("fabric.prr[{r}]")
}

fn virtual_device_path(p: usize, d: usize) -> String {
    format!("partition[{p}].accelerators[{d}]")
}

fn plan_path(i: usize) -> String {
    format!("plan[{i}]")
}

fn core_path(i: usize, c: usize) -> String {
    format!("plan[{i}].core[{c}]")
}

/// `0x40000000..0x41000000`, the notation of every message.
pub fn hex_range(range: &Range) -> String {
    format!("{:#010x}..{:#010x}", range.base, range.end())
}

/// `100..=1000000`, how every message states an allowed range.
fn bounds<T: Display>(range: &RangeInclusive<T>) -> String {
    format!("{}..={}", range.start(), range.end())
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

    /// Every count first: the rules between entries run only when all are
    /// within their limits.
    fn counts(&mut self) {
        self.partition_counts();
        self.plan_counts();
        self.channel_counts();
        self.fabric_counts();
    }

    fn partition_name(&self, p: usize) -> &str {
        self.system.partitions.get(p).map_or("?", |partition| partition.name.as_str())
    }

    fn device_name(&self, p: usize, d: usize) -> &str {
        let device = self.system.partitions.get(p).and_then(|partition| partition.devices.get(d));
        device.map_or("?", |device| device.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use crate::config::model::{
        Budget, Channel, ChannelKind, Criticality, CyclicCore, Device, Health, Hypervisor, Interrupt, MemoryRegion,
        Partition, Perms, Plan, Rights, Slot,
    };
    use proptest::prelude::*;

    #[test]
    fn the_sample_is_valid() {
        assert_eq!(validate(&system()), vec![]);
    }

    #[test]
    fn planned_sample_is_valid() {
        assert_eq!(validate(&planned()), vec![]);
    }

    #[test]
    fn linked_sample_is_valid() {
        assert_eq!(validate(&linked()), vec![]);
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
                interrupts: crate::config::model::Delivery::Virtual,
                rights: Rights::default(),
                migrate: Vec::new(),
                budget,
                memory,
                devices,
                console,
                bootargs: String::new(),
                health: Health { watchdog_us, ..Health::DEFAULT },
                accelerators: Vec::new(),
                max_added_response_us: None,
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
            images in arbitrary_range(),
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
            s.hypervisor = Hypervisor {
                memory: hypervisor, quantum_us, trace_events, overhead_limit_bp, hm_log_entries, images,
            };
            s.partitions = partitions;
            s.plans = plans;
            s.channels = channels;
            let _ = validate(&s);
        }
    }

    #[test]
    fn entries_beyond_the_limits_skip_the_rules_between_entries() {
        let mut s = linked();
        s.partitions[1].memory[0].pa = s.partitions[0].memory[0].pa;
        let template = s.partitions[0].clone();
        s.partitions.extend((0..15).map(|i| Partition { name: format!("p{i}"), ..template.clone() }));
        expect_one(&s, "", "partition", "17 partitions; at most 16 are allowed");
    }
}
