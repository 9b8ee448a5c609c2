//! Thirty-two interrupts' configuration in words: a bit or a byte each, as
//! the distributor's registers lay them out.
//!
//! A guest's write to one of those registers runs at EL2 with interrupts
//! masked. Taken one interrupt at a time it was 32 look-ups and up to 32
//! effects; on the bank it is a few mask operations, and only the
//! interrupts whose change needs an action of their own (a latched one now
//! delivered, a priority a direct core's GIC follows) are visited, by the
//! set bits of what changed.

/// Interrupts per bank.
pub const WIDTH: u32 = 32;

/// The bits `count` interrupts from bit `first` cover (`count` ≤ 32).
pub const fn span(first: u32, count: u32) -> u32 {
    ((((1u64 << count) - 1) << first) & 0xffff_ffff) as u32
}

/// The indices of the bits set in `mask`, lowest first.
pub fn ones(mut mask: u32) -> impl Iterator<Item = u32> {
    core::iter::from_fn(move || {
        (mask != 0).then(|| {
            let n = mask.trailing_zeros();
            mask &= mask - 1;
            n
        })
    })
}

/// GICD_ICFGR keeps two bits per interrupt, the upper one for edge: the
/// upper bits of a 32-bit value, one per interrupt, in the low half.
pub const fn edges_of(value: u32) -> u32 {
    let mut x = (value >> 1) & 0x5555_5555;
    x = (x | x >> 1) & 0x3333_3333;
    x = (x | x >> 2) & 0x0f0f_0f0f;
    x = (x | x >> 4) & 0x00ff_00ff;
    (x | x >> 8) & 0x0000_ffff
}

/// The reverse of [`edges_of`]: 16 interrupts' edge bits as ICFGR reads.
pub const fn config_of(edges: u32) -> u32 {
    let mut x = edges & 0xffff;
    x = (x | x << 8) & 0x00ff_00ff;
    x = (x | x << 4) & 0x0f0f_0f0f;
    x = (x | x << 2) & 0x3333_3333;
    x = (x | x << 1) & 0x5555_5555;
    x << 1
}

/// One bank: INTIDs `32 × k` to `32 × k + 31`, bit n for the n-th.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bank {
    /// The partition's interrupts; the others read as zero and ignore
    /// writes, and every operation below leaves them alone.
    pub owned: u32,
    pub enabled: u32,
    pub group1: u32,
    /// Edge-triggered (ICFGR 0b10) rather than level.
    pub edge: u32,
    /// Whose configuration is fixed (SGIs are always edge-triggered).
    pub fixed_config: u32,
    /// Backed by a physical interrupt whose own pending state is the truth:
    /// a level line that has dropped by the time the guest enables the
    /// interrupt must not be delivered, so nothing is latched for it.
    pub hw: u32,
    /// Whose pending state the guest sets and clears in the physical
    /// distributor (passthrough SPIs), not in a queue.
    pub physical: u32,
    /// Made pending while disabled (by a write to ISPENDR, or for a purely
    /// virtual interrupt by its source): delivered once enabled.
    pub latched: u32,
    pub priority: [u8; WIDTH as usize],
    /// The vCPU each SPI targets (a private bank's are its own vCPU).
    pub target: [u8; WIDTH as usize],
}

/// What a write to ISENABLER did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Enabled {
    /// The owned interrupts it names, enabled now.
    pub enabled: u32,
    /// Those of them latched while disabled: pending at once.
    pub deliver: u32,
    /// The unowned ones it names.
    pub denied: u32,
}

/// What a write to ISPENDR did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pended {
    /// Enabled, virtual pending state: to be queued now.
    pub pend: u32,
    /// To be set pending in the physical distributor.
    pub physical: u32,
    pub denied: u32,
}

/// What a write to ICPENDR did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cleared {
    /// To be withdrawn from their vCPU's queue.
    pub unpend: u32,
    /// To be cleared in the physical distributor.
    pub physical: u32,
}

impl Bank {
    /// Nothing owned.
    pub const EMPTY: Bank = Bank {
        owned: 0,
        enabled: 0,
        group1: 0,
        edge: 0,
        fixed_config: 0,
        hw: 0,
        physical: 0,
        latched: 0,
        priority: [0; WIDTH as usize],
        target: [0; WIDTH as usize],
    };

    /// A vCPU's SGIs and PPIs as they come out of reset: disabled, group
    /// 1, at the default priority; SGIs edge-triggered; `hw` the PPIs that
    /// stand for physical lines (its timers).
    pub fn private(hw: u32, priority: u8) -> Bank {
        const SGIS: u32 = 0xffff;
        Bank {
            owned: u32::MAX,
            group1: u32::MAX,
            edge: SGIS,
            fixed_config: SGIS,
            hw,
            priority: [priority; WIDTH as usize],
            ..Bank::EMPTY
        }
    }

