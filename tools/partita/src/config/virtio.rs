//! `[[partition.virtio]]`: QEMU `virt`'s virtio-mmio devices, passed
//! through to a partition as they are.
//!
//! QEMU has 32 transports of 0x200 bytes from 0x0a000000, transport `n`
//! raising SPI `16 + n` (INTID `48 + n`). Stage 2 maps whole 4 KiB pages,
//! so each device gets a transport that starts a page of its own (24, 16, 8
//! then 0): no two partitions ever share one, and the other transports of
//! that page stay empty. The device reads and writes guest memory by
//! physical address, with no SMMU to translate, so the partition's memory
//! must be identity-mapped.

use super::raw::{RawPartition, RawVirtio, RawVirtioKind};
use crate::guest_console::GuestConsole;
use partita_core::config::model::{Device, Interrupt, Partition};
use partita_core::config::validate::Issue;
use std::path::{Path, PathBuf};

const TRANSPORTS_BASE: u64 = 0x0a00_0000;
const TRANSPORT_SIZE: u64 = 0x200;
const FIRST_TRANSPORT_INTID: u32 = 48;
const PAGE: u64 = 0x1000;
/// The transports that start a 4 KiB page, in the order devices get them.
const PAGE_TRANSPORTS: [u32; 4] = [24, 16, 8, 0];
/// What Linux's virtio-mmio driver binds to.
pub const COMPATIBLE: &str = "virtio,mmio";

/// What QEMU needs to back one passed-through device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtioDevice {
    /// Index into `system.partitions`.
    pub partition: usize,
    /// QEMU's `virtio-mmio-bus.<transport>`.
    pub transport: u32,
    pub backend: Backend,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A disk image; with `snapshot`, writes are dropped when QEMU stops.
    Block { file: PathBuf, snapshot: bool },
    /// A console whose other end is a Unix socket beside the run's logs.
    Console,
}

impl VirtioDevice {
    /// Guest- and host-physical address of the transport's registers.
    pub fn base(&self) -> u64 {
        TRANSPORTS_BASE + u64::from(self.transport) * TRANSPORT_SIZE
    }

    pub fn intid(&self) -> u32 {
        FIRST_TRANSPORT_INTID + self.transport
    }

    /// The passthrough device the partition gets: the transport's page,
    /// identity-mapped, its interrupt to vCPU 0.
    pub fn device(&self, name: String) -> Device {
        let base = self.base();
        debug_assert_eq!(base % PAGE, 0);
        Device {
            name,
            compatible: vec![COMPATIBLE.into()],
            ipa: base,
            pa: base,
            size: PAGE,
            interrupts: vec![Interrupt { intid: self.intid(), vcpu: 0 }],
        }
    }
}

/// Every partition's virtio devices, in file order, each added to its
/// partition's passthrough devices.
pub fn resolve(
    raw: &[RawPartition],
    partitions: &mut [Partition],
    board: &str,
    config_dir: &Path,
    issues: &mut Vec<Issue>,
) -> Vec<VirtioDevice> {
    let mut devices = Vec::new();
    for (p, (raw_partition, partition)) in raw.iter().zip(partitions.iter_mut()).enumerate() {
        for (i, raw_device) in raw_partition.virtio.iter().enumerate() {
            let path = format!("partition[{p}].virtio[{i}]");
            let mut issue = |field, message: String| issues.push(Issue { path: path.clone(), field, message });
            if board != "qemu-virt" {
                issue("kind", format!("virtio devices are QEMU `virt`'s; board \"{board}\" has none"));
                continue;
            }
            let Some(&transport) = PAGE_TRANSPORTS.get(devices.len()) else {
                let message = format!(
                    "at most {} virtio devices in all: each needs a transport that starts a 4 KiB page",
                    PAGE_TRANSPORTS.len()
                );
                issue("kind", message);
                continue;
            };
            let Some(backend) = backend(raw_device, config_dir, &mut issue) else { continue };
            let plain: Vec<String> = partition
                .memory
                .iter()
                .enumerate()
                .filter(|(_, region)| !region.identity)
                .map(|(m, _)| format!("memory[{m}]"))
                .collect();
            if !plain.is_empty() {
                issue(
                    "kind",
                    format!(
                        "a virtio device reads and writes memory by physical address (DMA, no SMMU), so every \
                         memory region of the partition must be identity-mapped; add `identity = true` to {} \
                         (its host address is then its `base`)",
                        plain.join(" and ")
                    ),
                );
            }
            let device = VirtioDevice { partition: p, transport, backend };
            let name = match device.backend {
                Backend::Block { .. } => format!("virtio-block{i}"),
                Backend::Console => format!("virtio-console{i}"),
            };
            partition.devices.push(device.device(name));
            devices.push(device);
        }
    }
    devices
}

