//! The device tree each partition finds in x0 at entry.
//!
//! It describes the machine as the partition sees it, in the shape of QEMU
//! `virt`'s own tree, so that Linux's arm64 boot protocol and the test guest
//! read it the same way: its RAM, its vCPUs, PSCI over HVC, the GICv3 it is
//! given, the generic timer, its emulated PL011 and its passthrough devices.
//!
//! `/chosen/kaslr-seed` and `/chosen/rng-seed` hold zeros here: the
//! hypervisor writes fresh values over them at every load of the partition
//! (`partita_core::partition::seed`), at the offsets [`Tree::seeds`] gives.

use anyhow::{bail, Context, Result};
use partita_core::config::image::SeedPlaces;
use partita_core::config::limits::PAGE_SIZE;
use partita_core::config::model::{ChannelKind, Partition, Range, System, GICV2_GICC_SIZE};
use partita_core::fabric::interface::PAGE_SIZE as INTERFACE_PAGE;
use partita_core::hypercall::ABI_VERSION;
use partita_core::partition::seed::{KASLR_SEED_LEN, RNG_SEED_LEN};
use vm_fdt::FdtWriter;

/// Room reserved for the tree at the top of the partition's first RAM region.
pub const DTB_WINDOW: u64 = 0x1_0000;

/// Each vCPU's redistributor frame pair (RD_base + SGI_base) is 128 KiB.
const GICR_FRAME: u64 = 0x2_0000;
const GICD_SIZE: u64 = 0x1_0000;
const UART_SIZE: u64 = 0x1000;
const PHANDLE_GIC: u32 = 1;
const PHANDLE_CLOCK: u32 = 2;

/// GIC binding: first cell of an interrupt specifier.
const GIC_SPI: u32 = 0;
const GIC_PPI: u32 = 1;
const IRQ_LEVEL_HIGH: u32 = 4;
/// The emulated console's SPI number (INTID 33), fixed by Partita's vUART.
const CONSOLE_SPI: u32 = 1;

/// Guest-physical address where the partition's tree is loaded.
pub fn dtb_address(partition: &Partition) -> Result<u64> {
    let first = partition
        .memory
        .first()
        .with_context(|| format!("partition `{}` has no memory region for its device tree", partition.name))?;
    if first.size < DTB_WINDOW {
        bail!(
            "partition `{}`: its first memory region ({:#x} bytes) is smaller than the {:#x} bytes the device tree needs",
            partition.name,
            first.size,
            DTB_WINDOW
        );
    }
    Ok(first.ipa + first.size - DTB_WINDOW)
}

/// What `/chosen` tells a kernel beyond the configuration: where its
/// initrd lies (guest-physical).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chosen {
    pub initrd: Option<Range>,
}

/// A partition's flattened device tree and where its seeds' values lie.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    pub blob: Vec<u8>,
    pub seeds: SeedPlaces,
}

/// The byte each seed's placeholder is filled with.
#[derive(Clone, Copy)]
struct Placeholders {
    kaslr: u8,
    rng: u8,
}

const ZEROS: Placeholders = Placeholders { kaslr: 0, rng: 0 };

/// Builds the flattened device tree of one partition.
pub fn generate(system: &System, partition: &Partition) -> Result<Vec<u8>> {
    Ok(generate_with(system, partition, &Chosen::default())?.blob)
}

/// [`generate`] with what `/chosen` says beyond the configuration, and
/// where the seeds are. They are found by writing the tree again with one
/// seed's placeholder changed: the bytes that differ are its value, and
/// nothing else can, since the layout does not depend on the bytes.
pub fn generate_with(system: &System, partition: &Partition, chosen: &Chosen) -> Result<Tree> {
    let blob = checked_tree(system, partition, chosen, ZEROS)?;
    let kaslr_marked = checked_tree(system, partition, chosen, Placeholders { kaslr: 0xff, ..ZEROS })?;
    let rng_marked = checked_tree(system, partition, chosen, Placeholders { rng: 0xff, ..ZEROS })?;
    let kaslr = value_offset(&blob, &kaslr_marked, KASLR_SEED_LEN)?;
    let rng = value_offset(&blob, &rng_marked, RNG_SEED_LEN)?;
    Ok(Tree { blob, seeds: SeedPlaces { kaslr, rng, rng_len: RNG_SEED_LEN as u32 } })
}

