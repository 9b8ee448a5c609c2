//! The virtual device manager (Ker-ONE section 4.4.2), carrying out what
//! `partita_core::fabric::manager` decides, and the programmable logic it
//! drives ([`emulated`] on a board without any).
//!
//! The manager runs in EL2 wherever its event arises: a guest's write to an
//! unconnected interface page is handled in that vCPU's own trap, and an
//! event of the logic (a download done, an accelerator stopped, a
//! computation started or over, a hold expired) on the fabric's pCPU, as
//! the logic's interrupt would be ([`run`]). Ker-ONE runs it in a service VM, which
//! costs a VM switch per request; Path 1 (an idle PRR with the right
//! accelerator) is meant to cost about two null hypercalls, while a
//! partition switch alone costs several times that.
//! Path 1 itself takes the manager's shortcut (`Manager::assign_at_once`,
//! which reads an index of the PRRs rather than every descriptor) in the
//! requester's trap: one search, the PRR put in Hold, the page made
//! writable, the logic told through a per-PRR register rather than under
//! its lock, about 310 instructions from the write to its return. To keep
//! it there, its request is timed without the device's shared `asked`
//! (nothing waits when it is taken), the access of the fault is decoded
//! only for other pages, tracing is asked about once, and the statistics
//! are plain stores under the manager's lock.
//!
//! Each virtual device's interface page is Partita's memory, mapped into
//! its partition read-only while the device is not connected and
//! read-write while it is. A write to it while unconnected stalls the vCPU
//! at that instruction (it takes its interrupts meanwhile) until the device
//! is connected; the write then runs again and goes through.

pub mod emulated;
pub mod manager;
mod pl;
pub mod run;

use crate::console::log;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use emulated::Emulated;
use partita_arch::uncached::UncachedPage;
use partita_core::config::model;
use partita_core::fabric::interface::reg;
use partita_core::fabric::manager::{Manager, Path};
use partita_core::fabric::monitor::{Client, Compatible, Request};
use partita_core::time::ticks_to_us;
// Fair: the fabric's pCPU takes the logic's lock again and again, and an
// unfair lock could keep a requesting vCPU spinning for as long.
use partita_arch::sync::TicketMutex as Mutex;

/// Requests that may wait for a PRR at once: every virtual device of the
/// largest configuration.
const WAITING: usize = 256;

/// A partition's virtual device as the hypervisor keeps it.
pub struct Device {
    pub partition: usize,
    /// Its index among its partition's devices (the monitor's `device`).
    pub index: usize,
    pub accelerator: usize,
    /// Its index in [`Fabric::devices`].
    pub global: usize,
    /// Its request for a PRR as the manager names it: the device, at its
    /// partition's priority, and its accelerator. Made once, for Path 1
    /// builds it in the requester's trap.
    pub request: Request,
    pub ipa: u64,
    /// Its interface page, and the host-physical address of its saved
    /// context.
    pub page: UncachedPage,
    pub context: u64,
    pub signals: [u32; 3],
    /// Its vCPUs stalled on a write to the unconnected page, one bit each.
    stalled: AtomicU64,
    connected: AtomicBool,
    /// When its pending request was made (or its work preempted), in
    /// counter ticks; 0 while nothing is pending.
    asked: AtomicU64,
    /// Disconnected with no START seen, while a pCPU may still write its
    /// page through a writable TLB entry: [`LATE_START_WATCHED`] and the
    /// partition's TLB generation once the page was read-only (see
    /// [`Fabric::catch_late_starts`]); 0 otherwise.
    late_start: AtomicU64,
}

/// Set in [`Device::late_start`] beside a TLB generation, which may be 0.
const LATE_START_WATCHED: u64 = 1 << 32;

/// The fabric: the manager's decisions, the devices, the logic.
pub struct Fabric {
    pub config: model::Fabric,
    manager: Mutex<Manager<WAITING>>,
    pub devices: Vec<Device>,
    /// Where each partition's devices start in `devices`, and where the
    /// last one's end.
    first: Vec<usize>,
    pub logic: Emulated,
    /// Connections so far, by [`Path`].
    paths: [PathStats; Path::ALL.len()],
    /// STARTs that came through a stale writable mapping after their
    /// device's disconnection, and asked again.
    late_starts: AtomicU64,
}

