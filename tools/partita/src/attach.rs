//! `partita run --attach PARTITION`: the terminal's keys go to one
//! partition's virtio console, whose output then shows unchanged (prompts,
//! line editing, escapes). The other partitions are quiet meanwhile: their
//! lines go to their logs only, and to a [`Backlog`] that a key shows on
//! demand, so that nothing lands in the prompt or in a command's output.
//! Partita's own lines still show, but for those about another partition
//! only. Every console still goes to its log.
//!
//! Keys are passed one by one (the terminal's own line editing and signals
//! are off, so Ctrl-C reaches the guest). Three keys stay with Partita:
//! Ctrl-] moves the keys to the next partition with a console, Ctrl-^
//! shows what the other partitions printed since the last look, Ctrl-\
//! ends the run as Ctrl-C does without `--attach`.
//!
//! The run also ends by itself when the partition named by `--attach`
//! ends (it powers off, or Partita stops it): Partita's console says so
//! ([`end_of`]), and there is nothing left to type into.

use crate::guest_console::{Links, RawView, Typist};
use nix::sys::termios::{self, InputFlags, LocalFlags, SetArg, Termios};
use std::collections::VecDeque;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Ctrl-]: the next partition gets the keys.
pub const SWITCH_KEY: u8 = 0x1d;
/// Ctrl-^ (Ctrl-6 on most keyboards): the other partitions' latest lines.
pub const OTHERS_KEY: u8 = 0x1e;
/// Ctrl-\: the run ends.
pub const QUIT_KEY: u8 = 0x1c;

/// What the terminal's bytes mean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    Text(Vec<u8>),
    Switch,
    Others,
    Quit,
}

/// Splits what the terminal sent into text for the guest and Partita's keys.
pub fn keys(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let mut text = Vec::new();
    for &byte in bytes {
        let key = match byte {
            SWITCH_KEY => Key::Switch,
            OTHERS_KEY => Key::Others,
            QUIT_KEY => Key::Quit,
            _ => {
                text.push(byte);
                continue;
            }
        };
        if !text.is_empty() {
            keys.push(Key::Text(std::mem::take(&mut text)));
        }
        keys.push(key);
    }
    if !text.is_empty() {
        keys.push(Key::Text(text));
    }
    keys
}

/// The partition after `current` among `attachable`, wrapping around.
pub fn next(attachable: &[usize], current: usize) -> usize {
    let at = attachable.iter().position(|&p| p == current).map_or(0, |i| i + 1);
    attachable[at % attachable.len()]
}

/// The terminal while attached: its settings come back when this drops,
/// on every way out of the run.
pub struct Terminal {
    saved: Option<Termios>,
    attached: Option<usize>,
}

impl Terminal {
    /// Starts passing stdin to partition `first`'s console (a name the
    /// command line has checked). Stdin may also be a pipe: its bytes are
    /// typed the same way. `others` gets the lines the terminal leaves out.
    pub fn start(first: &str, names: &[String], links: &Links, typist: &Typist, others: &Others) -> Terminal {
        let attachable = links.partitions();
        let Some(first) = names.iter().position(|n| n == first).filter(|i| attachable.contains(i)) else {
            eprintln!("warning: {first} has no virtio console; the terminal stays detached");
            return Terminal { saved: None, attached: None };
        };
        let view = links.raw_view();
        *view.lock().unwrap_or_else(|p| p.into_inner()) = Some(first);
        let saved = keys_one_by_one();
        announce(&names[first]);
        let (names, typist, others) = (names.to_vec(), typist.clone(), others.clone());
        std::thread::spawn(move || pass_keys(&names, &attachable, &view, &typist, &others));
        Terminal { saved, attached: Some(first) }
    }

    /// The partition the keys went to first, unless the terminal stayed
    /// detached.
    pub fn attached(&self) -> Option<usize> {
        self.attached
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = termios::tcsetattr(std::io::stdin(), SetArg::TCSANOW, saved);
        }
    }
}

/// Turns off line editing, echo and signal keys; output processing stays
/// on so that the live view's lines still start at the left margin.
fn keys_one_by_one() -> Option<Termios> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return None;
    }
    let saved = termios::tcgetattr(&stdin).ok()?;
    let mut raw = saved.clone();
    raw.local_flags.remove(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG | LocalFlags::IEXTEN);
    raw.input_flags.remove(InputFlags::IXON | InputFlags::ICRNL);
    termios::tcsetattr(&stdin, SetArg::TCSANOW, &raw).ok()?;
    Some(saved)
}