fn checked_tree(system: &System, partition: &Partition, chosen: &Chosen, fill: Placeholders) -> Result<Vec<u8>> {
    let blob = write_tree(system, partition, chosen, fill)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("cannot build the device tree of partition `{}`", partition.name))?;
    if blob.len() as u64 > DTB_WINDOW {
        bail!(
            "the device tree of partition `{}` is {} bytes, more than the {} bytes reserved for it",
            partition.name,
            blob.len(),
            DTB_WINDOW
        );
    }
    Ok(blob)
}

/// Where `marked` differs from `base`, which must be one run of `len` bytes.
fn value_offset(base: &[u8], marked: &[u8], len: usize) -> Result<u32> {
    let differ: Vec<usize> = (0..base.len()).filter(|&at| marked.get(at) != Some(&base[at])).collect();
    match (differ.first(), differ.last()) {
        (Some(&first), Some(&last)) if base.len() == marked.len() && differ.len() == len && last - first + 1 == len => {
            Ok(u32::try_from(first)?)
        }
        _ => bail!("internal error: a device-tree seed is not one run of {len} bytes ({} differ)", differ.len()),
    }
}

type FdtResult<T> = std::result::Result<T, vm_fdt::Error>;

fn write_tree(system: &System, partition: &Partition, extra: &Chosen, fill: Placeholders) -> FdtResult<Vec<u8>> {
    let mut fdt = FdtWriter::new()?;
    let root = fdt.begin_node("")?;
    fdt.property_string("compatible", "linux,dummy-virt")?;
    fdt.property_string("model", &format!("Partita partition {}", partition.name))?;
    fdt.property_u32("#address-cells", 2)?;
    fdt.property_u32("#size-cells", 2)?;
    fdt.property_u32("interrupt-parent", PHANDLE_GIC)?;
    chosen(&mut fdt, partition, extra, fill)?;
    memory(&mut fdt, partition)?;
    cpus(&mut fdt, partition)?;
    psci(&mut fdt)?;
    gic(&mut fdt, system, partition)?;
    timer(&mut fdt, partition)?;
    clock(&mut fdt)?;
    console(&mut fdt, partition)?;
    devices(&mut fdt, partition)?;
    accelerators(&mut fdt, system, partition)?;
    hypervisor(&mut fdt, system, partition)?;
    fdt.end_node(root)?;
    fdt.finish()
}

fn chosen(fdt: &mut FdtWriter, partition: &Partition, extra: &Chosen, fill: Placeholders) -> FdtResult<()> {
    let node = fdt.begin_node("chosen")?;
    fdt.property_string("bootargs", &partition.bootargs)?;
    if let Some(initrd) = extra.initrd {
        fdt.property_u64("linux,initrd-start", initrd.base)?;
        fdt.property_u64("linux,initrd-end", initrd.end())?;
    }
    fdt.property_string("stdout-path", &format!("/pl011@{:x}", partition.console))?;
    fdt.property_string("partita,partition", &partition.name)?;
    fdt.property("kaslr-seed", &[fill.kaslr; KASLR_SEED_LEN])?;
    fdt.property("rng-seed", &[fill.rng; RNG_SEED_LEN])?;
    fdt.end_node(node)
}

