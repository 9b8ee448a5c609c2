//! Partitions and vCPUs as the hypervisor runs them.
//!
//! Everything here is built once at boot from the validated model. Shared
//! state changes through atomics (power and run state) or short locks taken
//! by the owning pCPU; the only cross-CPU writes are PSCI CPU_ON into an
//! off vCPU, and a partition restart, which first waits until none of the
//! partition's vCPUs is on a CPU.

pub mod fp;
pub mod lifecycle;

use crate::channel::Window;
use crate::console;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use partita_arch::context::{DebugContext, El1Context, FpContext};
use partita_arch::exception::Regs;
use partita_arch::platform::{Gic, InterruptController, VgicContext, MAX_LRS};
use partita_arch::stage2::{self, PagePermission, Stage2Table};
use partita_arch::sync::{ContextLock, Mutex};
use partita_core::config::image::PartitionBoot;
use partita_core::config::limits::{CONSOLE_INTID, MAX_VCPUS_PER_PCPU};
use partita_core::config::model::{self, Range};
use partita_core::health::{PartitionHm, Policy, Watchdog};
use partita_core::partition::debug::Ownership;
use partita_core::partition::fp::Place as FpPlace;
use partita_core::partition::lifecycle::{Change, RunState, WrongState};
use partita_core::partition::reload;
use partita_core::partition::vcpu::{Op, Refused, State};
use partita_core::scheduler::budget::BudgetMeter;
use partita_core::time::us_to_ticks;
use partita_core::timedio::Queue as TimedQueue;
use partita_core::trap::sysreg;
use partita_core::trap::vuart::{LineBuffer, Pl011};
use partita_core::vgic::queue::Queue;
use partita_core::vgic::regs::PartitionGic;
use spin::Once;

/// `wake_at` of a vCPU that is not parked in a port call.
const NO_DEADLINE: u64 = u64::MAX;

/// Longest console line a partition can emit before it is wrapped.
pub const CONSOLE_LINE: usize = 200;

/// The console a partition writes to.
pub struct Console {
    pub uart: Pl011,
    pub line: LineBuffer<CONSOLE_LINE>,
}

pub struct Partition {
    pub config: model::Partition,
    pub boot: PartitionBoot,
    pub vttbr: u64,
    /// Its stage-2 table, never changed after boot but for the write
    /// permission of its virtual devices' interface pages, each changed
    /// in place through `interfaces` as its device connects and
    /// disconnects. Kept for as long as those point into it.
    _stage2: Stage2Table,
    /// Its interface pages' write permissions, in its devices' order.
    interfaces: Vec<PagePermission>,
    state: AtomicU8,
    pub vcpus: Vec<&'static Vcpu>,
    pub console: Mutex<Console>,
    /// The distributor and redistributors this partition sees.
    pub gic: Mutex<PartitionGic>,
    /// Their state at power-on, which a restart puts back.
    pub initial_gic: PartitionGic,
    /// Scheduling rank (its priority): a higher one's vCPU runs first.
    pub rank: u8,
    /// Where the next trapped set/way operation cleans (see `clean_step`).
    setway_cursor: AtomicU64,
    /// Writes to interrupts it does not own, reported so far.
    pub denied_reports: AtomicU32,
    /// Its health-monitor policy and restart count.
    pub hm: Mutex<PartitionHm>,
    /// Raised by every restart and every permission taken from its map (an
    /// interface page made read-only); a pCPU whose TLBs may hold entries
    /// of an older generation invalidates them before running a vCPU of it.
    tlb_generation: AtomicU32,
    /// Its RAM, host-physical: what a reload zeroes and cleans and a
    /// set/way operation cleans.
    reload_regions: Vec<Range>,
    reload_loads: Vec<reload::Load>,
    /// Where a restart's reload has got to, and when it began.
    reload_cursor: AtomicU64,
    reload_started: AtomicU64,
    /// Loads so far (the first boot and every restart), so each one's
    /// device-tree seeds differ.
    times_loaded: AtomicU64,
    /// Running while it has a `watchdog` period: kicked by hypercall,
    /// checked by the pCPU of its vCPU 0.
    pub watchdog: Mutex<Option<Watchdog>>,
    /// Its pending timed outputs and their errors, when the configuration
    /// grants it pins (`crate::timedio`).
    pub timed_io: Option<Mutex<TimedQueue>>,
}

