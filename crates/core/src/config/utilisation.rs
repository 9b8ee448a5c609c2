//! How much of a fixed-priority pCPU the budgets of its vCPUs claim.
//!
//! A pCPU is over-subscribed when the sum of `time / period` over its
//! budgeted vCPUs exceeds 1. The rule must be exact: rounding the terms would
//! refuse a pCPU that three budgets of a third each fill exactly, or accept
//! one a hair over. The common denominator of up to sixteen 64-bit periods
//! does not fit in any machine integer, so the sum is kept as a fraction of
//! [`Natural`]s.

use crate::config::model::{Budget, System};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Ordering;

/// A non-negative integer of any size: little-endian 64-bit limbs, with no
/// zero limb at the top, so that equal values have equal limbs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Natural(Vec<u64>);

impl Natural {
    pub(crate) fn from_u128(value: u128) -> Self {
        Self::trimmed(vec![value as u64, (value >> 64) as u64])
    }

    fn trimmed(mut limbs: Vec<u64>) -> Self {
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
        Natural(limbs)
    }

    pub(crate) fn times(&self, factor: u64) -> Self {
        let mut limbs = Vec::with_capacity(self.0.len() + 1);
        let mut carry = 0u128;
        for &limb in &self.0 {
            // At most (2^64 - 1)^2 + 2^64 - 1, which is below 2^128.
            let product = u128::from(limb) * u128::from(factor) + carry;
            limbs.push(product as u64);
            carry = product >> 64;
        }
        limbs.push(carry as u64);
        Self::trimmed(limbs)
    }

    pub(crate) fn plus(&self, other: &Self) -> Self {
        let len = self.0.len().max(other.0.len());
        let mut limbs = Vec::with_capacity(len + 1);
        let mut carry = 0u64;
        for i in 0..len {
            let a = self.0.get(i).copied().unwrap_or(0);
            let b = other.0.get(i).copied().unwrap_or(0);
            let sum = u128::from(a) + u128::from(b) + u128::from(carry);
            limbs.push(sum as u64);
            carry = (sum >> 64) as u64;
        }
        limbs.push(carry);
        Self::trimmed(limbs)
    }
}

impl Ord for Natural {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.len().cmp(&other.0.len()).then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

impl PartialOrd for Natural {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A sum of `time / period` shares, exactly.
#[derive(Clone, Debug)]
pub struct Utilisation {
    numerator: Natural,
    denominator: Natural,
}

impl Utilisation {
    /// Budgets with a zero period have no share to add; validation reports them.
    pub fn of<'b>(budgets: impl IntoIterator<Item = &'b Budget>) -> Self {
        let mut sum = Utilisation { numerator: Natural::from_u128(0), denominator: Natural::from_u128(1) };
        for budget in budgets.into_iter().filter(|budget| budget.period_us != 0) {
            // n / d + t / p = (n p + t d) / (d p); no reduction, as only comparisons follow.
            sum.numerator = sum.numerator.times(budget.period_us).plus(&sum.denominator.times(budget.time_us));
            sum.denominator = sum.denominator.times(budget.period_us);
        }
        sum
    }

    /// More than the whole pCPU.
    pub fn exceeds_one(&self) -> bool {
        self.numerator > self.denominator
    }

