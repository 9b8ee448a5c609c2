//! The fast path: a trap that resumes its vCPU at once, answered before
//! the rest of the frame is saved (the vector in `partita_arch::exception`)
//! and without the scheduler's questions. Those questions need asking only
//! when something changed, and whatever can change for this pCPU (another
//! vCPU made runnable here, a stop, a restart, a quantum or slot that ends,
//! a budget or watchdog deadline, an interface page disconnected) arrives
//! as an interrupt: the kick SGI or the EL2 timer, taken through the full
//! path as soon as the guest resumes. So only a trap that cannot change
//! anything itself qualifies, or whose change is of its own partition's
//! and announced like the rest: the hypercalls that always resume
//! (`partita_core::hypercall::decode_query`), a direct partition's SGIs,
//! which go to the physical GIC (the vector answers most of them itself,
//! from the route [`enter`] gives it), an SGI a vCPU sends only to itself,
//! which wakes nobody, an access to its emulated console
//! (a whole line kicks the pCPU), a write to an accelerator's
//! interface page whose device is connected, or connects by Path 1 in the
//! trap (an idle PRR, assigned without preempting anyone), and an IRQ that
//! is the running vCPU's own timer: forwarded to it, it wakes nobody else
//! and leaves the scheduler's answer as it was. A port send that changes
//! only its port (no receiver to wake, no caller to park) qualifies too,
//! so does a reported error whose action goes on (`log`, `ignore`: its
//! console line is announced by a kick like any other), and so does a
//! set/way operation, which cleans a step of its own partition's RAM:
//! with the full path's questions, each cost about twice its own work. A vCPU's first FP/SIMD access on its pCPU,
//! which loads its values, is answered here too. Any
//! other IRQ, once acknowledged, is handed to the full path
//! ([`take_acknowledged`]). With tracing on, every trap takes the full
//! path, so the trace sees it: no vCPU is offered, and the vector is given
//! no SGI route.
//!
//! Every other trap pays for the questions asked here, so the first ones
//! look at the syndrome and x0 alone.

use crate::partition::{Partition, Vcpu};
use crate::state;
use crate::trap::exit::Reply;
use crate::{trace, vgic};
use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use partita_arch::exception::{kind, Regs};
use partita_arch::platform::{Gic, InterruptController};
use partita_arch::sync::StaticRef;
use partita_arch::{cpu, direct_sgi, residency, MAX_CPUS};
use partita_core::health::Event;
use partita_core::hypercall::{self, Call};
use partita_core::residency::path;
use partita_core::trap::esr::{self, ec};
use partita_core::trap::vuart;
use partita_core::vgic::direct::SgiRoute;
use partita_core::vgic::{is_timer, sgi_targets};

/// Per pCPU: the vCPU running there and its partition, if offered.
static RUNNING: [StaticRef<Vcpu>; MAX_CPUS] = [const { StaticRef::none() }; MAX_CPUS];
static RUNNING_PARTITION: [StaticRef<Partition>; MAX_CPUS] = [const { StaticRef::none() }; MAX_CPUS];

/// The registers the fast path may read or write: the vector saved only the
/// caller-saved ones (x0-x18).
const SAVED: u8 = 19;

/// Per pCPU: an IRQ acknowledged here and left to the full path, as its
/// INTID + 1 (0: none).
static ACKNOWLEDGED: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(0) }; MAX_CPUS];

/// HVC #0, Partita's and PSCI's calling convention.
const HVC_0: u64 = (ec::HVC64 as u64) << 26 | 1 << 25;

/// Per pCPU: whether the vector has an SGI route (`partita_arch::direct_sgi`)
/// and whether it covers every vCPU of the partition.
static ROUTE: [AtomicU8; MAX_CPUS] = [const { AtomicU8::new(NO_ROUTE) }; MAX_CPUS];
const NO_ROUTE: u8 = 0;
const ROUTE_COMPLETE: u8 = 1;
const ROUTE_PARTIAL: u8 = 2;

/// A vCPU enters this pCPU: offered to the fast path unless tracing is
/// on, which then asks nothing more. A direct partition's vCPU also gets
/// its SGIs answered from the vector.
pub fn enter(part: &'static Partition, vcpu: &'static Vcpu) {
    if trace::enabled() {
        RUNNING[cpu::index()].set(None);
        return;
    }
    let me = cpu::index();
    RUNNING[me].set(Some(vcpu));
    RUNNING_PARTITION[me].set(Some(part));
    if part.direct() {
        offer_sgi_route(part);
    }
}

