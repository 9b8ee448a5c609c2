//! The programmable logic of a board that has none (QEMU): PRRs, the
//! reconfiguration port (PCAP) and the accelerators, run on a pCPU of their
//! own as the logic runs beside the cores.
//!
//! Its timing is the model's, in counter ticks: a download takes the PRR's
//! bitstream over the configured bandwidth, one at a time as through the
//! one PCAP; a frame takes the accelerator's frame time; a stop waits for
//! the next consistency point, at most δ_pre after the job (re)started's
//! grid. The accelerators compute real results, in bounded steps, between
//! which the logic looks at its deadlines again and yields the host to the
//! cores. Computing may run ahead of the model by at most one frame; a
//! frame is reported (RESULT, OVER) when both the model and the
//! computation have finished it, and a stop saves the context of the last
//! consistency point the computation reached.
//!
//! The logic reads START from the interface pages of connected devices,
//! every [`START_SAMPLE_NS`] while one of them holds its PRR without a job:
//! after its connection, and after each job, for the fabric's hold. Then
//! the client lets the PRR go (`Event::LetGo`) and its next job asks
//! again, so an idle PRR is never watched for as long as a partition keeps
//! its device.

use super::{Device, Fabric};
use crate::partition::Partition;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use partita_arch::platform::{self, Gic, InterruptController};
use partita_arch::{cpu, guest_memory, timer};
use partita_core::config::model;
use partita_core::fabric::compute::Context;
use partita_core::fabric::interface::{reg, stat, Registers, CONTEXT_SIZE, REGISTERS_SIZE};
use partita_core::fabric::job::{Dma, Job};
use partita_core::fabric::manager::Event;
// Fair: the fabric's pCPU takes the logic's lock again and again, and an
// unfair lock could keep a requesting vCPU spinning for as long.
use partita_arch::sync::TicketMutex as Mutex;

/// How often the logic samples START while a connected device holds its
/// PRR without a job.
const START_SAMPLE_NS: u64 = 2_000;
/// Units of work per computing step: a few thousand instructions.
const STEP_BUDGET: usize = 256;
/// What one pass of the loop may report.
pub const REPORTS: usize = 64;

