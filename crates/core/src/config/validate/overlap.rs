//! Which ranges share addresses, found in one place.
//!
//! Many rules forbid an overlap: a partition's memory with Partita's own or
//! with another partition's, two passthrough devices, a shared-memory
//! window with a member's RAM, console or emulated GIC, the platform's GIC
//! frames with RAM, the fabric's memory with anyone's, an accelerator's
//! interface page with anything its partition maps, and more. Rather than each rule comparing its ranges
//! pairwise, [`Overlaps`] collects every labelled range of the system once,
//! finds all overlapping pairs in one sorted sweep, and answers each rule's
//! question from that. The rules keep their own wording and their place in
//! the issue order; whether two ranges overlap is decided here only.
//!
//! The sweep is hand-written: it is a few lines, and this crate also runs
//! in the hypervisor without `std`, where an interval-tree crate would bring
//! more than it saves.

use crate::config::limits::CONSOLE_SIZE;
use crate::config::model::{ChannelKind, Range, System};
use crate::fabric::interface::PAGE_SIZE as INTERFACE_PAGE;
use alloc::vec::Vec;

/// An address space: ranges in different spaces never clash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Space {
    /// Host-physical addresses: RAM and MMIO as the machine has them.
    Physical,
    /// Partition `p`'s guest-physical addresses, as its stage-2 tables map them.
    Guest(usize),
}

/// What a range is. In a partition's guest space, `Memory`, `Device` and
/// `Channel` are the guest views, `Console` is the partition's emulated
/// PL011, and `Gicd` and `Gicr` are its emulated GIC, which guests find at
/// the platform's addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Item {
    Ram,
    Console,
    Gicd,
    Gicr,
    /// Partita's own memory.
    Hypervisor,
    /// Partition, then region.
    Memory(usize, usize),
    /// Partition, then device.
    Device(usize, usize),
    /// A shared-memory channel, by its index among all channels.
    Channel(usize),
    /// The fabric's memory: interface pages and saved contexts.
    Fabric,
    /// The image store: the pristine bytes partitions start from.
    Images,
    /// Partition, then virtual device: its interface page.
    Accelerator(usize, usize),
}

struct Span {
    space: Space,
    item: Item,
    range: Range,
}

/// Every overlap between the ranges the rules care about.
pub(super) struct Overlaps {
    spans: Vec<Span>,
    /// Per span, the spans it overlaps, by index into `spans`, ascending.
    partners: Vec<Vec<usize>>,
    /// Span indices sorted by (space, item), for lookups.
    index: Vec<usize>,
}

impl Overlaps {
    /// The ranges of `system`: the platform's and Partita's always, those of
    /// partitions and channels only with `entries`. A table far beyond the
    /// limits (a corrupt boot payload) would only make the sweep long.
    ///
    /// The order of collection is the order in which the rules list the
    /// ranges an entry overlaps.
    pub(super) fn of(system: &System, entries: bool) -> Self {
        use Item::*;
        let platform = &system.platform;
        let mut spans = Vec::new();
        let mut add = |space, item, range| spans.push(Span { space, item, range });
        let fixed = [
            (Ram, platform.ram),
            (Console, platform.console),
            (Gicd, platform.gicd),
            (Gicr, platform.gicr),
            (Hypervisor, system.hypervisor.memory),
        ];
        for (item, range) in fixed {
            add(Space::Physical, item, range);
        }
        if !entries {
            return Self::new(spans);
        }
        let windows: Vec<(usize, &[usize], Range, Range)> = system
            .channels
            .iter()
            .enumerate()
            .filter_map(|(c, channel)| match channel.kind {
                ChannelKind::SharedMemory { ref partitions, ipa, pa, size, .. } => {
                    Some((c, partitions.as_slice(), Range::new(pa, size), Range::new(ipa, size)))
                }
                _ => None,
            })
            .collect();
        for (p, partition) in system.partitions.iter().enumerate() {
            for (m, region) in partition.memory.iter().enumerate() {
                add(Space::Physical, Memory(p, m), region.host());
            }
        }
        for (p, partition) in system.partitions.iter().enumerate() {
            for (d, device) in partition.devices.iter().enumerate() {
                add(Space::Physical, Device(p, d), device.host());
            }
        }
        for &(c, _, host, _) in &windows {
            add(Space::Physical, Channel(c), host);
        }
        if let Some(fabric) = &system.fabric {
            add(Space::Physical, Fabric, fabric.memory);
        }
        add(Space::Physical, Images, system.hypervisor.images);
        for (p, partition) in system.partitions.iter().enumerate() {
            let guest = Space::Guest(p);
            for (m, region) in partition.memory.iter().enumerate() {
                add(guest, Memory(p, m), region.guest());
            }
            for (d, device) in partition.devices.iter().enumerate() {
                add(guest, Device(p, d), device.guest());
            }
            add(guest, Console, Range::new(partition.console, CONSOLE_SIZE));
            add(guest, Gicd, platform.gicd);
            add(guest, Gicr, platform.gicr);
            for &(c, _, _, window) in windows.iter().filter(|(_, members, ..)| members.contains(&p)) {
                add(guest, Channel(c), window);
            }
            for (d, device) in partition.accelerators.iter().enumerate() {
                add(guest, Accelerator(p, d), Range::new(device.ipa, INTERFACE_PAGE));
            }
        }
        Self::new(spans)
    }

