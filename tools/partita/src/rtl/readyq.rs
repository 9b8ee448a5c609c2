//! Vectors for `hardware/ready_queue.v`, answered by the core's
//! [`ReadyQueue`]: the edge cases first (an empty queue, every priority,
//! one FIFO holding every slot, refusals, removal from the middle), then
//! seeded random operations over a few crowded priorities.
//!
//! The bus encoding is the one `docs/hardware.md` documents; the constants
//! below are its Rust spelling.

use super::vectors::{Rng, Vectors, OKAY, SLVERR};
use partita_core::scheduler::readyq::{Priority, QueueError, ReadyQueue};

/// Cycle-count tags, in the order of [`TAGS`].
pub mod tag {
    pub const ENQUEUE: u8 = 0;
    pub const ENQUEUE_FRONT: u8 = 1;
    pub const REMOVE: u8 = 2;
    pub const POP_HIGHEST: u8 = 3;
    pub const HIGHEST: u8 = 4;
    pub const STATUS: u8 = 5;
    pub const OTHER: u8 = 6;
}

pub const TAGS: &[&str] = &["enqueue", "enqueue front", "remove", "pop highest", "find highest", "status", "other"];

/// Address bits of the FIFO window, as in the seL4 hardware scheduler.
pub mod addr {
    /// H: the head of the FIFO rather than its tail.
    pub const HEAD: u32 = 1 << 2;
    /// SEL: the priority, bits 10:3.
    pub const PRIORITY_SHIFT: u32 = 3;
    /// P: the priority encoder's answer instead of SEL.
    pub const ENCODER: u32 = 1 << 11;
    /// No side effect: a read only looks, a write does nothing.
    pub const PEEK: u32 = 1 << 12;
    /// The last enqueue's refusal, QueueError's code (0 when accepted).
    pub const STATUS: u32 = 0x2000;
    /// The SLOTS parameter.
    pub const SLOTS: u32 = 0x2004;
    /// A read at REMOVE + 4 * slot removes the slot.
    pub const REMOVE: u32 = 0x4000;
}

/// A read that found no slot.
pub const NONE: u32 = 0x8000_0000;
/// A read of an address that means nothing.
pub const RESERVED: u32 = 0x4000_0000;
/// The remove window holds 4096 slots; one more is kept for the
/// out-of-range case.
pub const MAX_SLOTS: usize = 4095;

/// What STATUS reads after an enqueue.
pub fn status(result: Result<(), QueueError>) -> u32 {
    match result {
        Ok(()) => 0,
        Err(QueueError::NoSuchSlot) => 1,
        Err(QueueError::AlreadyQueued) => 2,
    }
}

/// What a read returns for a slot found at a priority.
pub fn found(found: Option<(Priority, usize)>) -> u32 {
    found.map_or(NONE, |(priority, slot)| u32::from(priority) << 16 | slot as u32)
}

/// Priorities the random phase draws from: a few crowded ones so FIFOs
/// grow long, the bitmap's word edges, and any at all.
const CROWDED: [Priority; 8] = [0, 1, 63, 64, 127, 128, 200, 255];

struct Generator<const SLOTS: usize> {
    queue: ReadyQueue<SLOTS>,
    rng: Rng,
    vectors: Vectors,
}

impl<const SLOTS: usize> Generator<SLOTS> {
    fn enqueue(&mut self, slot: u32, priority: Priority, front: bool) {
        let index = usize::try_from(slot).unwrap_or(usize::MAX);
        let result =
            if front { self.queue.enqueue_front(index, priority) } else { self.queue.enqueue(index, priority) };
        let (tag, head) = if front { (tag::ENQUEUE_FRONT, addr::HEAD) } else { (tag::ENQUEUE, 0) };
        let resp = if result.is_ok() { OKAY } else { SLVERR };
        self.vectors.write(tag, u32::from(priority) << addr::PRIORITY_SHIFT | head, slot, resp);
        self.vectors.read(tag::STATUS, addr::STATUS, status(result));
    }

    fn remove(&mut self, slot: usize) {
        let expected = found(self.queue.remove(slot).map(|priority| (priority, slot)));
        self.vectors.read(tag::REMOVE, addr::REMOVE + 4 * slot as u32, expected);
    }

    fn pop(&mut self) {
        let expected = found(self.queue.pop_highest());
        self.vectors.read(tag::POP_HIGHEST, addr::ENCODER, expected);
    }

    fn highest(&mut self) {
        let expected = found(self.queue.highest());
        self.vectors.read(tag::HIGHEST, addr::ENCODER | addr::PEEK, expected);
    }

    fn drain(&mut self) {
        while !self.queue.is_empty() {
            self.pop();
        }
        self.pop();
    }

    fn slot(&mut self) -> u32 {
        // One past the end now and then: refused alike.
        self.rng.below(SLOTS + 1) as u32
    }

