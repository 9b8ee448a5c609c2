//! Budget accounting: how much pCPU time a vCPU used in the current period
//! of its `budget`, so the health monitor hears of an overrun once per
//! period (the `budget-overrun` event). Times are counter ticks.
//!
//! Periods are aligned to the first time the vCPU ran, and a long absence
//! skips whole periods in one step rather than one at a time, so every
//! call is O(1) however long the vCPU was away.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetMeter {
    budget: u64,
    period: u64,
    /// Start of the current period; `None` until the vCPU first runs.
    period_start: Option<u64>,
    /// Time used in the current period before the vCPU last entered.
    used: u64,
    /// When it last entered, while it is on the pCPU.
    entered: Option<u64>,
    /// The overrun of the current period was already reported.
    reported: bool,
}

impl BudgetMeter {
    /// A meter for `budget` ticks every `period` ticks (a zero period is
    /// treated as one tick, so the arithmetic never divides by zero).
    pub const fn new(budget: u64, period: u64) -> Self {
        let period = if period == 0 { 1 } else { period };
        BudgetMeter { budget, period, period_start: None, used: 0, entered: None, reported: false }
    }

    /// Moves to the period that contains `now`, forgetting what was used.
    fn roll(&mut self, now: u64) {
        let start = *self.period_start.get_or_insert(now);
        if now >= start + self.period {
            let periods = (now - start) / self.period;
            self.period_start = Some(start + periods * self.period);
            self.used = 0;
            self.reported = false;
            if self.entered.is_some() {
                // Still running across the boundary: the new period's use
                // starts at the boundary.
                self.entered = self.period_start;
            }
        }
    }

    /// The vCPU enters its pCPU at `now`.
    pub fn enter(&mut self, now: u64) {
        self.roll(now);
        self.entered = Some(now);
    }

    /// The vCPU leaves its pCPU at `now`.
    pub fn leave(&mut self, now: u64) {
        self.roll(now);
        if let Some(entered) = self.entered.take() {
            self.used = self.used.saturating_add(now.saturating_sub(entered));
        }
    }

    /// Adds `ticks` the pCPU spent for this vCPU while it was not running
    /// it (polling for one of its partition's timed outputs).
    pub fn charge(&mut self, ticks: u64, now: u64) {
        self.roll(now);
        self.used = self.used.saturating_add(ticks);
    }

    /// Takes back `ticks` of the running stretch that the pCPU spent for
    /// another partition, so that they are not counted twice.
    pub fn excuse(&mut self, ticks: u64, now: u64) {
        self.roll(now);
        if let Some(entered) = self.entered.as_mut() {
            *entered = entered.saturating_add(ticks).min(now);
        }
    }

    /// Time used in the current period, counting the stretch it is running.
    pub fn used(&mut self, now: u64) -> u64 {
        self.roll(now);
        let running = self.entered.map_or(0, |entered| now.saturating_sub(entered));
        self.used.saturating_add(running)
    }

    /// True once per period, the first time it is asked after the vCPU
    /// used more than its budget.
    pub fn overrun(&mut self, now: u64) -> bool {
        if self.reported || self.used(now) <= self.budget {
            return false;
        }
        self.reported = true;
        true
    }

    /// While running: the earliest counter value at which it can have
    /// overrun (in the next period if this one's was reported), for the
    /// pCPU's timer.
    pub fn deadline(&mut self, now: u64) -> Option<u64> {
        let used = self.used(now);
        let start = self.period_start?;
        self.entered?;
        if self.reported {
            return Some(start.saturating_add(self.period).saturating_add(self.budget).saturating_add(1));
        }
        Some(now.saturating_add(self.budget.saturating_sub(used)).saturating_add(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overrun_is_reported_once_per_period() {
        let mut m = BudgetMeter::new(30, 100);
        m.enter(0);
        assert!(!m.overrun(30), "exactly the budget is no overrun");
        assert_eq!(m.deadline(10), Some(31));
        assert!(m.overrun(31));
        assert!(!m.overrun(50), "once per period");
        assert_eq!(m.deadline(50), Some(131), "the next period's earliest overrun");
        m.leave(60);
        m.enter(100);
        assert_eq!(m.used(100), 0, "a new period");
        assert!(!m.overrun(120));
        assert!(m.overrun(131));
    }

    #[test]
    fn polling_for_another_partition_moves_the_time_to_it() {
        let mut running = BudgetMeter::new(30, 100);
        let mut asker = BudgetMeter::new(30, 100);
        running.enter(0);
        running.excuse(8, 20);
        asker.charge(8, 20);
        assert_eq!(running.used(20), 12);
        assert_eq!(asker.used(20), 8);
        running.excuse(50, 25);
        assert_eq!(running.used(25), 0, "never below nothing");
    }

    #[test]
    fn time_off_the_pcpu_does_not_count() {
        let mut m = BudgetMeter::new(30, 100);
        m.enter(0);
        m.leave(20);
        m.enter(70);
        assert_eq!(m.used(75), 25);
        assert_eq!(m.deadline(75), Some(81));
        assert!(!m.overrun(80));
        assert!(m.overrun(81));
    }

    #[test]
    fn running_across_a_boundary_counts_from_the_boundary() {
        let mut m = BudgetMeter::new(30, 100);
        m.enter(0);
        m.leave(10);
        m.enter(90);
        assert_eq!(m.used(99), 19);
        assert_eq!(m.used(110), 10);
        assert!(!m.overrun(130));
        assert!(m.overrun(131));
    }

    #[test]
    fn a_long_absence_skips_whole_periods() {
        let mut m = BudgetMeter::new(30, 100);
        m.enter(0);
        m.leave(50);
        m.enter(1_000_000_050);
        assert_eq!(m.used(1_000_000_060), 10);
        let mut zero = BudgetMeter::new(0, 0);
        zero.enter(5);
        assert_eq!(zero.used(7), 0, "a zero period acts as one tick");
    }
}
