//! Cyclic (ARINC 653 style) pCPUs: which vCPU owns the pCPU now, and
//! until when, computed from the plan in force and the frame origin every
//! cyclic pCPU shares.
//!
//! A slot's vCPU gets the pCPU from the slot's start to its end and nobody
//! else does: while it waits (WFI) the slot idles, and an interrupt for it
//! brings it back before the slot ends. Time no slot claims is idle.

use crate::partition::Vcpu;
use crate::trace;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use partita_arch::sync::Mutex;
use partita_core::config::model::{CyclicCore, Plan, Slot};
use partita_core::scheduler::cyclic::{self, Cursor, Schedule, Timeline, Window};
use partita_core::trace::Kind;

/// Lateness beyond this many counter ticks is traced as this value.
const MAX_TRACED_LATENESS: u64 = 0xffff;

/// The declared plans and the one in force.
pub struct Plans {
    plans: Vec<Plan>,
    schedule: Mutex<Schedule>,
    hz: u64,
}

/// A cyclic pCPU's own state.
pub struct CyclicCpu {
    /// The end of the current slot or idle gap (counter value).
    pub until: AtomicU64,
    /// The major frame it was in when it last looked, where the next look
    /// starts searching (plans without a timeline).
    frame_hint: AtomicU64,
    /// Where it was on its timeline when it last looked.
    cycle: AtomicU64,
    stretch: AtomicUsize,
    /// The planned start of the last slot traced, so each is traced once.
    last_slot_start: AtomicU64,
    /// Per plan: this pCPU's part of it, placed on the counter.
    plans: Vec<CpuPlan>,
}

/// A plan as one cyclic pCPU runs it, worked out when the plans are loaded.
struct CpuPlan {
    /// `None` where the pCPU has no slots in the plan (it idles), or its
    /// timeline would be too long (it takes the exact path).
    timeline: Option<Timeline>,
    /// Per slot of the plan's core: its vCPU's index among the pCPU's.
    owners: Vec<Option<usize>>,
}

impl CyclicCpu {
    /// pCPU `cpu`, whose vCPUs are `vcpus`.
    pub fn new(plans: &Plans, cpu: usize, vcpus: &[&Vcpu]) -> Self {
        let plans = plans
            .plans
            .iter()
            .map(|plan| {
                let core = core_of(plan, cpu);
                let owners = core.map_or(Vec::new(), |core| {
                    let owner = |slot: &Slot| {
                        vcpus.iter().position(|v| v.partition == slot.partition && v.index == slot.vcpu as usize)
                    };
                    core.slots.iter().map(owner).collect()
                });
                CpuPlan { timeline: core.and_then(|core| Timeline::new(core, plans.hz)), owners }
            })
            .collect();
        Self {
            until: AtomicU64::new(0),
            frame_hint: AtomicU64::new(0),
            cycle: AtomicU64::new(0),
            stretch: AtomicUsize::new(0),
            last_slot_start: AtomicU64::new(u64::MAX),
            plans,
        }
    }
}

/// What a cyclic pCPU does now.
pub struct Now {
    /// Index into the pCPU's vCPUs of the slot's owner; `None` when idle.
    pub owner: Option<usize>,
    /// When to look again: the end of the slot or of the idle gap.
    pub until: u64,
}

impl Plans {
    /// Nothing runs cyclically until [`Plans::start`].
    pub fn new(plans: Vec<Plan>, hz: u64) -> Self {
        Self { plans, schedule: Mutex::new(Schedule::new(0, u64::MAX)), hz }
    }

    /// The first plan's first major frame starts at counter value `origin`.
    pub fn start(&self, origin: u64) {
        *self.schedule.lock() = Schedule::new(0, origin);
    }

    pub fn count(&self) -> usize {
        self.plans.len()
    }

    /// True when `cpu` runs cyclically (the same in every plan).
    pub fn is_cyclic(&self, cpu: usize) -> bool {
        self.plans.first().is_some_and(|plan| core_of(plan, cpu).is_some())
    }