fn pass_keys(names: &[String], attachable: &[usize], view: &RawView, typist: &Typist, others: &Others) {
    let mut stdin = std::io::stdin().lock();
    let mut buffer = [0u8; 256];
    while let Ok(n) = stdin.read(&mut buffer) {
        if n == 0 {
            return;
        }
        for key in keys(&buffer[..n]) {
            let current = view.lock().unwrap_or_else(|p| p.into_inner()).unwrap_or(attachable[0]);
            match key {
                Key::Text(text) => typist.type_to(&names[current], text),
                Key::Switch => {
                    let to = next(attachable, current);
                    *view.lock().unwrap_or_else(|p| p.into_inner()) = Some(to);
                    announce(&names[to]);
                    // What it printed while another console had the terminal.
                    show_block(&lock(others).catch_up(to));
                }
                Key::Others => show_block(&lock(others).look(current)),
                Key::Quit => crate::run::request_stop(),
            }
        }
    }
}

fn announce(name: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\n[keys go to {name}: Ctrl-] next console, Ctrl-^ other consoles, Ctrl-\\ stop]\r\n");
}

/// Partita's lines between the guest's, each at the left margin whatever
/// the terminal's mode.
fn show_block(lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\n");
    for line in lines {
        let _ = write!(err, "{line}\r\n");
    }
}

/// The lines of a look at most, per partition: the rest are in its log.
pub const RECENT_LINES: usize = 10;

/// What the partitions the terminal does not show printed while it was
/// attached: how many lines, and the latest few, for the status a key
/// shows. Their logs keep every line.
#[derive(Debug)]
pub struct Backlog {
    names: Vec<String>,
    logs: PathBuf,
    quiet: Vec<Quiet>,
}

/// Shared by the run, which fills it, and the keys, which show it.
pub type Others = Arc<Mutex<Backlog>>;

fn lock(others: &Others) -> std::sync::MutexGuard<'_, Backlog> {
    others.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Clone, Debug, Default)]
struct Quiet {
    /// Lines kept from the terminal in all.
    lines: u64,
    /// Of those, the ones since the last look.
    unseen: u64,
    /// The latest unseen ones, as the live view would have shown them.
    recent: VecDeque<String>,
    /// The text of the latest line.
    latest: Option<String>,
}

impl Backlog {
    /// `logs` is the folder of the partitions' logs, named in the status.
    pub fn new(names: &[String], logs: &Path) -> Self {
        Self { names: names.to_vec(), logs: logs.to_path_buf(), quiet: vec![Quiet::default(); names.len()] }
    }

    pub fn shared(self) -> Others {
        Arc::new(Mutex::new(self))
    }

    /// A line about `partition` that the terminal leaves out: `text` as it
    /// printed it, `shown` as the live view would show it.
    pub fn keep(&mut self, partition: usize, text: &str, shown: String) {
        let quiet = &mut self.quiet[partition];
        quiet.lines += 1;
        quiet.unseen += 1;
        quiet.recent.push_back(shown);
        if quiet.recent.len() > RECENT_LINES {
            quiet.recent.pop_front();
        }
        quiet.latest = Some(text.to_string());
    }

    /// One line on every partition but `attached`, e.g. `other consoles:
    /// rtos 12 new lines (57 in all), latest: tick 57; logs in out/linux/`.
    pub fn status(&self, attached: usize) -> String {
        let parts: Vec<String> = (0..self.names.len())
            .filter(|&i| i != attached)
            .map(|i| {
                let (name, quiet) = (&self.names[i], &self.quiet[i]);
                match (&quiet.latest, quiet.unseen) {
                    (None, _) => format!("{name} nothing yet"),
                    (Some(_), 0) => format!("{name} nothing new ({} in all)", lines(quiet.lines)),
                    (Some(latest), unseen) => {
                        let noun = if unseen == 1 { "line" } else { "lines" };
                        format!("{name} {unseen} new {noun} ({} in all), latest: {latest}", quiet.lines)
                    }
                }
            })
            .collect();
        let logs = crate::paths::shown(&self.logs);
        if parts.is_empty() {
            return format!("other consoles: none; logs in {}/", logs.display());
        }
        format!("other consoles: {}; logs in {}/", parts.join("; "), logs.display())
    }

