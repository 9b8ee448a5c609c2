//! The same partition GIC seen through GICv2's distributor (the GIC-400 of
//! a ZynqMP): no redistributors, so a vCPU's SGIs and PPIs are banked in
//! the distributor itself, routed by ITARGETSR's CPU masks rather than
//! IROUTER's affinities, and SGIs are sent by writing GICD_SGIR rather
//! than a system register. The state, the ownership rules and the effects
//! are [`PartitionGic`]'s, unchanged.

use super::{bank, Access, Effect, Line, PartitionGic, Reach, CTLR_ENABLES, IIDR_ARM};
use crate::vgic::PRIVATE;

/// GICD_PIDR2: architecture version 2.
const PIDR2_GICV2: u64 = 0x2 << 4;
/// ITARGETSR: one byte per INTID.
const ITARGETSR: core::ops::Range<u64> = 0x800..0xc00;
const SGIR: u64 = 0xf00;
/// GICD_IGROUPR: reads as zero, ignores writes.
const IGROUPR: core::ops::Range<u64> = 0x080..0x100;
/// GICv2 names at most eight CPUs, one bit each in a target mask.
pub const MAX_CPUS: usize = 8;

/// The SGI a GICD_SGIR value sends and the vCPUs it goes to, as a mask:
/// TargetListFilter 0 the CPU list, 1 every other vCPU, 2 the sender only.
pub const fn sgir_targets(value: u32, vcpus: usize, sender: usize) -> (u32, u32) {
    let intid = value & 0xf;
    let all: u32 = (1 << if vcpus < MAX_CPUS { vcpus } else { MAX_CPUS }) - 1;
    let mask = match (value >> 24) & 0b11 {
        0 => (value >> 16) & 0xff,
        1 => !(1 << sender),
        2 => 1 << sender,
        _ => 0,
    };
    (intid, mask & all)
}

impl PartitionGic {
    /// A trapped access by `vcpu` to its GICv2 distributor page.
    pub fn distributor_v2(
        &mut self,
        vcpu: usize,
        access: Access,
        effects: &mut impl FnMut(Effect),
        line: &impl Line,
    ) -> u64 {
        if vcpu >= self.private.len() {
            return 0;
        }
        match (access.offset, access.value) {
            (0x000, None) => u64::from(self.ctlr),
            (0x000, Some(value)) => {
                self.ctlr = value as u32 & CTLR_ENABLES;
                0
            }
            (0x004, None) => u64::from(self.typer_v2()),
            (0x008, None) => u64::from(IIDR_ARM),
            (0xfe8, None) => PIDR2_GICV2,
            (SGIR, Some(value)) => {
                self.send_sgi(vcpu, value as u32, effects);
                0
            }
            // Every interrupt is in group 0 (see `lr::gicv2`).
            (offset, _) if IGROUPR.contains(&offset) => 0,
            (offset, _) if ITARGETSR.contains(&offset) => self.itargetsr(vcpu, access, effects),
            (offset, _) => match bank(offset) {
                Some((field, first)) => self.bank_access(vcpu, Reach::Both, field, first, access, effects, line),
                None => 0,
            },
        }
    }

    /// ITLinesNumber covers the highest owned SPI; CPUNumber the vCPUs.
    fn typer_v2(&self) -> u32 {
        let cpus = self.private.len().clamp(1, MAX_CPUS) as u32;
        (self.typer() & 0x1f) | (cpus - 1) << 5
    }

    /// One byte per INTID: a private one reads as its own vCPU's bit and
    /// ignores writes; an owned SPI goes to the lowest vCPU its mask names
    /// (Partita delivers an SPI to one vCPU), and a mask naming none
    /// changes nothing.
    fn itargetsr(&mut self, vcpu: usize, access: Access, effects: &mut impl FnMut(Effect)) -> u64 {
        let first = (access.offset - ITARGETSR.start) as u32;
        let vcpus = self.private.len().min(MAX_CPUS);
        let mut result = 0;
        for n in 0..u32::from(access.size) {
            let intid = first + n;
            let byte = access.value.map(|v| (v >> (8 * n)) as u32 & 0xff);
            let bit = if intid < PRIVATE {
                vcpu
            } else {
                let Some(target) = self.spi_target(intid) else { continue };
                match byte.map(|b| b & ((1 << vcpus) - 1)).filter(|&m| m != 0) {
                    Some(mask) => {
                        let lowest = mask.trailing_zeros() as usize;
                        self.route(intid, lowest, effects);
                        lowest
                    }
                    None => target,
                }
            };
            if bit < MAX_CPUS {
                result |= 1u64 << bit << (8 * n);
            }
        }
        if access.value.is_some() {
            0
        } else {
            result
        }
    }

