//! Configurations built in code: the benchmarks' setups and the QEMU tests'
//! machines. They are [`RawConfig`]s put together with these builders and
//! written as TOML, so they pass the same loader and checks as a user's file
//! and can be rerun by hand with `partita run`.

use super::raw::*;
use anyhow::{Context, Result};
use std::path::Path;

impl RawTimedIo {
    /// The default controller and horizon, Partita's timer `lead_us` ahead.
    pub fn with_lead(lead_us: u64) -> Self {
        Self { lead: Some(Micros(lead_us)), ..Self::default() }
    }

    /// `partition` may drive GPIO `pins`, with `depth` pending at most,
    /// and reads them back at `view` if given.
    pub fn grant(mut self, partition: &str, pins: &[u32], depth: u32, view: Option<u64>) -> Self {
        let partition = partition.to_string();
        self.grant.push(RawTimedIoGrant { partition, pins: pins.to_vec(), depth: Some(depth), view });
        self
    }
}

impl RawConfig {
    pub fn new() -> Self {
        Self::default()
    }

    /// `platform.board`; left out, QEMU `virt`.
    pub fn board(mut self, board: &str) -> Self {
        self.platform.board = Some(board.to_string());
        self
    }

    /// `platform.cpus`: the pCPUs QEMU gets.
    pub fn cpus(mut self, cpus: u32) -> Self {
        self.platform.cpus = Some(cpus);
        self
    }

    pub fn quantum_us(mut self, quantum_us: u32) -> Self {
        self.hypervisor.quantum_us = Some(quantum_us);
        self
    }

    /// Turns tracing on with `events_per_cpu` events in each pCPU's ring.
    pub fn trace(mut self, events_per_cpu: u32) -> Self {
        self.trace = RawTrace { enabled: Some(true), events_per_cpu: Some(events_per_cpu) };
        self
    }

    pub fn partition(mut self, partition: RawPartition) -> Self {
        self.partition.push(partition);
        self
    }

    pub fn partitions(mut self, partitions: impl IntoIterator<Item = RawPartition>) -> Self {
        self.partition.extend(partitions);
        self
    }

    pub fn channel(mut self, channel: RawChannel) -> Self {
        self.channel.push(channel);
        self
    }

    pub fn plan(mut self, plan: RawPlan) -> Self {
        self.plan.push(plan);
        self
    }

    /// A fabric; `RawFabric::default()` is Ker-ONE's.
    pub fn fabric(mut self, fabric: RawFabric) -> Self {
        self.fabric = Some(fabric);
        self
    }

    /// Timed I/O on QEMU `virt`'s PL061.
    pub fn timed_io(mut self, timed_io: RawTimedIo) -> Self {
        self.timed_io = Some(timed_io);
        self
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a configuration is plain data: strings, numbers and tables")
    }

    /// Writes the TOML to `path`, creating its folder.
    pub fn write(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(path, self.to_toml()).with_context(|| format!("cannot write {}", path.display()))
    }
}

impl RawPartition {
    /// A partition with one vCPU per entry of `cpus`, pinned there.
    pub fn new(name: &str, cpus: &[u32]) -> Self {
        Self { name: name.to_string(), cpus: cpus.to_vec(), ..Self::default() }
    }

    pub fn bootargs(mut self, bootargs: &str) -> Self {
        self.bootargs = Some(bootargs.to_string());
        self
    }

    pub fn criticality(mut self, criticality: RawCriticality) -> Self {
        self.criticality = Some(criticality);
        self
    }

    pub fn priority(mut self, priority: u8) -> Self {
        self.priority = Some(priority);
        self
    }

    pub fn exclusive(mut self) -> Self {
        self.exclusive = Some(true);
        self
    }

    /// `interrupts = "direct"`.
    pub fn direct(mut self) -> Self {
        self.interrupts = Some(RawDelivery::Direct);
        self
    }

    pub fn rights(mut self, rights: &[RawRight]) -> Self {
        self.rights = Some(rights.to_vec());
        self
    }

    /// vCPU `vcpu` may move to the pCPUs `to`.
    pub fn migrate(mut self, vcpu: u32, to: &[u32]) -> Self {
        self.migrate.push(RawMigration { vcpu, to: to.to_vec() });
        self
    }

    pub fn budget(mut self, time_us: u64, period_us: u64) -> Self {
        self.budget = Some(RawBudget { time: Micros(time_us), period: Micros(period_us) });
        self
    }

    pub fn health(mut self, health: RawHealth) -> Self {
        self.health = Some(health);
        self
    }

    pub fn max_added_response_us(mut self, limit_us: u64) -> Self {
        self.max_added_response_us = Some(Micros(limit_us));
        self
    }

