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
use crate::{direct_sgi, MAX_CPUS, STACK_SIZE};
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
// The assembly moves the frame in 16-byte pairs, and pushes it with the
// first pair (STP's reach: 512 bytes).
const _: () = assert!(FRAME == 272);
// The direct SGI path hands its value's INTID to the route check as the
// value shifted, and leaves the frame's x0-x3 where save_caller_saved
// puts them.
const _: () = assert!(partita_core::vgic::direct::INTID_SHIFT == 24);
const _: () = assert!(kind::SYNC == 0 && kind::IRQ == 1 && kind::FIQ == 2);
/// PSTATE.SS in SPSR_EL2.
const SPSR_SS_BIT: u32 = partita_core::trap::inject::pstate::SS.trailing_zeros();
const _: () = assert!(MAX_CPUS * STACK_SIZE < 1 << 24);

core::arch::global_asm!(
    r#"
    .macro lower_entry kind
    .balign 0x80
    stp     x0, x1, [sp, #-{frame}]!
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

    // Synchronous, from AArch64: a write to ICC_SGI1R_EL1 (the syndrome
    // minus SGI1R_WRITE leaves Rt's field alone) is offered to the direct
    // SGI path with x0-x3 saved and Rt << 5 in x1; anything else goes on
    // with x0 and x1 saved.
    .balign 0x80
    stp     x0, x1, [sp, #-{frame}]!
    mrs     x0, esr_el2
    ldr     w1, sgi1r_write_syndrome
    sub     w1, w0, w1
    tst     w1, #0xfffffc1f
    b.ne    lower_sync
    stp     x2, x3, [sp, #16]
    adr     x3, sgi_rt
    add     x3, x3, x1, lsr #2
    br      x3
    lower_entry 1
    lower_entry 2
    lower_entry 3
    lower_entry 0
    lower_entry 1
    lower_entry 2
    lower_entry 3

sgi1r_write_syndrome:
    .word   {sgi1r_write}

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

    // With the `residency` feature, a stretch of kind x1 opens here
    // (crate::residency); x1 comes back as it was.
    .macro residency_begin
    .if {residency}
    mov     x0, x1
    bl      hv_residency_begin
    mov     x1, x0
    .endif
    .endm

    .macro save_rest
    save_caller_saved
    save_callee_saved
    mov     x0, sp
    .endm

    // The direct SGI path (crate::direct_sgi): the value the guest wrote
    // is checked against this pCPU's route, each target gets its physical
    // SGI, and the guest resumes past its MSR with x0-x3 restored. It
    // saves and calls nothing; a value the route declines, or a vCPU whose
    // PSTATE.SS is set (the step must complete with the instruction, as
    // the full answer arranges), goes on to lower_sync with x0-x3 as the
    // guest left them in the frame. The only loop runs once per target
    // bit, at most 16 times.
    //
    // SAFETY: it writes only x0-x3, which it saved in the frame below the
    // stack top and restores, ELR_EL2 (past the MSR it answers) and
    // ICC_SGI1R_EL1 with a route's target: the hypervisor offers a route
    // only while a direct vCPU runs here, with its own partition's homes
    // and without Partita's SGIs, and the value must name no other bit.
    // The slot it reads is this CPU's own (`direct_sgi::Routes`).
    //
    // Rt's value into x0: 32 entries of two instructions, x0-x3 from the
    // frame or the register the vector left untouched, xzr last.
    .balign 8
sgi_rt:
    ldr     x0, [sp]
    b       sgi_value
    ldr     x0, [sp, #8]
    b       sgi_value
    mov     x0, x2
    b       sgi_value
    ldr     x0, [sp, #24]
    b       sgi_value
    .irp    n, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
    mov     x0, x\n
    b       sgi_value
    .endr
    mov     x0, xzr
sgi_value:
    mrs     x1, tpidr_el2
    adrp    x2, {routes}
    add     x1, x2, x1, lsl #{slot_shift}
    mrs     x3, spsr_el2
    tbnz    x3, #{spsr_ss}, sgi_decline
    ldp     x2, x3, [x1, #{forbidden}]
    tst     x0, x2
    b.ne    sgi_decline
    lsr     x2, x0, #24
    lsr     x3, x3, x2
    tbz     x3, #0, sgi_decline
    and     w0, w0, #0xffff
    cbz     w0, sgi_done
    // x0: targets left, x1: the slot, x2: the INTID.
sgi_send:
    rbit    w3, w0
    clz     w3, w3
    ldr     x3, [x1, x3, lsl #3]
    bfi     x3, x2, #24, #4
    msr     icc_sgi1r_el1, x3
    sub     w3, w0, #1
    ands    w0, w0, w3
    b.ne    sgi_send
sgi_done:
    mrs     x0, elr_el2
    add     x0, x0, #4
    msr     elr_el2, x0
    ldp     x2, x3, [sp, #16]
    ldp     x0, x1, [sp], #{frame}
    eret

sgi_decline:
    ldp     x2, x3, [sp, #16]

    // hv_fast(regs, kind) answers what it can without the rest of the
    // frame and returns all ones; otherwise it returns the kind, and the
    // whole frame goes to hv_trap. A synchronous exception or an IRQ can
    // qualify.
lower_sync:
    save_caller_saved
    mov     x1, #{sync}
    residency_begin
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

    // x1: the kind; SYNC (from AArch32) and IRQ are below FIQ.
lower_trap:
    save_caller_saved
    residency_begin
    cmp     x1, #{irq}
    b.ls    lower_fast
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
    .if {residency}
    bl      hv_residency_end
    .endif
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
    ldp     x0, x1, [sp], #{frame}
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
    sync = const kind::SYNC,
    irq = const kind::IRQ,
    residency = const crate::residency::ENABLED as u8,
    sgi1r_write = const partita_core::trap::esr::SGI1R_WRITE,
    routes = sym direct_sgi::DIRECT_SGI_ROUTES,
    slot_shift = const direct_sgi::SLOT_SHIFT,
    forbidden = const direct_sgi::FORBIDDEN,
    spsr_ss = const SPSR_SS_BIT,
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
    crate::residency::end();
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
