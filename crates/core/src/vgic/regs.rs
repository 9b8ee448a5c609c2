//! The distributor (GICD) and redistributors (GICR) a partition sees, as
//! trapped MMIO. A partition reads and configures only the interrupts it
//! owns: its vCPUs' SGIs and PPIs, and the SPIs of its devices. Everything
//! else reads as zero and ignores writes, and a write that tries to change
//! an interrupt it does not own is reported.
//!
//! Pending and active state lives in the vCPUs' queues and list registers,
//! not here. An interrupt backed by a physical line (a timer PPI, a
//! passthrough SPI) keeps level semantics: its pending state is the line's,
//! so it is never latched while disabled, and ISPENDR reads ask the
//! hypervisor for the line. Purely virtual ones (SGIs, doorbells, signals)
//! are latched while disabled and delivered once enabled. ISACTIVER reads
//! as zero, and writes become [`Effect`]s the hypervisor carries out.

use super::{is_timer, DEFAULT_PRIORITY, PRIVATE, PTIMER_INTID, SPI_BASE, VTIMER_INTID};
use alloc::vec::Vec;

pub mod v2;

/// Size of one vCPU's redistributor (RD_base and SGI_base frames).
pub const GICR_FRAME: u64 = 0x2_0000;
/// Size of the distributor's register page Partita emulates.
pub const GICD_SIZE: u64 = 0x1_0000;
const SGI_BASE: u64 = 0x1_0000;
const PIDR2_GICV3: u32 = 0x3 << 4;
const IIDR_ARM: u32 = 0x43b;
/// GICD_CTLR: affinity routing (ARE) and single security state (DS) are
/// fixed on; only the group enables are stored.
const CTLR_ARE: u32 = 1 << 4;
const CTLR_DS: u32 = 1 << 6;
const CTLR_ENABLES: u32 = 0b11;

/// How a guest configured one virtual interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrqConfig {
    pub enabled: bool,
    pub priority: u8,
    pub group1: bool,
    /// Edge-triggered (ICFGR 0b10) rather than level.
    pub edge: bool,
    /// Backed by a physical interrupt whose own pending state is the truth:
    /// a level line that has dropped by the time the guest enables the
    /// interrupt must not be delivered.
    pub hw: bool,
    /// Made pending while disabled (by a write to ISPENDR, or for a purely
    /// virtual interrupt by its source): delivered once enabled.
    pub latched: bool,
}

impl IrqConfig {
    const fn reset(edge: bool, hw: bool) -> Self {
        Self { enabled: false, priority: DEFAULT_PRIORITY, group1: true, edge, hw, latched: false }
    }
}

/// What a guest access asks the hypervisor to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The guest wrote to an interrupt it does not own (ignored).
    Denied { intid: u32 },
    /// Make `intid` pending on `vcpu` (GICD_ISPENDR, GICR_ISPENDR0, or a
    /// latched interrupt that was just enabled).
    Pend { vcpu: usize, intid: u32 },
    /// Withdraw a pending `intid` from `vcpu`.
    Unpend { vcpu: usize, intid: u32 },
    /// An SPI was enabled or disabled: its physical twin follows.
    SpiEnable { intid: u32, enabled: bool },
    /// An SPI now targets `vcpu`.
    SpiRoute { intid: u32, vcpu: usize },
    /// Set or clear the pending state of a passthrough SPI's physical twin:
    /// the physical distributor holds it until the interrupt is enabled and
    /// taken, as for any level interrupt.
    SpiPending { intid: u32, pending: bool },
    /// `vcpu` enabled the interrupt of one of its timers (`intid`): if the
    /// physical PPI was masked while the virtual one was off, unmask it, so
    /// that a line still asserted fires again and a dropped one does not.
    TimerEnabled { vcpu: usize, intid: u32 },
    /// `vcpu` changed whether its private `intid` is enabled, or its
    /// priority: on a direct-delivery core the physical one follows.
    PrivateChanged { vcpu: usize, intid: u32 },
}

/// Whether the physical line behind a virtual interrupt is asserted, for
/// reads of its pending state: the hypervisor knows, the distributor does
/// not.
pub trait Line {
    fn asserted(&self, vcpu: usize, intid: u32) -> bool;
}

