//! Pending virtual interrupts of one vCPU that wait for a list register.

use super::Virq;

/// Enough for every private INTID plus the SPIs one partition may own.
pub const CAPACITY: usize = 96;
/// INTIDs the membership bitmap covers: SGIs, PPIs and every SPI.
const INTIDS: usize = 1024;

/// At most one entry per INTID, kept in order of urgency with the most
/// urgent last: a refill takes entries from the end, usually the very
/// last, rather than scanning them all for the next one, which under a
/// full queue was most of a maintenance interrupt's time at EL2. Every
/// path through it is bounded by [`CAPACITY`].
#[derive(Clone, Debug)]
pub struct Queue {
    /// Least urgent first: highest priority value, then highest INTID.
    entries: heapless::Vec<Virq, CAPACITY>,
    /// Bit per INTID queued, so that asking whether one is, the common
    /// question as an interrupt is queued, costs no scan.
    present: [u64; INTIDS / 64],
}

impl Default for Queue {
    fn default() -> Self {
        Self::new()
    }
}

/// The queue was full: the interrupt was dropped (a health-monitor event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow(pub u32);

/// The order of urgency: lowest priority value, then lowest INTID, first.
fn urgency(virq: &Virq) -> (u8, u32) {
    (virq.priority, virq.intid)
}

impl Queue {
    pub const fn new() -> Self {
        Self { entries: heapless::Vec::new(), present: [0; INTIDS / 64] }
    }

    /// Whether `intid` may be queued (answers true beyond the bitmap,
    /// where only a scan can tell).
    fn maybe_present(&self, intid: u32) -> bool {
        self.present.get(intid as usize / 64).is_none_or(|word| word & 1 << (intid % 64) != 0)
    }

    fn mark(&mut self, intid: u32, present: bool) {
        if let Some(word) = self.present.get_mut(intid as usize / 64) {
            if present {
                *word |= 1 << (intid % 64);
            } else {
                *word &= !(1 << (intid % 64));
            }
        }
    }

    /// Makes `virq` pending. An INTID already waiting keeps one entry, with
    /// the newer priority.
    pub fn push(&mut self, virq: Virq) -> Result<(), Overflow> {
        if self.maybe_present(virq.intid) {
            self.remove(virq.intid);
        }
        if self.entries.is_full() {
            return Err(Overflow(virq.intid));
        }
        // Among the entries less urgent than it, after the last: a search
        // from the end, where the urgent ones are.
        let at = self.entries.iter().rposition(|e| urgency(e) > urgency(&virq)).map_or(0, |i| i + 1);
        // Cannot fail: not full.
        let _ = self.entries.insert(at, virq);
        self.mark(virq.intid, true);
        Ok(())
    }

    /// The most urgent entry: lowest priority value, then lowest INTID.
    pub fn peek(&self) -> Option<Virq> {
        self.entries.last().copied()
    }

    /// The position of the most urgent entry among those `eligible`
    /// accepts, for [`Queue::get`] and [`Queue::take`]: as many looks as
    /// more urgent entries it passes over.
    pub fn most_urgent(&self, eligible: impl Fn(&Virq) -> bool) -> Option<usize> {
        self.entries.iter().rposition(eligible)
    }

    pub fn get(&self, position: usize) -> Virq {
        self.entries[position]
    }

    /// Takes the entry at `position` out of the queue.
    pub fn take(&mut self, position: usize) -> Virq {
        let virq = self.entries.remove(position);
        self.mark(virq.intid, false);
        virq
    }

    pub fn remove(&mut self, intid: u32) -> Option<Virq> {
        if !self.maybe_present(intid) {
            return None;
        }
        let position = self.entries.iter().rposition(|e| e.intid == intid)?;
        Some(self.take(position))
    }

    /// Keeps only the entries `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&Virq) -> bool) {
        let present = &mut self.present;
        self.entries.retain(|virq| {
            let kept = keep(virq);
            if !kept {
                if let Some(word) = present.get_mut(virq.intid as usize / 64) {
                    *word &= !(1 << (virq.intid % 64));
                }
            }
            kept
        });
    }

    pub fn contains(&self, intid: u32) -> bool {
        self.maybe_present(intid) && self.entries.iter().any(|e| e.intid == intid)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.present = [0; INTIDS / 64];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn virq(intid: u32, priority: u8) -> Virq {
        Virq { intid, priority, hw: false }
    }

    #[test]
    fn highest_priority_first_then_lowest_intid() {
        let mut q = Queue::new();
        q.push(virq(5, 0x80)).unwrap();
        q.push(virq(3, 0x40)).unwrap();
        q.push(virq(1, 0x40)).unwrap();
        assert_eq!(q.peek(), Some(virq(1, 0x40)));
        q.remove(1);
        assert_eq!(q.peek(), Some(virq(3, 0x40)));
        q.remove(3);
        assert_eq!(q.peek(), Some(virq(5, 0x80)));
    }

    #[test]
    fn one_entry_per_intid_and_bounded() {
        let mut q = Queue::new();
        q.push(virq(7, 0x80)).unwrap();
        q.push(virq(7, 0x10)).unwrap();
        assert_eq!(q.len(), 1);
        assert_eq!(q.peek(), Some(virq(7, 0x10)));
        for intid in 100..100 + CAPACITY as u32 - 1 {
            q.push(virq(intid, 0)).unwrap();
        }
        assert_eq!(q.push(virq(999, 0)), Err(Overflow(999)));
        assert!(q.contains(7));
    }

    #[test]
    fn the_most_urgent_eligible_entry_is_found_from_the_end() {
        let mut q = Queue::new();
        for (intid, priority) in [(40, 0x80), (3, 0x10), (27, 0x10), (41, 0x80), (5, 0xf0)] {
            q.push(virq(intid, priority)).unwrap();
        }
        let order: Vec<u32> = (0..q.len()).map(|i| q.get(i).intid).collect();
        assert_eq!(order, [5, 41, 40, 27, 3], "least urgent first");
        let at = q.most_urgent(|v| v.intid != 3).unwrap();
        assert_eq!(q.take(at), virq(27, 0x10));
        assert!(!q.contains(27) && q.contains(3));
        q.push(virq(5, 0x00)).unwrap();
        assert_eq!(q.peek(), Some(virq(5, 0x00)), "a new priority moves it");
        assert_eq!(q.len(), 4);
        q.clear();
        assert!(!q.contains(5) && q.remove(5).is_none());
    }

    #[test]
    fn retain_drops_what_it_rejects() {
        let mut q = Queue::new();
        q.push(virq(27, 0x80)).unwrap();
        q.push(Virq { intid: 30, priority: 0x80, hw: true }).unwrap();
        q.push(virq(40, 0x80)).unwrap();
        q.retain(|v| !v.hw);
        assert!(q.contains(27) && !q.contains(30) && q.contains(40));
    }
}