/// One PRR of the emulated logic.
struct Unit {
    /// The accelerator its logic holds.
    loaded: Option<usize>,
    /// The device connected to it (index into `Fabric::devices`).
    client: Option<usize>,
    /// Allocated and not started: Hold ends then.
    hold_until: Option<u64>,
    job: Option<Running>,
    /// Asked to stop: it stops at this tick.
    stop_at: Option<u64>,
    /// What `context` holds. A unit holds one saved context at most: the
    /// one its stop saved, until the manager's disconnect takes it, or the
    /// one it was connected with, until its job resumes or stops again.
    /// Kept in place rather than moved as an `Option<Context>`: every move
    /// of one copies its kilobyte, even when it is `None`.
    saved: Saved,
    context: Context,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Saved {
    Nothing,
    /// Saved by a stop, for the manager's disconnect.
    Stopped,
    /// Connected with it: the job resumes from it.
    Resume,
}

struct Running {
    job: Job,
    /// Its buffers in the holder's memory, checked when it (re)started.
    dma: HolderDma,
    /// When the job (re)started and the frames done then: frame `k` of the
    /// model ends at `started + (k - base) × frame`.
    started: u64,
    base: u64,
    frame: u64,
    preempt: u64,
    reported: u64,
    /// The context of the last consistency point the computation reached.
    snapshot: Context,
}

/// The one reconfiguration port: a download at a time, in order asked.
struct Pcap {
    current: Option<(usize, usize, u64)>,
    queue: Vec<(usize, usize)>,
}

pub struct Logic {
    units: Vec<Unit>,
    pcap: Pcap,
}

/// What the logic tells the rest of Partita after a pass.
#[derive(Clone, Copy)]
pub enum Report {
    /// An event for the manager, and the tick it was due (a download's end,
    /// a stop's consistency point): the logic's interrupt would have been
    /// raised then.
    Manager(Event, u64),
    /// A device's computation is over and it asked for its READY signal.
    Ready(usize),
    /// A device's job named memory outside its partition (`address`).
    Dma(usize, u64),
}

/// The emulated logic: its state, and its pCPU's parameters.
pub struct Emulated {
    cpu: usize,
    pub hz: u64,
    /// `[fabric] turn` in ticks: the longest the fabric's pCPU sleeps or
    /// leaves the cores beside it to run (see `run`).
    pub turn: u64,
    hold: u64,
    download: Vec<u64>,
    /// Each PRR's stop request: the counter when the manager asked, 0 for
    /// none. Outside the lock, which the logic's pCPU holds through each
    /// computing step: on a board, asking is one write to the logic, and
    /// the manager's Preempt must not wait for the emulation's step.
    stops: Vec<AtomicU64>,
    /// Each PRR's fresh connection, for the logic's next pass to take:
    /// the device and when its hold starts. Outside the lock for the same
    /// reason: on a board, connecting is a write to the logic, and Path 1
    /// must not wait for a computing step on another PRR.
    connects: Vec<Connection>,
    /// Each PRR's decoupler, as the static part's register holds it
    /// (`super::pl`): a download is taken only while it is set.
    pub decoupled: Vec<AtomicBool>,
    pub logic: Mutex<Logic>,
}

/// A connection made outside the logic's lock, until a pass takes it.
#[derive(Default)]
struct Connection {
    /// The device's index + 1; 0 for none. Written last.
    device: AtomicU64,
    at: AtomicU64,
}

impl Connection {
    fn take(&self) -> Option<(usize, u64)> {
        let device = self.device.swap(0, Ordering::Acquire);
        (device != 0).then(|| (device as usize - 1, self.at.load(Ordering::Relaxed)))
    }
}

pub fn ns_to_ticks(ns: u64, hz: u64) -> u64 {
    u64::try_from((u128::from(ns) * u128::from(hz)).div_ceil(1_000_000_000)).unwrap_or(u64::MAX)
}

impl Emulated {
    pub fn new(config: &model::Fabric) -> Emulated {
        let hz = platform::counter_frequency();
        let unit = || Unit {
            loaded: None,
            client: None,
            hold_until: None,
            job: None,
            stop_at: None,
            saved: Saved::Nothing,
            context: [0; CONTEXT_SIZE],
        };
        let download = config
            .prrs
            .iter()
            .map(|prr| partita_core::fabric::bound::reconfig_time(prr.bitstream, config.bandwidth, hz))
            .collect();
        Emulated {
            cpu: config.cpu as usize,
            hz,
            turn: ns_to_ticks(config.turn_us.saturating_mul(1_000), hz),
            hold: ns_to_ticks(config.hold_us.saturating_mul(1_000), hz),
            download,
            stops: config.prrs.iter().map(|_| AtomicU64::new(0)).collect(),
            connects: config.prrs.iter().map(|_| Connection::default()).collect(),
            decoupled: config.prrs.iter().map(|_| AtomicBool::new(false)).collect(),
            logic: Mutex::new(Logic {
                units: config.prrs.iter().map(|_| unit()).collect(),
                pcap: Pcap { current: None, queue: Vec::new() },
            }),
        }
    }

    pub fn cpu(&self) -> usize {
        self.cpu
    }

    /// Asks the accelerator in `prr` to stop at its next consistency point
    /// (after now): the logic's next pass takes the request. What a STOP
    /// written to the PRR's control word does (`super::pl`).
    pub fn stop(&self, prr: usize) {
        self.stops[prr].store(timer::now().max(1), Ordering::Release);
        self.kick();
    }

    /// Downloads `accelerator` into `prr` through the PCAP: what the
    /// firmware's load does (`super::pl`), except that the call returns at
    /// once and the download's end comes as the logic's event, on a board
    /// the caller's return from the call.
    pub fn reconfigure(&self, prr: usize, accelerator: usize) {
        let now = timer::now();
        let mut logic = self.logic.lock();
        if logic.pcap.current.is_none() {
            logic.pcap.current = Some((prr, accelerator, now + self.download[prr]));
        } else {
            logic.pcap.queue.push((prr, accelerator));
        }
        drop(logic);
        self.kick();
    }

