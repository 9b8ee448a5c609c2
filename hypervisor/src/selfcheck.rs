//! Partita's own state checks, run once every partition has stopped and
//! before the machine powers off: the invariants the rest of the code
//! relies on, checked from the outside. A test that drives Partita hard
//! (random hypercalls, restarts) asserts on the verdict line.

use crate::boot::system;
use crate::console::log;
use crate::health;
use crate::scheduler;

/// Logs `state check: ok (N checks)` or the first broken invariant.
pub fn run() {
    let mut checks = 0usize;
    match verify(&mut checks) {
        Ok(()) => log!("state check: ok ({checks} checks)"),
        Err(what) => log!("state check: FAILED {what}"),
    }
}

fn verify(checks: &mut usize) -> Result<(), &'static str> {
    let mut expect = |ok: bool, what: &'static str| {
        *checks += 1;
        if ok {
            Ok(())
        } else {
            Err(what)
        }
    };
    let system = system();
    for part in &system.partitions {
        expect(part.state().ended(), "a partition still runs at power-off")?;
        for vcpu in &part.vcpus {
            let cpu = vcpu.pcpu();
            expect(cpu == vcpu.home || vcpu.migrate_to.contains(&cpu), "a vCPU sits on a pCPU it may not use")?;
        }
    }
    for (cpu, me) in system.cpus.iter().enumerate() {
        expect(scheduler::ready_queue_consistent(me), "a ready queue holds a vCPU at the wrong priority")?;
        for slot in 0..me.vcpus.len() {
            let vcpu = me.vcpus[slot];
            expect(vcpu.home == cpu || vcpu.migrate_to.contains(&cpu), "a pCPU lists a vCPU that is not its own")?;
        }
    }
    for channel in &system.channels {
        expect(channel.check().is_ok(), "a queuing port is corrupt")?;
    }
    expect(health::check().is_ok(), "the health-monitor log is corrupt")?;
    let (plan, _) = system.plans.current(partita_arch::timer::counter());
    expect(system.plans.count() == 0 || plan < system.plans.count(), "the plan in force does not exist")
}
