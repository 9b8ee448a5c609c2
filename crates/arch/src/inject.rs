//! The EL1 registers an exception Partita gives a guest reads and writes
//! (`partita_core::trap::inject` computes the values). The vCPU that
//! trapped is loaded, so its EL1 registers are the hardware's.

use crate::cpu::write_sysreg;
use crate::read_sysreg;
use partita_core::trap::inject::{El1, Entry, Features};

/// The running vCPU's VBAR_EL1 and SCTLR_EL1, and what the core implements
/// of the features that change PSTATE on exception entry.
pub fn el1() -> El1 {
    let pan = (read_sysreg!("id_aa64mmfr1_el1") >> 20) & 0xf != 0;
    let ssbs = (read_sysreg!("id_aa64pfr1_el1") >> 4) & 0xf != 0;
    El1 { vbar: read_sysreg!("vbar_el1"), sctlr: read_sysreg!("sctlr_el1"), features: Features { pan, ssbs } }
}

/// Writes the syndrome, fault address, return address and saved PSTATE of
/// `entry`; the caller resumes the guest at `entry.pc` with `entry.pstate`.
pub fn write_el1(entry: &Entry) {
    write_sysreg!("esr_el1", entry.esr);
    if let Some(far) = entry.far {
        write_sysreg!("far_el1", far);
    }
    write_sysreg!("elr_el1", entry.elr);
    write_sysreg!("spsr_el1", entry.spsr);
}
