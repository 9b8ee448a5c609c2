//! Fixed-priority pCPUs: the most urgent runnable vCPU from the O(1) ready
//! queue (`partita_core::scheduler::readyq`), round robin among equals,
//! and vlk's migration of a vCPU out of a more urgent one's way.

use super::runnable::{rank, wants_cpu};
use crate::state::{FixedPriority, PerCpu, System};
use crate::trace;
use partita_arch::platform::{Gic, InterruptController};
use partita_arch::sync::MutexGuard;
use partita_core::config::limits::MAX_VCPUS_PER_PCPU;
use partita_core::scheduler::decide;
use partita_core::scheduler::readyq::ReadyQueue;
use partita_core::trace::Kind;

type Ready<'a> = MutexGuard<'a, ReadyQueue<MAX_VCPUS_PER_PCPU>>;

/// The slot `me` should run now, taken off its ready queue.
pub fn choose(sys: &System, me: &PerCpu, fp: &FixedPriority) -> Option<usize> {
    let mut ready = refresh(sys, me, fp);
    let mut best = highest(sys, me, &mut ready);
    // A vCPU that came back and is off every pCPU can run at once.
    if rebalance(sys, me, best.map(|(priority, _)| priority)) {
        drop(ready);
        ready = refresh(sys, me, fp);
        best = highest(sys, me, &mut ready);
    }
    let (_, slot) = best?;
    ready.remove(slot);
    Some(slot)
}

/// `me`'s ready queue, brought up to date with every vCPU marked since the
/// last look: the cost follows what changed, not how many vCPUs there are.
fn refresh<'a>(sys: &System, me: &PerCpu, fp: &'a FixedPriority) -> Ready<'a> {
    let mut ready = fp.ready.lock();
    for slot in me.dirty.take().filter(|&slot| slot < me.vcpus.len()) {
        match rank(sys, me, me.vcpus[slot]) {
            Some(priority) if !ready.contains(slot) => {
                // Cannot fail: the slot is in range and not queued.
                let _ = ready.enqueue(slot, priority);
            }
            Some(_) => {}
            None => {
                ready.remove(slot);
            }
        }
    }
    ready
}

/// The most urgent queued vCPU, with its priority. An entry that can no
/// longer run (it changed after it was marked and looked at) is dropped; it
/// is marked, and queued again, when it can.
fn highest(sys: &System, me: &PerCpu, ready: &mut Ready<'_>) -> Option<(u8, usize)> {
    while let Some((priority, slot)) = ready.highest() {
        if rank(sys, me, me.vcpus[slot]).is_some() {
            return Some((priority, slot));
        }
        ready.remove(slot);
    }
    None
}

/// The priority of the most urgent vCPU waiting for `me`, besides the one
/// running.
pub fn contender(sys: &System, me: &PerCpu, fp: &FixedPriority) -> Option<u8> {
    highest(sys, me, &mut refresh(sys, me, fp)).map(|(priority, _)| priority)
}

/// True when the running vCPU in `slot` shares `me` with a peer at least
/// as urgent, so its quantum must run.
pub fn must_share(sys: &System, me: &PerCpu, fp: &FixedPriority, slot: usize) -> bool {
    decide::needs_quantum(sys.partition_of(me.vcpus[slot]).rank, contender(sys, me, fp))
}

/// vlk's migration, decided by a vCPU's home pCPU (`decide::migration`)
/// with `urgent` the most urgent priority that wants it. The pCPU a vCPU
/// leaves is kicked, and kicks back once its registers are saved. Returns
/// true if a vCPU came back.
pub fn rebalance(sys: &System, me: &PerCpu, urgent: Option<u8>) -> bool {
    let mut back = false;
    for vcpu in me.migrating.iter().map(|&slot| me.vcpus[slot]) {
        let part = sys.partition_of(vcpu);
        let outranked = urgent.is_some_and(|u| u > part.rank);
        let from = vcpu.pcpu();
        let wants = outranked && from == me.index && wants_cpu(part, vcpu);
        let Some(target) = decide::migration(me.index, from, vcpu.migrate_to[0], outranked, wants) else { continue };
        vcpu.move_to(target);
        partita_arch::residency::note(partita_core::residency::path::MIGRATION);
        trace::record(Kind::Migrate, vcpu.partition, vcpu.index, target as u32);
        Gic::kick(if target == me.index { from } else { target });
        back |= target == me.index;
    }
    back
}
