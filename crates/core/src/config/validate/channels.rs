//! Channels: names, the partitions each names, the fields of its kind, and
//! for shared memory, where its window sits in host and guest space and
//! which doorbell it rings.

use super::overlap::{Item, Space};
use super::{bounds, channel_path, hex_range, is_aligned, name_problem, Validator};
use crate::config::limits::{
    CONSOLE_INTID, MAX_CHANNELS, MAX_MESSAGE, MAX_PARTITIONS, MAX_QUEUE_BYTES, QUEUE_DEPTH, SPI,
};
use crate::config::model::{Channel, ChannelKind, Range};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

impl Validator<'_> {
    pub(super) fn channel_counts(&mut self) {
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

    pub(super) fn channels(&mut self) {
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
                ChannelKind::SharedMemory { .. } => self.shared_memory(i, &label, &channel.kind, known),
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
            let message =
                format!("{label}: a message of {max_message} bytes is out of range {} bytes", bounds(&MAX_MESSAGE));
            self.push(path.into(), "max_message", message);
        }
    }

    fn queue_depth(&mut self, path: &str, label: &str, max_message: u32, depth: u32) {
        if !QUEUE_DEPTH.contains(&depth) {
            let message = format!("{label}: a depth of {depth} messages is out of range {}", bounds(&QUEUE_DEPTH));
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

    fn shared_memory(&mut self, i: usize, label: &str, kind: &ChannelKind, known: bool) {
        let &ChannelKind::SharedMemory { ref partitions, ipa, pa, size, ref read_only, doorbell } = kind else {
            return;
        };
        let path = &channel_path(i);
        if partitions.len() < 2 {
            let message = format!("{label} has {} partition(s); shared memory needs 2 or more", partitions.len());
            self.push(path.into(), "partitions", message);
        }
        let guest = Range::new(ipa, size);
        self.range(path, "base", "size", &guest);
        if !is_aligned(pa) {
            self.push(path.into(), "phys", format!("{pa:#x} is not 4 KiB aligned"));
        }
        self.shared_memory_host(i, label, Range::new(pa, size));
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
            self.shared_memory_guest(i, label, p, guest);
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

    fn shared_memory_host(&mut self, i: usize, label: &str, host: Range) {
        let path = channel_path(i);
        let ram = self.system.platform.ram;
        if !ram.covers(&host) {
            let message =
                format!("{label}: host memory {} is outside platform RAM {}", hex_range(&host), hex_range(&ram));
            self.push(path.clone(), "phys", message);
        }
        for (other, range) in self.overlaps.with(Space::Physical, Item::Channel(i)) {
            let message = match other {
                Item::Hypervisor => format!("{label}: host memory overlaps hypervisor memory ({})", hex_range(&range)),
                Item::Memory(q, m) => format!(
                    "{label}: host memory {} overlaps partition \"{}\" memory[{m}] ({})",
                    hex_range(&host),
                    self.partition_name(q),
                    hex_range(&range)
                ),
                // Other channels are compared in `channel_pairs`.
                _ => continue,
            };
            self.push(path.clone(), "phys", message);
        }
    }

    /// Each partition maps the pages at `base`, so they must be free in
    /// every one of them.
    fn shared_memory_guest(&mut self, i: usize, label: &str, p: usize, guest: Range) {
        let Some(partition) = self.system.partitions.get(p) else { return };
        for (other, range) in self.overlaps.with(Space::Guest(p), Item::Channel(i)) {
            // Other channels are compared in `channel_pairs`, interface
            // pages by the fabric's rules.
            if matches!(other, Item::Channel(_) | Item::Accelerator(..)) {
                continue;
            }
            let message = format!(
                "{label} at {} overlaps {} ({}) of partition \"{}\" in guest-physical space",
                hex_range(&guest),
                self.guest_name(p, other),
                hex_range(&range),
                partition.name
            );
            self.push(channel_path(i), "base", message);
        }
    }

    fn doorbell_range(&mut self, path: &str, label: &str, intid: u32) {
        if intid == CONSOLE_INTID {
            let message = format!("{label}: doorbell INTID {intid} is the emulated console's");
            self.push(path.into(), "doorbell_intid", message);
        } else if !SPI.contains(&intid) {
            let message = format!("{label}: doorbell INTID {intid} is out of range {} (an SPI)", bounds(&SPI));
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
        let (channels, overlaps) = (&self.system.channels, self.overlaps);
        let count = self.system.partitions.len();
        // The pairs are walked for the doorbells; whether two windows
        // overlap is the overlap engine's answer.
        for (i, channel) in channels.iter().enumerate() {
            let ChannelKind::SharedMemory { partitions, ipa, size, doorbell, .. } = &channel.kind else { continue };
            for (j, other) in channels.iter().enumerate().take(i) {
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
                let (this, that) = (Item::Channel(i), Item::Channel(j));
                if overlaps.between(Space::Physical, this, that) {
                    let message = format!(
                        "{label}: host memory overlaps channel \"{}\" ({})",
                        other.name,
                        hex_range(&Range::new(*other_pa, *other_size))
                    );
                    self.push(channel_path(i), "phys", message);
                }
                // The window has one guest address in all its members, so it
                // is named in the first they share.
                let common = partitions.iter().find(|&&p| p < count && other_partitions.contains(&p));
                if let Some(&p) = common.filter(|&&p| overlaps.between(Space::Guest(p), this, that)) {
                    let message = format!(
                        "{label} at {} overlaps channel \"{}\" ({}) in partition \"{}\"'s guest-physical space",
                        hex_range(&Range::new(*ipa, *size)),
                        other.name,
                        hex_range(&Range::new(*other_ipa, *other_size)),
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
}

/// Every partition list of a channel, with the field that holds it.
pub(super) fn endpoint_lists(kind: &ChannelKind) -> Vec<(&'static str, &[usize])> {
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

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use alloc::format;
    use alloc::vec;

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
}
