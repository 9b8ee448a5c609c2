//! The ready queue of a fixed-priority pCPU: 256 priorities, a FIFO of vCPU
//! slots at each, and a two-level bitmap of the non-empty FIFOs.
//!
//! Priority 0 is the lowest and 255 the highest, as in seL4: the most
//! critical vCPU gets the largest number, and the scheduler runs the head of
//! the highest non-empty FIFO.
//!
//! The scheduler asks "who runs next?" on every tick, interrupt and block,
//! so the answer must cost the same whatever the priority found: a scan
//! from 255 down would make a low-priority partition's switch slower than a
//! high one's, and put the number of priority levels into every worst case.
//! Here the lookup is two count-leading-zeros, one per bitmap level, and
//! every operation touches a fixed number of words.
//!
//! [`LinearReadyQueue`] is the naive scan, kept as the tests' oracle and the
//! benchmark's baseline.

use heapless::Vec;

/// How many priority levels there are; a [`Priority`] covers all of them.
pub const PRIORITIES: usize = 256;

/// 0 is the lowest priority, 255 the highest.
pub type Priority = u8;

/// One bitmap word covers this many priorities.
const WORD_BITS: usize = u64::BITS as usize;
const WORDS: usize = PRIORITIES / WORD_BITS;

/// Why an enqueue was refused; the queue is left as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// The slot is not below the queue's `SLOTS`.
    NoSuchSlot,
    /// The slot is queued already. A vCPU made ready twice means the caller
    /// lost track of its state, so it hears about it instead of the queue
    /// silently moving the vCPU (and changing who runs next).
    AlreadyQueued,
}

impl core::fmt::Display for QueueError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            QueueError::NoSuchSlot => "no such slot in the ready queue",
            QueueError::AlreadyQueued => "the slot is already in the ready queue",
        })
    }
}

impl core::error::Error for QueueError {}

/// Where a queued slot sits: its neighbours in its FIFO and its priority.
/// Both directions are kept so a vCPU that blocks leaves in constant time
/// from anywhere in its FIFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Link {
    prev: Option<u16>,
    next: Option<u16>,
    /// `None` while the slot is not queued.
    priority: Option<Priority>,
}

impl Link {
    const IDLE: Link = Link { prev: None, next: None, priority: None };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fifo {
    head: Option<u16>,
    tail: Option<u16>,
}

impl Fifo {
    const EMPTY: Fifo = Fifo { head: None, tail: None };
}

/// Ready vCPU slots `0..SLOTS` by priority, each slot at most once.
///
/// Priority `p` is bit `p % 64` of `words[p / 64]`, and bit `w` of `summary`
/// says `words[w]` is non-zero. Higher priorities sit in more significant
/// bits, so the highest ready priority is where count-leading-zeros points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadyQueue<const SLOTS: usize> {
    summary: u64,
    words: [u64; WORDS],
    fifos: [Fifo; PRIORITIES],
    links: [Link; SLOTS],
}

impl<const SLOTS: usize> Default for ReadyQueue<SLOTS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const SLOTS: usize> ReadyQueue<SLOTS> {
    pub const fn new() -> Self {
        // Links hold slots as `u16`, which keeps the per-priority heads
        // small enough to stay in a few cache lines.
        const { assert!(SLOTS <= 1 << 16, "slots are stored as u16") };
        Self { summary: 0, words: [0; WORDS], fifos: [Fifo::EMPTY; PRIORITIES], links: [Link::IDLE; SLOTS] }
    }

    /// Queues `slot` behind the others of its priority: round robin.
    #[inline]
    pub fn enqueue(&mut self, slot: usize, priority: Priority) -> Result<(), QueueError> {
        let slot = self.vacant(slot)?;
        let fifo = &mut self.fifos[usize::from(priority)];
        self.links[usize::from(slot)] = Link { prev: fifo.tail, next: None, priority: Some(priority) };
        match fifo.tail {
            Some(tail) => self.links[usize::from(tail)].next = Some(slot),
            None => fifo.head = Some(slot),
        }
        fifo.tail = Some(slot);
        self.mark(priority);
        Ok(())
    }

