//! The host's share of a late job's window, on the wall clock.
//!
//! Under QEMU without `-icount` an emulated core is a host thread, and the
//! guests' counter is the host's clock: a job is late by every stretch in
//! which that thread, or QEMU's main loop (which raises the emulated timer
//! interrupts and wakes an idle vCPU), waited for a host core, or in which
//! the host itself did not run (steal, on a host that is a virtual
//! machine). While the run goes, [`Sampler`] reads every
//! [`SAMPLE_EVERY`]:
//! - the run delay (the time spent runnable but not running) of QEMU's
//!   main loop and of the critical partitions' vCPU threads, from the
//!   second field of `/proc/<pid>/task/<tid>/schedstat`, in ns;
//! - the time each of those vCPU threads spent on a host core, from the
//!   first field of the same file, in ns: a window less it is the time the
//!   thread was off its core, waiting for one or asleep (the guest's WFI,
//!   or a wait for QEMU's big lock);
//! - the host's steal time, the 8th value of `/proc/stat`'s `cpu` line
//!   (summed over the host's cores), in USER_HZ ticks: 10 ms steps, so a
//!   window's steal reads as 0 or a multiple of 10 ms.
//!
//! The kernel adds a wait to the run delay when the thread gets its core
//! back, so a wait is counted whole in the sample in which it ended: one
//! that began before a job's release still counts in that job's window.
//! The host's share is what those counters grew by over the samples that
//! enclose the window: an upper bound, never an interpolation.
//!
//! [`GuestClock`] places guest counter ticks on the host's clock. QEMU's
//! counter is its virtual clock, which is the host's `CLOCK_MONOTONIC`
//! from the moment the machine starts, standing still while it is stopped
//! (each copy of the trace rings stops it): between two stops, host time =
//! guest time + a constant offset. Every host observation of guest time
//! bounds that offset from above: a console line carrying a counter value
//! (Partita's `hm: N at US us`, the RTOS's `demo: late ... end=E`, the
//! first line at guest time 0) arrived after that time, and the newest
//! event in rings copied at a stop was recorded before the stop's reply.
//! Bounds from below come from QEMU's start (after the origin) and, at
//! each stop, from the oldest event recorded after it: the clock stood
//! between the newest event before and that one. The offset is taken as
//! its upper bound, so a guest time is never placed early, and late by at
//! most the gap between the bounds ([`Alignment::error_ns`]). The host
//! window starts that much earlier than the placed one, so it holds the
//! true window. (An event stamped before a stop and recorded after it,
//! its vCPU paused in between, can raise the bound from below past the
//! truth and make the error look smaller, by that vCPU's gap: the offset
//! itself, from above, stays right.)
//!
//! What a run delay does not show: a vCPU thread that sleeps on QEMU's big
//! lock, held by a thread that waits for a core, is not runnable, so that
//! wait is in neither thread's run delay here. It is in the thread's
//! off-CPU time ([`HostShare::vcpu_off_cpu_ns`]), with its other sleeps.
//! The kernel brings a running thread's on-CPU time up to date at its
//! scheduler tick and whenever it leaves or takes a core, so the on-CPU
//! time a window read can be off by up to a scheduler tick at each end.

use crate::status;
use partita_core::trace::Trace;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the counters are read. A late job's window is at least its
/// deadline long (5 ms in the demo), and widening it to whole samples adds
/// at most one sample at each end; reading the three small files takes
/// about 12 us, a little over 1 % of a host core.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(1);

/// Columns of a record, before two per sampled vCPU thread: the
/// interval's length and what the main loop's run delay and the steal grew
/// by in it. Each vCPU thread's pair is its run delay, then its on-CPU
/// time ([`VCPU_DELAY`], [`VCPU_ON_CPU`] from the pair's first column).
const INTERVAL: usize = 0;
const MAIN_LOOP: usize = 1;
const STEAL: usize = 2;
const VCPUS: usize = 3;
const VCPU_DELAY: usize = 0;
const VCPU_ON_CPU: usize = 1;
const PER_VCPU: usize = 2;

/// A record in every this many starts a block whose start time is kept, so
/// that a window is found without walking from the first record.
const BLOCK: usize = 1024;

/// At most this many console lines per stretch between two stops inform
/// the clock: a guest prints as many as it likes, and the first ones
/// already bound the offset.
const LINES_PER_SEGMENT: usize = 256;

/// Linux exports USER_HZ as 100 on every architecture; the fallback when
/// `sysconf` cannot say.
const DEFAULT_USER_HZ: u64 = 100;

const NS_PER_US: u64 = 1_000;

/// What the host took from one window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostShare {
    /// Time the partition's vCPU threads waited for a host core, summed.
    pub vcpu_delay_ns: u64,
    /// Time the partition's vCPU threads were off a host core, summed: the
    /// enclosing samples' length less each thread's on-CPU time in them.
    /// Their run delay and their sleep (the guest's WFI, waits for QEMU's
    /// big lock), so an upper bound of what the host took from them.
    pub vcpu_off_cpu_ns: u64,
    /// Time QEMU's main loop waited for a host core.
    pub main_loop_delay_ns: u64,
    /// Time the host's cores were stolen from it, summed over them.
    pub steal_ns: u64,
    /// How long the samples enclosing the window are.
    pub span_ns: u64,
}