    /// In tenths of a percent, rounded up so that a pCPU over 100 % never
    /// reads as 100.0 %; saturates at `u64::MAX`.
    pub fn tenths_of_percent(&self) -> u64 {
        // The smallest k with k * d >= n * 1000, by bisection: only products
        // and comparisons of naturals are needed, no division.
        let target = self.numerator.times(1000);
        let (mut low, mut high) = (0u64, u64::MAX);
        while low < high {
            let middle = low + (high - low) / 2;
            if self.denominator.times(middle) >= target {
                high = middle;
            } else {
                low = middle + 1;
            }
        }
        low
    }
}

/// One budget's share of its pCPU in tenths of a percent, rounded to the
/// nearest; `u64::MAX` for a zero period.
pub fn share_tenths_of_percent(budget: &Budget) -> u64 {
    let (time, period) = (u128::from(budget.time_us), u128::from(budget.period_us));
    if period == 0 {
        return u64::MAX;
    }
    u64::try_from((time * 2000 + period) / (2 * period)).unwrap_or(u64::MAX)
}

/// `tenths` as `12.5`.
pub fn tenths_text(tenths: u64) -> alloc::string::String {
    alloc::format!("{}.{}", tenths / 10, tenths % 10)
}

/// A budget the utilisation rule can count: the budget rules report the rest.
pub fn well_formed(budget: &Budget) -> bool {
    budget.time_us != 0 && budget.time_us <= budget.period_us
}

/// Every pCPU that a plan runs cyclically. Validation makes every plan list
/// the same ones; the union keeps a wrong table from hiding a pCPU.
pub fn cyclic_cpus(system: &System) -> BTreeSet<u32> {
    system.plans.iter().flat_map(|plan| plan.cores.iter().map(|core| core.cpu)).collect()
}

/// One fixed-priority pCPU that hosts at least one budgeted vCPU.
#[derive(Clone, Debug)]
pub struct CoreLoad {
    pub cpu: u32,
    /// Indices into [`System::partitions`] with a vCPU here and a budget,
    /// in partition order.
    pub budgeted: Vec<usize>,
    /// The same for partitions without a budget: they run only in time the
    /// budgeted vCPUs leave, as far as this check knows.
    pub unbudgeted: Vec<usize>,
    pub utilisation: Utilisation,
}

/// The fixed-priority pCPUs (existing, and cyclic in no plan) that host a
/// vCPU with a well-formed budget, in pCPU order.
pub fn fixed_priority_loads(system: &System) -> Vec<CoreLoad> {
    let cyclic = cyclic_cpus(system);
    let mut cores: BTreeMap<u32, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (p, partition) in system.partitions.iter().enumerate() {
        // A partition has at most one vCPU per pCPU; a table that breaks
        // that rule is reported elsewhere and must not count twice here.
        let pcpus: BTreeSet<u32> = partition.vcpus.iter().copied().collect();
        for pcpu in pcpus.into_iter().filter(|pcpu| *pcpu < system.platform.cpus && !cyclic.contains(pcpu)) {
            let (budgeted, unbudgeted) = cores.entry(pcpu).or_default();
            match &partition.budget {
                Some(budget) if well_formed(budget) => budgeted.push(p),
                Some(_) => {}
                None => unbudgeted.push(p),
            }
        }
    }
    let loads = cores.into_iter().filter(|(_, (budgeted, _))| !budgeted.is_empty());
    loads
        .map(|(cpu, (budgeted, unbudgeted))| {
            let budgets = budgeted.iter().filter_map(|&p| system.partitions[p].budget.as_ref());
            CoreLoad { cpu, utilisation: Utilisation::of(budgets), budgeted, unbudgeted }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn budget(time_us: u64, period_us: u64) -> Budget {
        Budget { time_us, period_us }
    }

    fn utilisation(budgets: &[Budget]) -> Utilisation {
        Utilisation::of(budgets)
    }

    #[test]
    fn three_thirds_fill_a_pcpu_exactly() {
        let thirds = [budget(1_000, 3_000), budget(2_000, 6_000), budget(10, 30)];
        let u = utilisation(&thirds);
        assert!(!u.exceeds_one());
        assert_eq!(u.tenths_of_percent(), 1000);
        assert_eq!(share_tenths_of_percent(&thirds[0]), 333);
        let u = utilisation(&[budget(1_000, 3_000), budget(2_000, 6_000), budget(11, 30)]);
        assert!(u.exceeds_one());
        assert_eq!(u.tenths_of_percent(), 1034, "103.33 % rounds up");
    }

    #[test]
    fn a_hair_over_reads_over() {
        // 1/2 + 1/2 + 1/(2^64 - 1): far below any rounding step.
        let u = utilisation(&[budget(1, 2), budget(1, 2), budget(1, u64::MAX)]);
        assert!(u.exceeds_one());
        assert_eq!(u.tenths_of_percent(), 1001);
    }

    #[test]
    fn coprime_periods_beyond_u128() {
        // Three periods near 2^63 with no common factor: their product
        // needs about 190 bits.
        let primes = [9_223_372_036_854_775_783u64, 9_223_372_036_854_775_643, 9_223_372_036_854_775_549];
        let shares: Vec<Budget> = primes.iter().map(|&p| budget(p / 3, p)).collect();
        let u = utilisation(&shares);
        assert!(!u.exceeds_one(), "each share is a little under a third");
        assert_eq!(u.tenths_of_percent(), 1000);
        let over: Vec<Budget> = primes.iter().map(|&p| budget(p / 3 + 1, p)).collect();
        assert!(utilisation(&over).exceeds_one());
    }

    #[test]
    fn nothing_is_zero_and_zero_periods_are_skipped() {
        assert_eq!(utilisation(&[]).tenths_of_percent(), 0);
        assert!(!utilisation(&[budget(5, 0)]).exceeds_one());
        assert_eq!(share_tenths_of_percent(&budget(5, 0)), u64::MAX);
        assert_eq!(utilisation(&[budget(u64::MAX, 1)]).tenths_of_percent(), u64::MAX, "saturates");
    }

    #[test]
    fn naturals() {
        let big = Natural::from_u128(u128::MAX);
        assert_eq!(big.plus(&Natural::from_u128(1)), Natural(vec![0, 0, 1]));
        assert_eq!(big.times(0), Natural::from_u128(0));
        assert_eq!(Natural::from_u128(0), Natural(vec![]));
        assert!(big.times(2) > big && big.times(2) == big.plus(&big));
        assert!(Natural(vec![5, 1]) > Natural(vec![7]));
        assert!(Natural(vec![5, 1]) < Natural(vec![4, 2]));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

        /// Small enough for a u128 common denominator: the exact answer by
        /// plain arithmetic must agree.
        #[test]
        fn agrees_with_u128_arithmetic(shares in proptest::collection::vec((0u64..1_000, 1u64..1_000), 0..6)) {
            let budgets: Vec<Budget> = shares.iter().map(|&(t, p)| budget(t, p)).collect();
            let d: u128 = shares.iter().map(|&(_, p)| u128::from(p)).product();
            let n: u128 = shares.iter().map(|&(t, p)| u128::from(t) * (d / u128::from(p))).sum();
            let u = utilisation(&budgets);
            prop_assert_eq!(u.exceeds_one(), n > d);
            prop_assert_eq!(u128::from(u.tenths_of_percent()), (n * 1000).div_ceil(d));
        }
    }
}
