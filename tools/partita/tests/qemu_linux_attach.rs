//! `partita run --attach linux` as a person uses it: the command itself,
//! keys written to its standard input (a pipe is typed like a terminal),
//! and what it prints read back as the terminal would show it. Beside
//! Linux a test guest ticks twice a second, for as long as the run lasts.
//!
//! What is asserted is what the guests printed and where it landed: a
//! command's echo and output come back with nothing of the other
//! partition's in between, Ctrl-^ shows the other partition's latest
//! lines, and `poweroff`, `reboot` and `halt` typed as such do what they
//! say, the run ending by itself when Linux is off.

mod common;

use common::linux::*;
use common::*;
use partita::attach::{OTHERS_KEY, QUIT_KEY};
use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The shell's prompt; busybox's line editor follows it with `ESC [6n`.
const PROMPT: &str = "partita-linux:~# ";
const CURSOR_QUERY: &str = "\x1b[6n";
/// From starting the command to the shell: the hypervisor's build included.
const SHELL_LIMIT: Duration = Duration::from_secs(HANG_LIMIT * 3);

/// Two QEMUs of four vCPUs each would share the host's cores: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Linux on pCPUs 2-3 with its shell on the virtio console, and `ticker`
/// alone on pCPU 1 printing `tick N` every 500 ms and never ending.
fn config() -> partita::config::raw::RawConfig {
    machine([part("ticker", &[1], "period_ms=500").exclusive(), linux("console=hvc0 earlycon")])
}

/// `partita run NAME.toml --attach linux`, its stdout and stderr one
/// stream as on a terminal.
struct Attached {
    name: &'static str,
    child: Child,
    keys: ChildStdin,
    screen: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
    /// Where the screen is read from for the next command's prompt.
    after: usize,
}

