//! Partita's hypercall ABI: SMC Calling Convention fast calls over HVC, in
//! the vendor-specific hypervisor service range (owner 6), so they never
//! collide with PSCI or other standard services. `guests/include/partita.h`
//! is the same table for C guests; keep the two in step.
//!
//! x0 holds the function ID, x1..x4 the arguments; the status comes back in
//! x0 (0 or a negative [`status`]) and values, if any, in x1..x3.

/// Major version in bits 16..31, minor in 0..15.
pub const ABI_VERSION: u64 = 1 << 16;

/// The functions in [`id`]: the vendor hypervisor service's call count.
pub const CALLS: usize = 26;

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
    pub const PORT_SEND: u64 = super::BASE + 0x30;
    pub const PORT_RECEIVE: u64 = super::BASE + 0x31;
    pub const PORT_INFO: u64 = super::BASE + 0x32;
    pub const DOORBELL_RING: u64 = super::BASE + 0x38;
    pub const HM_REPORT: u64 = super::BASE + 0x40;
    pub const WATCHDOG_KICK: u64 = super::BASE + 0x41;
    pub const HM_READ: u64 = super::BASE + 0x42;
    pub const ACC_REQUEST: u64 = super::BASE + 0x50;
    pub const ACC_RELEASE: u64 = super::BASE + 0x51;
    pub const TIO_WRITE_AT: u64 = super::BASE + 0x60;
    pub const TIO_CANCEL: u64 = super::BASE + 0x61;
    pub const TIO_STATS: u64 = super::BASE + 0x62;
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
    /// Reserved: once "another restart is in progress"; restarts no longer
    /// wait for each other, so no call returns it.
    pub const BUSY: i64 = -5;
    /// A queuing port holds `depth` messages; nothing was sent.
    pub const FULL: i64 = -6;
    /// No message to receive; nothing was copied.
    pub const EMPTY: i64 = -7;
    /// The message is longer than the port's `max_message`.
    pub const TOO_LONG: i64 = -8;
    /// The caller's buffer cannot hold the message (x1: bytes needed).
    pub const BUFFER_TOO_SMALL: i64 = -9;
    /// A blocking call reached its deadline.
    pub const TIMEOUT: i64 = -10;
    /// A buffer is not inside the caller's RAM (or not writable there).
    pub const FAULT: i64 = -11;
    /// A timed output asked for a time the counter has reached already.
    pub const LATE: i64 = -12;
    /// A timed output asked for a time beyond the configured horizon.
    pub const TOO_FAR: i64 = -13;
}

