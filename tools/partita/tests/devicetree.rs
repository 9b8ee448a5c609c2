//! The generated device tree, decoded again and read node by node.

mod host_fixtures;

use fdt::node::FdtNode;
use fdt::Fdt;
use host_fixtures::*;
use partita::devicetree::{dtb_address, generate, generate_with, Chosen, DTB_WINDOW};
use partita_core::config::model::{Device, Interrupt, Partition, System};

fn sample() -> (System, Partition) {
    let mut part = partition("rtos", vec![1, 3], vec![region(0x4800_0000, 0x20_0000), region(0x5000_0000, 0x10_0000)]);
    part.console = 0x0900_0000;
    part.bootargs = "quiet loglevel=3".to_string();
    part.devices.push(Device {
        name: "gpio".to_string(),
        compatible: vec!["arm,pl061".to_string(), "arm,primecell".to_string()],
        ipa: 0x0903_0000,
        pa: 0x0903_0000,
        size: 0x1000,
        interrupts: vec![Interrupt { intid: 39, vcpu: 0 }, Interrupt { intid: 40, vcpu: 1 }],
    });
    let system = system("dt", vec![part.clone()]);
    (system, part)
}

fn cells(value: &[u8]) -> Vec<u32> {
    value.chunks(4).map(|c| u32::from_be_bytes(c.try_into().unwrap())).collect()
}

fn u64s(value: &[u8]) -> Vec<u64> {
    value.chunks(8).map(|c| u64::from_be_bytes(c.try_into().unwrap())).collect()
}

fn prop<'a>(node: FdtNode<'_, 'a>, name: &str) -> &'a [u8] {
    node.property(name).unwrap_or_else(|| panic!("{} has no {name}", node.name)).value
}

fn text<'a>(node: FdtNode<'_, 'a>, name: &str) -> &'a str {
    node.property(name).and_then(|p| p.as_str()).unwrap_or_else(|| panic!("{} has no string {name}", node.name))
}

fn string_list(node: FdtNode<'_, '_>, name: &str) -> Vec<String> {
    let raw = prop(node, name);
    raw.split(|&b| b == 0).filter(|s| !s.is_empty()).map(|s| String::from_utf8(s.to_vec()).unwrap()).collect()
}

fn node<'b, 'a>(fdt: &'b Fdt<'a>, path: &str) -> FdtNode<'b, 'a> {
    fdt.find_node(path).unwrap_or_else(|| panic!("no node {path}"))
}

#[test]
fn root_and_chosen() {
    let (system, part) = sample();
    let blob = generate(&system, &part).unwrap();
    let fdt = Fdt::new(&blob).unwrap();
    let root = node(&fdt, "/");
    assert_eq!(text(root, "compatible"), "linux,dummy-virt");
    assert_eq!(text(root, "model"), "Partita partition rtos");
    assert_eq!(cells(prop(root, "#address-cells")), [2]);
    assert_eq!(cells(prop(root, "#size-cells")), [2]);
    let gic_phandle = cells(prop(node(&fdt, "/intc@8000000"), "phandle"));
    assert_eq!(cells(prop(root, "interrupt-parent")), gic_phandle);

    let chosen = node(&fdt, "/chosen");
    assert_eq!(text(chosen, "bootargs"), "quiet loglevel=3");
    assert_eq!(text(chosen, "stdout-path"), "/pl011@9000000");
    assert_eq!(text(chosen, "partita,partition"), "rtos");
    assert!(fdt.find_node("/pl011@9000000").is_some(), "stdout-path points at a real node");
}