impl<F: Fn(usize, u32) -> bool> Line for F {
    fn asserted(&self, vcpu: usize, intid: u32) -> bool {
        self(vcpu, intid)
    }
}

/// One SPI a partition owns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Spi {
    intid: u32,
    config: IrqConfig,
    vcpu: usize,
}

/// A guest MMIO access: `value` is the data of a write, `None` for a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub offset: u64,
    pub size: u8,
    pub value: Option<u64>,
}

/// The virtual GIC state of one partition.
#[derive(Clone, Debug)]
pub struct PartitionGic {
    ctlr: u32,
    spis: Vec<Spi>,
    /// Per vCPU: its 32 private interrupts and whether it asked to sleep.
    private: Vec<([IrqConfig; PRIVATE as usize], bool)>,
}

/// Which register an offset names, and the first INTID it covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Group,
    SetEnable,
    ClearEnable,
    SetPending,
    ClearPending,
    /// ISACTIVER/ICACTIVER: read as zero, writes ignored (active state is the
    /// list registers').
    Active,
    Priority,
    Config,
}

impl Field {
    /// A write changes only the INTIDs whose bits are ones (the set and
    /// clear registers).
    const fn acts_on_ones(self) -> bool {
        matches!(self, Field::SetEnable | Field::ClearEnable | Field::SetPending | Field::ClearPending | Field::Active)
    }

    const fn bits(self) -> u32 {
        match self {
            Field::Priority => 8,
            Field::Config => 2,
            _ => 1,
        }
    }
}

/// The first `count` bits of a 1-bit register's `value`.
fn first_bits(value: u64, count: u32) -> u64 {
    if count >= 64 {
        value
    } else {
        value & ((1u64 << count) - 1)
    }
}

/// The indices of the bits set in `bits`, lowest first.
fn set_bits(mut bits: u64) -> impl Iterator<Item = u32> {
    core::iter::from_fn(move || {
        if bits == 0 {
            return None;
        }
        let n = bits.trailing_zeros();
        bits &= bits - 1;
        Some(n)
    })
}

/// The per-interrupt register banks, at the same offsets in GICD and in a
/// redistributor's SGI frame.
fn bank(offset: u64) -> Option<(Field, u32)> {
    let (field, base, bits) = match offset {
        0x080..0x100 => (Field::Group, 0x080, 1),
        0x100..0x180 => (Field::SetEnable, 0x100, 1),
        0x180..0x200 => (Field::ClearEnable, 0x180, 1),
        0x200..0x280 => (Field::SetPending, 0x200, 1),
        0x280..0x300 => (Field::ClearPending, 0x280, 1),
        0x300..0x400 => (Field::Active, 0x300 + (offset & 0x80), 1),
        0x400..0x800 => (Field::Priority, 0x400, 8),
        0xc00..0xd00 => (Field::Config, 0xc00, 2),
        _ => return None,
    };
    Some((field, ((offset - base) * 8 / bits) as u32))
}

impl PartitionGic {
    /// `devices`: the passthrough SPIs the partition owns, each with the
    /// vCPU it targets first; `virtual_spis`: the purely virtual ones
    /// (doorbells, signals), which target vCPU 0 first.
    pub fn new(vcpus: usize, devices: &[(u32, usize)], virtual_spis: &[u32]) -> Self {
        let mut private = [IrqConfig::reset(false, false); PRIVATE as usize];
        for sgi in private.iter_mut().take(16) {
            sgi.edge = true;
        }
        for timer in [VTIMER_INTID, PTIMER_INTID] {
            private[timer as usize].hw = true;
        }
        let spi = |intid, vcpu, hw| Spi { intid, config: IrqConfig::reset(false, hw), vcpu };
        let passthrough = devices.iter().map(|&(intid, vcpu)| spi(intid, vcpu, true));
        Self {
            ctlr: 0,
            spis: passthrough.chain(virtual_spis.iter().map(|&intid| spi(intid, 0, false))).collect(),
            private: (0..vcpus).map(|_| (private, false)).collect(),
        }
    }

