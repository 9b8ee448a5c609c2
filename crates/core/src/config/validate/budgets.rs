//! Budgets: each one well formed, on a partition with a vCPU on a
//! fixed-priority pCPU, and the budgets sharing such a pCPU fitting in it.
//! They concern exactly the pCPUs that no plan runs, which is why they are
//! not with the plans.

use super::{partition_path, Validator};
use crate::config::model::{Budget, Partition};
use crate::config::utilisation::{cyclic_cpus, fixed_priority_loads, share_tenths_of_percent, tenths_text};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

impl Validator<'_> {
    pub(super) fn budgets(&mut self) {
        let cyclic = cyclic_cpus(self.system);
        for (p, partition) in self.system.partitions.iter().enumerate() {
            let Some(budget) = &partition.budget else { continue };
            self.budget(p, partition, budget);
            let pcpus = &partition.vcpus;
            if !pcpus.is_empty() && pcpus.iter().all(|pcpu| cyclic.contains(pcpu)) {
                let list: Vec<String> = pcpus.iter().map(|pcpu| format!("{pcpu}")).collect();
                let message = format!(
                    "partition \"{}\" has a budget, but all its vCPUs are on cyclic pCPUs ({}), where the \
                     plan's slots bound their time; a budget applies only on fixed-priority pCPUs",
                    partition.name,
                    list.join(", ")
                );
                self.push(partition_path(p), "budget", message);
            }
        }
        self.fixed_priority_utilisation();
    }

    fn budget(&mut self, p: usize, partition: &Partition, budget: &Budget) {
        let path = format!("{}.budget", partition_path(p));
        let name = &partition.name;
        if budget.time_us == 0 {
            self.push(path.clone(), "time", format!("partition \"{name}\": the budget time must be longer than 0 us"));
        }
        if budget.period_us == 0 {
            let message = format!("partition \"{name}\": the budget period must be longer than 0 us");
            self.push(path.clone(), "period", message);
        }
        if budget.time_us > budget.period_us && budget.period_us != 0 {
            let message = format!(
                "partition \"{name}\": the budget time ({} us) is longer than its period ({} us)",
                budget.time_us, budget.period_us
            );
            self.push(path, "time", message);
        }
    }

    /// The budgets of the vCPUs that share a fixed-priority pCPU must fit in
    /// it together, or no priority order can give each its time. Reported at
    /// the last partition in the file that takes a share, where the sum
    /// becomes complete.
    fn fixed_priority_utilisation(&mut self) {
        for load in fixed_priority_loads(self.system) {
            if !load.utilisation.exceeds_one() {
                continue;
            }
            let shares: Vec<String> = load
                .budgeted
                .iter()
                .filter_map(|&p| {
                    let partition = self.system.partitions.get(p)?;
                    let share = share_tenths_of_percent(partition.budget.as_ref()?);
                    Some(format!("{} {} %", partition.name, tenths_text(share)))
                })
                .collect();
            let message = format!(
                "pCPU {} is over-subscribed: the budgets of its vCPUs add up to {} % ({}), more than 100 %",
                load.cpu,
                tenths_text(load.utilisation.tenths_of_percent()),
                shares.join(", ")
            );
            let last = load.budgeted.last().copied().unwrap_or_default();
            self.push(partition_path(last), "budget", message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use alloc::vec;

    #[test]
    fn malformed_budgets() {
        let mut s = system();
        s.partitions[0].budget = budget(2_000, 10_000);
        assert_eq!(validate(&s), vec![]);
        s.partitions[0].budget = budget(0, 10_000);
        expect_one(&s, "partition[0].budget", "time", "partition \"rtos\": the budget time must be longer than 0 us");
        s.partitions[0].budget = budget(2_000, 0);
        expect_one(&s, "partition[0].budget", "period", "the budget period must be longer than 0 us");
        s.partitions[0].budget = budget(10_001, 10_000);
        expect_one(
            &s,
            "partition[0].budget",
            "time",
            "partition \"rtos\": the budget time (10001 us) is longer than its period (10000 us)",
        );
        s.partitions[0].budget = budget(10_000, 10_000);
        assert_eq!(validate(&s), vec![], "the whole pCPU is a budget too");
    }

    #[test]
    fn budget_of_a_partition_that_is_only_cyclic() {
        let mut s = planned();
        s.partitions[2].budget = budget(1_000, 10_000);
        expect_one(
            &s,
            "partition[2]",
            "budget",
            "partition \"control\" has a budget, but all its vCPUs are on cyclic pCPUs (2), where the plan's slots",
        );
        // rtos's pCPU 1 is not cyclic, so a budget applies there.
        s.partitions[2].budget = None;
        s.partitions[0].budget = budget(1_000, 10_000);
        assert_eq!(validate(&s), vec![]);
        s.partitions[1].vcpus = vec![2, 1];
        s.plans[0].cores[1].slots.clear();
        s.plans[1].cores[0].slots.clear();
        s.partitions[1].budget = budget(1_000, 10_000);
        assert_eq!(validate(&s), vec![], "one vCPU on a fixed-priority pCPU is enough");
    }

    #[test]
    fn over_subscribed_fixed_priority_pcpu() {
        let mut s = system();
        s.partitions[1].vcpus = vec![1, 2];
        s.partitions.push(partition("control", vec![1], 0x4600_0000));
        s.partitions[0].budget = budget(1_000, 3_000);
        s.partitions[1].budget = budget(2_000, 6_000);
        s.partitions[2].budget = budget(10, 30);
        assert_eq!(validate(&s), vec![], "three thirds fill pCPU 1 exactly");
        s.partitions[2].budget = budget(11, 30);
        expect_one(
            &s,
            "partition[2]",
            "budget",
            "pCPU 1 is over-subscribed: the budgets of its vCPUs add up to 103.4 % \
             (rtos 33.3 %, gpos 33.3 %, control 36.7 %), more than 100 %",
        );
        // Without a budget, control takes no share: it gets what is left.
        s.partitions[2].budget = None;
        assert_eq!(validate(&s), vec![]);
    }

    #[test]
    fn budgets_on_cyclic_pcpus_take_no_share() {
        let mut s = planned();
        // gpos: vCPU 0 on cyclic pCPU 2, vCPU 1 on fixed-priority pCPU 1 with rtos.
        s.partitions[1].vcpus = vec![2, 1];
        s.plans[0].cores[1].slots.clear();
        s.plans[1].cores[0].slots.clear();
        s.partitions[0].budget = budget(6_000, 10_000);
        s.partitions[1].budget = budget(4_000, 10_000);
        assert_eq!(validate(&s), vec![]);
        s.partitions[1].budget = budget(4_001, 10_000);
        expect_one(&s, "partition[1]", "budget", "pCPU 1 is over-subscribed");
    }
}
