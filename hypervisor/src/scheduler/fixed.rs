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
/// that runs next; `current`, the slot loaded here, if any. When the pCPU
/// changes hands, vlk's migration sees who takes it; a vCPU that came back
/// from a migration and is off every pCPU is at least as urgent, and the
/// look is taken again with it.
pub fn turn(
    sys: &System,
    me: &PerCpu,
    fp: &FixedPriority,
    current: Option<usize>,
    running: Option<(u8, usize)>,
    quantum_over: bool,
) -> Turn {
    let (mut ready, newcomer) = refresh(sys, me, fp, current);
    let turn = decide::turn(&mut ready, running, newcomer, quantum_over);
    let Turn::Switch { next, .. } = turn else { return turn };
    if me.migrating.is_empty() || !rebalance(sys, me, next.map(|(priority, _)| priority)) {
        return turn;
    }
    if let Some((priority, slot)) = next {
        // Back where it was taken from: it has not run.
        let _ = ready.enqueue_front(slot, priority);
    }
    drop(ready);
    let (mut ready, newcomer) = refresh(sys, me, fp, current);
    decide::turn(&mut ready, None, newcomer, false)
}

/// `me`'s ready queue, brought up to date with every vCPU marked since the
/// last look: the cost follows what changed, not how many vCPUs there are.
/// Every entry can then run (a change since marks it again), so the queue's
/// answers need no second look. One vCPU that became able to run, when it
/// is the only one marked, is given back rather than queued, for
/// `decide::turn` to run at once if it preempts. The vCPU loaded here
/// (`current`) is for the trap to decide: its mark is kept for the first
/// look after it leaves.
#[inline(always)]
fn refresh<'a>(
    sys: &System,
    me: &PerCpu,
    fp: &'a FixedPriority,
    current: Option<usize>,
) -> (Ready<'a>, Option<(u8, usize)>) {
    const { assert!(MAX_VCPUS_PER_PCPU == 128, "two words of marks") };
    let mut ready = fp.ready.lock();
    let mut marked = [me.dirty.take(0), if me.vcpus.len() > 64 { me.dirty.take(1) } else { 0 }];
    if let Some(slot) = current {
        let bit = 1 << (slot % 64);
        if marked[slot / 64 % 2] & bit != 0 {
            marked[slot / 64 % 2] &= !bit;
            me.dirty.mark_own(slot);
        }
    }
    let all = marked[0] | marked[1];
    let alone = all != 0 && all & (all - 1) == 0 && (marked[0] == 0 || marked[1] == 0);
    let mut newcomer = None;
    for (base, mut bits) in [(0, marked[0]), (64, marked[1])] {
        while bits != 0 {
            let slot = base + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let Some(&vcpu) = me.vcpus.get(slot) else { break };
            match rank(sys, me, vcpu) {
                Some(priority) if !ready.contains(slot) && alone => newcomer = Some((priority, slot)),
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
    }
    (ready, newcomer)
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
