//! Timing-accurate I/O: the controller Partita owns, its timing settings,
//! and each partition's grant of pins. A pin belongs to one partition, and
//! the controller to Partita alone: a partition that had it as a plain
//! device could drive every pin whenever it liked.

use super::{bounds, is_aligned, Validator};
use crate::config::limits::{PAGE_SIZE, TIMED_IO_DEPTH, TIMED_IO_HORIZON_US, TIMED_IO_LEAD_US};
use crate::config::model::{Partition, Range, TimedIo, TimedIoGrant};
use alloc::format;
use alloc::string::String;

const PATH: &str = "timed_io";

fn grant_path(g: usize) -> String {
    format!("timed_io.grant[{g}]")
}

impl Validator<'_> {
    pub(super) fn timed_io(&mut self) {
        let Some(timed_io) = &self.system.timed_io else { return };
        self.timed_io_device(timed_io);
        self.timed_io_timing(timed_io);
        for (g, grant) in timed_io.grants.iter().enumerate() {
            self.timed_io_grant(timed_io, g, grant);
        }
    }

    fn timed_io_device(&mut self, timed_io: &TimedIo) {
        let device = Range::new(timed_io.device, PAGE_SIZE);
        if !is_aligned(device.base) {
            self.push(PATH.into(), "device", format!("{:#x} is not 4 KiB aligned", device.base));
        }
        let platform = &self.system.platform;
        for (what, range) in [("RAM", platform.ram), ("Partita's console", platform.console)]
            .into_iter()
            .chain([("the GIC distributor", platform.gicd), ("the GIC redistributors", platform.gicr)])
        {
            if device.overlaps(&range) {
                let message = format!("the timed-I/O controller at {:#x} overlaps {what}", device.base);
                self.push(PATH.into(), "device", message);
            }
        }
        for partition in &self.system.partitions {
            if let Some(plain) = partition.devices.iter().find(|d| d.host().overlaps(&device)) {
                let message = format!(
                    "partition \"{}\" has the timed-I/O controller at {:#x} as its device \"{}\": Partita owns it, \
                     so no partition may map it (a grant's `view` gives a read-only one)",
                    partition.name, device.base, plain.name
                );
                self.push(PATH.into(), "device", message);
            }
        }
    }

    fn timed_io_timing(&mut self, timed_io: &TimedIo) {
        if !TIMED_IO_HORIZON_US.contains(&timed_io.horizon_us) {
            let message =
                format!("a horizon of {} us is out of range {} us", timed_io.horizon_us, bounds(&TIMED_IO_HORIZON_US));
            self.push(PATH.into(), "horizon", message);
        }
        if !TIMED_IO_LEAD_US.contains(&timed_io.lead_us) {
            let message = format!("a lead of {} us is out of range {} us", timed_io.lead_us, bounds(&TIMED_IO_LEAD_US));
            self.push(PATH.into(), "lead", message);
        } else if timed_io.lead_us >= timed_io.horizon_us {
            let message = format!(
                "the lead of {} us must be shorter than the horizon of {} us",
                timed_io.lead_us, timed_io.horizon_us
            );
            self.push(PATH.into(), "lead", message);
        }
    }

    fn timed_io_grant(&mut self, timed_io: &TimedIo, g: usize, grant: &TimedIoGrant) {
        let path = grant_path(g);
        let Some(partition) = self.system.partitions.get(grant.partition) else {
            let count = self.system.partitions.len();
            let message = format!("partition {} does not exist; there are {count}", grant.partition);
            self.push(path, "partition", message);
            return;
        };
        if let Some(first) = timed_io.grants[..g].iter().position(|other| other.partition == grant.partition) {
            let message = format!("partition \"{}\" has a grant already (timed_io.grant[{first}])", partition.name);
            self.push(path.clone(), "partition", message);
        }
        if grant.pins == 0 {
            self.push(
                path.clone(),
                "pins",
                format!("partition \"{}\": a grant needs at least one pin", partition.name),
            );
        }
        for (first, other) in timed_io.grants[..g].iter().enumerate() {
            let shared = other.pins & grant.pins;
            if shared != 0 && other.partition != grant.partition {
                let message = format!(
                    "pin {} is granted to partition \"{}\" already (timed_io.grant[{first}]): a pin belongs to one partition",
                    shared.trailing_zeros(),
                    self.partition_name(other.partition)
                );
                self.push(path.clone(), "pins", message);
            }
        }
        if !TIMED_IO_DEPTH.contains(&grant.depth) {
            let message = format!(
                "partition \"{}\": a depth of {} operations is out of range {}",
                partition.name,
                grant.depth,
                bounds(&TIMED_IO_DEPTH)
            );
            self.push(path.clone(), "depth", message);
        }
        if let Some(view) = grant.view {
            self.timed_io_view(&path, partition, view);
        }
    }

    /// The read-only view sits in the partition's guest space, clear of
    /// everything else it maps there.
    fn timed_io_view(&mut self, path: &str, partition: &Partition, view: u64) {
        if !is_aligned(view) {
            self.push(path.into(), "view", format!("{view:#x} is not 4 KiB aligned"));
            return;
        }
        let page = Range::new(view, PAGE_SIZE);
        let platform = &self.system.platform;
        let fixed = [
            ("its console", Range::new(partition.console, PAGE_SIZE)),
            ("the GIC distributor", platform.gicd),
            ("the GIC redistributors", platform.gicr),
        ];
        let memory = partition.memory.iter().map(|m| ("its memory", m.guest()));
        let devices = partition.devices.iter().map(|d| ("one of its devices", d.guest()));
        if let Some((what, _)) = fixed.into_iter().chain(memory).chain(devices).find(|(_, r)| r.overlaps(&page)) {
            let message = format!("partition \"{}\": the view at {view:#x} overlaps {what}", partition.name);
            self.push(path.into(), "view", message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use crate::config::model::{TimedIo, TimedIoGrant};
    use alloc::vec;

    const PL061: u64 = 0x0903_0000;

    fn grant(partition: usize, pins: u8) -> TimedIoGrant {
        TimedIoGrant { partition, pins, depth: 16, view: Some(PL061) }
    }

    fn with_timed_io(grants: vec::Vec<TimedIoGrant>) -> crate::config::model::System {
        let mut s = system();
        s.timed_io = Some(TimedIo { device: PL061, horizon_us: 1_000_000, lead_us: 20, grants });
        s
    }

    #[test]
    fn a_grant_of_its_own_pins_is_valid() {
        assert_eq!(validate(&with_timed_io(vec![grant(0, 0b011), grant(1, 0b100)])), vec![]);
    }

    #[test]
    fn the_controller_may_not_be_a_partitions_device() {
        let mut s = with_timed_io(vec![grant(0, 1)]);
        s.partitions[1].devices = vec![gpio()];
        expect_one(&s, "timed_io", "device", "Partita owns it");
    }

    #[test]
    fn a_pin_belongs_to_one_partition() {
        let s = with_timed_io(vec![grant(0, 0b011), grant(1, 0b110)]);
        expect_one(&s, "timed_io.grant[1]", "pins", "pin 1 is granted to partition");
    }

    #[test]
    fn grants_are_checked_field_by_field() {
        let s = with_timed_io(vec![TimedIoGrant { depth: 0, ..grant(0, 1) }]);
        expect_one(&s, "timed_io.grant[0]", "depth", "out of range");
        let s = with_timed_io(vec![grant(0, 0)]);
        expect_one(&s, "timed_io.grant[0]", "pins", "at least one pin");
        let s = with_timed_io(vec![grant(0, 1), grant(0, 2)]);
        expect_one(&s, "timed_io.grant[1]", "partition", "has a grant already");
        let s = with_timed_io(vec![TimedIoGrant { view: Some(0x0900_0000), ..grant(0, 1) }]);
        expect_one(&s, "timed_io.grant[0]", "view", "overlaps its console");
        let s = with_timed_io(vec![grant(7, 1)]);
        expect_one(&s, "timed_io.grant[0]", "partition", "does not exist");
    }

    #[test]
    fn the_timing_must_be_in_range() {
        let mut s = with_timed_io(vec![grant(0, 1)]);
        s.timed_io.as_mut().unwrap().lead_us = 0;
        expect_one(&s, "timed_io", "lead", "out of range");
        let mut s = with_timed_io(vec![grant(0, 1)]);
        s.timed_io.as_mut().unwrap().horizon_us = 10;
        expect_one(&s, "timed_io", "lead", "shorter than the horizon");
        let mut s = with_timed_io(vec![grant(0, 1)]);
        s.timed_io.as_mut().unwrap().device = 0x4000_0000;
        expect_one(&s, "timed_io", "device", "overlaps RAM");
    }
}