    /// True when this partition owns SPI `intid`.
    pub fn owns_spi(&self, intid: u32) -> bool {
        self.spis.iter().any(|s| s.intid == intid)
    }

    /// The vCPU an owned SPI targets.
    pub fn spi_target(&self, intid: u32) -> Option<usize> {
        self.spis.iter().find(|s| s.intid == intid).map(|s| s.vcpu)
    }

    /// How `vcpu` sees `intid` (private ones per vCPU, SPIs shared).
    pub fn config(&self, vcpu: usize, intid: u32) -> Option<&IrqConfig> {
        if intid < PRIVATE {
            self.private.get(vcpu).map(|(irqs, _)| &irqs[intid as usize])
        } else {
            self.spis.iter().find(|s| s.intid == intid).map(|s| &s.config)
        }
    }

    fn config_mut(&mut self, vcpu: usize, intid: u32) -> Option<&mut IrqConfig> {
        if intid < PRIVATE {
            self.private.get_mut(vcpu).map(|(irqs, _)| &mut irqs[intid as usize])
        } else {
            self.spis.iter_mut().find(|s| s.intid == intid).map(|s| &mut s.config)
        }
    }

    /// Decides whether an interrupt that fired is delivered now: an enabled
    /// one returns its priority. A disabled one is not: a purely virtual
    /// one is latched until enabled, while one backed by a physical line
    /// is left to that line (still asserted once enabled, it fires again).
    pub fn fire(&mut self, vcpu: usize, intid: u32) -> Option<u8> {
        let config = self.config_mut(vcpu, intid)?;
        if config.enabled {
            Some(config.priority)
        } else {
            config.latched |= !config.hw;
            None
        }
    }

    /// A trapped access to the distributor page. `line` says whether the
    /// physical line behind an interrupt (vCPU, INTID) is asserted; only
    /// reads of the pending state ask it.
    pub fn distributor(&mut self, access: Access, effects: &mut impl FnMut(Effect), line: &impl Line) -> u64 {
        let offset = access.offset;
        match (offset, access.value) {
            (0x0000, None) => u64::from(self.ctlr | CTLR_ARE | CTLR_DS),
            (0x0000, Some(value)) => {
                self.ctlr = value as u32 & CTLR_ENABLES;
                0
            }
            (0x0004, None) => u64::from(self.typer()),
            (0x0008, None) => u64::from(IIDR_ARM),
            (0xffe8, None) => u64::from(PIDR2_GICV3),
            (0x6000..0x8000, _) => self.irouter(access, effects),
            _ => match bank(offset) {
                // With affinity routing, the distributor's view of SGIs and
                // PPIs is reserved: the redistributors own them.
                Some((field, first)) if first >= SPI_BASE => self.bank_access(0, field, first, access, effects, line),
                _ => 0,
            },
        }
    }

    /// A trapped access to the redistributor region; `offset` is from the
    /// region's base, one [`GICR_FRAME`] per vCPU. `line` as for
    /// [`PartitionGic::distributor`].
    pub fn redistributor(&mut self, access: Access, effects: &mut impl FnMut(Effect), line: &impl Line) -> u64 {
        let vcpu = (access.offset / GICR_FRAME) as usize;
        if vcpu >= self.private.len() {
            return 0;
        }
        let offset = access.offset % GICR_FRAME;
        let local = Access { offset: offset % SGI_BASE, ..access };
        match (offset, access.value) {
            (0x0004, None) => u64::from(IIDR_ARM),
            (0x0008, None) => self.gicr_typer(vcpu),
            (0x000c, None) => self.gicr_typer(vcpu) >> 32,
            (0x0014, None) => u64::from(self.waker(vcpu)),
            (0x0014, Some(value)) => {
                self.private[vcpu].1 = value & 0b10 != 0;
                0
            }
            (0xffe8, None) => u64::from(PIDR2_GICV3),
            (SGI_BASE.., _) => match bank(local.offset) {
                Some((field, first)) if first < PRIVATE => self.bank_access(vcpu, field, first, local, effects, line),
                _ => 0,
            },
            _ => 0,
        }
    }

