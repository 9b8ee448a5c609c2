//! `partita run`: boots an image in QEMU and splits its one serial stream
//! into a console per partition.
//!
//! The hypervisor tags every line it forwards as `[<partition>] text`, and its
//! own lines as `[partita] text`. The host turns that back into one log per
//! partition, a hypervisor log, the untouched stream, and a live view with a
//! colored name column.
//!
//! QEMU also gets a QMP socket. Through it the supervisor learns that the
//! machine powered off (QEMU is told to pause instead of exiting then),
//! and, when the hypervisor announced an event trace, copies the trace
//! memory out of the stopped machine into `trace.bin` before QEMU quits.

use crate::attach::{self, Backlog, Others, PartitionEnd};
use crate::build::BuildOutput;
use crate::guest_console::{self, GuestConsole, GuestLine, Links, RawView, Typist};
use crate::host_share::{GuestClock, HostRecord, Sampler};
use crate::isolate::{self, Isolation};
use crate::qmp::Qmp;
use crate::status;
use crate::trace::stream::Stream;
use crate::trace::{self as host_trace, TraceMeta};
use anyhow::{ensure, Context, Result};
use partita_core::config::model::{self, System};
use partita_core::trace::Kind;
use std::fs::File;
use std::io::{IsTerminal, LineWriter, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The tag the hypervisor uses for its own lines.
pub const HYPERVISOR_TAG: &str = "partita";
const GDB_PORT: u16 = 1234;
const MIB: u64 = 1024 * 1024;
/// How often the supervisor looks at the clock and at Ctrl-C while QEMU is quiet.
const TICK: Duration = Duration::from_millis(50);
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// QEMU creates its QMP socket within milliseconds of starting.
const QMP_CONNECT_LIMIT: Duration = Duration::from_secs(5);
/// How long QEMU may take to exit after `quit` before it is killed.
const QUIT_GRACE: Duration = Duration::from_secs(5);
pub const QMP_SOCKET: &str = "qmp.sock";
const RAW_TRACE_FILE: &str = "trace.bin.raw";
/// `sun_path` holds 108 bytes, the terminating NUL included.
const SOCKET_PATH_MAX: usize = 107;

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Stop QEMU after this many seconds; `None` runs until it powers off.
    pub seconds: Option<u64>,
    /// Also stop once a partition's counter line (`demo: t=N ...`, see
    /// [`crate::status`]) reports `t` at least this: the demo's RTOS counts
    /// the seconds of its own releases, so in guest time this is guest time.
    pub guest_seconds: Option<u64>,
    /// Print every console line to stdout as it arrives.
    pub live: bool,
    /// Start QEMU halted with its gdb stub open.
    pub gdb: bool,
    /// Run QEMU with `-icount shift=N,sleep=off`: guest time counts
    /// instructions, so timing results do not depend on the host's load.
    pub icount: Option<u32>,
    /// What to type into the partitions' virtio consoles, while it runs.
    pub typist: Typist,
    /// The partition whose console the terminal's keys go to first.
    pub attach: Option<String>,
    /// Copy the trace rings out this often while the run goes, merging the
    /// copies into [`RunReport::stream`], so that a run longer than the
    /// rings hold loses no event (`partita soak`).
    pub trace_every: Option<Duration>,
    /// Give the vCPU threads of exclusive and high-criticality partitions
    /// host cores of their own and SCHED_FIFO ([`crate::isolate`]).
    pub isolate: bool,
    /// On the wall clock, sample what the host takes from the critical
    /// partitions' vCPU threads ([`crate::host_share`]); in guest time the
    /// host cannot make a guest late, and nothing is sampled.
    pub host_share: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// QEMU stopped by itself (the hypervisor powered off, or QEMU failed).
    Exited(ExitStatus),
    /// The time limit ran out and QEMU was stopped.
    TimedOut,
    /// Ctrl-C (or SIGTERM): QEMU was stopped.
    Interrupted,
    /// The partition the terminal was attached to ended, by its own
    /// power-off or not, and QEMU was stopped: the others may run on, but
    /// the run was for the attached one.
    PartitionEnded { powered_off: bool },
}

#[derive(Clone, Debug)]
pub struct RunReport {
    pub ending: Ending,
    /// The raw serial stream.
    pub console_log: PathBuf,
    pub hypervisor_log: PathBuf,
    /// Per partition, in configuration order.
    pub partition_logs: Vec<PathBuf>,
    /// Milliseconds from QEMU's start until every partition had printed a line.
    pub boot_ms: Option<u64>,
    /// Partitions that printed nothing at all.
    pub silent: Vec<String>,
    /// `trace.bin`, when the hypervisor traced and its memory was copied.
    pub trace: Option<PathBuf>,
    /// With [`RunOptions::trace_every`]: every copy of the rings merged,
    /// keeping the accelerator connections, the timed outputs and the
    /// switches of vCPUs out of their pCPU.
    pub stream: Option<Stream>,
    /// With [`RunOptions::isolate`]: the line saying how the critical
    /// vCPU threads were placed, or why isolation is off.
    pub isolation: Option<String>,
    /// With [`RunOptions::host_share`] on the wall clock: the host's samples
    /// and what the console and the stops said of the guests' clock.
    pub host: Option<HostRecord>,
    /// With [`Ending::PartitionEnded`]: which, and Partita's line about it.
    pub attached_end: Option<PartitionEnd>,
    /// With [`RunOptions::attach`]: how much the other partitions printed
    /// off the terminal, and where it is.
    pub kept_off: Option<String>,
}

/// QEMU's monitor socket, what `trace.bin` says about the machine, and
/// the partitions' own consoles.
#[derive(Clone, Debug)]
pub struct Monitor {
    pub socket: PathBuf,
    pub trace: TraceMeta,
    pub consoles: Vec<GuestConsole>,
    /// The pCPUs [`RunOptions::isolate`] isolates, with their partitions.
    pub critical: Vec<(u32, String)>,
}

