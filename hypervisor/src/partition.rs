//! Partitions and vCPUs as the hypervisor runs them.
//!
//! Everything here is built once at boot from the validated model. Shared
//! state changes through atomics (power and run state) or short locks taken
//! by the owning pCPU; the only cross-CPU writes are PSCI CPU_ON into an
//! off vCPU, and a partition restart, which first waits until none of the
//! partition's vCPUs is on a CPU.

use crate::console::{self, log};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use partita_arch::context::{El1Context, FpContext};
use partita_arch::exception::Regs;
use partita_arch::stage2::{self, Stage2Table};
use partita_arch::vgic::{VgicContext, MAX_LRS};
use partita_core::hm::{PartitionHm, Policy};
use partita_core::image::{Load, PartitionBoot};
use partita_core::model::{self, Range};
use partita_core::sysreg;
use partita_core::vcpu::{Op, Refused, State};
use partita_core::vgic::queue::Queue;
use partita_core::vgic::regs::PartitionGic;
use partita_core::vuart::{LineBuffer, Pl011};
use spin::Mutex;

/// The most pCPUs a configuration may have.
pub const MAX_CPUS: usize = *partita_core::validate::CPUS.end() as usize;
/// `slot_on` of a pCPU where the vCPU is not listed.
const NO_SLOT: u8 = u8::MAX;

/// Longest console line a partition can emit before it is wrapped.
pub const CONSOLE_LINE: usize = 200;

/// A partition's life cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RunState {
    Running = 0,
    /// Stopped by Partita after a fault.
    Stopped = 1,
    /// Powered off by its own PSCI SYSTEM_OFF.
    Off = 2,
    /// Being restarted (PSCI SYSTEM_RESET or a system partition); its
    /// vCPUs must not run.
    Restarting = 3,
    /// Suspended by a system partition: no vCPU runs, interrupts stay pending.
    Suspended = 4,
    /// Halted by a system partition: final until a restart.
    Halted = 5,
}

impl RunState {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Running,
            1 => Self::Stopped,
            2 => Self::Off,
            3 => Self::Restarting,
            4 => Self::Suspended,
            _ => Self::Halted,
        }
    }

    /// Ended for good unless restarted: counts towards powering off.
    pub const fn ended(self) -> bool {
        matches!(self, Self::Stopped | Self::Off | Self::Halted)
    }
}

/// The console a partition writes to.
pub struct Console {
    pub uart: Pl011,
    pub line: LineBuffer<CONSOLE_LINE>,
}

pub struct Partition {
    pub config: model::Partition,
    pub boot: PartitionBoot,
    pub vttbr: u64,
    state: AtomicU8,
    pub vcpus: Vec<&'static Vcpu>,
    pub console: Mutex<Console>,
    /// The distributor and redistributors this partition sees.
    pub gic: Mutex<PartitionGic>,
    /// Scheduling rank (its priority): a higher one's vCPU runs first.
    pub rank: u8,
    /// Where the next trapped set/way operation cleans (see `clean_slice`).
    setway_cursor: AtomicU64,
    /// Writes to interrupts it does not own, reported so far.
    pub denied_reports: AtomicU32,
    /// Its health-monitor policy and restart count.
    pub hm: Mutex<PartitionHm>,
    /// Raised by every restart; a pCPU whose TLBs may hold entries of an
    /// older generation invalidates them before running a vCPU of it.
    tlb_generation: AtomicU32,
}

/// Registers of a vCPU while it is not on a CPU.
pub struct Context {
    pub regs: Regs,
    pub el1: El1Context,
    pub fp: FpContext,
    pub vgic: VgicContext,
}