    /// ITLinesNumber covers the highest owned SPI; IDbits says 10 bits.
    fn typer(&self) -> u32 {
        let highest = self.spis.iter().map(|s| s.intid).max().unwrap_or(SPI_BASE - 1);
        (9 << 19) | (highest / 32)
    }

    /// Affinity (Aff0 = vCPU index), processor number, and Last on the last frame.
    fn gicr_typer(&self, vcpu: usize) -> u64 {
        let last = if vcpu + 1 == self.private.len() { 1 << 4 } else { 0 };
        (vcpu as u64) << 32 | (vcpu as u64) << 8 | last
    }

    fn waker(&self, vcpu: usize) -> u32 {
        if self.private[vcpu].1 {
            0b110
        } else {
            0
        }
    }

    /// Reads or writes every INTID an access to a per-interrupt bank covers.
    /// Only the INTIDs the partition has are visited, and of a set or
    /// clear register's write only those whose bit is set: a guest's sweep
    /// of a 32-interrupt register (a stock kernel clears every enable and
    /// pending bit at boot) costs what it changes, not 32 lookups.
    fn bank_access(
        &mut self,
        vcpu: usize,
        field: Field,
        first: u32,
        access: Access,
        effects: &mut impl FnMut(Effect),
        line: &impl Line,
    ) -> u64 {
        let bits = field.bits();
        let count = u32::from(access.size) * 8 / bits;
        let mask = (1u64 << bits) - 1;
        let owned = self.owned(vcpu, first, count);
        let mut result = 0;
        let visit = match access.value {
            Some(value) if field.acts_on_ones() => {
                let ones = first_bits(value, count);
                self.deny_raises(field, first, ones & !owned, effects);
                ones & owned
            }
            _ => owned,
        };
        for n in set_bits(visit) {
            let intid = first + n;
            let shift = n * bits;
            match access.value {
                None => result |= self.read_field(vcpu, field, intid, line) << shift,
                Some(value) => self.write_field(vcpu, field, intid, (value >> shift) & mask, effects),
            }
        }
        result
    }

    /// Which of the `count` INTIDs from `first` the partition has, one bit
    /// each: all of a vCPU's private ones, and the SPIs it was given.
    fn owned(&self, vcpu: usize, first: u32, count: u32) -> u64 {
        let all = if count >= 64 { u64::MAX } else { (1u64 << count) - 1 };
        if first < PRIVATE {
            return if vcpu < self.private.len() { all } else { 0 };
        }
        let ids = first..first + count;
        self.spis.iter().filter(|s| ids.contains(&s.intid)).fold(0, |owned, s| owned | 1 << (s.intid - first))
    }

    /// Only enabling or raising another's interrupt is reported: a stock
    /// kernel's distributor set-up disables, clears, deactivates, routes
    /// and configures every SPI that GICD_TYPER covers, and that sweep is
    /// not an attack. Either way, nothing changes.
    fn deny_raises(&self, field: Field, first: u32, others: u64, effects: &mut impl FnMut(Effect)) {
        if matches!(field, Field::SetEnable | Field::SetPending) {
            for n in set_bits(others) {
                if first + n >= SPI_BASE {
                    effects(Effect::Denied { intid: first + n });
                }
            }
        }
    }

    fn read_field(&self, vcpu: usize, field: Field, intid: u32, line: &impl Line) -> u64 {
        let Some(c) = self.config(vcpu, intid) else { return 0 };
        match field {
            Field::Group => u64::from(c.group1),
            Field::SetEnable | Field::ClearEnable => u64::from(c.enabled),
            Field::SetPending | Field::ClearPending => {
                u64::from(c.latched || (c.hw && line.asserted(self.target(vcpu, intid), intid)))
            }
            Field::Active => 0,
            Field::Priority => u64::from(c.priority),
            Field::Config => {
                if c.edge {
                    0b10
                } else {
                    0
                }
            }
        }
    }