    /// Queues `slot` ahead of the others of its priority, so a preempted
    /// vCPU resumes before its peers and round robin stays fair.
    #[inline]
    pub fn enqueue_front(&mut self, slot: usize, priority: Priority) -> Result<(), QueueError> {
        let slot = self.vacant(slot)?;
        let fifo = &mut self.fifos[usize::from(priority)];
        self.links[usize::from(slot)] = Link { prev: None, next: fifo.head, priority: Some(priority) };
        match fifo.head {
            Some(head) => self.links[usize::from(head)].prev = Some(slot),
            None => fifo.tail = Some(slot),
        }
        fifo.head = Some(slot);
        self.mark(priority);
        Ok(())
    }

    /// Takes `slot` out wherever it is; the priority it had, or `None` if it
    /// was not queued.
    #[inline]
    pub fn remove(&mut self, slot: usize) -> Option<Priority> {
        let priority = self.priority_of(slot)?;
        self.unlink(slot, priority);
        Some(priority)
    }

    /// The slot that should run: the head of the highest non-empty FIFO.
    #[inline]
    pub fn highest(&self) -> Option<(Priority, usize)> {
        let priority = self.top()?;
        let head = self.fifos[usize::from(priority)].head?;
        Some((priority, usize::from(head)))
    }

    /// [`Self::highest`], taken out of the queue.
    #[inline]
    pub fn pop_highest(&mut self) -> Option<(Priority, usize)> {
        let (priority, slot) = self.highest()?;
        self.unlink(slot, priority);
        Some((priority, slot))
    }

    pub fn is_empty(&self) -> bool {
        self.summary == 0
    }

    #[inline]
    pub fn contains(&self, slot: usize) -> bool {
        self.priority_of(slot).is_some()
    }

    /// The priority `slot` is queued at, if it is.
    #[inline]
    pub fn priority_of(&self, slot: usize) -> Option<Priority> {
        self.links.get(slot)?.priority
    }

    #[inline]
    fn vacant(&self, slot: usize) -> Result<u16, QueueError> {
        let link = self.links.get(slot).ok_or(QueueError::NoSuchSlot)?;
        if link.priority.is_some() {
            return Err(QueueError::AlreadyQueued);
        }
        // `new` bounds SLOTS, so every valid slot fits.
        u16::try_from(slot).map_err(|_| QueueError::NoSuchSlot)
    }

    #[inline]
    fn unlink(&mut self, slot: usize, priority: Priority) {
        let Link { prev, next, .. } = self.links[slot];
        let fifo = &mut self.fifos[usize::from(priority)];
        match prev {
            Some(prev) => self.links[usize::from(prev)].next = next,
            None => fifo.head = next,
        }
        match next {
            Some(next) => self.links[usize::from(next)].prev = prev,
            None => fifo.tail = prev,
        }
        self.links[slot] = Link::IDLE;
        if fifo.head.is_none() {
            self.unmark(priority);
        }
    }

    #[inline]
    fn top(&self) -> Option<Priority> {
        let word = highest_bit(self.summary)?;
        let bit = highest_bit(self.words[word])?;
        // At most 3 * 64 + 63.
        Priority::try_from(word * WORD_BITS + bit).ok()
    }

    #[inline]
    fn mark(&mut self, priority: Priority) {
        let (word, bit) = position(priority);
        self.words[word] |= bit;
        self.summary |= 1 << word;
    }

    #[inline]
    fn unmark(&mut self, priority: Priority) {
        let (word, bit) = position(priority);
        self.words[word] &= !bit;
        if self.words[word] == 0 {
            self.summary &= !(1 << word);
        }
    }
}

/// The bitmap word of `priority` and its bit in that word.
fn position(priority: Priority) -> (usize, u64) {
    let priority = usize::from(priority);
    (priority / WORD_BITS, 1 << (priority % WORD_BITS))
}

/// Index of the most significant set bit. `leading_zeros` is one CLZ on
/// AArch64, which is what makes the lookup constant-time.
fn highest_bit(bits: u64) -> Option<usize> {
    (bits != 0).then(|| (u64::BITS - 1 - bits.leading_zeros()) as usize)
}

/// The same queue done the obvious way: a list per priority, searched from
/// 255 down (seL4's scheduler before its bitmap). Its lookup grows with the
/// distance from 255 to the priority found, which is what the benchmark
/// shows; the tests trust it because there is little in it to get wrong.
#[derive(Clone, Debug)]
pub struct LinearReadyQueue<const SLOTS: usize> {
    lists: [Vec<u16, SLOTS>; PRIORITIES],
    /// Where each slot is queued, so refusing a duplicate does not cost a
    /// search of every list (that would swamp the benchmark's baseline).
    queued_at: [Option<Priority>; SLOTS],
}

