//! What partition switches cost a partition under a cyclic plan, after
//! XtratuM's overhead model.
//!
//! Every slot begins with a partition context switch (PCS) that the slot's
//! owner pays for but does not run in. A partition with `n` slots per major
//! frame, of total duration `sum(SD)`, therefore loses
//! `PL = n * PCS / sum(SD)` of the time the plan gives it: many slots or
//! short ones make the loss grow. PCS is measured per board and given in
//! nanoseconds, slot durations are in microseconds.

use crate::config::model::Plan;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// One partition's slots in one major frame of a plan, over all its cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchLoss {
    /// Index into [`crate::config::model::System::partitions`].
    pub partition: usize,
    /// `n`: slots per major frame.
    pub slots: u64,
    /// `sum(SD)`: their total duration. u128, so that no slot table can
    /// overflow it.
    pub slot_us: u128,
}

impl SwitchLoss {
    /// `PL` in thousandths of a percent, rounded to the nearest; slots of no
    /// length lose everything, which saturates.
    pub fn thousandths_of_percent(&self, pcs_ns: u64) -> u64 {
        // PL * 100 % * 1000 = n * PCS_ns * 100_000 / (sum(SD)_us * 1000)
        let lost = u128::from(self.slots).saturating_mul(u128::from(pcs_ns)).saturating_mul(100);
        if self.slot_us == 0 {
            return if lost == 0 { 0 } else { u64::MAX };
        }
        let rounded = lost.saturating_mul(2).saturating_add(self.slot_us) / self.slot_us.saturating_mul(2);
        u64::try_from(rounded).unwrap_or(u64::MAX)
    }

    /// `PL` above `limit_bp` basis points, decided without rounding.
    pub fn exceeds(&self, pcs_ns: u64, limit_bp: u32) -> bool {
        // n * PCS_ns / (sum(SD)_us * 1000) > bp / 10_000
        // <=> n * PCS_ns * 10 > bp * sum(SD)_us. Saturation needs more than
        // 2^32 slots of the longest duration, far beyond any slot table.
        let lost = u128::from(self.slots).saturating_mul(u128::from(pcs_ns)).saturating_mul(10);
        lost > u128::from(limit_bp).saturating_mul(self.slot_us)
    }
}

/// Every partition that has a slot in `plan`, in partition order.
pub fn switch_losses(plan: &Plan) -> Vec<SwitchLoss> {
    let mut by_partition: BTreeMap<usize, SwitchLoss> = BTreeMap::new();
    for slot in plan.cores.iter().flat_map(|core| &core.slots) {
        let loss = by_partition.entry(slot.partition).or_insert(SwitchLoss {
            partition: slot.partition,
            slots: 0,
            slot_us: 0,
        });
        loss.slots += 1;
        loss.slot_us += u128::from(slot.duration_us);
    }
    by_partition.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::{CyclicCore, Slot};
    use alloc::string::ToString;
    use alloc::vec;

    fn slot(partition: usize, start_us: u64, duration_us: u64) -> Slot {
        Slot { partition, vcpu: 0, start_us, duration_us }
    }

    fn plan() -> Plan {
        Plan {
            name: "normal".to_string(),
            cores: vec![
                CyclicCore {
                    cpu: 2,
                    major_frame_us: 10_000,
                    slots: vec![slot(1, 0, 1_000), slot(0, 1_000, 4_000), slot(1, 5_000, 1_000)],
                },
                CyclicCore { cpu: 3, major_frame_us: 10_000, slots: vec![slot(1, 0, 2_000)] },
            ],
        }
    }

    #[test]
    fn slots_are_counted_over_all_cores() {
        assert_eq!(
            switch_losses(&plan()),
            [
                SwitchLoss { partition: 0, slots: 1, slot_us: 4_000 },
                SwitchLoss { partition: 1, slots: 3, slot_us: 4_000 },
            ]
        );
        assert_eq!(switch_losses(&Plan { name: "idle".to_string(), cores: vec![] }), []);
    }

    #[test]
    fn loss_follows_the_model() {
        let [one, three] = switch_losses(&plan())[..] else { panic!("two partitions") };
        // 1 x 2 us / 4 ms = 0.05 %; 3 x 2 us / 4 ms = 0.15 %.
        assert_eq!(one.thousandths_of_percent(2_000), 50);
        assert_eq!(three.thousandths_of_percent(2_000), 150);
        // 3 x 1 ns / 4 ms = 0.000075 %: rounds to 0.000 %, yet still a loss.
        assert_eq!(three.thousandths_of_percent(1), 0);
        assert!(three.exceeds(1, 0));
        assert_eq!(SwitchLoss { partition: 0, slots: 1, slot_us: 3 }.thousandths_of_percent(1), 33, "0.0333 %");
        assert_eq!(SwitchLoss { partition: 0, slots: 2, slot_us: 3 }.thousandths_of_percent(1), 67, "0.0667 %");
    }

    #[test]
    fn the_limit_is_exact() {
        // 1 x 2 us / 1 ms = 0.2 % = 20 bp exactly: at the limit, not over.
        let loss = SwitchLoss { partition: 0, slots: 1, slot_us: 1_000 };
        assert!(!loss.exceeds(2_000, 20));
        assert!(loss.exceeds(2_001, 20));
        assert!(loss.exceeds(2_000, 19));
        assert!(!loss.exceeds(0, 0), "no cost, no loss");
    }

    #[test]
    fn degenerate_tables_never_panic() {
        let empty = SwitchLoss { partition: 0, slots: 1, slot_us: 0 };
        assert_eq!(empty.thousandths_of_percent(2_000), u64::MAX);
        assert_eq!(empty.thousandths_of_percent(0), 0);
        assert!(empty.exceeds(1, u32::MAX));
        let huge = SwitchLoss { partition: 0, slots: u64::MAX, slot_us: u128::MAX };
        let _ = huge.thousandths_of_percent(u64::MAX);
        assert!(!huge.exceeds(u64::MAX, 1));
    }
}
