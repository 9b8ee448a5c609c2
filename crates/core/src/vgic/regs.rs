//! The distributor (GICD) and redistributors (GICR) a partition sees, as
//! trapped MMIO. A partition reads and configures only the interrupts it
//! owns: its vCPUs' SGIs and PPIs, and the SPIs of its devices. Everything
//! else reads as zero and ignores writes, and a write that tries to raise
//! an interrupt it does not own is reported.
//!
//! The configuration is kept in [`Bank`]s of 32 interrupts, as the
//! registers lay it out: one per vCPU for its private interrupts, one per
//! 32 SPIs up to the highest the partition owns, so finding an interrupt's
//! state is an index, and an access is a few operations per bank it
//! covers.
//!
//! Pending and active state lives in the vCPUs' queues and list registers,
//! not here. An interrupt backed by a physical line (a timer PPI, a
//! passthrough SPI) keeps level semantics: its pending state is the line's,
//! so it is never latched while disabled, and ISPENDR reads ask the
//! hypervisor for the line. Purely virtual ones (SGIs, doorbells, signals)
//! are latched while disabled and delivered once enabled. ISACTIVER reads
//! as zero, and writes become [`Effect`]s the hypervisor carries out.

use super::bank::{config_of, edges_of, ones, span, Bank, WIDTH};
use super::{DEFAULT_PRIORITY, PRIVATE, PTIMER_INTID, SPI_BASE, VTIMER_INTID};
use crate::config::limits::MAX_VCPUS_PER_PARTITION;
use alloc::vec;
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

/// The most effects one access yields: an 8-byte write to ISENABLER
/// covering a vCPU's bank and an SPI bank (GICv2), every interrupt of both
/// latched. Per bank: one pending interrupt each (32), the report of
/// unowned ones, the enable that follows and the two timers.
pub const MAX_EFFECTS: usize = 2 * (WIDTH as usize + 3);

/// How a guest configured one virtual interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrqConfig {
    pub enabled: bool,
    pub priority: u8,
    pub group1: bool,
    /// Edge-triggered (ICFGR 0b10) rather than level.
    pub edge: bool,
    /// Backed by a physical interrupt (see [`Bank::hw`]).
    pub hw: bool,
    /// Made pending while disabled: delivered once enabled.
    pub latched: bool,
}

/// What a guest access asks the hypervisor to do. Those that concern
/// several interrupts name a bank by its first INTID and the interrupts
/// in it by a mask, bit n for INTID `first + n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// The guest tried to enable or make pending an interrupt it does not
    /// own, `intid` the first of an access (ignored).
    Denied { intid: u32 },
    /// Make `intid` pending on `vcpu` at `priority` (GICD_ISPENDR,
    /// GICR_ISPENDR0, or a latched interrupt that was just enabled).
    Pend { vcpu: usize, intid: u32, priority: u8 },
    /// Withdraw the software pending state of `mask` from `vcpu`.
    Unpend { vcpu: usize, first: u32, mask: u32 },
    /// Passthrough SPIs were enabled or disabled: their physical twins
    /// follow.
    SpiEnable { first: u32, mask: u32, enabled: bool },
    /// A passthrough SPI now targets `vcpu`.
    SpiRoute { intid: u32, vcpu: usize },
    /// Set or clear the pending state of passthrough SPIs' physical twins:
    /// the physical distributor holds it until the interrupt is enabled and
    /// taken, as for any level interrupt.
    SpiPending { first: u32, mask: u32, pending: bool },
    /// `vcpu` enabled the interrupt of one of its timers (`intid`): if the
    /// physical PPI was masked while the virtual one was off, unmask it, so
    /// that a line still asserted fires again and a dropped one does not.
    TimerEnabled { vcpu: usize, intid: u32 },
    /// `vcpu` enabled or disabled its private interrupts `mask`: on a
    /// direct-delivery core the physical ones follow.
    PrivateEnable { vcpu: usize, mask: u32, enabled: bool },
    /// `vcpu` changed the priority of its private `intid`: the same.
    PrivatePriority { vcpu: usize, intid: u32, priority: u8 },
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
    /// INTIDs 32 onwards, a bank per 32 up to the highest owned SPI's.
    spis: Vec<Bank>,
    /// Per vCPU: its 32 private interrupts and whether it asked to sleep.
    private: Vec<(Bank, bool)>,
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
    const fn bits(self) -> u32 {
        match self {
            Field::Priority => 8,
            Field::Config => 2,
            _ => 1,
        }
    }
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