    fn new(spans: Vec<Span>) -> Self {
        let intervals: Vec<(Space, u64, u64)> = spans.iter().map(|s| (s.space, s.range.base, s.range.end())).collect();
        // The pairs come sorted, so each list comes out ascending: first the
        // partners before the span (from its own pairs), then those after it.
        let mut partners = alloc::vec![Vec::new(); spans.len()];
        for (later, earlier) in overlapping_pairs(&intervals) {
            partners[later].push(earlier);
            partners[earlier].push(later);
        }
        let mut index: Vec<usize> = (0..spans.len()).collect();
        heapsort(&mut index, &|&a, &b| (spans[a].space, spans[a].item, a).cmp(&(spans[b].space, spans[b].item, b)));
        Self { spans, partners, index }
    }

    /// The span collected for `item` in `space`, if any.
    fn find(&self, space: Space, item: Item) -> Option<usize> {
        let found = self.index.binary_search_by(|&i| (self.spans[i].space, self.spans[i].item).cmp(&(space, item)));
        found.ok().map(|at| self.index[at])
    }

    /// The ranges that overlap `item` in `space`, in the order they were
    /// collected; none when the item was not collected.
    pub(super) fn with(&self, space: Space, item: Item) -> impl Iterator<Item = (Item, Range)> + '_ {
        let partners = self.find(space, item).map_or(&[][..], |i| self.partners[i].as_slice());
        self.spans_at(partners)
    }

    /// Those of [`Overlaps::with`] collected before `item`: a rule that
    /// reports a pair at its later entry asks this, so it reports it once.
    pub(super) fn before(&self, space: Space, item: Item) -> impl Iterator<Item = (Item, Range)> + '_ {
        let partners = self.find(space, item).map_or(&[][..], |i| {
            let all = self.partners[i].as_slice();
            &all[..all.partition_point(|&o| o < i)]
        });
        self.spans_at(partners)
    }

    fn spans_at<'s>(&'s self, indices: &'s [usize]) -> impl Iterator<Item = (Item, Range)> + 's {
        indices.iter().map(|&o| (self.spans[o].item, self.spans[o].range))
    }

    /// The base of the free host-physical range of `size` bytes nearest
    /// `around` inside `within`, clear of every range collected but
    /// `except`'s: what a message about an overlap can offer instead. A
    /// free stretch begins at `within`'s base or where a range ends, so
    /// those, aligned to `align`, are the candidates.
    pub(super) fn free_near(&self, within: Range, size: u64, around: u64, except: Item, align: u64) -> Option<u64> {
        let taken = || {
            let others = self.spans.iter().filter(move |s| s.item != except && s.item != Item::Ram);
            others.filter(|s| s.space == Space::Physical).map(|s| s.range)
        };
        let starts = core::iter::once(within.base).chain(taken().map(|range| range.end()));
        let fits = |&base: &u64| {
            let range = Range::new(base, size);
            within.covers(&range) && !taken().any(|other| other.overlaps(&range))
        };
        starts.filter_map(|start| start.checked_next_multiple_of(align)).filter(fits).min_by_key(|b| b.abs_diff(around))
    }

    /// Whether `a` and `b` overlap in `space`.
    pub(super) fn between(&self, space: Space, a: Item, b: Item) -> bool {
        match (self.find(space, a), self.find(space, b)) {
            (Some(a), Some(b)) => self.partners[a].binary_search(&b).is_ok(),
            _ => false,
        }
    }
}