pub struct Vcpu {
    pub partition: usize,
    pub index: usize,
    /// The pCPU the configuration pins it to.
    pub home: usize,
    /// Where it runs now: `home`, or one of `migrate_to` while a more urgent
    /// vCPU needs `home`.
    pcpu: AtomicUsize,
    /// pCPUs it may move to, in order of preference; empty: it never moves.
    pub migrate_to: Vec<usize>,
    /// Its index in each pCPU's `vcpus` (`NO_SLOT` where it is not listed),
    /// so a change here can mark it for that pCPU's ready queue.
    slot_on: [AtomicU8; MAX_CPUS],
    /// A [`State`], changed only through [`Vcpu::apply`].
    state: AtomicU8,
    /// True while a pCPU has this vCPU's state loaded in its registers.
    on_cpu: AtomicBool,
    /// In WFI with nothing pending: not runnable until an interrupt comes.
    waiting: AtomicBool,
    /// Virtual interrupts waiting for a list register; `queued` says the
    /// queue is non-empty without taking its lock on every guest entry.
    pub queue: Mutex<Queue>,
    queued: AtomicBool,
    /// With tracing on: the list registers as Partita last saw them, so a
    /// trap can tell which interrupts the guest completed meanwhile.
    pub seen_lrs: Mutex<[u64; MAX_LRS]>,
    pub context: Mutex<Context>,
}

impl Partition {
    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn state(&self) -> RunState {
        RunState::from_u8(self.state.load(Ordering::Acquire))
    }

    pub fn set_state(&self, state: RunState) {
        self.state.store(state as u8, Ordering::Release);
        self.mark_vcpus();
    }

    /// Every vCPU may have become runnable or not.
    fn mark_vcpus(&self) {
        for vcpu in &self.vcpus {
            vcpu.mark();
        }
    }

    /// Moves from `Running` to `state`; false if it was no longer running
    /// (another CPU stopped it first), so each stop is reported once.
    pub fn leave_running(&self, state: RunState) -> bool {
        self.change(RunState::Running, state)
    }

    /// Moves from `from` to `to`; false if it was not in `from`.
    pub fn change(&self, from: RunState, to: RunState) -> bool {
        let changed = self.state.compare_exchange(from as u8, to as u8, Ordering::AcqRel, Ordering::Acquire).is_ok();
        if changed {
            self.mark_vcpus();
        }
        changed
    }

    pub fn tlb_generation(&self) -> u32 {
        self.tlb_generation.load(Ordering::Acquire)
    }

    pub fn new_tlb_generation(&self) {
        self.tlb_generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Bytes a guest wrote to its console: complete lines go out tagged.
    pub fn console_byte(&self, byte: u8) {
        let mut console = self.console.lock();
        if console.line.push(byte) {
            console::partition_line(self.name(), console.line.take());
        }
    }
}

impl Vcpu {
    pub fn state(&self) -> State {
        State::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Moves the vCPU through `op` (see [`State::next`]); atomic against a
    /// concurrent change from another pCPU.
    pub fn apply(&self, op: Op) -> Result<State, Refused> {
        let mut current = self.state();
        loop {
            let next = current.next(op)?;
            match self.state.compare_exchange(current as u8, next as u8, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    self.mark();
                    return Ok(next);
                }
                Err(seen) => current = State::from_u8(seen),
            }
        }
    }

    /// Off, whatever it was: only for a partition (re)start.
    fn power_down(&self) {
        self.state.store(State::Off as u8, Ordering::Release);
        self.mark();
    }

    /// Records in `cpu`'s tables that this vCPU is its slot `slot` (boot).
    pub fn place(&self, cpu: usize, slot: usize) {
        self.slot_on[cpu].store(u8::try_from(slot).expect("slot fits a u8"), Ordering::Relaxed);
    }

    /// Something that decides whether it can run changed: every pCPU that
    /// lists it looks at it again at its next decision.
    pub fn mark(&self) {
        let Some(system) = crate::boot::try_system() else { return };
        for (cpu, slot) in self.slot_on.iter().enumerate() {
            let slot = slot.load(Ordering::Relaxed);
            if slot != NO_SLOT {
                system.cpus[cpu].mark(usize::from(slot));
            }
        }
    }