/// Which INTIDs a frame's banks reach: a GICv3 distributor's the SPIs
/// only (with affinity routing its view of SGIs and PPIs is reserved), a
/// redistributor's the private ones only, a GICv2 distributor's both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    Spis,
    Private,
    Both,
}

impl Reach {
    const fn covers(self, intid: u32) -> bool {
        match self {
            Reach::Spis => intid >= SPI_BASE,
            Reach::Private => intid < PRIVATE,
            Reach::Both => true,
        }
    }
}

/// The part of one access that falls in one bank.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    /// The bank's first INTID.
    base: u32,
    /// The first interrupt's bit in the bank, and how many it covers.
    n: u32,
    count: u32,
    /// The written value, its first interrupt's field at bit 0.
    value: Option<u64>,
}

impl Chunk {
    fn mask(self) -> u32 {
        span(self.n, self.count)
    }

    /// A 1-bit register's written bits, in place in the bank.
    fn bits(self) -> u32 {
        (self.value.unwrap_or(0) as u32) << self.n & self.mask()
    }

    /// ICFGR's written edge bits, in place in the bank.
    fn edges(self) -> u32 {
        let value = self.value.unwrap_or(0);
        (edges_of(value as u32) | edges_of((value >> 32) as u32) << 16) << self.n & self.mask()
    }
}

impl PartitionGic {
    /// `devices`: the passthrough SPIs the partition owns, each with the
    /// vCPU it targets first; `virtual_spis`: the purely virtual ones
    /// (doorbells, signals), which target vCPU 0 first.
    pub fn new(vcpus: usize, devices: &[(u32, usize)], virtual_spis: &[u32]) -> Self {
        let virtuals = virtual_spis.iter().map(|&intid| (intid, 0, false));
        // A passthrough SPI also listed as virtual stays passthrough.
        let spis = virtuals.chain(devices.iter().map(|&(intid, vcpu)| (intid, vcpu, true)));
        let spis: Vec<_> = spis.filter(|&(intid, ..)| intid >= SPI_BASE).collect();
        let highest = spis.iter().map(|&(intid, ..)| intid).max().unwrap_or(SPI_BASE - 1);
        let mut banks = vec![Bank::EMPTY; (highest / WIDTH) as usize];
        for (intid, vcpu, hw) in spis {
            banks[(intid / WIDTH - 1) as usize].own(intid % WIDTH, hw, vcpu as u8, DEFAULT_PRIORITY);
        }
        let private = Bank::private(1 << VTIMER_INTID | 1 << PTIMER_INTID, DEFAULT_PRIORITY);
        Self { ctlr: 0, spis: banks, private: vec![(private, false); vcpus] }
    }

    /// Back to `initial`'s state (this one's as it was built), in place: a
    /// restart's reset step built a new one, its allocations and copies
    /// about half of that step's 1,100 instructions with interrupts masked.
    pub fn reset_to(&mut self, initial: &Self) {
        self.ctlr = initial.ctlr;
        self.spis.clone_from(&initial.spis);
        self.private.clone_from(&initial.private);
    }

    /// The bank holding `intid` as `vcpu` sees it (private ones per vCPU,
    /// SPIs shared), and `intid`'s bit in it.
    fn bank(&self, vcpu: usize, intid: u32) -> Option<(&Bank, u32)> {
        let bank =
            if intid < PRIVATE { &self.private.get(vcpu)?.0 } else { self.spis.get((intid / WIDTH - 1) as usize)? };
        Some((bank, intid % WIDTH))
    }