fn memory(fdt: &mut FdtWriter, partition: &Partition) -> FdtResult<()> {
    for region in &partition.memory {
        let node = fdt.begin_node(&format!("memory@{:x}", region.ipa))?;
        fdt.property_string("device_type", "memory")?;
        fdt.property_array_u64("reg", &[region.ipa, region.size])?;
        fdt.end_node(node)?;
    }
    Ok(())
}

fn cpus(fdt: &mut FdtWriter, partition: &Partition) -> FdtResult<()> {
    let node = fdt.begin_node("cpus")?;
    fdt.property_u32("#address-cells", 1)?;
    fdt.property_u32("#size-cells", 0)?;
    for index in 0..partition.vcpus.len() as u32 {
        let cpu = fdt.begin_node(&format!("cpu@{index}"))?;
        fdt.property_string("device_type", "cpu")?;
        fdt.property_string("compatible", "arm,armv8")?;
        // The hypervisor gives vCPU i the virtual MPIDR affinity i.
        fdt.property_u32("reg", index)?;
        fdt.property_string("enable-method", "psci")?;
        fdt.end_node(cpu)?;
    }
    fdt.end_node(node)
}

fn psci(fdt: &mut FdtWriter) -> FdtResult<()> {
    let node = fdt.begin_node("psci")?;
    fdt.property_string_list("compatible", strings(&["arm,psci-1.0", "arm,psci-0.2"]))?;
    fdt.property_string("method", "hvc")?;
    fdt.end_node(node)
}

/// The partition's GIC: a GICv3 with a redistributor per vCPU, or on a
/// GICv2 board a GIC-400, whose CPU interface is the page pair Partita
/// maps the virtual CPU interface at.
fn gic(fdt: &mut FdtWriter, system: &System, partition: &Partition) -> FdtResult<()> {
    let gicd = system.platform.gicd.base;
    let gicr = system.platform.gicr.base;
    let node = fdt.begin_node(&format!("intc@{gicd:x}"))?;
    let (compatible, second) = if system.platform.gicv2() {
        ("arm,gic-400", GICV2_GICC_SIZE)
    } else {
        ("arm,gic-v3", GICR_FRAME * partition.vcpus.len() as u64)
    };
    fdt.property_string("compatible", compatible)?;
    fdt.property_u32("#interrupt-cells", 3)?;
    fdt.property_null("interrupt-controller")?;
    fdt.property_u32("#address-cells", 2)?;
    fdt.property_u32("#size-cells", 2)?;
    fdt.property_null("ranges")?;
    fdt.property_array_u64("reg", &[gicd, GICD_SIZE, gicr, second])?;
    fdt.property_phandle(PHANDLE_GIC)?;
    fdt.end_node(node)
}

/// The PPI flags cell: level-high, plus the GICv2-style CPU mask that Linux
/// still expects to see for the timer.
fn ppi_flags(vcpus: usize) -> u32 {
    let mask = (1u32 << vcpus.min(8)) - 1;
    IRQ_LEVEL_HIGH | (mask << 8)
}

fn timer(fdt: &mut FdtWriter, partition: &Partition) -> FdtResult<()> {
    let flags = ppi_flags(partition.vcpus.len());
    // Secure physical, non-secure physical, virtual, hypervisor timers.
    let cells: Vec<u32> = [13, 14, 11, 10].iter().flat_map(|&ppi| [GIC_PPI, ppi, flags]).collect();
    let node = fdt.begin_node("timer")?;
    fdt.property_string("compatible", "arm,armv8-timer")?;
    fdt.property_array_u32("interrupts", &cells)?;
    fdt.property_null("always-on")?;
    fdt.end_node(node)
}

fn clock(fdt: &mut FdtWriter) -> FdtResult<()> {
    let node = fdt.begin_node("apb-pclk")?;
    fdt.property_string("compatible", "fixed-clock")?;
    fdt.property_u32("#clock-cells", 0)?;
    fdt.property_u32("clock-frequency", 24_000_000)?;
    fdt.property_string("clock-output-names", "clk24mhz")?;
    fdt.property_phandle(PHANDLE_CLOCK)?;
    fdt.end_node(node)
}