impl HostShare {
    /// `host: vCPU off-CPU O us (waited V us), main loop M us, steal S us`.
    pub fn describe(share: Option<&HostShare>) -> String {
        let us = |ns: u64| ns as f64 / NS_PER_US as f64;
        match share {
            Some(s) => format!(
                "host: vCPU off-CPU {:.1} us (waited {:.1} us), main loop {:.1} us, steal {:.1} us",
                us(s.vcpu_off_cpu_ns),
                us(s.vcpu_delay_ns),
                us(s.main_loop_delay_ns),
                us(s.steal_ns)
            ),
            None => "host: unknown".into(),
        }
    }
}

/// The second field of a `schedstat` file: the run delay, in ns.
pub fn parse_run_delay(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The first two fields of a `schedstat` file: the on-CPU time and the
/// run delay, in ns.
pub fn parse_on_cpu_and_delay(text: &str) -> Option<(u64, u64)> {
    let mut fields = text.split_whitespace();
    let on_cpu = fields.next()?.parse().ok()?;
    Some((on_cpu, fields.next()?.parse().ok()?))
}

/// The steal of `/proc/stat`'s `cpu` line, in USER_HZ ticks.
pub fn parse_steal(text: &str) -> Option<u64> {
    let line = text.lines().find(|line| line.starts_with("cpu "))?;
    line.split_whitespace().nth(8)?.parse().ok()
}

fn ns_per_user_tick() -> u64 {
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten();
    1_000_000_000 / hz.and_then(|hz| u64::try_from(hz).ok()).filter(|&hz| hz > 0).unwrap_or(DEFAULT_USER_HZ)
}

/// The samples of a run, compactly: per interval in which any counter
/// grew, one record of u32 values in us (its length, then the growth of
/// the main loop's run delay, of the steal and of each vCPU thread's run
/// delay and on-CPU time); intervals in which nothing grew (every vCPU
/// thread asleep throughout) merge into one record. An hour at 1 kHz with
/// the demo's one critical vCPU is at most 3.6 M records of 20 bytes,
/// 72 MB.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// The pCPU of each vCPU column.
    pcpus: Vec<u32>,
    records: Vec<u32>,
    /// The start of each block of [`BLOCK`] records, us since the origin.
    blocks: Vec<u64>,
    /// The first read, and the end of the last record, us since the origin.
    first_us: u64,
    end_us: u64,
    /// The last read: its time and its cumulative values in ns.
    last_us: u64,
    last: Vec<u64>,
    reads: u64,
}

impl Samples {
    pub fn new(pcpus: Vec<u32>) -> Self {
        Self { pcpus, ..Self::default() }
    }

    fn stride(&self) -> usize {
        VCPUS + PER_VCPU * self.pcpus.len()
    }

    /// How many times the counters were read.
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// One read at `at_us`: the cumulative main loop delay, steal and each
    /// vCPU's delay and on-CPU time, in ns, in the column order.
    pub fn push(&mut self, at_us: u64, cumulative: &[u64]) {
        if self.reads == 0 {
            (self.first_us, self.end_us) = (at_us, at_us);
        } else {
            let grown: Vec<u32> = cumulative.iter().zip(&self.last).map(|(&now, &then)| grown_us(now, then)).collect();
            if grown.iter().any(|&g| g > 0) {
                self.close_idle();
                self.record(at_us.saturating_sub(self.last_us), &grown);
            }
        }
        self.last_us = at_us;
        self.last = cumulative.to_vec();
        self.reads += 1;
    }

    /// Ends the idle stretch since the last record, if any.
    pub fn close_idle(&mut self) {
        let idle = vec![0; self.stride() - 1];
        while self.last_us > self.end_us {
            self.record(self.last_us - self.end_us, &idle);
        }
    }

    fn record(&mut self, interval_us: u64, grown: &[u32]) {
        if (self.records.len() / self.stride()).is_multiple_of(BLOCK) {
            self.blocks.push(self.end_us);
        }
        let interval = u32::try_from(interval_us).unwrap_or(u32::MAX);
        self.records.push(interval);
        self.records.extend_from_slice(grown);
        self.end_us += u64::from(interval);
    }

