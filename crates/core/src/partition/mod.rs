//! Partitions and their vCPUs: the partition life cycle, the vCPU state
//! machine and register frame, who holds a pCPU's debug and FP/SIMD registers, the
//! bounded steps of a partition's reload and the seeds each load writes
//! into its device tree.

pub mod debug;
pub mod fp;
pub mod lifecycle;
pub mod reload;
pub mod seed;
pub mod vcpu;