impl Attached {
    fn start(name: &'static str) -> Attached {
        let config = write_config(name, &config());
        let out = out_dir(name);
        let (mut from, to) = std::io::pipe().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_partita"))
            .arg("--out")
            .arg(out.parent().unwrap())
            .arg("run")
            .arg(&config.path)
            .args(["--attach", "linux"])
            .stdin(std::process::Stdio::piped())
            .stdout(to.try_clone().unwrap())
            .stderr(to)
            .spawn()
            .unwrap();
        let keys = child.stdin.take().unwrap();
        let screen = Arc::new(Mutex::new(Vec::new()));
        let filled = screen.clone();
        let reader = std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = from.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                filled.lock().unwrap().extend_from_slice(&buffer[..n]);
            }
        });
        Attached { name, child, keys, screen, reader: Some(reader), after: 0 }
    }

    /// Everything the terminal got so far.
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    fn type_keys(&mut self, keys: &[u8]) {
        self.keys.write_all(keys).unwrap();
        self.keys.flush().unwrap();
    }

    /// Once the command has exited, the screen is whole.
    fn has_ended(&mut self) -> Option<ExitStatus> {
        let status = self.child.try_wait().unwrap()?;
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        Some(status)
    }

    /// Waits for `needle` on the screen at or after byte `from`, and
    /// returns where it starts and the screen then; fails if the run ends
    /// first.
    fn wait_for(&mut self, needle: &str, from: usize, limit: Duration) -> (usize, String) {
        let deadline = Instant::now() + limit;
        loop {
            let ended = self.has_ended().is_some();
            let screen = self.screen();
            if let Some(at) = screen.get(from..).and_then(|rest| rest.find(needle)) {
                return (from + at, screen);
            }
            if ended || Instant::now() >= deadline {
                let why = if ended { "the run ended" } else { "time ran out" };
                panic!("{}: {why} before {needle:?}; the screen ends:\n{}", self.name, tail(&screen, 40));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits for the command to end by itself; returns the whole screen.
    fn wait_for_exit(&mut self, limit: Duration) -> (ExitStatus, String) {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.has_ended() {
                return (status, self.screen());
            }
            if Instant::now() >= deadline {
                panic!("{}: the run did not end by itself; the screen ends:\n{}", self.name, tail(&self.screen(), 40));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types `command` at the next prompt and returns what the terminal
    /// showed from that prompt to the end of the line `output` ends, the
    /// line editor's cursor queries left out.
    fn run(&mut self, command: &str, output: &str) -> String {
        let (prompt, _) = self.wait_for(PROMPT, self.after, Duration::from_secs(HANG_LIMIT));
        self.type_keys(format!("{command}\n").as_bytes());
        let ending = format!("{output}\r\n");
        let (at, screen) = self.wait_for(&ending, prompt + PROMPT.len(), Duration::from_secs(HANG_LIMIT));
        self.after = at + ending.len();
        screen[prompt..self.after].replace(CURSOR_QUERY, "")
    }
}

/// A run the test gave up on still ends QEMU: Ctrl-\, as a person would.
impl Drop for Attached {
    fn drop(&mut self) {
        if self.child.try_wait().unwrap().is_none() {
            let _ = self.keys.write_all(&[QUIT_KEY]);
            let _ = self.keys.flush();
            let deadline = Instant::now() + Duration::from_secs(30);
            while self.child.try_wait().unwrap().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn ticks(log: &str) -> usize {
    log.lines().filter(|l| l.starts_with("tick ")).count()
}

fn log(name: &str, partition: &str) -> String {
    std::fs::read_to_string(out_dir(name).join(format!("{partition}.log"))).unwrap_or_default()
}

#[test]
fn poweroff_typed_at_the_attached_shell_ends_the_run_and_no_tick_gets_in_the_way() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    const NAME: &str = "linux-attach-poweroff";
    let mut linux = Attached::start(NAME);
    linux.wait_for(PROMPT, 0, SHELL_LIMIT);

    // The ticker goes on printing while the prompt waits and the command
    // runs; none of it may reach the terminal.
    let before = ticks(&log(NAME, "ticker"));
    std::thread::sleep(Duration::from_secs(2));
    let echoed = linux.run("echo partita-$((6*7))", "partita-42");
    assert_eq!(echoed, format!("{PROMPT}echo partita-$((6*7))\r\npartita-42\r\n"));
    let during = ticks(&log(NAME, "ticker"));
    assert!(during >= before + 3, "the ticker printed {before} then {during} ticks: it should have gone on");

    // Ctrl-^: the ticker's latest lines, and one line on it.
    let shown = linux.screen().len();
    linux.type_keys(&[OTHERS_KEY]);
    let (_, screen) = linux.wait_for("[other consoles: ticker ", shown, Duration::from_secs(10));
    let block = &screen[shown..];
    let status = block.lines().find(|l| l.starts_with("[other consoles: ticker ")).unwrap();
    assert!(status.contains(" new lines (") && status.contains("latest: tick "), "{status}");
    let shown_ticks: Vec<&str> = block.lines().filter(|l| l.contains("│ tick ")).collect();
    assert!(
        !shown_ticks.is_empty() && shown_ticks.len() <= partita::attach::RECENT_LINES,
        "the key shows the latest ticks:\n{block}"
    );
    let latest = status.split("latest: ").nth(1).unwrap().split(';').next().unwrap();
    assert!(shown_ticks.last().unwrap().ends_with(latest), "{block}");
    let after_block = screen.len();

    // Enter brings the prompt back below the block.
    linux.type_keys(b"\n");
    linux.after = after_block;
    let off = linux.run("poweroff", "Requesting system poweroff");
    assert!(off.starts_with(&format!("{PROMPT}poweroff\r\n")), "{off}");
    assert!(off.contains("The system is going down NOW!"), "{off}");
    let (status, screen) = linux.wait_for_exit(Duration::from_secs(HANG_LIMIT));
    assert!(status.success(), "{status}\n{}", tail(&screen, 20));

    // No tick outside the key's block, from the first prompt on.
    let first_prompt = screen.find(PROMPT).unwrap();
    for (what, part) in [("before Ctrl-^", &screen[first_prompt..shown]), ("after it", &screen[after_block..])] {
        assert!(!part.contains("tick "), "a tick reached the terminal {what}:\n{part}");
    }
    assert!(
        screen.contains(
            "partition linux powered off (PSCI SYSTEM_OFF): the run ends with the attached partition, QEMU stopped"
        ),
        "{}",
        tail(&screen, 10)
    );
    let kept = screen.lines().find(|l| l.starts_with("kept off the terminal: ticker ")).unwrap_or_else(|| {
        panic!("no line on what the ticker printed:\n{}", tail(&screen, 10));
    });
    assert!(kept.ends_with("<partition>.log)"), "{kept}");

    // Linux alone powered off: the ticker was still going when the run ended.
    let hypervisor = std::fs::read_to_string(out_dir(NAME).join("hypervisor.log")).unwrap();
    assert!(hypervisor.contains("partition linux powered off (PSCI SYSTEM_OFF)"), "{hypervisor}");
    assert!(!hypervisor.contains("partition ticker powered off"), "{hypervisor}");
    assert!(!hypervisor.contains("all partitions stopped"), "{hypervisor}");
    assert!(ticks(&log(NAME, "ticker")) > during, "every tick is in the ticker's log");
}

#[test]
fn reboot_restarts_linux_alone_and_halt_ends_the_run() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    const NAME: &str = "linux-attach-reboot";
    let mut linux = Attached::start(NAME);
    linux.wait_for(PROMPT, 0, SHELL_LIMIT);
    let release = linux.run("uname -r", "-arm64");

    let rebooting = linux.run("reboot", "Requesting system reboot");
    assert!(rebooting.starts_with(&format!("{PROMPT}reboot\r\n")), "{rebooting}");
    // Partita's line about the attached partition shows; Linux boots again.
    let limit = Duration::from_secs(HANG_LIMIT);
    let (restart, _) = linux.wait_for("partition linux restarting (PSCI SYSTEM_RESET)", linux.after, limit);
    let (again, _) = linux.wait_for(MARKER, restart, limit * 2);
    linux.after = again;
    assert_eq!(linux.run("uname -r", "-arm64"), release, "the same kernel after the restart");

    let halting = linux.run("halt", "Requesting system poweroff");
    assert!(halting.starts_with(&format!("{PROMPT}halt\r\n")), "{halting}");
    let (status, screen) = linux.wait_for_exit(Duration::from_secs(HANG_LIMIT));
    assert!(status.success(), "{status}\n{}", tail(&screen, 20));
    assert!(!screen[screen.find(PROMPT).unwrap()..].contains("tick "), "{screen}");
    let hypervisor = std::fs::read_to_string(out_dir(NAME).join("hypervisor.log")).unwrap();
    assert!(hypervisor.contains("partition linux restarting (PSCI SYSTEM_RESET)"), "{hypervisor}");
    assert!(hypervisor.contains("partition linux powered off (PSCI SYSTEM_OFF)"), "{hypervisor}");
    assert!(!hypervisor.contains("partition ticker restarting"), "only Linux restarts:\n{hypervisor}");
    let ticker = log(NAME, "ticker");
    assert_eq!(ticker.matches("hello from partition ticker").count(), 1, "{ticker}");
}