    /// What the counters grew by over the records that overlap `from..to`
    /// (us since the origin), the vCPU columns of `pcpus` summed. `None`
    /// when the samples do not cover the window or sampled none of `pcpus`.
    pub fn over(&self, from_us: u64, to_us: u64, pcpus: &[u32]) -> Option<HostShare> {
        let columns: Vec<usize> =
            pcpus.iter().filter_map(|p| self.pcpus.iter().position(|q| q == p)).map(|i| VCPUS + PER_VCPU * i).collect();
        let to_us = to_us.max(from_us + 1);
        if columns.is_empty() || from_us < self.first_us || to_us > self.end_us {
            return None;
        }
        let block = self.blocks.partition_point(|&start| start <= from_us).checked_sub(1)?;
        let mut start = self.blocks[block];
        let (mut share, mut span_from) = (HostShare::default(), None);
        let mut on_cpu_us = vec![0u64; columns.len()];
        for record in self.records.chunks_exact(self.stride()).skip(block * BLOCK) {
            let end = start + u64::from(record[INTERVAL]);
            if start >= to_us {
                break;
            }
            if end > from_us {
                span_from.get_or_insert(start);
                share.main_loop_delay_ns += u64::from(record[MAIN_LOOP]) * NS_PER_US;
                share.steal_ns += u64::from(record[STEAL]) * NS_PER_US;
                share.vcpu_delay_ns +=
                    columns.iter().map(|&c| u64::from(record[c + VCPU_DELAY]) * NS_PER_US).sum::<u64>();
                for (on, &c) in on_cpu_us.iter_mut().zip(&columns) {
                    *on += u64::from(record[c + VCPU_ON_CPU]);
                }
                share.span_ns = (end - span_from.unwrap_or(start)) * NS_PER_US;
            }
            start = end;
        }
        // Each thread's on-CPU time, read late by up to a scheduler tick,
        // can exceed the span it is set against: that thread was off none of it.
        share.vcpu_off_cpu_ns = on_cpu_us.iter().map(|&on| share.span_ns.saturating_sub(on * NS_PER_US)).sum();
        span_from.map(|_| share)
    }
}

fn micros(ns: u64) -> u64 {
    ns / NS_PER_US
}

/// Whole microseconds between two cumulative ns values, so that rounding
/// never accumulates; a counter that went back (a new thread) grew by 0.
fn grown_us(now: u64, then: u64) -> u32 {
    u32::try_from(micros(now).saturating_sub(micros(then))).unwrap_or(u32::MAX)
}

/// The files read at each sample, kept open: `/proc` regenerates them on
/// every read from the start.
struct Sources {
    main_loop: File,
    steal: File,
    vcpus: Vec<File>,
    ns_per_tick: u64,
}

impl Sources {
    fn open(qemu: u32, vcpus: &[(u32, u32)]) -> Result<Self, String> {
        let open = |path: String| File::open(&path).map_err(|e| format!("cannot read {path}: {e}"));
        let schedstat = |tid: u32| open(format!("/proc/{qemu}/task/{tid}/schedstat"));
        Ok(Self {
            main_loop: schedstat(qemu)?,
            steal: open("/proc/stat".into())?,
            vcpus: vcpus.iter().map(|&(_, tid)| schedstat(tid)).collect::<Result<_, _>>()?,
            ns_per_tick: ns_per_user_tick(),
        })
    }

    /// The cumulative values in [`Samples::push`]'s order; `None` once a
    /// file is gone (QEMU ended) or reads as something else.
    fn read(&self) -> Option<Vec<u64>> {
        let mut values = vec![parse_run_delay(&read_start(&self.main_loop)?)?];
        values.push(parse_steal(&read_start(&self.steal)?)? * self.ns_per_tick);
        for vcpu in &self.vcpus {
            let (on_cpu, delay) = parse_on_cpu_and_delay(&read_start(vcpu)?)?;
            values.extend([delay, on_cpu]);
        }
        Some(values)
    }
}

/// The first bytes of an open `/proc` file, read again from its start.
/// The `cpu` line opens `/proc/stat`; a schedstat line is shorter still.
fn read_start(file: &File) -> Option<String> {
    let mut buffer = [0u8; 256];
    let n = file.read_at(&mut buffer, 0).ok()?;
    String::from_utf8(buffer[..n].to_vec()).ok()
}

/// The sampling thread of a run.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Samples>,
}

impl Sampler {
    /// Starts reading QEMU's (`qemu`) main loop and the `vcpus`' threads
    /// (pCPU, thread id), timed from `origin`; `Err` says why it cannot.
    pub fn start(qemu: u32, vcpus: &[(u32, u32)], origin: Instant) -> Result<Sampler, String> {
        let sources = Sources::open(qemu, vcpus)?;
        let samples = Samples::new(vcpus.iter().map(|&(pcpu, _)| pcpu).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("host-share".into())
            .spawn(move || sample(&sources, samples, origin, &stopped))
            .map_err(|e| format!("cannot start the sampling thread: {e}"))?;
        Ok(Sampler { stop, thread })
    }

    /// Stops sampling; the samples taken.
    pub fn finish(self) -> Samples {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap_or_default()
    }
}

fn sample(sources: &Sources, mut samples: Samples, origin: Instant, stop: &AtomicBool) -> Samples {
    let mut next = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        let Some(values) = sources.read() else { break };
        samples.push(origin.elapsed().as_micros() as u64, &values);
        // A sampler that fell behind starts afresh rather than catching up.
        next = (next + SAMPLE_EVERY).max(Instant::now());
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    samples.close_idle();
    samples
}

/// A guest counter value, in the unit its line carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestTime {
    Ticks(u64),
    Micros(u64),
}

