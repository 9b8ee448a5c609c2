//! Per-pCPU round robin among the vCPUs pinned to it.
//!
//! Real-time policies come later; this one only has to share a core fairly
//! and in bounded time: picking the next vCPU looks at each slot once.

/// Picks the next runnable slot after `current`, wrapping around, among
/// `count` slots; `runnable(i)` says whether slot `i` may run. Returns
/// `current` again when it is the only runnable one, `None` when none is.
pub fn next_round_robin(current: Option<usize>, count: usize, runnable: impl Fn(usize) -> bool) -> Option<usize> {
    let start = current.map_or(0, |c| c + 1);
    (0..count).map(|step| (start + step) % count).find(|&slot| runnable(slot))
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
}
