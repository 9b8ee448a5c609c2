//! Which vCPUs a pCPU may load: the state every policy reads, put to
//! `partita_core::scheduler::decide::wants_cpu`.

use crate::partition::{Partition, Vcpu};
use crate::state::{PerCpu, System};
use partita_core::scheduler::decide;

/// True when `vcpu` would run if it had a pCPU.
pub fn wants_cpu(part: &Partition, vcpu: &Vcpu) -> bool {
    decide::wants_cpu(part.state(), vcpu.state(), vcpu.is_waiting(), vcpu.index)
}

/// True when `vcpu` (of `part`) may run on `me`: it wants a pCPU and has
/// not moved to another one.
pub fn runnable(part: &Partition, me: &PerCpu, vcpu: &Vcpu) -> bool {
    wants_cpu(part, vcpu) && vcpu.pcpu() == me.index
}

/// The priority of a vCPU `me` could load now (runnable here and not
/// still loaded on the pCPU it is coming back from).
pub fn rank(sys: &System, me: &PerCpu, vcpu: &Vcpu) -> Option<u8> {
    let part = sys.partition_of(vcpu);
    (runnable(part, me, vcpu) && !vcpu.is_on_cpu()).then_some(part.rank)
}