fn console(fdt: &mut FdtWriter, partition: &Partition) -> FdtResult<()> {
    let node = fdt.begin_node(&format!("pl011@{:x}", partition.console))?;
    fdt.property_string_list("compatible", strings(&["arm,pl011", "arm,primecell"]))?;
    fdt.property_array_u64("reg", &[partition.console, UART_SIZE])?;
    fdt.property_array_u32("interrupts", &[GIC_SPI, CONSOLE_SPI, IRQ_LEVEL_HIGH])?;
    fdt.property_array_u32("clocks", &[PHANDLE_CLOCK, PHANDLE_CLOCK])?;
    fdt.property_string_list("clock-names", strings(&["uartclk", "apb_pclk"]))?;
    fdt.end_node(node)
}

fn devices(fdt: &mut FdtWriter, partition: &Partition) -> FdtResult<()> {
    for device in &partition.devices {
        let node = fdt.begin_node(&format!("{}@{:x}", device.name, device.ipa))?;
        fdt.property_string_list("compatible", device.compatible.clone())?;
        fdt.property_array_u64("reg", &[device.ipa, device.size])?;
        if !device.interrupts.is_empty() {
            let cells: Vec<u32> = device.interrupts.iter().flat_map(|i| interrupt_cells(i.intid)).collect();
            fdt.property_array_u32("interrupts", &cells)?;
        }
        // QEMU's virtio devices snoop the CPUs' caches, as its own tree says.
        if device.compatible.iter().any(|c| c == crate::config::virtio::COMPATIBLE) {
            fdt.property_null("dma-coherent")?;
        }
        // Linux's AMBA bus will not probe a PrimeCell (a PL031 RTC, a PL061
        // GPIO) until it can enable its bus clock.
        if device.compatible.iter().any(|c| c == "arm,primecell") {
            fdt.property_u32("clocks", PHANDLE_CLOCK)?;
            fdt.property_string("clock-names", "apb_pclk")?;
        }
        fdt.end_node(node)?;
    }
    Ok(())
}

/// One node per virtual device: its interface page (`docs/accelerators.md`),
/// what it computes, and the three virtual interrupts that signal
/// IPC_WAIT, IPC_READY and IPC_PREEMPT, so that a guest-aware driver finds
/// them by name.
fn accelerators(fdt: &mut FdtWriter, system: &System, partition: &Partition) -> FdtResult<()> {
    let Some(fabric) = &system.fabric else { return Ok(()) };
    for (device, virtual_device) in partition.accelerators.iter().enumerate() {
        let Some(accelerator) = fabric.accelerators.get(virtual_device.accelerator) else { continue };
        let node = fdt.begin_node(&format!("{}@{:x}", accelerator.name, virtual_device.ipa))?;
        fdt.property_string("compatible", "partita,accelerator")?;
        fdt.property_array_u64("reg", &[virtual_device.ipa, INTERFACE_PAGE])?;
        fdt.property_string("function", accelerator.function.name())?;
        fdt.property_u32("device", device as u32)?;
        let cells: Vec<u32> = virtual_device.signals.iter().flat_map(|&intid| interrupt_cells(intid)).collect();
        fdt.property_array_u32("interrupts", &cells)?;
        fdt.property_string_list("interrupt-names", strings(&["wait", "ready", "preempt"]))?;
        fdt.end_node(node)?;
    }
    Ok(())
}