    pub fn watchdog_us(mut self, period_us: u64) -> Self {
        self.watchdog = Some(Micros(period_us));
        self
    }

    /// RAM of `size` bytes at guest-physical `base`, placed by the allocator.
    pub fn memory(self, base: u64, size: u64) -> Self {
        self.region(RawMemory::new(base, size))
    }

    pub fn region(mut self, region: RawMemory) -> Self {
        self.memory.push(region);
        self
    }

    /// An ELF image, loaded by its program headers.
    pub fn elf(mut self, path: &Path) -> Self {
        self.image.push(RawImage { path: path.display().to_string(), format: None, load: None });
        self
    }

    /// A raw image copied to `load`.
    pub fn raw_image(mut self, path: &Path, load: u64) -> Self {
        let path = path.display().to_string();
        self.image.push(RawImage { path, format: Some(RawFormat::Raw), load: Some(load) });
        self
    }

    pub fn device(mut self, device: RawDevice) -> Self {
        self.device.push(device);
        self
    }

    /// An arm64 Linux Image booted by the Linux boot protocol, with an initrd.
    pub fn linux(mut self, kernel: &Path, initrd: Option<&Path>) -> Self {
        self.kernel = Some(kernel.display().to_string());
        self.initrd = initrd.map(|p| p.display().to_string());
        self
    }

    /// An initrd named in `/chosen`, beside whatever images the partition has.
    pub fn initrd(mut self, path: &Path) -> Self {
        self.initrd = Some(path.display().to_string());
        self
    }

    pub fn virtio_console(mut self) -> Self {
        self.virtio.push(RawVirtio { kind: RawVirtioKind::Console, file: None, snapshot: None, forward: None });
        self
    }

    /// A network card on QEMU's user-mode network, with these host port
    /// forwards (`"tcp:2222:22"`).
    pub fn virtio_net(mut self, forward: &[&str]) -> Self {
        let forward = Some(forward.iter().map(|f| (*f).to_owned()).collect());
        self.virtio.push(RawVirtio { kind: RawVirtioKind::Net, file: None, snapshot: None, forward });
        self
    }

    /// A virtio disk backed by `file`, whose writes are dropped at the end.
    pub fn virtio_disk(mut self, file: &Path) -> Self {
        let file = Some(file.display().to_string());
        self.virtio.push(RawVirtio { kind: RawVirtioKind::Block, file, snapshot: Some(true), forward: None });
        self
    }
}

impl RawPartition {
    /// A virtual device: accelerator `device.name` of the fabric.
    pub fn accelerator(mut self, device: RawVirtualDevice) -> Self {
        self.accelerators.push(device);
        self
    }
}

impl RawVirtualDevice {
    /// At its default page, with signals allocated and no deadline.
    pub fn new(accelerator: &str) -> Self {
        Self { name: accelerator.to_string(), ipa: None, signals: None, deadline: None }
    }

    pub fn ipa(mut self, ipa: u64) -> Self {
        self.ipa = Some(ipa);
        self
    }

    pub fn signals(mut self, signals: [u32; 3]) -> Self {
        self.signals = Some(signals.to_vec());
        self
    }

    pub fn deadline_us(mut self, deadline_us: u64) -> Self {
        self.deadline = Some(Micros(deadline_us));
        self
    }
}

impl RawFabric {
    /// An accelerator of the fabric's own; declaring one replaces Ker-ONE's four.
    pub fn accelerator(mut self, name: &str, function: RawFunction, frame_ns: u64, preempt_ns: u64) -> Self {
        let (frame, preempt) = (Nanos(frame_ns), Nanos(preempt_ns));
        self.accelerator.push(RawAccelerator { name: name.to_string(), function, frame, preempt });
        self
    }

    /// A PRR of the fabric's own; declaring one replaces Ker-ONE's three.
    pub fn prr(mut self, name: &str, size: u32, bitstream: u64, hosts: &[&str]) -> Self {
        self.prr.push(RawPrr { name: name.to_string(), size, bitstream: Size(bitstream), hosts: strings(hosts) });
        self
    }
}

impl RawMemory {
    pub fn new(base: u64, size: u64) -> Self {
        Self { base, size: Size(size), phys: None, perms: None, identity: None }
    }

    /// Pins the region at host-physical `phys`.
    pub fn phys(mut self, phys: u64) -> Self {
        self.phys = Some(phys);
        self
    }

    /// Guest-physical equals host-physical.
    pub fn identity(mut self) -> Self {
        self.identity = Some(true);
        self
    }