/// This pCPU's vCPU leaves it.
pub fn leave() {
    let me = cpu::index();
    RUNNING[me].set(None);
    // Only this pCPU writes its entry: a load, not a read-modify-write,
    // on every switch.
    if ROUTE[me].load(Ordering::Relaxed) != NO_ROUTE {
        ROUTE[me].store(NO_ROUTE, Ordering::Relaxed);
        direct_sgi::withdraw();
    }
}

/// The vector sends `part`'s SGIs to its vCPUs' homes from now on. A home
/// whose pCPU has not started yet has no target: the vector declines an
/// SGI to it, and the full answer (which drops it, as before) offers the
/// route again, so that the vector takes over once every pCPU is up.
fn offer_sgi_route(part: &Partition) {
    let homes = part.vcpus.iter().map(|vcpu| Gic::mpidr(vcpu.home));
    let route = SgiRoute::new(homes, Gic::direct_reserved_sgis());
    let state = if route.complete(part.vcpus.len()) { ROUTE_COMPLETE } else { ROUTE_PARTIAL };
    ROUTE[cpu::index()].store(state, Ordering::Relaxed);
    direct_sgi::offer(&route);
}

/// True when the trap was answered and the vCPU resumes. The questions
/// every trap is asked are here; the answers are out of line, so that a
/// trap that does not qualify leaves at once.
pub fn handle(regs: &mut Regs, trap_kind: u64) -> bool {
    if trap_kind != kind::SYNC {
        return trap_kind == kind::IRQ && interrupt();
    }
    let esr = cpu::esr();
    if esr & 0xffff_ffff == HVC_0 {
        residency::note(partita_core::residency::hypercall(regs.x[0]));
        match regs.x[0] {
            hypercall::id::PORT_SEND => return port_send(regs),
            hypercall::id::HM_REPORT => return hm_report(regs),
            _ => {}
        }
        matches!(hypercall::decode_query(regs.x[0], regs.x[1]), Some(call) if query(regs, call))
    } else if esr::class(esr) == ec::DABT_LOWER {
        data_abort(regs)
    } else if esr::class(esr) == ec::FP_ACCESS {
        residency::note(path::FP);
        fp_access()
    } else if esr::set_way(esr) {
        residency::note(path::SET_WAY);
        set_way(regs)
    } else {
        residency::note(path::SGI);
        matches!(esr::sgi1r_write(esr), Some(rt) if rt < SAVED && sgi(regs, rt))
    }
}

/// The running vCPU's partition index, unless the full path must answer.
fn running_partition() -> Option<usize> {
    Some(RUNNING[cpu::index()].get()?.partition)
}

/// The running vCPU and its partition, unless the full path must answer
/// (see [`enter`]).
fn running() -> Option<(&'static Partition, &'static Vcpu)> {
    let me = cpu::index();
    let vcpu = RUNNING[me].get()?;
    Some((RUNNING_PARTITION[me].get()?, vcpu))
}

#[inline(never)]
fn query(regs: &mut Regs, call: Call) -> bool {
    let Some(partition) = running_partition() else { return false };
    let answer = crate::hypercall::answer_query(state::system(), regs, partition, call);
    let Some((status, value)) = answer else { return false };
    regs.x[0] = status as u64;
    regs.x[1] = value;
    true
}

/// PORT_SEND when all it changes is the port (`channel::calls::send_at_once`).
#[inline(never)]
fn port_send(regs: &mut Regs) -> bool {
    let Some((part, vcpu)) = running() else { return false };
    let sys = state::system();
    let Some(Reply::Done(status, values)) =
        crate::channel::calls::send_at_once(sys, part, vcpu, regs.x[1], regs.x[2], regs.x[3])
    else {
        return false;
    };
    regs.x[0] = status as u64;
    regs.x[1..4].copy_from_slice(&values);
    true
}

/// HM_REPORT when the partition's policy lets it go on (`log`, `ignore`).
#[inline(never)]
fn hm_report(regs: &mut Regs) -> bool {
    let Some((part, vcpu)) = running() else { return false };
    let code = regs.x[1];
    if !crate::health::raise_going_on(part, vcpu, Event::Reported(code as u32), code) {
        return false;
    }
    regs.x[0] = hypercall::status::OK as u64;
    true
}

