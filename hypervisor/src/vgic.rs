//! Virtual interrupts, from their source to a vCPU's list registers.
//!
//! Sources: an SGI from another vCPU of the partition (trapped
//! ICC_SGI1R_EL1), the running vCPU's EL1 virtual or physical timer
//! (physical PPIs 27 and 30), a passthrough SPI, or the guest's own ISPENDR
//! writes. Each goes through the partition's virtual distributor (enabled?
//! which priority?), then into the target vCPU's queue; the queue is
//! flushed into the list registers every time that vCPU enters the guest.

use crate::console;
use crate::partition::{Partition, Vcpu};
use crate::state::{PerCpu, System};
use crate::trace;
use core::sync::atomic::Ordering;
use partita_arch::platform::{Gic, InterruptController, ListRegisters, Lrs, VgicContext, MAX_LRS};
use partita_arch::{cpu, timer};
use partita_core::trace::Kind;
use partita_core::vgic::lr::{self, Lr, State};
use partita_core::vgic::regs::{Access, Effect, MAX_EFFECTS};
use partita_core::vgic::{is_timer, sgi_targets, timer_asserted, Virq, PRIVATE, SPI_BASE, TIMER_INTIDS, VTIMER_INTID};

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
    let pushed = {
        let mut queue = vcpu.queue.lock();
        let pushed = queue.push(virq);
        // Under the lock: a refill that took it before has seen the entry
        // or will see this.
        if pushed.is_ok() {
            vcpu.set_queued(true);
        }
        pushed
    };
    if pushed.is_err() {
        console::pieces()
            .text("vCPU ")
            .decimal(vcpu.index as u64)
            .text(" of partition ")
            .decimal(vcpu.partition as u64)
            .text(": virtual interrupt ")
            .decimal(u64::from(virq.intid))
            .text(" dropped, queue full")
            .end();
        return;
    }
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
/// enters the guest. Costs one atomic load when nothing is queued, and
/// one register read when the last refill found no room and neither has
/// a list register become free nor been queued since: nothing else makes
/// room (a listed entry the guest takes becomes active, which is evicted
/// no more than pending, and its completion frees the register).
pub fn flush(vcpu: &Vcpu) {
    if vcpu.has_queued() && !(vcpu.is_stuck() && Lrs::free() & implemented() == 0) {
        refill(vcpu);
    }
}

/// Fills the list registers and sets when to be asked again. The
/// maintenance interrupt calls this directly: the interrupt stays asserted
/// until the list registers or the request change. Only the registers
/// that hold something are read, and only those that changed written.
pub fn refill(vcpu: &Vcpu) {
    Lrs::retire_completed();
    let mut queue = vcpu.queue.lock();
    let count = Lrs::count();
    let mut lrs = [Lr::default(); MAX_LRS];
    for n in bits(listed()) {
        lrs[n] = Lr(Lrs::read(n));
    }
    let flushed = lr::flush(&mut lrs[..count], &mut queue);
    if trace::enabled() {
        let mut seen = vcpu.seen_lrs.lock();
        for (seen, lr) in seen.iter_mut().zip(&lrs[..count]) {
            *seen = lr.0;
        }
    }
    for n in bits(u64::from(flushed.changed)) {
        Lrs::write(n, lrs[n].0);
        trace::record(Kind::IrqInjected, vcpu.partition, vcpu.index, lrs[n].intid());
    }
    Lrs::request_maintenance(flushed.refill);
    // What stays queued found no room, or waits for its own entry to be
    // completed: either way, for a register to become free.
    vcpu.set_queued(!queue.is_empty());
    vcpu.set_stuck(!queue.is_empty());
}

/// With tracing on: the list registers `vcpu` was just loaded with are
/// what [`note_completions`] compares against. Only the implemented ones
/// are copied (the whole array is a library memcpy on every switch), and
/// of those the listed ones: the others were loaded empty.
pub fn note_loaded(vcpu: &Vcpu, vgic: &VgicContext) {
    if trace::enabled() {
        let mut seen = vcpu.seen_lrs.lock();
        for (n, (seen, lr)) in seen.iter_mut().zip(&vgic.lrs).take(Lrs::count()).enumerate() {
            *seen = if vgic.listed & (1 << n) != 0 { *lr } else { 0 };
        }
    }
}