impl Monitor {
    pub fn for_run(build: &BuildOutput, system: &System) -> Self {
        let trace = TraceMeta {
            config: system.name.clone(),
            cpus: system.platform.cpus,
            partitions: system.partitions.iter().map(|p| p.name.clone()).collect(),
            plans: system.plans.clone(),
            fabric_cpu: system.fabric.as_ref().map(|fabric| fabric.cpu),
        };
        Self {
            socket: qmp_socket(&build.out_dir),
            trace,
            consoles: build.guest_consoles.clone(),
            critical: isolate::critical_pcpus(system),
        }
    }
}

/// `<out_dir>/qmp.sock`, unless that path is too long for a Unix socket.
pub fn qmp_socket(out_dir: &Path) -> PathBuf {
    let socket = std::path::absolute(out_dir.join(QMP_SOCKET)).unwrap_or_else(|_| out_dir.join(QMP_SOCKET));
    if socket.as_os_str().len() <= SOCKET_PATH_MAX {
        return socket;
    }
    let name = out_dir.file_name().map_or_else(|| "run".into(), |n| n.to_string_lossy().into_owned());
    std::env::temp_dir().join(format!("partita-{}-{name}.qmp", std::process::id()))
}

/// Where the hypervisor put its trace memory, from its one `trace:` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRegion {
    pub cpus: u32,
    pub events: u32,
    pub address: u64,
    pub bytes: u64,
}

/// Reads `trace: <cpus> ring(s) of <events> events at 0x<address>, <bytes> bytes`.
pub fn parse_trace_line(text: &str) -> Option<TraceRegion> {
    let words: Vec<&str> = text.strip_prefix("trace: ")?.split_whitespace().collect();
    let [cpus, "ring(s)", "of", events, "events", "at", address, bytes, "bytes"] = words[..] else {
        return None;
    };
    let address = address.strip_suffix(',')?.strip_prefix("0x")?;
    Some(TraceRegion {
        cpus: cpus.parse().ok()?,
        events: events.parse().ok()?,
        address: u64::from_str_radix(address, 16).ok()?,
        bytes: bytes.parse().ok()?,
    })
}

/// Boots `build` in QEMU and supervises it until it ends.
pub fn run(build: &BuildOutput, system: &System, opts: &RunOptions) -> Result<RunReport> {
    let qemu = qemu_command(build, system, opts);
    if opts.gdb {
        println!("QEMU waits for gdb on :{GDB_PORT}. In another terminal:\n  {}", gdb_command_line(build));
    }
    let names: Vec<String> = system.partitions.iter().map(|p| p.name.clone()).collect();
    watch_for_interrupt();
    let monitor = Monitor::for_run(build, system);
    let report = supervise_with(qemu, &names, &build.out_dir, opts, Some(&monitor))?;
    print_summary(&report, &build.out_dir, names.len());
    Ok(report)
}

/// Flags every QEMU here shares: no display or monitor, the first UART on
/// stdio, and no default network card (whose boot ROM a minimal QEMU
/// install does not ship); a partition's card is a virtio net device its
/// configuration declares, which `-nic none` leaves in place.
pub const HEADLESS: [&str; 8] = ["-display", "none", "-monitor", "none", "-serial", "stdio", "-nic", "none"];

/// The QEMU invocation for the board with EL2 and the image as a Linux
/// Image, with its QMP socket at [`qmp_socket`].
pub fn qemu_command(build: &BuildOutput, system: &System, opts: &RunOptions) -> Command {
    let platform = &system.platform;
    let mut qemu = Command::new("qemu-system-aarch64");
    qemu.args(machine_args(&platform.board));
    qemu.args(["-smp", &platform.cpus.to_string()])
        .args(["-m", &format!("{}M", platform.ram.size.div_ceil(MIB))])
        .args(HEADLESS)
        .arg("-kernel")
        .arg(&build.image)
        .args(["-device", &image_store_loader(build)])
        .args(&build.qemu_devices)
        .arg("-qmp")
        .arg(qmp_option(&qmp_socket(&build.out_dir)));
    if opts.gdb {
        qemu.args(["-s", "-S"]);
    }
    add_icount(&mut qemu, opts.icount);
    add_extra(&mut qemu);
    qemu
}

/// The ZynqMP's Ethernet controllers (GEMs) belong to the SoC: `-nic none`
/// cannot remove them, and QEMU warns at start that each has no peer.
const ZCU102_GEMS: usize = 4;

/// QEMU's machine for `board`: `virt` with GICv3 and Cortex-A72s, or the
/// ZynqMP, whose Cortex-A53s and GIC-400 are fixed and whose UART0 is the
/// first `-serial`. Its DisplayPort's sound card makes Debian's QEMU 7.2
/// probe audio modules it lacks, with a warning each, even under
/// `QEMU_AUDIO_DRV=none`; a silent backend stops the probes. Each GEM gets
/// a user-mode network of its own that reaches nothing (`restrict=on`):
/// a peer, so no warning, and no way out for a partition.
pub fn machine_args(board: &str) -> Vec<&'static str> {
    if board == model::ZCU102 {
        let mut args = vec!["-machine", "xlnx-zcu102,virtualization=on", "-audiodev", "none,id=silent"];
        for _ in 0..ZCU102_GEMS {
            args.extend(["-nic", "user,restrict=on"]);
        }
        args
    } else {
        vec!["-machine", "virt,virtualization=on,gic-version=3", "-cpu", "cortex-a72"]
    }
}

/// `PARTITA_QEMU_EXTRA`, split at whitespace, goes last on QEMU's command
/// line: how a profile of the hypervisor is taken (`-d exec,nochain
/// -singlestep -dfilter RANGE -D FILE`) without a second way to start it.
fn add_extra(qemu: &mut Command) {
    if let Ok(extra) = std::env::var("PARTITA_QEMU_EXTRA") {
        qemu.args(extra.split_whitespace());
    }
}

/// QEMU's generic loader puts the image store where the boot table says,
/// as a board's boot loader would.
fn image_store_loader(build: &BuildOutput) -> String {
    let file = build.images.display().to_string().replace(',', ",,");
    format!("loader,file={file},addr={:#x},force-raw=on", build.images_at)
}

/// With a shift, guest time counts instructions (2^shift ns each) and does
/// not sleep while every vCPU idles, so results no longer depend on the host.
pub fn add_icount(qemu: &mut Command, shift: Option<u32>) {
    if let Some(shift) = shift {
        qemu.arg("-icount").arg(format!("shift={shift},sleep=off"));
    }
}