impl GuestTime {
    fn ns(self, counter_hz: u64) -> i64 {
        match self {
            GuestTime::Ticks(ticks) => ticks_ns(ticks, counter_hz),
            GuestTime::Micros(us) => i64::try_from(us.saturating_mul(NS_PER_US)).unwrap_or(i64::MAX),
        }
    }
}

fn ticks_ns(ticks: u64, counter_hz: u64) -> i64 {
    let ns = u128::from(ticks) * 1_000_000_000 / u128::from(counter_hz.max(1));
    i64::try_from(ns).unwrap_or(i64::MAX)
}

/// The counter value a console line carries: Partita's `hm: N at US us
/// ...` or a guest's `demo: late ... end=E`.
pub fn guest_time_of(hypervisor: bool, text: &str) -> Option<GuestTime> {
    if !hypervisor {
        return status::parse_late(text).map(|job| GuestTime::Ticks(job.end));
    }
    let words: Vec<&str> = text.strip_prefix("hm: ")?.split_whitespace().take(4).collect();
    match words[..] {
        [_, "at", us, "us"] => us.parse().ok().map(GuestTime::Micros),
        _ => None,
    }
}

/// One stop of the machine, host times in ns since the origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pause {
    pub stop_sent: u64,
    pub stop_replied: u64,
    /// `cont` sent and answered; `None` for the stop that ends the run.
    pub cont: Option<(u64, u64)>,
    /// The newest event in the rings copied then, counter ticks: the clock
    /// stood at or after it.
    pub newest: Option<u64>,
    /// The oldest event after `newest` in the next copy: the clock stood at
    /// or before it.
    pub next: Option<u64>,
}

impl Pause {
    /// The shortest and the longest the clock can have stood.
    fn stood(&self) -> Option<(i64, i64)> {
        let (sent, replied) = self.cont?;
        Some((sent as i64 - self.stop_replied as i64, replied as i64 - self.stop_sent as i64))
    }
}

/// What the host saw of the guests' clock while the run went.
#[derive(Clone, Debug)]
pub struct GuestClock {
    origin: Instant,
    /// (stretch between stops, host ns, guest time) of console lines.
    lines: Vec<(usize, u64, GuestTime)>,
    pauses: Vec<Pause>,
    /// The stretch now going, and how many of its lines were kept.
    segment: usize,
    kept: usize,
}

