//! The EL2 vector table, the trap frame path, and guest entry.
//!
//! A trap from a guest saves the registers a call may clobber, with ELR and
//! SPSR, into a [`Regs`] frame on the CPU's EL2 stack and offers it to
//! `hv_fast(&mut Regs, kind)`: a trap or an IRQ that resumes the same
//! vCPU at once is answered there, and only those registers are restored.
//! Otherwise the rest of the frame is saved and `hv_trap(&mut Regs, kind)`
//! gets it; when that returns, the whole frame (possibly changed) is
//! restored and the guest resumes. Both are defined by the hypervisor
//! crate.
//! To run another vCPU the hypervisor calls [`enter_guest`] with that
//! vCPU's context locked, which resets the stack and restores the frame
//! straight from the context.

use crate::sync::ContextGuard;
use crate::{MAX_CPUS, STACK_SIZE};
use core::sync::atomic::AtomicBool;
pub use partita_core::partition::vcpu::Regs;

/// Why the hypervisor was entered from a guest (the `kind` argument).
pub mod kind {
    pub const SYNC: u64 = 0;
    pub const IRQ: u64 = 1;
    pub const FIQ: u64 = 2;
    pub const SERROR: u64 = 3;
}

const FRAME: usize = core::mem::size_of::<Regs>();
// The assembly moves the frame in 16-byte pairs.
const _: () = assert!(FRAME == 272);
const _: () = assert!(MAX_CPUS * STACK_SIZE < 1 << 24);