/// A gdb command line with the hypervisor's and every guest's symbols.
pub fn gdb_command_line(build: &BuildOutput) -> String {
    let mut guests: Vec<PathBuf> = Vec::new();
    for elf in build.guest_elfs.iter().flatten() {
        let elf = elf.canonicalize().unwrap_or_else(|_| elf.clone());
        if !guests.contains(&elf) {
            guests.push(elf);
        }
    }
    let mut line = format!("gdb-multiarch -ex 'set confirm off' -ex 'target remote :{GDB_PORT}'");
    line += &format!(" -ex {}", shell_quote(&format!("symbol-file {}", build.hypervisor_elf.display())));
    for elf in guests {
        line += &format!(" -ex {}", shell_quote(&format!("add-symbol-file {}", elf.display())));
    }
    line
}

/// QEMU splits options at commas; a doubled comma is a literal one.
pub fn qmp_option(socket: &Path) -> std::ffi::OsString {
    let path = socket.to_string_lossy().replace(',', ",,");
    format!("unix:{path},server=on,wait=off").into()
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Runs `command` as QEMU: its stdout is the serial stream. Logs go to
/// `out_dir`. QEMU never outlives this call.
pub fn supervise(command: Command, names: &[String], out_dir: &Path, opts: &RunOptions) -> Result<RunReport> {
    supervise_with(command, names, out_dir, opts, None)
}

/// [`supervise`], talking to QEMU through `monitor` when one is given: a
/// power-off ends the run, and the trace is copied out before QEMU quits.
/// A monitor that fails costs a warning and the trace, never the run.
pub fn supervise_with(
    mut command: Command,
    names: &[String],
    out_dir: &Path,
    opts: &RunOptions,
    monitor: Option<&Monitor>,
) -> Result<RunReport> {
    std::fs::create_dir_all(out_dir).with_context(|| format!("cannot create {}", out_dir.display()))?;
    let console_log = out_dir.join("console.log");
    let raw = File::create(&console_log).with_context(|| format!("cannot create {}", console_log.display()))?;
    let painter = opts.live.then(|| Painter::new(names, use_color()));
    let mut console = Console::create(names, out_dir, painter)?;
    console.clock = (opts.host_share && opts.icount.is_none()).then(GuestClock::new);
    // The status block needs the screen to itself: not while a partition's
    // console is shown raw (--attach), nor into a pipe or a file.
    if opts.live && opts.attach.is_none() && std::io::stdout().is_terminal() {
        console.show_status(status::Live::new(names, use_color()));
    }
    INTERRUPTED.store(false, Ordering::SeqCst);
    let _socket = monitor.map(|m| forget_previous_run(m, out_dir));
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if monitor.is_some() {
        // Ctrl-C must reach only us: QEMU has to live until the trace is copied.
        command.process_group(0);
    }
    let program = command.get_program().to_string_lossy().into_owned();
    let mut child = Reaper(command.spawn().with_context(|| format!("cannot start `{program}` (is it installed?)"))?);
    let deadline = opts.seconds.map(|s| console.restart_clock() + Duration::from_secs(s));
    let (lines, reader) = read_lines(&mut child.0, raw);
    let errors = collect_stderr(&mut child.0);
    let mut qmp = monitor.and_then(|m| open_monitor(m, &mut child));
    let (mut isolation, isolation_line) = match (opts.isolate, qmp.as_mut(), monitor) {
        (true, Some(qmp), Some(monitor)) => isolate(qmp, child.0.id(), &monitor.critical),
        (true, _, _) => {
            let line = "isolation: off (QEMU's monitor is unavailable, so its threads are unknown)";
            println!("{line}");
            (None, Some(line.into()))
        }
        (false, _, _) => (None, None),
    };
    let sampler = console.clock.as_ref().map(|clock| sample_host(qmp.as_mut(), monitor, child.0.id(), clock.origin()));
    let (guest_tx, guest_lines) = mpsc::channel();
    let consoles = monitor.map_or(&[][..], |m| &m.consoles[..]);
    let links = Links::open(consoles, names, guest_tx, console.raw_view());
    let others = Backlog::new(names, out_dir).shared();
    let terminal =
        opts.attach.as_ref().map(|first| attach::Terminal::start(first, names, &links, &opts.typist, &others));
    let attached = terminal.as_ref().and_then(attach::Terminal::attached);
    if let Some(first) = attached {
        console.quiet_others(others.clone());
        console.end_with(&names[first]);
    }
    let inputs = Inputs { guest_lines: &guest_lines, links: &links, typist: &opts.typist };
    let mut copies = opts.trace_every.filter(|_| monitor.is_some()).map(|every| Copies::new(every, out_dir));
    let limits = Limits { deadline, guest_seconds: opts.guest_seconds };
    let stopped = follow(&lines, &inputs, &mut console, limits, qmp.as_mut(), copies.as_mut(), isolation.as_mut())?;
    let mut trace = None;
    if stopped.is_some() {
        if let (Some(qmp), Some(monitor)) = (qmp.as_mut(), monitor) {
            take_queued_lines(&lines, &mut console)?;
            let region = console.trace_region();
            trace = region.and_then(|region| save_trace(qmp, monitor, region, out_dir, console.clock.as_mut()));
            quit(qmp, &mut child);
        }
        child.stop();
    }
    let samples = sampler.map(|sampler| sampler.map(Sampler::finish));
    // The last copy is trace.bin itself.
    if let (Some(copies), Some(path)) = (copies.as_mut(), &trace) {
        match host_trace::read_file(path) {
            Ok((_, last)) => copies.stream.add(&last),
            Err(error) => warn(&format!("the last trace copy was not merged: {error:#}")),
        }
    }
    drop(qmp);
    let closed = drain(&lines, &mut console)?;
    links.close();
    while let Ok(line) = guest_lines.try_recv() {
        console.guest_line(&line)?;
    }
    console.finish_status();
    let clock = console.clock.take();
    let attached_end = console.ended.take();
    let now_attached = *console.raw.lock().unwrap_or_else(|p| p.into_inner());
    let kept_off =
        attached.and(now_attached).and_then(|at| others.lock().unwrap_or_else(|p| p.into_inner()).summary(at));
    let status = child.0.wait().context("cannot wait for QEMU")?;
    let ending = match stopped {
        Some(Stop::PoweredOff) => Ending::Exited(if status.success() { status } else { ExitStatus::default() }),
        Some(Stop::TimedOut) => Ending::TimedOut,
        Some(Stop::Interrupted) => Ending::Interrupted,
        Some(Stop::PartitionEnded) => {
            Ending::PartitionEnded { powered_off: attached_end.as_ref().is_some_and(|end| end.powered_off) }
        }
        None => ended_by_itself(status),
    };
    if closed {
        reader
            .join()
            .map_err(|_| anyhow::anyhow!("the console reader panicked"))?
            .context("cannot write console.log")?;
        if ending != Ending::Interrupted {
            show_errors(errors);
        }
    }
    let mut report = console.report(ending, console_log);
    report.trace = trace;
    report.stream = copies.map(|c| c.stream);
    report.isolation = isolation_line;
    report.host = clock.zip(samples).map(|(clock, samples)| HostRecord { clock, samples });
    report.attached_end = attached_end;
    report.kept_off = kept_off;
    drop(terminal);
    Ok(report)
}

/// The copies of the trace rings taken while the run goes.
struct Copies {
    every: Duration,
    next: Instant,
    raw: PathBuf,
    stream: Stream,
}

impl Copies {
    fn new(every: Duration, out_dir: &Path) -> Self {
        let raw = std::path::absolute(out_dir.join(RAW_TRACE_FILE)).unwrap_or_else(|_| out_dir.join(RAW_TRACE_FILE));
        Self {
            every,
            next: Instant::now() + every,
            raw,
            // A late job's window is set against its pCPU's EL2 stretches
            // and the interrupts it was given.
            stream: Stream::keeping(&[
                Kind::AccelConnect,
                Kind::TimedIo,
                Kind::TimedIoLate,
                Kind::VcpuOut,
                Kind::El2,
                Kind::IrqInjected,
            ]),
        }
    }

    /// Stops the machine, copies the rings, lets it go on, merges the copy.
    /// The guests' counter is QEMU's virtual clock, which stands still
    /// while the machine is stopped: no guest sees the pause.
    /// The stop's times go to `clock`, which reads the guests' clock from them.
    fn take(&mut self, qmp: &mut Qmp, region: TraceRegion, clock: Option<&mut GuestClock>) -> Result<()> {
        self.next = Instant::now() + self.every;
        let stop = Instant::now();
        qmp.stop()?;
        let stopped = Instant::now();
        let saved = read_rings(qmp, region, &self.raw);
        let resume = Instant::now();
        qmp.execute("cont", None, QUIT_GRACE)?;
        let resumed = Instant::now();
        let copied = saved.and_then(|ring| {
            let _ = std::fs::remove_file(&self.raw);
            partita_core::trace::decode(&ring)
                .map_err(|error| anyhow::anyhow!("the copied memory is not a trace: {error:?}"))
        });
        if let Some(clock) = clock {
            clock.stopped((stop, stopped), Some((resume, resumed)), copied.as_ref().ok());
        }
        self.stream.add(&copied?);
        Ok(())
    }
}

/// The partitions' own consoles: what they print, and what is typed.
struct Inputs<'a> {
    guest_lines: &'a Receiver<GuestLine>,
    links: &'a Links,
    typist: &'a Typist,
}

