//! Partita's own state checks, run once every partition has stopped and
//! before the machine powers off: the invariants the rest of the code
//! relies on, checked from the outside. A test that drives Partita hard
//! (random hypercalls, restarts) asserts on the verdict line.

use crate::console::log;
use crate::health::log as hm_log;
use crate::state::{FixedPriority, PerCpu, Policy, System};

/// Logs `state check: ok (N checks)` or the first broken invariant.
pub fn run(system: &System) {
    let mut checks = 0usize;
    match verify(system, &mut checks) {
        Ok(()) => log!("state check: ok ({checks} checks)"),
        Err(what) => log!("state check: FAILED {what}"),
    }
}

fn verify(system: &System, checks: &mut usize) -> Result<(), &'static str> {
    let mut expect = |ok: bool, what: &'static str| {
        *checks += 1;
        if ok {
            Ok(())
        } else {
            Err(what)
        }
    };
    for part in &system.partitions {
        expect(part.state().ended(), "a partition still runs at power-off")?;
        for vcpu in &part.vcpus {
            let cpu = vcpu.pcpu();
            expect(cpu == vcpu.home || vcpu.migrate_to.contains(&cpu), "a vCPU sits on a pCPU it may not use")?;
        }
    }
    for (cpu, me) in system.cpus.iter().enumerate() {
        if let Policy::FixedPriority(fp) = &me.policy {
            expect(ready_queue_consistent(system, me, fp), "a ready queue holds a vCPU at the wrong priority")?;
        }
        for slot in 0..me.vcpus.len() {
            let vcpu = me.vcpus[slot];
            expect(vcpu.home == cpu || vcpu.migrate_to.contains(&cpu), "a pCPU lists a vCPU that is not its own")?;
        }
    }
    for channel in &system.channels {
        expect(channel.check(|p| system.partitions[p].vcpus.len()).is_ok(), "a queuing port is corrupt")?;
    }
    expect(hm_log::check().is_ok(), "the health-monitor log is corrupt")?;
    let (plan, _) = system.plans.current(partita_arch::timer::counter());
    expect(system.plans.count() == 0 || plan < system.plans.count(), "the plan in force does not exist")
}

/// Every queued vCPU sits at its own priority: priorities never change at
/// run time.
fn ready_queue_consistent(system: &System, me: &PerCpu, fp: &FixedPriority) -> bool {
    let ready = fp.ready.lock();
    (0..me.vcpus.len())
        .all(|slot| ready.priority_of(slot).is_none_or(|p| p == system.partition_of(me.vcpus[slot]).rank))
}
