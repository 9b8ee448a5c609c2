//! The EL2 physical timer (CNTHP): Partita's scheduling tick. The EL1
//! timers (virtual and physical) belong to the loaded vCPU.

use crate::cpu::write_sysreg;
use crate::read_sysreg;

/// The system counter.
pub fn now() -> u64 {
    crate::cpu::isb();
    read_sysreg!("cntpct_el0")
}

/// The system counter without a barrier: cheap enough for tracing, where
/// an event's time may be a few instructions early.
pub fn counter() -> u64 {
    read_sysreg!("cntpct_el0")
}

/// True while the loaded guest's virtual timer asserts its interrupt:
/// enabled, not masked, condition met (CNTV_CTL_EL0 ENABLE, IMASK, ISTATUS).
pub fn virtual_timer_asserted() -> bool {
    read_sysreg!("cntv_ctl_el0") & 0b111 == 0b101
}

/// True while the loaded guest's EL1 physical timer asserts its interrupt
/// (CNTP_CTL_EL0 ENABLE, IMASK, ISTATUS).
pub fn physical_timer_asserted() -> bool {
    read_sysreg!("cntp_ctl_el0") & 0b111 == 0b101
}

/// Fires the hypervisor timer interrupt after `ticks` counter ticks.
pub fn arm_after(ticks: u64) {
    write_sysreg!("cnthp_tval_el2", ticks.min(i32::MAX as u64));
    write_sysreg!("cnthp_ctl_el2", 1);
}

/// Fires the hypervisor timer when the counter reaches `deadline`.
pub fn arm_at(deadline: u64) {
    write_sysreg!("cnthp_cval_el2", deadline);
    write_sysreg!("cnthp_ctl_el2", 1);
}

/// True when the EL2 timer is armed and its deadline has come: its
/// interrupt is pending, or about to be.
pub fn fired() -> bool {
    read_sysreg!("cnthp_ctl_el2") & 0b101 == 0b101
}

pub fn disarm() {
    write_sysreg!("cnthp_ctl_el2", 0);
}
