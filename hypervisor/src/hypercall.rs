//! Partita's own hypercalls (`partita_core::hypercall`): a partition
//! controls its own vCPUs; a system partition, with the rights its
//! configuration grants, controls other partitions and the plan.

use crate::channel::calls as channel;
use crate::console::log;
use crate::health;
use crate::partition::lifecycle::{self, Cause, Start};
use crate::partition::{Partition, Vcpu};
use crate::state::System;
use crate::trap::exit::{Exit, Reply};
use crate::vgic;
use partita_arch::exception::Regs;
use partita_arch::timer;
use partita_core::health::Event;
use partita_core::hypercall::{status, Call, PartitionOp, ABI_VERSION};
use partita_core::partition::lifecycle::Change;
use partita_core::partition::vcpu::{Op, Refused};

pub fn handle(sys: &System, regs: &mut Regs, part: &Partition, vcpu: &Vcpu, call: Call) -> Exit {
    let function = regs.x[0];
    let (status, value) = match call {
        Call::Unknown => return health::illegal_call(part, vcpu, regs),
        Call::HmReport { code } => return report(part, vcpu, regs, code),
        Call::PortSend { channel, buffer, len, deadline } => {
            return port(part, vcpu, regs, channel::send(sys, part, vcpu, channel, buffer, len, deadline))
        }
        Call::PortReceive { channel, buffer, size, deadline } => {
            return port(part, vcpu, regs, channel::receive(sys, part, vcpu, channel, buffer, size, deadline))
        }
        Call::PortInfo { channel } => return port(part, vcpu, regs, channel::info(sys, vcpu, channel)),
        Call::DoorbellRing { channel } => return port(part, vcpu, regs, channel::ring(sys, vcpu, channel)),
        Call::HmRead { buffer, size, from } => {
            return answer(part, vcpu, regs, hm_read(part, buffer, size, from), "illegal health-monitor read")
        }
        Call::VcpuStart { vcpu, entry, context } => (start(part, vcpu, entry, context), 0),
        Call::VcpuSuspend { vcpu } => (own_vcpu(part, vcpu, Op::Suspend), 0),
        Call::VcpuResume { vcpu } => (own_vcpu(part, vcpu, Op::Resume), 0),
        Call::VcpuHalt { vcpu } => (own_vcpu(part, vcpu, Op::Halt), 0),
        Call::Partition { op, partition } => (control(sys, part, vcpu.partition, op, partition), 0),
        Call::PlanSwitch { plan } => switch_plan(sys, part, plan),
        Call::AccRequest { device } => match sys.fabric.as_ref().and_then(|f| f.request(sys, vcpu, device)) {
            Some(connected) => (status::OK, u64::from(connected)),
            None => (status::INVALID, 0),
        },
        Call::AccRelease { device } => match sys.fabric.as_ref().and_then(|f| f.withdraw(sys, vcpu, device)) {
            Some(()) => (status::OK, 0),
            None => (status::INVALID, 0),
        },
        Call::TioWriteAt { pins, values, at, period } => {
            (crate::timedio::write_at(sys, part, [pins, values, at, period]), 0)
        }
        Call::TioCancel { pins } => crate::timedio::cancel(part, pins),
        Call::TioStats => match crate::timedio::stats(part) {
            Ok(values) => return answer(part, vcpu, regs, Reply::Done(status::OK, values), "timed-I/O call"),
            Err(status) => (status, 0),
        },
        query => answer_query(sys, regs, vcpu.partition, query).unwrap_or((status::NOT_SUPPORTED, 0)),
    };
    regs.x[0] = status as u64;
    regs.x[1] = value;
    if status == status::DENIED {
        // A call beyond its rights is an illegal hypercall to the health monitor.
        return health::call_event(part, vcpu, Event::IllegalHypercall, function, "hypercall beyond its rights");
    }
    Exit::Resume
}

/// The calls that always resume (`Call::always_resumes`) of partition
/// `partition`: their status and x1 (and x2), or `None` for any other
/// call. The fast path answers them through this too, inlined: a call and
/// a result through memory are a tenth of a null hypercall. Each call
/// looks up only what it reads, so VERSION reads nothing.
#[inline(always)]
pub fn answer_query(sys: &System, regs: &mut Regs, partition: usize, call: Call) -> Option<(i64, u64)> {
    let part = || sys.partitions.get(partition);
    Some(match call {
        Call::Version => (status::OK, ABI_VERSION),
        Call::PartitionSelf => (status::OK, partition as u64),
        Call::VcpuState { vcpu } => match part()?.vcpus.get(vcpu as usize) {
            Some(target) => (status::OK, target.state() as u64),
            None => (status::INVALID, 0),
        },
        Call::PartitionState { partition } => match sys.partitions.get(partition as usize) {
            Some(target) => (status::OK, target.state() as u64),
            None => (status::INVALID, 0),
        },
        Call::PlanCurrent => {
            let (current, pending) = sys.plans.current(timer::counter());
            regs.x[2] = pending.map_or(u64::MAX, |p| p as u64);
            (status::OK, current as u64)
        }
        Call::WatchdogKick => health::kick(part()?),
        _ => return None,
    })
}

