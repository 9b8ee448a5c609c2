//! The console splitter and the QEMU supervisor, driven by a shell script
//! that plays QEMU's part.

mod host_fixtures;

use host_fixtures::scratch;
use partita::run::{pump, supervise, Console, Ending, Painter, RunOptions, Source, Splitter, CUT_SHORT};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn names() -> Vec<String> {
    vec!["rtos".to_string(), "linux".to_string(), "monitor".to_string()]
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn tags_route_lines() {
    let splitter = Splitter::new(&names());
    assert_eq!(splitter.split("[rtos] hello"), (Source::Partition(0), "hello"));
    assert_eq!(splitter.split("[monitor]  two spaces"), (Source::Partition(2), " two spaces"));
    assert_eq!(splitter.split("[linux]tight"), (Source::Partition(1), "tight"));
    assert_eq!(splitter.split("[partita] booted"), (Source::Hypervisor, "booted"));
    assert_eq!(splitter.split("[ghost] boo"), (Source::Hypervisor, "[ghost] boo"), "unknown tags stay whole");
    assert_eq!(splitter.split("no tag at all"), (Source::Hypervisor, "no tag at all"));
    assert_eq!(splitter.split("[rtos"), (Source::Hypervisor, "[rtos"));
    assert_eq!(splitter.split(""), (Source::Hypervisor, ""));
    assert_eq!(splitter.split(" [rtos] x"), (Source::Hypervisor, " [rtos] x"), "the tag must start the line");
}

#[test]
fn live_view_pads_and_colors_names() {
    let plain = Painter::new(&names(), false);
    assert_eq!(plain.format(Source::Partition(0), "hi"), "rtos   │ hi");
    assert_eq!(plain.format(Source::Hypervisor, "up"), "partita│ up");
    let colored = Painter::new(&names(), true);
    let rtos = colored.format(Source::Partition(0), "hi");
    let linux = colored.format(Source::Partition(1), "hi");
    assert!(rtos.starts_with("\x1b[") && rtos.contains("rtos   \x1b[0m│ hi"), "{rtos:?}");
    assert_ne!(rtos[..5], linux[..5], "partitions get distinct colors");
    assert!(colored.format(Source::Hypervisor, "x").starts_with("\x1b[2m"), "the hypervisor is dim");
}

#[test]
fn console_writes_one_log_per_partition() {
    let dir = scratch("console-logs");
    let mut console = Console::create(&names(), &dir, None).unwrap();
    for line in ["[partita] Partita starting", "[rtos] tick 1", "garbage", "[linux] login:", "[rtos] tick 2"] {
        console.line(line).unwrap();
    }
    let report = console.report(Ending::TimedOut, dir.join("console.log"));
    assert_eq!(read(&dir.join("rtos.log")), "tick 1\ntick 2\n");
    assert_eq!(read(&dir.join("linux.log")), "login:\n");
    assert_eq!(read(&dir.join("monitor.log")), "", "a silent partition still gets a log");
    assert_eq!(read(&dir.join("hypervisor.log")), "Partita starting\ngarbage\n");
    assert_eq!(report.boot_ms, None, "monitor never printed");
    assert_eq!(report.silent, ["monitor"]);
    assert_eq!(report.partition_logs.len(), 3);
}

#[test]
fn pump_splits_chunks_and_strips_carriage_returns() {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut raw = Vec::new();
    let input: &[u8] = b"[rtos] a\r\n[linux] b\r\n\xffpartial";
    pump(input, &mut raw, tx).unwrap();
    let lines: Vec<String> = rx.iter().collect();
    assert_eq!(lines, ["[rtos] a", "[linux] b", &format!("\u{fffd}partial{CUT_SHORT}")]);
    assert_eq!(raw, input, "console.log keeps the raw stream");
}

fn fake_qemu(script: &str) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", script]);
    command
}

#[test]
fn qemu_that_powers_off_is_followed_to_the_end() {
    let dir = scratch("supervise-exit");
    let script =
        r"printf '[partita] up\r\n[rtos] one\r\n'; printf '[linux] two\r\n[monitor] three\r\n'; echo oops >&2; exit 0";
    let opts = RunOptions { seconds: Some(20), ..RunOptions::default() };
    let report = supervise(fake_qemu(script), &names(), &dir, &opts).unwrap();
    assert!(matches!(report.ending, Ending::Exited(status) if status.success()), "{:?}", report.ending);
    assert!(report.boot_ms.is_some(), "every partition printed");
    assert_eq!(read(&dir.join("rtos.log")), "one\n");
    assert_eq!(read(&dir.join("monitor.log")), "three\n");
    assert_eq!(read(&dir.join("hypervisor.log")), "up\n");
    assert_eq!(read(&report.console_log), "[partita] up\r\n[rtos] one\r\n[linux] two\r\n[monitor] three\r\n");
}

#[test]
fn qemu_past_its_time_is_killed_and_logs_stay() {
    let dir = scratch("supervise-timeout");
    let started = Instant::now();
    let script = "echo '[rtos] before'; exec sleep 30";
    let opts = RunOptions { seconds: Some(1), ..RunOptions::default() };
    let report = supervise(fake_qemu(script), &names(), &dir, &opts).unwrap();
    assert_eq!(report.ending, Ending::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(10), "stopped at the limit, not when the child chose to");
    assert_eq!(read(&dir.join("rtos.log")), "before\n");
    assert_eq!(report.boot_ms, None);
}

#[test]
fn a_child_holding_the_pipe_does_not_hang_the_supervisor() {
    let dir = scratch("supervise-grandchild");
    let started = Instant::now();
    let opts = RunOptions { seconds: Some(1), ..RunOptions::default() };
    let report = supervise(fake_qemu("echo '[rtos] hi'; sleep 5; true"), &names(), &dir, &opts).unwrap();
    assert_eq!(report.ending, Ending::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(read(&dir.join("rtos.log")), "hi\n");
}

#[test]
fn failing_qemu_is_reported_as_such() {
    let dir = scratch("supervise-fail");
    let opts = RunOptions { seconds: Some(20), ..RunOptions::default() };
    let report = supervise(fake_qemu("echo 'qemu: bad option' >&2; exit 1"), &names(), &dir, &opts).unwrap();
    assert!(matches!(report.ending, Ending::Exited(status) if status.code() == Some(1)));
}

#[test]
fn missing_qemu_is_a_clear_error() {
    let dir = scratch("supervise-missing");
    let opts = RunOptions::default();
    let error = supervise(Command::new("/nonexistent/qemu"), &names(), &dir, &opts).unwrap_err();
    assert!(format!("{error:#}").contains("cannot start"), "{error:#}");
}