    pub fn is_waiting(&self) -> bool {
        self.waiting.load(Ordering::SeqCst)
    }

    pub fn set_waiting(&self, waiting: bool) {
        self.waiting.store(waiting, Ordering::SeqCst);
        self.mark();
    }

    pub fn has_queued(&self) -> bool {
        self.queued.load(Ordering::SeqCst)
    }

    pub fn set_queued(&self, queued: bool) {
        self.queued.store(queued, Ordering::SeqCst);
    }

    pub fn is_on_cpu(&self) -> bool {
        self.on_cpu.load(Ordering::SeqCst)
    }

    /// Marks the vCPU off its pCPU once its registers are saved.
    pub fn release(&self) {
        self.on_cpu.store(false, Ordering::SeqCst);
        self.mark();
    }

    /// Takes the vCPU for pCPU `cpu`: false if another pCPU has it loaded,
    /// or it has just been moved away. Two pCPUs can never both load it.
    pub fn claim(&self, cpu: usize) -> bool {
        if self.on_cpu.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_err() {
            return false;
        }
        if self.pcpu() != cpu {
            self.release();
            return false;
        }
        true
    }

    /// The pCPU it runs on now.
    pub fn pcpu(&self) -> usize {
        self.pcpu.load(Ordering::SeqCst)
    }

    /// Moves it to `cpu` (its home or a migration target).
    pub fn move_to(&self, cpu: usize) {
        self.pcpu.store(cpu, Ordering::SeqCst);
        self.mark();
    }

    /// Puts the vCPU in its power-on state, entering at `entry` with x0 = `arg`.
    pub fn reset(&self, entry: u64, arg: u64) {
        let mut ctx = self.context.lock();
        ctx.regs = Regs::boot(entry, arg);
        ctx.el1 = El1Context::reset(partita_core::psci::vmpidr(self.index));
        ctx.fp = FpContext::default();
        ctx.vgic = VgicContext::reset();
        drop(ctx);
        self.queue.lock().clear();
        self.set_queued(false);
        self.set_waiting(false);
    }
}

/// Builds a partition's stage-2 table, loads its memory and creates its vCPUs.
pub fn build(index: usize, config: model::Partition, boot: PartitionBoot, data: &[u8]) -> Partition {
    let vmid = u16::try_from(index + 1).expect("VMID");
    let table = build_stage2(vmid, &config);
    let vttbr = table.vttbr();
    // The table lives as long as the partition, which is forever.
    core::mem::forget(table);
    let vcpus = config
        .vcpus
        .iter()
        .enumerate()
        .map(|(i, &pcpu)| {
            let to = config.migrate.iter().find(|m| m.vcpu as usize == i).map_or(Vec::new(), |m| m.to.clone());
            &*Box::leak(Box::new(new_vcpu(index, i, pcpu as usize, to.into_iter().map(|c| c as usize).collect())))
        })
        .collect();
    let spis: Vec<(u32, usize)> =
        config.devices.iter().flat_map(|d| d.interrupts.iter().map(|i| (i.intid, i.vcpu as usize))).collect();
    let partition = Partition {
        gic: Mutex::new(PartitionGic::new(config.vcpus.len(), &spis)),
        rank: config.priority,
        setway_cursor: AtomicU64::new(0),
        denied_reports: AtomicU32::new(0),
        hm: Mutex::new(PartitionHm::new(Policy::from(&config.health))),
        tlb_generation: AtomicU32::new(0),
        config,
        boot,
        vttbr,
        state: AtomicU8::new(RunState::Running as u8),
        vcpus,
        console: Mutex::new(Console { uart: Pl011::new(), line: LineBuffer::new() }),
    };
    partition.load(data);
    partition.power_on();
    partition
}

fn new_vcpu(partition: usize, index: usize, home: usize, migrate_to: Vec<usize>) -> Vcpu {
    Vcpu {
        partition,
        index,
        home,
        pcpu: AtomicUsize::new(home),
        migrate_to,
        slot_on: [const { AtomicU8::new(NO_SLOT) }; MAX_CPUS],
        state: AtomicU8::new(State::Off as u8),
        on_cpu: AtomicBool::new(false),
        waiting: AtomicBool::new(false),
        queue: Mutex::new(Queue::new()),
        queued: AtomicBool::new(false),
        seen_lrs: Mutex::new([0; MAX_LRS]),
        context: Mutex::new(Context {
            regs: Regs::default(),
            el1: El1Context::default(),
            fp: FpContext::default(),
            vgic: VgicContext::reset(),
        }),
    }
}

fn build_stage2(vmid: u16, config: &model::Partition) -> Stage2Table {
    let mut table = Stage2Table::new(vmid);
    for region in &config.memory {
        let kind = stage2::Kind::Ram { write: region.perms.write, exec: region.perms.exec };
        table.map(region.ipa, region.pa, region.size, kind).expect("stage-2 map of a RAM region");
    }
    for device in &config.devices {
        table.map(device.ipa, device.pa, device.size, stage2::Kind::Device).expect("stage-2 map of a device");
    }
    table
}

impl Partition {
    /// Zeroes the partition's RAM (nothing of a previous run or of the boot
    /// loader stays behind), copies its images and device tree in, and
    /// writes everything back to memory for a guest that starts with its
    /// caches off.
    pub fn load(&self, data: &[u8]) {
        let spis: Vec<(u32, usize)> =
            self.config.devices.iter().flat_map(|d| d.interrupts.iter().map(|i| (i.intid, i.vcpu as usize))).collect();
        *self.gic.lock() = PartitionGic::new(self.vcpus.len(), &spis);
        for region in &self.config.memory {
            partita_arch::cache::zero(region.pa, region.size);
        }
        for load in &self.boot.loads {
            self.copy(load, data);
        }
        self.clean_memory();
    }