    /// `letters` as in a file: `"rw"`, `"rx"`; panics on others, which are
    /// a mistake in the code that builds the configuration.
    pub fn perms(mut self, letters: &str) -> Self {
        self.perms = Some(Perms::from_letters(letters).unwrap_or_else(|| panic!("bad permissions {letters:?}")));
        self
    }
}

impl RawDevice {
    pub fn new(name: &str, base: u64, size: u64, compatible: &[&str]) -> Self {
        Self {
            name: name.to_string(),
            base,
            phys: None,
            size: Size(size),
            interrupts: Vec::new(),
            compatible: strings(compatible),
        }
    }

    /// SPIs routed to vCPU 0.
    pub fn interrupts(mut self, intids: &[u32]) -> Self {
        self.interrupts.extend(intids.iter().map(|&intid| RawInterrupt::Bare(intid)));
        self
    }
}

impl RawChannel {
    fn of(name: &str, kind: RawChannelKind) -> Self {
        Self {
            name: name.to_string(),
            kind,
            source: None,
            destinations: None,
            destination: None,
            max_message: None,
            refresh: None,
            depth: None,
            partitions: None,
            base: None,
            phys: None,
            size: None,
            read_only: None,
            doorbell_intid: None,
        }
    }

    /// A queuing port from `source` to `destination`.
    pub fn queuing(name: &str, source: &str, destination: &str, max_message: u64, depth: u32) -> Self {
        Self {
            source: Some(source.to_string()),
            destination: Some(destination.to_string()),
            max_message: Some(Size(max_message)),
            depth: Some(depth),
            ..Self::of(name, RawChannelKind::Queuing)
        }
    }

    /// A sampling port from `source` to every one of `destinations`.
    pub fn sampling(name: &str, source: &str, destinations: &[&str], max_message: u64, refresh_us: u64) -> Self {
        Self {
            source: Some(source.to_string()),
            destinations: Some(strings(destinations)),
            max_message: Some(Size(max_message)),
            refresh: Some(Micros(refresh_us)),
            ..Self::of(name, RawChannelKind::Sampling)
        }
    }

    /// A window of `size` bytes at guest-physical `base` in each of `partitions`.
    pub fn shared_memory(name: &str, partitions: &[&str], base: u64, size: u64) -> Self {
        Self {
            partitions: Some(strings(partitions)),
            base: Some(base),
            size: Some(Size(size)),
            ..Self::of(name, RawChannelKind::SharedMemory)
        }
    }

    pub fn doorbell(mut self, intid: u32) -> Self {
        self.doorbell_intid = Some(intid);
        self
    }

    pub fn read_only(mut self, partitions: &[&str]) -> Self {
        self.read_only = Some(strings(partitions));
        self
    }
}

impl RawPlan {
    pub fn new(name: &str) -> Self {
        Self { name: name.to_string(), core: Vec::new() }
    }

    pub fn core(mut self, core: RawCore) -> Self {
        self.core.push(core);
        self
    }
}

impl RawCore {
    pub fn new(cpu: u32, major_frame_us: u64) -> Self {
        Self { cpu, major_frame_us: Micros(major_frame_us), slot: Vec::new() }
    }

    /// `partition`'s vCPU `vcpu` runs from `start_us` for `duration_us` of each frame.
    pub fn slot(mut self, partition: &str, vcpu: u32, start_us: u64, duration_us: u64) -> Self {
        self.slot.push(RawSlot {
            partition: partition.to_string(),
            vcpu: Some(vcpu),
            start_us: Micros(start_us),
            duration_us: Micros(duration_us),
        });
        self
    }
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| name.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;
    use std::path::PathBuf;