    /// An SGI from `sender`: each target's copy is pending at once if
    /// enabled there, latched until it is otherwise.
    fn send_sgi(&mut self, sender: usize, value: u32, effects: &mut impl FnMut(Effect)) {
        let (intid, mask) = sgir_targets(value, self.private.len(), sender);
        for target in (0..self.private.len().min(MAX_CPUS)).filter(|t| mask & (1 << t) != 0) {
            if let Some(priority) = self.private[target].0.fire(intid) {
                effects(Effect::Pend { vcpu: target, intid, priority });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    fn access(gic: &mut PartitionGic, vcpu: usize, offset: u64, size: u8, value: Option<u64>) -> (u64, Vec<Effect>) {
        let mut effects = vec![];
        let line = |_: usize, _: u32| false;
        let result = gic.distributor_v2(vcpu, Access { offset, size, value }, &mut |e| effects.push(e), &line);
        (result, effects)
    }

    #[test]
    fn identification_says_gicv2_with_its_cpus_and_lines() {
        let mut gic = PartitionGic::new(2, &[(53, 0)], &[]);
        assert_eq!(access(&mut gic, 0, 0xfe8, 4, None).0, 0x20);
        assert_eq!(access(&mut gic, 0, 0x004, 4, None).0, 1 | 1 << 5, "INTID 53 needs two lines of 32; two CPUs");
        access(&mut gic, 1, 0x000, 4, Some(0b11));
        assert_eq!(access(&mut gic, 0, 0x000, 4, None).0, 0b11, "CTLR is the partition's, not a vCPU's");
    }

    #[test]
    fn every_interrupt_is_in_group_0() {
        let mut gic = PartitionGic::new(1, &[(53, 0)], &[]);
        assert_eq!(access(&mut gic, 0, 0x080, 4, None).0, 0);
        assert!(access(&mut gic, 0, 0x084, 4, Some(u64::from(u32::MAX))).1.is_empty());
        assert_eq!(access(&mut gic, 0, 0x084, 4, None).0, 0, "writes are ignored");
    }

    #[test]
    fn private_interrupts_are_banked_per_vcpu() {
        let mut gic = PartitionGic::new(2, &[], &[]);
        access(&mut gic, 1, 0x100, 4, Some(1 << 27));
        assert!(gic.config(1, 27).unwrap().enabled && !gic.config(0, 27).unwrap().enabled);
        assert_eq!(access(&mut gic, 1, 0x800 + 24, 4, None).0, 0x02020202, "a PPI targets its own vCPU");
        assert_eq!(access(&mut gic, 0, 0x800, 4, None).0, 0x01010101);
        access(&mut gic, 0, 0x800, 4, Some(0x02020202));
        assert_eq!(access(&mut gic, 0, 0x800, 4, None).0, 0x01010101, "read-only");
    }

    #[test]
    fn an_owned_spi_is_routed_by_its_target_byte() {
        let mut gic = PartitionGic::new(2, &[(53, 0)], &[]);
        assert_eq!(access(&mut gic, 0, 0x800 + 53, 1, None).0, 0x01);
        let (_, effects) = access(&mut gic, 0, 0x800 + 53, 1, Some(0b110));
        assert_eq!(effects, [Effect::SpiRoute { intid: 53, vcpu: 1 }], "the lowest vCPU named");
        assert_eq!(gic.spi_target(53), Some(1));
        assert!(access(&mut gic, 0, 0x800 + 53, 1, Some(0b100)).1.is_empty(), "no such vCPU: unchanged");
        assert!(access(&mut gic, 0, 0x800 + 54, 1, Some(1)).1.is_empty(), "not its SPI");
        assert_eq!(access(&mut gic, 0, 0x800 + 52, 4, None).0, 0x0200, "INTID 53's byte of the word");
    }

    #[test]
    fn sgir_pends_enabled_copies_and_latches_the_others() {
        let mut gic = PartitionGic::new(3, &[], &[]);
        for vcpu in [0, 2] {
            access(&mut gic, vcpu, 0x100, 4, Some(1 << 5));
        }
        let (_, effects) = access(&mut gic, 0, 0xf00, 4, Some(1 << 24 | 5));
        assert_eq!(
            effects,
            [Effect::Pend { vcpu: 2, intid: 5, priority: 0xa0 }],
            "every other: vCPU 1 has it disabled"
        );
        assert!(gic.config(1, 5).unwrap().latched);
        let (_, effects) = access(&mut gic, 1, 0x100, 4, Some(1 << 5));
        assert!(
            effects.contains(&Effect::Pend { vcpu: 1, intid: 5, priority: 0xa0 }),
            "delivered once enabled: {effects:?}"
        );
        assert_eq!(access(&mut gic, 2, 0xf00, 4, Some(0b101 << 16 | 5)).1.len(), 2, "by list");
        assert_eq!(
            access(&mut gic, 2, 0xf00, 4, Some(2 << 24 | 5)).1,
            [Effect::Pend { vcpu: 2, intid: 5, priority: 0xa0 }]
        );
    }

    #[test]
    fn sgir_target_masks() {
        assert_eq!(sgir_targets(0x00_03_00_07, 2, 0), (7, 0b11));
        assert_eq!(sgir_targets(0x00_f0_00_01, 2, 0), (1, 0), "CPUs 4-7 do not exist");
        assert_eq!(sgir_targets(0x01_00_00_02, 4, 1), (2, 0b1101));
        assert_eq!(sgir_targets(0x02_00_00_02, 4, 3), (2, 0b1000));
        assert_eq!(sgir_targets(0x03_ff_00_02, 4, 3), (2, 0), "reserved filter");
    }
}