    /// What the key shows: the unseen lines of every partition but
    /// `attached` (the latest [`RECENT_LINES`] of each), then the status.
    /// They count as seen from then on.
    pub fn look(&mut self, attached: usize) -> Vec<String> {
        let mut block = Vec::new();
        for i in (0..self.names.len()).filter(|&i| i != attached) {
            block.extend(self.unseen(i));
        }
        block.push(format!("[{}]", self.status(attached)));
        for i in (0..self.names.len()).filter(|&i| i != attached) {
            self.seen(i);
        }
        block
    }

    /// The unseen lines of `partition`, which has just got the keys.
    pub fn catch_up(&mut self, partition: usize) -> Vec<String> {
        let block = self.unseen(partition);
        self.seen(partition);
        block
    }

    /// After the run: how much each other partition printed, and where.
    pub fn summary(&self, attached: usize) -> Option<String> {
        let counts: Vec<String> = (0..self.names.len())
            .filter(|&i| i != attached && self.quiet[i].lines > 0)
            .map(|i| format!("{} {}", self.names[i], lines(self.quiet[i].lines)))
            .collect();
        (!counts.is_empty()).then(|| {
            let logs = crate::paths::shown(&self.logs);
            format!("kept off the terminal: {} (in {}/<partition>.log)", counts.join(", "), logs.display())
        })
    }

    fn unseen(&self, partition: usize) -> Vec<String> {
        let quiet = &self.quiet[partition];
        let mut block = Vec::new();
        let left_out = quiet.unseen.saturating_sub(quiet.recent.len() as u64);
        if left_out > 0 {
            block.push(format!("[{}: {} before these]", self.names[partition], lines(left_out)));
        }
        let shown = quiet.unseen.min(quiet.recent.len() as u64) as usize;
        block.extend(quiet.recent.iter().skip(quiet.recent.len() - shown).cloned());
        block
    }

    fn seen(&mut self, partition: usize) {
        self.quiet[partition].unseen = 0;
        self.quiet[partition].recent.clear();
    }
}

fn lines(n: u64) -> String {
    if n == 1 {
        "1 line".to_string()
    } else {
        format!("{n} lines")
    }
}

/// The partitions a line of Partita's names (`partition NAME`, as its
/// life-cycle and health-monitor lines do), by index into `names`.
pub fn named(text: &str, names: &[String]) -> Vec<usize> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("partition ") {
        let rest = &text[at + "partition ".len()..];
        let ends_a_name =
            |tail: &str| tail.chars().next().is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == '-'));
        let longest = (0..names.len())
            .filter(|&i| rest.strip_prefix(names[i].as_str()).is_some_and(ends_a_name))
            .max_by_key(|&i| names[i].len());
        if let Some(i) = longest.filter(|i| !found.contains(i)) {
            found.push(i);
        }
    }
    found
}

/// How a partition ended, as Partita's console said it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionEnd {
    pub partition: String,
    /// By its own PSCI SYSTEM_OFF; otherwise Partita stopped or halted it.
    pub powered_off: bool,
    /// Partita's line.
    pub line: String,
}

