//! The QMP client against a fake QEMU monitor on a Unix socket, and the
//! supervisor collecting a trace through it from a shell script that plays
//! QEMU's console.

mod host_fixtures;

use host_fixtures::scratch;
use partita::qmp::Qmp;
use partita::run::{supervise_with, Ending, Monitor, RunOptions};
use partita::trace::{self, TraceMeta};
use partita_core::trace::{words, Event, Kind, TraceBuffer, NONE};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Guest-physical address of the fake machine's memory.
const BASE: u64 = 0x4000_1000;

/// How the fake monitor behaves.
#[derive(Clone, Default)]
struct Script {
    /// Never send anything, not even the greeting.
    silent: bool,
    /// After answering this command, answer nothing more.
    mute_after: Option<&'static str>,
    /// After answering this command, close the connection.
    hang_up_after: Option<&'static str>,
    /// Answer this command with an error.
    fail: Option<&'static str>,
    /// Send SHUTDOWN after the answer to this command, once this file
    /// holds `shutdown_when` (the fake console printed its last line).
    shutdown_after: Option<&'static str>,
    shutdown_when: Option<(PathBuf, &'static str)>,
    /// The machine's memory at [`BASE`].
    memory: Vec<u8>,
    /// Killed when `quit` arrives, as QEMU would exit.
    pid_file: Option<PathBuf>,
}

/// Serves one connection; returns the commands it received.
fn serve(listener: UnixListener, script: Script) -> JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut writer = stream.try_clone().unwrap();
        let mut seen = Vec::new();
        if script.silent {
            std::thread::sleep(Duration::from_secs(2));
            return seen;
        }
        send(&mut writer, json!({ "QMP": { "version": {}, "capabilities": [] } }));
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            let request: Value = serde_json::from_str(&line).unwrap();
            let command = request["execute"].as_str().unwrap().to_string();
            seen.push(command.clone());
            if !answer(&mut writer, &script, &command, &request["arguments"]) {
                break;
            }
        }
        seen
    })
}

fn send(writer: &mut UnixStream, message: Value) {
    let _ = writer.write_all(format!("{message}\r\n").as_bytes());
}

/// Answers one command; false ends the conversation.
fn answer(writer: &mut UnixStream, script: &Script, command: &str, arguments: &Value) -> bool {
    if script.fail == Some(command) {
        send(writer, json!({ "error": { "class": "GenericError", "desc": format!("{command} refused") } }));
        return true;
    }
    if command == "pmemsave" {
        save(script, arguments);
    }
    if command == "query-cpus-fast" {
        send(writer, json!({ "return": cpus(script) }));
        return true;
    }
    send(writer, json!({ "return": {} }));
    if script.shutdown_after == Some(command) {
        if let Some((file, text)) = &script.shutdown_when {
            wait_for_text(file, text);
        }
        send(writer, json!({ "event": "SHUTDOWN", "data": { "guest": true, "reason": "guest-shutdown" } }));
    }
    if command == "quit" {
        if let Some(pid) = &script.pid_file {
            let pid = std::fs::read_to_string(pid).unwrap();
            Command::new("kill").arg(pid.trim()).status().unwrap();
        }
        return false;
    }
    if script.mute_after == Some(command) {
        std::thread::sleep(Duration::from_secs(3));
        return false;
    }
    script.hang_up_after != Some(command)
}

/// One vCPU, whose thread is the fake QEMU itself.
fn cpus(script: &Script) -> Value {
    let pid = script.pid_file.as_ref().map(|file| std::fs::read_to_string(file).unwrap());
    let pid: u64 = pid.as_deref().unwrap_or("0").trim().parse().unwrap();
    json!([{ "cpu-index": 0, "thread-id": pid, "qom-path": "/machine/unattached/device[0]", "target": "aarch64" }])
}

fn save(script: &Script, arguments: &Value) {
    let from = (arguments["val"].as_u64().unwrap() - BASE) as usize;
    let size = arguments["size"].as_u64().unwrap() as usize;
    std::fs::write(arguments["filename"].as_str().unwrap(), &script.memory[from..from + size]).unwrap();
}