    /// Connects device `device` to `prr`; with the address of a saved
    /// `context`, its preempted job goes on from there.
    /// `now`: the counter as the caller last read it, which starts the
    /// hold (a few instructions early is no matter to a hold).
    #[inline]
    pub fn connect(&self, prr: usize, device: usize, context: Option<u64>, now: u64) {
        match context {
            // A fresh connection only starts the Hold, whose START the
            // fabric's pCPU notices within its turn (`[fabric] turn`) and a
            // sample: kicking it here would, under `-icount`, run its pass
            // inside the requester's Path 1, which on a board is the
            // logic's own time, in parallel.
            None => {
                let connection = &self.connects[prr];
                connection.at.store(now, Ordering::Relaxed);
                connection.device.store(device as u64 + 1, Ordering::Release);
            }
            Some(address) => self.resume(prr, device, address, now),
        }
    }

    /// Connects `device` to `prr` with its saved context: its job restarts
    /// at once.
    fn resume(&self, prr: usize, device: usize, context: u64, now: u64) {
        let mut logic = self.logic.lock();
        let unit = &mut logic.units[prr];
        unit.client = Some(device);
        unit.hold_until = Some(now + self.hold);
        guest_memory::read(context, &mut unit.context);
        unit.saved = Saved::Resume;
        drop(logic);
        self.kick();
    }

    /// Disconnects whatever device `prr` serves. The context saved by a
    /// stop, if it made one, goes to `save`: whether it did.
    pub fn disconnect(&self, prr: usize, save: impl FnOnce(&Context)) -> bool {
        let mut logic = self.logic.lock();
        let unit = &mut logic.units[prr];
        unit.client = None;
        // A connection the logic has not taken yet ends too.
        let _ = self.connects[prr].take();
        unit.job = None;
        unit.stop_at = None;
        self.stops[prr].store(0, Ordering::Relaxed);
        unit.hold_until = None;
        let stopped = unit.saved == Saved::Stopped;
        if stopped {
            save(&unit.context);
        }
        unit.saved = Saved::Nothing;
        stopped
    }

    fn kick(&self) {
        if self.cpu != cpu::index() {
            Gic::kick(self.cpu);
        }
    }
}

impl Logic {
    /// Everything due at `now`: downloads, stops, frames, starts, holds.
    pub fn pass(
        &mut self,
        partitions: &[Partition],
        fabric: &Fabric,
        now: u64,
        reports: &mut heapless::Vec<Report, REPORTS>,
    ) {
        let mut report = |r| {
            // The list holds a pass's reports for every PRR many times
            // over; were it full, the rest would come at the next pass.
            let _ = reports.push(r);
        };
        if let Some((prr, accelerator, until)) = self.pcap.current {
            if until <= now {
                self.units[prr].loaded = Some(accelerator);
                report(Report::Manager(Event::Reconfigured { prr }, until));
                self.pcap.current = None;
                if !self.pcap.queue.is_empty() {
                    let (next, accelerator) = self.pcap.queue.remove(0);
                    self.pcap.current = Some((next, accelerator, now + fabric.logic.download[next]));
                }
            }
        }
        for (prr, unit) in self.units.iter_mut().enumerate() {
            unit.pass(partitions, fabric, prr, now, &mut report);
        }
    }

    /// One computing step of the first job that may compute now.
    pub fn compute(&mut self) -> bool {
        let now = timer::now();
        for run in self.units.iter_mut().filter_map(|unit| unit.job.as_mut()) {
            // At most one frame ahead of the model.
            if run.job.is_done() || run.job.frames_done() > run.due(now) {
                continue;
            }
            run.job.step(&mut run.dma, STEP_BUDGET);
            if run.job.at_consistency_point() {
                let _ = run.job.save(&mut run.snapshot);
            }
            return true;
        }
        false
    }

