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
//!
//! A net device is a card on QEMU's user-mode network (slirp): the
//! partition reaches out through QEMU's NAT, and the host reaches in only
//! through the ports the configuration forwards, each listening on the
//! loopback address alone, so nothing but the host's own users can connect.

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
    /// A network card on QEMU's user-mode network, with its host ports.
    Net { forwards: Vec<Forward> },
}

/// A host port on 127.0.0.1 that QEMU forwards to a port of the partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forward {
    pub protocol: Protocol,
    pub host: u16,
    pub guest: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Tcp,
    Udp,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }
}

/// The address forwards listen on: the host's users only, never its network.
pub const FORWARD_ADDRESS: &str = "127.0.0.1";
/// Below this a port is privileged: QEMU run as a user cannot listen on it.
const FIRST_UNPRIVILEGED_PORT: u16 = 1024;

impl std::fmt::Display for Forward {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {FORWARD_ADDRESS}:{} -> port {}", self.protocol.name(), self.host, self.guest)
    }
}

/// Reads `PROTOCOL:HOST_PORT:GUEST_PORT`; the error says what to write.
pub fn parse_forward(text: &str) -> Result<Forward, String> {
    const FORM: &str = "write PROTOCOL:HOST_PORT:GUEST_PORT, e.g. \"tcp:2222:22\" (the host's 127.0.0.1:2222 to \
                        the partition's port 22)";
    let parts: Vec<&str> = text.split(':').collect();
    let [protocol, host, guest] = parts[..] else {
        if parts.len() == 4 {
            return Err(format!(
                "\"{text}\": a forward listens on {FORWARD_ADDRESS} alone, so it names no address; write \
                 \"{}:{}:{}\"",
                parts[0], parts[2], parts[3]
            ));
        }
        return Err(format!("\"{text}\" is not a forward: {FORM}"));
    };
    let protocol = match protocol.to_ascii_lowercase().as_str() {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        _ => {
            let hint = super::suggest::did_you_mean(&protocol.to_ascii_lowercase(), ["tcp", "udp"]);
            return Err(format!("\"{text}\": unknown protocol \"{protocol}\", \"tcp\" or \"udp\"{hint}"));
        }
    };
    let port = |which: &str, value: &str| match value.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(format!("\"{text}\": the {which} port \"{value}\" is not a port number (1 to 65535); {FORM}")),
    };
    let (host, guest) = (port("host", host)?, port("partition's", guest)?);
    if host < FIRST_UNPRIVILEGED_PORT {
        return Err(format!(
            "\"{text}\": host port {host} is privileged (below {FIRST_UNPRIVILEGED_PORT}) and QEMU, run as a user, \
             cannot listen on it; pick one from {FIRST_UNPRIVILEGED_PORT} up, e.g. \"{}:{}:{guest}\"",
            protocol.name(),
            u32::from(host) + 8000
        ));
    }
    Ok(Forward { protocol, host, guest })
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
    // Each host port once over the whole system, with who took it.
    let mut taken: Vec<(Protocol, u16, String)> = Vec::new();
    for (p, (raw_partition, partition)) in raw.iter().zip(partitions.iter_mut()).enumerate() {
        for (i, raw_device) in raw_partition.virtio.iter().enumerate() {
            let path = format!("partition[{p}].virtio[{i}]");
            if let Some(forward) = raw_device.forward.as_ref().filter(|_| raw_device.kind == RawVirtioKind::Net) {
                for (k, text) in forward.iter().enumerate() {
                    if let Some(message) = forward_issue(text, &raw_partition.name, &mut taken) {
                        issues.push(Issue { path: format!("{path}.forward[{k}]"), field: "", message });
                    }
                }
            }
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
                Backend::Net { .. } => format!("virtio-net{i}"),
            };
            partition.devices.push(device.device(name));
            devices.push(device);
        }
    }
    devices
}

/// What is wrong with one forward, if anything; a good one is entered in
/// `taken` as the partition's.
fn forward_issue(text: &str, partition: &str, taken: &mut Vec<(Protocol, u16, String)>) -> Option<String> {
    let forward = match parse_forward(text) {
        Ok(forward) => forward,
        Err(message) => return Some(message),
    };
    let key = (forward.protocol, forward.host);
    if let Some((_, _, by)) = taken.iter().find(|(protocol, host, _)| (*protocol, *host) == key) {
        return Some(format!(
            "host port {} ({}) is forwarded twice: {by} has it already; give this one another, e.g. {}",
            forward.host,
            forward.protocol.name(),
            free_port(taken, forward.protocol, forward.host)
        ));
    }
    taken.push((forward.protocol, forward.host, format!("partition \"{partition}\"'s forward \"{text}\"")));
    None
}

