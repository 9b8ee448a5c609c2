//! The virtual device manager (Ker-ONE section 4.4.2), carrying out what
//! `partita_core::fabric::manager` decides, and the programmable logic it
//! drives ([`emulated`] on a board without any).
//!
//! The manager runs in EL2 wherever its event arises: a guest's write to an
//! unconnected interface page is handled in that vCPU's own trap, and an
//! event of the logic (a download done, an accelerator stopped, a
//! computation started or over, a hold expired) on the fabric's pCPU, as
//! the logic's interrupt would be. Ker-ONE runs it in a service VM, which
//! costs a VM switch per request; Path 1 (an idle PRR with the right
//! accelerator) must cost at most twice a null hypercall, about 500
//! instructions here, while a partition switch alone costs about 2,100.
//!
//! Each virtual device's interface page is Partita's memory, mapped into
//! its partition read-only while the device is not connected and
//! read-write while it is. A write to it while unconnected stalls the vCPU
//! at that instruction (it takes its interrupts meanwhile) until the device
//! is connected; the write then runs again and goes through.

pub mod emulated;

use crate::partition::{Partition, Vcpu};
use crate::state::System;
use crate::trap::exit::Exit;
use crate::vgic;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use emulated::Emulated;
use partita_arch::guest_memory;
use partita_arch::platform::{Gic, InterruptController};
use partita_core::config::model;
use partita_core::fabric::interface::{reg, stat, PAGE_SIZE};
use partita_core::fabric::manager::{Action, Event, Manager, Signal};
use partita_core::fabric::monitor::{Client, Compatible, Request};
use spin::Mutex;

/// Requests that may wait for a PRR at once: every virtual device of the
/// largest configuration.
const WAITING: usize = 256;

/// A partition's virtual device as the hypervisor keeps it.
pub struct Device {
    pub partition: usize,
    /// Its index among its partition's devices (the monitor's `device`).
    pub index: usize,
    pub accelerator: usize,
    pub ipa: u64,
    /// Host-physical addresses of its interface page and saved context.
    pub page: u64,
    pub context: u64,
    pub signals: [u32; 3],
    /// Its vCPUs stalled on a write to the unconnected page, one bit each.
    stalled: AtomicU64,
    connected: AtomicBool,
}

/// The fabric: the manager's decisions, the devices, the logic.
pub struct Fabric {
    pub config: model::Fabric,
    manager: Mutex<Manager<WAITING>>,
    pub devices: Vec<Device>,
    /// Where each partition's devices start in `devices`.
    first: Vec<usize>,
    pub logic: Emulated,
}

impl Fabric {
    /// The fabric of `system`, if it has one, every device unconnected.
    pub fn build(system: &model::System) -> Option<Fabric> {
        let config = system.fabric.clone()?;
        let count: usize = system.partitions.iter().map(|p| p.accelerators.len()).sum();
        let mut devices = Vec::with_capacity(count);
        let mut first = Vec::with_capacity(system.partitions.len());
        for (p, partition) in system.partitions.iter().enumerate() {
            first.push(devices.len());
            for (index, device) in partition.accelerators.iter().enumerate() {
                let g = devices.len();
                devices.push(Device {
                    partition: p,
                    index,
                    accelerator: device.accelerator,
                    ipa: device.ipa,
                    page: config.page_of(g),
                    context: config.context_of(g, count),
                    signals: device.signals,
                    stalled: AtomicU64::new(0),
                    connected: AtomicBool::new(false),
                });
            }
        }
        let sizes: Vec<u32> = config.prrs.iter().map(|prr| prr.size).collect();
        let compatible: Vec<Compatible> = (0..config.accelerators.len())
            .map(|a| {
                config.prrs.iter().enumerate().filter(|(_, prr)| prr.hosts.contains(&a)).fold(0, |m, (r, _)| m | 1 << r)
            })
            .collect();
        let manager = Manager::new(&sizes, &compatible).expect("validated fabric sizes");
        let logic = Emulated::new(&config);
        Some(Fabric { config, manager: Mutex::new(manager), devices, first, logic })
    }

    /// The interface pages of partition `p`: (guest-physical, host-physical).
    pub fn interfaces(&self, p: usize) -> Vec<(u64, u64)> {
        self.of_partition(p).map(|d| (d.ipa, d.page)).collect()
    }

    /// The signals of partition `p`'s devices.
    pub fn signals(&self, p: usize) -> Vec<u32> {
        self.of_partition(p).flat_map(|d| d.signals).collect()
    }

    fn of_partition(&self, p: usize) -> impl Iterator<Item = &Device> {
        self.devices.iter().filter(move |d| d.partition == p)
    }

