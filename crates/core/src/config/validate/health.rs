//! The health monitor's settings: the size of its log (a `[hypervisor]`
//! field, since Partita keeps the log) and each partition's watchdog. They
//! sit in different sections but size and time the same monitor.

use super::{bounds, partition_path, Validator};
use crate::config::limits::{HM_LOG_ENTRIES, WATCHDOG_US};
use crate::config::model::Partition;
use crate::health::EventKind;
use alloc::format;

impl Validator<'_> {
    pub(super) fn hm_log(&mut self) {
        let entries = self.system.hypervisor.hm_log_entries;
        if !HM_LOG_ENTRIES.contains(&entries) {
            let message = format!("{entries} health-monitor log entries is out of range {}", bounds(&HM_LOG_ENTRIES));
            self.push("hypervisor".into(), "hm_log_entries", message);
        }
    }

    pub(super) fn watchdog(&mut self, p: usize, partition: &Partition) {
        let Some(period) = partition.health.watchdog_us else { return };
        if !WATCHDOG_US.contains(&period) {
            let message = format!(
                "partition \"{}\": the watchdog period of {period} us is out of range {} us (1 ms to 60 s)",
                partition.name,
                bounds(&WATCHDOG_US)
            );
            self.push(partition_path(p), "watchdog", message);
        }
    }

    /// Each event's action must make sense for it: `inject` needs an
    /// exception to give, which only faults have.
    pub(super) fn health_actions(&mut self, p: usize, partition: &Partition) {
        for ((event, action), kind) in partition.health.actions().into_iter().zip(EventKind::ALL) {
            if !action.applies_to(kind) {
                let message = format!(
                    "partition \"{}\": {event} cannot be \"inject\": only stage2-fault and forbidden have an exception to give the guest",
                    partition.name
                );
                self.push(format!("{}.health", partition_path(p)), event, message);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use crate::config::model::{Action, Health};
    use alloc::vec;

    #[test]
    fn only_faults_may_be_injected() {
        let mut s = system();
        s.partitions[0].health = Health { stage2_fault: Action::Inject, forbidden: Action::Inject, ..Health::DEFAULT };
        assert_eq!(validate(&s), vec![]);
        s.partitions[0].health.budget_overrun = Action::Inject;
        expect_one(&s, "partition[0].health", "budget-overrun", "cannot be \"inject\"");
    }

    #[test]
    fn health_settings() {
        let mut s = system();
        s.partitions[0].health = Health { watchdog: Action::Restart, watchdog_us: Some(100_000), ..Health::DEFAULT };
        assert_eq!(validate(&s), vec![]);
        for period in [999, 60_000_001] {
            s.partitions[0].health.watchdog_us = Some(period);
            expect_one(&s, "partition[0]", "watchdog", "is out of range 1000..=60000000 us (1 ms to 60 s)");
        }
        let mut s = system();
        for entries in [15, 4097] {
            s.hypervisor.hm_log_entries = entries;
            expect_one(&s, "hypervisor", "hm_log_entries", "health-monitor log entries is out of range 16..=4096");
        }
    }
}
