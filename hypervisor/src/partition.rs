//! Partitions and vCPUs as the hypervisor runs them.
//!
//! Everything here is built once at boot from the validated model. Shared
//! state changes through atomics (power and run state) or short locks taken
//! by the owning pCPU; the only cross-CPU writes are PSCI CPU_ON into an
//! off vCPU, and a partition restart, which first waits until none of the
//! partition's vCPUs is on a CPU.

use crate::channel::Window;
use crate::console::{self, log};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use partita_arch::context::{El1Context, FpContext};
use partita_arch::exception::Regs;
use partita_arch::stage2::{self, Stage2Table};
use partita_arch::vgic::{VgicContext, MAX_LRS};
use partita_core::config::image::PartitionBoot;
use partita_core::config::model::{self, Range};
use partita_core::health::{PartitionHm, Policy, Watchdog};
use partita_core::partition::reload::{self, Step};
use partita_core::partition::vcpu::{Op, Refused, State};
use partita_core::scheduler::budget::BudgetMeter;
use partita_core::time::{ticks_to_us, us_to_ticks};
use partita_core::trap::sysreg;
use partita_core::trap::vuart::{LineBuffer, Pl011};
use partita_core::vgic::queue::Queue;
use partita_core::vgic::regs::PartitionGic;
use spin::Mutex;

/// The most pCPUs a configuration may have.
pub const MAX_CPUS: usize = *partita_core::config::validate::CPUS.end() as usize;
/// `slot_on` of a pCPU where the vCPU is not listed.
const NO_SLOT: u8 = u8::MAX;
/// Bytes a restart zeroes, copies or cleans per step: a more urgent vCPU on
/// the pCPU that reloads waits for one such step at most.
const RELOAD_CHUNK: u64 = 128 << 10;
/// `wake_at` of a vCPU that is not parked in a port call.
const NO_DEADLINE: u64 = u64::MAX;

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
    /// The doorbell INTIDs of its shared-memory channels: virtual SPIs with
    /// no physical twin.
    pub doorbells: Vec<u32>,
    /// What a reload zeroes and cleans (its RAM) and copies (its loads).
    reload_regions: Vec<Range>,
    reload_loads: Vec<reload::Load>,
    /// Where a restart's reload has got to, and when it began.
    reload_cursor: AtomicU64,
    reload_started: AtomicU64,
    /// Running while it has a `watchdog` period: kicked by hypercall,
    /// checked by the pCPU of its vCPU 0.
    pub watchdog: Mutex<Option<Watchdog>>,
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
    /// Parked in a port call: the counter value at which it gives up
    /// (`NO_DEADLINE`: none), woken like a due virtual timer.
    wake_at: AtomicU64,
    /// Virtual interrupts waiting for a list register; `queued` says the
    /// queue is non-empty without taking its lock on every guest entry.
    pub queue: Mutex<Queue>,
    queued: AtomicBool,
    /// With tracing on: the list registers as Partita last saw them, so a
    /// trap can tell which interrupts the guest completed meanwhile.
    pub seen_lrs: Mutex<[u64; MAX_LRS]>,
    pub context: Mutex<Context>,
    /// Its partition's `budget`: time used per period, for the health
    /// monitor's `budget-overrun` event.
    pub budget: Option<Mutex<BudgetMeter>>,
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

    /// One per life: raised by every reload (see `tlb_generation`'s field).
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

    /// When a parked port call times out.
    pub fn wake_at(&self) -> Option<u64> {
        let at = self.wake_at.load(Ordering::SeqCst);
        (at != NO_DEADLINE).then_some(at)
    }

    pub fn set_wake_at(&self, at: Option<u64>) {
        self.wake_at.store(at.unwrap_or(NO_DEADLINE), Ordering::SeqCst);
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
        ctx.el1 = El1Context::reset(partita_core::trap::psci::vmpidr(self.index));
        ctx.fp = FpContext::default();
        ctx.vgic = VgicContext::reset();
        drop(ctx);
        self.queue.lock().clear();
        self.set_queued(false);
        self.set_wake_at(None);
        self.set_waiting(false);
    }
}

/// What a partition shares with others: the shared-memory windows it maps
/// and their doorbells.
pub struct Shared {
    pub windows: Vec<Window>,
    pub doorbells: Vec<u32>,
}