/// With tracing on: records an EOI event for every interrupt that left the
/// list registers since Partita last looked, and remembers what is there now.
/// The question is in line: with tracing off, every trap and switch asks
/// it, and the body's frame would cost more than the answer.
#[inline(always)]
pub fn note_completions(vcpu: &Vcpu) {
    if trace::enabled() {
        note_each_completion(vcpu);
    }
}

#[inline(never)]
fn note_each_completion(vcpu: &Vcpu) {
    let mut seen = vcpu.seen_lrs.lock();
    for (n, previous) in seen.iter_mut().enumerate().take(Lrs::count()) {
        let before = Lr(*previous);
        // Only Partita fills a list register, and it notes what it writes:
        // one seen empty is still empty.
        if before.is_free() {
            continue;
        }
        let now = Lr(Lrs::read(n));
        if now.is_free() || now.intid() != before.intid() {
            trace::record(Kind::IrqEoi, vcpu.partition, vcpu.index, before.intid());
        }
        *previous = now.0;
    }
}

/// The EL1 timers are level-triggered: when the guest has silenced one
/// (disabled, masked, or moved the compare value) before taking a listed,
/// still-pending HW entry, that entry is withdrawn and the physical PPI
/// deactivated, as the line it stands for has dropped. Without this, a guest
/// that waits with interrupts masked would find a stale pending timer at
/// every WFI.
pub fn resample_timer() {
    let listed = listed();
    if listed == 0 {
        return;
    }
    for intid in TIMER_INTIDS.into_iter().filter(|&intid| !loaded_timer_asserted(intid)) {
        for n in bits(listed) {
            let entry = Lr(Lrs::read(n));
            if entry.hw() && entry.intid() == intid && entry.state() == State::Pending {
                Lrs::write(n, 0);
                Gic::deactivate(intid);
            }
        }
    }
}

/// The list registers that hold something (the others are free, and most
/// are at any time): what is worth reading.
fn listed() -> u64 {
    !Lrs::free() & implemented()
}

/// The implemented list registers, bit n for register n.
fn implemented() -> u64 {
    (1 << Lrs::count()) - 1
}

/// The indices of the bits set in `mask`, lowest first.
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        (mask != 0).then(|| {
            let n = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            n
        })
    })
}

/// The line of the loaded vCPU's timer `intid`.
fn loaded_timer_asserted(intid: u32) -> bool {
    if intid == VTIMER_INTID {
        timer::virtual_timer_asserted()
    } else {
        timer::physical_timer_asserted()
    }
}

/// True when the vCPU has an interrupt to take: queued, or pending in a
/// list register (a WFI must then complete at once).
pub fn has_pending(vcpu: &Vcpu) -> bool {
    let listed = bits(listed()).any(|n| {
        let state = Lr(Lrs::read(n)).state();
        state == State::Pending || state == State::PendingActive
    });
    listed || vcpu.has_queued()
}

/// A physical interrupt Partita does not keep for itself: one of the
/// running vCPU's timers, or a partition's passthrough SPI. The physical
/// interrupt stays active until the guest's EOI deactivates it (HW bit).
pub fn forward(sys: &System, me: &PerCpu, intid: u32, running: Option<&Vcpu>) {
    Gic::drop_priority(intid);
    if is_timer(intid) {
        forward_timer(sys, me, intid, running);
    } else {
        forward_spi(sys, intid);
    }
}

/// The running vCPU's own timer PPI `intid`, from the fast path, which
/// knows the vCPU and its partition: [`forward`] without looking them up.
pub fn forward_own_timer(part: &Partition, vcpu: &Vcpu, intid: u32) {
    Gic::drop_priority(intid);
    if !give_timer(part, vcpu, intid) {
        mask_timer(crate::state::system().here(), intid);
    }
}

/// A timer PPI belongs to the vCPU loaded here. The fast path: with
/// nothing queued ahead of it and a free list register, it goes straight
/// there. No duplicate is possible: the physical interrupt stays active,
/// so it cannot fire again, until the guest completes this one.
fn forward_timer(sys: &System, me: &PerCpu, intid: u32, running: Option<&Vcpu>) {
    if !running.is_some_and(|vcpu| give_timer(sys.partition_of(vcpu), vcpu, intid)) {
        mask_timer(me, intid);
    }
}