/// Whether a line of Partita's says that partition `name` ended for good:
/// the life-cycle lines of hypervisor/src/partition/lifecycle.rs
/// (`announce`) for a power-off, a stop (a fault, or the health monitor's
/// `halt`) and a system partition's stop or halt. A restart is no end.
pub fn end_of(name: &str, text: &str) -> Option<PartitionEnd> {
    let end = |powered_off| Some(PartitionEnd { partition: name.to_string(), powered_off, line: text.to_string() });
    let rest = text.strip_prefix("partition ")?;
    if let Some(after) = rest.strip_prefix(name) {
        if after.starts_with(" powered off") {
            return end(true);
        }
        let vcpu_stopped = after
            .strip_prefix(" vcpu ")
            .and_then(|v| v.split_once(' '))
            .is_some_and(|(vcpu, tail)| vcpu.parse::<u32>().is_ok() && tail.starts_with("stopped: "));
        if vcpu_stopped || after.starts_with(" stopped: ") || after.starts_with(": Halt (") {
            return end(false);
        }
    }
    let by_other = [": Stop of partition ", ": Halt of partition "];
    if by_other.iter().any(|verb| rest.split_once(verb).is_some_and(|(_, target)| target == name)) {
        return end(false);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitas_keys_are_taken_out_of_the_text() {
        assert_eq!(keys(b"ls\r"), [Key::Text(b"ls\r".to_vec())]);
        assert_eq!(
            keys(b"a\x1db\x1c\x03"),
            [Key::Text(b"a".to_vec()), Key::Switch, Key::Text(b"b".to_vec()), Key::Quit, Key::Text(vec![3])]
        );
        assert_eq!(keys(b""), []);
    }

    #[test]
    fn the_others_key_is_taken_out_too() {
        assert_eq!(keys(b"\x1e"), [Key::Others]);
        assert_eq!(keys(b"ls\x1e\r"), [Key::Text(b"ls".to_vec()), Key::Others, Key::Text(b"\r".to_vec())]);
    }

    #[test]
    fn only_the_attached_partitions_end_counts() {
        let powered = end_of("linux", "partition linux powered off (PSCI SYSTEM_OFF)").unwrap();
        assert!(powered.powered_off && powered.partition == "linux", "{powered:?}");
        for stopped in [
            "partition linux vcpu 1 stopped: stage-2 fault (EC 0x24, ELR 0x48001000, address 0x0)",
            "partition linux stopped: watchdog expired",
            "partition ctl: Halt of partition linux",
            "partition ctl: Stop of partition linux",
            "partition linux: Halt (health monitor)",
        ] {
            assert_eq!(end_of("linux", stopped).map(|e| e.powered_off), Some(false), "{stopped}");
        }
        for other in [
            "partition linux restarting (PSCI SYSTEM_RESET)",
            "partition ctl: restarting partition linux",
            "partition linux starts: 2 vCPU(s), entry 0x48000000, device tree at 0x57ff0000",
            "partition linux suspended by the health monitor (deadline)",
            "partition linux2 powered off (PSCI SYSTEM_OFF)",
            "partition rtos powered off (PSCI SYSTEM_OFF)",
            "partition ctl: Halt of partition linux2",
            "[linux] partition linux powered off",
            "all partitions stopped; powering off",
        ] {
            assert_eq!(end_of("linux", other), None, "{other}");
        }
    }

    #[test]
    fn partitas_lines_name_partitions_whole() {
        let names: Vec<String> = ["rtos", "linux", "linux-b"].map(String::from).to_vec();
        assert_eq!(named("partition rtos powered off (PSCI SYSTEM_OFF)", &names), [0]);
        assert_eq!(named("partition linux-b: restarting partition linux", &names), [2, 1]);
        assert_eq!(named("hm: 3 at 10 us partition rtos vcpu 0 deadline detail 0x0 action log", &names), [0]);
        assert_eq!(named("partition linuxes starts", &names), Vec::<usize>::new());
        assert_eq!(named("2 partition(s) loaded", &names), Vec::<usize>::new());
    }

    #[test]
    fn the_backlog_shows_what_is_new_and_counts_the_rest() {
        let names: Vec<String> = ["linux", "rtos", "idle"].map(String::from).to_vec();
        let mut backlog = Backlog::new(&names, Path::new("out/linux"));
        assert_eq!(backlog.status(0), "other consoles: rtos nothing yet; idle nothing yet; logs in out/linux/");
        for tick in 1..=12 {
            backlog.keep(1, &format!("tick {tick}"), format!("rtos | tick {tick}"));
        }
        assert_eq!(
            backlog.status(0),
            "other consoles: rtos 12 new lines (12 in all), latest: tick 12; idle nothing yet; logs in out/linux/"
        );
        let block = backlog.look(0);
        assert_eq!(block.len(), 1 + RECENT_LINES + 1, "{block:?}");
        assert_eq!(block[0], "[rtos: 2 lines before these]");
        assert_eq!(block[1], "rtos | tick 3");
        assert_eq!(block[RECENT_LINES], "rtos | tick 12");
        assert!(block[RECENT_LINES + 1].starts_with("[other consoles: rtos 12 new lines"), "{block:?}");
        backlog.keep(1, "tick 13", "rtos | tick 13".into());
        assert_eq!(backlog.look(0)[0], "rtos | tick 13", "only what is new since the last look");
        assert!(backlog.status(0).contains("rtos nothing new (13 lines in all)"), "{}", backlog.status(0));
        backlog.keep(0, "login:", "linux | login:".into());
        assert_eq!(backlog.catch_up(0), ["linux | login:"], "a console that gets the keys catches up");
        assert_eq!(
            backlog.summary(1).as_deref(),
            Some("kept off the terminal: linux 1 line (in out/linux/<partition>.log)")
        );
        assert_eq!(backlog.summary(2).as_deref().map(|s| s.contains("rtos 13 lines")), Some(true));
    }

    #[test]
    fn switching_cycles_through_the_consoles() {
        assert_eq!(next(&[1, 3], 1), 3);
        assert_eq!(next(&[1, 3], 3), 1);
        assert_eq!(next(&[2], 2), 2);
    }
}
