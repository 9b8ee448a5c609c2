//! What the manager decides, carried out: remapping interface pages,
//! saving and restoring contexts through the logic, signalling guests;
//! and the ways events reach it from partitions: a write fault on an
//! unconnected page, a partition's restart, the guest-aware calls.

use super::emulated::start_pending;
use super::{client_index, Device, Fabric, LATE_START_WATCHED, WAITING};
use crate::partition::{Partition, Vcpu};
use crate::scheduler;
use crate::state::System;
use crate::trace;
use crate::trap::exit::Exit;
use crate::vgic;
use core::sync::atomic::Ordering;
use partita_arch::guest_memory;
use partita_arch::platform::{Gic, InterruptController};
use partita_arch::timer;
use partita_core::fabric::interface::{reg, stat, PAGE_SIZE, REGISTERS_SIZE};
use partita_core::fabric::manager::{Action, Event, Manager, Path, Signal};
use partita_core::fabric::monitor::{Client, MAX_PRRS};
use partita_core::trace::{accel_connect_arg, AccelStep, Kind};

impl Fabric {
    /// Hands `event` to the manager and carries out what it decides. An
    /// event that crossed a decision (a stop reported after the partition
    /// was released, say) changes nothing.
    pub fn handle(&self, sys: &System, event: Event) {
        partita_arch::residency::note(partita_core::residency::path::ACCEL_MANAGER);
        self.handle_locked(sys, &mut self.manager.lock(), event);
    }

    /// [`Fabric::handle`] with the manager's lock held.
    fn handle_locked(&self, sys: &System, manager: &mut Manager<WAITING>, event: Event) {
        let mut again = heapless::Vec::<Client, MAX_PRRS>::new();
        let mut decided = false;
        let _ = manager.handle(event, &mut |action| {
            if !core::mem::replace(&mut decided, true) {
                step(AccelStep::Decided, usize::MAX, usize::MAX);
            }
            self.carry_out(sys, action, &mut again);
        });
        match event {
            // Its pages are cleared: nothing of it asks again.
            Event::Released { partition } => again.retain(|c| c.partition != partition),
            Event::Withdrawn { client } => {
                again.retain(|c| !c.same_device(client));
                // Under the lock, so a request made since by another vCPU
                // of the partition is not undone.
                self.withdrawn(sys, self.device(client));
            }
            _ => {}
        }
        // A client taken off an idle PRR just after it wrote START, before
        // the logic took it, has work all the same: it asks again, and its
        // START is taken once it is connected. (One already waiting is the
        // same request and changes nothing.)
        while let Some(client) = again.pop() {
            let request = self.device(client).unfinished_request();
            let _ = manager.handle(Event::Request(request), &mut |action| self.carry_out(sys, action, &mut again));
        }
    }

    fn carry_out(&self, sys: &System, action: Action, again: &mut heapless::Vec<Client, MAX_PRRS>) {
        match action {
            Action::Disconnect { client, prr } => {
                let device = self.device(client);
                let saved = self.logic.disconnect(prr, |context| guest_memory::write(device.context, context));
                // Work not saved may still be a START the logic has not
                // taken: seen now, it asks again; else it is watched for.
                let start_seen = !saved && start_pending(device);
                if start_seen {
                    // At most one disconnection per PRR per event.
                    let _ = again.push(client);
                }
                device.connected.store(false, Ordering::SeqCst);
                if saved {
                    // Its work waits from now until it is connected again.
                    device.asked.store(timer::counter(), Ordering::SeqCst);
                }
                let preempted = if saved { stat::PREEMPTED } else { 0 };
                device.update_stat(preempted, stat::CONNECTED | stat::BUSY);
                let part = &sys.partitions[device.partition];
                part.set_interface_writable(device.index, false);
                if !saved && !start_seen {
                    let generation = u64::from(part.tlb_generation());
                    device.late_start.store(LATE_START_WATCHED | generation, Ordering::Release);
                }
                step(AccelStep::Disconnected, client.partition.into(), client.device.into());
            }
            Action::Stop { prr } => {
                self.stop(prr);
                step(AccelStep::StopAsked, usize::MAX, prr);
            }
            Action::Reconfigure { prr, accelerator } => {
                self.reconfigure(prr, accelerator.into());
                step(AccelStep::ReconfigStarted, usize::MAX, prr);
            }
            Action::Connect { client, prr, path } => {
                self.connect(sys, self.device(client), prr, path, None, trace::enabled())
            }
            Action::Signal { client, signal } => {
                let device = self.device(client);
                if signal == Signal::Wait {
                    device.update_stat(stat::WAITING, 0);
                }
                let intid = device.signals[signal as usize];
                vgic::inject(&sys.partitions[usize::from(client.partition)], 0, intid, false);
                step(AccelStep::Signalled, client.partition.into(), client.device.into());
            }
        }
    }