impl GuestClock {
    /// A clock whose origin is now: before QEMU starts.
    pub fn new() -> Self {
        Self { origin: Instant::now(), lines: Vec::new(), pauses: Vec::new(), segment: 0, kept: 0 }
    }

    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Host ns since the origin.
    pub fn since_origin(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.origin).as_nanos() as u64
    }

    /// A console line that arrived now.
    pub fn line(&mut self, hypervisor: bool, text: &str) {
        let now = self.since_origin(Instant::now());
        self.line_at(now, hypervisor, text);
    }

    /// A console line that arrived at `host_ns`; the first one at all
    /// stands for guest time 0.
    pub fn line_at(&mut self, host_ns: u64, hypervisor: bool, text: &str) {
        let first = self.lines.is_empty() && self.pauses.is_empty();
        let guest = if first { Some(GuestTime::Micros(0)) } else { guest_time_of(hypervisor, text) };
        if let Some(guest) = guest.filter(|_| self.kept < LINES_PER_SEGMENT) {
            self.lines.push((self.segment, host_ns, guest));
            self.kept += 1;
        }
    }

    /// A stop of the machine: `stop` sent and answered, `cont` too unless
    /// it ended the run, and the rings copied during it, if any.
    pub fn stopped(&mut self, stop: (Instant, Instant), cont: Option<(Instant, Instant)>, copied: Option<&Trace>) {
        let at = |instant: Instant| self.since_origin(instant);
        let cont = cont.map(|(sent, replied)| (at(sent), at(replied)));
        self.paused(Pause { stop_sent: at(stop.0), stop_replied: at(stop.1), cont, ..Pause::default() }, copied);
    }

    /// A stop of the machine and the rings copied during it, if any.
    pub fn paused(&mut self, mut pause: Pause, copied: Option<&Trace>) {
        let events = || copied.into_iter().flat_map(|t| t.cpus.iter().flatten()).map(|e| e.time);
        if let Some(previous) = self.pauses.last_mut().filter(|p| p.cont.is_some()) {
            if let Some(newest) = previous.newest {
                previous.next = events().filter(|&t| t > newest).min();
            }
        }
        pause.newest = events().max();
        if pause.cont.is_some() {
            (self.segment, self.kept) = (self.segment + 1, 0);
        }
        self.pauses.push(pause);
    }

    /// The offset of every stretch between stops, for a counter at `counter_hz`.
    pub fn alignment(&self, counter_hz: u64) -> Alignment {
        let ns = |ticks: u64| ticks_ns(ticks, counter_hz);
        let resumed: Vec<&Pause> = self.pauses.iter().filter(|p| p.cont.is_some()).collect();
        let stood: Vec<(i64, i64)> = resumed.iter().filter_map(|p| p.stood()).collect();
        let mut lower = self.lower_bounds(counter_hz);
        propagate(&mut lower, &stood, i64::max, |bound, (least, most)| (bound + least, bound - most));
        let mut upper = vec![i64::MAX; lower.len()];
        for &(segment, host, guest) in &self.lines {
            let offset = host as i64 - guest.ns(counter_hz);
            // A guest's line cannot put the clock before what the host knows.
            if offset >= lower[segment] {
                upper[segment] = upper[segment].min(offset);
            }
        }
        self.bound_by_copies(&mut upper, counter_hz);
        propagate(&mut upper, &stood, i64::min, |bound, (least, most)| (bound + most, bound - least));
        let segments = (0..upper.len())
            .map(|k| {
                let offset = (upper[k] != i64::MAX).then_some(upper[k]);
                let pause = resumed.get(k);
                let end = pause.and_then(|p| p.newest.map(ns).or(offset.map(|o| p.stop_sent as i64 - o)));
                Segment { end, offset, error_ns: offset.map(|o| o.saturating_sub(lower[k]).max(0) as u64) }
            })
            .collect();
        Alignment { segments }
    }

    /// From below: QEMU started after the origin, and the clock stood at
    /// each stop no later than the oldest event after it.
    fn lower_bounds(&self, counter_hz: u64) -> Vec<i64> {
        let mut lower = vec![i64::MIN; self.segment + 1];
        lower[0] = 0;
        self.bound_at_stops(&mut lower, i64::max, |pause| {
            let next = ticks_ns(pause.next?, counter_hz);
            Some((pause.stop_sent as i64 - next, pause.cont.map(|(sent, _)| sent as i64 - next)))
        });
        lower
    }

    /// From above: the clock stood at each stop no earlier than the newest
    /// event copied then.
    fn bound_by_copies(&self, upper: &mut [i64], counter_hz: u64) {
        self.bound_at_stops(upper, i64::min, |pause| {
            let newest = ticks_ns(pause.newest?, counter_hz);
            Some((pause.stop_replied as i64 - newest, pause.cont.map(|(_, replied)| replied as i64 - newest)))
        });
    }

    /// Tightens the bounds of the stretches on either side of each stop
    /// with what `at` makes of it: the bound before, and after if it ended.
    fn bound_at_stops(
        &self,
        bounds: &mut [i64],
        tighter: fn(i64, i64) -> i64,
        at: impl Fn(&Pause) -> Option<(i64, Option<i64>)>,
    ) {
        let mut segment = 0;
        for pause in &self.pauses {
            if let Some((before, after)) = at(pause) {
                bounds[segment] = tighter(bounds[segment], before);
                if let Some(after) = after {
                    bounds[segment + 1] = tighter(bounds[segment + 1], after);
                }
            }
            segment += usize::from(pause.cont.is_some());
        }
    }

    /// How many console lines and stops informed the clock.
    pub fn observations(&self) -> (usize, usize) {
        (self.lines.len(), self.pauses.len())
    }
}

impl Default for GuestClock {
    fn default() -> Self {
        Self::new()
    }
}

/// Carries each stretch's bound to its neighbours across the stop between
/// them, forward then back: `across(bound, stood)` gives the bound it sets
/// on the next stretch and on the previous one; `tighter` keeps the better.
fn propagate(
    bounds: &mut [i64],
    stood: &[(i64, i64)],
    tighter: fn(i64, i64) -> i64,
    across: impl Fn(i64, (i64, i64)) -> (i64, i64),
) {
    let known = |b: i64| b != i64::MIN && b != i64::MAX;
    for k in 0..stood.len() {
        if known(bounds[k]) {
            bounds[k + 1] = tighter(bounds[k + 1], across(bounds[k], stood[k]).0);
        }
    }
    for k in (0..stood.len()).rev() {
        if known(bounds[k + 1]) {
            bounds[k] = tighter(bounds[k], across(bounds[k + 1], stood[k]).1);
        }
    }
}

/// One stretch between two stops of the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    /// Guest ns at which the clock stopped; `None` for the last stretch.
    end: Option<i64>,
    /// Host ns minus guest ns, its upper bound.
    offset: Option<i64>,
    /// How far below `offset` the true one may be.
    error_ns: Option<u64>,
}

/// Guest times on the host's clock.
#[derive(Clone, Debug, Default)]
pub struct Alignment {
    segments: Vec<Segment>,
}

impl Alignment {
    fn segment(&self, guest_ns: i64) -> Option<&Segment> {
        self.segments.iter().find(|s| s.end.is_none_or(|end| guest_ns <= end))
    }