fn backend(raw: &RawVirtio, config_dir: &Path, issue: &mut impl FnMut(&'static str, String)) -> Option<Backend> {
    match (raw.kind, &raw.file) {
        (RawVirtioKind::Block, Some(file)) => {
            let joined = config_dir.join(file);
            let file = std::path::absolute(&joined).unwrap_or(joined);
            // A guest's disk not built yet is `build`'s to make, not an error.
            if !file.is_file() && !crate::guests::unbuilt(&file) {
                issue("file", format!("disk image not found: {}", file.display()));
                return None;
            }
            Some(Backend::Block { file, snapshot: raw.snapshot.unwrap_or(false) })
        }
        (RawVirtioKind::Block, None) => {
            issue("file", "a block device needs its disk image (file = \"...\")".into());
            None
        }
        (RawVirtioKind::Console, file) => {
            if file.is_some() || raw.snapshot.is_some() {
                issue("file", "a console has no file and no snapshot".into());
                return None;
            }
            Some(Backend::Console)
        }
    }
}

/// QEMU's arguments for `devices`; a console's socket is
/// `<sockets>/<partition>-console<i>.sock`.
pub fn qemu_args(devices: &[VirtioDevice], names: &[String], sockets: &Path) -> Vec<String> {
    let mut args = Vec::new();
    for (n, device) in devices.iter().enumerate() {
        let bus = format!("bus=virtio-mmio-bus.{}", device.transport);
        match &device.backend {
            Backend::Block { file, snapshot } => {
                let file = file.display().to_string().replace(',', ",,");
                let snapshot = if *snapshot { ",snapshot=on" } else { "" };
                args.extend([
                    "-drive".into(),
                    format!("if=none,id=virtio{n},format=raw,file={file}{snapshot}"),
                    "-device".into(),
                    format!("virtio-blk-device,{bus},drive=virtio{n}"),
                ]);
            }
            Backend::Console => {
                let socket = console_socket(sockets, &names[device.partition], n);
                let socket = socket.display().to_string().replace(',', ",,");
                args.extend([
                    "-chardev".into(),
                    format!("socket,id=virtio{n},path={socket},server=on,wait=off"),
                    "-device".into(),
                    format!("virtio-serial-device,{bus},id=serial{n}"),
                    "-device".into(),
                    format!("virtconsole,chardev=virtio{n},bus=serial{n}.0"),
                ]);
            }
        }
    }
    args
}

/// Every console among `devices`, with its socket.
pub fn consoles(devices: &[VirtioDevice], names: &[String], sockets: &Path) -> Vec<GuestConsole> {
    let is_console = |(_, d): &(usize, &VirtioDevice)| d.backend == Backend::Console;
    let socket = |n, d: &VirtioDevice| console_socket(sockets, &names[d.partition], n);
    devices
        .iter()
        .enumerate()
        .filter(is_console)
        .map(|(n, d)| GuestConsole { partition: d.partition, socket: socket(n, d) })
        .collect()
}

/// The Unix socket of the `n`-th virtio device when it is a console.
pub fn console_socket(sockets: &Path, partition: &str, n: usize) -> PathBuf {
    sockets.join(format!("{partition}-virtio{n}.sock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_device_takes_a_transport_that_starts_a_page_and_its_interrupt() {
        let device = VirtioDevice { partition: 0, transport: 24, backend: Backend::Console };
        assert_eq!((device.base(), device.intid()), (0x0a00_3000, 72));
        let passthrough = device.device("virtio-console0".into());
        assert_eq!((passthrough.ipa, passthrough.pa, passthrough.size), (0x0a00_3000, 0x0a00_3000, 0x1000));
        for transport in PAGE_TRANSPORTS {
            assert_eq!((TRANSPORTS_BASE + u64::from(transport) * TRANSPORT_SIZE) % PAGE, 0);
        }
    }

    #[test]
    fn qemu_puts_each_backend_on_its_transport() {
        let disk = PathBuf::from("/d/disk,1.ext4");
        let devices = [
            VirtioDevice { partition: 0, transport: 24, backend: Backend::Block { file: disk, snapshot: true } },
            VirtioDevice { partition: 0, transport: 16, backend: Backend::Console },
        ];
        let args = qemu_args(&devices, &["linux".into()], Path::new("/o"));
        assert_eq!(args[1], "if=none,id=virtio0,format=raw,file=/d/disk,,1.ext4,snapshot=on");
        assert_eq!(args[3], "virtio-blk-device,bus=virtio-mmio-bus.24,drive=virtio0");
        assert_eq!(args[5], "socket,id=virtio1,path=/o/linux-virtio1.sock,server=on,wait=off");
        assert_eq!(args[7], "virtio-serial-device,bus=virtio-mmio-bus.16,id=serial1");
        assert_eq!(args[9], "virtconsole,chardev=virtio1,bus=serial1.0");
    }
}