core::arch::global_asm!(
    r#"
    .macro lower_entry kind
    .balign 0x80
    sub     sp, sp, #{frame}
    stp     x0, x1, [sp]
    mov     x1, #\kind
    b       lower_trap
    .endm

    .macro current_entry kind
    .balign 0x80
    sub     sp, sp, #{frame}
    stp     x0, x1, [sp]
    mov     x1, #\kind
    b       current_trap
    .endm

    .section .text.vectors, "ax"
    .balign 0x800
    .global el2_vectors
el2_vectors:
    current_entry 0
    current_entry 1
    current_entry 2
    current_entry 3
    current_entry 0
    current_entry 1
    current_entry 2
    current_entry 3
    lower_entry 0
    lower_entry 1
    lower_entry 2
    lower_entry 3
    lower_entry 0
    lower_entry 1
    lower_entry 2
    lower_entry 3

    // The registers a call may clobber, with ELR and SPSR: all a fast
    // path needs, since whatever it calls keeps x19-x29 as the guest left
    // them.
    .macro save_caller_saved
    stp     x2, x3, [sp, #16 * 1]
    stp     x4, x5, [sp, #16 * 2]
    stp     x6, x7, [sp, #16 * 3]
    stp     x8, x9, [sp, #16 * 4]
    stp     x10, x11, [sp, #16 * 5]
    stp     x12, x13, [sp, #16 * 6]
    stp     x14, x15, [sp, #16 * 7]
    stp     x16, x17, [sp, #16 * 8]
    str     x18, [sp, #16 * 9]
    mrs     x2, elr_el2
    stp     x30, x2, [sp, #16 * 15]
    mrs     x2, spsr_el2
    str     x2, [sp, #16 * 16]
    .endm

    .macro save_callee_saved
    str     x19, [sp, #16 * 9 + 8]
    stp     x20, x21, [sp, #16 * 10]
    stp     x22, x23, [sp, #16 * 11]
    stp     x24, x25, [sp, #16 * 12]
    stp     x26, x27, [sp, #16 * 13]
    stp     x28, x29, [sp, #16 * 14]
    .endm

    .macro save_rest
    save_caller_saved
    save_callee_saved
    mov     x0, sp
    .endm

    // hv_fast(regs, kind) answers what it can without the rest of the
    // frame and returns all ones; otherwise it returns the kind, and the
    // whole frame goes to hv_trap. A synchronous exception or an IRQ can
    // qualify; the synchronous one is asked first, at no extra cost.
lower_trap:
    save_caller_saved
    cbnz    x1, lower_async
lower_fast:
    mov     x0, sp
    bl      hv_fast
    cmn     x0, #1
    b.eq    fast_return
    mov     x1, x0
slow_trap:
    save_callee_saved
    mov     x0, sp
    bl      hv_trap
    b       return_to_guest

lower_async:
    cmp     x1, #{irq}
    b.eq    lower_fast
    b       slow_trap

    // The full frame: the registers the call kept, then the rest.
    .global return_to_guest
return_to_guest:
    ldr     x19, [sp, #16 * 9 + 8]
    ldp     x20, x21, [sp, #16 * 10]
    ldp     x22, x23, [sp, #16 * 11]
    ldp     x24, x25, [sp, #16 * 12]
    ldp     x26, x27, [sp, #16 * 13]
    ldp     x28, x29, [sp, #16 * 14]
fast_return:
    ldr     x0, [sp, #16 * 16]
    msr     spsr_el2, x0
    ldp     x30, x0, [sp, #16 * 15]
    msr     elr_el2, x0
    ldp     x2, x3, [sp, #16 * 1]
    ldp     x4, x5, [sp, #16 * 2]
    ldp     x6, x7, [sp, #16 * 3]
    ldp     x8, x9, [sp, #16 * 4]
    ldp     x10, x11, [sp, #16 * 5]
    ldp     x12, x13, [sp, #16 * 6]
    ldp     x14, x15, [sp, #16 * 7]
    ldp     x16, x17, [sp, #16 * 8]
    ldr     x18, [sp, #16 * 9]
    ldp     x0, x1, [sp]
    add     sp, sp, #{frame}
    eret

current_trap:
    save_rest
    bl      hv_fatal
1:  wfe
    b       1b

    // x0: the frame to enter, in a context this CPU holds locked; x1: that
    // lock's word. SP goes back to the stack's top, as a trap from the guest
    // expects it. The guest's x0 and x1 wait on the stack while x1 still
    // names the lock, which is released after the frame's last load.
    .global enter_guest_asm
enter_guest_asm:
    mrs     x2, tpidr_el2
    adrp    x3, __stacks
    add     x3, x3, :lo12:__stacks
    add     x2, x2, #1
    mov     x4, #{stack_size}
    madd    x3, x2, x4, x3
    mov     sp, x3
    ldp     x2, x3, [x0]
    stp     x2, x3, [sp, #-16]!
    ldp     x30, x2, [x0, #16 * 15]
    msr     elr_el2, x2
    ldr     x2, [x0, #16 * 16]
    msr     spsr_el2, x2
    ldp     x2, x3, [x0, #16 * 1]
    ldp     x4, x5, [x0, #16 * 2]
    ldp     x6, x7, [x0, #16 * 3]
    ldp     x8, x9, [x0, #16 * 4]
    ldp     x10, x11, [x0, #16 * 5]
    ldp     x12, x13, [x0, #16 * 6]
    ldp     x14, x15, [x0, #16 * 7]
    ldp     x16, x17, [x0, #16 * 8]
    ldp     x18, x19, [x0, #16 * 9]
    ldp     x20, x21, [x0, #16 * 10]
    ldp     x22, x23, [x0, #16 * 11]
    ldp     x24, x25, [x0, #16 * 12]
    ldp     x26, x27, [x0, #16 * 13]
    ldp     x28, x29, [x0, #16 * 14]
    stlrb   wzr, [x1]
    ldp     x0, x1, [sp], #16
    eret
    "#,
    frame = const FRAME,
    stack_size = const STACK_SIZE,
    irq = const kind::IRQ,
);

unsafe extern "C" {
    fn enter_guest_asm(regs: *const Regs, lock: *const AtomicBool) -> !;
}

/// `*dst = *src` in 17 pairs of loads and stores. The compiler calls the
/// library memcpy for a frame this size (one pair above its inline limit):
/// about 140 instructions instead of 35, on every partition switch.
pub fn copy_frame(dst: &mut Regs, src: &Regs) {
    // SAFETY: both are valid, aligned frames of FRAME bytes that do not
    // overlap (`dst` is exclusive); the asm touches only them and the
    // scratch registers it names.
    unsafe {
        core::arch::asm!(
            "ldp {a}, {b}, [{s}, #16 * 0]",  "stp {a}, {b}, [{d}, #16 * 0]",
            "ldp {a}, {b}, [{s}, #16 * 1]",  "stp {a}, {b}, [{d}, #16 * 1]",
            "ldp {a}, {b}, [{s}, #16 * 2]",  "stp {a}, {b}, [{d}, #16 * 2]",
            "ldp {a}, {b}, [{s}, #16 * 3]",  "stp {a}, {b}, [{d}, #16 * 3]",
            "ldp {a}, {b}, [{s}, #16 * 4]",  "stp {a}, {b}, [{d}, #16 * 4]",
            "ldp {a}, {b}, [{s}, #16 * 5]",  "stp {a}, {b}, [{d}, #16 * 5]",
            "ldp {a}, {b}, [{s}, #16 * 6]",  "stp {a}, {b}, [{d}, #16 * 6]",
            "ldp {a}, {b}, [{s}, #16 * 7]",  "stp {a}, {b}, [{d}, #16 * 7]",
            "ldp {a}, {b}, [{s}, #16 * 8]",  "stp {a}, {b}, [{d}, #16 * 8]",
            "ldp {a}, {b}, [{s}, #16 * 9]",  "stp {a}, {b}, [{d}, #16 * 9]",
            "ldp {a}, {b}, [{s}, #16 * 10]", "stp {a}, {b}, [{d}, #16 * 10]",
            "ldp {a}, {b}, [{s}, #16 * 11]", "stp {a}, {b}, [{d}, #16 * 11]",
            "ldp {a}, {b}, [{s}, #16 * 12]", "stp {a}, {b}, [{d}, #16 * 12]",
            "ldp {a}, {b}, [{s}, #16 * 13]", "stp {a}, {b}, [{d}, #16 * 13]",
            "ldp {a}, {b}, [{s}, #16 * 14]", "stp {a}, {b}, [{d}, #16 * 14]",
            "ldp {a}, {b}, [{s}, #16 * 15]", "stp {a}, {b}, [{d}, #16 * 15]",
            "ldp {a}, {b}, [{s}, #16 * 16]", "stp {a}, {b}, [{d}, #16 * 16]",
            s = in(reg) src as *const Regs,
            d = in(reg) dst as *mut Regs,
            a = out(reg) _,
            b = out(reg) _,
            options(nostack, preserves_flags),
        );
    }
}

/// Leaves the hypervisor for the guest whose registers `regs` finds in the
/// context `guard` holds, on a fresh EL2 stack, and releases the context's
/// lock once they are loaded: read straight from the context, they are
/// never staged. The caller has already loaded that vCPU's EL1 and stage-2
/// state. Nothing on the current stack survives.
pub fn enter_guest<T>(guard: ContextGuard<'_, T>, regs: fn(&T) -> &Regs) -> ! {
    let frame: *const Regs = regs(&guard);
    let lock = guard.into_lock_word();
    // SAFETY: `frame` points into the data `lock` guards, which this CPU
    // holds (its guard was given up without releasing it), so nothing else
    // reads or writes it. The assembly loads the guest's registers from it,
    // releases the lock with a store-release after its last load (ordering
    // every load before it), resets SP to this CPU's stack top and returns
    // to EL1 through ERET; dropping the current stack contents is sound
    // because this function never returns.
    unsafe { enter_guest_asm(frame, lock) }
}