/// The next host port up from `from` that no forward has yet.
fn free_port(taken: &[(Protocol, u16, String)], protocol: Protocol, from: u16) -> u16 {
    let used = |port: u16| taken.iter().any(|(p, host, _)| (*p, *host) == (protocol, port));
    (from..=u16::MAX).chain(FIRST_UNPRIVILEGED_PORT..from).find(|port| !used(*port)).unwrap_or(from)
}

fn backend(raw: &RawVirtio, config_dir: &Path, issue: &mut impl FnMut(&'static str, String)) -> Option<Backend> {
    if raw.kind != RawVirtioKind::Net && raw.forward.is_some() {
        issue("forward", "only a net device (kind = \"net\") has port forwards".into());
        return None;
    }
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
        (RawVirtioKind::Net, file) => {
            if file.is_some() || raw.snapshot.is_some() {
                let field = if file.is_some() { "file" } else { "snapshot" };
                issue(
                    field,
                    "a net device has no file and no snapshot; its host side is QEMU's user-mode network".into(),
                );
                return None;
            }
            // A forward that does not parse has its own issue; the device
            // is still placed, so that nothing else is reported for it.
            let forwards = raw.forward.iter().flatten().filter_map(|text| parse_forward(text).ok()).collect();
            Some(Backend::Net { forwards })
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
            Backend::Net { forwards } => {
                let mut netdev = format!("user,id=virtio{n}");
                for f in forwards {
                    let protocol = f.protocol.name();
                    netdev += &format!(",hostfwd={protocol}:{FORWARD_ADDRESS}:{}-:{}", f.host, f.guest);
                }
                args.extend([
                    "-netdev".into(),
                    netdev,
                    "-device".into(),
                    format!("virtio-net-device,{bus},netdev=virtio{n}"),
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

/// One line per forwarded port, saying where the host reaches which
/// partition; for the shipped Linux's ssh server, with the command that
/// logs in with the key its build made.
pub fn forward_lines(config: &super::Config) -> Vec<String> {
    // Configurations name it through `..`: compare where the paths lead.
    let real = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let shipped_initrd = real(&crate::guests::image("linux/initramfs.cpio"));
    let ssh_config = crate::paths::shown(&crate::guests::image("linux/ssh/config"));
    let mut lines = Vec::new();
    for device in &config.virtio {
        let Backend::Net { forwards } = &device.backend else { continue };
        let name = &config.system.partitions[device.partition].name;
        let shipped = config.images[device.partition].iter().any(|image| real(&image.path) == shipped_initrd);
        if forwards.is_empty() {
            lines.push(format!("{name}: no forward (the partition reaches out; nothing reaches in)"));
        }
        for forward in forwards {
            let mut line = format!("{name}: {forward}");
            if shipped && (forward.protocol, forward.guest) == (Protocol::Tcp, 22) {
                line += &format!(" (ssh -F {} -p {} {name})", ssh_config.display(), forward.host);
            }
            lines.push(line);
        }
    }
    lines
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

    #[test]
    fn a_net_device_listens_on_the_loopback_address_alone() {
        let forwards = vec![parse_forward("tcp:2222:22").unwrap(), parse_forward("UDP:5353:53").unwrap()];
        let devices = [VirtioDevice { partition: 0, transport: 8, backend: Backend::Net { forwards } }];
        let args = qemu_args(&devices, &["linux".into()], Path::new("/o"));
        assert_eq!(
            args,
            [
                "-netdev",
                "user,id=virtio0,hostfwd=tcp:127.0.0.1:2222-:22,hostfwd=udp:127.0.0.1:5353-:53",
                "-device",
                "virtio-net-device,bus=virtio-mmio-bus.8,netdev=virtio0"
            ]
        );
    }

    #[test]
    fn a_forward_that_does_not_read_says_what_to_write() {
        let error = |text| parse_forward(text).unwrap_err();
        assert!(error("tcp:2222").contains("write PROTOCOL:HOST_PORT:GUEST_PORT, e.g. \"tcp:2222:22\""));
        assert!(error("tcp:0.0.0.0:2222:22")
            .contains("listens on 127.0.0.1 alone, so it names no address; write \"tcp:2222:22\""));
        assert!(error("tpc:2222:22").contains("unknown protocol \"tpc\", \"tcp\" or \"udp\"; did you mean \"tcp\"?"));
        assert!(error("tcp:2222:ssh").contains("the partition's port \"ssh\" is not a port number (1 to 65535)"));
        assert!(error("tcp:70000:22").contains("the host port \"70000\" is not a port number"));
        assert!(error("tcp:22:22").contains("host port 22 is privileged (below 1024)"));
        assert!(error("tcp:22:22").contains("e.g. \"tcp:8022:22\""));
        assert_eq!(parse_forward("tcp:1024:1").unwrap().to_string(), "tcp 127.0.0.1:1024 -> port 1");
    }
}