    fn device(&self, client: Client) -> &Device {
        &self.devices[self.first[client.partition] + client.device]
    }

    /// Index in `devices` of `client`'s device.
    fn global(&self, client: Client) -> usize {
        self.first[client.partition] + client.device
    }

    /// Hands `event` to the manager and carries out what it decides. An
    /// event that crossed a decision (a stop reported after the partition
    /// was released, say) changes nothing.
    pub fn handle(&self, sys: &System, event: Event) {
        let mut manager = self.manager.lock();
        let _ = manager.handle(event, &mut |action| self.carry_out(sys, action));
    }

    fn carry_out(&self, sys: &System, action: Action) {
        match action {
            Action::Disconnect { client, prr } => {
                let device = self.device(client);
                let saved = self.logic.disconnect(prr);
                if let Some(context) = &saved {
                    guest_memory::write(device.context, context);
                }
                device.connected.store(false, Ordering::SeqCst);
                let preempted = if saved.is_some() { stat::PREEMPTED } else { 0 };
                device.update_stat(preempted, stat::CONNECTED | stat::BUSY);
                sys.partitions[client.partition].set_interface_writable(device.ipa, false);
            }
            Action::Stop { prr } => self.logic.stop(prr),
            Action::Reconfigure { prr, accelerator } => self.logic.reconfigure(prr, accelerator),
            Action::Connect { client, prr } => {
                let device = self.device(client);
                let resume = device.stat() & stat::PREEMPTED != 0;
                let context = resume.then(|| {
                    let mut context = [0; partita_core::fabric::interface::CONTEXT_SIZE];
                    guest_memory::read(device.context, &mut context);
                    context
                });
                self.logic.connect(prr, self.global(client), context);
                sys.partitions[client.partition].set_interface_writable(device.ipa, true);
                device.update_stat(stat::CONNECTED, stat::WAITING | stat::PREEMPTED);
                device.connected.store(true, Ordering::SeqCst);
                device.release_stalled(&sys.partitions[client.partition]);
            }
            Action::Signal { client, signal } => {
                let device = self.device(client);
                if signal == Signal::Wait {
                    device.update_stat(stat::WAITING, 0);
                }
                let intid = device.signals[signal as usize];
                vgic::inject(&sys.partitions[client.partition], 0, intid, false);
            }
        }
    }

    /// A stage-2 write fault at `ipa` of `vcpu`: `None` unless `ipa` is one
    /// of its partition's interface pages. The write is the request for a
    /// PRR: it runs again once the device is connected, at once on Path 1.
    pub fn write_fault(&self, sys: &System, part: &Partition, vcpu: &Vcpu, ipa: u64) -> Option<Exit> {
        let p = vcpu.partition;
        let device = self.of_partition(p).find(|d| ipa.wrapping_sub(d.ipa) < PAGE_SIZE)?;
        if !device.connected.load(Ordering::SeqCst) {
            // Stalled before asking, so a connection from the fabric's pCPU
            // in between is never missed.
            device.stalled.fetch_or(1 << vcpu.index, Ordering::SeqCst);
            vcpu.set_waiting(true);
            let client = Client { partition: p, device: device.index, priority: part.rank };
            self.handle(sys, Event::Request(Request { client, accelerator: device.accelerator }));
            if !device.connected.load(Ordering::SeqCst) {
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

    /// Partition `p` restarted or halted: it holds and waits for nothing,
    /// its interface pages read as after boot.
    pub fn release(&self, sys: &System, p: usize) {
        self.handle(sys, Event::Released { partition: p });
        for device in self.of_partition(p) {
            device.stalled.store(0, Ordering::SeqCst);
            guest_memory::write(device.page, &[0; partita_core::fabric::interface::REGISTERS_SIZE]);
        }
    }
}

impl Device {
    pub fn stat(&self) -> u32 {
        self.read_u32(reg::STAT)
    }

    /// Sets then clears bits of STAT. Only Partita writes STAT, and only
    /// under the manager's lock or the logic's, one device at a time.
    pub fn update_stat(&self, set: u32, clear: u32) {
        let value = (self.stat() | set) & !clear;
        self.write_u32(reg::STAT, value);
    }

    pub fn read_u32(&self, offset: u64) -> u32 {
        let mut bytes = [0; 4];
        guest_memory::read(self.page + offset, &mut bytes);
        u32::from_le_bytes(bytes)
    }

    pub fn write_u32(&self, offset: u64, value: u32) {
        guest_memory::write(self.page + offset, &value.to_le_bytes());
    }

    /// Every vCPU stalled on the page goes on, replaying its write.
    fn release_stalled(&self, part: &Partition) {
        let mut stalled = self.stalled.swap(0, Ordering::SeqCst);
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
}