/// Registers of a vCPU while it is not on a CPU.
pub struct Context {
    pub regs: Regs,
    pub el1: El1Context,
    pub fp: FpContext,
    /// Where its FP/SIMD values are: in `fp`, or in a pCPU's registers
    /// (see [`fp`]).
    pub fp_place: FpPlace,
    pub vgic: VgicContext,
    /// Its debug registers, and whether it has them at all.
    pub debug: DebugContext,
    pub debug_owner: Ownership,
}

/// `Vcpu::home_slot` of a vCPU whose home reads no marks.
const UNWATCHED: usize = usize::MAX;

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
    /// The pCPUs that list it, with its slot there: a change here marks it
    /// for each of them (set once at boot).
    watchers: Once<Vec<Watcher>>,
    /// Its slot on its home pCPU when that pCPU reads marks (it has a fixed
    /// priority), else [`UNWATCHED`]; set once at boot, with `watchers`.
    home_slot: AtomicUsize,
    /// A [`State`], changed only through [`Vcpu::apply`].
    state: AtomicU8,
    /// True while a pCPU has this vCPU's state loaded in its registers.
    on_cpu: AtomicBool,
    /// True while a start (PSCI CPU_ON, the start hypercall) sets it up:
    /// one at a time, so a second never rewrites the registers the first
    /// set.
    starting: AtomicBool,
    /// In WFI with nothing pending: not runnable until an interrupt comes.
    waiting: AtomicBool,
    /// Parked in a port call: the counter value at which it gives up
    /// (`NO_DEADLINE`: none), woken like a due virtual timer.
    wake_at: AtomicU64,
    /// When it last left its pCPU: the earliest of its armed timers and
    /// `wake_at` (`NO_DEADLINE`: none), when a wait of its would end.
    wake_deadline: AtomicU64,
    /// Virtual interrupts waiting for a list register; `queued` says the
    /// queue is non-empty without taking its lock on every guest entry.
    pub queue: Mutex<Queue>,
    queued: AtomicBool,
    /// Its last refill found no list register to take what stays queued,
    /// and nothing has been queued since (`vgic::flush`).
    stuck: AtomicBool,
    /// With tracing on: the list registers as Partita last saw them, so a
    /// trap can tell which interrupts the guest completed meanwhile.
    pub seen_lrs: Mutex<[u64; MAX_LRS]>,
    /// Its guard can go to the guest entry, which loads the registers
    /// from it and releases it (`partita_arch::exception::enter_guest`).
    pub context: ContextLock<Context>,
    /// Its partition's `budget`: time used per period, for the health
    /// monitor's `budget-overrun` event.
    pub budget: Option<Mutex<BudgetMeter>>,
    /// Bytes its set/way operation under way still has to clean (see
    /// `Partition::clean_step`); only its own pCPU touches it.
    setway_owed: AtomicU64,
}