/// The connections made by one path and how long they took.
#[derive(Default)]
struct PathStats {
    count: AtomicU64,
    max_ticks: AtomicU64,
    total_ticks: AtomicU64,
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
                let client =
                    Client { partition: client_index(p), device: client_index(index), priority: partition.priority };
                devices.push(Device {
                    partition: p,
                    index,
                    accelerator: device.accelerator,
                    global: g,
                    request: Request { client, accelerator: client_index(device.accelerator), unfinished: false },
                    ipa: device.ipa,
                    page: UncachedPage::new(config.page_of(g)).expect("the fabric's memory mapped uncached"),
                    context: config.context_of(g, count),
                    signals: device.signals,
                    stalled: AtomicU64::new(0),
                    connected: AtomicBool::new(false),
                    asked: AtomicU64::new(0),
                    late_start: AtomicU64::new(0),
                });
            }
        }
        first.push(devices.len());
        let sizes: Vec<u32> = config.prrs.iter().map(|prr| prr.size).collect();
        let compatible: Vec<Compatible> = (0..config.accelerators.len())
            .map(|a| {
                config.prrs.iter().enumerate().filter(|(_, prr)| prr.hosts.contains(&a)).fold(0, |m, (r, _)| m | 1 << r)
            })
            .collect();
        let manager = Manager::new(&sizes, &compatible).expect("validated fabric sizes");
        let logic = Emulated::new(&config);
        let paths = Default::default();
        let late_starts = AtomicU64::new(0);
        Some(Fabric { config, manager: Mutex::new(manager), devices, first, logic, paths, late_starts })
    }

    /// The interface pages of partition `p`: (guest-physical, host-physical).
    pub fn interfaces(&self, p: usize) -> Vec<(u64, u64)> {
        self.of_partition(p).map(|d| (d.ipa, d.page.address())).collect()
    }

    /// The signals of partition `p`'s devices.
    pub fn signals(&self, p: usize) -> Vec<u32> {
        self.of_partition(p).flat_map(|d| d.signals).collect()
    }

    /// Logs how many connections each path made and how long they took,
    /// from the write that asked to the connection: the measured side of
    /// what `partita check` bounds.
    pub fn report(&self) {
        let hz = self.logic.hz;
        for (path, stats) in Path::ALL.iter().zip(&self.paths) {
            let count = stats.count.load(Ordering::Relaxed);
            if count == 0 {
                continue;
            }
            let ns = |ticks: u64| ticks_to_us(ticks.saturating_mul(1_000), hz);
            let (max, total) = (stats.max_ticks.load(Ordering::Relaxed), stats.total_ticks.load(Ordering::Relaxed));
            log!(
                "fabric: path {}: {count} connection(s), latency max {} ns mean {} ns",
                path.name(),
                ns(max),
                ns(total / count)
            );
        }
        let late = self.late_starts.load(Ordering::Relaxed);
        if late != 0 {
            log!("fabric: {late} START(s) written through a mapping cached before the disconnection, asked again");
        }
    }

    /// A connection by `path` that took `ticks` since its request.
    /// Only ever under the manager's lock (every connection is made under
    /// it): one writer at a time, so plain loads and stores do, without
    /// the read-modify-write loops of atomic adds on Path 1's way.
    fn count(&self, path: Path, ticks: u64) {
        let stats = &self.paths[path as usize];
        let (count, max, total) = (&stats.count, &stats.max_ticks, &stats.total_ticks);
        count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        max.store(max.load(Ordering::Relaxed).max(ticks), Ordering::Relaxed);
        total.store(total.load(Ordering::Relaxed) + ticks, Ordering::Relaxed);
    }

    fn of_partition(&self, p: usize) -> impl Iterator<Item = &Device> {
        self.devices[self.first[p]..self.first[p + 1]].iter()
    }

    fn device(&self, client: Client) -> &Device {
        &self.devices[self.global(client)]
    }

    /// Index in `devices` of `client`'s device.
    fn global(&self, client: Client) -> usize {
        self.first[usize::from(client.partition)] + usize::from(client.device)
    }
}

/// A partition's, device's or accelerator's index as the manager keeps it:
/// the configuration's limits keep every one below 256.
pub fn client_index(index: usize) -> u8 {
    u8::try_from(index).expect("an index the configuration's limits allow")
}

impl Device {
    /// The device as the manager names it.
    pub fn client(&self) -> Client {
        self.request.client
    }

    /// Its request again, for work it has but no PRR to run it on (a
    /// START not taken when it was disconnected).
    pub fn unfinished_request(&self) -> Request {
        Request { unfinished: true, ..self.request }
    }

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
        self.page.read_u32(offset as usize)
    }

    pub fn write_u32(&self, offset: u64, value: u32) {
        self.page.write_u32(offset as usize, value);
    }

    pub fn read_u8(&self, offset: u64) -> u8 {
        self.page.read_u8(offset as usize)
    }

    pub fn write_u8(&self, offset: u64, value: u8) {
        self.page.write_u8(offset as usize, value);
    }
}