/// The outcome of a port or doorbell call.
fn port(part: &Partition, vcpu: &Vcpu, regs: &mut Regs, reply: Reply) -> Exit {
    answer(part, vcpu, regs, reply, "illegal port or doorbell call")
}

/// Puts a call's reply in the registers. A parked vCPU re-issues the call
/// when it next runs (after any interrupt it takes first), so it leaves its
/// pCPU with its PC back on the HVC. An illegal call is `what` to the
/// health monitor.
fn answer(part: &Partition, vcpu: &Vcpu, regs: &mut Regs, reply: Reply, what: &'static str) -> Exit {
    match reply {
        Reply::Done(status, values) => {
            regs.x[0] = status as u64;
            regs.x[1..4].copy_from_slice(&values);
            Exit::Resume
        }
        Reply::Wait => {
            regs.pc -= 4;
            if vgic::has_pending(vcpu) {
                vcpu.set_waiting(false);
                return Exit::Resume;
            }
            Exit::Wait
        }
        Reply::Illegal(status) => {
            let function = regs.x[0];
            regs.x[0] = status as u64;
            health::call_event(part, vcpu, Event::IllegalHypercall, function, what)
        }
    }
}

/// HM_READ: a page of the health monitor's log, for a partition with the
/// right `read-hm-log`. Records are 8-byte aligned for a C array of them.
fn hm_read(part: &Partition, buffer: u64, size: u64, from: u64) -> Reply {
    let result = if !part.config.rights.read_hm_log {
        Err(status::DENIED)
    } else if !buffer.is_multiple_of(8) {
        Err(status::INVALID)
    } else {
        health::log::read(part, buffer, size, from)
    };
    result.map_or_else(Reply::Illegal, |values| Reply::Done(status::OK, values))
}

/// The partition's own error report: its `reported` action decides.
fn report(part: &Partition, vcpu: &Vcpu, regs: &mut Regs, code: u64) -> Exit {
    regs.x[0] = status::OK as u64;
    health::call_event(part, vcpu, Event::Reported(code as u32), code, "error reported by the partition")
}

fn start(part: &Partition, index: u64, entry: u64, context: u64) -> i64 {
    if index as usize >= part.vcpus.len() {
        return status::INVALID;
    }
    match lifecycle::start_vcpu(part, index as usize, entry, context) {
        Ok(()) => status::OK,
        Err(Start::BadEntry) => status::INVALID,
        Err(Start::Pending | Start::Refused(_)) => status::STATE,
    }
}

/// Suspend, resume or halt one of the caller's own vCPUs (itself included:
/// it then leaves its pCPU on the way out of this trap).
fn own_vcpu(part: &Partition, index: u64, op: Op) -> i64 {
    let Some(target) = part.vcpus.get(index as usize) else { return status::INVALID };
    match lifecycle::vcpu_op(target, op) {
        Ok(_) => status::OK,
        Err(Refused::AlreadyOn | Refused::Halted | Refused::WrongState) => status::STATE,
    }
}

/// An operation on another partition, if the caller's rights allow it.
fn control(sys: &System, caller: &Partition, caller_index: usize, op: PartitionOp, index: u64) -> i64 {
    let rights = caller.config.rights;
    let (allowed, change) = match op {
        PartitionOp::Suspend => (rights.suspend, Change::Suspend),
        PartitionOp::Resume => (rights.resume, Change::Resume),
        PartitionOp::Restart => (rights.restart, Change::RestartByOther),
        PartitionOp::Halt => (rights.halt, Change::Halt),
    };
    let Some(target) = sys.partitions.get(index as usize) else { return status::INVALID };
    // A refusal is the health monitor's to record (`illegal-hypercall`),
    // under the caller's policy: a line here would let a partition flood
    // the console whatever that policy says.
    if !allowed {
        return status::DENIED;
    }
    // A partition acts on itself through PSCI (SYSTEM_OFF, SYSTEM_RESET).
    if index as usize == caller_index {
        return status::INVALID;
    }
    if lifecycle::change(sys, target, change, Cause::By(caller)) {
        status::OK
    } else {
        status::STATE
    }
}

fn switch_plan(sys: &System, part: &Partition, plan: u64) -> (i64, u64) {
    if !part.config.rights.switch_plan {
        return (status::DENIED, 0);
    }
    match sys.plans.request(plan as usize, timer::counter()) {
        Some(instant) => {
            log!("partition {} asks for plan {plan} from counter 0x{instant:x}", part.name());
            (status::OK, instant)
        }
        None => (status::INVALID, 0),
    }
}
