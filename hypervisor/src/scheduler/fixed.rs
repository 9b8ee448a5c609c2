//! Fixed-priority pCPUs: the most urgent runnable vCPU from the O(1) ready
//! queue (`partita_core::scheduler::readyq`), round robin among equals,
//! and vlk's migration of a vCPU out of a more urgent one's way. A trap
//! looks at the queue once: that look decides whether its vCPU goes on,
//! who follows it, and whether the follower's quantum runs.

use super::runnable::{rank, wants_cpu};
use crate::state::{FixedPriority, PerCpu, System};
use crate::trace;
use partita_arch::platform::{Gic, InterruptController};
use partita_arch::sync::MutexGuard;
use partita_core::config::limits::MAX_VCPUS_PER_PCPU;
use partita_core::scheduler::decide::{self, Turn};
use partita_core::scheduler::readyq::ReadyQueue;
use partita_core::trace::Kind;

type Ready<'a> = MutexGuard<'a, ReadyQueue<MAX_VCPUS_PER_PCPU>>;

/// The one look at `me`'s ready queue a trap or the idle loop takes
/// (`partita_core::scheduler::decide::turn`): `running`, the vCPU that
/// trapped (priority, slot) when it may go on, stays, or yields to the slot
/// that runs next. When the pCPU changes hands, vlk's migration sees who
/// takes it; a vCPU that came back from a migration and is off every pCPU
/// is at least as urgent, and the look is taken again with it.
pub fn turn(sys: &System, me: &PerCpu, fp: &FixedPriority, running: Option<(u8, usize)>, quantum_over: bool) -> Turn {
    let mut ready = refresh(sys, me, fp);
    let turn = decide::turn(&mut ready, running, quantum_over);
    let Turn::Switch { next, .. } = turn else { return turn };
    if me.migrating.is_empty() || !rebalance(sys, me, next.map(|(priority, _)| priority)) {
        return turn;
    }
    if let Some((priority, slot)) = next {
        // Back where it was taken from: it has not run.
        let _ = ready.enqueue_front(slot, priority);
    }
    drop(ready);
    decide::turn(&mut refresh(sys, me, fp), None, false)
}

/// `me`'s ready queue, brought up to date with every vCPU marked since the
/// last look: the cost follows what changed, not how many vCPUs there are.
/// Every entry can then run (a change since marks it again), so the queue's
/// answers need no second look.
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
