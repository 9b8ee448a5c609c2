//! Partita's hypercall ABI: SMC Calling Convention fast calls over HVC, in
//! the vendor-specific hypervisor service range (owner 6), so they never
//! collide with PSCI or other standard services. `guests/include/partita.h`
//! is the same table for C guests; keep the two in step.
//!
//! x0 holds the function ID, x1..x3 the arguments; the status comes back in
//! x0 (0 or a negative [`status`]) and a value, if any, in x1.

/// Major version in bits 16..31, minor in 0..15.
pub const ABI_VERSION: u64 = 1 << 16;

/// SMCCC: fast call, 64-bit convention, owner 6 (vendor hypervisor service).
pub const BASE: u64 = 0xC600_0000;

pub mod id {
    pub const VERSION: u64 = super::BASE;
    pub const VCPU_START: u64 = super::BASE + 0x01;
    pub const VCPU_SUSPEND: u64 = super::BASE + 0x02;
    pub const VCPU_RESUME: u64 = super::BASE + 0x03;
    pub const VCPU_HALT: u64 = super::BASE + 0x04;
    pub const VCPU_STATE: u64 = super::BASE + 0x05;
    pub const PARTITION_SELF: u64 = super::BASE + 0x10;
    pub const PARTITION_SUSPEND: u64 = super::BASE + 0x11;
    pub const PARTITION_RESUME: u64 = super::BASE + 0x12;
    pub const PARTITION_RESTART: u64 = super::BASE + 0x13;
    pub const PARTITION_HALT: u64 = super::BASE + 0x14;
    pub const PARTITION_STATE: u64 = super::BASE + 0x15;
    pub const PLAN_SWITCH: u64 = super::BASE + 0x20;
    pub const PLAN_CURRENT: u64 = super::BASE + 0x21;
    pub const HM_REPORT: u64 = super::BASE + 0x40;
}

/// Status codes in x0.
pub mod status {
    pub const OK: i64 = 0;
    /// No such function.
    pub const NOT_SUPPORTED: i64 = -1;
    /// An argument names nothing that exists (a vCPU, partition or plan).
    pub const INVALID: i64 = -2;
    /// The configuration does not grant the caller this right.
    pub const DENIED: i64 = -3;
    /// The target's state does not allow it (resume of a running vCPU,
    /// anything on a halted one).
    pub const STATE: i64 = -4;
    /// Another partition restart is in progress; call again.
    pub const BUSY: i64 = -5;
}

/// What a partition may do to other partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionOp {
    Suspend,
    Resume,
    Restart,
    Halt,
}

/// A decoded hypercall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Version,
    /// Start vCPU `vcpu` of the caller's partition at `entry` with x0 = `context`.
    VcpuStart {
        vcpu: u64,
        entry: u64,
        context: u64,
    },
    VcpuSuspend {
        vcpu: u64,
    },
    VcpuResume {
        vcpu: u64,
    },
    VcpuHalt {
        vcpu: u64,
    },
    /// The [`crate::vcpu::State`] of one of the caller's vCPUs, in x1.
    VcpuState {
        vcpu: u64,
    },
    /// The caller's partition index, in x1.
    PartitionSelf,
    /// An operation on another partition, by index.
    Partition {
        op: PartitionOp,
        partition: u64,
    },
    /// A partition's run state, in x1 (see the hypervisor's `RunState`).
    PartitionState {
        partition: u64,
    },
    /// Switch to plan `plan` at the next major frame; the counter value of
    /// that instant comes back in x1.
    PlanSwitch {
        plan: u64,
    },
    /// The plan in force in x1; the pending one (or -1) in x2.
    PlanCurrent,
    /// The partition reports an error of its own (`code`) to the health
    /// monitor, which applies its `reported` action.
    HmReport { code: u64 },
    /// In Partita's range, but no such function.
    Unknown,
}

/// Decodes x0..x3; `None` when x0 is outside Partita's range (PSCI and
/// other services are decoded elsewhere).
pub fn decode(x: [u64; 4]) -> Option<Call> {
    if x[0] & !0xffff != BASE {
        return None;
    }
    let partition = |op| Call::Partition { op, partition: x[1] };
    Some(match x[0] {
        id::VERSION => Call::Version,
        id::VCPU_START => Call::VcpuStart { vcpu: x[1], entry: x[2], context: x[3] },
        id::VCPU_SUSPEND => Call::VcpuSuspend { vcpu: x[1] },
        id::VCPU_RESUME => Call::VcpuResume { vcpu: x[1] },
        id::VCPU_HALT => Call::VcpuHalt { vcpu: x[1] },
        id::VCPU_STATE => Call::VcpuState { vcpu: x[1] },
        id::PARTITION_SELF => Call::PartitionSelf,
        id::PARTITION_SUSPEND => partition(PartitionOp::Suspend),
        id::PARTITION_RESUME => partition(PartitionOp::Resume),
        id::PARTITION_RESTART => partition(PartitionOp::Restart),
        id::PARTITION_HALT => partition(PartitionOp::Halt),
        id::PARTITION_STATE => Call::PartitionState { partition: x[1] },
        id::PLAN_SWITCH => Call::PlanSwitch { plan: x[1] },
        id::PLAN_CURRENT => Call::PlanCurrent,
        id::HM_REPORT => Call::HmReport { code: x[1] },
        _ => Call::Unknown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_partitas_range_only() {
        assert_eq!(decode([0x8400_0000, 0, 0, 0]), None, "PSCI_VERSION is not ours");
        assert_eq!(decode([0xC600_0000 | 1 << 16, 0, 0, 0]), None, "beyond the 16-bit function field");
        assert_eq!(decode([id::VERSION, 0, 0, 0]), Some(Call::Version));
        assert_eq!(
            decode([id::VCPU_START, 1, 0x4000_0000, 7]),
            Some(Call::VcpuStart { vcpu: 1, entry: 0x4000_0000, context: 7 })
        );
        assert_eq!(
            decode([id::PARTITION_RESTART, 2, 0, 0]),
            Some(Call::Partition { op: PartitionOp::Restart, partition: 2 })
        );
        assert_eq!(decode([id::PLAN_SWITCH, 1, 0, 0]), Some(Call::PlanSwitch { plan: 1 }));
        assert_eq!(decode([id::HM_REPORT, 7, 0, 0]), Some(Call::HmReport { code: 7 }));
        assert_eq!(decode([BASE + 0xffff, 0, 0, 0]), Some(Call::Unknown));
    }
}