    pub fn next_deadline(&self, fabric: &Fabric, now: u64) -> Option<u64> {
        let held = ns_to_ticks(START_SAMPLE_NS, fabric.logic.hz);
        let pcap = self.pcap.current.map(|(_, _, until)| until);
        let units = self.units.iter().flat_map(|unit| {
            let frame = unit.job.as_ref().map(|run| run.started + (run.reported + 1 - run.base) * run.frame);
            let holding = unit.client.is_some() && unit.job.is_none() && unit.hold_until.is_some();
            [unit.hold_until, unit.stop_at, frame, holding.then_some(now + held)]
        });
        pcap.into_iter().chain(units.flatten()).min()
    }
}

impl Running {
    /// Frames the model has finished by `now`.
    fn due(&self, now: u64) -> u64 {
        let elapsed = now.saturating_sub(self.started) / self.frame.max(1);
        (self.base + elapsed).min(self.job.frames())
    }
}

impl Unit {
    pub fn pass(
        &mut self,
        partitions: &[Partition],
        fabric: &Fabric,
        prr: usize,
        now: u64,
        report: &mut impl FnMut(Report),
    ) {
        if let Some((device, at)) = fabric.logic.connects[prr].take() {
            self.client = Some(device);
            self.hold_until = Some(at + fabric.logic.hold);
            self.saved = Saved::Nothing;
        }
        let Some(d) = self.client else { return };
        let device = &fabric.devices[d];
        let asked = fabric.logic.stops[prr].swap(0, Ordering::Acquire);
        if asked != 0 {
            self.stop_at = Some(self.next_consistency_point(asked));
        }
        if let Some(at) = self.stop_at.filter(|&at| at <= now) {
            self.stop_at = None;
            // Stopped before a resumed job restarted: its context is the
            // one it was connected with. A START not taken yet stays in the
            // page and is taken once the device is connected again.
            if let Some(run) = &self.job {
                self.context = run.snapshot;
                self.saved = Saved::Stopped;
            } else if self.saved == Saved::Resume {
                self.saved = Saved::Stopped;
            }
            self.job = None;
            let work = self.saved == Saved::Stopped || start_pending(device);
            report(Report::Manager(Event::Stopped { prr, work }, at));
            return;
        }
        if self.saved == Saved::Resume {
            self.saved = Saved::Nothing;
            let regs = registers(device);
            match Job::resume(fabric.config.accelerators[device.accelerator].function, &regs, &self.context) {
                Ok(job) => self.begin(partitions, fabric, d, job, now, prr, report),
                Err(_) => device.update_stat(stat::ERR_CMD, stat::PREEMPTED),
            }
            return;
        }
        if let Some(run) = &mut self.job {
            let shown = run.job.frames_done().min(run.due(now));
            if shown > run.reported {
                run.reported = shown;
                device.write_u32(reg::RESULT, shown as u32);
                device.write_u32(reg::RESULT + 4, (shown >> 32) as u32);
            }
            if run.reported == run.job.frames() {
                self.job = None;
                // Kept for the hold: the next job may start without asking.
                self.hold_until = Some(now + fabric.logic.hold);
                device.update_stat(0, stat::BUSY);
                device.write_u8(reg::OVER, 1);
                if device.read_u32(reg::INT_CTRL) & 1 != 0 {
                    report(Report::Ready(d));
                }
                report(Report::Manager(Event::Done { prr }, now));
            }
            return;
        }
        if start_pending(device) {
            device.write_u8(reg::START, 0);
            self.start(partitions, fabric, d, now, prr, report);
            return;
        }
        if let Some(at) = self.hold_until.filter(|&at| at <= now) {
            self.hold_until = None;
            // A Hold after the connection expires; either way the client
            // then lets the PRR go. The manager ignores whichever of the
            // two does not fit the PRR's state.
            let client = device.client();
            report(Report::Manager(Event::Expired { prr }, at));
            report(Report::Manager(Event::LetGo { prr, client }, at));
        }
    }

    /// Where a stop asked at `asked` takes effect: the first consistency
    /// point of the job's grid from then, or at once without a job.
    fn next_consistency_point(&self, asked: u64) -> u64 {
        self.job.as_ref().map_or(asked, |run| {
            let since = asked.saturating_sub(run.started);
            run.started + since.div_ceil(run.preempt.max(1)) * run.preempt.max(1)
        })
    }