    /// Nothing queued: every lookup comes back empty, and the operations
    /// outside the model (registers, masked writes, reserved reads) do
    /// what the documentation says.
    fn empty(&mut self) {
        self.pop();
        self.highest();
        self.remove(0);
        self.remove(SLOTS);
        self.vectors.read(tag::OTHER, addr::SLOTS, SLOTS as u32);
        self.vectors.write(tag::OTHER, addr::PEEK | 9 << addr::PRIORITY_SHIFT, 0, OKAY);
        self.highest();
        // The paper's SEL-addressed reads have no counterpart in the model.
        self.vectors.read(tag::OTHER, 9 << addr::PRIORITY_SHIFT, RESERVED);
        self.vectors.write(tag::OTHER, addr::STATUS, 0, SLVERR);
    }

    /// Every priority through the encoder, with a slot one below it that
    /// must not win.
    fn every_priority(&mut self) {
        for priority in 0..=Priority::MAX {
            self.enqueue(0, priority, false);
            self.highest();
            if let Some(below) = priority.checked_sub(1) {
                let front = self.rng.chance(50);
                self.enqueue(1, below, front);
                self.highest();
                self.remove(1);
            }
            self.pop();
        }
    }

    /// Every slot in one FIFO, in a shuffled order from both ends, the
    /// refusals, removals from anywhere, then the drain in FIFO order.
    fn one_full_fifo(&mut self, priority: Priority) {
        let mut order: Vec<u32> = (0..SLOTS as u32).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, self.rng.below(i + 1));
        }
        for &slot in &order {
            let front = self.rng.chance(30);
            self.enqueue(slot, priority, front);
        }
        self.enqueue(order[0], priority, false);
        self.enqueue(order[order.len() / 2], priority.wrapping_add(1), true);
        self.enqueue(SLOTS as u32, priority, false);
        self.enqueue(u32::MAX, priority, true);
        self.highest();
        for _ in 0..SLOTS / 4 {
            let slot = self.rng.pick(&order) as usize;
            self.remove(slot);
        }
        self.drain();
    }

    /// Three slots of equal priority, the middle one removed.
    fn middle(&mut self) {
        for slot in 0..3 {
            self.enqueue(slot, 42, false);
        }
        self.remove(1);
        self.enqueue(1, 42, false);
        self.drain();
    }

    /// Every slot at a priority of its own: the drain comes out highest
    /// first.
    fn spread(&mut self) {
        for slot in 0..SLOTS as u32 {
            let priority = self.rng.byte();
            self.enqueue(slot, priority, false);
        }
        self.drain();
    }

    fn random(&mut self, ops: usize) {
        for _ in 0..ops {
            let priority = if self.rng.chance(60) { self.rng.pick(&CROWDED) } else { self.rng.byte() };
            match self.rng.below(100) {
                0..=29 => {
                    let slot = self.slot();
                    self.enqueue(slot, priority, false);
                }
                30..=44 => {
                    let slot = self.slot();
                    self.enqueue(slot, priority, true);
                }
                45..=64 => {
                    let slot = self.slot() as usize;
                    self.remove(slot);
                }
                65..=84 => self.pop(),
                85..=98 => self.highest(),
                _ => self.drain(),
            }
        }
    }
}

/// The whole sequence for a queue of `SLOTS` slots: the edge cases, then
/// `random_ops` random operations from `seed`.
pub fn generate<const SLOTS: usize>(seed: u64, random_ops: usize) -> Vectors {
    const { assert!(SLOTS >= 2 && SLOTS <= MAX_SLOTS, "the RTL takes 2 to 4095 slots here") };
    let mut g = Generator::<SLOTS> { queue: ReadyQueue::new(), rng: Rng::new(seed), vectors: Vectors::default() };
    g.empty();
    g.every_priority();
    let crowded = g.rng.pick(&CROWDED);
    g.one_full_fifo(crowded);
    g.middle();
    g.spread();
    g.random(random_ops);
    g.drain();
    g.vectors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phases_cover_what_the_rtl_must_get_right() {
        let vectors = generate::<8>(1, 500);
        let expected = |tag: u8, value: u32| vectors.lines.iter().any(|v| v.tag == tag && v.expected == value);
        assert!(expected(tag::POP_HIGHEST, NONE), "a pop of an empty queue");
        for priority in 0..=255u32 {
            assert!(expected(tag::HIGHEST, priority << 16), "priority {priority} found");
        }
        assert!(expected(tag::STATUS, 1) && expected(tag::STATUS, 2), "both refusals");
        assert!(expected(tag::REMOVE, 42 << 16 | 1), "the middle slot removed");
        assert!(vectors.count(tag::ENQUEUE_FRONT) > 50 && vectors.count(tag::REMOVE) > 50);
    }

    #[test]
    fn every_enqueue_is_followed_by_its_status() {
        let vectors = generate::<4>(9, 200);
        for (i, v) in vectors.lines.iter().enumerate() {
            if v.write && v.tag != tag::OTHER {
                assert_eq!(vectors.lines[i + 1].addr, addr::STATUS, "after line {i}");
            }
        }
    }

    #[test]
    fn a_read_word_carries_priority_and_slot() {
        assert_eq!(found(Some((200, 3))), 0x00c8_0003);
        assert_eq!(found(None), NONE);
        assert_eq!(status(Err(QueueError::AlreadyQueued)), 2);
    }
}
