//! A direct partition's SGI answered from the vector (docs/interrupts.md).
//!
//! A direct partition's write to ICC_SGI1R_EL1 still traps, so that it can
//! name only its own vCPUs and only the SGIs that are not Partita's. The
//! check and the physical send are done by the EL2 vector itself
//! (`partita_arch::exception`), from a route the hypervisor gives each
//! pCPU as a direct vCPU enters it. This module builds that route and
//! states, as [`SgiRoute::accept`], the decision the assembly takes, so
//! that it can be tested here: every value it accepts means, under
//! [`super::sgi_targets`], exactly the SGI and targets the assembly sends
//! to; everything else goes on to the hypervisor's full answer.

use crate::config::limits::MAX_VCPUS_PER_PARTITION;

/// ICC_SGI1R_EL1: the target list (Aff0 values 0-15 under Aff1-3 and RS).
pub const TARGET_LIST: u64 = 0xffff;
/// ICC_SGI1R_EL1: where the INTID sits, and its field.
pub const INTID_SHIFT: u32 = 24;
pub const INTID: u64 = 0xf << INTID_SHIFT;

// The vector walks the target list, one bit per vCPU.
const _: () = assert!(MAX_VCPUS_PER_PARTITION <= 16);

/// What the vector needs to answer one partition's SGIs on one pCPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgiRoute {
    /// Per vCPU of the partition, the ICC_SGI1R_EL1 value (INTID 0) that
    /// names its home pCPU alone.
    pub targets: [u64; MAX_VCPUS_PER_PARTITION],
    /// The bits an accepted value leaves clear: all but the INTID and the
    /// target-list bits of vCPUs that have a physical target. IRM, RS,
    /// Aff1-3 and the reserved bits are among them.
    pub forbidden: u64,
    /// Bit n set: the partition may send SGI n.
    pub allowed: u64,
}

impl SgiRoute {
    /// Nothing accepted, since no SGI is allowed: every write goes on to
    /// the full answer. All zeros, as a pCPU's route starts.
    pub const NONE: SgiRoute = SgiRoute { targets: [0; MAX_VCPUS_PER_PARTITION], forbidden: 0, allowed: 0 };

    /// The route of a partition whose vCPU `i` has its home on the pCPU
    /// whose MPIDR_EL1 is `homes[i]`, `None` while that pCPU is not up (its
    /// SGIs take the full path, which drops them as well). `reserved`: the
    /// SGIs that are Partita's, bit n for SGI n.
    pub fn new(homes: impl IntoIterator<Item = Option<u64>>, reserved: u16) -> SgiRoute {
        let mut route = SgiRoute { forbidden: !INTID, allowed: u64::from(!reserved), ..SgiRoute::NONE };
        for (vcpu, mpidr) in homes.into_iter().enumerate().take(MAX_VCPUS_PER_PARTITION) {
            if let Some(mpidr) = mpidr {
                route.targets[vcpu] = sgi1r_target(mpidr);
                route.forbidden &= !(1 << vcpu);
            }
        }
        route
    }

    /// Whether every one of `vcpus` vCPUs has its physical target.
    pub fn complete(&self, vcpus: usize) -> bool {
        let all = (1u64 << vcpus.min(MAX_VCPUS_PER_PARTITION)) - 1;
        self.forbidden & all == 0
    }

    /// The vector's decision on the value a vCPU writes: the SGI and the
    /// vCPUs (a bit each) it sends to, or `None` for the full answer.
    /// An empty target list is accepted and sends nothing, as on hardware.
    pub fn accept(&self, value: u64) -> Option<(u32, u16)> {
        if value & self.forbidden != 0 {
            return None;
        }
        let intid = ((value & INTID) >> INTID_SHIFT) as u32;
        if self.allowed >> intid & 1 == 0 {
            return None;
        }
        Some((intid, (value & TARGET_LIST) as u16))
    }

    /// The physical ICC_SGI1R_EL1 value that sends SGI `intid` to `vcpu`'s
    /// home pCPU: what the vector writes for each target.
    pub fn physical(&self, vcpu: usize, intid: u32) -> u64 {
        self.targets[vcpu] | u64::from(intid & 0xf) << INTID_SHIFT
    }
}

/// The ICC_SGI1R_EL1 fields that name the PE with this MPIDR_EL1 alone:
/// Aff3, Aff2, Aff1, and Aff0 as range selector (its high nibble) and
/// target-list bit (its low one).
pub const fn sgi1r_target(mpidr: u64) -> u64 {
    let aff0 = mpidr & 0xff;
    let aff1 = (mpidr >> 8) & 0xff;
    let aff2 = (mpidr >> 16) & 0xff;
    let aff3 = (mpidr >> 32) & 0xff;
    aff3 << 48 | (aff0 >> 4) << 44 | aff2 << 32 | aff1 << 16 | 1 << (aff0 & 0xf)
}