    /// Connects `client`'s device to `prr`, restoring its saved work if it
    /// was preempted: its page becomes writable, its stalled vCPUs go on.
    /// `asked`: when the request was made, if the caller timed it rather
    /// than [`note_request`]. `traced`: tracing is on, asked once for
    /// the whole connection. Inlined into Path 1's trap, whose every
    /// instruction counts.
    #[inline(always)]
    fn connect(&self, sys: &System, device: &Device, prr: usize, path: Path, asked: Option<u64>, traced: bool) {
        let client = device.client();
        let part = &sys.partitions[device.partition];
        let now = self.measure(device, path, asked, traced);
        let resume = device.stat() & stat::PREEMPTED != 0;
        self.logic.connect(prr, device.global, resume.then_some(device.context), now);
        part.set_interface_writable(device.index, true);
        device.update_stat(stat::CONNECTED, stat::WAITING | stat::PREEMPTED);
        device.connected.store(true, Ordering::SeqCst);
        release_stalled(device, part);
        if traced {
            step(AccelStep::Connected, client.partition.into(), client.device.into());
        }
    }

    /// Finds the STARTs a guest wrote after its device's disconnection
    /// had looked for one: a vCPU running on another pCPU may still write
    /// the page through the writable entry its TLB caches, until its pCPU
    /// takes the kick that drops it. Once no pCPU can, a START found in
    /// the page of a device still unconnected asks again, as one seen at
    /// the disconnection does. The fabric's pCPU calls this every turn;
    /// waiting for the kicked pCPUs at the disconnection instead could
    /// deadlock against one spinning on the manager's lock.
    pub fn catch_late_starts(&self, sys: &System) {
        for device in &self.devices {
            let watched = device.late_start.load(Ordering::Acquire);
            if watched == 0 || !scheduler::tlb_dropped_everywhere(sys, device.partition, watched as u32) {
                continue;
            }
            let mut manager = self.manager.lock();
            // Under the lock: a disconnection since watches anew, and a
            // connection since takes the START itself.
            if device.late_start.compare_exchange(watched, 0, Ordering::SeqCst, Ordering::SeqCst).is_err()
                || device.connected.load(Ordering::SeqCst)
                || !start_pending(device)
            {
                continue;
            }
            self.late_starts.fetch_add(1, Ordering::Relaxed);
            note_request(device, timer::counter());
            let request = device.unfinished_request();
            self.handle_locked(sys, &mut manager, Event::Request(request));
        }
    }

    /// Counts `device`'s connection by `path`, timed from its request
    /// (`asked`, else the one [`note_request`] noted): the counter now.
    fn measure(&self, device: &Device, path: Path, asked: Option<u64>, traced: bool) -> u64 {
        let client = device.client();
        let now = timer::counter();
        // A connection answers whatever request was noted, even when the
        // caller timed its own.
        let noted = device.asked.swap(0, Ordering::SeqCst);
        let asked = asked.unwrap_or(noted);
        let ticks = if asked == 0 { 0 } else { now.saturating_sub(asked) };
        self.count(path, ticks);
        if traced {
            let (partition, device) = (client.partition.into(), client.device.into());
            trace::record_at(now, Kind::AccelConnect, partition, device, accel_connect_arg(path as usize, ticks));
        }
        now
    }