impl<const SLOTS: usize> Default for LinearReadyQueue<SLOTS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const SLOTS: usize> LinearReadyQueue<SLOTS> {
    pub const fn new() -> Self {
        const { assert!(SLOTS <= 1 << 16, "slots are stored as u16") };
        Self { lists: [const { Vec::new() }; PRIORITIES], queued_at: [None; SLOTS] }
    }

    pub fn enqueue(&mut self, slot: usize, priority: Priority) -> Result<(), QueueError> {
        let index = self.vacant(slot)?;
        // A list never holds more than all SLOTS slots, each once.
        self.lists[usize::from(priority)].push(index).map_err(|_| QueueError::NoSuchSlot)?;
        self.queued_at[slot] = Some(priority);
        Ok(())
    }

    pub fn enqueue_front(&mut self, slot: usize, priority: Priority) -> Result<(), QueueError> {
        let index = self.vacant(slot)?;
        self.lists[usize::from(priority)].insert(0, index).map_err(|_| QueueError::NoSuchSlot)?;
        self.queued_at[slot] = Some(priority);
        Ok(())
    }

    pub fn remove(&mut self, slot: usize) -> Option<Priority> {
        let priority = self.priority_of(slot)?;
        let list = &mut self.lists[usize::from(priority)];
        let at = list.iter().position(|&queued| usize::from(queued) == slot)?;
        list.remove(at);
        self.queued_at[slot] = None;
        Some(priority)
    }

    pub fn highest(&self) -> Option<(Priority, usize)> {
        let level = (0..PRIORITIES).rev().find(|&p| !self.lists[p].is_empty())?;
        Some((Priority::try_from(level).ok()?, usize::from(self.lists[level][0])))
    }

    pub fn pop_highest(&mut self) -> Option<(Priority, usize)> {
        let (priority, slot) = self.highest()?;
        self.remove(slot)?;
        Some((priority, slot))
    }

    pub fn is_empty(&self) -> bool {
        self.queued_at.iter().all(Option::is_none)
    }

    pub fn contains(&self, slot: usize) -> bool {
        self.priority_of(slot).is_some()
    }

    pub fn priority_of(&self, slot: usize) -> Option<Priority> {
        *self.queued_at.get(slot)?
    }

