//! The fabric: its settings and memory, its accelerators and PRRs and the
//! compatibility between them, and each partition's virtual devices (the
//! accelerator each names, its interface page in guest space, its three
//! signals, its deadline).

use super::overlap::{Item, Space};
use super::{
    accelerator_path, bounds, hex_range, is_aligned, name_problem, prr_path, virtual_device_path, Issue, Validator,
};
use crate::config::allocation::{device_latencies, micros_text, Wait};
use crate::config::limits::{
    ACCELERATOR_FRAME_NS, CONSOLE_INTID, FABRIC_HOLD_US, FABRIC_TURN_US, MAX_ACCELERATORS, MAX_PRRS,
    MAX_VIRTUAL_DEVICES, SPI,
};
use crate::config::model::{ChannelKind, Fabric, Partition, Range, System, VirtualDevice};
use crate::fabric::bound::AtomicCosts;
use crate::fabric::interface::PAGE_SIZE as INTERFACE_PAGE;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

const FABRIC: &str = "fabric";

/// Whether the counts are within what the rules between entries handle.
pub(super) fn within_limits(system: &System) -> bool {
    let fabric = system.fabric.as_ref();
    fabric.is_none_or(|f| {
        f.prrs.len() <= MAX_PRRS
            && f.accelerators.len() <= MAX_ACCELERATORS
            && f.prrs.iter().all(|prr| prr.hosts.len() <= MAX_ACCELERATORS)
    }) && system.partitions.iter().all(|p| p.accelerators.len() <= MAX_VIRTUAL_DEVICES)
}