    /// A stand-in guest image in a folder of `test`'s own: tests run in
    /// parallel, and one rewriting a file another reads would race.
    fn image(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("partita-generate-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("guest.bin");
        std::fs::write(&path, [0u8; 16]).unwrap();
        path
    }

    #[test]
    fn every_builder_writes_what_the_loader_reads() {
        let image = image("every_builder_writes_what_the_loader_reads");
        let text = RawConfig::new()
            .cpus(4)
            .quantum_us(2000)
            .trace(1024)
            .partition(
                RawPartition::new("a", &[1])
                    .bootargs("x=1")
                    .criticality(RawCriticality::High)
                    .priority(200)
                    .rights(&[RawRight::ReadHmLog])
                    .budget(3000, 10_000)
                    .health(RawHealth { stage2_fault: Some(RawAction::Log), ..RawHealth::default() })
                    .watchdog_us(100_000)
                    .memory(0x4000_0000, 16 << 20)
                    .region(RawMemory::new(0x4800_0000, 2 << 20).identity().perms("rw"))
                    .raw_image(&image, 0x4000_0000)
                    .device(
                        RawDevice::new("rtc", 0x0901_0000, 0x1000, &["arm,pl031", "arm,primecell"]).interrupts(&[34]),
                    ),
            )
            .partition(
                RawPartition::new("b", &[1, 2])
                    .migrate(0, &[2])
                    .memory(0x4000_0000, 16 << 20)
                    .raw_image(&image, 0x4000_0000),
            )
            .channel(RawChannel::queuing("q", "a", "b", 16, 4))
            .channel(RawChannel::sampling("s", "a", &["b"], 16, 20_000))
            .channel(RawChannel::shared_memory("m", &["a", "b"], 0x5000_0000, 4096).doorbell(48).read_only(&["b"]))
            .to_toml();
        let config =
            load_str(&image.with_file_name("generated.toml"), &text).unwrap_or_else(|e| panic!("{e:#?}\n{text}"));
        let system = &config.system;
        assert_eq!((system.platform.cpus, system.hypervisor.quantum_us), (4, 2000), "{text}");
        let a = &system.partitions[0];
        assert_eq!((a.priority, a.memory.len(), a.devices.len()), (200, 2, 1), "{text}");
        assert_eq!(a.memory[1].ipa, a.memory[1].pa, "identity: {text}");
        assert_eq!(system.channels.len(), 3, "{text}");
        assert!(text.contains("size = \"16M\"") && text.contains("max_message = 16"), "{text}");
    }

    #[test]
    fn fabric_builders_write_what_the_loader_reads() {
        let image = image("fabric_builders_write_what_the_loader_reads");
        let part = |name: &str, cpu| {
            RawPartition::new(name, &[cpu]).memory(0x4000_0000, 16 << 20).raw_image(&image, 0x4000_0000)
        };
        let default = RawConfig::new()
            .fabric(RawFabric::default())
            .partition(part("a", 1).priority(200).accelerator(RawVirtualDevice::new("fft512").deadline_us(2_000)))
            .partition(part("b", 2).accelerator(RawVirtualDevice::new("qam16").ipa(0x0b01_0000).signals([90, 91, 92])))
            .to_toml();
        let config =
            load_str(&image.with_file_name("fabric.toml"), &default).unwrap_or_else(|e| panic!("{e:#?}\n{default}"));
        let fabric = config.system.fabric.as_ref().expect("a fabric");
        assert_eq!((fabric.prrs.len(), fabric.accelerators.len()), (3, 4), "Ker-ONE's: {default}");
        let [a, b] = &config.system.partitions[..] else { panic!("two partitions") };
        assert_eq!((a.accelerators[0].accelerator, a.accelerators[0].deadline_us), (2, Some(2_000)), "{default}");
        assert_eq!((b.accelerators[0].ipa, b.accelerators[0].signals), (0x0b01_0000, [90, 91, 92]), "{default}");
        let own = RawConfig::new()
            .fabric(RawFabric::default().accelerator("fft", RawFunction::Fft512, 71_100, 24_000).prr(
                "only",
                8,
                29_568,
                &["fft"],
            ))
            .partition(part("a", 1).accelerator(RawVirtualDevice::new("fft")))
            .to_toml();
        let config = load_str(&image.with_file_name("own.toml"), &own).unwrap_or_else(|e| panic!("{e:#?}\n{own}"));
        let fabric = config.system.fabric.as_ref().expect("a fabric");
        let accelerator = &fabric.accelerators[0];
        assert_eq!((accelerator.frame_ns, accelerator.preempt_ns), (71_100, 24_000), "{own}");
        assert_eq!((fabric.prrs[0].bitstream, fabric.prrs[0].hosts.as_slice()), (29_568, &[0][..]), "{own}");
        assert!(own.contains("frame = \"71100ns\"") && own.contains("preempt = 24"), "{own}");
    }

    #[test]
    fn plans_keep_their_slots() {
        let image = image("plans_keep_their_slots");
        let part =
            |name: &str| RawPartition::new(name, &[1]).memory(0x4000_0000, 16 << 20).raw_image(&image, 0x4000_0000);
        let text = RawConfig::new()
            .cpus(2)
            .partitions([part("a"), part("b")])
            .plan(RawPlan::new("main").core(RawCore::new(1, 2000).slot("a", 0, 0, 1000).slot("b", 0, 1000, 1000)))
            .to_toml();
        let config = load_str(&image.with_file_name("plan.toml"), &text).unwrap_or_else(|e| panic!("{e:#?}\n{text}"));
        let slots = &config.system.plans[0].cores[0].slots;
        assert_eq!((slots[1].partition, slots[1].start_us, slots[1].duration_us), (1, 1000, 1000), "{text}");
    }
}