/// Deadline argument of a blocking call: return at once.
pub const POLL: u64 = 0;
/// Deadline argument of a blocking call: wait without a time limit.
pub const FOREVER: u64 = u64::MAX;

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
    /// The [`crate::partition::vcpu::State`] of one of the caller's vCPUs, in x1.
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
    /// Sends `len` bytes at `buffer` on channel `channel` (sampling: write;
    /// queuing: append). A full queue waits until `deadline` (a counter
    /// value; [`POLL`]: not at all).
    PortSend {
        channel: u64,
        buffer: u64,
        len: u64,
        deadline: u64,
    },
    /// Receives into `size` bytes at `buffer`: x1 = length; sampling: x2 =
    /// age in microseconds, x3 = 1 if valid; queuing: x2 = messages left. An
    /// empty queue waits until `deadline`.
    PortReceive {
        channel: u64,
        buffer: u64,
        size: u64,
        deadline: u64,
    },
    /// What channel `channel` is, for one of its partitions: x1 = kind, x2 =
    /// max message (or window size), x3 = depth, refresh (µs) or window IPA.
    PortInfo {
        channel: u64,
    },
    /// Raises the doorbell of shared-memory channel `channel` at every other
    /// partition of it.
    DoorbellRing {
        channel: u64,
    },
    /// The partition reports an error of its own (`code`) to the health
    /// monitor, which applies its `reported` action.
    HmReport {
        code: u64,
    },
    /// Restarts the partition's watchdog period: x1 = the new deadline.
    WatchdogKick,
    /// Copies health-monitor records from sequence number `from` into
    /// `size` bytes at `buffer`: x1 = records, x2 = next `from`, x3 =
    /// records ever overwritten unread. Right `read-hm-log`.
    HmRead {
        buffer: u64,
        size: u64,
        from: u64,
    },
    /// Asks for a PRR for the caller's virtual device `device` (its index
    /// in the partition's `accelerators`) without stalling, as the
    /// guest-aware model does: x1 = 1 if connected on return, 0 if the
    /// request waits (IPC_READY follows once connected).
    AccRequest {
        device: u64,
    },
    /// Gives up the caller's virtual device `device`, to do its work on
    /// the CPU: a waiting request is dropped (a preempted job's saved
    /// context with it), a PRR it holds is freed, a computation there
    /// abandoned at once. On return the accelerator writes nothing more:
    /// the frames RESULT counts are final in the output. The page is
    /// read-only; a later write asks afresh.
    AccRelease {
        device: u64,
    },
    /// Drives the caller's timed-I/O `pins` to `values` when the counter
    /// reaches `at`, and again every `period` ticks unless it is 0.
    TioWriteAt {
        pins: u64,
        values: u64,
        at: u64,
        period: u64,
    },
    /// Drops the caller's pending timed outputs on any of `pins`: x1 =
    /// how many.
    TioCancel {
        pins: u64,
    },
    /// The caller's timed outputs so far: x1 = done, x2 = largest error,
    /// x3 = sum of errors (counter ticks).
    TioStats,
    /// In Partita's range, but no such function.
    Unknown,
}

/// The call in x0 and x1 if it is one that [`Call::always_resumes`],
/// without reading the other registers: the fast path's first question,
/// asked of every hypercall, and its whole decoding.
#[inline]
pub const fn decode_query(x0: u64, x1: u64) -> Option<Call> {
    Some(match x0 {
        id::VERSION => Call::Version,
        id::PARTITION_SELF => Call::PartitionSelf,
        id::VCPU_STATE => Call::VcpuState { vcpu: x1 },
        id::PARTITION_STATE => Call::PartitionState { partition: x1 },
        id::PLAN_CURRENT => Call::PlanCurrent,
        id::WATCHDOG_KICK => Call::WatchdogKick,
        _ => return None,
    })
}

impl Call {
    /// A call that only reads state or kicks its own watchdog: whatever its
    /// arguments, the caller goes on at once and nothing else on its pCPU
    /// can want to run because of it, so the hypervisor may answer it on
    /// its fast path.
    pub const fn always_resumes(&self) -> bool {
        matches!(
            self,
            Call::Version
                | Call::PartitionSelf
                | Call::VcpuState { .. }
                | Call::PartitionState { .. }
                | Call::PlanCurrent
                | Call::WatchdogKick
        )
    }
}