    fn write_field(&mut self, vcpu: usize, field: Field, intid: u32, value: u64, effects: &mut impl FnMut(Effect)) {
        let target = self.target(vcpu, intid);
        // `bank_access` visits only the INTIDs the partition has.
        let Some(c) = self.config_mut(vcpu, intid) else { return };
        match field {
            Field::Group => c.group1 = value != 0,
            // Only a change has effects: a guest's clean slate at boot
            // disables 32 interrupts that are all disabled already.
            Field::SetEnable if value != 0 && !c.enabled => {
                c.enabled = true;
                if core::mem::take(&mut c.latched) {
                    effects(Effect::Pend { vcpu: target, intid });
                }
                if intid >= SPI_BASE {
                    effects(Effect::SpiEnable { intid, enabled: true });
                } else {
                    if is_timer(intid) {
                        effects(Effect::TimerEnabled { vcpu, intid });
                    }
                    effects(Effect::PrivateChanged { vcpu, intid });
                }
            }
            Field::ClearEnable if value != 0 && c.enabled => {
                c.enabled = false;
                if intid >= SPI_BASE {
                    effects(Effect::SpiEnable { intid, enabled: false });
                } else {
                    effects(Effect::PrivateChanged { vcpu, intid });
                }
            }
            // A passthrough SPI's pending state is the physical one's.
            Field::SetPending | Field::ClearPending if value != 0 && c.hw && intid >= SPI_BASE => {
                effects(Effect::SpiPending { intid, pending: field == Field::SetPending });
            }
            Field::SetPending if value != 0 => {
                if c.enabled {
                    effects(Effect::Pend { vcpu: target, intid });
                } else {
                    c.latched = true;
                }
            }
            Field::ClearPending if value != 0 => {
                c.latched = false;
                effects(Effect::Unpend { vcpu: target, intid });
            }
            Field::Priority => {
                let changed = c.priority != value as u8;
                c.priority = value as u8;
                if changed && intid < SPI_BASE {
                    effects(Effect::PrivateChanged { vcpu, intid });
                }
            }
            // SGIs are always edge-triggered.
            Field::Config if intid >= 16 => c.edge = value & 0b10 != 0,
            _ => {}
        }
    }

    /// The vCPU an interrupt is delivered to: its own for private ones.
    fn target(&self, vcpu: usize, intid: u32) -> usize {
        if intid < PRIVATE {
            vcpu
        } else {
            self.spi_target(intid).unwrap_or(0)
        }
    }

