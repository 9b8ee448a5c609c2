//! The fast path: a trap that resumes its vCPU at once, answered before
//! the rest of the frame is saved (the vector in `partita_arch::exception`)
//! and without the scheduler's questions. Those questions need asking only
//! when something changed, and whatever can change for this pCPU (another
//! vCPU made runnable here, a stop, a restart, a quantum or slot that ends,
//! a budget or watchdog deadline, an interface page disconnected) arrives
//! as an interrupt: the kick SGI or the EL2 timer, taken through the full
//! path as soon as the guest resumes. So only a trap that cannot change
//! anything itself qualifies: the hypercalls that always resume
//! (`partita_core::hypercall::Call::always_resumes`), and a direct
//! partition's SGIs, which go to the physical GIC. With tracing on, every
//! trap takes the full path, so the trace sees it.

use crate::state;
use crate::{trace, vgic};
use core::sync::atomic::{AtomicU32, Ordering};
use partita_arch::exception::{kind, Regs};
use partita_arch::{cpu, MAX_CPUS};
use partita_core::trap::esr::{self, Trap};
use partita_core::trap::sysreg::{self, Policy};

/// Per pCPU: the vCPU running there, as partition + 1 and vCPU index
/// (0: none).
static RUNNING: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(0) }; MAX_CPUS];

/// The registers the fast path may read or write: the vector saved only the
/// caller-saved ones (x0-x18).
const SAVED: usize = 19;

/// A vCPU enters this pCPU.
pub fn enter(partition: usize, vcpu: usize) {
    RUNNING[cpu::index()].store(((partition as u32 + 1) << 16) | vcpu as u32, Ordering::Relaxed);
}

/// This pCPU's vCPU leaves it.
pub fn leave() {
    RUNNING[cpu::index()].store(0, Ordering::Relaxed);
}

/// True when the trap was answered and the vCPU resumes.
pub fn handle(regs: &mut Regs, trap_kind: u64) -> bool {
    let running = RUNNING[cpu::index()].load(Ordering::Relaxed);
    if trap_kind != kind::SYNC || running == 0 || trace::enabled() {
        return false;
    }
    let sys = state::system();
    let (p, v) = ((running >> 16) as usize - 1, (running & 0xffff) as usize);
    let (Some(part), esr) = (sys.partitions.get(p), cpu::esr()) else { return false };
    let Some(&vcpu) = part.vcpus.get(v) else { return false };
    match esr::decode(esr) {
        Trap::Hvc { imm: 0 } => {
            let args = [regs.x[0], regs.x[1], regs.x[2], regs.x[3], regs.x[4]];
            match partita_core::hypercall::decode(args) {
                Some(call) if call.always_resumes() => {
                    // Each of these answers and resumes; nothing is left to decide.
                    let _ = crate::hypercall::handle(sys, regs, part, vcpu, call);
                    true
                }
                _ => false,
            }
        }
        Trap::SysReg(access) if !access.read && usize::from(access.rt) < SAVED && part.direct() => {
            if sysreg::policy(&access.reg, false) != Policy::GenerateSgi {
                return false;
            }
            vgic::generate_sgi(part, v, regs.get(usize::from(access.rt)));
            regs.skip_instruction();
            true
        }
        _ => false,
    }
}