    /// A stage-2 write fault at `ipa` of `vcpu`: `None` unless `ipa` is one
    /// of its partition's interface pages. The write is the request for a
    /// PRR: it runs again once the device is connected, at once on Path 1.
    pub fn write_fault(&self, sys: &System, vcpu: &Vcpu, ipa: u64) -> Option<Exit> {
        let device = self.interface_at(vcpu.partition, ipa)?;
        if !self.connected_now(sys, device) {
            // Stalled before asking, so a connection from the fabric's pCPU
            // in between is never missed.
            device.stalled.fetch_or(1 << vcpu.index, Ordering::SeqCst);
            vcpu.set_waiting(true);
            if !self.ask(sys, device) {
                return Some(Exit::Wait);
            }
            device.stalled.fetch_and(!(1 << vcpu.index), Ordering::SeqCst);
            vcpu.set_waiting(false);
        }
        // Connected: the fault came from a permission this pCPU still
        // caches.
        partita_arch::cache::invalidate_guest_tlb_local();
        Some(Exit::Resume)
    }

    /// The fast path's share of [`Fabric::write_fault`]: true when `ipa` is
    /// one of `partition`'s interface pages and its device is connected on
    /// return, by Path 1 if need be, so the write runs again at once. False
    /// leaves the fault to `write_fault`, which asks again: a request that
    /// Path 1 could not serve keeps the time it was first noted.
    pub fn connect_in_trap(&self, sys: &System, partition: usize, ipa: u64) -> bool {
        let Some(device) = self.interface_at(partition, ipa) else { return false };
        if !self.connected_now(sys, device) {
            return false;
        }
        partita_arch::cache::invalidate_guest_tlb_local();
        true
    }

    /// True when `device` is connected, already or by Path 1 just now.
    fn connected_now(&self, sys: &System, device: &Device) -> bool {
        device.connected.load(Ordering::SeqCst) || self.connect_at_once(sys, device)
    }

    /// The device of `partition` whose interface page holds `ipa`.
    fn interface_at(&self, partition: usize, ipa: u64) -> Option<&Device> {
        self.of_partition(partition).find(|d| ipa.wrapping_sub(d.ipa) < PAGE_SIZE)
    }

    /// The guest-aware request of `vcpu` for its partition's device
    /// `index`: `None` if it has no such device, else whether the device
    /// is connected on return. Nothing stalls; READY follows a wait.
    pub fn request(&self, sys: &System, vcpu: &Vcpu, index: u64) -> Option<bool> {
        let device = self.of_partition(vcpu.partition).nth(usize::try_from(index).ok()?)?;
        let connected = device.connected.load(Ordering::SeqCst);
        Some(connected || self.connect_at_once(sys, device) || self.ask(sys, device))
    }

    /// Serves `device`'s request by Path 1 in the requester's trap, without
    /// the general path's machinery (`Manager::assign_at_once`): whether
    /// `device` is connected on return. Otherwise the request is noted, for
    /// [`Fabric::ask`]. Path 1 times its request itself.
    fn connect_at_once(&self, sys: &System, device: &Device) -> bool {
        let asked = timer::counter();
        let mut manager = self.manager.lock();
        // The fabric's pCPU may have connected it while this pCPU waited
        // for the lock.
        if device.connected.load(Ordering::SeqCst) {
            return true;
        }
        let Some(prr) = manager.assign_at_once(device.request) else {
            // Noted under the lock, so the connection that answers it comes
            // after and takes it: noted after that connection, it would
            // time the next one from now.
            note_request(device, asked);
            return false;
        };
        let traced = trace::enabled();
        if traced {
            // Nothing traced since `asked`: the trace stays in time order.
            trace_request(device, asked);
            step(AccelStep::Decided, usize::MAX, usize::MAX);
        }
        self.connect(sys, device, prr, Path::Assign, Some(asked), traced);
        true
    }

