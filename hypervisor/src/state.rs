//! What the pCPUs share once boot is done (`System`) and each pCPU's own
//! scheduling state (`PerCpu`, whose `Policy` owns its fields).
//!
//! The system is built once by the primary CPU and never moves. It is
//! looked up only where control enters Partita (a trap, the scheduler
//! loop, boot) and passed down from there: nothing below reaches back up
//! to a global.

use crate::channel::Channel;
use crate::fabric::Fabric;
use crate::partition::{Dirty, Partition, Vcpu};
use crate::scheduler::cyclic::{CyclicCpu, Plans};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use partita_arch::sync::Mutex;
use partita_core::config::limits::MAX_VCPUS_PER_PCPU;
use partita_core::config::model::Platform;
use partita_core::scheduler::readyq::ReadyQueue;
use spin::Once;

/// Everything the CPUs share once boot is done.
pub struct System {
    pub platform: Platform,
    pub partitions: Vec<Partition>,
    pub cpus: Vec<PerCpu>,
    /// Round-robin quantum in counter ticks.
    pub quantum: u64,
    /// Cyclic plans and the one in force.
    pub plans: Plans,
    /// The payload's data section, kept for partition restarts.
    pub data: &'static [u8],
    /// Inter-partition channels, in configuration order.
    pub channels: Vec<Channel>,
    /// The reconfigurable fabric, if the configuration has one.
    pub fabric: Option<Fabric>,
}

static SYSTEM: Once<System> = Once::new();

/// Publishes the system (primary CPU, once, before the others start).
pub fn publish(system: System) -> &'static System {
    SYSTEM.call_once(|| system)
}

/// The system, for an entry point to pass down.
pub fn system() -> &'static System {
    SYSTEM.get().expect("system not built")
}

impl System {
    /// This pCPU's state.
    pub fn here(&self) -> &PerCpu {
        &self.cpus[partita_arch::cpu::index()]
    }

    /// The partition a vCPU belongs to.
    pub fn partition_of(&self, vcpu: &Vcpu) -> &Partition {
        &self.partitions[vcpu.partition]
    }
}

/// The vCPUs pinned to one pCPU, which of them is on it, and its policy.
pub struct PerCpu {
    pub index: usize,
    /// Its own vCPUs, then those that may migrate here; a vCPU's index in
    /// this list is its slot on this pCPU.
    pub vcpus: Vec<&'static Vcpu>,
    current: AtomicUsize,
    pub policy: Policy,
    /// Its owner takes its private interrupts straight from the physical
    /// GIC (an exclusive pCPU of a partition with `interrupts = "direct"`).
    pub direct: bool,
    /// Slots whose runnability may have changed since this pCPU last looked.
    pub dirty: &'static Dirty,
    /// Per partition: the TLB generation this pCPU last invalidated for.
    pub tlb_seen: Vec<AtomicU32>,
    /// The EL1 timer PPIs masked here, one bit per INTID (see
    /// `vgic::mask_timer`).
    pub timers_masked: AtomicU32,
    /// The debug registers hold a vCPU's values rather than their reset
    /// state (`partita_core::partition::debug`).
    pub debug_dirty: AtomicBool,
    /// Partitions whose watchdog this pCPU watches: those with one whose
    /// vCPU 0 lives here.
    pub watchdogs: Vec<usize>,
    /// The slots of the vCPUs whose home this is and that may migrate:
    /// the only ones vlk's rebalancing looks at, after every interrupt.
    pub migrating: Vec<usize>,
    /// Partitions whose timed outputs this pCPU performs: those with a
    /// grant whose vCPU 0 lives here.
    pub timed_io: Vec<usize>,
    /// A request on another pCPU may want this pCPU's timer earlier.
    pub timed_io_rearm: AtomicBool,
    /// The counter value its EL2 timer is armed for (`u64::MAX`: disarmed),
    /// so that arming it again for the same instant writes nothing.
    pub armed_at: AtomicU64,
    /// The slot of the waiting vCPU whose wake-up is the earliest the EL2
    /// timer serves, as of its last arming (`usize::MAX`: none): the one
    /// a timer interrupt most likely wakes (`scheduler::timer_trap`).
    pub next_waker: AtomicUsize,
    /// The vCPU whose FP/SIMD values its registers may hold, as a
    /// `partita_core::partition::fp::Holder`; read and written only here.
    pub fp_holder: AtomicU32,
}

