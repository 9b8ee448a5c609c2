//! `partita bench response`: what Partita adds to an RTOS task's response
//! time, as Ker-ONE measures it (section 6, Figure 14, equations 3-4):
//!
//! - ΔVMMcritical, the longest stretch Partita runs at EL2 with interrupts
//!   masked, from the residency the hypervisor keeps per trap kind when it
//!   is built with its `residency` feature ([`critical`]);
//! - ΔVMMsched, the RTOS preempting a busy GPOS (`bench irq-latency`'s
//!   `preempt` row);
//! - Δ_VM^relEv (eq. 3), the RTOS's worst tick-to-released-task latency
//!   under Partita minus the best one natively ([`release`]).
//!
//! ΔResponse = ΔVMMcritical + ΔVMMsched + Δ_VM^relEv (eq. 4).

pub mod release;