/// Timer PPI `intid` goes to `vcpu` (of `part`), loaded here: false when
/// it is disabled in its vGIC, and nothing was given.
fn give_timer(part: &Partition, vcpu: &Vcpu, intid: u32) -> bool {
    let Some(priority) = part.gic.lock().fire(vcpu.index, intid) else { return false };
    let virq = Virq { intid, priority, hw: true };
    if !list_now(vcpu, virq) {
        queue(vcpu, virq);
    }
    true
}

/// The vCPU just loaded on this pCPU has a timer already due (it waited
/// for it, typically, and that is why it runs now): the timer goes to it
/// at once, linked to its physical PPI made active, rather than through
/// one more exit when the PPI fires as soon as the guest runs. A
/// direct-delivery core's guest takes its timer from the GIC itself.
pub fn give_due_timers(sys: &System, me: &PerCpu, vcpu: &Vcpu, listed_timers: u32) {
    if me.direct || !(timer::virtual_timer_asserted() || timer::physical_timer_asserted()) {
        return;
    }
    for intid in TIMER_INTIDS {
        // One the guest is still handling is linked again, not given twice.
        if !loaded_timer_asserted(intid) || listed_timers & (1 << intid) != 0 {
            continue;
        }
        // Disabled in its vGIC: left to fire, as `forward_timer` masks it.
        let Some(priority) = sys.partition_of(vcpu).gic.lock().fire(vcpu.index, intid) else { continue };
        Gic::activate_private(intid);
        let virq = Virq { intid, priority, hw: true };
        if !list_now(vcpu, virq) {
            queue(vcpu, virq);
        }
    }
}

/// A passthrough SPI goes to the vCPU its owner routes it to. Disabled
/// there, nothing is latched: the physical SPI is disabled too (under the
/// partition's distributor lock, so a concurrent enable by the guest comes
/// after and wins) and deactivated, and its line, if it is still asserted
/// when the guest enables it, fires again.
fn forward_spi(sys: &System, intid: u32) {
    let Some((p, index)) = spi_owner(sys, intid) else {
        Gic::deactivate(intid);
        return;
    };
    let part = &sys.partitions[p];
    let fired = {
        let mut gic = part.gic.lock();
        let fired = gic.fire(index, intid);
        if fired.is_none() {
            Gic::enable_spi(intid, false);
        }
        fired
    };
    match (fired, part.vcpus.get(index)) {
        (Some(priority), Some(vcpu)) => queue(vcpu, Virq { intid, priority, hw: true }),
        _ => Gic::deactivate(intid),
    }
}

/// The running guest's timer fired while its virtual interrupt is disabled
/// (it polls CNTx_CTL, say): nothing is latched, as the interrupt is
/// level-triggered, and the physical PPI is masked on this pCPU so it does
/// not fire again and again. It is unmasked when the guest enables the
/// virtual one, firing again only if the line is still asserted, or when
/// another vCPU comes onto the pCPU.
fn mask_timer(me: &PerCpu, intid: u32) {
    Gic::enable_private(intid, me.index, false);
    Gic::deactivate(intid);
    me.timers_masked.fetch_or(1 << intid, Ordering::Relaxed);
}

/// Unmasks a timer PPI of this pCPU if [`mask_timer`] masked it.
fn unmask_timer(me: &PerCpu, intid: u32) {
    if me.timers_masked.fetch_and(!(1 << intid), Ordering::Relaxed) & (1 << intid) != 0 {
        Gic::enable_private(intid, me.index, true);
    }
}