/// The hypervisor writes each load's seeds at the offsets the build
/// records, without parsing the tree: they must be the properties' values.
#[test]
fn chosen_has_seeds_at_the_recorded_offsets() {
    let (system, part) = sample();
    let tree = generate_with(&system, &part, &Chosen::default()).unwrap();
    assert_eq!(tree.blob, generate(&system, &part).unwrap());
    let fdt = Fdt::new(&tree.blob).unwrap();
    let chosen = node(&fdt, "/chosen");
    let offset = |value: &[u8]| value.as_ptr() as usize - tree.blob.as_ptr() as usize;
    let kaslr = prop(chosen, "kaslr-seed");
    let rng = prop(chosen, "rng-seed");
    assert_eq!(kaslr.len(), 8);
    assert_eq!(rng.len(), 64);
    assert_eq!(tree.seeds.rng_len, 64);
    assert_eq!(offset(kaslr), tree.seeds.kaslr as usize);
    assert_eq!(offset(rng), tree.seeds.rng as usize);
    // Zero until the hypervisor fills them: Linux takes a zero kaslr-seed for none.
    assert!(kaslr.iter().chain(rng).all(|&b| b == 0));
}

#[test]
fn memory_and_cpus() {
    let (system, part) = sample();
    let blob = generate(&system, &part).unwrap();
    let fdt = Fdt::new(&blob).unwrap();
    let first = node(&fdt, "/memory@48000000");
    assert_eq!(text(first, "device_type"), "memory");
    assert_eq!(u64s(prop(first, "reg")), [0x4800_0000, 0x20_0000]);
    assert_eq!(u64s(prop(node(&fdt, "/memory@50000000"), "reg")), [0x5000_0000, 0x10_0000]);

    let cpus = node(&fdt, "/cpus");
    assert_eq!(cells(prop(cpus, "#address-cells")), [1]);
    assert_eq!(cells(prop(cpus, "#size-cells")), [0]);
    let names: Vec<&str> = cpus.children().map(|c| c.name).collect();
    assert_eq!(names, ["cpu@0", "cpu@1"], "vCPUs count from 0 whatever pCPUs they run on");
    let cpu1 = node(&fdt, "/cpus/cpu@1");
    assert_eq!(cells(prop(cpu1, "reg")), [1]);
    assert_eq!(text(cpu1, "device_type"), "cpu");
    assert_eq!(text(cpu1, "compatible"), "arm,armv8");
    assert_eq!(text(cpu1, "enable-method"), "psci");

    let psci = node(&fdt, "/psci");
    assert_eq!(string_list(psci, "compatible"), ["arm,psci-1.0", "arm,psci-0.2"]);
    assert_eq!(text(psci, "method"), "hvc");
}

#[test]
fn gic_timer_and_console() {
    let (system, part) = sample();
    let blob = generate(&system, &part).unwrap();
    let fdt = Fdt::new(&blob).unwrap();
    let gic = node(&fdt, "/intc@8000000");
    assert_eq!(text(gic, "compatible"), "arm,gic-v3");
    assert_eq!(cells(prop(gic, "#interrupt-cells")), [3]);
    assert!(gic.property("interrupt-controller").is_some());
    assert!(gic.property("ranges").is_some());
    assert_eq!(u64s(prop(gic, "reg")), [0x0800_0000, 0x1_0000, 0x080a_0000, 2 * 0x2_0000]);

    let (mut zcu102, part) = sample();
    zcu102.platform.board = "zcu102".into();
    (zcu102.platform.gicd.base, zcu102.platform.gicr.base) = (0xf901_0000, 0xf902_0000);
    let blob = generate(&zcu102, &part).unwrap();
    let v2 = Fdt::new(&blob).unwrap();
    let gic400 = node(&v2, "/intc@f9010000");
    assert_eq!(text(gic400, "compatible"), "arm,gic-400");
    assert_eq!(u64s(prop(gic400, "reg")), [0xf901_0000, 0x1_0000, 0xf902_0000, 0x2_0000], "GICD, then GICC");

    let timer = node(&fdt, "/timer");
    assert_eq!(text(timer, "compatible"), "arm,armv8-timer");
    assert!(timer.property("always-on").is_some());
    let flags = 0x4 | (0b11 << 8);
    assert_eq!(cells(prop(timer, "interrupts")), [1, 13, flags, 1, 14, flags, 1, 11, flags, 1, 10, flags]);

    let clock = node(&fdt, "/apb-pclk");
    assert_eq!(text(clock, "compatible"), "fixed-clock");
    assert_eq!(cells(prop(clock, "clock-frequency")), [24_000_000]);
    let clock_phandle = cells(prop(clock, "phandle"))[0];

    let uart = node(&fdt, "/pl011@9000000");
    assert_eq!(string_list(uart, "compatible"), ["arm,pl011", "arm,primecell"]);
    assert_eq!(u64s(prop(uart, "reg")), [0x0900_0000, 0x1000]);
    assert_eq!(cells(prop(uart, "interrupts")), [0, 1, 4]);
    assert_eq!(cells(prop(uart, "clocks")), [clock_phandle, clock_phandle]);
    assert_eq!(string_list(uart, "clock-names"), ["uartclk", "apb_pclk"]);
}

