//! The EL1 state of a vCPU that is not in the trap frame: system registers
//! and FP/SIMD registers. Saved and restored only when a pCPU switches to a
//! different vCPU, never on an ordinary trap.

use crate::cpu::write_sysreg;
use crate::read_sysreg;

/// EL1 system registers (and the EL2 ones that describe a vCPU).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct El1Context {
    pub sctlr: u64,
    pub cpacr: u64,
    pub ttbr0: u64,
    pub ttbr1: u64,
    pub tcr: u64,
    pub mair: u64,
    pub amair: u64,
    pub vbar: u64,
    pub contextidr: u64,
    pub tpidr_el0: u64,
    pub tpidrro_el0: u64,
    pub tpidr_el1: u64,
    pub sp_el0: u64,
    pub sp_el1: u64,
    pub elr_el1: u64,
    pub spsr_el1: u64,
    pub esr: u64,
    pub far: u64,
    pub afsr0: u64,
    pub afsr1: u64,
    pub par: u64,
    pub csselr: u64,
    pub cntkctl: u64,
    pub cntv_ctl: u64,
    pub cntv_cval: u64,
    pub cntp_ctl: u64,
    pub cntp_cval: u64,
    /// VMPIDR_EL2: the MPIDR the guest reads.
    pub vmpidr: u64,
}

/// SCTLR_EL1 at reset: MMU and caches off, RES1 bits set.
pub const SCTLR_EL1_RESET: u64 = 0x30d0_0800;

// The assembly below moves the fields in pairs, by these offsets.
const _: () = {
    assert!(core::mem::size_of::<El1Context>() == 28 * 8);
    assert!(core::mem::offset_of!(El1Context, cntkctl) == 176);
    assert!(core::mem::offset_of!(El1Context, cntp_cval) == 208);
    assert!(core::mem::offset_of!(El1Context, vmpidr) == 216);
};