/// Every pair of intervals that share a point, as `(later, earlier)`
/// indices into `intervals`, each pair once, in increasing order. An
/// interval is `(space, start, end)`, half-open: one with `end <= start` is
/// empty and overlaps nothing, and intervals in different spaces never
/// overlap.
///
/// A sweep over the intervals sorted by space and start compares each one
/// only with those still open where it starts, so the work is n log n plus
/// the pairs found, and ties between equal starts are broken by index.
pub(super) fn overlapping_pairs<S: Ord + Copy>(intervals: &[(S, u64, u64)]) -> Vec<(usize, usize)> {
    let mut order: Vec<usize> = (0..intervals.len()).filter(|&i| intervals[i].1 < intervals[i].2).collect();
    heapsort(&mut order, &|&a, &b| (intervals[a].0, intervals[a].1, a).cmp(&(intervals[b].0, intervals[b].1, b)));
    let mut open: Vec<usize> = Vec::new();
    // A pair (later, earlier) as one number, `later * n + earlier`, so the
    // pairs sort by the same routine.
    let n = intervals.len();
    let mut pairs = Vec::new();
    for i in order {
        let (space, start, _) = intervals[i];
        open.retain(|&o| intervals[o].0 == space && intervals[o].2 > start);
        pairs.extend(open.iter().map(|&o| i.max(o) * n + i.min(o)));
        open.push(i);
    }
    heapsort(&mut pairs, &|a, b| a.cmp(b));
    pairs.into_iter().map(|p| (p / n, p % n)).collect()
}

