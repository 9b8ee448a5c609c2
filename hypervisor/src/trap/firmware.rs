//! HVC and SMC: Partita's own hypercalls, PSCI and the SMCCC calls
//! firmware answers (discovery included). Anything else over SMC is a
//! fault; over HVC it is answered NOT_SUPPORTED.

use super::exit::{Exit, Fault};
use crate::partition::lifecycle::{self, Cause, Start};
use crate::partition::{Partition, Vcpu};
use crate::state::System;
use crate::{health, hypercall, trace};
use partita_arch::exception::Regs;
use partita_core::partition::lifecycle::Change;
use partita_core::partition::vcpu::{Op, Refused, State};
use partita_core::trace::Kind;
use partita_core::trap::esr;
use partita_core::trap::psci::{self, ret, Call};

/// One call, traced from entry to result.
pub fn call(sys: &System, regs: &mut Regs, part: &Partition, vcpu: &Vcpu, smc: bool) -> Exit {
    trace::record(Kind::HypercallEntry, vcpu.partition, vcpu.index, regs.x[0] as u32);
    let exit = dispatch(sys, regs, part, vcpu, smc);
    trace::record(Kind::HypercallExit, vcpu.partition, vcpu.index, regs.x[0] as u32);
    exit
}

fn dispatch(sys: &System, regs: &mut Regs, part: &Partition, vcpu: &Vcpu, smc: bool) -> Exit {
    let args = [regs.x[0], regs.x[1], regs.x[2], regs.x[3], regs.x[4]];
    if let Some(call) = partita_core::hypercall::decode(args) {
        return hypercall::handle(sys, regs, part, vcpu, call);
    }
    let result = match psci::decode([args[0], args[1], args[2], args[3]]) {
        Call::Immediate(value) => value,
        Call::Values(values) => {
            regs.x[..4].copy_from_slice(&values);
            return Exit::Resume;
        }
        Call::CpuOn { target, entry, context } => cpu_on(part, target, entry, context),
        Call::AffinityInfo { target, lowest_level } => affinity_info(part, target, lowest_level),
        Call::CpuOff => {
            // Only a vCPU that is up runs to make this call.
            let _ = lifecycle::vcpu_op(vcpu, Op::PowerOff);
            return Exit::Resume;
        }
        Call::SystemOff => {
            lifecycle::change(sys, part, Change::PowerOff, Cause::Psci);
            return Exit::Resume;
        }
        Call::SystemReset => return Exit::Restart,
        Call::Unknown if smc => {
            // The SMC did not complete: the fault is the instruction's own,
            // as on a machine with no firmware behind it, where SMC is
            // UNDEFINED.
            regs.pc = regs.pc.wrapping_sub(4);
            return Exit::Fault(Fault::undefined("SMC that is not a PSCI call", esr::ec::SMC64, Some(regs.x[0])));
        }
        Call::Unknown => return health::illegal_call(part, vcpu, regs),
    };
    regs.x[0] = result as u64;
    Exit::Resume
}

fn cpu_on(part: &Partition, target: u64, entry: u64, context: u64) -> i64 {
    let Some(index) = psci::target_vcpu(target, part.vcpus.len()) else { return ret::INVALID_PARAMETERS };
    match lifecycle::start_vcpu(part, index, entry, context) {
        Ok(()) => ret::SUCCESS,
        Err(Start::BadEntry) => ret::INVALID_ADDRESS,
        Err(Start::Pending) => ret::ON_PENDING,
        Err(Start::Refused(Refused::AlreadyOn)) => ret::ALREADY_ON,
        Err(Start::Refused(_)) => ret::DENIED,
    }
}

fn affinity_info(part: &Partition, target: u64, lowest_level: u64) -> i64 {
    match psci::target_vcpu(target, part.vcpus.len()) {
        // A vCPU is off only once it has left its pCPU.
        Some(index) if lowest_level == 0 => {
            let vcpu = part.vcpus[index];
            let down = matches!(vcpu.state(), State::Off | State::Halted);
            i64::from(down && !vcpu.is_on_cpu())
        }
        _ => ret::INVALID_PARAMETERS,
    }
}
