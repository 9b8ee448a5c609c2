//! List registers (ICH_LR<n>_EL2) and how Partita fills them.

use super::queue::Queue;
use super::Virq;

const STATE_SHIFT: u32 = 62;
const HW: u64 = 1 << 61;
const GROUP1: u64 = 1 << 60;
const PRIORITY_SHIFT: u32 = 48;
const PINTID_SHIFT: u32 = 32;

/// A list register's state field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Invalid,
    Pending,
    Active,
    PendingActive,
}

/// The value of one list register.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lr(pub u64);

impl Lr {
    /// A group-1 interrupt in the pending state.
    pub fn pending(virq: Virq) -> Lr {
        let mut value =
            (1 << STATE_SHIFT) | GROUP1 | u64::from(virq.priority) << PRIORITY_SHIFT | u64::from(virq.intid);
        if virq.hw {
            value |= HW | u64::from(virq.intid) << PINTID_SHIFT;
        }
        Lr(value)
    }

    pub fn state(self) -> State {
        match self.0 >> STATE_SHIFT {
            0 => State::Invalid,
            1 => State::Pending,
            2 => State::Active,
            _ => State::PendingActive,
        }
    }

    pub fn intid(self) -> u32 {
        self.0 as u32
    }

    pub fn priority(self) -> u8 {
        (self.0 >> PRIORITY_SHIFT) as u8
    }

    pub fn hw(self) -> bool {
        self.0 & HW != 0
    }

    pub fn is_free(self) -> bool {
        self.state() == State::Invalid
    }

    fn virq(self) -> Virq {
        Virq { intid: self.intid(), priority: self.priority(), hw: self.hw() }
    }

    /// The entry as a purely virtual one: no physical interrupt is
    /// deactivated when the guest completes it.
    pub fn unlinked(self) -> Lr {
        Lr(self.0 & !HW & !(0x3ff << PINTID_SHIFT))
    }

    /// The entry linked to the physical interrupt of the same INTID: the
    /// guest's completion deactivates that too.
    pub fn linked(self) -> Lr {
        Lr(self.unlinked().0 | HW | u64::from(self.intid()) << PINTID_SHIFT)
    }

    /// Adds the pending state to an entry that is active (an edge interrupt
    /// that fired again while the guest handles it).
    fn also_pending(self) -> Lr {
        Lr(self.0 | (1 << STATE_SHIFT))
    }
}

/// GICv2's list registers (GICH_LR<n>, 32 bits) hold the same fields in
/// less room: a 10-bit virtual and physical INTID, a 5-bit priority (the
/// top bits of the 8-bit one), and no pINTID when HW is clear, where bit 19
/// asks for a maintenance interrupt at EOI and bits 12:10 name an SGI's
/// sender. Partita's entries never set the EOI bit and give every SGI
/// sender 0, so the round trip keeps all it uses but the group: a GICv2
/// partition's interrupts are all in group 0 (its GICD_IGROUPR reads as
/// zero), which GICV_CTLR's EnableGrp0 enables. That is the one group a
/// GICv2 driver that never writes GICD_IGROUPR (Linux's) turns on; with
/// GICv3's group-1 entries, Linux on a GIC-400 took no interrupt at all.
pub mod gicv2 {
    const VIRTUAL_ID: u32 = 0x3ff;
    const PHYSICAL_SHIFT: u32 = 10;
    const PRIORITY_SHIFT: u32 = 23;
    const STATE_SHIFT: u32 = 28;
    const HW: u32 = 1 << 31;

    /// The GICH_LR value for an ICH_LR-layout entry.
    pub const fn from_lr(lr: u64) -> u32 {
        let hw = lr & super::HW != 0;
        let mut value = (lr as u32) & VIRTUAL_ID
            | ((lr >> super::PRIORITY_SHIFT) as u32 & 0xf8) << (PRIORITY_SHIFT - 3)
            | ((lr >> super::STATE_SHIFT) as u32 & 0b11) << STATE_SHIFT;
        if hw {
            value |= HW | ((lr >> super::PINTID_SHIFT) as u32 & VIRTUAL_ID) << PHYSICAL_SHIFT;
        }
        value
    }

    /// GICH_LR.EOI: with HW clear, a maintenance interrupt once the guest
    /// completes the entry.
    const EOI: u32 = 1 << 19;