impl Partition {
    /// It takes its private interrupts from the physical GIC, on cores it
    /// owns (validated at build time).
    pub fn direct(&self) -> bool {
        self.config.interrupts == partita_core::config::model::Delivery::Direct
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn state(&self) -> RunState {
        RunState::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Moves it through `change` (see [`RunState::next`]), atomic against
    /// a concurrent change from another pCPU; returns the state it left.
    /// Only [`lifecycle`] calls this, and carries out the rest of a change.
    fn apply(&self, change: Change) -> Result<RunState, WrongState> {
        let step = |v| RunState::from_u8(v).next(change).ok().map(|s| s as u8);
        let old =
            RunState::from_u8(self.state.fetch_update(Ordering::AcqRel, Ordering::Acquire, step).unwrap_or_else(|v| v));
        // The same answer the update found: the refusal, or the way on.
        old.next(change)?;
        self.mark_vcpus();
        Ok(old)
    }

    /// Every vCPU may have become runnable or not.
    fn mark_vcpus(&self) {
        for vcpu in &self.vcpus {
            vcpu.mark();
        }
    }

    /// One per life: raised by every reload (see `tlb_generation`'s field).
    pub fn tlb_generation(&self) -> u32 {
        self.tlb_generation.load(Ordering::SeqCst)
    }

    /// Its stage-2 map changed: every pCPU invalidates its TLB entries
    /// before it next enters one of its vCPUs, and those running one now
    /// are kicked out to do so at once.
    pub fn stage2_changed(&self) {
        self.tlb_generation.fetch_add(1, Ordering::SeqCst);
        let here = partita_arch::cpu::index();
        for vcpu in self.vcpus.iter().filter(|v| v.is_on_cpu() && v.pcpu() != here) {
            Gic::kick(vcpu.pcpu());
        }
    }

    /// Makes its interface page `index` (its device `index`'s) writable
    /// (connected) or read-only (then [`Partition::stage2_changed`]).
    pub fn set_interface_writable(&self, index: usize, write: bool) {
        let permission = &self.interfaces[index];
        permission.set_writable(write);
        partita_arch::cpu::dsb_ish();
        // Permission given needs no shootdown: a read-only entry another
        // pCPU still caches faults once, and that fault drops it (see
        // `Fabric::write_fault`). Permission taken must be gone from every
        // TLB before the page changes hands.
        if !write {
            self.stage2_changed();
        }
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
        let step = |v| State::from_u8(v).next(op).ok().map(|s| s as u8);
        let old =
            State::from_u8(self.state.fetch_update(Ordering::AcqRel, Ordering::Acquire, step).unwrap_or_else(|v| v));
        // The same answer the update found: the refusal, or the new state.
        let next = old.next(op)?;
        self.mark();
        Ok(next)
    }

    /// Off, whatever it was: only for a partition (re)start.
    fn power_down(&self) {
        self.state.store(State::Off as u8, Ordering::Release);
        self.mark();
    }

    /// Records which pCPUs list this vCPU, and where (boot, once).
    /// `home_slot`: its slot on its home, if that pCPU is one of them.
    pub fn watch(&self, watchers: Vec<Watcher>, home_slot: Option<usize>) {
        self.home_slot.store(home_slot.unwrap_or(UNWATCHED), Ordering::Relaxed);
        self.watchers.call_once(|| watchers);
    }

    /// Something that decides whether it can run changed: every pCPU that
    /// lists it looks at it again at its next decision.
    pub fn mark(&self) {
        for watcher in self.watchers.get().into_iter().flatten() {
            watcher.dirty.mark(watcher.slot);
        }
    }

    /// [`Vcpu::mark`] by the pCPU whose marks are `own`: its own mark, if
    /// `own_too`, in its own words.
    fn mark_from(&self, own: &Dirty, own_too: bool) {
        // Only its home lists a vCPU that never migrates, and only its home
        // marks it from there: the list need not be read (every switch
        // and wake-up comes here).
        if self.only_at(partita_arch::cpu::index()) {
            let slot = self.home_slot.load(Ordering::Relaxed);
            if own_too && slot != UNWATCHED {
                own.mark_own(slot);
            }
            return;
        }
        for watcher in self.watchers.get().into_iter().flatten() {
            if !core::ptr::eq(watcher.dirty, own) {
                watcher.dirty.mark(watcher.slot);
            } else if own_too {
                own.mark_own(watcher.slot);
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

    /// True when it never migrates and `cpu` is its home: the only pCPU
    /// that lists it.
    pub fn only_at(&self, cpu: usize) -> bool {
        self.migrate_to.is_empty() && self.home == cpu
    }

    /// Ends its wait without a mark: for the pCPU that lists it alone
    /// ([`Vcpu::only_at`]) and runs it at once, whose next look after it
    /// leaves sees it then.
    pub fn end_wait(&self) {
        self.waiting.store(false, Ordering::SeqCst);
    }

    /// Ends its wait, from the pCPU whose marks are `own`.
    pub fn wake_from(&self, own: &Dirty) {
        self.waiting.store(false, Ordering::SeqCst);
        self.mark_from(own, true);
    }

    /// When a parked port call times out.
    pub fn wake_at(&self) -> Option<u64> {
        let at = self.wake_at.load(Ordering::SeqCst);
        (at != NO_DEADLINE).then_some(at)
    }

    pub fn set_wake_at(&self, at: Option<u64>) {
        self.wake_at.store(at.unwrap_or(NO_DEADLINE), Ordering::SeqCst);
    }

    /// When its wait ends, as worked out when it left its pCPU: what that
    /// pCPU reads at every decision while the vCPU waits, without its
    /// context's lock. Only a vCPU's own run changes what it is.
    pub fn wake_deadline(&self) -> Option<u64> {
        let at = self.wake_deadline.load(Ordering::Relaxed);
        (at != NO_DEADLINE).then_some(at)
    }

    pub fn set_wake_deadline(&self, at: Option<u64>) {
        self.wake_deadline.store(at.unwrap_or(NO_DEADLINE), Ordering::Relaxed);
    }

    pub fn has_queued(&self) -> bool {
        self.queued.load(Ordering::SeqCst)
    }

    /// Also says something new is queued, worth a refill even if the last
    /// found no room.
    pub fn set_queued(&self, queued: bool) {
        self.queued.store(queued, Ordering::SeqCst);
        if queued {
            self.stuck.store(false, Ordering::SeqCst);
        }
    }

    pub fn is_stuck(&self) -> bool {
        self.stuck.load(Ordering::SeqCst)
    }

    pub fn set_stuck(&self, stuck: bool) {
        self.stuck.store(stuck, Ordering::SeqCst);
    }

    pub fn is_on_cpu(&self) -> bool {
        self.on_cpu.load(Ordering::SeqCst)
    }

    /// Claims the right to start it: false while another start is under
    /// way. [`Vcpu::end_start`] gives it back.
    pub fn claim_start(&self) -> bool {
        self.starting.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    }

    pub fn end_start(&self) {
        self.starting.store(false, Ordering::SeqCst);
    }

    /// Marks the vCPU off its pCPU once its registers are saved.
    pub fn release(&self) {
        self.on_cpu.store(false, Ordering::SeqCst);
        self.mark();
    }

    /// [`Vcpu::release`] by the pCPU whose marks are `own`, which needs no
    /// mark of its own when its last look already queued the vCPU if it
    /// could run (`requeued`) and kept every mark of it since for later.
    pub fn release_from(&self, own: &Dirty, requeued: bool) {
        self.on_cpu.store(false, Ordering::SeqCst);
        self.mark_from(own, !requeued);
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
        self.reset_registers(entry, arg);
        self.reset_context();
    }

    /// [`Vcpu::reset`]'s first half: the general and EL1 system registers.
    pub fn reset_registers(&self, entry: u64, arg: u64) {
        let mut ctx = self.context.lock();
        ctx.regs = Regs::boot(entry, arg);
        ctx.el1 = El1Context::reset(partita_core::trap::psci::vmpidr(self.index));
    }

    /// [`Vcpu::reset`]'s second half: the rest of its context. A restart
    /// does the halves in separate steps (`reload::Step::Registers`,
    /// `Step::Context`), being about 500 instructions each.
    pub fn reset_context(&self) {
        let mut ctx = self.context.lock();
        ctx.fp = FpContext::default();
        // Whatever a pCPU still holds of the old run is dropped.
        ctx.fp_place = FpPlace::Saved;
        ctx.vgic = VgicContext::reset();
        ctx.debug = DebugContext::RESET;
        ctx.debug_owner = Ownership::Untouched;
        drop(ctx);
        self.queue.lock().clear();
        self.set_queued(false);
        self.set_wake_at(None);
        self.set_waiting(false);
        // An operation cut short by the reset would count for a whole one.
        self.setway_owed.store(0, Ordering::Relaxed);
    }
}

/// A pCPU that lists a vCPU: its dirty set and the vCPU's slot there.
pub struct Watcher {
    pub dirty: &'static Dirty,
    pub slot: usize,
}

/// One bit per slot of a pCPU: set by any pCPU when something that
/// decides whether that vCPU can run changed, cleared only by the pCPU
/// itself when it looks. Its scheduler's cost follows what changed, not
/// how many vCPUs it lists. A change the pCPU makes itself goes into its
/// own words, which no other pCPU touches: a plain store where the shared
/// ones take an atomic read-modify-write.
pub struct Dirty {
    shared: [AtomicU64; MAX_VCPUS_PER_PCPU / 64],
    own: [AtomicU64; MAX_VCPUS_PER_PCPU / 64],
}

impl Dirty {
    /// Everything is looked at once, at the first decision.
    pub const fn all() -> Self {
        Self {
            shared: [const { AtomicU64::new(u64::MAX) }; MAX_VCPUS_PER_PCPU / 64],
            own: [const { AtomicU64::new(0) }; MAX_VCPUS_PER_PCPU / 64],
        }
    }

    /// Asks the pCPU to look at `slot` again.
    pub fn mark(&self, slot: usize) {
        self.shared[slot / 64].fetch_or(1 << (slot % 64), Ordering::SeqCst);
    }

    /// The same, from the pCPU itself.
    pub fn mark_own(&self, slot: usize) {
        let word = &self.own[slot / 64];
        word.store(word.load(Ordering::Relaxed) | 1 << (slot % 64), Ordering::Relaxed);
    }

    /// The marks of slots 0-63, left in place.
    pub fn peek_first(&self) -> u64 {
        self.own[0].load(Ordering::Relaxed) | self.shared[0].load(Ordering::SeqCst)
    }

    /// The slots `64 * w ..` marked since the last call, each once; only
    /// an atomic exchange where another pCPU marked one.
    pub fn take(&self, w: usize) -> u64 {
        let mut bits = self.own[w].load(Ordering::Relaxed);
        if bits != 0 {
            self.own[w].store(0, Ordering::Relaxed);
        }
        if self.shared[w].load(Ordering::SeqCst) != 0 {
            bits |= self.shared[w].swap(0, Ordering::SeqCst);
        }
        bits
    }
}

/// What a partition shares with others: the shared-memory windows it maps
/// and their doorbells, and its virtual devices' interface pages
/// (guest-physical, host-physical) with their signals.
pub struct Shared {
    pub windows: Vec<Window>,
    pub doorbells: Vec<u32>,
    pub interfaces: Vec<(u64, u64)>,
    pub signals: Vec<u32>,
    /// The timed-I/O controller's read-only view: guest-physical, then
    /// host-physical.
    pub gpio_view: Option<(u64, u64)>,
    /// On a GICv2 board, the CPU interface the partition sees and the
    /// physical GICV it is: guest-physical, then host-physical.
    pub gic_cpu: Option<(u64, u64)>,
}

/// A GICv2 board's guests find their CPU interface where the physical GICC
/// is, and reach the virtual one (GICV) there without a trap.
pub fn gic_cpu_interface(platform: &model::Platform) -> Option<(u64, u64)> {
    platform.gicv2().then(|| (platform.gicr.base, platform.gicr.base + model::GICV2_GICV_OFFSET))
}

/// Builds a partition's stage-2 table and creates its vCPUs; [`lifecycle::first_boot`]
/// then loads it.
pub fn build(index: usize, config: model::Partition, boot: PartitionBoot, shared: Shared) -> Partition {
    let vmid = u16::try_from(index + 1).expect("VMID");
    let table = build_stage2(vmid, &config, &shared);
    // The emulated console's interrupt is the partition's own, as the
    // device tree says: a driver may enable it (it never fires, see vuart).
    let console = core::iter::once(CONSOLE_INTID);
    let virtual_spis: Vec<u32> = console.chain(shared.doorbells.iter().chain(&shared.signals).copied()).collect();
    let vttbr = table.vttbr();
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
    let initial_gic = virtual_gic(&config, &virtual_spis);
    let partition = Partition {
        gic: Mutex::new(initial_gic.clone()),
        initial_gic,
        interfaces: shared.interfaces.iter().map(|&(ipa, _)| interface_permission(&table, ipa)).collect(),
        _stage2: table,
        rank: config.priority,
        setway_cursor: AtomicU64::new(0),
        denied_reports: AtomicU32::new(0),
        hm: Mutex::new(PartitionHm::new(Policy::from(&config.health))),
        tlb_generation: AtomicU32::new(0),
        reload_regions: config.memory.iter().map(|r| r.host()).collect(),
        reload_loads: boot.loads.iter().map(|l| reload_load(&config, l)).collect(),
        reload_cursor: AtomicU64::new(0),
        reload_started: AtomicU64::new(0),
        times_loaded: AtomicU64::new(0),
        watchdog: Mutex::new(None),
        timed_io: None,
        config,
        boot,
        vttbr,
        state: AtomicU8::new(RunState::Running as u8),
        vcpus,
        console: Mutex::new(Console { uart: Pl011::new(), line: LineBuffer::new() }),
    };
    partition
}

fn new_vcpu(partition: usize, index: usize, home: usize, migrate_to: Vec<usize>) -> Vcpu {
    Vcpu {
        partition,
        index,
        home,
        pcpu: AtomicUsize::new(home),
        migrate_to,
        watchers: Once::new(),
        home_slot: AtomicUsize::new(UNWATCHED),
        state: AtomicU8::new(State::Off as u8),
        on_cpu: AtomicBool::new(false),
        starting: AtomicBool::new(false),
        waiting: AtomicBool::new(false),
        wake_at: AtomicU64::new(NO_DEADLINE),
        wake_deadline: AtomicU64::new(NO_DEADLINE),
        queue: Mutex::new(Queue::new()),
        queued: AtomicBool::new(false),
        stuck: AtomicBool::new(false),
        seen_lrs: Mutex::new([0; MAX_LRS]),
        context: ContextLock::new(Context {
            regs: Regs::default(),
            el1: El1Context::default(),
            fp: FpContext::default(),
            fp_place: FpPlace::Saved,
            vgic: VgicContext::reset(),
            debug: DebugContext::RESET,
            debug_owner: Ownership::Untouched,
        }),
        budget: None,
        setway_owed: AtomicU64::new(0),
    }
}

fn reload_load(config: &model::Partition, load: &partita_core::config::image::Load) -> reload::Load {
    // BootTable::check proved the load inside one RAM region.
    let pa = config.translate_ram(load.ipa).expect("checked load address");
    reload::Load { pa, offset: load.offset, len: load.len }
}

fn budget_meter(budget: model::Budget) -> BudgetMeter {
    let ticks = |us| us_to_ticks(us, partita_arch::platform::counter_frequency());
    BudgetMeter::new(ticks(budget.time_us), ticks(budget.period_us))
}

/// The distributor a partition starts with: its devices' SPIs, each routed
/// as configured, and its virtual SPIs (doorbells, accelerator signals),
/// routed to vCPU 0.
fn virtual_gic(config: &model::Partition, virtual_spis: &[u32]) -> PartitionGic {
    let devices = config.devices.iter().flat_map(|d| d.interrupts.iter().map(|i| (i.intid, i.vcpu as usize)));
    PartitionGic::new(config.vcpus.len(), &devices.collect::<Vec<_>>(), virtual_spis)
}

fn build_stage2(vmid: u16, config: &model::Partition, shared: &Shared) -> Stage2Table {
    let mut table = Stage2Table::new(vmid);
    for region in &config.memory {
        let kind = stage2::Kind::Ram { write: region.perms.write, exec: region.perms.exec };
        table.map(region.ipa, region.pa, region.size, kind).expect("stage-2 map of a RAM region");
    }
    for device in &config.devices {
        table.map(device.ipa, device.pa, device.size, stage2::Kind::Device).expect("stage-2 map of a device");
    }
    for window in &shared.windows {
        let kind = stage2::Kind::Ram { write: window.write, exec: false };
        table.map(window.ipa, window.pa, window.size, kind).expect("stage-2 map of a shared-memory window");
    }
    if let Some((ipa, pa)) = shared.gic_cpu {
        table
            .map(ipa, pa, model::GICV2_GICC_SIZE, stage2::Kind::Device)
            .expect("stage-2 map of the GICv2 CPU interface");
    }
    if let Some((ipa, pa)) = shared.gpio_view {
        let page = partita_core::config::limits::PAGE_SIZE;
        table.map(ipa, pa, page, stage2::Kind::DeviceReadOnly).expect("stage-2 map of the timed-I/O view");
    }
    // Unconnected: the guest reads its registers, and its first write is
    // its request for a PRR.
    let page = partita_core::fabric::interface::PAGE_SIZE;
    for &(ipa, pa) in &shared.interfaces {
        table.map(ipa, pa, page, stage2::Kind::Uncached { write: false }).expect("stage-2 map of an interface page");
    }
    table
}

fn interface_permission(table: &Stage2Table, ipa: u64) -> PagePermission {
    table.page_permission(ipa).expect("an interface page mapped at boot, one page")
}

impl Partition {
    /// One trap of `vcpu`'s set/way operation: cleans and invalidates the
    /// next step of the partition's RAM by address, so that a whole sweep
    /// covers all of it while no trap keeps interrupts masked for long.
    /// True once the operation's slice is done and the instruction may be
    /// stepped over; until then it traps again.
    pub fn clean_step(&self, vcpu: &Vcpu) -> bool {
        let cursor = self.setway_cursor.load(Ordering::Relaxed);
        let owed = vcpu.setway_owed.load(Ordering::Relaxed);
        let Some(step) = sysreg::setway_trap(&self.reload_regions, cursor, owed) else { return true };
        partita_arch::cache::clean_invalidate(step.pa, step.len);
        self.setway_cursor.store(step.cursor, Ordering::Relaxed);
        vcpu.setway_owed.store(step.owed, Ordering::Relaxed);
        step.owed == 0
    }
}
