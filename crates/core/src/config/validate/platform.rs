//! The board, its fixed frames, and Partita's own memory and settings:
//! everything that is not a partition, a plan or a channel.

use super::overlap::{Item, Space};
use super::{bounds, hex_range, Validator};
use crate::config::limits::{OVERHEAD_LIMIT_BP, PCPUS, QUANTUM_US, TRACE_EVENTS, TRACE_MEMORY_DIVISOR};
use crate::config::model::{Range, BOARDS, ZCU102};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The ZynqMP's Cortex-A53s.
const ZCU102_CPUS: u32 = 4;

impl Validator<'_> {
    pub(super) fn platform(&mut self) {
        let platform = &self.system.platform;
        if !BOARDS.contains(&platform.board.as_str()) {
            let message = format!("board \"{}\" is not supported; the boards are {}", platform.board, board_list());
            self.push("platform".into(), "board", message);
        }
        if !PCPUS.contains(&platform.cpus) {
            let message = format!("{} CPUs; the platform must have 1 to {}", platform.cpus, PCPUS.end());
            self.push("platform".into(), "cpus", message);
        } else if platform.board == ZCU102 && platform.cpus > ZCU102_CPUS {
            // QEMU would make the cores past them the real-time unit's Cortex-R5s.
            let message = format!("{} CPUs; the ZCU102 has {ZCU102_CPUS} application cores", platform.cpus);
            self.push("platform".into(), "cpus", message);
        }
        self.range("platform.ram", "base", "size", &platform.ram);
        self.range("platform.console", "base", "size", &platform.console);
        self.range("platform.gic", "distributor", "distributor", &platform.gicd);
        self.range("platform.gic", "redistributor", "redistributor", &platform.gicr);
        self.platform_devices_apart();
    }

    /// Each frame is reported at itself for RAM, and at the later of two
    /// frames for each other.
    fn platform_devices_apart(&mut self) {
        let (platform, overlaps) = (&self.system.platform, self.overlaps);
        let fixed = [
            (Item::Console, "platform.console", "base", platform.console),
            (Item::Gicd, "platform.gic", "distributor", platform.gicd),
            (Item::Gicr, "platform.gic", "redistributor", platform.gicr),
        ];
        for (item, path, field, range) in fixed {
            for (other, other_range) in overlaps.before(Space::Physical, item) {
                let Some(other) = frame_name(other) else { continue };
                let what = frame_name(item).unwrap_or_default();
                let message = format!("{what} ({}) overlaps {other} ({})", hex_range(&range), hex_range(&other_range));
                self.push(path.into(), field, message);
            }
        }
    }

    pub(super) fn hypervisor(&mut self) {
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
            let message = format!("quantum {} us is out of range {} us", hypervisor.quantum_us, bounds(&QUANTUM_US));
            self.push("hypervisor".into(), "quantum_us", message);
        }
        if !OVERHEAD_LIMIT_BP.contains(&hypervisor.overhead_limit_bp) {
            // No value in the message: basis points would misquote a negative
            // or fractional percentage from the file.
            let message = "the overhead limit must be more than 0 % and at most 100 %".into();
            self.push("hypervisor".into(), "overhead_limit_percent", message);
        }
        self.hm_log();
        self.trace();
    }

    /// Issues name the `[trace]` section, where the file sets this value.
    fn trace(&mut self) {
        let events = self.system.hypervisor.trace_events;
        if events == 0 {
            return;
        }
        if !TRACE_EVENTS.contains(&events) {
            let message = format!("{events} events per CPU is out of range {}", bounds(&TRACE_EVENTS));
            self.push("trace".into(), "events_per_cpu", message);
            return;
        }
        // A CPU count out of range has its own issue, and could overflow the size.
        let cpus = self.system.platform.cpus;
        if !PCPUS.contains(&cpus) {
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
}

/// `"qemu-virt" and "zcu102"`.
fn board_list() -> String {
    let quoted: Vec<String> = BOARDS.iter().map(|board| format!("\"{board}\"")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// How the platform's rules name its fixed ranges.
fn frame_name(item: Item) -> Option<&'static str> {
    match item {
        Item::Ram => Some("platform RAM"),
        Item::Console => Some("the console"),
        Item::Gicd => Some("the GIC distributor"),
        Item::Gicr => Some("the GIC redistributors"),
        _ => None,
    }
}

impl Validator<'_> {
    pub(super) fn image_store(&mut self) {
        let images = self.system.hypervisor.images;
        self.partita_memory("hypervisor.images", "the image store", Item::Images, images);
    }

    /// Memory of Partita's own beside its code (the fabric's, the image
    /// store): whole pages, in RAM, and nobody else's.
    pub(super) fn partita_memory(&mut self, path: &str, what: &str, item: Item, memory: Range) {
        self.range(path, "base", "size", &memory);
        let ram = self.system.platform.ram;
        if !ram.covers(&memory) {
            let message = format!("{what} {} is outside platform RAM {}", hex_range(&memory), hex_range(&ram));
            self.push(path.into(), "base", message);
        }
        for (other, range) in self.overlaps.with(Space::Physical, item) {
            let name = match other {
                Item::Hypervisor => "hypervisor memory".into(),
                Item::Memory(q, m) => format!("partition \"{}\" memory[{m}]", self.partition_name(q)),
                Item::Device(q, d) => {
                    format!("partition \"{}\" device \"{}\"", self.partition_name(q), self.device_name(q, d))
                }
                Item::Channel(_) => self.guest_name(0, other),
                // Each pair once: the image store names the fabric.
                Item::Fabric if item == Item::Images => "fabric memory".into(),
                _ => continue,
            };
            let message = format!("{what} {} overlaps {name} ({})", hex_range(&memory), hex_range(&range));
            self.push(path.into(), "base", message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use alloc::vec;

    #[test]
    fn platform_settings() {
        let mut s = system();
        s.platform.board = "raspberry-pi".into();
        expect_one(
            &s,
            "platform",
            "board",
            "board \"raspberry-pi\" is not supported; the boards are \"qemu-virt\" and \"zcu102\"",
        );
        let mut s = system();
        s.platform.cpus = 9;
        expect_one(&s, "platform", "cpus", "1 to 8");
        let mut s = system();
        s.platform.console.base = 0x4000_0000;
        expect_one(&s, "platform.console", "base", "overlaps platform RAM");
    }

    #[test]
    fn every_known_board_is_accepted() {
        for board in crate::config::model::BOARDS {
            let mut s = system();
            s.platform.board = board.into();
            assert_eq!(validate(&s), vec![], "{board}");
        }
        let mut s = system();
        s.platform.board = "ZCU102".into();
        expect_one(&s, "platform", "board", "not supported");
        let mut s = system();
        s.platform.board = "zcu102".into();
        s.platform.cpus = 5;
        expect_one(&s, "platform", "cpus", "5 CPUs; the ZCU102 has 4 application cores");
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

    #[test]
    fn the_image_store_is_in_ram_and_nobody_else_s() {
        let mut s = system();
        s.hypervisor.images = crate::config::model::Range::new(0x8000_0000, 0x20_0000);
        expect_one(&s, "hypervisor.images", "base", "the image store 0x80000000..0x80200000 is outside platform RAM");
        let mut s = system();
        s.hypervisor.images = crate::config::model::Range::new(0x4200_0000, 0x20_0000);
        expect_one(&s, "hypervisor.images", "base", "overlaps partition \"rtos\" memory[0]");
        let mut s = system();
        s.hypervisor.images = crate::config::model::Range::new(0x41f0_0000, 0x20_0000);
        let issues = validate(&s);
        assert!(issues.iter().any(|i| i.message.contains("overlaps hypervisor memory")), "{issues:#?}");
        let mut s = system();
        s.hypervisor.images.size = 0;
        expect_one(&s, "hypervisor.images", "size", "must not be zero");
    }
}