    fn copy(&self, load: &Load, data: &[u8]) {
        // BootTable::check proved both ranges in bounds.
        let pa = self.config.translate_ram(load.ipa).expect("checked load address");
        let bytes = &data[load.offset as usize..(load.offset + load.len) as usize];
        partita_arch::cache::copy_to(pa, bytes);
    }

    /// One trapped set/way operation: cleans and invalidates the next slice
    /// of the partition's RAM by address, so a whole sweep covers all of it
    /// while no single trap keeps interrupts masked for long.
    pub fn clean_slice(&self) {
        let regions: heapless::Vec<Range, 8> = self.config.memory.iter().map(|r| r.host()).collect();
        let total = regions.iter().map(|r| r.size).sum();
        let cursor = self.setway_cursor.load(Ordering::Relaxed);
        if let Some((pa, len, next)) = sysreg::setway_step(&regions, cursor, sysreg::setway_slice(total)) {
            partita_arch::cache::clean_invalidate(pa, len);
            self.setway_cursor.store(next, Ordering::Relaxed);
        }
    }

    /// Cleans and invalidates all of the partition's RAM by address.
    pub fn clean_memory(&self) {
        for region in &self.config.memory {
            partita_arch::cache::clean_invalidate(region.pa, region.size);
        }
    }

    /// vCPU 0 starts at the entry point with x0 = device tree; the others
    /// wait for PSCI CPU_ON.
    pub fn power_on(&self) {
        for vcpu in &self.vcpus {
            vcpu.power_down();
            vcpu.move_to(vcpu.home);
        }
        self.vcpus[0].reset(self.boot.entry, self.boot.dtb);
        self.vcpus[0].apply(Op::Start).expect("a vCPU that is off can start");
        log!(
            "partition {} starts: {} vCPU(s), entry 0x{:x}, device tree at 0x{:x}",
            self.name(),
            self.vcpus.len(),
            self.boot.entry,
            self.boot.dtb
        );
    }
}
