//! What a partition maps: its memory regions and passthrough devices, in
//! host-physical space (inside or outside RAM, apart from Partita's memory
//! and from each other) and in its guest-physical space (apart from each
//! other, its console and the emulated GIC), and the interrupts its devices
//! bring. These are address rules, and shared-memory channels follow the
//! same ones, so they live apart from the partition's own settings.

use super::overlap::{Item, Space};
use super::{bounds, device_path, hex_range, is_aligned, memory_path, name_problem, partition_path, Validator};
use crate::config::limits::{CONSOLE_INTID, SPI};
use crate::config::model::{Device, Interrupt, MemoryRegion, Partition};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;

/// Where a placement hint puts a region: on 2 MiB, as Partita places
/// regions itself, so that stage 2 can map it in blocks.
const PLACEMENT_ALIGN: u64 = 2 << 20;

impl Validator<'_> {
    /// The rules of one partition's regions and devices, in that order.
    pub(super) fn mappings(&mut self, p: usize, partition: &Partition) {
        for (m, region) in partition.memory.iter().enumerate() {
            self.memory_region(p, m, region);
        }
        for (d, device) in partition.devices.iter().enumerate() {
            self.device(p, d, device);
        }
        self.unique_device_names(p, partition);
        self.guest_overlaps(p, partition);
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
        let ram = self.system.platform.ram;
        let host = region.host();
        if !ram.covers(&host) {
            let message = format!("memory region {} is outside platform RAM {}", hex_range(&host), hex_range(&ram));
            self.push(path.clone(), "phys", message);
        }
        if self.overlaps.between(Space::Physical, Item::Memory(p, m), Item::Hypervisor) {
            let hypervisor = self.system.hypervisor.memory;
            let hint = self.placement_hint(p, m);
            let message = format!("memory region overlaps hypervisor memory ({}){hint}", hex_range(&hypervisor));
            self.push(path, "phys", message);
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
        self.device_host_fixed(p, d, &path, device);
    }

    fn interrupts(&mut self, p: usize, path: &str, device: &Device) {
        let vcpus = self.system.partitions.get(p).map_or(0, |partition| partition.vcpus.len());
        for &Interrupt { intid, vcpu } in &device.interrupts {
            if intid == CONSOLE_INTID {
                let message = format!("interrupt {intid} is reserved for the partition's emulated console");
                self.push(path.into(), "interrupts", message);
            } else if !SPI.contains(&intid) {
                let message = format!("interrupt {intid} is not an SPI; only {} can be passed through", bounds(&SPI));
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

    /// A device is MMIO of its own: not RAM, nor a frame Partita keeps.
    fn device_host_fixed(&mut self, p: usize, d: usize, path: &str, device: &Device) {
        let host = device.host();
        for (item, range) in self.overlaps.with(Space::Physical, Item::Device(p, d)) {
            let what = match item {
                Item::Ram => "platform RAM",
                Item::Console => "Partita's console",
                Item::Gicd => "the GIC distributor",
                Item::Gicr => "the GIC redistributors",
                _ => continue,
            };
            let message = format!("device {} overlaps {what} ({})", hex_range(&host), hex_range(&range));
            self.push(path.into(), "phys", message);
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

    /// RAM, devices and the console must not share guest-physical addresses,
    /// nor hide the emulated GIC, which guests find at the platform's
    /// addresses. Every window's clashes with the GIC come first, then those
    /// among the windows, each at the later window.
    fn guest_overlaps(&mut self, p: usize, partition: &Partition) {
        let (space, overlaps) = (Space::Guest(p), self.overlaps);
        let memory = (0..partition.memory.len()).map(|m| Item::Memory(p, m));
        let devices = (0..partition.devices.len()).map(|d| Item::Device(p, d));
        let windows = || memory.clone().chain(devices.clone()).chain([Item::Console]);
        let gic = windows().flat_map(|window| {
            let gic = overlaps.with(space, window).filter(|(item, _)| matches!(item, Item::Gicd | Item::Gicr));
            gic.map(move |clash| (window, clash))
        });
        // The windows are collected before the GIC and the channels, so
        // what precedes a window is windows only.
        let among = windows().flat_map(|window| overlaps.before(space, window).map(move |clash| (window, clash)));
        for (window, (other, range)) in gic.chain(among) {
            let (path, field, what) = match window {
                Item::Memory(_, m) => (memory_path(p, m), "base", "memory region".into()),
                Item::Device(_, d) => (device_path(p, d), "base", self.guest_name(p, window)),
                _ => (partition_path(p), "console", self.guest_name(p, window)),
            };
            let message = format!(
                "{what} overlaps {} ({}) in guest-physical space",
                self.guest_name(p, other),
                hex_range(&range)
            );
            self.push(path, field, message);
        }
    }

    /// How messages name a range of partition `p`'s guest space.
    pub(super) fn guest_name(&self, p: usize, item: Item) -> String {
        match item {
            Item::Memory(_, m) => format!("memory[{m}]"),
            Item::Device(_, d) => format!("device \"{}\"", self.device_name(p, d)),
            Item::Gicd => "the virtual GIC distributor".into(),
            Item::Gicr => "the virtual GIC redistributors".into(),
            Item::Channel(c) => {
                format!("channel \"{}\"", self.system.channels.get(c).map_or("?", |channel| channel.name.as_str()))
            }
            _ => "the console".into(),
        }
    }

    /// Host-physical RAM belongs to exactly one partition region.
    pub(super) fn host_memory_overlaps(&mut self) {
        let overlaps = self.overlaps;
        for (p, partition) in self.system.partitions.iter().enumerate() {
            for m in 0..partition.memory.len() {
                for (other, range) in overlaps.before(Space::Physical, Item::Memory(p, m)) {
                    let Item::Memory(q, n) = other else { continue };
                    let name = self.partition_name(q);
                    let hint = self.placement_hint(p, m);
                    let message = format!(
                        "memory region overlaps partition \"{name}\" memory[{n}] ({}){hint}",
                        hex_range(&range)
                    );
                    self.push(memory_path(p, m), "phys", message);
                }
            }
        }
    }

    /// How to move region `m` of partition `p` off what it overlaps: Partita
    /// places a region without `phys` itself, and an identity region moves
    /// with its `base`; the free range offered is the one nearest where
    /// the region is now.
    fn placement_hint(&self, p: usize, m: usize) -> String {
        let Some(region) = self.system.partitions.get(p).and_then(|partition| partition.memory.get(m)) else {
            return String::new();
        };
        let ram = self.system.platform.ram;
        let free = self.overlaps.free_near(ram, region.size, region.pa, Item::Memory(p, m), PLACEMENT_ALIGN);
        let free = free.map_or_else(
            || " (no free range of that size is left in RAM)".into(),
            |base| format!(" such as {}", hex_range(&crate::config::model::Range::new(base, region.size))),
        );
        if region.identity {
            format!("; move `base` (and `phys`) to a free range{free}")
        } else {
            format!("; drop `phys` to let Partita place the region, or move it to a free range{free}")
        }
    }

    /// A device's registers are passed through to one partition only.
    pub(super) fn device_overlaps(&mut self) {
        let overlaps = self.overlaps;
        for (p, partition) in self.system.partitions.iter().enumerate() {
            for d in 0..partition.devices.len() {
                for (other, range) in overlaps.before(Space::Physical, Item::Device(p, d)) {
                    let Item::Device(q, e) = other else { continue };
                    let message = format!(
                        "device overlaps partition \"{}\" device \"{}\" ({})",
                        self.partition_name(q),
                        self.device_name(q, e),
                        hex_range(&range)
                    );
                    self.push(device_path(p, d), "phys", message);
                }
            }
        }
    }

    /// Each physical interrupt is routed to exactly one partition.
    pub(super) fn interrupt_claims(&mut self) {
        let mut owners: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
        let system = self.system;
        for (p, partition) in system.partitions.iter().enumerate() {
            for (d, device) in partition.devices.iter().enumerate() {
                for &Interrupt { intid, .. } in &device.interrupts {
                    if let Some(&(q, e)) = owners.get(&intid) {
                        let message = format!(
                            "interrupt {intid} is already claimed by partition \"{}\" device \"{}\"; an interrupt \
                             goes to one partition only, so remove {intid} from one of the two `interrupts` lists \
                             (partitions that both need to hear of an event can share a channel's doorbell)",
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
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::config::model::Perms;
    use alloc::vec;

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
}