/// How a pCPU chooses what runs on it.
// One per pCPU, built once: the fixed-priority variant's size costs
// nothing, while boxing it would add an indirection to every decision.
#[allow(clippy::large_enum_variant)]
pub enum Policy {
    /// One vCPU owns the pCPU: no tick, and its WFI does not leave the guest.
    Exclusive,
    /// The most urgent runnable vCPU, round robin among equals.
    FixedPriority(FixedPriority),
    /// The owner of the current slot of the plan in force.
    Cyclic(CyclicCpu),
}

/// A fixed-priority pCPU's own state.
pub struct FixedPriority {
    /// The runnable vCPUs not loaded anywhere, by priority (only this
    /// pCPU touches it).
    pub ready: Mutex<ReadyQueue<MAX_VCPUS_PER_PCPU>>,
    /// The running vCPU's quantum is armed (it shares the pCPU).
    pub sharing: AtomicBool,
}

impl Policy {
    pub fn fixed_priority() -> Self {
        Policy::FixedPriority(FixedPriority { ready: Mutex::new(ReadyQueue::new()), sharing: AtomicBool::new(false) })
    }

    /// A cyclic pCPU, `cpu`, listing `vcpus`.
    pub fn cyclic(plans: &Plans, cpu: usize, vcpus: &[&'static Vcpu]) -> Self {
        Policy::Cyclic(CyclicCpu::new(plans, cpu, vcpus))
    }

    pub fn is_exclusive(&self) -> bool {
        matches!(self, Policy::Exclusive)
    }
}

const NONE: usize = usize::MAX;

impl PerCpu {
    pub fn new(index: usize, vcpus: Vec<&'static Vcpu>, policy: Policy, dirty: &'static Dirty) -> Self {
        Self {
            index,
            vcpus,
            current: AtomicUsize::new(NONE),
            policy,
            direct: false,
            dirty,
            tlb_seen: Vec::new(),
            timers_masked: AtomicU32::new(0),
            debug_dirty: AtomicBool::new(false),
            watchdogs: Vec::new(),
            migrating: Vec::new(),
            timed_io: Vec::new(),
            timed_io_rearm: AtomicBool::new(false),
            // Neither armed nor disarmed by Partita yet: the first arming writes.
            armed_at: AtomicU64::new(0),
            next_waker: AtomicUsize::new(usize::MAX),
            fp_holder: AtomicU32::new(0),
        }
    }

    /// The slot of the vCPU on this pCPU now, if any.
    pub fn current(&self) -> Option<usize> {
        let slot = self.current.load(Ordering::Relaxed);
        (slot != NONE).then_some(slot)
    }

    /// The vCPU on this pCPU now, if any.
    pub fn current_vcpu(&self) -> Option<&'static Vcpu> {
        self.current().map(|slot| self.vcpus[slot])
    }

    /// Sequentially consistent: see `scheduler::tlb_dropped_everywhere`.
    pub fn set_current(&self, slot: Option<usize>) {
        self.current.store(slot.unwrap_or(NONE), Ordering::SeqCst);
    }

    /// The partition of the vCPU on this pCPU now, as another pCPU sees it
    /// (see `scheduler::tlb_dropped_everywhere`).
    pub fn running_partition(&self) -> Option<usize> {
        let slot = self.current.load(Ordering::SeqCst);
        (slot != NONE).then(|| self.vcpus[slot].partition)
    }
}