/// Builds a partition's stage-2 table, loads its memory and creates its vCPUs.
pub fn build(index: usize, config: model::Partition, boot: PartitionBoot, data: &[u8], shared: Shared) -> Partition {
    let vmid = u16::try_from(index + 1).expect("VMID");
    let table = build_stage2(vmid, &config, &shared.windows);
    let vttbr = table.vttbr();
    // The table lives as long as the partition, which is forever.
    core::mem::forget(table);
    let vcpus = config
        .vcpus
        .iter()
        .enumerate()
        .map(|(i, &pcpu)| {
            let to = config.migrate.iter().find(|m| m.vcpu as usize == i).map_or(Vec::new(), |m| m.to.clone());
            let mut vcpu = new_vcpu(index, i, pcpu as usize, to.into_iter().map(|c| c as usize).collect());
            vcpu.budget = config.budget.map(|b| Mutex::new(budget_meter(b)));
            &*Box::leak(Box::new(vcpu))
        })
        .collect();
    let partition = Partition {
        gic: Mutex::new(virtual_gic(&config, &shared.doorbells)),
        rank: config.priority,
        setway_cursor: AtomicU64::new(0),
        denied_reports: AtomicU32::new(0),
        hm: Mutex::new(PartitionHm::new(Policy::from(&config.health))),
        tlb_generation: AtomicU32::new(0),
        doorbells: shared.doorbells,
        reload_regions: config.memory.iter().map(|r| r.host()).collect(),
        reload_loads: boot.loads.iter().map(|l| reload_load(&config, l)).collect(),
        reload_cursor: AtomicU64::new(0),
        reload_started: AtomicU64::new(0),
        watchdog: Mutex::new(None),
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
        wake_at: AtomicU64::new(NO_DEADLINE),
        queue: Mutex::new(Queue::new()),
        queued: AtomicBool::new(false),
        seen_lrs: Mutex::new([0; MAX_LRS]),
        context: Mutex::new(Context {
            regs: Regs::default(),
            el1: El1Context::default(),
            fp: FpContext::default(),
            vgic: VgicContext::reset(),
        }),
        budget: None,
    }
}

fn reload_load(config: &model::Partition, load: &partita_core::config::image::Load) -> reload::Load {
    // BootTable::check proved the load inside one RAM region.
    let pa = config.translate_ram(load.ipa).expect("checked load address");
    reload::Load { pa, offset: load.offset, len: load.len }
}

fn budget_meter(budget: model::Budget) -> BudgetMeter {
    let ticks = |us| us_to_ticks(us, partita_arch::timer::frequency());
    BudgetMeter::new(ticks(budget.time_us), ticks(budget.period_us))
}

/// The distributor a partition starts with: its devices' SPIs, each routed
/// as configured, and its doorbells, routed to vCPU 0.
fn virtual_gic(config: &model::Partition, doorbells: &[u32]) -> PartitionGic {
    let devices = config.devices.iter().flat_map(|d| d.interrupts.iter().map(|i| (i.intid, i.vcpu as usize)));
    let spis: Vec<(u32, usize)> = devices.chain(doorbells.iter().map(|&intid| (intid, 0))).collect();
    PartitionGic::new(config.vcpus.len(), &spis)
}

fn build_stage2(vmid: u16, config: &model::Partition, windows: &[Window]) -> Stage2Table {
    let mut table = Stage2Table::new(vmid);
    for region in &config.memory {
        let kind = stage2::Kind::Ram { write: region.perms.write, exec: region.perms.exec };
        table.map(region.ipa, region.pa, region.size, kind).expect("stage-2 map of a RAM region");
    }
    for device in &config.devices {
        table.map(device.ipa, device.pa, device.size, stage2::Kind::Device).expect("stage-2 map of a device");
    }
    for window in windows {
        let kind = stage2::Kind::Ram { write: window.write, exec: false };
        table.map(window.ipa, window.pa, window.size, kind).expect("stage-2 map of a shared-memory window");
    }
    table
}

impl Partition {
    /// Loads the partition at boot: every step of a reload at once.
    pub fn load(&self, data: &[u8]) {
        self.reset_devices();
        let mut cursor = 0;
        while let Some(next) = self.reload_step(cursor, data) {
            cursor = next;
        }
    }