#[cfg(test)]
mod tests {
    use super::super::sgi_targets;
    use super::*;
    use proptest::prelude::*;

    /// SGI 15 is Partita's kick on a direct core.
    const KICK: u16 = 1 << 15;

    fn pair() -> SgiRoute {
        SgiRoute::new([Some(0x8000_0002), Some(0x8000_0003)], KICK)
    }

    #[test]
    fn a_partitions_own_sgis_go_to_its_vcpus_homes() {
        let route = pair();
        assert_eq!(route.accept(3 << 24 | 0b01), Some((3, 0b01)));
        assert_eq!(route.accept(0b11), Some((0, 0b11)));
        assert_eq!(route.accept(14 << 24 | 0b10), Some((14, 0b10)));
        assert_eq!(route.physical(0, 3), 3 << 24 | 1 << 2);
        assert_eq!(route.physical(1, 14), 14 << 24 | 1 << 3);
        assert!(route.complete(2));
        assert_eq!(route.accept(5 << 24), Some((5, 0)), "an empty list sends nothing, as on hardware");
    }

    #[test]
    fn everything_else_goes_on_to_the_full_answer() {
        let route = pair();
        assert_eq!(route.accept(15 << 24 | 0b01), None, "Partita's SGI");
        assert_eq!(route.accept(1 << 24 | 0b100), None, "no vCPU 2");
        assert_eq!(route.accept(1 << 24 | 1 << 15), None, "no vCPU 15");
        assert_eq!(route.accept(1 << 40 | 1 << 24), None, "IRM: every other vCPU");
        assert_eq!(route.accept(1 << 44 | 1 << 24 | 1), None, "RS 1: Aff0 16-31");
        for aff in [16, 32, 48] {
            assert_eq!(route.accept(1 << aff | 1 << 24 | 1), None, "an Aff{} other than 0", aff / 16);
        }
        assert_eq!(route.accept(1 << 63 | 1), None, "a reserved bit");
        assert_eq!(SgiRoute::NONE.accept(0), None, "no route: not even a write of zero");
    }

    #[test]
    fn a_vcpu_whose_home_is_not_up_yet_goes_on_to_the_full_answer() {
        let route = SgiRoute::new([Some(1), None, Some(3)], KICK);
        assert_eq!(route.accept(0b101), Some((0, 0b101)));
        assert_eq!(route.accept(0b010), None);
        assert!(!route.complete(3) && route.complete(1));
    }

    #[test]
    fn a_target_names_its_pe_by_every_affinity_level() {
        assert_eq!(sgi1r_target(0x8000_0000), 1);
        assert_eq!(sgi1r_target(0x0000_0105), 1 << 16 | 1 << 5);
        assert_eq!(sgi1r_target(0x12_0034_0517), 0x12 << 48 | 1 << 44 | 0x34 << 32 | 0x05 << 16 | 1 << 7);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, failure_persistence: None, ..ProptestConfig::default() })]

        /// What the vector sends is what the full answer would: the same
        /// SGI to the same vCPUs, never one of Partita's, never a vCPU
        /// without a target.
        #[test]
        fn an_accepted_value_means_what_the_full_answer_reads(
            value in prop_oneof![any::<u64>(), (0..16u64, 0..0x1_0000u64).prop_map(|(i, l)| i << 24 | l)],
            vcpus in 1..=MAX_VCPUS_PER_PARTITION,
            up in any::<u8>(),
            reserved in any::<u16>(),
            sender in 0..MAX_VCPUS_PER_PARTITION,
        ) {
            let homes = (0..vcpus).map(|i| (up >> i & 1 == 1).then_some(0x100 + i as u64));
            let route = SgiRoute::new(homes, reserved);
            if let Some((intid, list)) = route.accept(value) {
                prop_assert_eq!(sgi_targets(value, vcpus, sender % vcpus), (intid, u32::from(list)));
                prop_assert!(reserved >> intid & 1 == 0);
                prop_assert!(u64::from(list) & !u64::from(up) == 0);
                for vcpu in (0..vcpus).filter(|v| list >> v & 1 == 1) {
                    prop_assert_eq!(route.physical(vcpu, intid), u64::from(intid) << 24 | 1 << 16 | 1 << vcpu);
                }
            }
        }
    }
}
