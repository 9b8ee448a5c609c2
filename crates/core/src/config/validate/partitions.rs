//! Each partition as a whole: how many there are and what each holds, its
//! name and settings, and where its vCPUs run (pinning, exclusive pCPUs,
//! migration). What it maps is in `mappings`.

use super::{name_problem, partition_path, Validator};
use crate::config::limits::{
    MAX_DEVICES, MAX_MEMORY_REGIONS, MAX_MIGRATION_TARGETS, MAX_PARTITIONS, MAX_VCPUS_PER_PARTITION,
};
use crate::config::model::{ChannelKind, Delivery, Migration, Partition};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Partita tags its own console lines with this name.
const RESERVED_NAME: &str = "partita";

impl Validator<'_> {
    pub(super) fn partition_counts(&mut self) {
        let partitions = &self.system.partitions;
        if partitions.is_empty() {
            self.push(String::new(), "partition", format!("no partitions; a system needs 1 to {MAX_PARTITIONS}"));
        } else if partitions.len() > MAX_PARTITIONS {
            let message = format!("{} partitions; at most {MAX_PARTITIONS} are allowed", partitions.len());
            self.push(String::new(), "partition", message);
        }
        for (p, partition) in partitions.iter().enumerate() {
            self.entry_counts(p, partition);
        }
    }

    fn entry_counts(&mut self, p: usize, partition: &Partition) {
        let vcpus = partition.vcpus.len();
        if vcpus == 0 || vcpus > MAX_VCPUS_PER_PARTITION {
            let message = format!("{vcpus} vCPUs; a partition needs 1 to {MAX_VCPUS_PER_PARTITION}");
            self.push(partition_path(p), "cpus", message);
        }
        let regions = partition.memory.len();
        if regions == 0 || regions > MAX_MEMORY_REGIONS {
            let message = format!("{regions} memory regions; a partition needs 1 to {MAX_MEMORY_REGIONS}");
            self.push(partition_path(p), "memory", message);
        }
        if partition.devices.len() > MAX_DEVICES {
            let message = format!("{} devices; at most {MAX_DEVICES} are allowed", partition.devices.len());
            self.push(partition_path(p), "device", message);
        }
    }

    /// Every rule of one partition, partition by partition.
    pub(super) fn partitions(&mut self) {
        for (p, partition) in self.system.partitions.iter().enumerate() {
            self.partition_settings(p, partition);
            self.watchdog(p, partition);
            self.health_actions(p, partition);
            self.vcpus(p, partition);
            self.migrations(p, partition);
            self.mappings(p, partition);
        }
    }

    fn partition_settings(&mut self, p: usize, partition: &Partition) {
        if let Some(problem) = name_problem(&partition.name) {
            self.push(partition_path(p), "name", problem);
        } else if partition.name == RESERVED_NAME {
            self.push(partition_path(p), "name", format!("name \"{RESERVED_NAME}\" is reserved for the hypervisor"));
        }
        if !super::is_aligned(partition.console) {
            self.push(partition_path(p), "console", format!("{:#x} is not 4 KiB aligned", partition.console));
        }
        if partition.rights.switch_plan && self.system.plans.is_empty() {
            let message = "grants \"switch-plan\", but the configuration declares no [[plan]]".into();
            self.push(partition_path(p), "rights", message);
        }
        if partition.bootargs.contains('\0') {
            self.push(partition_path(p), "bootargs", "bootargs must not contain a NUL character".into());
        }
    }

    fn vcpus(&mut self, p: usize, partition: &Partition) {
        let cpus = self.system.platform.cpus;
        for (v, &pcpu) in partition.vcpus.iter().enumerate() {
            if pcpu >= cpus {
                let message = format!("vCPU {v} is on pCPU {pcpu}, which does not exist: platform.cpus is {cpus}");
                self.push(partition_path(p), "cpus", message);
            }
            if let Some(first) = partition.vcpus.iter().take(v).position(|&other| other == pcpu) {
                let message = format!(
                    "vCPU {v} and vCPU {first} are both on pCPU {pcpu}; a partition may put only one vCPU on a pCPU"
                );
                self.push(partition_path(p), "cpus", message);
            }
        }
    }

    /// A vCPU may move only between fixed-priority pCPUs that exist and
    /// that no exclusive partition owns; an exclusive partition never moves.
    fn migrations(&mut self, p: usize, partition: &Partition) {
        if partition.migrate.len() > MAX_VCPUS_PER_PARTITION {
            let message = format!("{} entries; at most {MAX_VCPUS_PER_PARTITION} are allowed", partition.migrate.len());
            self.push(partition_path(p), "migrate", message);
            return;
        }
        for (m, migration) in partition.migrate.iter().enumerate() {
            for (field, problem) in self.migration_problems(partition, m, migration) {
                self.push(format!("{}.migrate[{m}]", partition_path(p)), field, problem);
            }
        }
    }

    fn migration_problems(
        &self,
        partition: &Partition,
        m: usize,
        migration: &Migration,
    ) -> Vec<(&'static str, String)> {
        let cyclic = |cpu: u32| self.system.plans.first().is_some_and(|plan| plan.cores.iter().any(|c| c.cpu == cpu));
        let exclusive_owner = |cpu: u32| self.system.partitions.iter().find(|o| o.exclusive && o.vcpus.contains(&cpu));
        let vcpu = migration.vcpu;
        let Some(&home) = partition.vcpus.get(vcpu as usize) else {
            return alloc::vec![(
                "vcpu",
                format!("vCPU {vcpu} does not exist: the partition has {}", partition.vcpus.len())
            )];
        };
        let mut problems = Vec::new();
        if partition.exclusive {
            problems.push(("vcpu", "an exclusive partition's vCPUs never leave their pCPUs".into()));
        }
        if partition.migrate.iter().take(m).any(|other| other.vcpu == vcpu) {
            problems.push(("vcpu", format!("vCPU {vcpu} is listed twice")));
        }
        if cyclic(home) {
            problems.push(("vcpu", format!("vCPU {vcpu} is on pCPU {home}, which a plan runs cyclically")));
        }
        if migration.to.is_empty() || migration.to.len() > MAX_MIGRATION_TARGETS {
            let message = format!("{} pCPUs listed; 1 to {MAX_MIGRATION_TARGETS} are allowed", migration.to.len());
            problems.push(("to", message));
        }
        for &cpu in migration.to.iter().take(MAX_MIGRATION_TARGETS) {
            let problem = if cpu >= self.system.platform.cpus {
                format!("pCPU {cpu} does not exist: platform.cpus is {}", self.system.platform.cpus)
            } else if cpu == home {
                format!("pCPU {cpu} is vCPU {vcpu}'s own")
            } else if cyclic(cpu) {
                format!("pCPU {cpu} is run cyclically by a plan")
            } else if let Some(owner) = exclusive_owner(cpu) {
                format!("pCPU {cpu} belongs to exclusive partition \"{}\"", owner.name)
            } else {
                continue;
            };
            problems.push(("to", problem));
        }
        problems
    }

    pub(super) fn unique_partition_names(&mut self) {
        let partitions = &self.system.partitions;
        for (p, partition) in partitions.iter().enumerate() {
            if let Some(first) = partitions.iter().take(p).position(|other| other.name == partition.name) {
                let message = format!("duplicate partition name \"{}\" (also partition[{first}])", partition.name);
                self.push(partition_path(p), "name", message);
            }
        }
    }

    /// Partita keeps no scheduler tick on an exclusive partition's pCPUs and
    /// lets its guest's WFI sleep there, so another vCPU on one of them
    /// would never be scheduled.
    pub(super) fn exclusive_pcpus(&mut self) {
        let partitions = &self.system.partitions;
        for (p, partition) in partitions.iter().enumerate().filter(|(_, partition)| partition.exclusive) {
            for (v, &pcpu) in partition.vcpus.iter().enumerate() {
                let others = partitions.iter().enumerate().filter(|&(q, _)| q != p).map(|(_, other)| other);
                for other in others {
                    if let Some(w) = other.vcpus.iter().position(|&other_pcpu| other_pcpu == pcpu) {
                        let message = format!(
                            "partition \"{}\" is exclusive, but its vCPU {v} shares pCPU {pcpu} \
                             with partition \"{}\" vCPU {w}",
                            partition.name, other.name
                        );
                        self.push(partition_path(p), "exclusive", message);
                    }
                }
            }
        }
    }

    /// Direct delivery hands the guest its core's physical CPU interface,
    /// so only a pCPU the partition owns qualifies, and only interrupts
    /// that exist physically on it (its timers, its SGIs) can reach it
    /// without a list register: the interrupts Partita makes up (doorbells,
    /// an accelerator's signals) and the forwarded SPIs still need one.
    pub(super) fn direct_delivery(&mut self) {
        let system = self.system;
        for (p, partition) in system.partitions.iter().enumerate() {
            if partition.interrupts != Delivery::Direct {
                continue;
            }
            let doorbell = system.channels.iter().any(|channel| match &channel.kind {
                ChannelKind::SharedMemory { partitions, doorbell: Some(_), .. } => partitions.contains(&p),
                _ => false,
            });
            let needs = [
                (!partition.exclusive, "its pCPUs to itself (`exclusive = true`)"),
                (partition.budget.is_some(), "no `budget` (a budget needs the guest's WFI trapped)"),
                (!partition.accelerators.is_empty(), "no accelerators (their signals are virtual interrupts)"),
                (
                    partition.devices.iter().any(|d| !d.interrupts.is_empty()),
                    "no device interrupts (forwarded SPIs go through list registers)",
                ),
                (doorbell, "no shared-memory doorbell (a doorbell is a virtual interrupt)"),
                (system.platform.gicv2(), "a GICv3 (a GICv2 has no second group to keep Partita's own interrupts in)"),
            ];
            for (_, need) in needs.iter().filter(|(unmet, _)| *unmet) {
                let message = format!("partition \"{}\" asks for direct interrupts, which need {need}", partition.name);
                self.push(partition_path(p), "interrupts", message);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use crate::config::model::Delivery;
    use alloc::string::String;
    use alloc::string::ToString;
    use alloc::vec;
    use alloc::vec::Vec;

    #[test]
    fn counts() {
        let mut s = system();
        s.partitions.clear();
        expect_one(&s, "", "partition", "no partitions");
        let mut s = system();
        s.partitions = (0..17).map(|i| partition(&i.to_string(), vec![0], 0x4200_0000 + i * 16 * MIB)).collect();
        expect_one(&s, "", "partition", "17 partitions");
        let mut s = system();
        s.partitions[0].memory = (0..9).map(|i| region(0x4000_0000 + i * 16 * MIB, 0x4200_0000)).collect();
        expect_one(&s, "partition[0]", "memory", "9 memory regions");
    }

    #[test]
    fn pcpu_out_of_range() {
        let mut s = system();
        s.partitions[0].vcpus = vec![4];
        expect_one(&s, "partition[0]", "cpus", "pCPU 4, which does not exist: platform.cpus is 4");
    }

    #[test]
    fn two_vcpus_on_one_pcpu() {
        let mut s = system();
        s.partitions[1].vcpus = vec![2, 2];
        expect_one(&s, "partition[1]", "cpus", "vCPU 1 and vCPU 0 are both on pCPU 2");
    }

    #[test]
    fn empty_vcpu_list() {
        let mut s = system();
        s.partitions[0].vcpus.clear();
        expect_one(&s, "partition[0]", "cpus", "0 vCPUs");
    }

    #[test]
    fn duplicate_names() {
        let mut s = system();
        s.partitions[1].name = "rtos".into();
        expect_one(&s, "partition[1]", "name", "duplicate partition name \"rtos\"");
        let mut s = system();
        let mut other = gpio();
        other.pa = 0x0904_0000;
        other.ipa = 0x0904_0000;
        other.interrupts = vec![spi(40)];
        s.partitions[0].devices = vec![gpio(), other];
        expect_one(&s, "partition[0].device[1]", "name", "duplicate device name \"gpio\"");
    }

    #[test]
    fn bad_and_reserved_names() {
        let mut s = system();
        s.partitions[0].name = "Bad Name".into();
        expect_one(&s, "partition[0]", "name", "may only use");
        s.partitions[0].name = "partita".into();
        expect_one(&s, "partition[0]", "name", "reserved");
        s.partitions[0].name = "x".repeat(32);
        expect_one(&s, "partition[0]", "name", "1 to 31 characters");
    }

    #[test]
    fn direct_delivery_needs_an_owned_pcpu_and_only_physical_interrupts() {
        let mut s = linked();
        s.partitions[0].interrupts = Delivery::Direct;
        let problems: Vec<String> = validate(&s).into_iter().map(|issue| issue.message).collect();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("asks for direct interrupts, which need its pCPUs to itself"), "{problems:?}");
        assert!(problems[1].contains("no shared-memory doorbell"), "{problems:?}");
        s.partitions[0].exclusive = true;
        *shared(&mut s).5 = None;
        assert_eq!(validate(&s), vec![]);
        s.partitions[0].devices = vec![gpio()];
        expect_one(&s, "partition[0]", "interrupts", "which need no device interrupts");
        s.partitions[0].devices.clear();
        s.partitions[0].budget = budget(1_000, 10_000);
        expect_one(&s, "partition[0]", "interrupts", "which need no `budget`");
        s.partitions[0].budget = None;
        s.platform.board = crate::config::model::ZCU102.into();
        let gicv2: Vec<String> = validate(&s).into_iter().map(|issue| issue.message).collect();
        assert!(gicv2.iter().any(|m| m.contains("direct interrupts, which need a GICv3")), "{gicv2:?}");
    }

    #[test]
    fn exclusive_partition_sharing_a_pcpu() {
        let mut s = system();
        s.partitions[0].exclusive = true;
        assert_eq!(validate(&s), vec![]);
        s.partitions[1].vcpus = vec![2, 1];
        expect_one(
            &s,
            "partition[0]",
            "exclusive",
            "partition \"rtos\" is exclusive, but its vCPU 0 shares pCPU 1 with partition \"gpos\" vCPU 1",
        );
        // Only the exclusive side is constrained: gpos may share its pCPUs.
        s.partitions[0].exclusive = false;
        assert_eq!(validate(&s), vec![]);
        s.partitions[1].exclusive = true;
        expect_one(&s, "partition[1]", "exclusive", "its vCPU 1 shares pCPU 1 with partition \"rtos\" vCPU 0");
    }
}