impl Validator<'_> {
    pub(super) fn fabric_counts(&mut self) {
        if let Some(fabric) = &self.system.fabric {
            if fabric.prrs.len() > MAX_PRRS {
                let message = format!("{} PRRs; at most {MAX_PRRS} are allowed", fabric.prrs.len());
                self.push(FABRIC.into(), "prr", message);
            }
            if fabric.accelerators.len() > MAX_ACCELERATORS {
                let message =
                    format!("{} accelerators; at most {MAX_ACCELERATORS} are allowed", fabric.accelerators.len());
                self.push(FABRIC.into(), "accelerator", message);
            }
            for (r, prr) in fabric.prrs.iter().enumerate() {
                if prr.hosts.len() > MAX_ACCELERATORS {
                    let message = format!(
                        "PRR \"{}\" lists {} accelerators; there are at most {MAX_ACCELERATORS}",
                        prr.name,
                        prr.hosts.len()
                    );
                    self.push(prr_path(r), "hosts", message);
                }
            }
        }
        for (p, partition) in self.system.partitions.iter().enumerate() {
            if partition.accelerators.len() > MAX_VIRTUAL_DEVICES {
                let message = format!(
                    "{} virtual devices; at most {MAX_VIRTUAL_DEVICES} are allowed",
                    partition.accelerators.len()
                );
                self.push(super::partition_path(p), "accelerators", message);
            }
        }
    }

    pub(super) fn fabric(&mut self) {
        let system = self.system;
        let Some(fabric) = &system.fabric else {
            for (p, partition) in system.partitions.iter().enumerate().filter(|(_, p)| !p.accelerators.is_empty()) {
                let message = format!(
                    "partition \"{}\" has virtual devices, but the configuration has no [fabric]",
                    partition.name
                );
                self.push(super::partition_path(p), "accelerators", message);
            }
            return;
        };
        self.fabric_settings(fabric);
        self.fabric_memory(fabric);
        self.prrs(fabric);
        self.accelerators(fabric);
        for (p, partition) in system.partitions.iter().enumerate() {
            for (d, device) in partition.accelerators.iter().enumerate() {
                self.virtual_device(fabric, p, partition, d, device);
            }
        }
    }

    fn fabric_settings(&mut self, fabric: &Fabric) {
        if fabric.bandwidth == 0 {
            let message = "the reconfiguration bandwidth must be more than 0 bytes per second".into();
            self.push(FABRIC.into(), "bandwidth", message);
        }
        if !FABRIC_HOLD_US.contains(&fabric.hold_us) {
            let message = format!("hold time {} us is out of range {} us", fabric.hold_us, bounds(&FABRIC_HOLD_US));
            self.push(FABRIC.into(), "hold", message);
        }
        if !FABRIC_TURN_US.contains(&fabric.turn_us) {
            let message = format!("turn {} us is out of range {} us", fabric.turn_us, bounds(&FABRIC_TURN_US));
            self.push(FABRIC.into(), "turn", message);
        }
        let cpus = self.system.platform.cpus;
        if fabric.cpu >= cpus {
            let message = format!(
                "pCPU {} does not exist (platform.cpus = {cpus}): the emulated fabric needs a pCPU of its own, \
                 which by default is the highest one no vCPU uses",
                fabric.cpu
            );
            self.push(FABRIC.into(), "cpu", message);
        }
        for partition in self.system.partitions.iter().filter(|p| p.uses_cpu(fabric.cpu)) {
            let message = format!(
                "pCPU {} runs the emulated fabric, yet partition \"{}\" has a vCPU that lives or may migrate there",
                fabric.cpu, partition.name
            );
            self.push(FABRIC.into(), "cpu", message);
        }
    }

    fn fabric_memory(&mut self, fabric: &Fabric) {
        let path = "fabric.memory";
        let memory = fabric.memory;
        self.partita_memory(path, "fabric memory", Item::Fabric, memory);
        let devices: usize = self.system.partitions.iter().map(|p| p.accelerators.len()).sum();
        let needed = Fabric::memory_needed(devices);
        if memory.size != 0 && memory.size < needed {
            let message = format!(
                "fabric memory of {:#x} bytes is too small for {devices} virtual device(s), which need {needed:#x} \
                 (a 4 KiB interface page and a 1 KiB context each, in whole pages)",
                memory.size
            );
            self.push(path.into(), "size", message);
        }
    }

    fn prrs(&mut self, fabric: &Fabric) {
        let count = fabric.accelerators.len();
        for (r, prr) in fabric.prrs.iter().enumerate() {
            let path = prr_path(r);
            if let Some(problem) = name_problem(&prr.name) {
                self.push(path.clone(), "name", problem);
            }
            if let Some(first) = fabric.prrs.iter().take(r).position(|other| other.name == prr.name) {
                self.push(path.clone(), "name", format!("duplicate PRR name \"{}\" (also prr[{first}])", prr.name));
            }
            if prr.size == 0 {
                self.push(path.clone(), "size", format!("PRR \"{}\": the size must be more than 0", prr.name));
            }
            if prr.bitstream == 0 {
                let message = format!("PRR \"{}\": the bitstream must be more than 0 bytes", prr.name);
                self.push(path.clone(), "bitstream", message);
            }
            if prr.hosts.is_empty() {
                let message = format!("PRR \"{}\" hosts no accelerator; list 1 or more in hosts", prr.name);
                self.push(path.clone(), "hosts", message);
            }
            for (k, &a) in prr.hosts.iter().enumerate() {
                if a >= count {
                    let message = format!("PRR \"{}\": accelerator {a} does not exist; there are {count}", prr.name);
                    self.push(path.clone(), "hosts", message);
                } else if prr.hosts.iter().take(k).any(|&other| other == a) {
                    let message =
                        format!("PRR \"{}\" lists accelerator \"{}\" twice", prr.name, fabric.accelerators[a].name);
                    self.push(path.clone(), "hosts", message);
                }
            }
        }
    }

    fn accelerators(&mut self, fabric: &Fabric) {
        for (a, accelerator) in fabric.accelerators.iter().enumerate() {
            let path = accelerator_path(a);
            let label = format!("accelerator \"{}\"", accelerator.name);
            if let Some(problem) = name_problem(&accelerator.name) {
                self.push(path.clone(), "name", problem);
            }
            let first = fabric.accelerators.iter().take(a).position(|other| other.name == accelerator.name);
            if let Some(first) = first {
                let message =
                    format!("duplicate accelerator name \"{}\" (also accelerator[{first}])", accelerator.name);
                self.push(path.clone(), "name", message);
            }
            if !ACCELERATOR_FRAME_NS.contains(&accelerator.frame_ns) {
                let message = format!(
                    "{label}: a frame of {} ns is out of range {} ns",
                    accelerator.frame_ns,
                    bounds(&ACCELERATOR_FRAME_NS)
                );
                self.push(path.clone(), "frame", message);
            } else if accelerator.preempt_ns > accelerator.frame_ns {
                // Its consistency points come at least once a frame.
                let message = format!(
                    "{label}: preempt ({} us) is longer than a frame ({} us); it reaches a consistency point \
                     at every frame",
                    micros_text(accelerator.preempt_ns),
                    micros_text(accelerator.frame_ns)
                );
                self.push(path.clone(), "preempt", message);
            }
            // A PRR names the first of two namesakes; the duplicate is the problem.
            if first.is_none() && !fabric.prrs.iter().any(|prr| prr.hosts.contains(&a)) {
                let message = format!("{label} is hosted by no PRR; list it in the hosts of a [[fabric.prr]]");
                self.push(path, "name", message);
            }
        }
    }

    fn virtual_device(&mut self, fabric: &Fabric, p: usize, partition: &Partition, d: usize, device: &VirtualDevice) {
        let path = virtual_device_path(p, d);
        let count = fabric.accelerators.len();
        let Some(accelerator) = fabric.accelerators.get(device.accelerator) else {
            let message = format!(
                "partition \"{}\": accelerator {} does not exist; there are {count}",
                partition.name, device.accelerator
            );
            self.push(path, "name", message);
            return;
        };
        let label = format!("partition \"{}\" accelerator \"{}\"", partition.name, accelerator.name);
        if let Some(first) = partition.accelerators.iter().take(d).position(|o| o.accelerator == device.accelerator) {
            let message = format!("{label} is listed twice (also accelerators[{first}])");
            self.push(path.clone(), "name", message);
        }
        if !is_aligned(device.ipa) {
            self.push(path.clone(), "ipa", format!("{label}: {:#x} is not 4 KiB aligned", device.ipa));
        }
        self.interface_page(p, d, &path, &label, device);
        self.signals(p, partition, d, &path, &label, device);
        if device.deadline_us == Some(0) {
            self.push(path, "deadline", format!("{label}: the deadline must be longer than 0 us"));
        }
    }

    /// The page sits in the partition's guest space with everything else
    /// it maps; among pages, a clash is reported at the later one.
    fn interface_page(&mut self, p: usize, d: usize, path: &str, label: &str, device: &VirtualDevice) {
        let page = Range::new(device.ipa, INTERFACE_PAGE);
        for (other, range) in self.overlaps.with(Space::Guest(p), Item::Accelerator(p, d)) {
            let what = match other {
                Item::Accelerator(_, e) if e > d => continue,
                Item::Accelerator(_, e) => format!("accelerators[{e}]"),
                other => self.guest_name(p, other),
            };
            let message = format!(
                "{label}: the interface page {} overlaps {what} ({}) in guest-physical space",
                hex_range(&page),
                hex_range(&range)
            );
            self.push(path.into(), "ipa", message);
        }
    }

    /// The signals are virtual SPIs of the partition's own distributor, like
    /// doorbells: they must not be taken there already.
    fn signals(&mut self, p: usize, partition: &Partition, d: usize, path: &str, label: &str, device: &VirtualDevice) {
        for (k, &intid) in device.signals.iter().enumerate() {
            let problem = if intid == CONSOLE_INTID {
                format!("signal INTID {intid} is the emulated console's")
            } else if !SPI.contains(&intid) {
                format!("signal INTID {intid} is out of range {} (an SPI)", bounds(&SPI))
            } else if device.signals.iter().take(k).any(|&other| other == intid) {
                format!("signal INTID {intid} is listed twice")
            } else if let Some(e) = partition.accelerators.iter().take(d).position(|o| o.signals.contains(&intid)) {
                format!("signal INTID {intid} is already accelerators[{e}]'s")
            } else if let Some(other) = partition.devices.iter().find(|o| o.interrupts.iter().any(|i| i.intid == intid))
            {
                format!("signal INTID {intid} is already device \"{}\"'s interrupt", other.name)
            } else if let Some(channel) = self.doorbell_of(p, intid) {
                format!("signal INTID {intid} is already channel \"{channel}\"'s doorbell")
            } else {
                continue;
            };
            self.push(path.into(), "signals", format!("{label}: {problem}"));
        }
    }

    /// The channel of partition `p` whose doorbell is `intid`, if any.
    fn doorbell_of(&self, p: usize, intid: u32) -> Option<&str> {
        self.system.channels.iter().find_map(|channel| match &channel.kind {
            ChannelKind::SharedMemory { partitions, doorbell: Some(bell), .. }
                if *bell == intid && partitions.contains(&p) =>
            {
                Some(channel.name.as_str())
            }
            _ => None,
        })
    }
}