    /// Makes interrupt `n` the partition's, as it comes out of reset:
    /// disabled, group 1, level, at `priority`, targeting `vcpu`. A `hw`
    /// one is a passthrough SPI, whose pending state is the physical one's.
    pub fn own(&mut self, n: u32, hw: bool, vcpu: u8, priority: u8) {
        let bit = 1 << n;
        self.owned |= bit;
        self.group1 |= bit;
        if hw {
            self.hw |= bit;
            self.physical |= bit;
        }
        self.priority[n as usize] = priority;
        self.target[n as usize] = vcpu;
    }

    /// An interrupt fired: an enabled one returns its priority. A disabled
    /// one is not delivered: a purely virtual one is latched until enabled,
    /// one backed by a physical line is left to that line (still asserted
    /// once enabled, it fires again).
    pub fn fire(&mut self, n: u32) -> Option<u8> {
        let bit = 1 << n;
        if self.owned & bit == 0 {
            None
        } else if self.enabled & bit != 0 {
            Some(self.priority[n as usize])
        } else {
            self.latched |= bit & !self.hw;
            None
        }
    }

    pub fn set_enable(&mut self, bits: u32) -> Enabled {
        let enabled = bits & self.owned;
        let deliver = self.latched & enabled;
        self.enabled |= enabled;
        self.latched &= !deliver;
        Enabled { enabled, deliver, denied: bits & !self.owned }
    }

    /// Returns the owned interrupts `bits` names, disabled now.
    pub fn clear_enable(&mut self, bits: u32) -> u32 {
        let disabled = bits & self.owned;
        self.enabled &= !disabled;
        disabled
    }

    pub fn set_pending(&mut self, bits: u32) -> Pended {
        let named = bits & self.owned;
        let physical = named & self.physical;
        let soft = named & !self.physical;
        self.latched |= soft & !self.enabled;
        Pended { pend: soft & self.enabled, physical, denied: bits & !self.owned }
    }

    pub fn clear_pending(&mut self, bits: u32) -> Cleared {
        let named = bits & self.owned;
        let unpend = named & !self.physical;
        self.latched &= !unpend;
        Cleared { unpend, physical: named & self.physical }
    }

    /// IGROUPR: a plain register, so `mask` says which bits the access
    /// covers.
    pub fn write_group(&mut self, value: u32, mask: u32) {
        let mine = mask & self.owned;
        self.group1 = (self.group1 & !mine) | (value & mine);
    }

    /// ICFGR's edge bits (as [`edges_of`] gives them) for the interrupts
    /// `mask` covers.
    pub fn write_edges(&mut self, edges: u32, mask: u32) {
        let mine = mask & self.owned & !self.fixed_config;
        self.edge = (self.edge & !mine) | (edges & mine);
    }

    /// Sets interrupt `n`'s priority; true if it changed.
    pub fn write_priority(&mut self, n: u32, priority: u8) -> bool {
        if self.owned & (1 << n) == 0 {
            return false;
        }
        let old = core::mem::replace(&mut self.priority[n as usize], priority);
        old != priority
    }

    pub fn read_priority(&self, n: u32) -> u8 {
        if self.owned & (1 << n) == 0 {
            0
        } else {
            self.priority[n as usize]
        }
    }

    /// ISPENDR's view of the interrupts `mask` covers: what is latched, and
    /// for those backed by a physical line, whether `asserted(n)` says that
    /// line is.
    pub fn pending(&self, mask: u32, asserted: impl Fn(u32) -> bool) -> u32 {
        let lines = ones(mask & self.owned & self.hw).filter(|&n| asserted(n)).fold(0, |m, n| m | 1 << n);
        (self.latched | lines) & self.owned & mask
    }