/// Why the supervisor ended a run that QEMU had not ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// QMP reported SHUTDOWN: the machine powered off and QEMU paused.
    PoweredOff,
    TimedOut,
    Interrupted,
    /// The partition the terminal is attached to ended.
    PartitionEnded,
}

/// Removes the socket when the run ends, on every path.
struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A trace left by an earlier run must not pass for this run's.
fn forget_previous_run(monitor: &Monitor, out_dir: &Path) -> SocketFile {
    for stale in [host_trace::TRACE_FILE, RAW_TRACE_FILE] {
        let _ = std::fs::remove_file(out_dir.join(stale));
    }
    let _ = std::fs::remove_file(&monitor.socket);
    SocketFile(monitor.socket.clone())
}

fn warn(text: &str) {
    eprintln!("warning: {text}");
}

/// Connects to QEMU's monitor and makes a power-off pause the machine.
fn open_monitor(monitor: &Monitor, child: &mut Reaper) -> Option<Qmp> {
    let deadline = Instant::now() + QMP_CONNECT_LIMIT;
    let mut qmp = match Qmp::connect_when_ready(&monitor.socket, deadline, || child.has_exited()) {
        Ok(qmp) => qmp,
        Err(error) => {
            // A QEMU that died at once is reported as such; its socket is beside the point.
            if !child.has_exited() {
                warn(&format!("QEMU's monitor is unavailable, so no trace can be collected: {error:#}"));
            }
            return None;
        }
    };
    if let Err(error) = qmp.pause_on_shutdown() {
        warn(&format!("QEMU will exit at power-off, taking the trace with it: {error:#}"));
    }
    Some(qmp)
}

/// Places QEMU's threads, printing the one line that says how or why not.
/// Isolation that is refused never stops the run.
fn isolate(qmp: &mut Qmp, qemu: u32, critical: &[(u32, String)]) -> (Option<Isolation>, Option<String>) {
    let (isolation, line) = match Isolation::apply(qmp, qemu, critical) {
        Ok(isolation) => {
            let line = isolation.summary.clone();
            (Some(isolation), line)
        }
        Err(why) => (None, format!("isolation: off ({why})")),
    };
    println!("{line}");
    (isolation, Some(line))
}

/// Starts sampling the host's share: QEMU's main loop and the vCPU threads
/// of the pCPUs isolation would isolate. `Err` says why it cannot; the
/// run goes on without.
fn sample_host(
    qmp: Option<&mut Qmp>,
    monitor: Option<&Monitor>,
    qemu: u32,
    origin: Instant,
) -> Result<Sampler, String> {
    let (Some(qmp), Some(monitor)) = (qmp, monitor) else {
        let why = "QEMU's monitor is unavailable, so its threads are unknown";
        warn(&format!("the host's share is unknown: {why}"));
        return Err(why.into());
    };
    let started = isolate::vcpu_threads(qmp).map_err(|e| format!("{e:#}")).and_then(|threads| {
        let watched: Vec<(u32, u32)> =
            threads.into_iter().filter(|(cpu, _)| monitor.critical.iter().any(|(c, _)| c == cpu)).collect();
        Sampler::start(qemu, &watched, origin)
    });
    if let Err(why) = &started {
        warn(&format!("the host's share is unknown: {why}"));
    }
    started
}