    /// Hands `device`'s request, noted by [`Fabric::connect_at_once`], to
    /// the manager's general path: whether it is connected on return.
    fn ask(&self, sys: &System, device: &Device) -> bool {
        self.handle(sys, Event::Request(device.request));
        device.connected.load(Ordering::SeqCst)
    }

    /// The guest-aware release of `vcpu`'s partition's device `index`:
    /// `None` if it has no such device. On return the device holds and
    /// waits for nothing and its accelerator writes nothing more.
    pub fn withdraw(&self, sys: &System, vcpu: &Vcpu, index: u64) -> Option<()> {
        let device = self.of_partition(vcpu.partition).nth(usize::try_from(index).ok()?)?;
        let client = device.client();
        self.handle(sys, Event::Withdrawn { client });
        Some(())
    }

    /// `device` was given up: its page tells of no request, connection or
    /// saved work, and a START not taken yet is withdrawn too, so the next
    /// connection starts nothing the guest did not write again. RESULT,
    /// OVER and the error bits keep what the last job left.
    fn withdrawn(&self, sys: &System, device: &Device) {
        let part = &sys.partitions[device.partition];
        device.connected.store(false, Ordering::SeqCst);
        device.asked.store(0, Ordering::SeqCst);
        device.write_u8(reg::START, 0);
        device.update_stat(0, stat::CONNECTED | stat::BUSY | stat::WAITING | stat::PREEMPTED);
        part.set_interface_writable(device.index, false);
        // A vCPU stalled on the page replays its write: a fresh request.
        release_stalled(device, part);
    }

    /// Partition `p` restarted or halted: it holds and waits for nothing,
    /// its interface pages read as after boot.
    pub fn release(&self, sys: &System, p: usize) {
        self.handle(sys, Event::Released { partition: client_index(p) });
        for device in self.of_partition(p) {
            device.stalled.store(0, Ordering::SeqCst);
            device.asked.store(0, Ordering::SeqCst);
            device.page.zero(0, REGISTERS_SIZE);
        }
    }
}

/// Marks the end of a step of the manager's work in the trace, for the
/// atomic costs `partita bench accel` reads: a client's step names its
/// partition and device, a PRR's step its PRR (as the device).
fn step(step: AccelStep, partition: usize, device: usize) {
    trace::record(Kind::AccelStep, partition, device, step.arg(0));
}

/// `device` asked for a PRR at `now`: timed from then unless it asked
/// before.
fn note_request(device: &Device, now: u64) {
    if device.asked.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
        trace_request(device, now);
    }
}

fn trace_request(device: &Device, at: u64) {
    trace::record_at(at, Kind::AccelRequest, device.partition, device.index, device.accelerator as u32);
}

/// Every vCPU stalled on `device`'s page goes on, replaying its write.
/// Usually none is (Path 1's requester replays its write by returning):
/// that is one load, in line.
#[inline(always)]
fn release_stalled(device: &Device, part: &Partition) {
    if device.stalled.load(Ordering::SeqCst) != 0 {
        release_each_stalled(device, part);
    }
}

#[inline(never)]
fn release_each_stalled(device: &Device, part: &Partition) {
    let mut stalled = device.stalled.swap(0, Ordering::SeqCst);
    while stalled != 0 {
        let index = stalled.trailing_zeros() as usize;
        stalled &= stalled - 1;
        if let Some(vcpu) = part.vcpus.get(index) {
            vcpu.set_waiting(false);
            if vcpu.pcpu() != partita_arch::cpu::index() {
                Gic::kick(vcpu.pcpu());
            }
        }
    }
}