    /// The GICH_LR value for an entry, with a hardware link stood in for by
    /// a maintenance interrupt at its EOI: the hypervisor then deactivates
    /// the physical interrupt itself. QEMU's GIC-400 model drops the link's
    /// deactivation on the floor for a level line still asserted (the
    /// physical interrupt never fires again), which a deactivation through
    /// GICC_DIR does not. Partita links only an INTID to itself.
    pub const fn from_lr_eoi_linked(lr: u64) -> u32 {
        let value = from_lr(lr);
        if value & HW == 0 {
            return value;
        }
        (value & !HW & !(VIRTUAL_ID << PHYSICAL_SHIFT)) | EOI
    }

    /// The ICH_LR-layout entry for a value [`from_lr_eoi_linked`] wrote:
    /// an EOI-maintained entry reads as the hardware link it stands for.
    pub const fn to_lr_eoi_linked(value: u32) -> u64 {
        if value & HW == 0 && value & EOI != 0 {
            to_lr((value & !EOI) | HW | (value & VIRTUAL_ID) << PHYSICAL_SHIFT)
        } else {
            to_lr(value)
        }
    }

    /// The ICH_LR-layout entry for a GICH_LR value, in group 1 as the
    /// core's entries are.
    pub const fn to_lr(value: u32) -> u64 {
        let mut lr = (value & VIRTUAL_ID) as u64
            | (((value >> PRIORITY_SHIFT) & 0x1f) as u64) << (super::PRIORITY_SHIFT + 3)
            | (((value >> STATE_SHIFT) & 0b11) as u64) << super::STATE_SHIFT
            | super::GROUP1;
        if value & HW != 0 {
            lr |= super::HW | (((value >> PHYSICAL_SHIFT) & VIRTUAL_ID) as u64) << super::PINTID_SHIFT;
        }
        lr
    }
}

/// When Partita must look at the list registers again because interrupts
/// stayed queued for lack of room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refill {
    /// Everything queued was listed (or waits for its own entry to finish).
    NotNeeded,
    /// Once the guest has taken every pending entry (maintenance: NPIE).
    WhenNonePending,
    /// Every entry is active: once the guest has completed all but one
    /// (maintenance: UIE). Asking for NPIE here would fire at once, forever.
    WhenFewListed,
}

/// What a flush did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flushed {
    pub refill: Refill,
    /// The list registers it changed, bit n for `lrs[n]`: the only ones
    /// worth writing back.
    pub changed: u32,
}

/// Moves the most urgent queued interrupts into the list registers. When all
/// are taken, a pending (not active) entry of lower priority than the next
/// queued one goes back to the queue to make room, so the guest always
/// sees the most urgent interrupts first. Says when to refill.
///
/// Bounded: each round takes one entry out of the queue for good or stops;
/// an eviction puts back a strictly less urgent entry than the one listed,
/// so no entry cycles. Each round looks at the queue's entries from the
/// most urgent on, passing over at most one per list register (those
/// listed and active with HW set).
pub fn flush(lrs: &mut [Lr], queue: &mut Queue) -> Flushed {
    let mut changed = 0;
    let mut free = lrs.iter().enumerate().filter(|(_, lr)| lr.is_free()).fold(0u32, |m, (n, _)| m | 1 << n);
    let mut no_room = false;
    // An INTID listed already that cannot take another pending state yet
    // (an active HW entry) is passed over: it neither gets a second list
    // register nor blocks the others.
    while let Some(at) = queue.most_urgent(|v| !blocked(lrs, v.intid)) {
        let next = queue.get(at);
        // An INTID already in a list register is not listed twice: a
        // pending one stays as it is, an active one becomes pending and
        // active.
        if let Some(n) = listed(lrs, next.intid) {
            if lrs[n].state() == State::Active {
                lrs[n] = lrs[n].also_pending();
                changed |= 1 << n;
            }
            queue.take(at);
            continue;
        }
        let slot = if free != 0 {
            free.trailing_zeros() as usize
        } else if let Some(victim) = least_urgent_pending(lrs, next.priority) {
            victim
        } else {
            no_room = true;
            break;
        };
        queue.take(at);
        if !lrs[slot].is_free() {
            // Cannot overflow: `next` just left the queue.
            let _ = queue.push(lrs[slot].virq());
        }
        lrs[slot] = Lr::pending(next);
        free &= !(1 << slot);
        changed |= 1 << slot;
    }
    let refill = if !no_room {
        Refill::NotNeeded
    } else if lrs.iter().any(|lr| lr.state() == State::Pending) {
        Refill::WhenNonePending
    } else {
        Refill::WhenFewListed
    };
    Flushed { refill, changed }
}