/// Lines already read must be seen before deciding whether there is a trace.
fn take_queued_lines(lines: &Receiver<String>, console: &mut Console) -> Result<()> {
    while let Ok(line) = lines.try_recv() {
        console.line(&line)?;
    }
    Ok(())
}

/// Stops the machine and writes `trace.bin`; on failure, warns and returns `None`.
fn save_trace(
    qmp: &mut Qmp,
    monitor: &Monitor,
    region: TraceRegion,
    out_dir: &Path,
    clock: Option<&mut GuestClock>,
) -> Option<PathBuf> {
    match copy_trace(qmp, monitor, region, out_dir, clock) {
        Ok(path) => Some(path),
        Err(error) => {
            warn(&format!("the trace was not collected: {error:#}"));
            None
        }
    }
}

/// The trace rings' memory of the stopped machine: QEMU saves it into
/// `raw`, which is read back whole.
fn read_rings(qmp: &mut Qmp, region: TraceRegion, raw: &Path) -> Result<Vec<u8>> {
    qmp.pmemsave(region.address, region.bytes, raw)?;
    let ring = std::fs::read(raw).with_context(|| format!("cannot read {}", raw.display()))?;
    ensure!(ring.len() as u64 == region.bytes, "QEMU saved {} of {} bytes", ring.len(), region.bytes);
    Ok(ring)
}

fn copy_trace(
    qmp: &mut Qmp,
    monitor: &Monitor,
    region: TraceRegion,
    out_dir: &Path,
    clock: Option<&mut GuestClock>,
) -> Result<PathBuf> {
    let stop = Instant::now();
    qmp.stop()?;
    let stopped = Instant::now();
    let raw_path = std::path::absolute(out_dir.join(RAW_TRACE_FILE)).context("no absolute path for the trace")?;
    let ring = read_rings(qmp, region, &raw_path)?;
    let decoded = partita_core::trace::decode(&ring);
    if let Some(clock) = clock {
        clock.stopped((stop, stopped), None, decoded.as_ref().ok());
    }
    if let Err(error) = decoded {
        anyhow::bail!(
            "the memory at {:#x} is not a trace ({error:?}); it is left in {}",
            region.address,
            raw_path.display()
        );
    }
    let path = out_dir.join(host_trace::TRACE_FILE);
    std::fs::write(&path, host_trace::encode_file(&monitor.trace, &ring))
        .with_context(|| format!("cannot write {}", path.display()))?;
    let _ = std::fs::remove_file(&raw_path);
    Ok(path)
}

/// Asks QEMU to exit, and gives it a moment; the caller kills it if it stays.
fn quit(qmp: &mut Qmp, child: &mut Reaper) {
    if let Err(error) = qmp.quit() {
        warn(&format!("QEMU did not take `quit`, so it is killed: {error:#}"));
        return;
    }
    child.wait_for_exit(QUIT_GRACE);
}

/// A Ctrl-C at the terminal reaches QEMU too, which then quits on its own;
/// by the time it has, our handler has long raised the flag.
fn ended_by_itself(status: ExitStatus) -> Ending {
    if INTERRUPTED.load(Ordering::SeqCst) {
        Ending::Interrupted
    } else {
        Ending::Exited(status)
    }
}

/// Feeds lines to the console until QEMU closes its output, the machine
/// powers off, the time runs out, or the user interrupts; returns why it
/// stopped early, if it did.
/// When a run stops by itself: the host's time, or the guests' seconds.
#[derive(Clone, Copy)]
struct Limits {
    deadline: Option<Instant>,
    guest_seconds: Option<u64>,
}

fn follow(
    lines: &Receiver<String>,
    inputs: &Inputs,
    console: &mut Console,
    limits: Limits,
    mut qmp: Option<&mut Qmp>,
    mut copies: Option<&mut Copies>,
    mut isolation: Option<&mut Isolation>,
) -> Result<Option<Stop>> {
    loop {
        if let Some(isolation) = isolation.as_deref_mut() {
            isolation.tick();
        }
        match lines.recv_timeout(TICK) {
            Ok(line) => console.line(&line)?,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
        }
        while let Ok(line) = inputs.guest_lines.try_recv() {
            console.guest_line(&line)?;
        }
        if console.ended.is_some() {
            return Ok(Some(Stop::PartitionEnded));
        }
        inputs.links.deliver(inputs.typist);
        console.tick_status();
        if INTERRUPTED.load(Ordering::SeqCst) || inputs.typist.has_hung_up() {
            return Ok(Some(Stop::Interrupted));
        }
        if limits.deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Some(Stop::TimedOut));
        }
        if limits.guest_seconds.is_some_and(|limit| console.guest_seconds.is_some_and(|t| t >= limit)) {
            return Ok(Some(Stop::TimedOut));
        }
        if qmp.as_deref_mut().is_some_and(|qmp| qmp.take_event("SHUTDOWN")) {
            return Ok(Some(Stop::PoweredOff));
        }
        if let (Some(copies), Some(qmp), Some(region)) =
            (copies.as_deref_mut(), qmp.as_deref_mut(), console.trace_region())
        {
            if Instant::now() >= copies.next {
                if let Err(error) = copies.take(qmp, region, console.clock.as_mut()) {
                    warn(&format!("a copy of the trace failed: {error:#}"));
                }
            }
        }
    }
}

/// Logs what QEMU printed before it stopped. A stray process that inherited
/// the serial pipe may keep it open, so this waits only briefly; returns
/// whether the stream really ended.
fn drain(lines: &Receiver<String>, console: &mut Console) -> Result<bool> {
    loop {
        match lines.recv_timeout(DRAIN_GRACE) {
            Ok(line) => console.line(&line)?,
            Err(RecvTimeoutError::Disconnected) => return Ok(true),
            Err(RecvTimeoutError::Timeout) => return Ok(false),
        }
    }
}