fn device_at(system: &System, p: usize, d: usize) -> Option<&VirtualDevice> {
    system.partitions.get(p)?.accelerators.get(d)
}

/// `partition "rtos" accelerator "qam16"`, the way every message names a
/// virtual device.
pub fn device_label(system: &System, p: usize, device: &VirtualDevice) -> String {
    let partition = system.partitions.get(p).map_or("?", |partition| partition.name.as_str());
    let accelerator = system
        .fabric
        .as_ref()
        .and_then(|fabric| fabric.accelerators.get(device.accelerator))
        .map_or("?", |accelerator| accelerator.name.as_str());
    format!("partition \"{partition}\" accelerator \"{accelerator}\"")
}

/// Why a wait is not bounded: who of equal or higher priority may hold
/// each compatible PRR.
pub fn holders_text(system: &System, holders: &[(usize, (usize, usize))]) -> String {
    if holders.is_empty() {
        return "no PRR can host its accelerator".into();
    }
    let fabric = system.fabric.as_ref();
    let held: Vec<String> = holders
        .iter()
        .map(|&(r, (q, e))| {
            let prr = fabric.and_then(|f| f.prrs.get(r)).map_or("?", |prr| prr.name.as_str());
            let holder = device_at(system, q, e).map_or_else(|| "?".into(), |device| device_label(system, q, device));
            format!("{prr} by {holder}")
        })
        .collect();
    format!(
        "virtual devices of equal or higher priority may hold every PRR that can host it at once ({})",
        held.join(", ")
    )
}