// Each register is one `mrs` or `msr` and each pair of fields one `stp` or
// `ldp`: 42 instructions either way, on every partition switch. Compiled,
// every `msr` is a barrier to the compiler, which then loads the fields one
// by one, a quarter more.
//
// VMPIDR_EL2 is Partita's, never the guest's: it is loaded, never saved.
// Loading writes each timer's compare value before its control, so that
// an enabled timer never compares against the previous vCPU's value.
core::arch::global_asm!(
    r#"
    .section .text.el1_context, "ax"
    .global el1_save
el1_save:
    mrs     x1, sctlr_el1
    mrs     x2, cpacr_el1
    stp     x1, x2, [x0, #0]
    mrs     x1, ttbr0_el1
    mrs     x2, ttbr1_el1
    stp     x1, x2, [x0, #16]
    mrs     x1, tcr_el1
    mrs     x2, mair_el1
    stp     x1, x2, [x0, #32]
    mrs     x1, amair_el1
    mrs     x2, vbar_el1
    stp     x1, x2, [x0, #48]
    mrs     x1, contextidr_el1
    mrs     x2, tpidr_el0
    stp     x1, x2, [x0, #64]
    mrs     x1, tpidrro_el0
    mrs     x2, tpidr_el1
    stp     x1, x2, [x0, #80]
    mrs     x1, sp_el0
    mrs     x2, sp_el1
    stp     x1, x2, [x0, #96]
    mrs     x1, elr_el1
    mrs     x2, spsr_el1
    stp     x1, x2, [x0, #112]
    mrs     x1, esr_el1
    mrs     x2, far_el1
    stp     x1, x2, [x0, #128]
    mrs     x1, afsr0_el1
    mrs     x2, afsr1_el1
    stp     x1, x2, [x0, #144]
    mrs     x1, par_el1
    mrs     x2, csselr_el1
    stp     x1, x2, [x0, #160]
    mrs     x1, cntkctl_el1
    mrs     x2, cntv_ctl_el0
    stp     x1, x2, [x0, #176]
    mrs     x1, cntv_cval_el0
    mrs     x2, cntp_ctl_el0
    stp     x1, x2, [x0, #192]
    mrs     x1, cntp_cval_el0
    str     x1, [x0, #208]
    msr     cntv_ctl_el0, xzr
    msr     cntp_ctl_el0, xzr
    ret

    .global el1_restore
el1_restore:
    ldp     x1, x2, [x0, #0]
    msr     sctlr_el1, x1
    msr     cpacr_el1, x2
    ldp     x1, x2, [x0, #16]
    msr     ttbr0_el1, x1
    msr     ttbr1_el1, x2
    ldp     x1, x2, [x0, #32]
    msr     tcr_el1, x1
    msr     mair_el1, x2
    ldp     x1, x2, [x0, #48]
    msr     amair_el1, x1
    msr     vbar_el1, x2
    ldp     x1, x2, [x0, #64]
    msr     contextidr_el1, x1
    msr     tpidr_el0, x2
    ldp     x1, x2, [x0, #80]
    msr     tpidrro_el0, x1
    msr     tpidr_el1, x2
    ldp     x1, x2, [x0, #96]
    msr     sp_el0, x1
    msr     sp_el1, x2
    ldp     x1, x2, [x0, #112]
    msr     elr_el1, x1
    msr     spsr_el1, x2
    ldp     x1, x2, [x0, #128]
    msr     esr_el1, x1
    msr     far_el1, x2
    ldp     x1, x2, [x0, #144]
    msr     afsr0_el1, x1
    msr     afsr1_el1, x2
    ldp     x1, x2, [x0, #160]
    msr     par_el1, x1
    msr     csselr_el1, x2
    ldp     x1, x2, [x0, #176]
    ldp     x3, x4, [x0, #192]
    ldp     x5, x6, [x0, #208]
    msr     cntkctl_el1, x1
    msr     cntv_cval_el0, x3
    msr     cntv_ctl_el0, x2
    msr     cntp_cval_el0, x5
    msr     cntp_ctl_el0, x4
    msr     vmpidr_el2, x6
    ret
    "#
);

unsafe extern "C" {
    fn el1_save(ctx: *mut El1Context);
    fn el1_restore(ctx: *const El1Context);
}

impl El1Context {
    /// The state of a vCPU that has just been powered on.
    pub fn reset(vmpidr: u64) -> Self {
        Self { sctlr: SCTLR_EL1_RESET, vmpidr, ..Self::default() }
    }

    /// Captures the running vCPU's EL1 state from the hardware, and stops
    /// its timers: a descheduled vCPU's timers must not fire into the next
    /// one.
    pub fn save(&mut self) {
        // SAFETY: writes the first 27 fields of `self` (216 bytes of its
        // 224) and nothing else; reads EL1 registers, which has no side
        // effect, and disables the EL1 timers, which belong to the vCPU
        // being saved. Clobbers x1 and x2, which a C callee may.
        unsafe { el1_save(self) }
    }

    /// Loads this vCPU's EL1 state into the hardware.
    pub fn restore(&self) {
        // SAFETY: reads exactly the 224 bytes of `self`; the registers it
        // writes are the EL1 state of the vCPU being loaded and VMPIDR_EL2,
        // which only its guest reads. Clobbers x1-x6, which a C callee may.
        unsafe { el1_restore(self) }
    }
}

/// FP/SIMD registers of a vCPU. The hypervisor itself is built without
/// FP/SIMD (a soft-float target), so these change only when switching.
/// Both transfers need FP/SIMD untrapped at EL2 (`el2::trap_fp(false)`
/// and an `isb`).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(16))]
pub struct FpContext {
    pub q: [u128; 32],
    pub fpcr: u64,
    pub fpsr: u64,
}

core::arch::global_asm!(
    r#"
    .section .text.fp, "ax"
    .arch_extension fp
    .arch_extension simd
    .global fp_save
fp_save:
    stp     q0, q1, [x0, #32 * 0]
    stp     q2, q3, [x0, #32 * 1]
    stp     q4, q5, [x0, #32 * 2]
    stp     q6, q7, [x0, #32 * 3]
    stp     q8, q9, [x0, #32 * 4]
    stp     q10, q11, [x0, #32 * 5]
    stp     q12, q13, [x0, #32 * 6]
    stp     q14, q15, [x0, #32 * 7]
    stp     q16, q17, [x0, #32 * 8]
    stp     q18, q19, [x0, #32 * 9]
    stp     q20, q21, [x0, #32 * 10]
    stp     q22, q23, [x0, #32 * 11]
    stp     q24, q25, [x0, #32 * 12]
    stp     q26, q27, [x0, #32 * 13]
    stp     q28, q29, [x0, #32 * 14]
    stp     q30, q31, [x0, #32 * 15]
    mrs     x1, fpcr
    mrs     x2, fpsr
    add     x0, x0, #32 * 16
    stp     x1, x2, [x0]
    ret

    .global fp_restore
fp_restore:
    ldp     q0, q1, [x0, #32 * 0]
    ldp     q2, q3, [x0, #32 * 1]
    ldp     q4, q5, [x0, #32 * 2]
    ldp     q6, q7, [x0, #32 * 3]
    ldp     q8, q9, [x0, #32 * 4]
    ldp     q10, q11, [x0, #32 * 5]
    ldp     q12, q13, [x0, #32 * 6]
    ldp     q14, q15, [x0, #32 * 7]
    ldp     q16, q17, [x0, #32 * 8]
    ldp     q18, q19, [x0, #32 * 9]
    ldp     q20, q21, [x0, #32 * 10]
    ldp     q22, q23, [x0, #32 * 11]
    ldp     q24, q25, [x0, #32 * 12]
    ldp     q26, q27, [x0, #32 * 13]
    ldp     q28, q29, [x0, #32 * 14]
    ldp     q30, q31, [x0, #32 * 15]
    add     x0, x0, #32 * 16
    ldp     x1, x2, [x0]
    msr     fpcr, x1
    msr     fpsr, x2
    ret
    "#
);

unsafe extern "C" {
    fn fp_save(ctx: *mut FpContext);
    fn fp_restore(ctx: *const FpContext);
}

impl FpContext {
    pub fn save(&mut self) {
        // SAFETY: writes exactly the 528 bytes of `self`; clobbers x1, x2,
        // which the C ABI lets a callee clobber. Its caller untrapped FP/SIMD at EL2.
        unsafe { fp_save(self) }
    }

    pub fn restore(&self) {
        // SAFETY: reads exactly the bytes of `self`; the hypervisor's own code
        // uses no FP/SIMD registers, so loading guest values is harmless.
        unsafe { fp_restore(self) }
    }
}

/// The most breakpoints or watchpoints ID_AA64DFR0_EL1 can advertise.
pub const MAX_DEBUG_PAIRS: usize = 16;

/// Reads (`mrs`) or writes (`msr`) breakpoint or watchpoint register
/// `<prefix><index>_el1`. Each index is its own encoding, so each gets its
/// own instruction.
macro_rules! debug_pair {
    (read $prefix:literal, $index:expr) => {
        debug_pair!(@read $prefix, $index, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (write $prefix:literal, $index:expr, $value:expr) => {
        debug_pair!(@write $prefix, $index, $value, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@read $prefix:literal, $index:expr, $($n:literal)*) => {
        match $index {
            $($n => {
                let value: u64;
                // SAFETY: callers pass an index below the count the hardware
                // advertises; reading a debug register has no side effect.
                unsafe {
                    core::arch::asm!(concat!("mrs {0}, ", $prefix, $n, "_el1"), out(reg) value,
                                     options(nomem, nostack, preserves_flags))
                };
                value
            })*
            _ => 0,
        }
    };
    (@write $prefix:literal, $index:expr, $value:expr, $($n:literal)*) => {
        match $index {
            $($n => {
                let value: u64 = $value;
                // SAFETY: callers pass an index below the count the hardware
                // advertises; the value is the EL1 debug state of the vCPU
                // being loaded, and its debug exceptions target EL1, never EL2.
                unsafe {
                    core::arch::asm!(concat!("msr ", $prefix, $n, "_el1, {0}"), in(reg) value,
                                     options(nostack, preserves_flags))
                };
            })*
            _ => {}
        }
    };
}

/// The hardware's breakpoint and watchpoint counts (ID_AA64DFR0_EL1.BRPs
/// and WRPs, each the count less one).
pub fn debug_pairs() -> (usize, usize) {
    let dfr0 = read_sysreg!("id_aa64dfr0_el1");
    let count = |low: u32| ((dfr0 >> low) & 0xf) as usize + 1;
    (count(12), count(20))
}

/// OSLSR_EL1.OSLK, and what OSLAR_EL1 takes to set it.
const OS_LOCK: u64 = 1 << 1;
const OS_LOCK_SET: u64 = 1;

/// A vCPU's EL1 debug registers: breakpoints, watchpoints, MDSCR_EL1
/// (single step, debug exception enables), the OS lock and double lock,
/// and the debug comms interrupt enable. Switched only for a vCPU that has
/// touched them (`partita_core::partition::debug`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct DebugContext {
    pub bcr: [u64; MAX_DEBUG_PAIRS],
    pub bvr: [u64; MAX_DEBUG_PAIRS],
    pub wcr: [u64; MAX_DEBUG_PAIRS],
    pub wvr: [u64; MAX_DEBUG_PAIRS],
    pub mdscr: u64,
    pub os_lock: bool,
    pub osdlr: u64,
    pub mdccint: u64,
}

impl DebugContext {
    /// A core's state after a cold reset: nothing enabled, the OS lock
    /// locked (which a kernel clears once it has restored its own state).
    pub const RESET: Self = Self {
        bcr: [0; MAX_DEBUG_PAIRS],
        bvr: [0; MAX_DEBUG_PAIRS],
        wcr: [0; MAX_DEBUG_PAIRS],
        wvr: [0; MAX_DEBUG_PAIRS],
        mdscr: 0,
        os_lock: true,
        osdlr: 0,
        mdccint: 0,
    };

    /// Captures the running vCPU's debug registers.
    pub fn save(&mut self) {
        let (breakpoints, watchpoints) = debug_pairs();
        for n in 0..breakpoints {
            self.bcr[n] = debug_pair!(read "dbgbcr", n);
            self.bvr[n] = debug_pair!(read "dbgbvr", n);
        }
        for n in 0..watchpoints {
            self.wcr[n] = debug_pair!(read "dbgwcr", n);
            self.wvr[n] = debug_pair!(read "dbgwvr", n);
        }
        self.mdscr = read_sysreg!("mdscr_el1");
        self.os_lock = read_sysreg!("oslsr_el1") & OS_LOCK != 0;
        self.osdlr = read_sysreg!("osdlr_el1");
        self.mdccint = read_sysreg!("mdccint_el1");
    }

    /// Loads these values into the hardware: every register the hardware
    /// has, so nothing of the vCPU that ran before survives.
    pub fn restore(&self) {
        let (breakpoints, watchpoints) = debug_pairs();
        for n in 0..breakpoints {
            debug_pair!(write "dbgbcr", n, self.bcr[n]);
            debug_pair!(write "dbgbvr", n, self.bvr[n]);
        }
        for n in 0..watchpoints {
            debug_pair!(write "dbgwcr", n, self.wcr[n]);
            debug_pair!(write "dbgwvr", n, self.wvr[n]);
        }
        write_sysreg!("mdscr_el1", self.mdscr);
        write_sysreg!("oslar_el1", if self.os_lock { OS_LOCK_SET } else { 0 });
        write_sysreg!("osdlr_el1", self.osdlr);
        write_sysreg!("mdccint_el1", self.mdccint);
    }
}

impl Default for DebugContext {
    fn default() -> Self {
        Self::RESET
    }
}