/// An access to the partition's emulated console, which changes nothing
/// but the console (a whole line kicks this pCPU, like any change that
/// wants the full path), or a write to an accelerator's interface page
/// whose device is connected, or connects at once by Path 1: it runs
/// again, as written.
#[inline(never)]
fn data_abort(regs: &mut Regs) -> bool {
    let Some((part, _)) = running() else { return false };
    let syndrome = cpu::syndrome();
    let ipa = esr::fault_ipa(syndrome.hpfar, syndrome.far);
    let offset = ipa.wrapping_sub(part.config.console);
    if offset < vuart::PAGE_SIZE {
        residency::note(path::MMIO);
        let Some(access) = esr::data_access(syndrome.esr).filter(|a| a.rt < SAVED) else { return false };
        crate::trap::mmio::console_access(regs, part, access, offset);
        regs.skip_instruction();
        return true;
    }
    residency::note(path::ACCEL_REQUEST);
    let sys = state::system();
    let Some(fabric) = &sys.fabric else { return false };
    let Some(partition) = running_partition() else { return false };
    fabric.connect_in_trap(sys, partition, ipa)
}

/// A set/way operation: one step of its slice, stepped over once the
/// slice is done (`Partition::clean_step`).
#[inline(never)]
fn set_way(regs: &mut Regs) -> bool {
    let Some((part, vcpu)) = running() else { return false };
    if part.clean_step(vcpu) {
        regs.skip_instruction();
    }
    true
}

/// The IRQ the fast path acknowledged on this pCPU and left to the full
/// path, still there.
pub fn acknowledged() -> Option<u32> {
    ACKNOWLEDGED[cpu::index()].load(Ordering::Relaxed).checked_sub(1)
}

/// The IRQ the fast path acknowledged on this pCPU and left to the full
/// path, which takes it before asking the GIC for more.
pub fn take_acknowledged() -> Option<u32> {
    // Only this pCPU touches its entry, with interrupts masked: no swap.
    let acknowledged = &ACKNOWLEDGED[cpu::index()];
    let intid = acknowledged.load(Ordering::Relaxed).checked_sub(1)?;
    acknowledged.store(0, Ordering::Relaxed);
    Some(intid)
}

/// The running vCPU's timer goes to it as the full path forwards it, with
/// its list registers filled as they would be on the way out. Any other
/// interrupt, or any with no vCPU offered, is left to the full path at
/// once, before the vCPU is looked up.
#[inline(never)]
fn interrupt() -> bool {
    let Some(intid) = Gic::acknowledge() else { return true };
    residency::note(path::OWN_TIMER);
    let running = if is_timer(intid) { running() } else { None };
    let Some((part, vcpu)) = running else {
        ACKNOWLEDGED[cpu::index()].store(intid + 1, Ordering::Relaxed);
        return false;
    };
    vgic::forward_own_timer(part, vcpu, intid);
    vgic::flush(vcpu);
    true
}

/// The running vCPU's first FP/SIMD access on this pCPU: its values are
/// loaded, traced or not (`crate::partition::fp`).
#[inline(never)]
fn fp_access() -> bool {
    let sys = state::system();
    let me = sys.here();
    let Some(slot) = me.current() else { return false };
    crate::partition::fp::take(sys, me, me.vcpus[slot]);
    true
}

/// A direct partition's SGIs the vector declined, and an SGI a vCPU sends
/// only to itself (a kernel's self-IPI, Thread-Metric's interrupt tests),
/// which goes into its own list registers or queue and wakes nobody.
#[inline(never)]
fn sgi(regs: &mut Regs, rt: u8) -> bool {
    let Some((part, vcpu)) = running() else { return false };
    let value = regs.x[usize::from(rt)];
    if part.direct() {
        vgic::generate_sgi(part, vcpu.index, value);
        regs.skip_instruction();
        if ROUTE[cpu::index()].load(Ordering::Relaxed) == ROUTE_PARTIAL {
            offer_sgi_route(part);
        }
        return true;
    }
    let (_, targets) = sgi_targets(value, part.vcpus.len(), vcpu.index);
    if targets != 1 << vcpu.index {
        return false;
    }
    vgic::generate_sgi(part, vcpu.index, value);
    vgic::flush(vcpu);
    regs.skip_instruction();
    true
}