/// The ID registers a partition reads advertise no PMU, so no node may
/// describe one either: a kernel would probe it and find its registers
/// UNDEFINED.
#[test]
fn no_pmu_is_described() {
    let (system, part) = sample();
    let blob = generate(&system, &part).unwrap();
    let fdt = Fdt::new(&blob).unwrap();
    for node in fdt.all_nodes() {
        assert!(!node.name.starts_with("pmu"), "a PMU node: {}", node.name);
        let compatible = node.property("compatible").map(|_| string_list(node, "compatible")).unwrap_or_default();
        assert!(!compatible.iter().any(|c| c.contains("pmu")), "{}: {compatible:?}", node.name);
    }
}

#[test]
fn passthrough_devices() {
    let (system, part) = sample();
    let blob = generate(&system, &part).unwrap();
    let fdt = Fdt::new(&blob).unwrap();
    let gpio = node(&fdt, "/gpio@9030000");
    assert_eq!(string_list(gpio, "compatible"), ["arm,pl061", "arm,primecell"]);
    assert_eq!(u64s(prop(gpio, "reg")), [0x0903_0000, 0x1000]);
    assert_eq!(cells(prop(gpio, "interrupts")), [0, 7, 4, 0, 8, 4], "SPIs are numbered from INTID 32");
    let clock_phandle = cells(prop(node(&fdt, "/apb-pclk"), "phandle"))[0];
    assert_eq!(cells(prop(gpio, "clocks")), [clock_phandle], "a PrimeCell's bus clock, or Linux never probes it");
    assert_eq!(text(gpio, "clock-names"), "apb_pclk");
}

#[test]
fn a_virtio_device_is_dma_coherent_and_a_primecell_is_not() {
    let (mut system, mut part) = sample();
    let virtio = partita::config::virtio::VirtioDevice {
        partition: 0,
        transport: 24,
        backend: partita::config::virtio::Backend::Console,
    };
    part.devices.push(virtio.device("virtio-console0".into()));
    system.partitions[0] = part.clone();
    let blob = generate(&system, &part).unwrap();
    let fdt = Fdt::new(&blob).unwrap();
    let console = node(&fdt, "/virtio-console0@a003000");
    assert_eq!(string_list(console, "compatible"), ["virtio,mmio"]);
    assert_eq!(cells(prop(console, "interrupts")), [0, 40, 4], "transport 24 raises INTID 72");
    assert!(console.property("dma-coherent").is_some(), "QEMU's virtio devices snoop the caches");
    assert!(node(&fdt, "/gpio@9030000").property("dma-coherent").is_none());
}

#[test]
fn dtb_sits_in_the_last_64_kib_of_the_first_region() {
    let (_, part) = sample();
    assert_eq!(dtb_address(&part).unwrap(), 0x4800_0000 + 0x20_0000 - DTB_WINDOW);
    let tiny = partition("tiny", vec![0], vec![region(0x4800_0000, 0x8000)]);
    assert!(dtb_address(&tiny).is_err());
    let none = partition("none", vec![0], vec![]);
    assert!(dtb_address(&none).is_err());
}

#[test]
fn oversized_tree_is_refused() {
    let (system, mut part) = sample();
    part.bootargs = "x".repeat(DTB_WINDOW as usize);
    let error = format!("{:#}", generate(&system, &part).unwrap_err());
    assert!(error.contains("rtos") && error.contains("reserved"), "{error}");
}

