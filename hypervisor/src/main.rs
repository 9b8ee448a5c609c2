//! Partita: a static-partitioning, mixed-criticality hypervisor for AArch64.
//!
//! Boot (`boot`) turns the payload into running partitions (`state`); every
//! CPU then runs its scheduler loop (`scheduler`), and every guest exit
//! lands in `trap`. All `unsafe` code lives in `partita-arch`; this crate
//! only exports the three entry symbols the assembly calls.
#![no_std]
#![no_main]
#![deny(unsafe_code)]

extern crate alloc;

mod boot;
mod channel;
mod console;
mod fabric;
mod health;
mod hypercall;
mod partition;
mod scheduler;
mod selfcheck;
mod state;
mod timedio;
mod trace;
mod trap;
mod vgic;

use partita_arch::exception::Regs;

/// First Rust code on every CPU: CPU 0 boots the system, the others join.
#[allow(unsafe_code)] // The assembly calls this symbol by name.
#[unsafe(no_mangle)]
extern "C" fn hv_main(cpu: usize, _host_dtb: u64) -> ! {
    partita_arch::residency::begin(partita_core::residency::path::BOOT);
    if cpu == 0 {
        boot::primary()
    } else {
        boot::secondary(cpu)
    }
}

/// Every exception from a guest.
#[allow(unsafe_code)] // The assembly calls this symbol by name.
#[unsafe(no_mangle)]
extern "C" fn hv_trap(regs: &mut Regs, kind: u64) {
    // FIQs and SErrors come here without the fast path's offer.
    if kind > partita_arch::exception::kind::IRQ {
        trace::el2_entered();
    }
    trap::handle(regs, kind);
    trace::el2_leaving();
}

/// The fast path's offer: all ones when the trap was answered, else `kind`
/// for [`hv_trap`].
#[allow(unsafe_code)] // The assembly calls this symbol by name.
#[unsafe(no_mangle)]
extern "C" fn hv_fast(regs: &mut Regs, kind: u64) -> u64 {
    trace::el2_entered();
    if trap::fast::handle(regs, kind) {
        trace::el2_leaving();
        u64::MAX
    } else {
        kind
    }
}

/// An exception taken at EL2 itself: a hypervisor bug.
#[allow(unsafe_code)] // The assembly calls this symbol by name.
#[unsafe(no_mangle)]
extern "C" fn hv_fatal(regs: &mut Regs, _kind: u64) -> ! {
    let s = partita_arch::cpu::syndrome();
    let class = partita_core::trap::esr::class(s.esr);
    console::emergency(format_args!(
        "PANIC on cpu {}: {} at EL2 (EC 0x{:02x}, ESR 0x{:x}), ELR 0x{:x}, FAR 0x{:x}",
        partita_arch::cpu::index(),
        partita_core::trap::esr::class_name(class),
        class,
        s.esr,
        regs.pc,
        s.far
    ));
    partita_arch::cpu::park()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let s = partita_arch::cpu::syndrome();
    let (file, line) = info.location().map_or(("?", 0), |l| (l.file(), l.line()));
    console::emergency(format_args!(
        "PANIC on cpu {}: {} at {file}:{line} (last exception: EC 0x{:02x}, ELR 0x{:x}, FAR 0x{:x})",
        partita_arch::cpu::index(),
        info.message(),
        partita_core::trap::esr::class(s.esr),
        partita_arch::cpu::exception_return_address(),
        s.far
    ));
    partita_arch::cpu::park()
}