    fn vacant(&self, slot: usize) -> Result<u16, QueueError> {
        match self.queued_at.get(slot) {
            None => Err(QueueError::NoSuchSlot),
            Some(Some(_)) => Err(QueueError::AlreadyQueued),
            Some(None) => u16::try_from(slot).map_err(|_| QueueError::NoSuchSlot),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Queue = ReadyQueue<8>;

    fn drain<const N: usize>(queue: &mut ReadyQueue<N>) -> std::vec::Vec<(Priority, usize)> {
        core::iter::from_fn(|| queue.pop_highest()).collect()
    }

    fn queue_of(entries: &[(usize, Priority)]) -> Queue {
        let mut queue = Queue::new();
        for &(slot, priority) in entries {
            queue.enqueue(slot, priority).unwrap();
        }
        queue
    }

    #[test]
    fn an_empty_queue_has_nothing_to_run() {
        let mut queue = Queue::new();
        assert!(queue.is_empty());
        assert_eq!(queue.highest(), None);
        assert_eq!(queue.pop_highest(), None);
        assert_eq!(queue.remove(3), None);
        assert!(!queue.contains(3));
        assert_eq!(queue.priority_of(3), None);
    }

    #[test]
    fn equal_priorities_run_in_arrival_order() {
        let mut queue = queue_of(&[(4, 7), (1, 7), (6, 7)]);
        assert_eq!(drain(&mut queue), [(7, 4), (7, 1), (7, 6)]);
        assert!(queue.is_empty());
    }

    #[test]
    fn a_requeued_slot_goes_behind_its_peers() {
        let mut queue = queue_of(&[(0, 9), (1, 9), (2, 9)]);
        let (priority, first) = queue.pop_highest().unwrap();
        queue.enqueue(first, priority).unwrap();
        assert_eq!(drain(&mut queue), [(9, 1), (9, 2), (9, 0)]);
    }

    #[test]
    fn a_preempted_slot_keeps_its_place() {
        let mut queue = queue_of(&[(0, 9), (1, 9)]);
        let (priority, running) = queue.pop_highest().unwrap();
        queue.enqueue(5, 200).unwrap();
        assert_eq!(queue.highest(), Some((200, 5)), "the more urgent slot preempts");
        queue.enqueue_front(running, priority).unwrap();
        assert_eq!(drain(&mut queue), [(200, 5), (9, 0), (9, 1)]);
    }

    #[test]
    fn higher_priorities_run_first() {
        let mut queue = queue_of(&[(0, 3), (1, 250), (2, 64), (3, 63), (4, 0), (5, 255), (6, 128)]);
        assert_eq!(drain(&mut queue), [(255, 5), (250, 1), (128, 6), (64, 2), (63, 3), (3, 0), (0, 4)]);
    }

    #[test]
    fn remove_takes_a_slot_from_the_head_middle_or_tail() {
        for (gone, rest) in [(0, [1, 2]), (1, [0, 2]), (2, [0, 1])] {
            let mut queue = queue_of(&[(0, 40), (1, 40), (2, 40)]);
            assert_eq!(queue.remove(gone), Some(40));
            assert!(!queue.contains(gone));
            assert_eq!(drain(&mut queue), rest.map(|slot| (40, slot)), "after removing {gone}");
        }
    }

    #[test]
    fn remove_leaves_the_fifo_usable_at_both_ends() {
        let mut queue = queue_of(&[(0, 40), (1, 40), (2, 40)]);
        queue.remove(2);
        queue.remove(0);
        queue.enqueue(3, 40).unwrap();
        queue.enqueue_front(4, 40).unwrap();
        assert_eq!(drain(&mut queue), [(40, 4), (40, 1), (40, 3)]);
    }

    #[test]
    fn the_bitmap_forgets_a_priority_once_it_empties() {
        let mut queue = queue_of(&[(0, 70), (1, 70), (2, 200)]);
        assert_eq!((queue.summary, queue.words), (0b1010, [0, 1 << 6, 0, 1 << 8]));
        queue.remove(2);
        assert_eq!((queue.summary, queue.words), (0b0010, [0, 1 << 6, 0, 0]), "word 3 and its summary bit clear");
        queue.remove(0);
        assert_eq!(queue.words[1], 1 << 6, "one slot still ready at 70");
        queue.pop_highest();
        assert_eq!((queue.summary, queue.words), (0, [0; WORDS]));
        assert!(queue.is_empty());
    }

    #[test]
    fn a_word_stays_marked_while_another_of_its_priorities_is_ready() {
        let mut queue = queue_of(&[(0, 64), (1, 127)]);
        queue.remove(1);
        assert_eq!((queue.summary, queue.words[1]), (0b10, 1));
        assert_eq!(queue.highest(), Some((64, 0)));
    }

    #[test]
    fn word_boundaries_map_to_the_right_priority() {
        for priority in [0, 1, 62, 63, 64, 65, 127, 128, 191, 192, 254, 255] {
            let mut queue = queue_of(&[(0, priority)]);
            assert_eq!(queue.highest(), Some((priority, 0)));
            if priority > 0 {
                queue.enqueue(1, priority - 1).unwrap();
                assert_eq!(queue.highest(), Some((priority, 0)), "{} is below {priority}", priority - 1);
            }
            queue.remove(0);
            assert_eq!(queue.highest().map(|h| h.0), priority.checked_sub(1));
        }
    }

    #[test]
    fn a_slot_is_queued_at_most_once() {
        let mut queue = queue_of(&[(2, 10)]);
        assert_eq!(queue.enqueue(2, 10), Err(QueueError::AlreadyQueued));
        assert_eq!(queue.enqueue(2, 90), Err(QueueError::AlreadyQueued));
        assert_eq!(queue.enqueue_front(2, 90), Err(QueueError::AlreadyQueued));
        assert_eq!(queue.priority_of(2), Some(10), "the refused enqueue moved nothing");
        assert_eq!(drain(&mut queue), [(10, 2)]);
    }

    #[test]
    fn slots_beyond_the_queue_are_refused() {
        let mut queue = Queue::new();
        assert_eq!(queue.enqueue(8, 1), Err(QueueError::NoSuchSlot));
        assert_eq!(queue.enqueue_front(usize::MAX, 1), Err(QueueError::NoSuchSlot));
        assert_eq!(queue.remove(8), None);
        assert!(queue.is_empty());
    }

    #[test]
    fn a_removed_slot_can_be_queued_again_elsewhere() {
        let mut queue = queue_of(&[(1, 5)]);
        assert_eq!(queue.remove(1), Some(5));
        queue.enqueue(1, 250).unwrap();
        assert_eq!(queue.priority_of(1), Some(250));
        assert_eq!(drain(&mut queue), [(250, 1)]);
    }

    #[test]
    fn the_linear_oracle_agrees_on_the_basics() {
        let mut linear = LinearReadyQueue::<4>::new();
        linear.enqueue(0, 3).unwrap();
        linear.enqueue(1, 3).unwrap();
        linear.enqueue_front(2, 3).unwrap();
        linear.enqueue(3, 200).unwrap();
        assert_eq!(linear.enqueue(3, 1), Err(QueueError::AlreadyQueued));
        assert_eq!(linear.remove(0), Some(3));
        let order: std::vec::Vec<_> = core::iter::from_fn(|| linear.pop_highest()).collect();
        assert_eq!(order, [(200, 3), (3, 2), (3, 1)]);
        assert!(linear.is_empty());
    }

    const SLOTS: usize = 6;

    #[derive(Clone, Copy, Debug)]
    enum Op {
        Enqueue(usize, Priority),
        EnqueueFront(usize, Priority),
        Remove(usize),
        Pop,
    }

    /// Few slots and a few crowded priorities, so FIFOs hold several
    /// slots; the rest spread over the whole range and its word edges.
    fn priority() -> impl Strategy<Value = Priority> {
        prop_oneof![Just(0), Just(63), Just(64), Just(255), 62u8..=65, any::<Priority>()]
    }

    fn op() -> impl Strategy<Value = Op> {
        // One past the last slot checks that both refuse it alike.
        let slot = 0..=SLOTS;
        prop_oneof![
            3 => (slot.clone(), priority()).prop_map(|(s, p)| Op::Enqueue(s, p)),
            2 => (slot.clone(), priority()).prop_map(|(s, p)| Op::EnqueueFront(s, p)),
            2 => slot.prop_map(Op::Remove),
            2 => Just(Op::Pop),
        ]
    }

    fn apply(queue: &mut ReadyQueue<SLOTS>, linear: &mut LinearReadyQueue<SLOTS>, op: Op) {
        match op {
            Op::Enqueue(s, p) => assert_eq!(queue.enqueue(s, p), linear.enqueue(s, p), "{op:?}"),
            Op::EnqueueFront(s, p) => assert_eq!(queue.enqueue_front(s, p), linear.enqueue_front(s, p), "{op:?}"),
            Op::Remove(s) => assert_eq!(queue.remove(s), linear.remove(s), "{op:?}"),
            Op::Pop => assert_eq!(queue.pop_highest(), linear.pop_highest(), "{op:?}"),
        }
    }

    fn assert_same(queue: &ReadyQueue<SLOTS>, linear: &LinearReadyQueue<SLOTS>) {
        assert_eq!(queue.highest(), linear.highest());
        assert_eq!(queue.is_empty(), linear.is_empty());
        for slot in 0..=SLOTS {
            assert_eq!(queue.priority_of(slot), linear.priority_of(slot), "slot {slot}");
            assert_eq!(queue.contains(slot), linear.contains(slot), "slot {slot}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn the_bitmap_queue_behaves_like_the_linear_scan(ops in proptest::collection::vec(op(), 0..64)) {
            let mut queue = ReadyQueue::<SLOTS>::new();
            let mut linear = LinearReadyQueue::<SLOTS>::new();
            for op in ops {
                apply(&mut queue, &mut linear, op);
                assert_same(&queue, &linear);
            }
            while let Some(popped) = queue.pop_highest() {
                prop_assert_eq!(Some(popped), linear.pop_highest());
            }
            prop_assert!(linear.is_empty());
            prop_assert_eq!((queue.summary, queue.words), (0, [0; WORDS]));
        }
    }
}