    /// The interrupts of `mask` that target `vcpu`.
    pub fn targeting(&self, mask: u32, vcpu: u8) -> u32 {
        ones(mask).filter(|&n| self.target[n as usize] == vcpu).fold(0, |m, n| m | 1 << n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMERS: u32 = 1 << 27 | 1 << 30;

    fn spis() -> Bank {
        // Bits 2 (passthrough) and 8 (virtual) owned, 9 not.
        let mut bank = Bank::EMPTY;
        bank.own(2, true, 1, 0xa0);
        bank.own(8, false, 0, 0xa0);
        bank
    }

    #[test]
    fn spans_cover_sub_words_and_whole_words() {
        assert_eq!(span(0, 32), u32::MAX);
        assert_eq!(span(8, 8), 0xff00);
        assert_eq!(span(16, 16), 0xffff_0000);
        assert_eq!(ones(0x8000_0101).collect::<alloc::vec::Vec<_>>(), [0, 8, 31]);
    }

    #[test]
    fn configuration_bits_pack_and_unpack() {
        assert_eq!(edges_of(0b10_00_10_10), 0b1011);
        assert_eq!(edges_of(0b01_01_01_01), 0, "the lower bit of each pair is not the edge");
        assert_eq!(config_of(0b1011), 0b10_00_10_10);
        assert_eq!(edges_of(0xaaaa_aaaa), 0xffff);
        for edges in [0u32, 1, 0x8000, 0xffff, 0x1234, 0xa5c3] {
            assert_eq!(edges_of(config_of(edges)), edges);
        }
    }

    #[test]
    fn set_enable_changes_only_owned_bits_and_delivers_what_was_latched() {
        let mut bank = spis();
        assert_eq!(bank.fire(8), None, "disabled: latched");
        assert_eq!(bank.fire(2), None, "disabled, but its line decides");
        assert_eq!(bank.latched, 1 << 8);
        let done = bank.set_enable(u32::MAX);
        assert_eq!(done, Enabled { enabled: 1 << 2 | 1 << 8, deliver: 1 << 8, denied: !(1 << 2 | 1 << 8) });
        assert_eq!(bank.enabled, 1 << 2 | 1 << 8);
        assert_eq!(bank.latched, 0);
        assert_eq!(bank.fire(8), Some(0xa0));
        assert_eq!(bank.fire(9), None, "not owned");
        assert_eq!(bank.set_enable(1 << 8).deliver, 0, "nothing latched twice");
    }

    #[test]
    fn clear_enable_leaves_unowned_bits_alone() {
        let mut bank = spis();
        bank.set_enable(u32::MAX);
        assert_eq!(bank.clear_enable(1 << 8 | 1 << 9), 1 << 8);
        assert_eq!(bank.enabled, 1 << 2);
        assert_eq!(bank.set_enable(0).enabled, 0, "zero bits do nothing");
    }

    #[test]
    fn pending_goes_to_the_physical_gic_the_queue_or_the_latch() {
        let mut bank = spis();
        let done = bank.set_pending(1 << 2 | 1 << 8 | 1 << 9);
        assert_eq!(done, Pended { pend: 0, physical: 1 << 2, denied: 1 << 9 });
        assert_eq!(bank.latched, 1 << 8, "disabled: latched");
        assert_eq!(bank.pending(u32::MAX, |_| false), 1 << 8);
        assert_eq!(bank.pending(u32::MAX, |n| n == 2), 1 << 2 | 1 << 8, "the passthrough's line");
        assert_eq!(bank.pending(1 << 2, |_| true), 1 << 2, "only what the access covers");
        let cleared = bank.clear_pending(u32::MAX);
        assert_eq!(cleared, Cleared { unpend: 1 << 8, physical: 1 << 2 });
        assert_eq!(bank.latched, 0);
        bank.set_enable(1 << 8);
        assert_eq!(bank.set_pending(1 << 8).pend, 1 << 8, "enabled: pending at once");
        assert_eq!(bank.latched, 0);
    }

    #[test]
    fn a_private_bank_s_timers_keep_a_software_pending_state() {
        let mut bank = Bank::private(TIMERS, 0xa0);
        assert_eq!(bank.fire(27), None);
        assert_eq!(bank.latched, 0, "a timer's line is its pending state");
        assert_eq!(bank.fire(5), None);
        assert_eq!(bank.latched, 1 << 5, "an SGI is latched");
        let done = bank.set_pending(1 << 30);
        assert_eq!(done, Pended { pend: 0, physical: 0, denied: 0 });
        assert_eq!(bank.latched, 1 << 5 | 1 << 30, "the guest's own write is latched");
        let done = bank.set_enable(u32::MAX);
        assert_eq!(done.deliver, 1 << 5 | 1 << 30);
        assert_eq!(done.denied, 0, "a vCPU owns all its private interrupts");
    }

    #[test]
    fn groups_configurations_and_priorities_are_per_owned_interrupt() {
        let mut bank = spis();
        bank.write_group(0, u32::MAX);
        assert_eq!(bank.group1, 0);
        bank.write_group(u32::MAX, 1 << 2);
        assert_eq!(bank.group1, 1 << 2, "only the bits the access covers");
        bank.write_edges(u32::MAX, u32::MAX);
        assert_eq!(bank.edge, 1 << 2 | 1 << 8);
        assert!(bank.write_priority(2, 0x40));
        assert!(!bank.write_priority(2, 0x40), "unchanged");
        assert!(!bank.write_priority(9, 0x40), "not owned");
        assert_eq!((bank.read_priority(2), bank.read_priority(9)), (0x40, 0));
        let mut private = Bank::private(TIMERS, 0xa0);
        private.write_edges(0, u32::MAX);
        assert_eq!(private.edge, 0xffff, "SGIs stay edge-triggered");
    }

    #[test]
    fn targets_split_a_mask_by_vcpu() {
        let bank = spis();
        assert_eq!(bank.targeting(1 << 2 | 1 << 8, 1), 1 << 2);
        assert_eq!(bank.targeting(1 << 2 | 1 << 8, 0), 1 << 8);
    }
}
