//! Virtual interrupts, from their source to a vCPU's list registers.
//!
//! Sources: an SGI from another vCPU of the partition (trapped
//! ICC_SGI1R_EL1), the running vCPU's virtual timer (physical PPI 27), a
//! passthrough SPI, or the guest's own ISPENDR writes. Each goes through the
//! partition's virtual distributor (enabled? which priority?), then into the
//! target vCPU's queue; the queue is flushed into the list registers every
//! time that vCPU enters the guest.

use crate::console::log;
use crate::partition::{Partition, Vcpu};
use crate::state::{PerCpu, System};
use crate::trace;
use core::sync::atomic::Ordering;
use partita_arch::cpu;
use partita_arch::platform::{Gic, InterruptController, ListRegisters, Lrs, MAX_LRS};
use partita_core::trace::Kind;
use partita_core::vgic::lr::{self, Lr, State};
use partita_core::vgic::regs::{Access, Effect};
use partita_core::vgic::{sgi_targets, Virq, PRIVATE, VTIMER_INTID};

/// Reports of writes to interrupts a partition does not own are capped per
/// partition, so a guest probing every INTID cannot flood the console.
const DENIED_REPORTS: u32 = 8;

/// Makes `intid` pending on vCPU `index` of `part`, if its configuration
/// lets it through; wakes the vCPU. Returns false if it was not delivered
/// (disabled: latched for later; or no such vCPU).
pub fn inject(part: &Partition, index: usize, intid: u32, hw: bool) -> bool {
    let Some(vcpu) = part.vcpus.get(index) else { return false };
    let Some(priority) = part.gic.lock().fire(index, intid) else { return false };
    queue(vcpu, Virq { intid, priority, hw });
    true
}

fn queue(vcpu: &Vcpu, virq: Virq) {
    if vcpu.queue.lock().push(virq).is_err() {
        log!(
            "vCPU {} of partition {}: virtual interrupt {} dropped, queue full",
            vcpu.index,
            vcpu.partition,
            virq.intid
        );
        return;
    }
    vcpu.set_queued(true);
    wake(vcpu);
}

/// A vCPU with an interrupt to take stops waiting; its pCPU looks again.
pub fn wake(vcpu: &Vcpu) {
    // A vCPU that is not waiting needs no mark: it is running or queued.
    if vcpu.is_waiting() {
        vcpu.set_waiting(false);
    }
    let pcpu = vcpu.pcpu();
    if pcpu != cpu::index() {
        Gic::kick(pcpu);
    }
}

/// Fills the running vCPU's list registers from its queue, just before it
/// enters the guest. Costs one atomic load when nothing is queued.
pub fn flush(vcpu: &Vcpu) {
    if vcpu.has_queued() {
        refill(vcpu);
    }
}

/// Fills the list registers and sets when to be asked again. The
/// maintenance interrupt calls this directly: the interrupt stays asserted
/// until the list registers or the request change.
pub fn refill(vcpu: &Vcpu) {
    let mut queue = vcpu.queue.lock();
    let count = Lrs::count();
    let mut lrs = [Lr::default(); MAX_LRS];
    for (n, lr) in lrs.iter_mut().enumerate().take(count) {
        *lr = Lr(Lrs::read(n));
    }
    let before = lrs;
    let refill = lr::flush(&mut lrs[..count], &mut queue);
    if trace::enabled() {
        let mut seen = vcpu.seen_lrs.lock();
        for (seen, lr) in seen.iter_mut().zip(&lrs[..count]) {
            *seen = lr.0;
        }
    }
    for n in 0..count {
        if lrs[n] != before[n] {
            Lrs::write(n, lrs[n].0);
            trace::record(Kind::IrqInjected, vcpu.partition, vcpu.index, lrs[n].intid());
        }
    }
    Lrs::request_maintenance(refill);
    vcpu.set_queued(!queue.is_empty());
}