/// Decodes x0..x4; `None` when x0 is outside Partita's range (PSCI and
/// other services are decoded elsewhere).
#[inline]
pub fn decode(x: [u64; 5]) -> Option<Call> {
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
        id::PORT_SEND => Call::PortSend { channel: x[1], buffer: x[2], len: x[3], deadline: x[4] },
        id::PORT_RECEIVE => Call::PortReceive { channel: x[1], buffer: x[2], size: x[3], deadline: x[4] },
        id::PORT_INFO => Call::PortInfo { channel: x[1] },
        id::DOORBELL_RING => Call::DoorbellRing { channel: x[1] },
        id::HM_REPORT => Call::HmReport { code: x[1] },
        id::WATCHDOG_KICK => Call::WatchdogKick,
        id::HM_READ => Call::HmRead { buffer: x[1], size: x[2], from: x[3] },
        id::ACC_REQUEST => Call::AccRequest { device: x[1] },
        id::ACC_RELEASE => Call::AccRelease { device: x[1] },
        id::TIO_WRITE_AT => Call::TioWriteAt { pins: x[1], values: x[2], at: x[3], period: x[4] },
        id::TIO_CANCEL => Call::TioCancel { pins: x[1] },
        id::TIO_STATS => Call::TioStats,
        _ => Call::Unknown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_calls_that_cannot_block_or_change_another_vcpu_always_resume() {
        let resumes = |id| decode([id, 0, 0, 0, 0]).is_some_and(|call| call.always_resumes());
        for id in [id::VERSION, id::PARTITION_SELF, id::VCPU_STATE, id::PARTITION_STATE, id::PLAN_CURRENT] {
            assert!(resumes(id), "{id:#x}");
        }
        assert!(resumes(id::WATCHDOG_KICK));
        for id in [id::PORT_SEND, id::PORT_RECEIVE, id::VCPU_SUSPEND, id::PARTITION_HALT, id::HM_REPORT, 0xC600_FFFF] {
            assert!(!resumes(id), "{id:#x}");
        }
        // The short decoding gives the same call as the whole one, and
        // only for the calls that always resume, for every ID.
        for function in (0..=0xffff).map(|n| BASE + n).chain([0, 0x8400_0000, BASE + 0x1_0000]) {
            let whole = decode([function, 7, 8, 9, 10]).filter(Call::always_resumes);
            assert_eq!(decode_query(function, 7), whole, "{function:#x}");
        }
    }

    #[test]
    fn decodes_partitas_range_only() {
        assert_eq!(decode([0x8400_0000, 0, 0, 0, 0]), None, "PSCI_VERSION is not ours");
        assert_eq!(decode([0xC600_0000 | 1 << 16, 0, 0, 0, 0]), None, "beyond the 16-bit function field");
        assert_eq!(decode([id::VERSION, 0, 0, 0, 0]), Some(Call::Version));
        assert_eq!(
            decode([id::VCPU_START, 1, 0x4000_0000, 7, 0]),
            Some(Call::VcpuStart { vcpu: 1, entry: 0x4000_0000, context: 7 })
        );
        assert_eq!(
            decode([id::PARTITION_RESTART, 2, 0, 0, 0]),
            Some(Call::Partition { op: PartitionOp::Restart, partition: 2 })
        );
        assert_eq!(decode([id::PLAN_SWITCH, 1, 0, 0, 0]), Some(Call::PlanSwitch { plan: 1 }));
        assert_eq!(decode([id::HM_REPORT, 7, 0, 0, 0]), Some(Call::HmReport { code: 7 }));
        assert_eq!(
            decode([id::PORT_RECEIVE, 3, 0x4000_1000, 64, FOREVER]),
            Some(Call::PortReceive { channel: 3, buffer: 0x4000_1000, size: 64, deadline: FOREVER })
        );
        assert_eq!(
            decode([id::HM_READ, 0x4000_0000, 256, 9, 0]),
            Some(Call::HmRead { buffer: 0x4000_0000, size: 256, from: 9 })
        );
        assert_eq!(decode([id::ACC_REQUEST, 1, 0, 0, 0]), Some(Call::AccRequest { device: 1 }));
        assert_eq!(decode([id::ACC_RELEASE, 2, 0, 0, 0]), Some(Call::AccRelease { device: 2 }));
        assert_eq!(
            decode([id::TIO_WRITE_AT, 3, 1, 1_000, 50]),
            Some(Call::TioWriteAt { pins: 3, values: 1, at: 1_000, period: 50 })
        );
        assert_eq!(decode([id::TIO_CANCEL, 0xff, 0, 0, 0]), Some(Call::TioCancel { pins: 0xff }));
        assert_eq!(decode([BASE + 0xffff, 0, 0, 0, 0]), Some(Call::Unknown));
    }

    #[test]
    fn the_call_count_is_the_functions_decoded() {
        let known = (BASE..=BASE + 0xffff).filter(|&f| decode([f, 0, 0, 0, 0]) != Some(Call::Unknown)).count();
        assert_eq!(known, CALLS);
    }
}
