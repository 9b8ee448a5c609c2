//! Per-pCPU choice among the vCPUs pinned to it.
//!
//! The most critical runnable vCPU runs; vCPUs of equal criticality share
//! the pCPU round robin. Real-time policies come later; this one only has
//! to keep a critical vCPU from ever waiting for a less critical one, in
//! bounded time: a choice looks at each slot once.

/// Picks among `count` slots: `rank(i)` is `None` for a slot that cannot
/// run, else its criticality rank (higher runs first). Among the highest
/// rank, the first runnable slot after `current` wins, wrapping around, so
/// `current` is chosen again only when no peer of its rank is runnable.
pub fn pick(current: Option<usize>, count: usize, rank: impl Fn(usize) -> Option<u8>) -> Option<usize> {
    let start = current.map_or(0, |c| c + 1);
    let order = (0..count).map(|step| (start + step) % count);
    let best = order.clone().filter_map(&rank).max()?;
    order.into_iter().find(|&slot| rank(slot) == Some(best))
}

/// Round robin among slots that can run, all of one rank.
pub fn next_round_robin(current: Option<usize>, count: usize, runnable: impl Fn(usize) -> bool) -> Option<usize> {
    pick(current, count, |i| runnable(i).then_some(0))
}

/// True when some slot other than `slot` could run with a rank of at least
/// `at_least`: the pCPU must then be shared (a tick) or given away.
pub fn contender(slot: usize, count: usize, at_least: u8, rank: impl Fn(usize) -> Option<u8>) -> bool {
    (0..count).any(|i| i != slot && rank(i).is_some_and(|r| r >= at_least))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_among_runnable_slots() {
        let runnable = |i: usize| i != 1;
        assert_eq!(next_round_robin(None, 3, runnable), Some(0));
        assert_eq!(next_round_robin(Some(0), 3, runnable), Some(2));
        assert_eq!(next_round_robin(Some(2), 3, runnable), Some(0));
    }

    #[test]
    fn keeps_the_only_runnable_slot_and_reports_idle() {
        assert_eq!(next_round_robin(Some(1), 3, |i| i == 1), Some(1));
        assert_eq!(next_round_robin(Some(1), 3, |_| false), None);
        assert_eq!(next_round_robin(None, 0, |_| true), None);
    }

    #[test]
    fn the_most_critical_runnable_slot_wins() {
        let ranks = [Some(0), Some(2), None, Some(2)];
        let rank = |i: usize| ranks[i];
        assert_eq!(pick(Some(1), 4, rank), Some(3), "round robin among rank 2");
        assert_eq!(pick(Some(3), 4, rank), Some(1));
        assert_eq!(pick(Some(0), 4, |i| [Some(0), None, None, Some(0)][i]), Some(3));
        assert_eq!(pick(None, 4, |i| [Some(1), None, None, None][i]), Some(0));
    }

    #[test]
    fn contenders_are_peers_or_more_critical() {
        let ranks = [Some(1), Some(0), Some(1)];
        assert!(contender(0, 3, 1, |i| ranks[i]));
        assert!(!contender(0, 2, 1, |i| ranks[i]), "only a less critical one");
        assert!(!contender(0, 1, 0, |i| ranks[i]));
    }
}