/// The list register holding `intid`, if any.
fn listed(lrs: &[Lr], intid: u32) -> Option<usize> {
    lrs.iter().position(|lr| !lr.is_free() && lr.intid() == intid)
}

/// A HW entry cannot be pending and active at once: a re-trigger of an
/// active one waits in the queue until the guest completes it.
fn blocked(lrs: &[Lr], intid: u32) -> bool {
    listed(lrs, intid).is_some_and(|n| lrs[n].hw() && lrs[n].state() == State::Active)
}

fn least_urgent_pending(lrs: &[Lr], than: u8) -> Option<usize> {
    lrs.iter()
        .enumerate()
        .filter(|(_, lr)| lr.state() == State::Pending && lr.priority() > than)
        .max_by_key(|(_, lr)| (lr.priority(), lr.intid()))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn virq(intid: u32, priority: u8) -> Virq {
        Virq { intid, priority, hw: false }
    }

    #[test]
    fn a_link_is_dropped_and_made_again_without_touching_the_rest() {
        let timer = Lr::pending(Virq { intid: 30, priority: 0xa0, hw: true });
        let active = Lr(timer.0 & !(0b11 << STATE_SHIFT) | 2 << STATE_SHIFT);
        let unlinked = active.unlinked();
        assert!(!unlinked.hw());
        assert_eq!((unlinked.intid(), unlinked.priority(), unlinked.state()), (30, 0xa0, State::Active));
        assert_eq!(unlinked.0 >> PINTID_SHIFT & 0x3ff, 0, "no pINTID, and no EOI maintenance bit");
        assert_eq!(unlinked.linked(), active);
        assert_eq!(active.linked(), active);
    }

    #[test]
    fn gicv2_list_registers_keep_what_partita_writes() {
        // A pending HW timer at priority 0xa0: vINTID 27, pINTID 27, priority
        // 0xa0 >> 3 = 0x14, state pending, group 0 (bit 30 clear), HW.
        let timer = Lr::pending(Virq { intid: 27, priority: 0xa0, hw: true });
        let v2 = gicv2::from_lr(timer.0);
        assert_eq!(v2, 27 | 27 << 10 | 0x14 << 23 | 1 << 28 | 1 << 31);
        assert_eq!(gicv2::to_lr(v2), timer.0);
        let sgi = Lr::pending(virq(3, 0x80));
        assert_eq!(gicv2::from_lr(sgi.0), 3 | 0x10 << 23 | 1 << 28, "no sender, no EOI bit");
        assert_eq!(gicv2::to_lr(gicv2::from_lr(sgi.0)), sgi.0);
        // The guest's EOI leaves the entry invalid; an active one stays so.
        assert!(Lr(gicv2::to_lr(gicv2::from_lr(sgi.0) & !(0b11 << 28))).is_free());
        assert_eq!(Lr(gicv2::to_lr(2 << 28 | 40)).state(), State::Active);
        // A link kept by an EOI maintenance interrupt reads back as the link.
        let linked = gicv2::from_lr_eoi_linked(timer.0);
        assert_eq!(linked, 27 | 1 << 19 | 0x14 << 23 | 1 << 28, "no HW, no pINTID, EOI");
        assert_eq!(gicv2::to_lr_eoi_linked(linked), timer.0);
        assert_eq!(gicv2::from_lr_eoi_linked(sgi.0), gicv2::from_lr(sgi.0), "unlinked entries unchanged");
        assert_eq!(gicv2::to_lr_eoi_linked(gicv2::from_lr(sgi.0)), sgi.0);
        // Five bits of priority: the low three are lost.
        assert_eq!(Lr(gicv2::to_lr(gicv2::from_lr(Lr::pending(virq(40, 0x47)).0))).priority(), 0x40);
    }

    #[test]
    fn encoding_matches_the_architecture() {
        let lr = Lr::pending(Virq { intid: 27, priority: 0xa0, hw: true });
        assert_eq!(lr.0, (1 << 62) | (1 << 61) | (1 << 60) | (0xa0 << 48) | (27 << 32) | 27);
        assert_eq!((lr.state(), lr.intid(), lr.priority(), lr.hw()), (State::Pending, 27, 0xa0, true));
        assert_eq!(Lr(3 << 62).state(), State::PendingActive);
    }

    #[test]
    fn overflow_keeps_the_most_urgent_in_list_registers() {
        let mut q = Queue::new();
        for (intid, priority) in [(8, 0x80), (9, 0x50), (10, 0x20), (11, 0x70), (12, 0x10), (13, 0x60)] {
            q.push(virq(intid, priority)).unwrap();
        }
        let mut lrs = [Lr::default(); 4];
        assert_eq!(flush(&mut lrs, &mut q).refill, Refill::WhenNonePending, "two stay queued");
        let mut listed: Vec<u32> = lrs.iter().map(|lr| lr.intid()).collect();
        listed.sort();
        assert_eq!(listed, [9, 10, 12, 13]);
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn a_more_urgent_arrival_evicts_the_least_urgent_pending_entry() {
        let mut q = Queue::new();
        let mut lrs = [Lr::pending(virq(1, 0x40)), Lr::pending(virq(2, 0x90)), Lr(0), Lr(0)];
        lrs[2] = Lr(Lr::pending(virq(3, 0xf0)).0 ^ (3 << 62) | (2 << 62)); // active, low priority
        lrs[3] = Lr::pending(virq(4, 0x80));
        q.push(virq(5, 0x10)).unwrap();
        assert_eq!(flush(&mut lrs, &mut q).refill, Refill::WhenNonePending);
        assert_eq!(lrs[1].intid(), 5, "the pending 0x90 entry made room");
        assert_eq!(lrs[2].intid(), 3, "an active entry is never evicted");
        assert_eq!(q.peek(), Some(virq(2, 0x90)));
        // Nothing less urgent than the queued entry is pending now: it waits.
        assert_eq!(flush(&mut lrs, &mut q).refill, Refill::WhenNonePending);
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn only_the_list_registers_changed_are_named() {
        let mut q = Queue::new();
        let mut lrs = [Lr::pending(virq(1, 0x40)), Lr(0), Lr::pending(virq(2, 0x90)), Lr(0)];
        q.push(virq(3, 0x50)).unwrap();
        assert_eq!(flush(&mut lrs, &mut q), Flushed { refill: Refill::NotNeeded, changed: 0b10 });
        q.push(virq(4, 0x50)).unwrap();
        q.push(virq(5, 0x10)).unwrap();
        let flushed = flush(&mut lrs, &mut q);
        assert_eq!(flushed, Flushed { refill: Refill::WhenNonePending, changed: 0b1100 }, "one free, one evicted");
        assert_eq!((lrs[2].intid(), lrs[3].intid()), (4, 5));
        assert_eq!(q.peek(), Some(virq(2, 0x90)));
        assert_eq!(flush(&mut lrs, &mut q).changed, 0, "nothing to do: nothing to write");
    }

    #[test]
    fn a_re_trigger_merges_with_its_list_register() {
        let mut lrs = [Lr(Lr::pending(virq(1, 0x40)).0 ^ (3 << 62)), Lr::pending(virq(2, 0x40))];
        lrs[0] = Lr(lrs[0].0 | (2 << 62)); // active
        let mut q = Queue::new();
        q.push(virq(1, 0x40)).unwrap();
        q.push(virq(2, 0x40)).unwrap();
        assert_eq!(flush(&mut lrs, &mut q).refill, Refill::NotNeeded);
        assert_eq!(lrs[0].state(), State::PendingActive);
        assert_eq!(lrs[1].state(), State::Pending);
    }

    #[test]
    fn an_active_hw_interrupt_retriggered_stays_queued() {
        let hw = Virq { intid: 27, priority: 0xa0, hw: true };
        let mut lrs = [Lr(Lr::pending(hw).0 ^ (3 << 62) | (2 << 62)), Lr::default()];
        let mut q = Queue::new();
        q.push(hw).unwrap();
        q.push(virq(30, 0xc0)).unwrap();
        assert_eq!(flush(&mut lrs, &mut q).refill, Refill::NotNeeded, "the re-trigger waits for its own entry");
        assert_eq!(lrs[1].intid(), 30, "and does not block a less urgent one");
        assert_eq!(q.peek(), Some(hw));
    }

    #[test]
    fn with_every_entry_active_the_refill_waits_for_completions() {
        let active = |intid| Lr(Lr::pending(virq(intid, 0x40)).0 ^ (3 << 62) | (2 << 62));
        let mut lrs = [active(1), active(2)];
        let mut q = Queue::new();
        q.push(virq(3, 0x80)).unwrap();
        assert_eq!(flush(&mut lrs, &mut q).refill, Refill::WhenFewListed);
        assert_eq!(q.len(), 1);
    }
}