    /// The host window, ns since the origin, that holds the guest window
    /// `from..to` (counter ticks).
    pub fn host_window(&self, from: u64, to: u64, counter_hz: u64) -> Option<(u64, u64)> {
        let place = |ticks: u64| {
            let guest = ticks_ns(ticks, counter_hz);
            let segment = self.segment(guest)?;
            Some((guest + segment.offset?, segment.error_ns?))
        };
        let ((start, error), (end, _)) = (place(from)?, place(to)?);
        Some((u64::try_from(start - error as i64).unwrap_or(0), u64::try_from(end).ok()?))
    }

    /// The largest error of any stretch's offset.
    pub fn error_ns(&self) -> Option<u64> {
        self.segments.iter().filter_map(|s| s.error_ns).max()
    }
}

/// What a wall-clock run recorded of the host.
#[derive(Clone, Debug)]
pub struct HostRecord {
    pub clock: GuestClock,
    /// The samples, or why there are none.
    pub samples: Result<Samples, String>,
}

impl HostRecord {
    /// The host's share of the guest window `release..end` (counter ticks)
    /// for the vCPU threads of `pcpus`.
    pub fn share(
        &self,
        alignment: &Alignment,
        window: (u64, u64),
        pcpus: &[u32],
        counter_hz: u64,
    ) -> Option<HostShare> {
        let samples = self.samples.as_ref().ok()?;
        let (from, to) = alignment.host_window(window.0, window.1, counter_hz)?;
        samples.over(micros(from), to.div_ceil(NS_PER_US), pcpus)
    }

    /// The report's line on how the host's share was measured.
    pub fn note(&self, alignment: &Alignment) -> String {
        let samples = match &self.samples {
            Ok(samples) => samples,
            Err(why) => return format!("host share: unknown ({why})"),
        };
        let (lines, pauses) = self.clock.observations();
        let pcpus: Vec<String> = samples.pcpus.iter().map(|p| format!("pCPU {p}")).collect();
        let error = alignment.error_ns().map_or("an unknown margin".into(), |ns| format!("{:.1} ms", ns as f64 / 1e6));
        format!(
            "host share: run delay of QEMU's main loop and of the vCPU thread(s) of {} (schedstat) and the host's \
             steal (/proc/stat), read {} times, every {} ms; each late window placed on the host's clock from {lines} \
             console line(s) and {pauses} stop(s) of the machine, never early and at most {error} late, started that \
             much earlier and widened to the samples that enclose it, so the host's share is an upper bound",
            if pcpus.is_empty() { "no pCPU".into() } else { pcpus.join(", ") },
            samples.reads(),
            SAMPLE_EVERY.as_millis(),
        )
    }
}

/// The report's line for a run in guest time, where there is no host share.
pub const GUEST_TIME_NOTE: &str = "host share: none in guest time: one host thread runs every emulated core and the \
     guests' clock counts their instructions, so the host's scheduling cannot make a guest late";

#[cfg(test)]
mod tests {
    use super::*;
    use partita_core::trace::{Event, Kind, NONE};

    #[test]
    fn schedstat_gives_its_run_delay() {
        assert_eq!(parse_run_delay("76603648 1702024 60\n"), Some(1_702_024));
        assert_eq!(parse_run_delay("76603648\n"), None);
        assert_eq!(parse_run_delay(""), None);
        assert_eq!(parse_on_cpu_and_delay("76603648 1702024 60\n"), Some((76_603_648, 1_702_024)));
        assert_eq!(parse_on_cpu_and_delay("76603648\n"), None);
    }

    #[test]
    fn proc_stat_gives_the_steal_of_its_cpu_line() {
        let stat = "cpu  2718050 671336 464497 3137970 69557 0 2477 13828 0 0\ncpu0 1 2 3 4 5 6 7 99 0 0\nintr 5";
        assert_eq!(parse_steal(stat), Some(13_828));
        assert_eq!(parse_steal("cpu0 1 2 3 4 5 6 7 99 0 0\n"), None, "only the sum over the host's cores");
        assert_eq!(parse_steal("cpu  1 2 3 4 5 6 7\n"), None, "a kernel too old to count steal");
    }

    /// Reads of the main loop's delay, the steal, the vCPU's delay and its on-CPU time.
    fn samples(reads: &[(u64, [u64; 4])]) -> Samples {
        let mut samples = Samples::new(vec![1]);
        for &(at_us, values) in reads {
            samples.push(at_us, &values);
        }
        samples.close_idle();
        samples
    }

    #[test]
    fn quiet_intervals_merge_into_one_record() {
        // Nothing grows from 1,000 to 4,000 us; then the vCPU waits 300 us.
        let s = samples(&[
            (1_000, [0; 4]),
            (2_000, [0; 4]),
            (3_000, [0; 4]),
            (4_000, [0; 4]),
            (5_000, [0, 0, 300_000, 700_000]),
        ]);
        assert_eq!(s.records, [3_000, 0, 0, 0, 0, 1_000, 0, 0, 300, 700]);
        assert_eq!((s.first_us, s.end_us, s.reads()), (1_000, 5_000, 5));
    }