/// Sorts `items` by `order`: a heapsort, hand-written because each use of
/// the standard library's generic sorts puts about 15 KiB of code into the
/// hypervisor, which runs this validator too; through `dyn`, every caller
/// shares this one copy. O(n log n), no allocation.
fn heapsort(items: &mut [usize], order: &dyn Fn(&usize, &usize) -> core::cmp::Ordering) {
    let sift = |items: &mut [usize], mut root: usize, end: usize| loop {
        let mut child = 2 * root + 1;
        if child >= end {
            break;
        }
        if child + 1 < end && order(&items[child], &items[child + 1]).is_lt() {
            child += 1;
        }
        if order(&items[root], &items[child]).is_ge() {
            break;
        }
        items.swap(root, child);
        root = child;
    };
    let len = items.len();
    for root in (0..len / 2).rev() {
        sift(items, root, len);
    }
    for end in (1..len).rev() {
        items.swap(0, end);
        sift(items, 0, end);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{gpio, linked, system};
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    fn range(space: u8, base: u64, size: u64) -> (u8, u64, u64) {
        let range = Range::new(base, size);
        (space, range.base, range.end())
    }

    /// What the sweep must find: every earlier interval each one overlaps,
    /// by `Range::overlaps`, the rule the validator always used.
    fn pairwise(intervals: &[(u8, Range)]) -> Vec<(usize, usize)> {
        let mut pairs = Vec::new();
        for (i, (space, range)) in intervals.iter().enumerate() {
            for (j, (other_space, other)) in intervals.iter().enumerate().take(i) {
                if space == other_space && range.overlaps(other) {
                    pairs.push((i, j));
                }
            }
        }
        pairs
    }

    #[test]
    fn known_cases() {
        let cases = [
            // Two ranges inside a third, one apart from all: each pair once.
            (
                vec![
                    range(0, 0x4000_0000, 0x100_0000),
                    range(0, 0x0900_0000, 0x1000),
                    range(0, 0x40ff_f000, 0x2000),
                    range(0, 0x4000_0000, 0x1000),
                ],
                vec![(2, 0), (3, 0)],
            ),
            // Touching, empty, in another space, or empty at the very top.
            (
                vec![
                    range(0, 0x1000, 0x1000),
                    range(0, 0x2000, 0x1000),
                    range(0, 0x1800, 0),
                    range(1, 0x1000, 0x1000),
                    range(0, u64::MAX, 1),
                ],
                vec![],
            ),
            // Ends saturate at the top of the address space.
            (vec![range(0, u64::MAX - 0x1000, u64::MAX), range(0, u64::MAX - 1, 0x1000)], vec![(1, 0)]),
        ];
        for (intervals, pairs) in cases {
            assert_eq!(overlapping_pairs(&intervals), pairs, "{intervals:x?}");
        }
    }

    #[test]
    fn many_ranges_side_by_side_are_swept_in_one_pass() {
        // Each one closes where the next opens, so none is ever compared
        // with another, where comparing every pair would take 50 M steps.
        let intervals: Vec<(u8, u64, u64)> = (0..10_000u64).map(|i| range(0, i * 0x1000, 0x1000)).collect();
        assert_eq!(overlapping_pairs(&intervals), vec![]);
        let nested: Vec<(u8, u64, u64)> = (0..100u64).map(|i| range(0, i, 1000 - 2 * i)).collect();
        assert_eq!(overlapping_pairs(&nested).len(), 100 * 99 / 2, "every pair of nested ranges");
    }

    fn edge() -> impl Strategy<Value = u64> {
        prop_oneof![Just(0u64), Just(u64::MAX), Just(u64::MAX - 0x1000), 0u64..0x10, any::<u64>()]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn agrees_with_comparing_every_pair(
            raw in proptest::collection::vec((0u8..3, edge(), edge()), 0..40),
            rotation in 0usize..40,
        ) {
            let intervals: Vec<(u8, Range)> =
                raw.iter().map(|&(space, base, size)| (space, Range::new(base, size))).collect();
            let swept: Vec<(u8, u64, u64)> = intervals.iter().map(|(s, r)| (*s, r.base, r.end())).collect();
            let pairs = overlapping_pairs(&swept);
            prop_assert_eq!(&pairs, &pairwise(&intervals));
            // The same intervals in another order give the same pairs, renamed.
            let n = swept.len().max(1);
            let shift = rotation % n;
            let mut rotated = swept.clone();
            rotated.rotate_left(shift);
            let back = |i: usize| (i + shift) % n;
            let mut renamed: Vec<(usize, usize)> = overlapping_pairs(&rotated)
                .into_iter()
                .map(|(a, b)| (back(a).max(back(b)), back(a).min(back(b))))
                .collect();
            renamed.sort_unstable();
            prop_assert_eq!(renamed, pairs);
        }
    }

    proptest! {
        #[test]
        fn the_heapsort_sorts_like_the_standard_library(mut items in proptest::collection::vec(0usize..50, 0..200)) {
            let mut expected = items.clone();
            expected.sort_unstable();
            heapsort(&mut items, &|a, b| a.cmp(b));
            prop_assert_eq!(items, expected);
        }
    }

    #[test]
    fn the_index_answers_in_the_order_of_collection() {
        let mut s = system();
        let mut device = gpio();
        // A device over the last page of rtos's RAM that also hides the
        // virtual GIC distributor in rtos's guest space.
        (device.pa, device.ipa, device.size) = (0x42ff_f000, 0x0800_0000, 0x2000);
        s.partitions[0].devices.push(device);
        let overlaps = Overlaps::of(&s, true);
        let host: Vec<Item> = overlaps.with(Space::Physical, Item::Device(0, 0)).map(|(item, _)| item).collect();
        assert_eq!(host, vec![Item::Ram, Item::Memory(0, 0)]);
        let before: Vec<Item> = overlaps.before(Space::Physical, Item::Memory(0, 0)).map(|(item, _)| item).collect();
        assert_eq!(before, vec![Item::Ram], "the device comes later");
        let guest: Vec<Item> = overlaps.with(Space::Guest(0), Item::Device(0, 0)).map(|(item, _)| item).collect();
        assert_eq!(guest, vec![Item::Gicd]);
        assert!(overlaps.between(Space::Guest(0), Item::Gicd, Item::Device(0, 0)));
        assert!(!overlaps.between(Space::Guest(1), Item::Gicd, Item::Device(0, 0)), "gpos has no such device");
        assert_eq!(overlaps.with(Space::Guest(5), Item::Console).count(), 0, "no such partition");
    }

    #[test]
    fn a_window_is_in_the_space_of_each_member_and_nowhere_else() {
        let mut s = linked();
        s.partitions.push(s.partitions[0].clone());
        let overlaps = Overlaps::of(&s, true);
        let window = |p| overlaps.find(Space::Guest(p), Item::Channel(2)).is_some();
        assert_eq!((window(0), window(1), window(2)), (true, true, false));
        let host: Vec<Item> = overlaps.with(Space::Physical, Item::Channel(2)).map(|(item, _)| item).collect();
        assert_eq!(host, vec![Item::Ram]);
    }

    #[test]
    fn without_entries_only_the_platform_and_partita_are_collected() {
        let overlaps = Overlaps::of(&linked(), false);
        assert_eq!(overlaps.spans.len(), 5);
        let ram: Vec<Item> = overlaps.with(Space::Physical, Item::Ram).map(|(item, _)| item).collect();
        assert_eq!(ram, vec![Item::Hypervisor]);
    }
}
