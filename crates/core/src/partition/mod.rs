//! Partitions and their vCPUs: the vCPU state machine and register frame,
//! and the bounded steps of a partition's reload.

pub mod reload;
pub mod vcpu;