/// Kills and reaps the child on every path out, errors and panics included.
struct Reaper(Child);

impl Reaper {
    fn stop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
    }

    fn has_exited(&mut self) -> bool {
        !matches!(self.0.try_wait(), Ok(None))
    }

    fn wait_for_exit(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.has_exited() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.stop();
        let _ = self.0.wait();
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Ends the run as Ctrl-C would: the logs are kept, QEMU is stopped.
pub fn request_stop() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Ctrl-C must stop QEMU and still leave the logs, so it only raises a flag.
fn watch_for_interrupt() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
    });
}

/// Copies the raw stream to `raw` and sends it on line by line.
fn read_lines(child: &mut Child, raw: File) -> (Receiver<String>, JoinHandle<std::io::Result<()>>) {
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || pump(stdout, raw, tx));
    (rx, reader)
}

/// What follows a last line that had no newline when the stream ended:
/// Partita ends every line it writes, so such a line was cut short, most
/// often by the time limit stopping QEMU halfway through writing it. The
/// mark keeps it from passing for whole in a log, or in a test's reading.
pub const CUT_SHORT: &str = " [cut short: the output ended here]";

/// Splits a byte stream into lines; a last line without a newline still
/// counts, marked [`CUT_SHORT`].
pub fn pump(mut input: impl Read, mut raw: impl Write, lines: Sender<String>) -> std::io::Result<()> {
    let mut splitter = guest_console::LineSplitter::default();
    let mut buffer = [0u8; 4096];
    loop {
        let n = match input.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        raw.write_all(&buffer[..n])?;
        raw.flush()?;
        for line in splitter.feed(&buffer[..n]) {
            let _ = lines.send(line);
        }
    }
    if let Some(line) = splitter.rest() {
        let _ = lines.send(line + CUT_SHORT);
    }
    Ok(())
}

fn collect_stderr(child: &mut Child) -> JoinHandle<String> {
    let mut stderr = child.stderr.take().expect("stderr is piped");
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    })
}

fn show_errors(errors: JoinHandle<String>) {
    let text = errors.join().unwrap_or_default();
    for line in qemu_messages(&text) {
        eprintln!("qemu: {line}");
    }
}

/// What QEMU 7.2 says of the ZynqMP's DisplayPort sound card once a silent
/// backend stops its probes: the card has no `audiodev` property to name
/// the backend with (QEMU 8.2 adds one), so no option removes the line,
/// and it says nothing about the run.
const SOUND_CARD_WITHOUT_AUDIODEV: &str = "Device xlnx_dp.audio: audiodev default parameter is deprecated";

/// The lines of QEMU's stderr worth showing after a run.
pub fn qemu_messages(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|line| !line.trim().is_empty() && !line.contains(SOUND_CARD_WITHOUT_AUDIODEV)).collect()
}

/// Where a console line belongs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Partition(usize),
    Hypervisor,
}

/// Reads the `[tag] text` protocol.
#[derive(Clone, Debug)]
pub struct Splitter {
    names: Vec<String>,
}

impl Splitter {
    pub fn new(names: &[String]) -> Self {
        Self { names: names.to_vec() }
    }

    /// Untagged lines and unknown tags stay whole in the hypervisor's log,
    /// so nothing the machine prints is lost.
    pub fn split<'a>(&self, line: &'a str) -> (Source, &'a str) {
        let Some((tag, text)) = line.strip_prefix('[').and_then(|rest| rest.split_once(']')) else {
            return (Source::Hypervisor, line);
        };
        let text = text.strip_prefix(' ').unwrap_or(text);
        if tag == HYPERVISOR_TAG {
            return (Source::Hypervisor, text);
        }
        match self.names.iter().position(|name| name == tag) {
            Some(index) => (Source::Partition(index), text),
            None => (Source::Hypervisor, line),
        }
    }
}

/// Formats the live view: a padded, colored name column.
#[derive(Clone, Debug)]
pub struct Painter {
    names: Vec<String>,
    width: usize,
    color: bool,
}

/// Distinct foreground colors, cycled when there are more partitions.
const PALETTE: [&str; 6] = ["36", "33", "35", "32", "34", "31"];

impl Painter {
    pub fn new(names: &[String], color: bool) -> Self {
        let width = names.iter().map(|n| n.chars().count()).chain([HYPERVISOR_TAG.len()]).max().unwrap_or(0);
        Self { names: names.to_vec(), width, color }
    }

    pub fn format(&self, source: Source, text: &str) -> String {
        let (name, style) = match source {
            Source::Partition(i) => (self.names[i].as_str(), PALETTE[i % PALETTE.len()]),
            Source::Hypervisor => (HYPERVISOR_TAG, "2"),
        };
        let label = format!("{name:<width$}", width = self.width);
        if self.color {
            format!("\x1b[{style}m{label}\x1b[0m│ {text}")
        } else {
            format!("{label}│ {text}")
        }
    }
}

/// Colors only for a person at a terminal who has not opted out.
pub fn use_color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The file of a run's health-monitor entries, beside the other logs.
pub const HM_LOG: &str = "hm.log";
/// How the hypervisor starts a health-monitor line.
const HM_PREFIX: &str = "hm: ";

/// Per-partition and hypervisor logs, the live view and the boot clock.
pub struct Console {
    splitter: Splitter,
    names: Vec<String>,
    partition_logs: Vec<(PathBuf, LineWriter<File>)>,
    hypervisor_log: (PathBuf, LineWriter<File>),
    /// The health monitor's entries (the hypervisor's `hm:` lines), alone.
    hm_log: (PathBuf, LineWriter<File>),
    painter: Option<Painter>,
    seen: Vec<bool>,
    started: Instant,
    boot_ms: Option<u64>,
    trace: Option<TraceRegion>,
    /// The attached partition, whose console shows raw on the terminal.
    raw: RawView,
    /// The status lines at the bottom of the terminal, when shown.
    status: Option<status::Live>,
    /// What the lines say of the guests' clock, when the host's share is sampled.
    clock: Option<GuestClock>,
    /// The largest `t` a partition's counter line reported.
    guest_seconds: Option<u64>,
    /// While attached: where the lines the terminal leaves out go.
    others: Option<Others>,
    /// While attached: the partition whose end ends the run, and its end.
    ends_with: Option<String>,
    ended: Option<PartitionEnd>,
}

