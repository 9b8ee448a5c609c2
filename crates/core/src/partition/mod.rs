//! Partitions and their vCPUs: the partition life cycle, the vCPU state
//! machine and register frame, the bounded steps of a partition's reload
//! and the seeds each load writes into its device tree.

pub mod lifecycle;
pub mod reload;
pub mod seed;
pub mod vcpu;