/// With tracing on: records an EOI event for every interrupt that left the
/// list registers since Partita last looked, and remembers what is there now.
pub fn note_completions(vcpu: &Vcpu) {
    if !trace::enabled() {
        return;
    }
    let mut seen = vcpu.seen_lrs.lock();
    for (n, previous) in seen.iter_mut().enumerate().take(Lrs::count()) {
        let now = Lr(Lrs::read(n));
        let before = Lr(*previous);
        if !before.is_free() && (now.is_free() || now.intid() != before.intid()) {
            trace::record(Kind::IrqEoi, vcpu.partition, vcpu.index, before.intid());
        }
        *previous = now.0;
    }
}

/// The virtual timer is level-triggered: when the guest has silenced it
/// (disabled, masked, or moved the compare value) before taking a listed,
/// still-pending HW entry, that entry is withdrawn and the physical PPI
/// deactivated, as the line it stands for has dropped. Without this, a guest
/// that waits with interrupts masked would find a stale pending timer at
/// every WFI.
pub fn resample_timer() {
    if partita_arch::timer::virtual_timer_asserted() {
        return;
    }
    for n in 0..Lrs::count() {
        let entry = Lr(Lrs::read(n));
        if entry.hw() && entry.intid() == VTIMER_INTID && entry.state() == State::Pending {
            Lrs::write(n, 0);
            Gic::deactivate(VTIMER_INTID);
        }
    }
}

/// True when the vCPU has an interrupt to take: queued, or pending in a
/// list register (a WFI must then complete at once).
pub fn has_pending(vcpu: &Vcpu) -> bool {
    let listed = (0..Lrs::count()).any(|n| {
        let state = Lr(Lrs::read(n)).state();
        state == State::Pending || state == State::PendingActive
    });
    listed || vcpu.has_queued()
}

/// A physical interrupt Partita does not keep for itself: the running
/// vCPU's timer, or a partition's passthrough SPI. The physical interrupt
/// stays active until the guest's EOI deactivates it (HW bit).
pub fn forward(sys: &System, me: &PerCpu, intid: u32, running: Option<&Vcpu>) {
    Gic::drop_priority(intid);
    if let Some(vcpu) = running.filter(|_| intid == VTIMER_INTID) {
        if list_directly(me, sys.partition_of(vcpu), vcpu, intid) {
            return;
        }
    }
    let target = if intid == VTIMER_INTID { running.map(|v| (v.partition, v.index)) } else { spi_owner(sys, intid) };
    let delivered = target.is_some_and(|(p, i)| inject(&sys.partitions[p], i, intid, true));
    if !delivered && intid == VTIMER_INTID {
        mask_timer(me);
    } else if !delivered {
        Gic::deactivate(intid);
    }
}

/// The running guest's timer fired while its virtual interrupt is disabled
/// (it polls CNTV_CTL, say): the fired state is latched for it, and the
/// level-triggered physical PPI is masked on this pCPU so it does not fire
/// again and again. It is unmasked when the guest enables the virtual one
/// or another vCPU comes onto the pCPU.
fn mask_timer(me: &PerCpu) {
    Gic::enable_private(VTIMER_INTID, me.index, false);
    Gic::deactivate(VTIMER_INTID);
    me.timer_masked.store(true, Ordering::Relaxed);
}

/// Unmasks the physical timer PPI of this pCPU if [`mask_timer`] masked it.
pub fn unmask_timer(me: &PerCpu) {
    if me.timer_masked.swap(false, Ordering::Relaxed) {
        Gic::enable_private(VTIMER_INTID, me.index, true);
    }
}

/// The fast path for the running vCPU's own HW interrupt (its timer): with
/// nothing queued ahead of it and a free list register, it goes straight
/// there. No duplicate is possible: the physical interrupt stays active,
/// so it cannot fire again, until the guest completes this one.
fn list_directly(me: &PerCpu, part: &Partition, vcpu: &Vcpu, intid: u32) -> bool {
    let Some(priority) = part.gic.lock().fire(vcpu.index, intid) else {
        mask_timer(me);
        return true;
    };
    list_now(vcpu, Virq { intid, priority, hw: true })
}