impl Console {
    /// Creates every log up front, so a partition that never prints still
    /// leaves an (empty) log behind.
    pub fn create(names: &[String], out_dir: &Path, painter: Option<Painter>) -> Result<Self> {
        let open = |file: String| -> Result<(PathBuf, LineWriter<File>)> {
            let path = out_dir.join(file);
            let handle = File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
            Ok((path, LineWriter::new(handle)))
        };
        Ok(Self {
            splitter: Splitter::new(names),
            names: names.to_vec(),
            partition_logs: names.iter().map(|n| open(format!("{n}.log"))).collect::<Result<_>>()?,
            hypervisor_log: open("hypervisor.log".to_string())?,
            hm_log: open(HM_LOG.to_string())?,
            painter,
            seen: vec![false; names.len()],
            started: Instant::now(),
            boot_ms: None,
            trace: None,
            raw: RawView::default(),
            status: None,
            clock: None,
            guest_seconds: None,
            others: None,
            ends_with: None,
            ended: None,
        })
    }

    /// From now on, only the attached partition's lines and Partita's
    /// reach the terminal; the rest go to `others` (and the logs).
    pub fn quiet_others(&mut self, others: Others) {
        self.others = Some(others);
    }

    /// Watches Partita's lines for partition `name`'s end.
    pub fn end_with(&mut self, name: &str) {
        self.ends_with = Some(name.to_string());
    }

    /// The partition a line is about when the terminal should leave it
    /// out: another partition's own line, or Partita's about others only.
    fn quiet_about(&self, source: Source, text: &str) -> Option<usize> {
        self.others.as_ref()?;
        let attached = (*self.raw.lock().unwrap_or_else(|p| p.into_inner()))?;
        match source {
            Source::Partition(i) => (i != attached).then_some(i),
            Source::Hypervisor => {
                let named = attach::named(text, &self.names);
                named.first().copied().filter(|_| !named.contains(&attached))
            }
        }
    }

    /// Shows a line on the live view, or keeps it off the terminal.
    fn show_or_keep(&mut self, source: Source, text: &str) {
        let shown = self.painter.as_ref().map(|painter| painter.format(source, text));
        match (self.quiet_about(source, text), &self.others) {
            (Some(partition), Some(others)) => {
                let shown = shown.unwrap_or_else(|| text.to_string());
                others.lock().unwrap_or_else(|p| p.into_inner()).keep(partition, text, shown);
            }
            _ => {
                if let Some(shown) = shown {
                    self.show(&shown);
                }
            }
        }
    }

    /// Keeps a status line per partition below the live view.
    pub fn show_status(&mut self, live: status::Live) {
        self.status = Some(live);
    }

    fn tick_status(&mut self) {
        if let Some(live) = &mut self.status {
            live.tick(&mut std::io::stdout().lock());
        }
    }

    /// The last status stays on the screen as ordinary lines.
    fn finish_status(&mut self) {
        if let Some(live) = &mut self.status {
            live.finish(&mut std::io::stdout().lock());
        }
        self.status = None;
    }

    /// Prints a live-view line above the status block.
    fn show(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        if let Some(live) = &mut self.status {
            live.erase(&mut out);
        }
        // A closed stdout (say, piped into `head`) must not stop the logs.
        let _ = writeln!(out, "{text}");
        if let Some(live) = &mut self.status {
            live.draw(&mut out);
        }
    }

    /// Routes one line (already without `\r` and `\n`).
    pub fn line(&mut self, line: &str) -> Result<()> {
        let (source, text) = self.splitter.split(line);
        if let Some(clock) = &mut self.clock {
            clock.line(source == Source::Hypervisor, text);
        }
        if let Some(live) = &mut self.status {
            match source {
                Source::Partition(i) => live.guest_text(i, text),
                Source::Hypervisor => live.hypervisor_text(text),
            }
        }
        let (path, log) = match source {
            Source::Partition(i) => {
                self.mark_seen(i);
                self.note_guest_seconds(text);
                &mut self.partition_logs[i]
            }
            Source::Hypervisor => {
                self.trace = parse_trace_line(text).or(self.trace);
                if let (Some(name), None) = (&self.ends_with, &self.ended) {
                    self.ended = attach::end_of(name, text);
                }
                if let Some(entry) = text.strip_prefix(HM_PREFIX) {
                    let (path, log) = &mut self.hm_log;
                    writeln!(log, "{entry}").with_context(|| format!("cannot write {}", path.display()))?;
                }
                &mut self.hypervisor_log
            }
        };
        writeln!(log, "{text}").with_context(|| format!("cannot write {}", path.display()))?;
        self.show_or_keep(source, text);
        Ok(())
    }

    fn note_guest_seconds(&mut self, text: &str) {
        let reported = status::parse_counters(text)
            .and_then(|pairs| pairs.into_iter().find(|(key, _)| key == "t"))
            .and_then(|(_, value)| value.parse::<u64>().ok());
        if let Some(t) = reported {
            self.guest_seconds = Some(self.guest_seconds.map_or(t, |seen| seen.max(t)));
        }
    }

    /// A line of a partition's own console: into its log, and onto the live
    /// view unless the terminal shows that console raw.
    pub fn guest_line(&mut self, line: &GuestLine) -> Result<()> {
        let i = line.partition;
        self.mark_seen(i);
        let (path, log) = &mut self.partition_logs[i];
        writeln!(log, "{}", line.text).with_context(|| format!("cannot write {}", path.display()))?;
        if let Some(live) = &mut self.status {
            live.guest_text(i, &line.text);
        }
        let shown_raw = *self.raw.lock().unwrap_or_else(|p| p.into_inner()) == Some(i);
        if !shown_raw {
            self.show_or_keep(Source::Partition(i), &line.text);
        }
        Ok(())
    }

    pub fn raw_view(&self) -> RawView {
        self.raw.clone()
    }