    /// Virtual devices start afresh (distributor, console); its devices'
    /// physical interrupts stay quiet until the guest enables them again in
    /// its fresh distributor.
    fn reset_devices(&self) {
        *self.gic.lock() = virtual_gic(&self.config, &self.doorbells);
        *self.console.lock() = Console { uart: Pl011::new(), line: LineBuffer::new() };
        for device in &self.config.devices {
            for interrupt in &device.interrupts {
                partita_arch::gic::enable_spi(interrupt.intid, false);
            }
        }
    }

    /// One bounded step of a reload (`partita_core::partition::reload`): zero its RAM
    /// (nothing of a previous run or of the boot loader stays behind), copy
    /// its images and device tree in, write everything back to memory for
    /// a guest that starts with its caches off. Returns the next cursor,
    /// `None` once done.
    fn reload_step(&self, cursor: u64, data: &[u8]) -> Option<u64> {
        let (step, next) = reload::step(&self.reload_regions, &self.reload_loads, cursor, RELOAD_CHUNK)?;
        match step {
            Step::Zero { pa, len } => partita_arch::cache::zero(pa, len),
            // BootTable::check proved the load inside the data and its RAM.
            Step::Copy { pa, offset, len } => {
                partita_arch::cache::copy_to(pa, &data[offset as usize..(offset + len) as usize])
            }
            Step::Clean { pa, len } => partita_arch::cache::clean_invalidate(pa, len),
        }
        Some(next)
    }

    /// Starts a restart from state `from`: its vCPUs leave their pCPUs
    /// (the caller kicks them), then vCPU 0's pCPU reloads it a step at a
    /// time in vCPU 0's place (see [`Partition::restart_step`]). False if
    /// it was not in `from` or is restarting already.
    pub fn begin_restart(&self, from: RunState) -> bool {
        if from == RunState::Restarting || !self.change(from, RunState::Restarting) {
            return false;
        }
        self.reload_started.store(partita_arch::timer::counter(), Ordering::Release);
        self.reload_cursor.store(0, Ordering::Release);
        let first = self.vcpus[0];
        first.move_to(first.home);
        first.set_waiting(false);
        true
    }

    /// One step of the restart, by the pCPU that holds vCPU 0 (so only one
    /// at a time); nothing while another of its vCPUs is still on a pCPU.
    /// The last step powers it on again.
    pub fn restart_step(&self, data: &[u8]) {
        if self.vcpus[1..].iter().any(|v| v.is_on_cpu()) {
            return;
        }
        let cursor = self.reload_cursor.load(Ordering::Acquire);
        if cursor == 0 {
            // Translations of its previous life must go: each pCPU drops
            // them before it next runs one of its vCPUs.
            self.new_tlb_generation();
            self.reset_devices();
        }
        match self.reload_step(cursor, data) {
            Some(next) => self.reload_cursor.store(next, Ordering::Release),
            None => {
                let ticks = partita_arch::timer::counter() - self.reload_started.load(Ordering::Acquire);
                let us = ticks_to_us(ticks, partita_arch::timer::frequency());
                log!("partition {} reloaded in {us} us", self.name());
                self.power_on();
                self.set_state(RunState::Running);
            }
        }
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

    /// vCPU 0 starts at the entry point with x0 = device tree; the others
    /// wait for PSCI CPU_ON.
    pub fn power_on(&self) {
        for vcpu in &self.vcpus {
            vcpu.power_down();
            vcpu.move_to(vcpu.home);
        }
        self.vcpus[0].reset(self.boot.entry, self.boot.dtb);
        self.vcpus[0].apply(Op::Start).expect("a vCPU that is off can start");
        if let Some(period_us) = self.config.health.watchdog_us {
            let period = us_to_ticks(period_us, partita_arch::timer::frequency());
            *self.watchdog.lock() = Some(Watchdog::new(period, partita_arch::timer::counter()));
        }
        log!(
            "partition {} starts: {} vCPU(s), entry 0x{:x}, device tree at 0x{:x}",
            self.name(),
            self.vcpus.len(),
            self.boot.entry,
            self.boot.dtb
        );
    }
}
