//! Small per-CPU primitives: identity, waiting, barriers.

use core::arch::asm;

/// Reads a system register whose read changes nothing: no acknowledge, no
/// clear-on-read, no other side effect. Such a read touches no memory, so
/// it is marked `nomem` and the compiler may move it past loads and
/// stores. Private to this crate: a register with a read side effect
/// (ICC_IAR1_EL1 acknowledges an interrupt) gets a function of its own,
/// whose contract says so, never this macro.
macro_rules! read_sysreg {
    ($name:literal) => {{
        let value: u64;
        // SAFETY: callers in this crate read only registers whose read has
        // no side effect (see the macro's contract).
        unsafe { core::arch::asm!(concat!("mrs {0}, ", $name), out(reg) value, options(nomem, nostack, preserves_flags)) };
        value
    }};
}
pub(crate) use read_sysreg;

/// Writes a system register. Only used inside this crate, where each
/// register's effect is accounted for at the call site.
macro_rules! write_sysreg {
    ($name:literal, $value:expr) => {{
        let value: u64 = $value;
        // SAFETY: callers in this crate only write registers that configure
        // EL2 itself or the state of the EL1 context being switched in.
        unsafe { core::arch::asm!(concat!("msr ", $name, ", {0}"), in(reg) value, options(nostack, preserves_flags)) };
    }};
}
pub(crate) use write_sysreg;

/// Where the exception being handled will return to (ELR_EL2).
/// True when a physical IRQ or FIQ waits for this pCPU (ISR_EL1, which at
/// EL2 shows the interrupts routed here): one register read, for a point
/// on a long path to look for interrupts without acknowledging any.
pub fn interrupt_pending() -> bool {
    read_sysreg!("isr_el1") & (ISR_I | ISR_F) != 0
}

const ISR_I: u64 = 1 << 7;
const ISR_F: u64 = 1 << 6;

pub fn exception_return_address() -> u64 {
    read_sysreg!("elr_el2")
}

/// Index of the running CPU, as set at boot.
pub fn index() -> usize {
    read_sysreg!("tpidr_el2") as usize
}

/// Waits for an interrupt with interrupts masked: a pending interrupt still
/// wakes the core, and the caller polls the GIC.
pub fn wait_for_interrupt() {
    // SAFETY: WFI only pauses the core.
    unsafe { asm!("dsb sy", "wfi", options(nomem, nostack, preserves_flags)) };
}

/// Tells the core (or QEMU's round-robin of vCPUs) that this CPU is busy
/// with work that can wait: the emulated fabric says it between steps of
/// its computations, so the cores it runs beside are not held up.
pub fn yield_now() {
    // SAFETY: YIELD is a hint with no architectural effect.
    unsafe { asm!("yield", options(nomem, nostack, preserves_flags)) };
}

pub fn isb() {
    // SAFETY: a barrier only orders execution.
    unsafe { asm!("isb", options(nomem, nostack, preserves_flags)) };
}

pub fn dsb_ish() {
    // SAFETY: a barrier only orders memory accesses.
    unsafe { asm!("dsb ish", options(nostack, preserves_flags)) };
}

/// Stops this CPU for good.
pub fn park() -> ! {
    loop {
        // SAFETY: WFE only pauses the core.
        unsafe { asm!("wfe", options(nomem, nostack, preserves_flags)) };
    }
}

/// The syndrome registers of the exception being handled.
#[derive(Clone, Copy, Debug)]
pub struct Syndrome {
    pub esr: u64,
    pub far: u64,
    pub hpfar: u64,
}

pub fn syndrome() -> Syndrome {
    Syndrome { esr: read_sysreg!("esr_el2"), far: read_sysreg!("far_el2"), hpfar: read_sysreg!("hpfar_el2") }
}

/// The syndrome alone, for the fast path.
pub fn esr() -> u64 {
    read_sysreg!("esr_el2")
}

/// This CPU's affinity fields (MPIDR_EL1 without its flag bits), as PSCI
/// CPU_ON and SGI targets name CPUs.
pub fn affinity() -> u64 {
    read_sysreg!("mpidr_el1") & 0xff_00ff_ffff
}

/// Physical address size supported, as the PS/IPS field encoding.
pub fn pa_range() -> u64 {
    read_sysreg!("id_aa64mmfr0_el1") & 0xf
}

/// One row (CRm) of the ID space: the register `op2` names there.
macro_rules! id_row {
    ($crm:literal, $op2:expr) => {
        id_row!(@ $crm, $op2, 0 1 2 3 4 5 6 7)
    };
    (@ $crm:literal, $op2:expr, $($o:literal)*) => {
        match $op2 {
            $($o => {
                let value: u64;
                // SAFETY: an ID register read has no side effect, and every
                // encoding of this space reads (as zero where reserved).
                unsafe {
                    asm!(concat!("mrs {0}, s3_0_c0_c", $crm, "_", $o), out(reg) value,
                         options(nomem, nostack, preserves_flags))
                };
                value
            })*
            _ => 0,
        }
    };
}

/// The hardware's ID register `S3_0_C0_C<crm>_<op2>` (CRm 1 to 7, the
/// space HCR_EL2.TID3 traps); 0 outside it.
pub fn id_register(crm: u8, op2: u8) -> u64 {
    match crm {
        1 => id_row!(1, op2),
        2 => id_row!(2, op2),
        3 => id_row!(3, op2),
        4 => id_row!(4, op2),
        5 => id_row!(5, op2),
        6 => id_row!(6, op2),
        7 => id_row!(7, op2),
        _ => 0,
    }
}

/// Whether the CPU implements RNDR (FEAT_RNG): ID_AA64ISAR0_EL1.RNDR,
/// bits [63:60], non-zero.
pub fn has_rndr() -> bool {
    read_sysreg!("id_aa64isar0_el1") >> 60 != 0
}

/// A 64-bit value from the CPU's random number source (RNDR), or `None`
/// when the CPU has none or it could not give one in reasonable time.
pub fn hardware_random() -> Option<u64> {
    if !has_rndr() {
        return None;
    }
    let value: u64;
    let failed: u64;
    // SAFETY: RNDR only returns a value and sets NZCV (Z when it failed),
    // which the `cset` reads at once; it touches no memory. It is read by
    // its encoding so the assembler needs no `+rand` feature. Only reached
    // when ID_AA64ISAR0_EL1 says the register exists, so it cannot be
    // undefined.
    unsafe {
        asm!(
            "mrs {value}, s3_3_c2_c4_0",
            "cset {failed}, eq",
            value = out(reg) value,
            failed = out(reg) failed,
            options(nomem, nostack),
        )
    };
    (failed == 0).then_some(value)
}