/// `/partita`: the hypercall ABI this partition talks to, its own index,
/// and a node per channel it is listed on, so that a guest finds its
/// channels by name (the index the calls take, its direction, sizes, the
/// shared window and the doorbell interrupt) instead of hard-coding them.
fn hypervisor(fdt: &mut FdtWriter, system: &System, partition: &Partition) -> FdtResult<()> {
    let me = system.partitions.iter().position(|p| p.name == partition.name).unwrap_or(usize::MAX);
    let node = fdt.begin_node("partita")?;
    fdt.property_string("compatible", "partita,hypervisor")?;
    fdt.property_u32("abi-version", ABI_VERSION as u32)?;
    fdt.property_u32("partition", me as u32)?;
    fdt.property_u32("#address-cells", 2)?;
    fdt.property_u32("#size-cells", 2)?;
    for (index, channel) in system.channels.iter().enumerate() {
        let Some(endpoint) = channel.kind.endpoint(me) else { continue };
        let (name, compatible) = match channel.kind {
            ChannelKind::Sampling { .. } => (channel.name.clone(), "partita,sampling-port"),
            ChannelKind::Queuing { .. } => (channel.name.clone(), "partita,queuing-port"),
            ChannelKind::SharedMemory { ipa, .. } => (format!("{}@{ipa:x}", channel.name), "partita,shared-memory"),
        };
        let shared = matches!(channel.kind, ChannelKind::SharedMemory { .. });
        let child = fdt.begin_node(&name)?;
        fdt.property_string("compatible", compatible)?;
        fdt.property_u32("channel", index as u32)?;
        // Ports: which way this partition may use it; a window: whether it may write.
        match (shared, endpoint.send, endpoint.receive) {
            (true, true, _) => fdt.property_null("writable")?,
            (false, true, _) => fdt.property_null("send")?,
            (false, false, true) => fdt.property_null("receive")?,
            _ => {}
        }
        match channel.kind {
            ChannelKind::Sampling { max_message, refresh_us, .. } => {
                fdt.property_u32("max-message", max_message)?;
                fdt.property_u64("refresh-us", refresh_us)?;
            }
            ChannelKind::Queuing { max_message, depth, .. } => {
                fdt.property_u32("max-message", max_message)?;
                fdt.property_u32("depth", depth)?;
            }
            ChannelKind::SharedMemory { ipa, size, doorbell, .. } => {
                fdt.property_array_u64("reg", &[ipa, size])?;
                if let Some(intid) = doorbell {
                    fdt.property_array_u32("interrupts", &interrupt_cells(intid))?;
                }
            }
        }
        fdt.end_node(child)?;
    }
    timed_io(fdt, system, me)?;
    fdt.end_node(node)
}

/// `/partita/timed-io`, for a partition with a timed-I/O grant: the lines
/// it may drive (bit n: GPIO n), its queue's depth, how early Partita's
/// timer fires and, with a view, where it reads the controller.
fn timed_io(fdt: &mut FdtWriter, system: &System, me: usize) -> FdtResult<()> {
    let Some(timed_io) = &system.timed_io else { return Ok(()) };
    let Some(grant) = timed_io.grants.iter().find(|g| g.partition == me) else { return Ok(()) };
    let name = grant.view.map_or_else(|| "timed-io".to_string(), |view| format!("timed-io@{view:x}"));
    let child = fdt.begin_node(&name)?;
    fdt.property_string("compatible", "partita,timed-io")?;
    fdt.property_u32("pins", u32::from(grant.pins))?;
    fdt.property_u32("depth", grant.depth)?;
    fdt.property_u64("lead-us", timed_io.lead_us)?;
    fdt.property_u64("horizon-us", timed_io.horizon_us)?;
    if let Some(view) = grant.view {
        fdt.property_array_u64("reg", &[view, PAGE_SIZE])?;
    }
    fdt.end_node(child)
}

/// GIC binding specifier of a physical INTID: SPIs count from 32, PPIs from 16.
fn interrupt_cells(intid: u32) -> [u32; 3] {
    if intid >= 32 {
        [GIC_SPI, intid - 32, IRQ_LEVEL_HIGH]
    } else {
        [GIC_PPI, intid.saturating_sub(16), IRQ_LEVEL_HIGH]
    }
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|s| s.to_string()).collect()
}
