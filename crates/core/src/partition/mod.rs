//! Partitions and their vCPUs: the partition life cycle, the vCPU state
//! machine and register frame, who holds a pCPU's debug registers,
//! and the bounded steps of a partition's reload.

pub mod debug;
pub mod lifecycle;
pub mod reload;
pub mod vcpu;