    #[test]
    fn a_window_takes_the_whole_samples_that_enclose_it() {
        // The vCPU is on its core 600 us of every 1,000.
        let reads: Vec<(u64, [u64; 4])> =
            (0..=10).map(|i| (i * 1_000, [i * 10_000, i * 1_000, i * i * 1_000, i * 600_000])).collect();
        let s = samples(&reads);
        // 2,500..4,200 us overlaps the samples 2,000-3,000, 3,000-4,000 and 4,000-5,000.
        let share = s.over(2_500, 4_200, &[1]).unwrap();
        assert_eq!(share.span_ns, 3_000_000);
        assert_eq!((share.main_loop_delay_ns, share.steal_ns), (30_000, 3_000));
        assert_eq!(share.vcpu_delay_ns, (25 - 4) * 1_000, "5² - 2² us of the vCPU's delay");
        assert_eq!(share.vcpu_off_cpu_ns, 3 * 400_000, "the samples' length less the vCPU's on-CPU time");
        assert_eq!(s.over(2_000, 3_000, &[1]).unwrap().span_ns, 1_000_000, "a window on sample bounds");
        assert_eq!(s.over(500, 12_000, &[1]), None, "past the last sample");
        assert_eq!(s.over(2_500, 4_200, &[3]), None, "pCPU 3 was not sampled");
    }

    #[test]
    fn a_window_past_many_blocks_is_found_from_its_block() {
        let reads: Vec<(u64, [u64; 4])> = (0..5 * BLOCK as u64).map(|i| (i * 1_000, [0, 0, i * 2_000, 0])).collect();
        let s = samples(&reads);
        assert_eq!(s.blocks.len(), 5);
        let share = s.over(3_000_500, 3_001_000, &[1]).unwrap();
        assert_eq!((share.vcpu_delay_ns, share.span_ns), (2_000, 1_000_000));
        assert_eq!(share.vcpu_off_cpu_ns, 1_000_000, "never on its core");
    }

    #[test]
    fn on_cpu_time_read_late_leaves_no_negative_off_cpu_time() {
        // The kernel brought the running thread's on-CPU time up to date at 3,000 us: 1,500 us in one sample.
        let reads = [(1_000, [0, 0, 0, 0]), (2_000, [0, 0, 0, 0]), (3_000, [0, 0, 0, 1_500_000])];
        let s = samples(&reads);
        assert_eq!(s.over(2_000, 3_000, &[1]).unwrap().vcpu_off_cpu_ns, 0);
        assert_eq!(s.over(1_000, 3_000, &[1]).unwrap().vcpu_off_cpu_ns, 500_000);
    }

    #[test]
    fn console_lines_carry_guest_times() {
        let hm = "hm: 3 at 12345 us partition linux vcpu 1 StageTwoFault detail 0x9000000 action Suspend";
        assert_eq!(guest_time_of(true, hm), Some(GuestTime::Micros(12_345)));
        let late = "demo: late job=7 release=1000 start=1200 end=9000 dropped=0";
        assert_eq!(guest_time_of(false, late), Some(GuestTime::Ticks(9_000)));
        assert_eq!(guest_time_of(true, late), None, "Partita prints no late jobs");
        assert_eq!(guest_time_of(false, hm), None, "a guest's hm line is not Partita's");
        assert_eq!(guest_time_of(false, "demo: t=1 jobs=200"), None);
    }

    const HZ: u64 = 62_500_000;

    fn copy_with(times: &[u64]) -> Trace {
        let event = |time| Event { time, kind: Kind::El2, partition: NONE, vcpu: NONE, arg: 1 };
        Trace { counter_hz: HZ, cpus: vec![times.iter().map(|&t| event(t)).collect()], lost: vec![0] }
    }

    #[test]
    fn the_promptest_line_bounds_the_offset() {
        let mut clock = GuestClock::new();
        // The machine started 50 ms after the origin; lines come 2 and 0.3 ms after their guest time.
        clock.line_at(60_000_000, false, "[rtos] hello");
        clock.line_at(52_000_000 + 100_000_000, true, "hm: 1 at 100000 us partition rtos vcpu 0 Fault detail 0x0");
        clock.line_at(50_300_000 + 200_000_000, false, "demo: late job=1 release=1 start=2 end=12500000 dropped=0");
        let alignment = clock.alignment(HZ);
        assert_eq!(alignment.segments[0].offset, Some(50_300_000));
        assert_eq!(alignment.error_ns(), Some(50_300_000), "from below only QEMU's start");
        // A guest's bogus line cannot put the clock before the origin.
        clock.line_at(1_000, false, "demo: late job=2 release=1 start=2 end=625000000 dropped=0");
        assert_eq!(clock.alignment(HZ).segments[0].offset, Some(50_300_000));
    }