/// The deadlines the analysis cannot promise: any on a virtual device
/// whose wait has no bound, and, with the board's atomic costs (in
/// nanoseconds), one shorter than the bound. Rules of the host alone, on a
/// model that passed [`super::validate`]: the hypervisor keeps no deadline,
/// and the analysis stays out of its image.
pub fn allocation_deadlines(system: &System, costs: Option<&AtomicCosts>) -> Vec<Issue> {
    let mut issues = Vec::new();
    for latency in device_latencies(system, costs) {
        let (p, d) = (latency.partition, latency.device);
        let Some(device) = device_at(system, p, d) else { continue };
        let Some(deadline_us) = device.deadline_us else { continue };
        let problem = match &latency.wait {
            Wait::Unbounded { holders } => {
                format!(
                    "no bound on its allocation latency, so no deadline can hold: {}",
                    holders_text(system, holders)
                )
            }
            Wait::Bounded { latency: Some(bound), .. } if bound.worst > deadline_us.saturating_mul(1_000) => format!(
                "the deadline of {deadline_us} us is shorter than its worst-case allocation latency, {} us",
                micros_text(bound.worst)
            ),
            Wait::Bounded { .. } => continue,
        };
        let message = format!("{}: {problem}", device_label(system, p, device));
        issues.push(Issue { path: virtual_device_path(p, d), field: "deadline", message });
    }
    issues
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::config::allocation::KER_ONE_TABLE_4;
    use crate::config::model::{Accelerator, Function, Interrupt, Prr};
    use alloc::vec;
    use proptest::prelude::*;

    fn fabric(s: &mut System) -> &mut Fabric {
        s.fabric.as_mut().unwrap()
    }

    #[test]
    fn the_sample_with_a_fabric_is_valid() {
        assert_eq!(validate(&fabric_system()), vec![]);
        assert_eq!(validate(&accelerated()), vec![]);
    }

    #[test]
    fn virtual_devices_need_a_fabric() {
        let mut s = accelerated();
        s.fabric = None;
        let issues = validate(&s);
        assert_eq!(issues.len(), 2, "{issues:#?}");
        assert_eq!((issues[0].path.as_str(), issues[0].field), ("partition[0]", "accelerators"));
        assert!(issues[0]
            .message
            .contains("partition \"rtos\" has virtual devices, but the configuration has no [fabric]"));
    }

    #[test]
    fn settings() {
        let mut s = accelerated();
        fabric(&mut s).bandwidth = 0;
        expect_one(&s, "fabric", "bandwidth", "must be more than 0 bytes per second");
        // Each time field at both ends of its range, then one step outside.
        type Field = fn(&mut Fabric) -> &mut u64;
        let fields: [(&str, Field, [u64; 4], &str); 2] = [
            ("hold", |f| &mut f.hold_us, [10, 1_000_000, 9, 1_000_001], "out of range 10..=1000000 us"),
            ("turn", |f| &mut f.turn_us, [10, 10_000, 9, 10_001], "out of range 10..=10000 us"),
        ];
        for (field, value, [low, high, under, over], message) in fields {
            let mut s = accelerated();
            for good in [low, high] {
                *value(fabric(&mut s)) = good;
                assert_eq!(validate(&s), vec![], "{field} = {good}");
            }
            for bad in [under, over] {
                *value(fabric(&mut s)) = bad;
                expect_one(&s, "fabric", field, message);
            }
        }
    }

    #[test]
    fn the_emulated_fabric_has_a_pcpu_of_its_own() {
        let mut s = accelerated();
        fabric(&mut s).cpu = 4;
        expect_one(&s, "fabric", "cpu", "pCPU 4 does not exist (platform.cpus = 4)");
        fabric(&mut s).cpu = 2;
        let issues = validate(&s);
        assert_eq!(issues.len(), 1, "{issues:#?}");
        assert!(issues[0].message.contains("partition \"gpos\" has a vCPU that lives or may migrate there"));
        let mut s = accelerated();
        s.partitions[0].migrate = vec![crate::config::model::Migration { vcpu: 0, to: vec![0] }];
        expect_one(&s, "fabric", "cpu", "partition \"rtos\" has a vCPU");
        assert_eq!(Fabric::free_cpu(4, &s.partitions), None);
        assert_eq!(Fabric::free_cpu(4, &accelerated().partitions), Some(0));
    }

    #[test]
    fn memory_is_partitas_alone() {
        for (base, text) in [
            (0x4000_0000, "overlaps hypervisor memory (0x40000000..0x42000000)"),
            (0x4200_0000, "overlaps partition \"rtos\" memory[0] (0x42000000..0x43000000)"),
            (0x8000_0000, "is outside platform RAM"),
        ] {
            let mut s = accelerated();
            fabric(&mut s).memory.base = base;
            expect_one(&s, "fabric.memory", "base", text);
        }
        let mut s = linked();
        s.fabric = Some(ker_one_fabric());
        fabric(&mut s).memory.base = 0x4600_0000;
        expect_one(&s, "fabric.memory", "base", "overlaps channel \"frames\" (0x46000000..0x46010000)");
        let mut s = accelerated();
        fabric(&mut s).memory.size = 0x4800;
        expect_one(&s, "fabric.memory", "size", "not a multiple of 4 KiB");
        fabric(&mut s).memory.size = 0;
        expect_one(&s, "fabric.memory", "size", "must not be zero");
        fabric(&mut s).memory.base = 0x4700_0800;
        fabric(&mut s).memory.size = 0x1000;
        let issues = validate(&s);
        assert!(issues.iter().any(|i| i.message.contains("0x47000800 is not 4 KiB aligned")), "{issues:#?}");
    }

    #[test]
    fn memory_holds_a_page_and_a_context_per_device() {
        assert_eq!(Fabric::memory_needed(0), 0x1000);
        assert_eq!(Fabric::memory_needed(1), 0x2000);
        assert_eq!(Fabric::memory_needed(4), 0x5000);
        assert_eq!(Fabric::memory_needed(5), 0x7000);
        assert_eq!(Fabric::memory_needed(usize::MAX), u64::MAX, "saturated, so never enough");
        let mut s = accelerated();
        fabric(&mut s).memory.size = 0x1000;
        expect_one(&s, "fabric.memory", "size", "too small for 2 virtual device(s), which need 0x3000");
    }

    #[test]
    fn counts() {
        let mut s = accelerated();
        let template = fabric(&mut s).prrs[0].clone();
        fabric(&mut s).prrs = (0..33).map(|i| Prr { name: format!("p{i}"), ..template.clone() }).collect();
        expect_one(&s, "fabric", "prr", "33 PRRs; at most 32 are allowed");
        let mut s = accelerated();
        let template = fabric(&mut s).accelerators[0].clone();
        let many = (0..33).map(|i| Accelerator { name: format!("a{i}"), ..template.clone() });
        fabric(&mut s).accelerators.extend(many);
        expect_one(&s, "fabric", "accelerator", "37 accelerators; at most 32 are allowed");
        let mut s = accelerated();
        let device = s.partitions[0].accelerators[0];
        s.partitions[0].accelerators = vec![device; 9];
        expect_one(&s, "partition[0]", "accelerators", "9 virtual devices; at most 8 are allowed");
        let mut s = accelerated();
        fabric(&mut s).prrs[0].hosts = vec![0; 33];
        expect_one(&s, "fabric.prr[0]", "hosts", "lists 33 accelerators; there are at most 32");
    }

    #[test]
    fn accelerators() {
        let mut s = accelerated();
        fabric(&mut s).accelerators[1].name = "qam16".into();
        expect_one(&s, "fabric.accelerator[1]", "name", "duplicate accelerator name \"qam16\" (also accelerator[0])");
        fabric(&mut s).accelerators[1].name = "QAM".into();
        expect_one(&s, "fabric.accelerator[1]", "name", "may only use");
        let mut s = accelerated();
        fabric(&mut s).accelerators[2].frame_ns = 0;
        expect_one(&s, "fabric.accelerator[2]", "frame", "accelerator \"fft512\": a frame of 0 ns is out of range");
        let mut s = accelerated();
        fabric(&mut s).accelerators[2].preempt_ns = 71_101;
        expect_one(&s, "fabric.accelerator[2]", "preempt", "preempt (71.101 us) is longer than a frame (71.1 us)");
        let mut s = accelerated();
        fabric(&mut s).accelerators.push(Accelerator {
            name: "spare".into(),
            function: Function::Qam64,
            frame_ns: 1,
            preempt_ns: 1,
        });
        expect_one(&s, "fabric.accelerator[4]", "name", "accelerator \"spare\" is hosted by no PRR");
    }

    #[test]
    fn prrs() {
        let mut s = accelerated();
        fabric(&mut s).prrs[2].name = "prr1".into();
        expect_one(&s, "fabric.prr[2]", "name", "duplicate PRR name \"prr1\" (also prr[0])");
        let mut s = accelerated();
        fabric(&mut s).prrs[0].size = 0;
        expect_one(&s, "fabric.prr[0]", "size", "PRR \"prr1\": the size must be more than 0");
        let mut s = accelerated();
        fabric(&mut s).prrs[0].bitstream = 0;
        expect_one(&s, "fabric.prr[0]", "bitstream", "the bitstream must be more than 0 bytes");
        let mut s = accelerated();
        fabric(&mut s).prrs[0].hosts = vec![0, 1, 0];
        expect_one(&s, "fabric.prr[0]", "hosts", "PRR \"prr1\" lists accelerator \"qam16\" twice");
        let mut s = accelerated();
        fabric(&mut s).prrs[0].hosts = vec![0, 1, 4];
        expect_one(&s, "fabric.prr[0]", "hosts", "PRR \"prr1\": accelerator 4 does not exist; there are 4");
        // A PRR hosting nothing; FFT-1024 loses its only PRR too.
        let mut s = accelerated();
        fabric(&mut s).prrs[2].hosts.clear();
        let issues = validate(&s);
        let found: Vec<(&str, &str)> = issues.iter().map(|i| (i.path.as_str(), i.field)).collect();
        assert_eq!(found, [("fabric.prr[2]", "hosts"), ("fabric.accelerator[3]", "name")], "{issues:#?}");
        assert!(issues[0].message.contains("PRR \"prr3\" hosts no accelerator"));
    }

    #[test]
    fn virtual_devices() {
        let mut s = accelerated();
        s.partitions[0].accelerators[0].accelerator = 4;
        expect_one(&s, "partition[0].accelerators[0]", "name", "partition \"rtos\": accelerator 4 does not exist");
        let mut s = accelerated();
        let mut twice = s.partitions[0].accelerators[0];
        twice.ipa = 0x0b00_8000;
        twice.signals = [90, 91, 92];
        s.partitions[0].accelerators.push(twice);
        expect_one(
            &s,
            "partition[0].accelerators[1]",
            "name",
            "partition \"rtos\" accelerator \"qam16\" is listed twice (also accelerators[0])",
        );
        let mut s = accelerated();
        s.partitions[0].accelerators[0].ipa = 0x0b00_0800;
        let issues = validate(&s);
        assert_eq!((issues[0].path.as_str(), issues[0].field), ("partition[0].accelerators[0]", "ipa"));
        assert!(issues[0].message.contains("0xb000800 is not 4 KiB aligned"), "{issues:#?}");
        let mut s = accelerated();
        s.partitions[0].accelerators[0].deadline_us = Some(0);
        expect_one(&s, "partition[0].accelerators[0]", "deadline", "the deadline must be longer than 0 us");
    }

    #[test]
    fn interface_pages_in_guest_space() {
        for (ipa, text) in [
            (0x40ff_f000, "the interface page 0x40fff000..0x41000000 overlaps memory[0] (0x40000000..0x41000000)"),
            (0x0900_0000, "overlaps the console (0x09000000..0x09001000)"),
            (0x0800_0000, "overlaps the virtual GIC distributor"),
            (0x080b_0000, "overlaps the virtual GIC redistributors"),
        ] {
            let mut s = accelerated();
            s.partitions[0].accelerators[0].ipa = ipa;
            expect_one(&s, "partition[0].accelerators[0]", "ipa", text);
        }
        let mut s = accelerated();
        s.partitions[0].devices.push(gpio());
        s.partitions[0].accelerators[0].ipa = 0x0903_0000;
        expect_one(&s, "partition[0].accelerators[0]", "ipa", "overlaps device \"gpio\" (0x09030000..0x09031000)");
        let mut s = linked();
        s.fabric = Some(ker_one_fabric());
        s.partitions[1].accelerators = accelerated().partitions[1].accelerators.clone();
        s.partitions[1].accelerators[0].ipa = 0x5000_f000;
        expect_one(&s, "partition[1].accelerators[0]", "ipa", "overlaps channel \"frames\" (0x50000000..0x50010000)");
        let mut s = accelerated();
        let mut second = s.partitions[1].accelerators[0];
        (second.accelerator, second.signals) = (1, [90, 91, 92]);
        s.partitions[1].accelerators.push(second);
        expect_one(
            &s,
            "partition[1].accelerators[1]",
            "ipa",
            "partition \"gpos\" accelerator \"qam64\": the interface page 0x0b003000..0x0b004000 overlaps \
             accelerators[0]",
        );
        // Pages at the same address in two partitions are two pages.
        let mut s = accelerated();
        s.partitions[1].accelerators[0].ipa = s.partitions[0].accelerators[0].ipa;
        assert_eq!(validate(&s), vec![]);
    }

    #[test]
    fn signals() {
        for (signals, text) in [
            ([33, 81, 82], "signal INTID 33 is the emulated console's"),
            ([80, 81, 1020], "signal INTID 1020 is out of range 32..=1019 (an SPI)"),
            ([80, 81, 31], "signal INTID 31 is out of range"),
            ([80, 81, 80], "signal INTID 80 is listed twice"),
            ([80, 81, 39], "signal INTID 39 is already device \"gpio\"'s interrupt"),
        ] {
            let mut s = accelerated();
            s.partitions[0].devices.push(gpio());
            s.partitions[0].accelerators[0].signals = signals;
            expect_one(&s, "partition[0].accelerators[0]", "signals", text);
        }
        let mut s = accelerated();
        let mut second = s.partitions[0].accelerators[0];
        (second.accelerator, second.ipa, second.signals) = (3, 0x0b00_3000, [83, 84, 82]);
        s.partitions[0].accelerators.push(second);
        expect_one(&s, "partition[0].accelerators[1]", "signals", "signal INTID 82 is already accelerators[0]'s");
        let mut s = linked();
        s.fabric = Some(ker_one_fabric());
        s.partitions[1].accelerators = accelerated().partitions[1].accelerators.clone();
        s.partitions[1].accelerators[0].signals = [48, 49, 50];
        expect_one(
            &s,
            "partition[1].accelerators[0]",
            "signals",
            "partition \"gpos\" accelerator \"fft1024\": signal INTID 48 is already channel \"frames\"'s doorbell",
        );
        // Signals are virtual: another partition's passthrough interrupt is no clash.
        let mut s = accelerated();
        let mut device = gpio();
        device.interrupts = vec![Interrupt { intid: 80, vcpu: 0 }];
        s.partitions[1].devices.push(device);
        s.partitions[1].accelerators[0].signals = [90, 91, 92];
        assert_eq!(validate(&s), vec![]);
    }

    #[test]
    fn a_deadline_needs_a_bound() {
        let mut s = accelerated();
        // gpos's QAM-64 and FFT-512 can hold PRR 1 and 2 while rtos waits.
        s.partitions[1].priority = 192;
        let mut extra = s.partitions[1].accelerators[0];
        for (accelerator, ipa, signals) in [(1, 0x0b00_1000, [83, 84, 85]), (2, 0x0b00_2000, [86, 87, 88])] {
            (extra.accelerator, extra.ipa, extra.signals) = (accelerator, ipa, signals);
            s.partitions[1].accelerators.push(extra);
        }
        assert_eq!(allocation_deadlines(&s, None), vec![], "no deadline, no promise");
        s.partitions[0].accelerators[0].deadline_us = Some(2_000);
        assert_eq!(validate(&s), vec![], "the hypervisor keeps no deadline");
        let issues = allocation_deadlines(&s, None);
        assert_eq!(issues.len(), 1, "{issues:#?}");
        assert_eq!((issues[0].path.as_str(), issues[0].field), ("partition[0].accelerators[0]", "deadline"));
        assert_eq!(
            issues[0].message,
            "partition \"rtos\" accelerator \"qam16\": no bound on its allocation latency, so no deadline can hold: \
             virtual devices of equal or higher priority may hold every PRR that can host it at once (prr1 by partition \"gpos\" \
             accelerator \"qam64\", prr2 by partition \"gpos\" accelerator \"fft512\")",
        );
    }

    fn arbitrary_fabric() -> impl Strategy<Value = Fabric> {
        let index = || prop_oneof![0usize..6, Just(usize::MAX)];
        let big = || prop_oneof![Just(0u64), Just(1), Just(u64::MAX), any::<u64>()];
        let prr = (any::<u32>(), big(), proptest::collection::vec(index(), 0..6))
            .prop_map(|(size, bitstream, hosts)| Prr { name: "p".into(), size, bitstream, hosts });
        let accelerator = (big(), big()).prop_map(|(frame_ns, preempt_ns)| Accelerator {
            name: "a".into(),
            function: Function::Fft512,
            frame_ns,
            preempt_ns,
        });
        (big(), big(), big(), big(), proptest::collection::vec(prr, 0..6), proptest::collection::vec(accelerator, 0..6))
            .prop_map(|(base, size, bandwidth, hold_us, prrs, accelerators)| Fabric {
                memory: Range::new(base, size),
                bandwidth,
                hold_us,
                turn_us: 50,
                cpu: 0,
                prrs,
                accelerators,
            })
    }

    fn arbitrary_devices() -> impl Strategy<Value = Vec<VirtualDevice>> {
        let device =
            (prop_oneof![0usize..6, Just(usize::MAX)], any::<u64>(), any::<[u32; 3]>(), any::<Option<u64>>()).prop_map(
                |(accelerator, ipa, signals, deadline_us)| VirtualDevice { accelerator, ipa, signals, deadline_us },
            );
        proptest::collection::vec(device, 0..5)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// The hypervisor runs these rules, and the analysis, on whatever it
        /// decodes at boot.
        #[test]
        fn never_panics(
            fabric in proptest::option::of(arbitrary_fabric()),
            rtos in arbitrary_devices(),
            gpos in arbitrary_devices(),
            priorities in any::<(u8, u8)>(),
        ) {
            let mut s = linked();
            s.fabric = fabric;
            s.partitions[0].accelerators = rtos;
            s.partitions[1].accelerators = gpos;
            (s.partitions[0].priority, s.partitions[1].priority) = priorities;
            let _ = validate(&s);
            let _ = allocation_deadlines(&s, Some(&KER_ONE_TABLE_4));
        }
    }

    #[test]
    fn a_deadline_shorter_than_the_bound() {
        // rtos's QAM-16: 6.76 + 810 = 816.76 us with nothing to preempt
        // (gpos holds FFT-1024 only), then 1,206 + 0.81 us for the download
        // of FFT-1024 gpos may have asked for first, 0.64 us to hand its PRR
        // over and 0.5 us to search again.
        let mut s = accelerated();
        s.partitions[0].accelerators[0].deadline_us = Some(2_025);
        assert_eq!(allocation_deadlines(&s, Some(&KER_ONE_TABLE_4)), vec![]);
        s.partitions[0].accelerators[0].deadline_us = Some(2_024);
        let issues = allocation_deadlines(&s, Some(&KER_ONE_TABLE_4));
        assert_eq!(issues.len(), 1, "{issues:#?}");
        assert_eq!((issues[0].path.as_str(), issues[0].field), ("partition[0].accelerators[0]", "deadline"));
        assert_eq!(
            issues[0].message,
            "partition \"rtos\" accelerator \"qam16\": the deadline of 2024 us is shorter than its worst-case \
             allocation latency, 2024.71 us"
        );
        assert_eq!(validate(&s), vec![], "the profile-free rules do not know the costs");
    }
}
