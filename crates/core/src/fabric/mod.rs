//! The reconfigurable fabric (Ker-ONE section 4): accelerators run in
//! partially reconfigurable regions (PRRs) shared by preemption. Each PRR
//! follows a state machine, the PRR monitor finds a solution for every
//! request, and the worst-case allocation latency is known before boot.

pub mod bound;
pub mod interface;
pub mod manager;
pub mod monitor;
pub mod prr;