/// dtc is what a person uses to inspect `out/<cfg>/<partition>.dtb`; the
/// tree must decompile cleanly. Skipped where dtc is not installed.
#[test]
fn dtc_reads_it_without_warnings() {
    let (system, part) = sample();
    let Some(dts) = decompiled(&generate(&system, &part).unwrap(), "rtos") else { return };
    assert!(dts.contains("compatible = \"arm,gic-v3\";"), "{dts}");
    assert!(dts.contains("stdout-path = \"/pl011@9000000\";"), "{dts}");
}

/// The tree as dtc decompiles it, after checking dtc had nothing to say;
/// `None` where dtc is not installed.
fn decompiled(blob: &[u8], name: &str) -> Option<String> {
    let path = scratch(&format!("dtc-{name}")).join(format!("{name}.dtb"));
    std::fs::write(&path, blob).unwrap();
    let output = match std::process::Command::new("dtc").args(["-I", "dtb", "-O", "dts"]).arg(&path).output() {
        Ok(output) => output,
        Err(_) => {
            eprintln!("dtc not installed; skipping the decompile check");
            return None;
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "dtc warnings:\n{stderr}");
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `/partita` lists exactly the channels the partition is on, with the
/// index the calls take, its direction, sizes, window and doorbell.
#[test]
fn channels_the_partition_is_listed_on() {
    use partita_core::config::model::{Channel, ChannelKind};
    let (mut system, part) = sample();
    system.partitions.push(partition("gpos", vec![2], vec![region(0x6000_0000, 0x20_0000)]));
    let channel = |name: &str, kind| Channel { name: name.to_string(), kind };
    let (ipa, pa, size) = (0x7000_0000, 0x8000_0000, 0x1_0000);
    let window =
        ChannelKind::SharedMemory { partitions: vec![0, 1], ipa, pa, size, read_only: vec![0], doorbell: Some(48) };
    system.channels = vec![
        channel(
            "status",
            ChannelKind::Sampling { source: 0, destinations: vec![1], max_message: 64, refresh_us: 10_000 },
        ),
        channel("commands", ChannelKind::Queuing { source: 1, destination: 0, max_message: 32, depth: 8 }),
        channel("private", ChannelKind::Queuing { source: 1, destination: 1, max_message: 8, depth: 1 }),
        channel("frames", window),
    ];
    let blob = generate(&system, &part).unwrap();
    let fdt = Fdt::new(&blob).unwrap();
    let hv = node(&fdt, "/partita");
    assert_eq!(text(hv, "compatible"), "partita,hypervisor");
    assert_eq!(cells(prop(hv, "abi-version")), [0x1_0000]);
    assert_eq!(cells(prop(hv, "partition")), [0]);
    let names: Vec<&str> = hv.children().map(|c| c.name).collect();
    assert_eq!(names, ["status", "commands", "frames@70000000"], "not `private`, which rtos is not on");

    let status = node(&fdt, "/partita/status");
    assert_eq!(text(status, "compatible"), "partita,sampling-port");
    assert_eq!(cells(prop(status, "channel")), [0]);
    assert!(status.property("send").is_some() && status.property("receive").is_none());
    assert_eq!(cells(prop(status, "max-message")), [64]);
    assert_eq!(u64s(prop(status, "refresh-us")), [10_000]);

    let commands = node(&fdt, "/partita/commands");
    assert_eq!(cells(prop(commands, "channel")), [1]);
    assert!(commands.property("receive").is_some() && commands.property("send").is_none());
    assert_eq!((cells(prop(commands, "max-message")), cells(prop(commands, "depth"))), (vec![32], vec![8]));

    let frames = node(&fdt, "/partita/frames@70000000");
    assert_eq!(text(frames, "compatible"), "partita,shared-memory");
    assert_eq!(cells(prop(frames, "channel")), [3]);
    assert_eq!(u64s(prop(frames, "reg")), [0x7000_0000, 0x1_0000]);
    assert!(frames.property("writable").is_none(), "rtos maps it read-only");
    assert_eq!(cells(prop(frames, "interrupts")), [0, 16, 4], "SPI 48");
}

/// A partition with a timed-I/O grant finds its lines, depth, timing and
/// read-only view under `/partita`; one without finds nothing.
#[test]
fn the_timed_io_grant_with_its_view() {
    use partita_core::config::model::{TimedIo, TimedIoGrant};
    let (mut system, part) = sample();
    system.partitions.push(partition("gpos", vec![2], vec![region(0x6000_0000, 0x20_0000)]));
    let grant = |partition, pins, view| TimedIoGrant { partition, pins, depth: 8, view };
    system.timed_io = Some(TimedIo {
        device: 0x0903_0000,
        horizon_us: 500_000,
        lead_us: 20,
        grants: vec![grant(0, 0b11, Some(0x0a10_0000)), grant(1, 0b100, None)],
    });
    let blob = generate(&system, &part).unwrap();
    let fdt = Fdt::new(&blob).unwrap();
    let io = node(&fdt, "/partita/timed-io@a100000");
    assert_eq!(text(io, "compatible"), "partita,timed-io");
    assert_eq!((cells(prop(io, "pins")), cells(prop(io, "depth"))), (vec![0b11], vec![8]));
    assert_eq!((u64s(prop(io, "lead-us")), u64s(prop(io, "horizon-us"))), (vec![20], vec![500_000]));
    assert_eq!(u64s(prop(io, "reg")), [0x0a10_0000, 0x1000]);
    let gpos = system.partitions[1].clone();
    let blob = generate(&system, &gpos).unwrap();
    let fdt = Fdt::new(&blob).unwrap();
    let io = node(&fdt, "/partita/timed-io");
    assert!(io.property("reg").is_none(), "no view");
    system.timed_io = None;
    let blob = generate(&system, &part).unwrap();
    assert!(Fdt::new(&blob).unwrap().find_node("/partita/timed-io@a100000").is_none());
}

/// Each virtual device is a node at its interface page, naming its function
/// and its three signals; a partition without accelerators gets none.
#[test]
fn accelerators_with_their_page_and_signals() {
    use partita_core::config::model::{Accelerator, Fabric, Function, Range, VirtualDevice};
    let (mut system, mut part) = sample();
    let accelerator =
        |name: &str, function| Accelerator { name: name.to_string(), function, frame_ns: 1, preempt_ns: 1 };
    system.fabric = Some(Fabric {
        memory: Range::new(0x4f00_0000, 0x10_0000),
        bandwidth: 128_000_000,
        hold_us: 1_000,
        turn_us: 50,
        cpu: 0,
        prrs: Vec::new(),
        accelerators: vec![accelerator("qam", Function::Qam16), accelerator("fft", Function::Fft1024)],
    });
    part.accelerators = vec![
        VirtualDevice { accelerator: 1, ipa: 0x1000_1000, signals: [80, 81, 82], deadline_us: None },
        VirtualDevice { accelerator: 0, ipa: 0x1000_0000, signals: [83, 84, 85], deadline_us: Some(2_000) },
    ];
    let blob = generate(&system, &part).unwrap();
    let fdt = Fdt::new(&blob).unwrap();
    let fft = node(&fdt, "/fft@10001000");
    assert_eq!(text(fft, "compatible"), "partita,accelerator");
    assert_eq!(text(fft, "function"), "fft1024");
    assert_eq!(u64s(prop(fft, "reg")), [0x1000_1000, 0x1000]);
    assert_eq!(cells(prop(fft, "device")), [0]);
    assert_eq!(cells(prop(fft, "interrupts")), [0, 48, 4, 0, 49, 4, 0, 50, 4]);
    assert_eq!(string_list(fft, "interrupt-names"), ["wait", "ready", "preempt"]);
    assert_eq!(cells(prop(node(&fdt, "/qam@10000000"), "device")), [1]);
    if let Some(dts) = decompiled(&blob, "accelerators") {
        assert!(dts.contains("function = \"fft1024\";"), "{dts}");
    }

    part.accelerators.clear();
    let blob = generate(&system, &part).unwrap();
    let fdt = Fdt::new(&blob).unwrap();
    assert!(fdt.all_nodes().all(|n| !n.name.starts_with("fft@") && !n.name.starts_with("qam@")));
}