    /// Where the hypervisor said its trace memory is, if it traces.
    pub fn trace_region(&self) -> Option<TraceRegion> {
        self.trace
    }

    /// Boot time counts from QEMU's start, not from when the logs were opened.
    fn restart_clock(&mut self) -> Instant {
        self.started = Instant::now();
        self.started
    }

    fn mark_seen(&mut self, index: usize) {
        self.seen[index] = true;
        if self.boot_ms.is_none() && self.seen.iter().all(|&s| s) {
            self.boot_ms = Some(self.started.elapsed().as_millis() as u64);
        }
    }

    pub fn report(self, ending: Ending, console_log: PathBuf) -> RunReport {
        let silent = self.names.iter().zip(&self.seen).filter(|(_, &seen)| !seen).map(|(n, _)| n.clone()).collect();
        RunReport {
            ending,
            console_log,
            hypervisor_log: self.hypervisor_log.0,
            partition_logs: self.partition_logs.into_iter().map(|(path, _)| path).collect(),
            boot_ms: self.boot_ms,
            silent,
            trace: None,
            stream: None,
            isolation: None,
            host: None,
            attached_end: None,
            kept_off: None,
        }
    }
}

pub fn print_summary(report: &RunReport, out_dir: &Path, partitions: usize) {
    let how = match report.ending {
        Ending::Exited(status) if status.success() => "QEMU powered off".to_string(),
        Ending::Exited(status) => format!("QEMU failed ({status})"),
        Ending::TimedOut => "time limit reached, QEMU stopped".to_string(),
        Ending::Interrupted => "interrupted, QEMU stopped".to_string(),
        Ending::PartitionEnded { .. } => {
            let line = report.attached_end.as_ref().map_or("the attached partition ended", |end| &end.line);
            format!("{line}: the run ends with the attached partition, QEMU stopped")
        }
    };
    println!("{how}");
    if let Some(kept_off) = &report.kept_off {
        println!("{kept_off}");
    }
    match report.boot_ms {
        Some(ms) => println!("all {partitions} partitions running after {ms} ms"),
        None if partitions > 0 => println!("partitions that printed nothing: {}", report.silent.join(", ")),
        None => {}
    }
    println!("logs: {}/ (console.log, hypervisor.log, <partition>.log)", out_dir.display());
    if report.trace.is_some() {
        let shown = crate::paths::shown(out_dir);
        println!("trace: {}/trace.bin; draw it with `partita trace {}`", out_dir.display(), shown.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zcu102_gets_a_silent_sound_card_and_a_closed_peer_for_each_gem() {
        let args = machine_args(model::ZCU102);
        assert_eq!(args[..4], ["-machine", "xlnx-zcu102,virtualization=on", "-audiodev", "none,id=silent"]);
        let peers = args.windows(2).filter(|pair| pair == &["-nic", "user,restrict=on"]).count();
        assert_eq!(peers, ZCU102_GEMS);
        let virt = machine_args("qemu-virt");
        assert!(!virt.contains(&"-nic") && !virt.contains(&"-audiodev"), "{virt:?}");
    }

    #[test]
    fn only_the_unsettable_sound_card_line_is_left_out_of_qemus_messages() {
        let stderr = "audio: Device xlnx_dp.audio: audiodev default parameter is deprecated, please specify \
                      audiodev=silent\n\nqemu-system-aarch64: warning: nic cadence_gem.0 has no peer\n";
        assert_eq!(qemu_messages(stderr), ["qemu-system-aarch64: warning: nic cadence_gem.0 has no peer"]);
    }

    #[test]
    fn the_trace_line_gives_the_region() {
        let line = "trace: 4 ring(s) of 16384 events at 0x40a00000, 1048896 bytes";
        let region = TraceRegion { cpus: 4, events: 16384, address: 0x40a0_0000, bytes: 1_048_896 };
        assert_eq!(parse_trace_line(line), Some(region));
        for other in [
            "trace: 4 ring(s) of 16384 events at 40a00000, 1048896 bytes",
            "trace: 4 ring(s) of many events at 0x40a00000, 1048896 bytes",
            "trace: 4 ring(s) of 16384 events at 0x40a00000, 1048896",
            "tracing: 4 ring(s) of 16384 events at 0x40a00000, 1048896 bytes",
            "[rtos] trace: 4 ring(s) of 16384 events at 0x40a00000, 1048896 bytes",
        ] {
            assert_eq!(parse_trace_line(other), None, "{other}");
        }
    }

    #[test]
    fn only_partitas_own_trace_line_counts() {
        let dir = std::env::temp_dir().join(format!("partita-run-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut console = Console::create(&["rtos".to_string()], &dir, None).unwrap();
        console.line("[rtos] trace: 1 ring(s) of 64 events at 0x1000, 1152 bytes").unwrap();
        assert_eq!(console.trace_region(), None, "a guest cannot make the host read memory");
        console.line("[partita] trace: 1 ring(s) of 64 events at 0x2000, 1152 bytes").unwrap();
        assert_eq!(console.trace_region().map(|r| r.address), Some(0x2000));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_partition_s_counter_line_gives_the_guests_seconds() {
        let dir = std::env::temp_dir().join(format!("partita-run-seconds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut console = Console::create(&["rtos".to_string()], &dir, None).unwrap();
        console.line("[partita] demo: t=9 jobs=1").unwrap();
        assert_eq!(console.guest_seconds, None, "only a partition's line counts");
        console.line("[rtos] demo: t=4 jobs=800").unwrap();
        console.line("[rtos] demo: t=3 tio_done=600").unwrap();
        assert_eq!(console.guest_seconds, Some(4), "the largest seen");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_socket_path_fits_a_unix_socket() {
        assert_eq!(qmp_socket(Path::new("/repo/out/demo")), Path::new("/repo/out/demo/qmp.sock"));
        let deep = PathBuf::from("/").join("d".repeat(120)).join("demo");
        let socket = qmp_socket(&deep);
        assert!(socket.starts_with(std::env::temp_dir()) && socket.as_os_str().len() <= SOCKET_PATH_MAX);
        assert_eq!(qmp_option(Path::new("/a,b/qmp.sock")), "unix:/a,,b/qmp.sock,server=on,wait=off");
    }
}