/// Unmasks both timer PPIs of this pCPU, for the vCPU coming onto it.
pub fn unmask_timers(me: &PerCpu) {
    if me.timers_masked.load(Ordering::Relaxed) == 0 {
        return;
    }
    for intid in TIMER_INTIDS {
        unmask_timer(me, intid);
    }
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
    let taken = !free & ((1 << count) - 1);
    if free == 0 || bits(taken).any(|n| Lr(Lrs::read(n)).intid() == virq.intid) {
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
/// (one of its timers) is active on this pCPU, which the next vCPU shares.
/// Deactivate it; a still-pending entry is dropped (the timer fires again
/// when the vCPU is back), an active one stays as a purely virtual entry.
pub fn release_private_hw(vgic: &mut VgicContext) {
    let mut left = vgic.listed;
    while left != 0 {
        let n = left.trailing_zeros() as usize;
        left &= left - 1;
        let value = &mut vgic.lrs[n];
        let entry = Lr(*value);
        if entry.is_free() || !entry.hw() || entry.intid() >= PRIVATE {
            continue;
        }
        Gic::deactivate(entry.intid());
        *value = match entry.state() {
            State::Pending => 0,
            _ => entry.unlinked().0,
        };
    }
}

/// When a vCPU comes back onto a pCPU: a timer it was handling when it left
/// (its entry active, unlinked by [`release_private_hw`]) is linked to the
/// physical PPI again, made active. Natively the interrupt stays active
/// until the guest completes it, so its line, still asserted until the
/// handler clears the timer, does not signal it again; unlinked, the PPI
/// would fire at once and be delivered a second time after the guest's
/// completion, when the handler had already cleared its timer. Returns the
/// timers listed, bit INTID each, which [`give_due_timers`] leaves alone.
pub fn relink_private_hw(vgic: &mut VgicContext) -> u32 {
    let mut listed_timers = 0;
    let mut left = vgic.listed;
    while left != 0 {
        let n = left.trailing_zeros() as usize;
        left &= left - 1;
        let entry = Lr(vgic.lrs[n]);
        if !is_timer(entry.intid()) || entry.is_free() {
            continue;
        }
        listed_timers |= 1 << entry.intid();
        if entry.state() == State::Active && !entry.hw() {
            Gic::activate_private(entry.intid());
            vgic.lrs[n] = entry.linked().0;
        }
    }
    listed_timers
}

/// The same for a HW-linked private interrupt still waiting in the leaving
/// vCPU's queue (no list register was free when it fired): its physical
/// interrupt is active too, and would stay so until that vCPU comes back
/// and completes it, silencing the timer of every other vCPU here. It is
/// dropped and deactivated; the timer fires again when the vCPU is back.
pub fn release_queued_private_hw(vcpu: &Vcpu) {
    if !vcpu.has_queued() {
        return;
    }
    let mut queue = vcpu.queue.lock();
    queue.retain(|virq| {
        let private_hw = virq.hw && virq.intid < PRIVATE;
        if private_hw {
            Gic::deactivate(virq.intid);
        }
        !private_hw
    });
    vcpu.set_queued(!queue.is_empty());
}

/// ICC_SGI1R_EL1 from `sender`: SGIs to vCPUs of the same partition. A
/// direct partition's go to the physical GIC, each to the core its target
/// owns, and are taken there without an exit.
pub fn generate_sgi(part: &Partition, sender: usize, value: u64) {
    let (intid, targets) = sgi_targets(value, part.vcpus.len(), sender);
    let direct = part.direct();
    for index in (0..part.vcpus.len()).filter(|i| targets & (1 << i) != 0) {
        if direct {
            Gic::send_direct_sgi(intid, part.vcpus[index].home);
            continue;
        }
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
    /// A GICv2 distributor, whose SGIs and PPIs are banked per vCPU.
    DistributorV2(u64),
    Redistributor(u64),
}

/// The GIC frame a guest-physical address names, for this partition. A
/// GICv2 board has no redistributors: its guests' CPU interface is the
/// physical GICV, mapped in stage 2, and never traps.
pub fn frame(sys: &System, part: &Partition, ipa: u64) -> Option<Frame> {
    use partita_core::vgic::regs::{GICD_SIZE, GICR_FRAME};
    let platform = &sys.platform;
    let gicd = ipa.wrapping_sub(platform.gicd.base);
    let gicr = ipa.wrapping_sub(platform.gicr.base);
    if gicd < GICD_SIZE {
        Some(if platform.gicv2() { Frame::DistributorV2(gicd) } else { Frame::Distributor(gicd) })
    } else if platform.gicv2() {
        None
    } else if gicr < GICR_FRAME * part.vcpus.len() as u64 {
        Some(Frame::Redistributor(gicr))
    } else {
        None
    }
}

/// A trapped access by `vcpu` to the emulated distributor or a
/// redistributor.
pub fn mmio(me: &PerCpu, part: &Partition, vcpu: usize, frame: Frame, size: u8, value: Option<u64>) -> u64 {
    let mut effects: heapless::Vec<Effect, MAX_EFFECTS> = heapless::Vec::new();
    let line = |vcpu, intid| line_asserted(me, part, vcpu, intid);
    let result = {
        let mut gic = part.gic.lock();
        let mut sink = |effect| {
            let _ = effects.push(effect);
        };
        match frame {
            Frame::Distributor(offset) => gic.distributor(Access { offset, size, value }, &mut sink, &line),
            Frame::DistributorV2(offset) => gic.distributor_v2(vcpu, Access { offset, size, value }, &mut sink, &line),
            Frame::Redistributor(offset) => gic.redistributor(Access { offset, size, value }, &mut sink, &line),
        }
    };
    // By reference: moving the vector into an iterator copied all its
    // room, about 900 instructions for an access with one effect.
    for &effect in &effects {
        apply(me, part, effect);
    }
    result
}

/// Whether the physical line behind a partition's interrupt is asserted:
/// a passthrough SPI's pending state in the physical distributor, or the
/// condition of one of `vcpu`'s timers. That is read live for the vCPU
/// loaded here, else from its saved context (a vCPU running on another
/// pCPU may have moved its timer since it was last saved).
fn line_asserted(me: &PerCpu, part: &Partition, vcpu: usize, intid: u32) -> bool {
    if intid >= SPI_BASE {
        return Gic::spi_pending(intid);
    }
    let Some(&target) = part.vcpus.get(vcpu) else { return false };
    if me.current_vcpu().is_some_and(|running| core::ptr::eq(running, target)) {
        return loaded_timer_asserted(intid);
    }
    let ctx = target.context.lock();
    let (ctl, cval) = if intid == VTIMER_INTID {
        (ctx.el1.cntv_ctl, ctx.el1.cntv_cval)
    } else {
        (ctx.el1.cntp_ctl, ctx.el1.cntp_cval)
    };
    timer_asserted(ctl, cval, timer::counter())
}

fn apply(me: &PerCpu, part: &Partition, effect: Effect) {
    match effect {
        Effect::Denied { intid } => {
            if part.denied_reports.fetch_add(1, Ordering::Relaxed) < DENIED_REPORTS {
                console::pieces()
                    .text("partition ")
                    .text(part.name())
                    .text(" wrote to interrupt ")
                    .decimal(u64::from(intid))
                    .text(", which it does not own: ignored")
                    .end();
            }
            trace::record(Kind::Health, 0xff, 0xff, intid);
        }
        // A direct partition's SGI pended through its redistributor.
        Effect::Pend { vcpu, intid, .. } if part.direct() => {
            if let Some(target) = part.vcpus.get(vcpu) {
                Gic::send_direct_sgi(intid, target.home);
            }
        }
        Effect::PrivateEnable { vcpu, mask, enabled } if part.direct() => {
            if let Some(target) = part.vcpus.get(vcpu) {
                Gic::set_direct_enables(target.home, mask, enabled);
            }
        }
        Effect::PrivatePriority { vcpu, intid, priority } if part.direct() => {
            if let Some(target) = part.vcpus.get(vcpu) {
                Gic::set_direct_priority(intid, target.home, priority);
            }
        }
        Effect::PrivateEnable { .. } | Effect::PrivatePriority { .. } => {}
        Effect::Pend { vcpu, intid, priority } => {
            if let Some(target) = part.vcpus.get(vcpu) {
                queue(target, Virq { intid, priority, hw: false });
            }
        }
        // Only a software pending state: a HW entry stands for a physical
        // interrupt that stays active until the guest completes it.
        Effect::Unpend { vcpu, first, mask } => {
            if let Some(target) = part.vcpus.get(vcpu) {
                let named = |intid: u32| intid.wrapping_sub(first) < 32 && mask >> (intid - first) & 1 != 0;
                target.queue.lock().retain(|virq| virq.hw || !named(virq.intid));
            }
        }
        // The distributor names only passthrough SPIs here: a doorbell's or
        // a signal's physical namesake stays untouched.
        Effect::SpiEnable { first, mask, enabled } => Gic::enable_spis(first, mask, enabled),
        Effect::SpiPending { first, mask, pending } => Gic::set_spis_pending(first, mask, pending),
        Effect::TimerEnabled { vcpu, intid } => {
            // Only the vCPU loaded here has its timer PPIs on this pCPU.
            let running = me.current_vcpu();
            if running.is_some_and(|v| part.vcpus.get(vcpu).is_some_and(|&target| core::ptr::eq(target, v))) {
                unmask_timer(me, intid);
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
