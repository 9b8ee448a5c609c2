//! Lazy FP/SIMD switching, as `partita_core::partition::fp` decides it: a
//! vCPU's values are loaded at its first FP/SIMD access on a pCPU, stay in
//! the registers across its pCPU's switches until another vCPU there needs
//! them, and are saved on the way out only by a vCPU that may migrate.

use super::{Context, Vcpu};
use crate::state::{PerCpu, System};
use crate::trace;
use core::sync::atomic::Ordering;
use partita_arch::{cpu, el2};
use partita_core::partition::fp::{Holder, Place};
use partita_core::trace::Kind;

/// `vcpu` as a pCPU's holder: partition + 1 and vCPU index, as the trace's
/// [`Kind::FpLoad`] names it.
fn holder_of(vcpu: &Vcpu) -> Holder {
    Holder(((vcpu.partition as u32 + 1) << 16) | vcpu.index as u32)
}

fn vcpu_of(sys: &'static System, holder: Holder) -> Option<&'static Vcpu> {
    let partition = (holder.0 >> 16).checked_sub(1)?;
    sys.partitions.get(partition as usize)?.vcpus.get((holder.0 & 0xffff) as usize).copied()
}

/// The vCPU of `ctx` is put on `me`: FP/SIMD trapped unless its values are
/// in `me`'s registers.
pub fn enter(me: &PerCpu, ctx: &Context) {
    el2::trap_fp(ctx.fp_place.trap_on_entry(me.index));
}

/// `vcpu` leaves `me` (its context `ctx`, locked): one that may migrate
/// takes its values along, since no other pCPU can reach these registers.
pub fn leave(me: &PerCpu, vcpu: &Vcpu, ctx: &mut Context) {
    if ctx.fp_place.save_on_leave(me.index, !vcpu.migrate_to.is_empty()) {
        ctx.fp.save();
        ctx.fp_place = Place::Saved;
        me.fp_holder.store(Holder::NONE.0, Ordering::Relaxed);
    }
}

/// The running `vcpu` touched FP/SIMD while trapped: the registers' holder
/// gets its values saved if they still are its own, `vcpu`'s are loaded,
/// and it runs the instruction again, untrapped. No lock is held across
/// another, so no order between contexts is needed.
pub fn take(sys: &'static System, me: &PerCpu, vcpu: &Vcpu) {
    el2::trap_fp(false);
    cpu::isb();
    let taker = holder_of(vcpu);
    let holder = Holder(me.fp_holder.load(Ordering::Relaxed));
    let mut saved = Holder::NONE;
    if let Some(previous) = vcpu_of(sys, holder) {
        let mut ctx = previous.context.lock();
        if holder.saves_holder(taker, me.index, ctx.fp_place) {
            ctx.fp.save();
            ctx.fp_place = Place::Saved;
            saved = holder;
        }
    }
    let mut ctx = vcpu.context.lock();
    // Its values are here already when the trap came for another reason
    // (none is known): loading the stale copy would lose them.
    if ctx.fp_place != Place::Loaded(me.index) {
        ctx.fp.restore();
        ctx.fp_place = Place::Loaded(me.index);
    }
    drop(ctx);
    me.fp_holder.store(taker.0, Ordering::Relaxed);
    trace::record(Kind::FpLoad, vcpu.partition, vcpu.index, saved.0);
}