    /// START was written: check the job, then run it.
    fn start(
        &mut self,
        partitions: &[Partition],
        fabric: &Fabric,
        d: usize,
        now: u64,
        prr: usize,
        report: &mut impl FnMut(Report),
    ) {
        let device = &fabric.devices[d];
        let regs = registers(device);
        let function = fabric.config.accelerators[device.accelerator].function;
        let job = match Job::new(function, &regs) {
            Ok(job) => job,
            Err(_) => return device.update_stat(stat::ERR_CMD, stat::ERR_DMA),
        };
        device.write_u8(reg::OVER, 0);
        device.write_u32(reg::RESULT, 0);
        device.write_u32(reg::RESULT + 4, 0);
        self.begin(partitions, fabric, d, job, now, prr, report);
    }

    /// Runs `job` of device `d`, fresh or resumed, once its buffers are
    /// found inside the holder's memory.
    #[allow(clippy::too_many_arguments)]
    fn begin(
        &mut self,
        partitions: &[Partition],
        fabric: &Fabric,
        d: usize,
        job: Job,
        now: u64,
        prr: usize,
        report: &mut impl FnMut(Report),
    ) {
        let device = &fabric.devices[d];
        let dma = match HolderDma::new(&partitions[device.partition].config, &job) {
            Ok(dma) => dma,
            Err(outside) => {
                device.update_stat(stat::ERR_DMA, stat::ERR_CMD | stat::BUSY);
                report(Report::Dma(d, outside));
                return;
            }
        };
        let accelerator = &fabric.config.accelerators[device.accelerator];
        let hz = fabric.logic.hz;
        let mut snapshot = [0; CONTEXT_SIZE];
        let _ = job.save(&mut snapshot);
        let base = job.frames_done();
        self.hold_until = None;
        self.job = Some(Running {
            frame: ns_to_ticks(job.frame_ns(accelerator.frame_ns), hz).max(1),
            preempt: ns_to_ticks(job.frame_ns(accelerator.preempt_ns), hz).max(1),
            job,
            dma,
            started: now,
            base,
            reported: base,
            snapshot,
        });
        device.update_stat(stat::BUSY, stat::ERR_CMD | stat::ERR_DMA | stat::PREEMPTED);
        report(Report::Manager(Event::Started { prr }, now));
    }
}

/// The guest wrote START and the logic has not taken it yet.
pub fn start_pending(device: &Device) -> bool {
    device.read_u8(reg::START) != 0
}

fn registers(device: &Device) -> Registers {
    let mut page = [0u8; REGISTERS_SIZE];
    device.page.read(0, &mut page);
    Registers::decode(&page)
}

/// The holder's memory as the accelerator reaches it: only the job's two
/// buffers, each inside one of its RAM regions, as an SMMU would allow.
struct HolderDma {
    /// (guest-physical, host-physical, bytes) of the input and the output.
    buffers: [(u64, u64, u64); 2],
}

impl HolderDma {
    /// The job's buffers translated, or the address of the first that lies
    /// outside the partition's memory (or, for the output, its writable
    /// memory).
    fn new(partition: &model::Partition, job: &Job) -> Result<HolderDma, u64> {
        let [(input, in_len), (output, out_len)] = job.buffers();
        let in_pa = partition.translate_buffer(input, in_len, false).ok_or(input)?;
        let out_pa = partition.translate_buffer(output, out_len, true).ok_or(output)?;
        Ok(HolderDma { buffers: [(input, in_pa, in_len), (output, out_pa, out_len)] })
    }

    fn host(&self, addr: u64, len: usize, buffer: usize) -> u64 {
        let (ipa, pa, size) = self.buffers[buffer];
        assert!(addr >= ipa && addr - ipa + len as u64 <= size, "a job's access outside its buffer");
        pa + (addr - ipa)
    }
}

impl Dma for HolderDma {
    fn read(&mut self, addr: u64, out: &mut [u8]) {
        guest_memory::read(self.host(addr, out.len(), 0), out);
    }

    fn write(&mut self, addr: u64, bytes: &[u8]) {
        guest_memory::write(self.host(addr, bytes.len(), 1), bytes);
    }
}