    /// Where pCPU `cpu` (its state `me`, its slots `vcpus`) stands at
    /// `now`. Traces a slot's start the first time its pCPU sees it, with
    /// how late that is.
    pub fn now(&self, cpu: usize, me: &CyclicCpu, vcpus: &[&Vcpu], now: u64) -> Now {
        let (index, origin) = self.schedule.lock().at(now);
        if let Some(local) = me.plans.get(index) {
            if let Some(timeline) = &local.timeline {
                let mut cursor =
                    Cursor { cycle: me.cycle.load(Ordering::Relaxed), stretch: me.stretch.load(Ordering::Relaxed) };
                let Some(place) = timeline.at(origin, now, &mut cursor) else {
                    return Now { owner: None, until: origin };
                };
                me.cycle.store(cursor.cycle, Ordering::Relaxed);
                me.stretch.store(cursor.stretch, Ordering::Relaxed);
                let owner = place.window.and_then(|window| {
                    // A build that keeps residency files the slot's start
                    // as the trace does; the product asks neither.
                    if trace::enabled() || partita_arch::residency::ENABLED {
                        if let Some(slot) = core_of(&self.plans[index], cpu).map(|core| core.slots[window.index]) {
                            note_slot_start(me, index, &window, slot.partition, slot.vcpu as usize, now);
                        }
                    }
                    local.owners.get(window.index).copied().flatten()
                });
                return Now { owner, until: place.until };
            }
        }
        let Some(core) = core_of(&self.plans[index], cpu) else { return Now { owner: None, until: u64::MAX } };
        let hint = me.frame_hint.load(Ordering::Relaxed);
        let Some(position) = cyclic::position(core, origin, self.hz, now, hint) else {
            return Now { owner: None, until: cyclic::next_boundary(core, origin, self.hz, now) };
        };
        me.frame_hint.store(position.frame, Ordering::Relaxed);
        let owner = position.window.and_then(|window| {
            let slot = core.slots[window.index];
            note_slot_start(me, index, &window, slot.partition, slot.vcpu as usize, now);
            vcpus.iter().position(|v| v.partition == slot.partition && v.index == slot.vcpu as usize)
        });
        Now { owner, until: position.until }
    }

    /// The plan in force at `now` and the pending one, if any.
    pub fn current(&self, now: u64) -> (usize, Option<usize>) {
        let mut schedule = self.schedule.lock();
        let (plan, _) = schedule.at(now);
        (plan, schedule.switch.map(|(next, _)| next))
    }

    /// Switches to plan `index` at the next major frame; returns the
    /// counter value at which it takes effect, `None` for no such plan.
    pub fn request(&self, index: usize, now: u64) -> Option<u64> {
        if index >= self.plans.len() {
            return None;
        }
        let mut schedule = self.schedule.lock();
        let (current, _) = schedule.at(now);
        let frame_us = self.plans[current].cores.first().map_or(0, |core| core.major_frame_us);
        Some(schedule.request(index, frame_us, self.hz, now))
    }
}

fn core_of(plan: &Plan, cpu: usize) -> Option<&CyclicCore> {
    plan.cores.iter().find(|core| core.cpu as usize == cpu)
}

/// Records `SlotStart` once per slot instance: `arg` packs the plan index
/// (bits 8..16), the slot index (0..8) and the lateness in ticks (16..32).
fn note_slot_start(me: &CyclicCpu, plan: usize, window: &Window, partition: usize, vcpu: usize, now: u64) {
    if me.last_slot_start.swap(window.start, Ordering::Relaxed) == window.start {
        return;
    }
    partita_arch::residency::note(partita_core::residency::path::SLOT);
    let late = now.saturating_sub(window.start).min(MAX_TRACED_LATENESS);
    let arg = (late << 16) as u32 | (plan as u32 & 0xff) << 8 | (window.index as u32 & 0xff);
    trace::record_at(now, Kind::SlotStart, partition, vcpu, arg);
}
