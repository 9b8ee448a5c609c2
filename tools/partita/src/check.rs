//! `partita check CONFIG`: every problem of a configuration with its place,
//! or a table of what the hypervisor will build.

use crate::config::{self, Config};
use partita_core::model::{Criticality, Device, Interrupt, MemoryRegion, Partition, Perms};
use std::path::Path;

/// Loads and validates `path`. Diagnostics go to stderr, one per line; a
/// valid file's summary goes to stdout.
pub fn check(path: &Path) -> anyhow::Result<Config> {
    match config::load(path) {
        Ok(config) => {
            print!("{}", summary(&config));
            Ok(config)
        }
        Err(diagnostics) => {
            for diagnostic in &diagnostics {
                eprintln!("{diagnostic}");
            }
            anyhow::bail!("{} error(s) in {}", diagnostics.len(), path.display())
        }
    }
}

/// The human summary `check` prints for a valid configuration.
pub fn summary(config: &Config) -> String {
    let system = &config.system;
    let hypervisor = &system.hypervisor.memory;
    let mut out = format!(
        "{}: OK, {} partition(s) on {} pCPU(s); hypervisor memory {:#x} ({}), quantum {} us\n\n",
        config.path.display(),
        system.partitions.len(),
        system.platform.cpus,
        hypervisor.base,
        size(hypervisor.size),
        system.hypervisor.quantum_us
    );
    let mut rows = vec![
        ["PARTITION", "CRITICALITY", "vCPU->pCPU", "MEMORY (ipa -> pa, size, perms)", "DEVICES"].map(String::from)
    ];
    for partition in &system.partitions {
        rows.extend(partition_rows(partition));
    }
    out.push_str(&table(&rows));
    out.push_str(&plans(system));
    out
}

/// Each plan's cyclic cores: major frame, slots, and how much of the frame
/// the slots claim (the rest is idle).
fn plans(system: &partita_core::model::System) -> String {
    let mut out = String::new();
    for plan in &system.plans {
        out += &format!("\nplan \"{}\"\n", plan.name);
        for core in &plan.cores {
            let busy: u64 = core.slots.iter().map(|s| s.duration_us).sum();
            let percent = busy as f64 * 100.0 / core.major_frame_us.max(1) as f64;
            out += &format!("  pCPU {}: major frame {} us, {percent:.1} % in slots:", core.cpu, core.major_frame_us);
            for slot in &core.slots {
                let name = system.partitions.get(slot.partition).map_or("?", |p| p.name.as_str());
                out += &format!(" {name}/vcpu{} {}+{}", slot.vcpu, slot.start_us, slot.duration_us);
            }
            out.push('\n');
        }
    }
    out
}

/// One line per memory region or device, whichever there are more of.
fn partition_rows(partition: &Partition) -> Vec<[String; 5]> {
    let memory: Vec<String> = partition.memory.iter().map(memory_cell).collect();
    let devices: Vec<String> = partition.devices.iter().map(device_cell).collect();
    let lines = memory.len().max(devices.len()).max(1);
    (0..lines)
        .map(|line| {
            let first = line == 0;
            [
                if first { partition.name.clone() } else { String::new() },
                if first { criticality(partition.criticality).into() } else { String::new() },
                if first { vcpus(&partition.vcpus) } else { String::new() },
                memory.get(line).cloned().unwrap_or_default(),
                devices.get(line).cloned().unwrap_or_else(|| if first { "-".into() } else { String::new() }),
            ]
        })
        .collect()
}

fn table(rows: &[[String; 5]]) -> String {
    let mut widths = [0usize; 5];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row.iter().zip(widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn criticality(criticality: Criticality) -> &'static str {
    match criticality {
        Criticality::High => "high",
        Criticality::Medium => "medium",
        Criticality::Low => "low",
    }
}

fn vcpus(pcpus: &[u32]) -> String {
    let pairs: Vec<String> = pcpus.iter().enumerate().map(|(vcpu, pcpu)| format!("{vcpu}->{pcpu}")).collect();
    pairs.join(" ")
}

fn memory_cell(region: &MemoryRegion) -> String {
    let identity = if region.identity { " identity" } else { "" };
    format!("{:#010x} -> {:#010x} {:>4} {}{identity}", region.ipa, region.pa, size(region.size), perms(region.perms))
}

fn device_cell(device: &Device) -> String {
    let interrupts: Vec<String> = device.interrupts.iter().map(interrupt).collect();
    let irqs = if interrupts.is_empty() { String::new() } else { format!(" irq {}", interrupts.join(",")) };
    format!("{} {:#010x} -> {:#010x} {}{irqs}", device.name, device.ipa, device.pa, size(device.size))
}

/// vCPU 0 is the default and goes unsaid, as in the file.
fn interrupt(interrupt: &Interrupt) -> String {
    match interrupt.vcpu {
        0 => interrupt.intid.to_string(),
        vcpu => format!("{}->vcpu{vcpu}", interrupt.intid),
    }
}

fn perms(perms: Perms) -> String {
    [(perms.read, 'r'), (perms.write, 'w'), (perms.exec, 'x')].iter().map(|&(on, c)| if on { c } else { '-' }).collect()
}

/// `16M`, `4K`, `1G` when exact, hex otherwise.
fn size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes != 0 && bytes & (unit - 1) == 0)
        .map_or_else(|| format!("{bytes:#x}"), |(unit, suffix)| format!("{}{suffix}", bytes / unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_the_configuration() {
        assert_eq!(size(16 << 20), "16M");
        assert_eq!(size(1 << 30), "1G");
        assert_eq!(size(0x1000), "4K");
        assert_eq!(size(0x1800), "6K");
        assert_eq!(size(0x180), "0x180");
        assert_eq!(size(0), "0x0");
    }

    #[test]
    fn permissions_and_vcpus() {
        assert_eq!(perms(Perms::RW), "rw-");
        assert_eq!(vcpus(&[2, 3]), "0->2 1->3");
    }
}