/// Writes `virq` into a free list register of the vCPU running on this
/// pCPU, skipping its queue: only when nothing is queued ahead of it (the
/// queue keeps priority order) and no list register holds the same INTID
/// (two would be UNPREDICTABLE). False: take the queue path.
fn list_now(vcpu: &Vcpu, virq: Virq) -> bool {
    if vcpu.has_queued() {
        return false;
    }
    let count = Lrs::count();
    let free = Lrs::free() & ((1 << count) - 1);
    if free == 0 || (0..count).any(|n| free & (1 << n) == 0 && Lr(Lrs::read(n)).intid() == virq.intid) {
        return false;
    }
    let n = free.trailing_zeros() as usize;
    let lr = Lr::pending(virq).0;
    Lrs::write(n, lr);
    if trace::enabled() {
        vcpu.seen_lrs.lock()[n] = lr;
        trace::record(Kind::IrqInjected, vcpu.partition, vcpu.index, virq.intid);
    }
    true
}

fn spi_owner(sys: &System, intid: u32) -> Option<(usize, usize)> {
    sys.partitions.iter().enumerate().find_map(|(p, part)| {
        let target = part.gic.lock().spi_target(intid)?;
        Some((p, target))
    })
}

/// Before a vCPU's list registers are saved: a HW-linked private interrupt
/// (its virtual timer) is active on this pCPU, which the next vCPU shares.
/// Deactivate it; a still-pending entry is dropped (the timer fires again
/// when the vCPU is back), an active one stays as a purely virtual entry.
pub fn release_private_hw(lrs: &mut [u64]) {
    for value in lrs.iter_mut() {
        let entry = Lr(*value);
        if entry.is_free() || !entry.hw() || entry.intid() >= PRIVATE {
            continue;
        }
        Gic::deactivate(entry.intid());
        *value = match entry.state() {
            State::Pending => 0,
            _ => entry.0 & !(1 << 61) & !(0x3ff << 32),
        };
    }
}

/// The same for a HW-linked private interrupt still waiting in the leaving
/// vCPU's queue (no list register was free when it fired): its physical
/// interrupt is active too, and would stay so until that vCPU comes back
/// and completes it, silencing the timer of every other vCPU here. It is
/// dropped and deactivated; the timer fires again when the vCPU is back.
pub fn release_queued_private_hw(vcpu: &Vcpu) {
    let mut queue = vcpu.queue.lock();
    for intid in 0..PRIVATE {
        match queue.remove(intid) {
            Some(virq) if virq.hw => Gic::deactivate(intid),
            Some(virq) => {
                let _ = queue.push(virq);
            }
            None => {}
        }
    }
    vcpu.set_queued(!queue.is_empty());
}

/// ICC_SGI1R_EL1 from `sender`: SGIs to vCPUs of the same partition.
pub fn generate_sgi(part: &Partition, sender: usize, value: u64) {
    let (intid, targets) = sgi_targets(value, part.vcpus.len(), sender);
    for index in (0..part.vcpus.len()).filter(|i| targets & (1 << i) != 0) {
        // An SGI to itself (Thread-Metric's interrupt tests, a kernel's
        // self-IPI) goes straight into a list register of the sender, which
        // is the vCPU on this pCPU.
        if index == sender {
            let Some(priority) = part.gic.lock().fire(index, intid) else { continue };
            let virq = Virq { intid, priority, hw: false };
            if !list_now(part.vcpus[index], virq) {
                queue(part.vcpus[index], virq);
            }
            continue;
        }
        inject(part, index, intid, false);
    }
}