    fn bank_mut(&mut self, vcpu: usize, intid: u32) -> Option<&mut Bank> {
        if intid < PRIVATE {
            self.private.get_mut(vcpu).map(|(bank, _)| bank)
        } else {
            self.spis.get_mut((intid / WIDTH - 1) as usize)
        }
    }

    /// True when this partition owns SPI `intid`.
    pub fn owns_spi(&self, intid: u32) -> bool {
        intid >= SPI_BASE && self.bank(0, intid).is_some_and(|(bank, n)| bank.owned & 1 << n != 0)
    }

    /// The vCPU an owned SPI targets.
    pub fn spi_target(&self, intid: u32) -> Option<usize> {
        let (bank, n) = self.bank(0, intid).filter(|_| intid >= SPI_BASE)?;
        (bank.owned & 1 << n != 0).then(|| usize::from(bank.target[n as usize]))
    }

    /// How `vcpu` sees `intid` (private ones per vCPU, SPIs shared).
    pub fn config(&self, vcpu: usize, intid: u32) -> Option<IrqConfig> {
        let (bank, n) = self.bank(vcpu, intid)?;
        let has = |mask: u32| mask & 1 << n != 0;
        has(bank.owned).then(|| IrqConfig {
            enabled: has(bank.enabled),
            priority: bank.priority[n as usize],
            group1: has(bank.group1),
            edge: has(bank.edge),
            hw: has(bank.hw),
            latched: has(bank.latched),
        })
    }

