//! Pending virtual interrupts of one vCPU that wait for a list register.

use super::Virq;

/// Enough for every private INTID plus the SPIs one partition may own.
pub const CAPACITY: usize = 96;

/// At most one entry per INTID; taking the highest priority is a scan of at
/// most [`CAPACITY`] entries, so every path through it is bounded.
#[derive(Clone, Debug, Default)]
pub struct Queue {
    entries: heapless::Vec<Virq, CAPACITY>,
}

/// The queue was full: the interrupt was dropped (a health-monitor event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow(pub u32);

impl Queue {
    pub const fn new() -> Self {
        Self { entries: heapless::Vec::new() }
    }

    /// Makes `virq` pending. An INTID already waiting keeps one entry, with
    /// the newer priority.
    pub fn push(&mut self, virq: Virq) -> Result<(), Overflow> {
        if let Some(entry) = self.entries.iter_mut().find(|e| e.intid == virq.intid) {
            *entry = virq;
            return Ok(());
        }
        self.entries.push(virq).map_err(|v| Overflow(v.intid))
    }

    /// The most urgent entry: lowest priority value, then lowest INTID.
    pub fn peek(&self) -> Option<Virq> {
        self.entries.iter().copied().min_by_key(|v| (v.priority, v.intid))
    }

    /// The most urgent entry among those `eligible` accepts.
    pub fn most_urgent(&self, eligible: impl Fn(&Virq) -> bool) -> Option<Virq> {
        self.entries.iter().filter(|v| eligible(v)).copied().min_by_key(|v| (v.priority, v.intid))
    }

    pub fn remove(&mut self, intid: u32) -> Option<Virq> {
        let index = self.entries.iter().position(|e| e.intid == intid)?;
        Some(self.entries.swap_remove(index))
    }

    /// Keeps only the entries `keep` accepts.
    pub fn retain(&mut self, keep: impl FnMut(&Virq) -> bool) {
        self.entries.retain(keep);
    }

    pub fn contains(&self, intid: u32) -> bool {
        self.entries.iter().any(|e| e.intid == intid)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
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
    fn retain_drops_what_it_rejects() {
        let mut q = Queue::new();
        q.push(virq(27, 0x80)).unwrap();
        q.push(Virq { intid: 30, priority: 0x80, hw: true }).unwrap();
        q.push(virq(40, 0x80)).unwrap();
        q.retain(|v| !v.hw);
        assert!(q.contains(27) && !q.contains(30) && q.contains(40));
    }
}