    /// A machine that started 50 ms after the origin and stood 3 ms at
    /// 1 s of guest time, with events every 0.5 ms of guest time.
    fn clock_with_a_stop() -> GuestClock {
        let mut clock = GuestClock::new();
        // The clock stops at 1 s of guest time (62,500,000 ticks), 1,050 ms of host time, 0.2 ms after an
        // event, and goes on at 1,053 ms of host time, 0.1 ms before the next one.
        let mut events: Vec<u64> = (0..2_000).map(|i| 18_750 + i * 31_250).collect();
        let stop = Pause { stop_sent: 1_049_900_000, stop_replied: 1_050_100_000, ..Pause::default() };
        clock.paused(Pause { cont: Some((1_052_900_000, 1_053_100_000)), ..stop }, Some(&copy_with(&events)));
        events.extend((0..2_000).map(|i| 62_506_250 + i * 31_250));
        let end = Pause { stop_sent: 2_052_900_000, stop_replied: 2_053_100_000, ..Pause::default() };
        clock.paused(end, Some(&copy_with(&events)));
        clock
    }

    #[test]
    fn a_stop_bounds_the_offset_from_both_sides() {
        let clock = clock_with_a_stop();
        assert_eq!((clock.pauses[0].newest, clock.pauses[0].next), (Some(62_487_500), Some(62_506_250)));
        let alignment = clock.alignment(HZ);
        let [before, after] = &alignment.segments[..] else { panic!("{alignment:?}") };
        // Truth: 50 ms before the stop, 53 ms after it. From above: the stop's reply less the newest event
        // (50.3 ms), cont's reply less it (53.3 ms); from below: the stop's and cont's sending less the next
        // event (49.8 and 52.8 ms).
        assert_eq!((before.offset, after.offset), (Some(50_300_000), Some(53_300_000)));
        assert_eq!((before.error_ns, after.error_ns), (Some(500_000), Some(500_000)));
        assert_eq!((before.end, after.end), (Some(999_800_000), None));
    }

    #[test]
    fn a_window_is_placed_on_the_host_clock_and_started_by_the_error_earlier() {
        let clock = clock_with_a_stop();
        let alignment = clock.alignment(HZ);
        // 0.5 s to 0.6 s of guest time, before the stop; 1.5 s to 1.6 s after it.
        let (from, to) = alignment.host_window(31_250_000, 37_500_000, HZ).unwrap();
        let truth = (550_000_000, 650_000_000);
        assert!(from <= truth.0 && to >= truth.1 && to - truth.1 < 1_500_000, "{from} {to}");
        let (from, to) = alignment.host_window(93_750_000, 100_000_000, HZ).unwrap();
        assert!(from <= 1_553_000_000 && to >= 1_653_000_000 && to - 1_653_000_000 < 1_500_000, "{from} {to}");
    }

    #[test]
    fn the_share_of_a_late_job_comes_from_its_host_window() {
        let clock = clock_with_a_stop();
        let alignment = clock.alignment(HZ);
        // The vCPU waited 2 ms at 600 ms of host time: inside 0.5-0.6 s of guest time (0.55-0.65 s host).
        // It is on its core 900 us of every 1,000.
        let reads: Vec<(u64, [u64; 4])> =
            (0..2_200).map(|ms| (ms * 1_000, [0, 0, if ms >= 600 { 2_000_000 } else { 0 }, ms * 900_000])).collect();
        let record = HostRecord { clock, samples: Ok(samples(&reads)) };
        let share = record.share(&alignment, (31_250_000, 37_500_000), &[1], HZ).unwrap();
        assert_eq!(share.vcpu_delay_ns, 2_000_000);
        assert_eq!(share.vcpu_off_cpu_ns, share.span_ns / 10);
        let later = record.share(&alignment, (43_750_000, 50_000_000), &[1], HZ).unwrap();
        assert_eq!(later.vcpu_delay_ns, 0, "0.7-0.8 s of guest time came after the wait");
        assert!(record.note(&alignment).contains("read 2200 times"), "{}", record.note(&alignment));
        let unknown = HostRecord { clock: GuestClock::new(), samples: Err("cannot read /proc/1/schedstat".into()) };
        assert_eq!(unknown.share(&alignment, (31_250_000, 37_500_000), &[1], HZ), None);
        assert_eq!(unknown.note(&alignment), "host share: unknown (cannot read /proc/1/schedstat)");
    }

    #[test]
    fn the_report_line_gives_each_wait_in_microseconds() {
        let share = HostShare {
            vcpu_delay_ns: 8_000_000,
            vcpu_off_cpu_ns: 9_500_000,
            main_loop_delay_ns: 120_000,
            steal_ns: 0,
            span_ns: 9,
        };
        assert_eq!(
            HostShare::describe(Some(&share)),
            "host: vCPU off-CPU 9500.0 us (waited 8000.0 us), main loop 120.0 us, steal 0.0 us"
        );
        assert_eq!(HostShare::describe(None), "host: unknown");
    }

    #[test]
    fn sampling_this_process_reads_its_own_counters() {
        let me = std::process::id();
        let sampler = Sampler::start(me, &[(0, me)], Instant::now()).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let samples = sampler.finish();
        assert!(samples.reads() >= 10, "{}", samples.reads());
        assert!(Sampler::start(u32::MAX, &[], Instant::now()).is_err(), "no such process");
    }
}
