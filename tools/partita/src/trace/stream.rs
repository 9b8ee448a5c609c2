//! A trace copied out while the run goes: a ring holds the last
//! `events_per_cpu` events of its pCPU, which a long run overwrites many
//! times, so `partita soak` stops the machine every so often, copies the
//! rings, and lets it go on (QEMU's virtual clock, the guests' counter,
//! stands still meanwhile, so no guest sees the pause). Each ring's write
//! index tells which events a copy holds: the `i`-th event of a pCPU's list
//! is its `lost + i`-th since boot. Merging the copies by that index gives
//! every event once, and an index no copy held is a lost event, counted.
//!
//! Only the kinds asked for are kept (a soak of an hour has tens of
//! millions of events); every event is counted.

use partita_core::trace::{Event, Kind, Trace};

#[derive(Clone, Debug, Default)]
pub struct Stream {
    kinds: Vec<Kind>,
    /// Per pCPU: the index of the first event not taken yet.
    next: Vec<u64>,
    /// Per pCPU: the events of the kept kinds, oldest first.
    pub kept: Vec<Vec<Event>>,
    /// Per pCPU: events taken, of any kind.
    pub seen: Vec<u64>,
    /// Per pCPU: events that no copy held.
    pub lost: Vec<u64>,
    pub counter_hz: u64,
    /// Copies merged.
    pub copies: u32,
}

impl Stream {
    pub fn keeping(kinds: &[Kind]) -> Self {
        Self { kinds: kinds.to_vec(), ..Self::default() }
    }

    /// Merges one copy of the rings.
    pub fn add(&mut self, trace: &Trace) {
        let cpus = trace.cpus.len();
        for list in [&mut self.next, &mut self.seen, &mut self.lost] {
            list.resize(list.len().max(cpus), 0);
        }
        self.kept.resize_with(self.kept.len().max(cpus), Vec::new);
        self.counter_hz = trace.counter_hz;
        for (cpu, events) in trace.cpus.iter().enumerate() {
            let first = trace.lost.get(cpu).copied().unwrap_or(0);
            if self.next[cpu] < first {
                self.lost[cpu] += first - self.next[cpu];
                self.next[cpu] = first;
            }
            let skip = (self.next[cpu] - first) as usize;
            for event in events.iter().skip(skip) {
                self.seen[cpu] += 1;
                if self.kinds.contains(&event.kind) {
                    self.kept[cpu].push(*event);
                }
            }
            self.next[cpu] = self.next[cpu].max(first + events.len() as u64);
        }
        self.copies += 1;
    }

    /// The kept events as a trace, with the stream's lost counts.
    pub fn trace(&self) -> Trace {
        Trace { counter_hz: self.counter_hz, cpus: self.kept.clone(), lost: self.lost.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(time: u64, kind: Kind) -> Event {
        Event { time, kind, partition: 0, vcpu: 0, arg: 0 }
    }

    /// A copy holding events `from..to` of one pCPU (event n at time n).
    fn copy(from: u64, to: u64) -> Trace {
        let kind = |n: u64| if n.is_multiple_of(2) { Kind::TimedIo } else { Kind::Trap };
        Trace { counter_hz: 100, cpus: vec![(from..to).map(|n| event(n, kind(n))).collect()], lost: vec![from] }
    }

    #[test]
    fn overlapping_copies_give_each_event_once() {
        let mut stream = Stream::keeping(&[Kind::TimedIo]);
        stream.add(&copy(0, 10));
        stream.add(&copy(5, 20));
        stream.add(&copy(20, 20));
        assert_eq!((stream.seen[0], stream.lost[0], stream.copies), (20, 0, 3));
        let times: Vec<u64> = stream.kept[0].iter().map(|e| e.time).collect();
        assert_eq!(times, (0..20).filter(|n: &u64| n.is_multiple_of(2)).collect::<Vec<_>>());
    }

    #[test]
    fn a_gap_between_copies_is_counted_lost() {
        let mut stream = Stream::keeping(&[Kind::TimedIo, Kind::Trap]);
        stream.add(&copy(0, 10));
        stream.add(&copy(14, 30));
        assert_eq!((stream.seen[0], stream.lost[0]), (26, 4));
        assert_eq!(stream.trace().lost, vec![4]);
    }
}