/// Which emulated GIC frame an address falls in.
pub enum Frame {
    Distributor(u64),
    Redistributor(u64),
}

/// The GIC frame a guest-physical address names, for this partition.
pub fn frame(sys: &System, part: &Partition, ipa: u64) -> Option<Frame> {
    use partita_core::vgic::regs::{GICD_SIZE, GICR_FRAME};
    let platform = &sys.platform;
    let gicd = ipa.wrapping_sub(platform.gicd.base);
    let gicr = ipa.wrapping_sub(platform.gicr.base);
    if gicd < GICD_SIZE {
        Some(Frame::Distributor(gicd))
    } else if gicr < GICR_FRAME * part.vcpus.len() as u64 {
        Some(Frame::Redistributor(gicr))
    } else {
        None
    }
}

/// A trapped access to the emulated distributor or a redistributor.
pub fn mmio(me: &PerCpu, part: &Partition, frame: Frame, size: u8, value: Option<u64>) -> u64 {
    let mut effects: heapless::Vec<Effect, 64> = heapless::Vec::new();
    let result = {
        let mut gic = part.gic.lock();
        let mut sink = |effect| {
            let _ = effects.push(effect);
        };
        match frame {
            Frame::Distributor(offset) => gic.distributor(Access { offset, size, value }, &mut sink),
            Frame::Redistributor(offset) => gic.redistributor(Access { offset, size, value }, &mut sink),
        }
    };
    for effect in effects {
        apply(me, part, effect);
    }
    result
}

fn apply(me: &PerCpu, part: &Partition, effect: Effect) {
    match effect {
        Effect::Denied { intid } => {
            if part.denied_reports.fetch_add(1, Ordering::Relaxed) < DENIED_REPORTS {
                log!("partition {} wrote to interrupt {intid}, which it does not own: ignored", part.name());
            }
            trace::record(Kind::Health, 0xff, 0xff, intid);
        }
        Effect::Pend { vcpu, intid } => {
            if let Some(target) = part.vcpus.get(vcpu) {
                let priority = part.gic.lock().config(vcpu, intid).map_or(0xa0, |c| c.priority);
                queue(target, Virq { intid, priority, hw: false });
            }
        }
        Effect::Unpend { vcpu, intid } => {
            if let Some(target) = part.vcpus.get(vcpu) {
                target.queue.lock().remove(intid);
            }
        }
        // A doorbell or a signal is purely virtual: its physical namesake
        // stays untouched.
        Effect::SpiEnable { intid, .. } | Effect::SpiRoute { intid, .. } if part.virtual_spis.contains(&intid) => {}
        Effect::SpiEnable { intid, enabled } => Gic::enable_spi(intid, enabled),
        Effect::TimerEnabled { vcpu } => {
            // Only the vCPU loaded here has its timer PPI on this pCPU.
            let running = me.current_vcpu();
            if running.is_some_and(|v| part.vcpus.get(vcpu).is_some_and(|&target| core::ptr::eq(target, v))) {
                unmask_timer(me);
            }
        }
        Effect::SpiRoute { intid, vcpu } => {
            if let Some(target) = part.vcpus.get(vcpu) {
                Gic::route_spi(intid, target.home);
            }
        }
    }
}

/// Physical set-up of every partition's passthrough SPIs: group 1, a
/// priority from the owner's criticality, routed to the pCPU of the vCPU the
/// configuration names, disabled until the guest enables it.
// Out of line: it runs once, and inlined into boot it made the image larger.
#[inline(never)]
pub fn configure_spis(sys: &System) {
    for part in &sys.partitions {
        let priority = 0xa0 - 0x20 * part.config.criticality as u8;
        for i in part.config.devices.iter().flat_map(|d| d.interrupts.iter()) {
            // The boot-time validation proved the vCPU exists.
            Gic::configure_spi(i.intid, priority, part.vcpus[i.vcpu as usize].home);
        }
    }
}