    /// GICD_IROUTER<n>: 64-bit per SPI; Aff0 names the vCPU. "Any" routing
    /// (bit 31) and unknown affinities go to vCPU 0.
    fn irouter(&mut self, access: Access, effects: &mut impl FnMut(Effect)) -> u64 {
        let intid = ((access.offset - 0x6000) / 8) as u32;
        let high = access.offset % 8 >= 4;
        let vcpus = self.private.len();
        // Routing another's SPI changes nothing and, like the rest of the
        // set-up sweep, is not reported.
        let Some(spi) = self.spis.iter_mut().find(|s| s.intid == intid) else { return 0 };
        match access.value {
            None if high => 0,
            None => spi.vcpu as u64,
            Some(_) if high => 0,
            Some(value) => {
                let aff0 = (value & 0xff) as usize;
                let any = value & (1 << 31) != 0;
                spi.vcpu = if any || value & 0xff_ffff_ff00 != 0 || aff0 >= vcpus { 0 } else { aff0 };
                effects(Effect::SpiRoute { intid, vcpu: spi.vcpu });
                0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn read(offset: u64) -> Access {
        Access { offset, size: 4, value: None }
    }

    fn write(offset: u64, value: u64) -> Access {
        Access { offset, size: 4, value: Some(value) }
    }

    fn run(gic: &mut PartitionGic, access: Access, redist: bool) -> (u64, Vec<Effect>) {
        run_with_lines(gic, access, redist, &[])
    }

    /// `asserted`: the (vCPU, INTID) lines that are high.
    fn run_with_lines(
        gic: &mut PartitionGic,
        access: Access,
        redist: bool,
        asserted: &[(usize, u32)],
    ) -> (u64, Vec<Effect>) {
        let mut effects = vec![];
        let line = |vcpu, intid| asserted.contains(&(vcpu, intid));
        let value = if redist {
            gic.redistributor(access, &mut |e| effects.push(e), &line)
        } else {
            gic.distributor(access, &mut |e| effects.push(e), &line)
        };
        (value, effects)
    }

    #[test]
    fn identification_registers() {
        let mut gic = PartitionGic::new(2, &[(40, 0), (71, 1)], &[]);
        assert_eq!(run(&mut gic, read(0xffe8), false).0, 0x30);
        assert_eq!(run(&mut gic, read(0x0004), false).0 & 0x1f, 2, "ITLinesNumber covers INTID 71");
        assert_eq!(run(&mut gic, read(0x0000), false).0, 0x50, "ARE and DS read as one");
        assert_eq!(run(&mut gic, read(0x0008), true).0, 0, "vCPU 0: affinity 0, not last");
        assert_eq!(run(&mut gic, read(GICR_FRAME + 8), true).0, (1 << 32) | (1 << 8) | (1 << 4));
        assert_eq!(run(&mut gic, read(2 * GICR_FRAME + 8), true).0, 0, "no third frame");
    }

    #[test]
    fn enabling_an_owned_spi_follows_to_the_physical_one() {
        let mut gic = PartitionGic::new(1, &[(40, 0)], &[]);
        let (_, effects) = run(&mut gic, write(0x104, 1 << 8), false);
        assert_eq!(effects, [Effect::SpiEnable { intid: 40, enabled: true }]);
        assert_eq!(run(&mut gic, read(0x104), false).0, 1 << 8);
        assert_eq!(run(&mut gic, read(0x184), false).0, 1 << 8);
    }

    #[test]
    fn unowned_interrupts_read_as_zero_and_only_raising_them_is_reported() {
        let mut gic = PartitionGic::new(1, &[(40, 0)], &[]);
        // Linux's distributor set-up over INTID 41: disable, clear pending
        // and active, priority, configuration, group, routing.
        let sweep = [
            write(0x184, u32::MAX.into()),
            write(0x284, u32::MAX.into()),
            write(0x384, u32::MAX.into()),
            Access { offset: 0x400 + 41, size: 1, value: Some(0xa0) },
            write(0xc08, 0),
            write(0x084, u32::MAX.into()),
            Access { offset: 0x6000 + 41 * 8, size: 8, value: Some(0) },
        ];
        for access in sweep {
            let (_, effects) = run(&mut gic, access, false);
            assert!(effects.iter().all(|e| *e != Effect::Denied { intid: 41 }), "{access:?}: {effects:?}");
        }
        assert_eq!(run(&mut gic, write(0x104, 1 << 9), false).1, [Effect::Denied { intid: 41 }], "ISENABLER");
        assert_eq!(run(&mut gic, write(0x204, 1 << 9), false).1, [Effect::Denied { intid: 41 }], "ISPENDR");
        assert_eq!(run(&mut gic, Access { offset: 0x400 + 41, size: 1, value: None }, false).0, 0);
        // The owner's configuration is untouched.
        assert_eq!(gic.config(0, 40).unwrap().priority, DEFAULT_PRIORITY);
        assert!(gic.config(0, 40).is_some_and(|c| !c.enabled));
    }

    #[test]
    fn a_register_sweep_acts_on_the_owned_ones_alone() {
        let mut gic = PartitionGic::new(1, &[(40, 0), (63, 0)], &[]);
        let (_, effects) = run(&mut gic, write(0x104, u32::MAX.into()), false);
        let denied = (32..64).filter(|i| ![40, 63].contains(i)).map(|intid| Effect::Denied { intid });
        let enabled = [40, 63].map(|intid| Effect::SpiEnable { intid, enabled: true });
        let mut expected: Vec<Effect> = denied.collect();
        expected.extend(enabled);
        assert_eq!(effects, expected, "every other raise reported, each owned one enabled");
        assert_eq!(run(&mut gic, read(0x104), false).0, 1 << 8 | 1 << 31);
        // Zeros in a set or clear register change nothing.
        assert_eq!(run(&mut gic, write(0x184, 1 << 31), false).1, [Effect::SpiEnable { intid: 63, enabled: false }]);
        assert_eq!(run(&mut gic, read(0x104), false).0, 1 << 8);
        // A group write's zeros do change the owned ones.
        run(&mut gic, write(0x084, u32::MAX.into()), false);
        run(&mut gic, write(0x084, 1 << 8), false);
        assert_eq!(run(&mut gic, read(0x084), false).0, 1 << 8);
    }

    #[test]
    fn priorities_by_byte_and_by_word() {
        let mut gic = PartitionGic::new(1, &[(40, 0)], &[]);
        run(&mut gic, Access { offset: 0x400 + 40, size: 1, value: Some(0x30) }, false);
        assert_eq!(run(&mut gic, read(0x400 + 40), false).0, 0x30);
        run(&mut gic, write(SGI_BASE + 0x400 + 8, 0x10_20_30_40), true);
        assert_eq!(gic.config(0, 8).unwrap().priority, 0x40);
        assert_eq!(gic.config(0, 11).unwrap().priority, 0x10);
    }

    #[test]
    fn a_virtual_interrupt_pending_while_disabled_is_latched_until_enabled() {
        let mut gic = PartitionGic::new(2, &[], &[48]);
        assert_eq!(gic.fire(1, 5), None);
        assert_eq!(run(&mut gic, read(GICR_FRAME + SGI_BASE + 0x200), true).0, 1 << 5);
        let (_, effects) = run(&mut gic, write(GICR_FRAME + SGI_BASE + 0x100, 1 << 5), true);
        assert_eq!(effects, [Effect::Pend { vcpu: 1, intid: 5 }, Effect::PrivateChanged { vcpu: 1, intid: 5 }]);
        assert_eq!(gic.fire(1, 5), Some(DEFAULT_PRIORITY));
        assert_eq!(gic.fire(0, 5), None, "vCPU 0's SGI is its own");
        // A doorbell rung while disabled, as well.
        assert_eq!(gic.fire(0, 48), None);
        assert_eq!(run(&mut gic, read(0x204), false).0, 1 << 16);
        assert_eq!(run(&mut gic, write(0x104, 1 << 16), false).1[0], Effect::Pend { vcpu: 0, intid: 48 });
    }

    #[test]
    fn a_private_interrupt_s_enable_and_priority_changes_are_reported() {
        let mut gic = PartitionGic::new(2, &[(40, 0)], &[]);
        let (_, effects) = run(&mut gic, write(GICR_FRAME + SGI_BASE + 0x180, 1 << 3), true);
        assert_eq!(effects, [], "disabling a disabled one changes nothing");
        let (_, effects) = run(&mut gic, write(GICR_FRAME + SGI_BASE + 0x100, 1 << 3), true);
        assert_eq!(effects, [Effect::PrivateChanged { vcpu: 1, intid: 3 }]);
        let (_, effects) = run(&mut gic, write(GICR_FRAME + SGI_BASE + 0x100, 1 << 3), true);
        assert_eq!(effects, [], "nor enabling an enabled one");
        let (_, effects) = run(&mut gic, write(GICR_FRAME + SGI_BASE + 0x180, u32::MAX.into()), true);
        assert_eq!(effects, [Effect::PrivateChanged { vcpu: 1, intid: 3 }], "a sweep reports the one it disables");
        let (_, effects) = run(&mut gic, Access { offset: SGI_BASE + 0x400 + 27, size: 1, value: Some(0x40) }, true);
        assert_eq!(effects, [Effect::PrivateChanged { vcpu: 0, intid: 27 }]);
        let (_, effects) = run(&mut gic, Access { offset: SGI_BASE + 0x400 + 27, size: 1, value: Some(0x40) }, true);
        assert_eq!(effects, [], "an unchanged priority");
        let (_, effects) = run(&mut gic, Access { offset: 0x400 + 40, size: 1, value: Some(0x40) }, false);
        assert_eq!(effects, [], "an SPI's priority is not private");
    }

    #[test]
    fn a_timer_that_fires_while_disabled_is_left_to_its_line() {
        let mut gic = PartitionGic::new(2, &[], &[]);
        for timer in [27, 30] {
            assert_eq!(gic.fire(1, timer), None);
            let ispendr0 = read(GICR_FRAME + SGI_BASE + 0x200);
            assert_eq!(run(&mut gic, ispendr0, true).0, 0, "INTID {timer}: nothing latched, the line is low");
            let (pending, _) = run_with_lines(&mut gic, ispendr0, true, &[(1, timer)]);
            assert_eq!(pending, 1 << timer, "the line shows while the interrupt is disabled");
            let (_, effects) = run(&mut gic, write(GICR_FRAME + SGI_BASE + 0x100, 1 << timer), true);
            let enabled =
                [Effect::TimerEnabled { vcpu: 1, intid: timer }, Effect::PrivateChanged { vcpu: 1, intid: timer }];
            assert_eq!(effects, enabled, "no latched delivery");
            assert_eq!(gic.fire(1, timer), Some(DEFAULT_PRIORITY));
        }
        // The guest's own ISPENDR write is a software pending state, kept.
        run(&mut gic, write(SGI_BASE + 0x200, 1 << 30), true);
        let (_, effects) = run(&mut gic, write(SGI_BASE + 0x100, 1 << 30), true);
        let enabled = [
            Effect::Pend { vcpu: 0, intid: 30 },
            Effect::TimerEnabled { vcpu: 0, intid: 30 },
            Effect::PrivateChanged { vcpu: 0, intid: 30 },
        ];
        assert_eq!(effects, enabled);
    }

    #[test]
    fn a_passthrough_spi_keeps_its_pending_state_in_the_physical_gic() {
        let mut gic = PartitionGic::new(2, &[(34, 1)], &[]);
        assert_eq!(gic.fire(1, 34), None);
        assert_eq!(run(&mut gic, read(0x204), false).0, 0, "not latched while disabled");
        assert_eq!(run_with_lines(&mut gic, read(0x204), false, &[(1, 34)]).0, 1 << 2, "the line, at its vCPU");
        let (_, effects) = run(&mut gic, write(0x104, 1 << 2), false);
        assert_eq!(effects, [Effect::SpiEnable { intid: 34, enabled: true }], "no latched delivery");
        assert_eq!(run(&mut gic, write(0x204, 1 << 2), false).1, [Effect::SpiPending { intid: 34, pending: true }]);
        assert_eq!(run(&mut gic, write(0x284, 1 << 2), false).1, [Effect::SpiPending { intid: 34, pending: false }]);
    }

    #[test]
    fn spi_pending_goes_to_its_routed_vcpu() {
        let mut gic = PartitionGic::new(2, &[], &[40]);
        let (_, effects) = run(&mut gic, write(0x6000 + 40 * 8, 1), false);
        assert_eq!(effects, [Effect::SpiRoute { intid: 40, vcpu: 1 }]);
        run(&mut gic, write(0x104, 1 << 8), false);
        let (_, effects) = run(&mut gic, write(0x204, 1 << 8), false);
        assert_eq!(effects, [Effect::Pend { vcpu: 1, intid: 40 }]);
        assert_eq!(run(&mut gic, read(0x6000 + 40 * 8), false).0, 1);
        let (_, effects) = run(&mut gic, write(0x6000 + 40 * 8, 1 << 31), false);
        assert_eq!(effects, [Effect::SpiRoute { intid: 40, vcpu: 0 }]);
    }

    #[test]
    fn waker_reflects_sleep_requests() {
        let mut gic = PartitionGic::new(1, &[], &[]);
        run(&mut gic, write(0x14, 0b10), true);
        assert_eq!(run(&mut gic, read(0x14), true).0, 0b110);
        run(&mut gic, write(0x14, 0), true);
        assert_eq!(run(&mut gic, read(0x14), true).0, 0);
    }

    #[test]
    fn distributor_view_of_private_interrupts_is_reserved() {
        let mut gic = PartitionGic::new(1, &[], &[]);
        let (_, effects) = run(&mut gic, write(0x100, u64::from(u32::MAX)), false);
        assert!(effects.is_empty());
        assert!(!gic.config(0, 5).unwrap().enabled);
    }
}