    /// Decides whether an interrupt that fired is delivered now (see
    /// [`Bank::fire`]).
    pub fn fire(&mut self, vcpu: usize, intid: u32) -> Option<u8> {
        self.bank_mut(vcpu, intid)?.fire(intid % WIDTH)
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
                Some((field, first)) => self.bank_access(0, Reach::Spis, field, first, access, effects, line),
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
                Some((field, first)) => self.bank_access(vcpu, Reach::Private, field, first, local, effects, line),
                _ => 0,
            },
            _ => 0,
        }
    }

    /// ITLinesNumber covers the highest owned SPI; IDbits says 10 bits.
    fn typer(&self) -> u32 {
        (9 << 19) | self.spis.len() as u32
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

    /// Reads or writes every INTID an access to a per-interrupt register
    /// covers, a bank at a time: at most two (an 8-byte access to a 1-bit
    /// register).
    #[allow(clippy::too_many_arguments)]
    fn bank_access(
        &mut self,
        vcpu: usize,
        reach: Reach,
        field: Field,
        first: u32,
        access: Access,
        effects: &mut impl FnMut(Effect),
        line: &impl Line,
    ) -> u64 {
        let bits = field.bits();
        let count = u32::from(access.size) * 8 / bits;
        let mut result = 0;
        let mut done = 0;
        while done < count {
            let intid = first + done;
            let n = intid % WIDTH;
            let here = (WIDTH - n).min(count - done);
            let shift = done * bits;
            if reach.covers(intid) {
                let chunk = Chunk { base: intid - n, n, count: here, value: access.value.map(|v| v >> shift) };
                result |= self.chunk(vcpu, field, chunk, effects, line) << shift;
            }
            done += here;
        }
        result
    }

    fn chunk(
        &mut self,
        vcpu: usize,
        field: Field,
        chunk: Chunk,
        effects: &mut impl FnMut(Effect),
        line: &impl Line,
    ) -> u64 {
        let Chunk { base, n, count, value } = chunk;
        let private = base < SPI_BASE;
        let Some(bank) = self.bank_mut(vcpu, base) else {
            // Past the highest owned SPI: nothing here is the partition's.
            if let (Field::SetEnable | Field::SetPending, Some(_), false) = (field, value, private) {
                deny(chunk.bits(), base, effects);
            }
            return 0;
        };
        let mask = chunk.mask();
        if value.is_none() {
            let owned = bank.owned & mask;
            return match field {
                Field::Group => u64::from((bank.group1 & owned) >> n),
                Field::SetEnable | Field::ClearEnable => u64::from((bank.enabled & owned) >> n),
                Field::SetPending | Field::ClearPending => {
                    let target = |b: u32| if private { vcpu } else { usize::from(bank.target[b as usize]) };
                    u64::from(bank.pending(mask, |b| line.asserted(target(b), base + b)) >> n)
                }
                Field::Active => 0,
                Field::Priority => (0..count).fold(0, |r, k| r | u64::from(bank.read_priority(n + k)) << (8 * k)),
                Field::Config => {
                    let edges = (bank.edge & owned) >> n;
                    u64::from(config_of(edges)) | u64::from(config_of(edges >> 16)) << 32
                }
            };
        }
        let bits = chunk.bits();
        match field {
            Field::Group => bank.write_group(bits, mask),
            Field::SetEnable => {
                let done = bank.set_enable(bits);
                if !private {
                    deny(done.denied, base, effects);
                }
                pend(bank, done.deliver, base, vcpu, effects);
                if private {
                    for timer in ones(done.enabled & bank.hw) {
                        effects(Effect::TimerEnabled { vcpu, intid: timer });
                    }
                    if done.enabled != 0 {
                        effects(Effect::PrivateEnable { vcpu, mask: done.enabled, enabled: true });
                    }
                } else if done.enabled & bank.hw != 0 {
                    effects(Effect::SpiEnable { first: base, mask: done.enabled & bank.hw, enabled: true });
                }
            }
            Field::ClearEnable => {
                let disabled = bank.clear_enable(bits);
                if private && disabled != 0 {
                    effects(Effect::PrivateEnable { vcpu, mask: disabled, enabled: false });
                } else if !private && disabled & bank.hw != 0 {
                    effects(Effect::SpiEnable { first: base, mask: disabled & bank.hw, enabled: false });
                }
            }
            Field::SetPending => {
                let done = bank.set_pending(bits);
                if !private {
                    deny(done.denied, base, effects);
                }
                if done.physical != 0 {
                    effects(Effect::SpiPending { first: base, mask: done.physical, pending: true });
                }
                pend(bank, done.pend, base, vcpu, effects);
            }
            Field::ClearPending => {
                let done = bank.clear_pending(bits);
                if done.physical != 0 {
                    effects(Effect::SpiPending { first: base, mask: done.physical, pending: false });
                }
                if private && done.unpend != 0 {
                    effects(Effect::Unpend { vcpu, first: base, mask: done.unpend });
                } else if !private {
                    // Each SPI is in the queue of the vCPU it targets.
                    let mut left = done.unpend;
                    while left != 0 {
                        let target = bank.target[left.trailing_zeros() as usize];
                        let mask = bank.targeting(left, target);
                        effects(Effect::Unpend { vcpu: usize::from(target), first: base, mask });
                        left &= !mask;
                    }
                }
            }
            Field::Active => {}
            Field::Priority => {
                let value = value.unwrap_or(0);
                for k in 0..count {
                    let priority = (value >> (8 * k)) as u8;
                    if bank.write_priority(n + k, priority) && private {
                        effects(Effect::PrivatePriority { vcpu, intid: base + n + k, priority });
                    }
                }
            }
            Field::Config => bank.write_edges(chunk.edges(), mask),
        }
        0
    }

    /// GICD_IROUTER<n>: 64-bit per SPI; Aff0 names the vCPU. "Any" routing
    /// (bit 31) and unknown affinities go to vCPU 0.
    fn irouter(&mut self, access: Access, effects: &mut impl FnMut(Effect)) -> u64 {
        let intid = ((access.offset - 0x6000) / 8) as u32;
        let high = access.offset % 8 >= 4;
        let vcpus = self.private.len();
        // Routing another's SPI changes nothing and, like the rest of the
        // set-up sweep, is not reported.
        let Some(target) = self.spi_target(intid) else { return 0 };
        match access.value {
            None if high => 0,
            None => target as u64,
            Some(_) if high => 0,
            Some(value) => {
                let aff0 = (value & 0xff) as usize;
                let any = value & (1 << 31) != 0;
                let vcpu = if any || value & 0xff_ffff_ff00 != 0 || aff0 >= vcpus { 0 } else { aff0 };
                self.route(intid, vcpu, effects);
                0
            }
        }
    }

    /// Makes owned SPI `intid` target `vcpu`; a passthrough one's physical
    /// twin follows, a virtual one's namesake is not the partition's.
    fn route(&mut self, intid: u32, vcpu: usize, effects: &mut impl FnMut(Effect)) {
        let Some(bank) = self.bank_mut(0, intid) else { return };
        let n = intid % WIDTH;
        bank.target[n as usize] = vcpu as u8;
        if bank.hw & 1 << n != 0 {
            effects(Effect::SpiRoute { intid, vcpu });
        }
    }
}