fn wait_for_text(file: &Path, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(file).unwrap_or_default().contains(text) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn listen(dir: &Path) -> (PathBuf, UnixListener) {
    let socket = dir.join("qmp.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    (socket, listener)
}

// --- The client ------------------------------------------------------------

#[test]
fn client_stops_saves_and_quits() {
    let dir = scratch("qmp-client");
    let (socket, listener) = listen(&dir);
    let memory: Vec<u8> = (0..=255).collect();
    let server = serve(listener, Script { shutdown_after: Some("qmp_capabilities"), memory, ..Script::default() });
    let mut qmp = Qmp::connect(&socket, Duration::from_secs(5)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !qmp.take_event("SHUTDOWN") {
        assert!(Instant::now() < deadline, "no SHUTDOWN event");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!qmp.take_event("SHUTDOWN"), "an event is taken once");
    qmp.stop().unwrap();
    let saved = dir.join("saved.bin");
    qmp.pmemsave(BASE + 16, 32, &saved).unwrap();
    assert_eq!(std::fs::read(&saved).unwrap(), (16..48).collect::<Vec<u8>>());
    qmp.quit().unwrap();
    drop(qmp);
    assert_eq!(server.join().unwrap(), ["qmp_capabilities", "stop", "pmemsave", "quit"]);
}

#[test]
fn events_during_a_command_are_kept() {
    let dir = scratch("qmp-events");
    let (socket, listener) = listen(&dir);
    let server = serve(listener, Script { shutdown_after: Some("stop"), ..Script::default() });
    let mut qmp = Qmp::connect(&socket, Duration::from_secs(5)).unwrap();
    qmp.stop().unwrap();
    qmp.execute("query-status", None, Duration::from_secs(5)).unwrap();
    assert!(qmp.take_event("SHUTDOWN"));
    qmp.quit().unwrap();
    drop(qmp);
    server.join().unwrap();
}

#[test]
fn a_silent_monitor_times_out() {
    let dir = scratch("qmp-silent");
    let (socket, listener) = listen(&dir);
    let server = serve(listener, Script { silent: true, ..Script::default() });
    let started = Instant::now();
    let error = Qmp::connect(&socket, Duration::from_millis(300)).err().expect("no greeting, no connection");
    assert!(format!("{error:#}").contains("no greeting"), "{error:#}");
    assert!(started.elapsed() < Duration::from_secs(2));
    server.join().unwrap();
}

#[test]
fn a_monitor_that_stops_answering_times_out() {
    let dir = scratch("qmp-mute");
    let (socket, listener) = listen(&dir);
    let server = serve(listener, Script { mute_after: Some("qmp_capabilities"), ..Script::default() });
    let mut qmp = Qmp::connect(&socket, Duration::from_secs(5)).unwrap();
    let started = Instant::now();
    let error = qmp.execute("stop", None, Duration::from_millis(300)).unwrap_err();
    assert!(format!("{error:#}").contains("no answer to `stop`"), "{error:#}");
    assert!(started.elapsed() < Duration::from_secs(2));
    drop(qmp);
    server.join().unwrap();
}

#[test]
fn errors_and_hang_ups_are_reported() {
    let dir = scratch("qmp-errors");
    let (socket, listener) = listen(&dir);
    let server = serve(listener, Script { fail: Some("stop"), hang_up_after: Some("cont"), ..Script::default() });
    let mut qmp = Qmp::connect(&socket, Duration::from_secs(5)).unwrap();
    assert!(format!("{:#}", qmp.stop().unwrap_err()).contains("`stop` failed: stop refused"));
    qmp.execute("cont", None, Duration::from_secs(5)).unwrap();
    let error = qmp.execute("stop", None, Duration::from_secs(5)).unwrap_err();
    assert!(format!("{error:#}").contains("closed"), "{error:#}");
    assert!(qmp.quit().is_ok(), "a monitor that is gone has nothing left to quit");
    drop(qmp);
    server.join().unwrap();
}

#[test]
fn nobody_listening_is_an_error_not_a_wait() {
    let dir = scratch("qmp-nobody");
    let started = Instant::now();
    let deadline = Instant::now() + Duration::from_millis(300);
    assert!(Qmp::connect_when_ready(&dir.join("qmp.sock"), deadline, || false).is_err());
    assert!(Qmp::connect_when_ready(&dir.join("qmp.sock"), deadline + Duration::from_secs(60), || true).is_err());
    assert!(started.elapsed() < Duration::from_secs(2));
}

// --- The supervisor --------------------------------------------------------

fn names() -> Vec<String> {
    vec!["rtos".to_string(), "gpos".to_string()]
}

const CPUS: usize = 2;
const SLOTS: usize = 64;

/// Trace memory as the hypervisor would leave it: rtos on pCPU 0, gpos on
/// pCPU 1, one timer interrupt forwarded to rtos.
fn trace_memory() -> Vec<u8> {
    let memory: Vec<AtomicU64> = (0..words(CPUS, SLOTS)).map(|_| AtomicU64::new(0)).collect();
    let buffer = TraceBuffer::new(&memory, CPUS, SLOTS, 62_500_000).unwrap();
    let event = |time, kind, partition, arg| Event { time, kind, partition, vcpu: 0, arg };
    buffer.record(0, &event(1000, Kind::VcpuIn, 0, 0));
    buffer.record(0, &event(2000, Kind::IrqTaken, NONE, 27));
    buffer.record(0, &event(2100, Kind::IrqInjected, 0, 27));
    buffer.record(0, &event(9000, Kind::VcpuOut, 0, 1));
    buffer.record(1, &event(1500, Kind::VcpuIn, 1, 0));
    memory.iter().flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes()).collect()
}

fn monitor(dir: &Path) -> Monitor {
    let trace =
        TraceMeta { config: "fake".into(), cpus: CPUS as u32, partitions: names(), plans: vec![], fabric_cpu: None };
    Monitor { socket: dir.join("qmp.sock"), trace, consoles: vec![], critical: vec![] }
}

/// A console that announces the trace (when `traced`), then idles as a
/// paused or running QEMU would.
fn fake_qemu(dir: &Path, traced: bool) -> Command {
    fake_qemu_printing(dir, traced, "")
}

/// [`fake_qemu`], with `more` printed after its lines.
fn fake_qemu_printing(dir: &Path, traced: bool, more: &str) -> Command {
    let announce = if traced {
        format!(
            "echo '[partita] trace: {CPUS} ring(s) of {SLOTS} events at 0x{BASE:x}, {} bytes'; ",
            words(CPUS, SLOTS) * 8
        )
    } else {
        String::new()
    };
    let script = format!("echo $$ > '{}'; {announce}echo '[rtos] hi'; {more}exec sleep 30", dir.join("pid").display());
    let mut command = Command::new("sh");
    command.args(["-c", &script]);
    command
}

/// Like QEMU, the fake creates its socket only once it runs.
fn serve_when_started(dir: &Path, script: Script) -> JoinHandle<Vec<String>> {
    let dir = dir.to_path_buf();
    let starter = std::thread::spawn(move || {
        let pid = dir.join("pid");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !pid.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        serve(listen(&dir).1, Script { pid_file: Some(pid), ..script })
    });
    std::thread::spawn(move || starter.join().unwrap().join().unwrap())
}

fn quick(seconds: u64) -> RunOptions {
    RunOptions { seconds: Some(seconds), ..RunOptions::default() }
}

#[test]
fn power_off_ends_the_run_and_the_trace_is_saved() {
    let dir = scratch("qmp-run-power-off");
    let script = Script {
        shutdown_after: Some("set-action"),
        shutdown_when: Some((dir.join("console.log"), "[rtos] hi")),
        memory: trace_memory(),
        ..Script::default()
    };
    let server = serve_when_started(&dir, script);
    let started = Instant::now();
    let report = supervise_with(fake_qemu(&dir, true), &names(), &dir, &quick(60), Some(&monitor(&dir))).unwrap();
    assert!(started.elapsed() < Duration::from_secs(20), "the power-off ended the run");
    assert!(matches!(report.ending, Ending::Exited(status) if status.success()), "{:?}", report.ending);
    assert_eq!(server.join().unwrap(), ["qmp_capabilities", "set-action", "stop", "pmemsave", "quit"]);
    assert_eq!(report.trace, Some(dir.join("trace.bin")));
    assert!(!dir.join("qmp.sock").exists() && !dir.join("trace.bin.raw").exists(), "left-overs were removed");
    assert_eq!(std::fs::read_to_string(dir.join("rtos.log")).unwrap(), "hi\n");

    let (meta, decoded) = trace::read_file(&dir.join("trace.bin")).unwrap();
    assert_eq!(meta, monitor(&dir).trace);
    assert_eq!((decoded.cpus[0].len(), decoded.cpus[1].len()), (4, 1));

    let summary = trace::draw(&dir).unwrap();
    assert!(summary.contains("vCPU switches in: rtos 1, gpos 1"), "{summary}");
    assert!(summary.contains("1 samples, min 1.600 µs"), "100 ticks at 62.5 MHz: {summary}");
    let timeline: Value = serde_json::from_slice(&std::fs::read(dir.join("trace.json")).unwrap()).unwrap();
    assert!(timeline["traceEvents"].as_array().unwrap().iter().any(|e| e["name"] == "rtos/vcpu0"));
    for chart in ["gantt.svg", "irq-latency.svg"] {
        let text = std::fs::read_to_string(dir.join(chart)).unwrap();
        assert!(text.starts_with("<svg") || text.starts_with("<?xml"), "{chart}");
    }
}

#[test]
fn the_time_limit_still_saves_the_trace() {
    let dir = scratch("qmp-run-time-limit");
    let server = serve_when_started(&dir, Script { memory: trace_memory(), ..Script::default() });
    let report = supervise_with(fake_qemu(&dir, true), &names(), &dir, &quick(1), Some(&monitor(&dir))).unwrap();
    assert_eq!(report.ending, Ending::TimedOut);
    assert_eq!(server.join().unwrap(), ["qmp_capabilities", "set-action", "stop", "pmemsave", "quit"]);
    assert!(trace::read_file(&dir.join("trace.bin")).is_ok());
}

#[test]
fn without_a_trace_line_qemu_just_quits() {
    let dir = scratch("qmp-run-untraced");
    std::fs::write(dir.join("trace.bin"), b"stale").unwrap();
    let script = Script {
        shutdown_after: Some("set-action"),
        shutdown_when: Some((dir.join("console.log"), "[rtos] hi")),
        ..Script::default()
    };
    let server = serve_when_started(&dir, script);
    let report = supervise_with(fake_qemu(&dir, false), &names(), &dir, &quick(60), Some(&monitor(&dir))).unwrap();
    assert!(matches!(report.ending, Ending::Exited(status) if status.success()), "{:?}", report.ending);
    assert_eq!(server.join().unwrap(), ["qmp_capabilities", "set-action", "quit"]);
    assert_eq!(report.trace, None);
    assert!(!dir.join("trace.bin").exists(), "an old trace must not pass for this run's");
}

#[test]
fn a_failed_copy_warns_and_the_run_still_ends() {
    let dir = scratch("qmp-run-copy-fails");
    let server = serve_when_started(&dir, Script { fail: Some("pmemsave"), ..Script::default() });
    let report = supervise_with(fake_qemu(&dir, true), &names(), &dir, &quick(1), Some(&monitor(&dir))).unwrap();
    assert_eq!(report.ending, Ending::TimedOut);
    assert_eq!(report.trace, None);
    assert_eq!(server.join().unwrap(), ["qmp_capabilities", "set-action", "stop", "pmemsave", "quit"]);
}

#[test]
fn a_monitor_that_never_answers_does_not_hang_the_run() {
    let dir = scratch("qmp-run-silent");
    let server = serve_when_started(&dir, Script { silent: true, ..Script::default() });
    let started = Instant::now();
    let report = supervise_with(fake_qemu(&dir, true), &names(), &dir, &quick(1), Some(&monitor(&dir))).unwrap();
    assert_eq!(report.ending, Ending::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert_eq!(report.trace, None);
    assert_eq!(std::fs::read_to_string(dir.join("rtos.log")).unwrap(), "hi\n", "the console was still logged");
    server.join().unwrap();
}

#[test]
fn a_qemu_that_dies_without_a_monitor_is_reported_as_before() {
    let dir = scratch("qmp-run-crash");
    let started = Instant::now();
    let mut crash = Command::new("sh");
    crash.args(["-c", "echo 'qemu: cannot start' >&2; exit 1"]);
    let report = supervise_with(crash, &names(), &dir, &quick(60), Some(&monitor(&dir))).unwrap();
    assert!(matches!(report.ending, Ending::Exited(status) if status.code() == Some(1)), "{:?}", report.ending);
    assert!(started.elapsed() < Duration::from_secs(5), "no waiting for a monitor of a dead QEMU");
}

// --- The host's share ------------------------------------------------------

/// Partita's health line carries a counter time: a second look at the guests' clock.
const HM_LINE: &str = "echo '[partita] hm: 1 at 5000 us partition rtos vcpu 0 Fault detail 0x0 action Log'; ";

/// A one-second run that samples the host's share, in a folder of its own,
/// with pCPU 0 critical.
fn sampled(name: &str) -> (RunOptions, Monitor, PathBuf) {
    let dir = scratch(name);
    let monitor = Monitor { critical: vec![(0, "rtos".into())], ..monitor(&dir) };
    (RunOptions { host_share: true, ..quick(1) }, monitor, dir)
}

#[test]
fn a_wall_clock_run_samples_the_host_beside_the_guests_clock() {
    let (opts, monitor, dir) = sampled("qmp-run-host-share");
    let server = serve_when_started(&dir, Script { memory: trace_memory(), ..Script::default() });
    let report =
        supervise_with(fake_qemu_printing(&dir, true, HM_LINE), &names(), &dir, &opts, Some(&monitor)).unwrap();
    assert_eq!(report.ending, Ending::TimedOut);
    let commands = server.join().unwrap();
    assert_eq!(commands, ["qmp_capabilities", "set-action", "query-cpus-fast", "stop", "pmemsave", "quit"]);
    let host = report.host.expect("a wall-clock run with host_share records the host");
    let samples = host.samples.as_ref().expect("the fake QEMU's counters were read");
    assert!(samples.reads() >= 50, "1 s at 1 kHz: {} reads", samples.reads());
    assert_eq!(host.clock.observations(), (2, 1), "the first line and the hm line; the stop that copied the trace");
    let alignment = host.clock.alignment(62_500_000);
    assert!(alignment.error_ns().is_some(), "{alignment:?}");
    assert!(host.note(&alignment).contains("of pCPU 0 (schedstat)"), "{}", host.note(&alignment));
}

#[test]
fn without_the_vcpu_threads_the_host_share_is_unknown_and_the_run_goes_on() {
    let (opts, monitor, dir) = sampled("qmp-run-host-share-unknown");
    let server = serve_when_started(&dir, Script { fail: Some("query-cpus-fast"), ..Script::default() });
    let report = supervise_with(fake_qemu(&dir, false), &names(), &dir, &opts, Some(&monitor)).unwrap();
    assert_eq!(report.ending, Ending::TimedOut);
    server.join().unwrap();
    let host = report.host.unwrap();
    assert!(host.samples.as_ref().is_err_and(|why| why.contains("query-cpus-fast")), "{:?}", host.samples.err());
    let (opts, monitor, dir) = sampled("qmp-run-host-share-guest-time");
    let guest_time = RunOptions { icount: Some(0), ..opts };
    let server = serve_when_started(&dir, Script::default());
    let report = supervise_with(fake_qemu(&dir, false), &names(), &dir, &guest_time, Some(&monitor)).unwrap();
    assert!(report.host.is_none(), "in guest time the host cannot make a guest late: nothing is sampled");
    assert_eq!(server.join().unwrap(), ["qmp_capabilities", "set-action", "quit"]);
}
