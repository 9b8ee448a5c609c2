//! The fabric pCPU's loop: the emulated logic's passes, its computations
//! between them, and sleep until its next deadline; what a pass reports
//! goes to the manager, a guest's signal or the health monitor from here,
//! with no lock of the logic held.

use super::emulated::{Report, REPORTS};
use super::Fabric;
use crate::health;
use crate::partition::lifecycle::Cause;
use crate::state::System;
use crate::trace;
use crate::vgic;
use partita_arch::{cpu, residency, timer};
use partita_core::fabric::manager::{Event, Signal};
use partita_core::health::Event as HmEvent;
use partita_core::residency::path;
use partita_core::trace::{AccelStep, Kind, FABRIC_ABSENCE_NOTED};

/// The fabric pCPU's loop: the logic's passes, its computations between
/// them, and sleep until its next deadline.
pub fn run(sys: &'static System, fabric: &'static Fabric) -> ! {
    let me = sys.here();
    // Kept across passes: moving it would copy all its room each time.
    let mut reports: heapless::Vec<Report, REPORTS> = heapless::Vec::new();
    loop {
        fabric.catch_late_starts(sys);
        let now = timer::now();
        reports.clear();
        let (computed, next) = {
            let mut logic = fabric.logic.logic.lock();
            logic.pass(&sys.partitions, fabric, now, &mut reports);
            // Samples count from the end of the pass, so each one is a
            // real pause however long the pass took.
            (logic.compute(), logic.next_deadline(fabric, timer::now()))
        };
        for &report in &reports {
            deliver(sys, fabric, report);
        }
        if !reports.is_empty() {
            // What the manager did may have changed the deadlines.
            continue;
        }
        let now = timer::now();
        if computed || next.is_some_and(|at| at <= now) {
            // More to do at once: a computing step done, or a deadline
            // passed while the pass ran. The yield lets the cores beside
            // run first, as QEMU's round-robin runs one CPU until it waits
            // or yields; the timer, armed meanwhile, bounds their turns
            // (under -icount QEMU ends each turn at the next timer).
            timer::arm_at(now + fabric.logic.turn);
            residency::end();
            cpu::yield_now();
            residency::begin(path::FABRIC_PASS);
            timer::disarm();
            // Every tick since the yield was another core's.
            note_absence(timer::now(), now);
            crate::scheduler::drain_interrupts(sys, me, None);
            continue;
        }
        // Never longer than a turn: a kick from another pCPU (a download
        // asked, a device connected) comes as an SGI, and under -icount
        // QEMU lets the cores before this one in its round finish their
        // turns first, which only a timer near at hand keeps short.
        let alarm = next.unwrap_or(u64::MAX).min(now + fabric.logic.turn);
        timer::arm_at(alarm);
        residency::end();
        cpu::wait_for_interrupt();
        residency::begin(path::FABRIC_PASS);
        // Waking past the alarm, the pCPU was not run when its timer came
        // due. (A kick's wait before the alarm is not measured.)
        note_absence(timer::now(), alarm);
        // The logic's own deadline is no partition's interrupt: lowering it
        // here keeps the trace for what partitions do, rather than a timer
        // interrupt every few microseconds while a device sits idle.
        timer::disarm();
        crate::scheduler::drain_interrupts(sys, me, None);
    }
}

/// Traces the ticks from `since` to `now` that this pCPU did not execute,
/// when there are enough to matter: under `-icount` the other cores' turns
/// run on the one clock, and an allocation's window is granted them as
/// time Partita did not spend (docs/architecture.md, Known limits).
fn note_absence(now: u64, since: u64) {
    let absent = now.saturating_sub(since);
    if absent >= FABRIC_ABSENCE_NOTED {
        trace::record_at(now, Kind::AccelStep, usize::MAX, usize::MAX, AccelStep::Resumed.arg(absent));
    }
}

fn deliver(sys: &System, fabric: &Fabric, report: Report) {
    match report {
        Report::Manager(event, due) => {
            let now = timer::counter();
            let (step, prr) = match event {
                Event::Reconfigured { prr } => (AccelStep::Reconfigured, prr),
                Event::Stopped { prr, .. } => (AccelStep::Stopped, prr),
                Event::Started { prr } | Event::Done { prr } | Event::Expired { prr } | Event::LetGo { prr, .. } => {
                    (AccelStep::LogicEvent, prr)
                }
                // Only the logic's events come this way.
                _ => (AccelStep::LogicEvent, usize::MAX),
            };
            trace::record_at(now, Kind::AccelStep, usize::MAX, prr, step.arg(now.saturating_sub(due)));
            fabric.handle(sys, event)
        }
        Report::Ready(d) => {
            let device = &fabric.devices[d];
            vgic::inject(&sys.partitions[device.partition], 0, device.signals[Signal::Ready as usize], false);
        }
        Report::Dma(d, address) => {
            let part = &sys.partitions[fabric.devices[d].partition];
            crate::console::log!(
                "fabric: partition {} accelerator DMA outside its memory at 0x{address:x}: refused",
                part.name()
            );
            // The device's ERR_DMA is the guest's own answer: what `inject`
            // gives it, with nothing more to deliver.
            let action = health::raise_fault(part, part.vcpus[0], HmEvent::Stage2Fault, address, true);
            health::carry_out(sys, part, action, Cause::Health("accelerator DMA outside the partition"));
        }
    }
}