/// Reports a write that tried to raise `denied` (bits of the bank at
/// `base`): only enabling or making pending another's SPI, as a stock
/// kernel's distributor set-up disables, clears, deactivates, routes and
/// configures every SPI that GICD_TYPER covers, and that sweep is not an
/// attack. One report per bank: what matters is that it tried.
fn deny(denied: u32, base: u32, effects: &mut impl FnMut(Effect)) {
    if denied != 0 {
        effects(Effect::Denied { intid: base + denied.trailing_zeros() });
    }
}

/// Makes the interrupts `mask` names in `bank` (at `base`) pending, each
/// on the vCPU it targets: `vcpu` for a private bank.
fn pend(bank: &Bank, mask: u32, base: u32, vcpu: usize, effects: &mut impl FnMut(Effect)) {
    for n in ones(mask) {
        let target = if base < SPI_BASE { vcpu } else { usize::from(bank.target[n as usize]) };
        effects(Effect::Pend { vcpu: target, intid: base + n, priority: bank.priority[n as usize] });
    }
}

// Targets are kept in a byte.
const _: () = assert!(MAX_VCPUS_PER_PARTITION <= u8::MAX as usize);
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
    fn a_reset_puts_back_the_state_it_was_built_with() {
        let initial = PartitionGic::new(2, &[(40, 0), (71, 1)], &[33]);
        let mut gic = initial.clone();
        run(&mut gic, write(0x0000, 0x12), false);
        run(&mut gic, write(0x0104, 1 << 8 | 1 << 1), false);
        run(&mut gic, write(0x0420, 0xa0a0_a0a0), false);
        run(&mut gic, write(SGI_BASE + 0x100, 0xffff), true);
        assert_ne!(alloc::format!("{gic:?}"), alloc::format!("{initial:?}"));
        gic.reset_to(&initial);
        assert_eq!(alloc::format!("{gic:?}"), alloc::format!("{initial:?}"));
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
        assert_eq!(effects, [Effect::SpiEnable { first: 32, mask: 1 << 8, enabled: true }]);
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
        let pend = Effect::Pend { vcpu: 1, intid: 5, priority: DEFAULT_PRIORITY };
        assert_eq!(effects, [pend, Effect::PrivateEnable { vcpu: 1, mask: 1 << 5, enabled: true }]);
        assert_eq!(gic.fire(1, 5), Some(DEFAULT_PRIORITY));
        assert_eq!(gic.fire(0, 5), None, "vCPU 0's SGI is its own");
        // A doorbell rung while disabled, as well.
        assert_eq!(gic.fire(0, 48), None);
        assert_eq!(run(&mut gic, read(0x204), false).0, 1 << 16);
        let pend = Effect::Pend { vcpu: 0, intid: 48, priority: DEFAULT_PRIORITY };
        assert_eq!(run(&mut gic, write(0x104, 1 << 16), false).1, [pend], "a virtual SPI has no physical twin");
    }

    #[test]
    fn a_private_interrupt_s_enable_and_priority_changes_are_reported() {
        let mut gic = PartitionGic::new(2, &[(40, 0)], &[]);
        let (_, effects) = run(&mut gic, write(GICR_FRAME + SGI_BASE + 0x180, 1 << 3), true);
        assert_eq!(effects, [Effect::PrivateEnable { vcpu: 1, mask: 1 << 3, enabled: false }]);
        let (_, effects) = run(&mut gic, Access { offset: SGI_BASE + 0x400 + 27, size: 1, value: Some(0x40) }, true);
        assert_eq!(effects, [Effect::PrivatePriority { vcpu: 0, intid: 27, priority: 0x40 }]);
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
            let enabled = [
                Effect::TimerEnabled { vcpu: 1, intid: timer },
                Effect::PrivateEnable { vcpu: 1, mask: 1 << timer, enabled: true },
            ];
            assert_eq!(effects, enabled, "no latched delivery");
            assert_eq!(gic.fire(1, timer), Some(DEFAULT_PRIORITY));
        }
        // The guest's own ISPENDR write is a software pending state, kept.
        run(&mut gic, write(SGI_BASE + 0x200, 1 << 30), true);
        let (_, effects) = run(&mut gic, write(SGI_BASE + 0x100, 1 << 30), true);
        let enabled = [
            Effect::Pend { vcpu: 0, intid: 30, priority: DEFAULT_PRIORITY },
            Effect::TimerEnabled { vcpu: 0, intid: 30 },
            Effect::PrivateEnable { vcpu: 0, mask: 1 << 30, enabled: true },
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
        assert_eq!(effects, [Effect::SpiEnable { first: 32, mask: 1 << 2, enabled: true }], "no latched delivery");
        let set = Effect::SpiPending { first: 32, mask: 1 << 2, pending: true };
        assert_eq!(run(&mut gic, write(0x204, 1 << 2), false).1, [set]);
        let clear = Effect::SpiPending { first: 32, mask: 1 << 2, pending: false };
        assert_eq!(run(&mut gic, write(0x284, 1 << 2), false).1, [clear]);
    }

    #[test]
    fn spi_pending_goes_to_its_routed_vcpu() {
        let mut gic = PartitionGic::new(2, &[(41, 0)], &[40]);
        let (_, effects) = run(&mut gic, write(0x6000 + 40 * 8, 1), false);
        assert_eq!(effects, [], "a virtual SPI's physical namesake is not the partition's");
        run(&mut gic, write(0x104, 1 << 8), false);
        let (_, effects) = run(&mut gic, write(0x204, 1 << 8), false);
        assert_eq!(effects, [Effect::Pend { vcpu: 1, intid: 40, priority: DEFAULT_PRIORITY }]);
        assert_eq!(run(&mut gic, read(0x6000 + 40 * 8), false).0, 1);
        run(&mut gic, write(0x6000 + 40 * 8, 1 << 31), false);
        assert_eq!(gic.spi_target(40), Some(0));
        let (_, effects) = run(&mut gic, write(0x6000 + 41 * 8, 1), false);
        assert_eq!(effects, [Effect::SpiRoute { intid: 41, vcpu: 1 }]);
    }

    #[test]
    fn a_whole_bank_write_is_one_effect_per_bank() {
        let mut gic = PartitionGic::new(2, &[(34, 0), (35, 1)], &[40]);
        let all = u64::from(u32::MAX);
        let (_, effects) = run(&mut gic, write(GICR_FRAME + SGI_BASE + 0x180, all), true);
        assert_eq!(effects, [Effect::PrivateEnable { vcpu: 1, mask: u32::MAX, enabled: false }]);
        let (_, effects) = run(&mut gic, write(0x184, all), false);
        assert_eq!(effects, [Effect::SpiEnable { first: 32, mask: 0b1100, enabled: false }], "passthrough ones only");
        let (_, effects) = run(&mut gic, write(0x104, all), false);
        let enabled = [Effect::Denied { intid: 32 }, Effect::SpiEnable { first: 32, mask: 0b1100, enabled: true }];
        assert_eq!(effects, enabled, "one report for the bank");
        assert_eq!(run(&mut gic, read(0x104), false).0, 0b1100 | 1 << 8);
    }

    #[test]
    fn clearing_pending_spis_withdraws_each_from_its_vcpu() {
        let mut gic = PartitionGic::new(2, &[(34, 0)], &[40, 41, 42]);
        run(&mut gic, write(0x6000 + 41 * 8, 1), false);
        let (_, effects) = run(&mut gic, write(0x284, u64::from(u32::MAX)), false);
        let cleared = [
            Effect::SpiPending { first: 32, mask: 1 << 2, pending: false },
            Effect::Unpend { vcpu: 0, first: 32, mask: 1 << 8 | 1 << 10 },
            Effect::Unpend { vcpu: 1, first: 32, mask: 1 << 9 },
        ];
        assert_eq!(effects, cleared);
        let (_, effects) = run(&mut gic, write(SGI_BASE + 0x280, 0b11), true);
        assert_eq!(effects, [Effect::Unpend { vcpu: 0, first: 0, mask: 0b11 }]);
    }

    #[test]
    fn configurations_are_two_bits_per_interrupt() {
        let mut gic = PartitionGic::new(1, &[(34, 0), (63, 0)], &[]);
        run(&mut gic, write(0xc08, 0b10 << 4), false);
        assert!(gic.config(0, 34).unwrap().edge);
        assert_eq!(run(&mut gic, read(0xc08), false).0, 0b10 << 4, "only the owned one");
        run(&mut gic, write(0xc0c, u64::from(u32::MAX)), false);
        assert_eq!(run(&mut gic, read(0xc0c), false).0, 0b10 << 30, "INTID 63");
        assert_eq!(run(&mut gic, Access { offset: 0xc08, size: 8, value: None }, false).0, 0b10 << 62 | 0b10 << 4);
        run(&mut gic, write(SGI_BASE + 0xc04, u64::from(u32::MAX)), true);
        assert_eq!(run(&mut gic, read(SGI_BASE + 0xc04), true).0, 0xaaaa_aaaa, "PPIs configurable");
        run(&mut gic, write(SGI_BASE + 0xc00, 0), true);
        assert_eq!(run(&mut gic, read(SGI_BASE + 0xc00), true).0, 0xaaaa_aaaa, "SGIs stay edge");
    }

    #[test]
    fn sub_word_and_double_word_accesses_cover_their_interrupts() {
        let mut gic = PartitionGic::new(1, &[(40, 0), (70, 0)], &[]);
        let byte = Access { offset: 0x105, size: 1, value: Some(1) };
        assert_eq!(run(&mut gic, byte, false).1, [Effect::SpiEnable { first: 32, mask: 1 << 8, enabled: true }]);
        let both = Access { offset: 0x104, size: 8, value: Some(1 << 38) };
        let (_, effects) = run(&mut gic, both, false);
        assert_eq!(effects, [Effect::SpiEnable { first: 64, mask: 1 << 6, enabled: true }]);
        assert_eq!(run(&mut gic, Access { offset: 0x104, size: 8, value: None }, false).0, 1 << 8 | 1 << 38);
        assert_eq!(run(&mut gic, Access { offset: 0x105, size: 1, value: None }, false).0, 1);
        // A redistributor's 8-byte access reaches no SPI.
        let (value, effects) = run(&mut gic, Access { offset: SGI_BASE + 0x100, size: 8, value: Some(!0) }, true);
        assert_eq!((value, effects.len()), (0, 3), "two timers and the private enable: {effects:?}");
        assert_eq!(run(&mut gic, Access { offset: SGI_BASE + 0x100, size: 8, value: None }, true).0, 0xffff_ffff);
        assert!(!gic.config(0, 33).is_some_and(|c| c.enabled));
    }

    #[test]
    fn the_worst_access_fits_the_effects_the_hypervisor_keeps() {
        let mut gic = PartitionGic::new(1, &[], &(32..64).collect::<Vec<_>>());
        for intid in 0..64 {
            gic.fire(0, intid);
        }
        run(&mut gic, write(0x6000 + 40 * 8, 0), false);
        let mut effects = vec![];
        let worst = Access { offset: 0x100, size: 8, value: Some(u64::MAX) };
        gic.distributor_v2(0, worst, &mut |e| effects.push(e), &|_: usize, _: u32| false);
        let pends = effects.iter().filter(|e| matches!(e, Effect::Pend { .. })).count();
        assert_eq!(pends, 62, "all latched but the timers");
        assert!(effects.len() <= MAX_EFFECTS, "{}", effects.len());
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
