//! The live status line of each partition during `partita run` and `partita
//! demo`, and the guests' counter lines it is read from.
//!
//! A guest that wants its figures shown prints lines of `key=value` words
//! after `demo: ` (the demo's RTOS and Linux do so once a second; see
//! guests/rtos/bench/demo.c and guests/linux/jobs/demo). The host keeps the
//! latest value of every key per partition, and adds what only Partita's
//! console says: the health monitor's events and the action taken.
//!
//! On a terminal, the status lines stay at the bottom of the screen: before
//! each console line they are erased (cursor up, erase to the end of the
//! screen), the console line is printed, and they are drawn again. Only
//! plain output and these two ANSI sequences are used, so nothing about the
//! terminal's mode changes and nothing needs restoring, whatever ends the
//! run.

use crate::units;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

/// What a guest's counter line starts with.
pub const COUNTER_PREFIX: &str = "demo: ";
/// The keys whose values a guest gives in counter ticks, of the counter
/// whose frequency it gives as `counter_hz` (the demo's RTOS: its timed
/// outputs' error).
pub const TICK_KEYS: [&str; 2] = ["tio_max", "tio_mean"];
/// After this long without a counter line, a running partition shows as
/// quiet (Linux's reader may take a few seconds a round under load).
const QUIET_AFTER: Duration = Duration::from_secs(10);
/// Redraws without new lines come at most this often.
const REDRAW_EVERY: Duration = Duration::from_millis(500);

/// The `key=value` words of a counter line, in order; `None` for any other
/// line. Words without `=` are skipped, so a guest may add prose. Linux's
/// job shares its console with the shell, whose prompt (`# `, then a
/// terminal query) can open the same line: both are passed over.
pub fn parse_counters(text: &str) -> Option<Vec<(String, String)>> {
    let line = text.rsplit_once("# ").map_or(text, |(_, after)| after);
    let rest = skip_escapes(line).trim_start().strip_prefix(COUNTER_PREFIX)?;
    let pairs: Vec<(String, String)> = rest
        .split_whitespace()
        .filter_map(|word| word.split_once('='))
        .filter(|(key, value)| !key.is_empty() && !value.is_empty())
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
    (!pairs.is_empty()).then_some(pairs)
}

/// True for a late job's line (`demo: late ...`).
fn is_late_line(text: &str) -> bool {
    text.split_whitespace().take(3).any(|word| word == "late")
}

/// The job a late job's line reports; `None` for any other line, or one
/// whose window does not read.
pub fn parse_late(text: &str) -> Option<LateJob> {
    LateJob::parse(&parse_counters(text).filter(|_| is_late_line(text))?)
}

/// `text` without the ANSI control sequences (`ESC [ params letter`) it
/// starts with.
fn skip_escapes(mut text: &str) -> &str {
    while let Some(sequence) = text.strip_prefix("\x1b[") {
        let end = sequence.find(|c: char| c.is_ascii_alphabetic()).map_or(sequence.len(), |i| i + 1);
        text = &sequence[end..];
    }
    text
}

/// A health-monitor line of Partita's console: `hm: SEQ at US us partition
/// NAME vcpu V EVENT detail 0xD action ACTION`, as (partition, event, action).
pub fn parse_hm(text: &str) -> Option<(String, String, String)> {
    let words: Vec<&str> = text.strip_prefix("hm: ")?.split_whitespace().collect();
    let after = |key: &str| words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1)).map(|w| w.to_string());
    let partition = after("partition")?;
    let event = words.get(words.iter().position(|w| *w == "vcpu")? + 2)?.to_string();
    Some((partition, event, after("action")?))
}

/// A job a guest reported late (`demo: late job=K release=R start=S
/// end=E`): its window in counter ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LateJob {
    pub job: u64,
    pub release: u64,
    pub start: u64,
    pub end: u64,
}

impl LateJob {
    /// A late-job line's words, if it is one.
    fn parse(pairs: &[(String, String)]) -> Option<Self> {
        let get = |key: &str| pairs.iter().find(|(k, _)| k == key).and_then(|(_, v)| v.parse().ok());
        Some(Self { job: get("job")?, release: get("release")?, start: get("start")?, end: get("end")? })
    }
}

/// The latest counters of every partition, and its health events.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub names: Vec<String>,
    /// Per partition: the latest value of each key.
    pub values: Vec<BTreeMap<String, String>>,
    /// Per partition: counter lines seen.
    pub lines: Vec<u64>,
    /// Per partition: health-monitor events, and the last (event, action).
    pub hm_events: Vec<u64>,
    pub last_hm: Vec<Option<(String, String)>>,
    /// Per partition: the late jobs it reported, in order.
    pub late_jobs: Vec<Vec<LateJob>>,
}

impl Counters {
    pub fn new(names: &[String]) -> Self {
        let n = names.len();
        Self {
            names: names.to_vec(),
            values: vec![BTreeMap::new(); n],
            lines: vec![0; n],
            hm_events: vec![0; n],
            last_hm: vec![None; n],
            late_jobs: vec![Vec::new(); n],
        }
    }

    /// A line partition `index` printed; true if it was a counter line.
    pub fn guest_text(&mut self, index: usize, text: &str) -> bool {
        let Some(pairs) = parse_counters(text) else { return false };
        if is_late_line(text) {
            // Its keys are the job's, not counters to show.
            self.late_jobs[index].extend(LateJob::parse(&pairs));
            return true;
        }
        self.values[index].extend(pairs);
        self.lines[index] += 1;
        true
    }

    /// A line of Partita's own.
    pub fn hypervisor_text(&mut self, text: &str) {
        if let Some((partition, event, action)) = parse_hm(text) {
            if let Some(i) = self.names.iter().position(|n| *n == partition) {
                self.hm_events[i] += 1;
                self.last_hm[i] = Some((event, action));
            }
        }
    }

    /// Reads a whole log of partition `index`.
    pub fn guest_log(&mut self, index: usize, log: &str) {
        for line in log.lines() {
            self.guest_text(index, line);
        }
    }

    pub fn get(&self, index: usize, key: &str) -> Option<&str> {
        self.values.get(index)?.get(key).map(String::as_str)
    }

    pub fn number(&self, index: usize, key: &str) -> Option<i64> {
        self.get(index, key)?.parse().ok()
    }

    pub fn index(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// The counter frequency partition `index` gave with its values in ticks.
    pub fn counter_hz(&self, index: usize) -> Option<u64> {
        self.number(index, "counter_hz").and_then(|hz| u64::try_from(hz).ok()).filter(|&hz| hz > 0)
    }

    /// Partition `index`'s latest values as `key=value` words, those in
    /// counter ticks ([`TICK_KEYS`]) in microseconds with the ticks beside
    /// when it gave its counter's frequency.
    pub fn shown(&self, index: usize) -> Vec<String> {
        let hz = self.counter_hz(index);
        self.values[index]
            .iter()
            .map(|(key, value)| match (hz, value.parse::<u64>()) {
                (Some(hz), Ok(ticks)) if TICK_KEYS.contains(&key.as_str()) => {
                    format!("{key}={}", units::us_ticks(ticks, hz))
                }
                _ => format!("{key}={value}"),
            })
            .collect()
    }
}

/// A partition's state as far as the console tells it.
fn state(counters: &Counters, index: usize, seen: bool, quiet: bool) -> String {
    if let Some((_, action)) = &counters.last_hm[index] {
        match action.as_str() {
            "Suspend" => return "suspended".into(),
            "Halt" => return "halted".into(),
            "Restart" => return "restarted".into(),
            "Reset" => return "reset".into(),
            _ => {}
        }
    }
    match (seen, quiet) {
        (false, _) => "booting".into(),
        (true, true) => "quiet".into(),
        (true, false) => "running".into(),
    }
}

/// One status line per partition, from what is known so far. `last_line`
/// is when each partition last printed a counter line.
pub fn render(counters: &Counters, seen: &[bool], last_line: &[Option<Instant>], now: Instant) -> Vec<String> {
    let width = counters.names.iter().map(|n| n.len()).max().unwrap_or(0);
    (0..counters.names.len())
        .map(|i| {
            let quiet = last_line[i].is_none_or(|t| now.duration_since(t) > QUIET_AFTER) && counters.lines[i] > 0;
            let get = |key: &str| counters.get(i, key);
            let mut line = format!("{:<width$} {:<9}", counters.names[i], state(counters, i, seen[i], quiet));
            // An RTOS alone on its core idles most of the time: its share
            // comes with two decimals and the busy time behind it.
            let cpu = get("cpu_pct").unwrap_or("-");
            match get("busy_us") {
                Some(busy) => line += &format!(" cpu {cpu}% (busy {busy} us/s)"),
                None => line += &format!(" cpu {cpu:>3}%"),
            }
            if let Some(misses) = get("misses") {
                line += &format!(" misses {misses}/{}", get("jobs").unwrap_or("?"));
            }
            line += &format!(" hm {}", counters.hm_events[i]);
            if let Some((event, action)) = &counters.last_hm[i] {
                line += &format!(" ({event}: {action})");
            }
            // The device a guest names (`accel=`), and whether a PRR holds it now.
            let held = get("accel_held") == Some("1");
            match get("accel") {
                Some(device) => line += &format!(" accel {device} {}", if held { "held" } else { "idle" }),
                None => line += &format!(" accel {}", if held { "held" } else { "-" }),
            }
            if let Some(max) = get("tio_max") {
                let mean = get("tio_mean").unwrap_or("?");
                match (counters.counter_hz(i), max.parse::<f64>(), mean.parse::<f64>()) {
                    (Some(hz), Ok(max), Ok(mean)) => {
                        line += &format!(
                            " E max {} mean {}",
                            units::micros(units::us(max, hz)),
                            units::micros(units::us(mean, hz))
                        )
                    }
                    _ => line += &format!(" E max {max} mean {mean} ticks"),
                }
                if let Some(err) = get("tio_err").filter(|e| *e != "0") {
                    line += &format!(" (refused {err})");
                }
            }
            if let Some(sent) = get("sent") {
                line += &format!(" sent {sent}");
            }
            if let Some(received) = get("received") {
                line +=
                    &format!(" recv {received} lost {} dup {}", get("lost").unwrap_or("?"), get("dup").unwrap_or("?"));
            }
            line
        })
        .collect()
}

/// The status block at the bottom of a terminal.
pub struct Live {
    pub counters: Counters,
    seen: Vec<bool>,
    last_line: Vec<Option<Instant>>,
    /// Lines of the block now on the screen.
    drawn: usize,
    last_draw: Option<Instant>,
    color: bool,
}

impl Live {
    pub fn new(names: &[String], color: bool) -> Self {
        Self {
            counters: Counters::new(names),
            seen: vec![false; names.len()],
            last_line: vec![None; names.len()],
            drawn: 0,
            last_draw: None,
            color,
        }
    }

    pub fn guest_text(&mut self, index: usize, text: &str) {
        self.seen[index] = true;
        if self.counters.guest_text(index, text) {
            self.last_line[index] = Some(Instant::now());
        }
    }

    pub fn hypervisor_text(&mut self, text: &str) {
        self.counters.hypervisor_text(text);
    }

    /// Erases the block, so that a console line can take its place.
    pub fn erase(&mut self, out: &mut dyn Write) {
        if self.drawn > 0 {
            // To the start of the block's first line, then erase to the end.
            let _ = write!(out, "\x1b[{}F\x1b[J", self.drawn);
            self.drawn = 0;
        }
    }

    /// Draws the block below the console lines.
    pub fn draw(&mut self, out: &mut dyn Write) {
        self.erase(out);
        let lines = render(&self.counters, &self.seen, &self.last_line, Instant::now());
        for line in &lines {
            let _ = if self.color { writeln!(out, "\x1b[7m{line}\x1b[0m") } else { writeln!(out, "{line}") };
        }
        let _ = out.flush();
        self.drawn = lines.len();
        self.last_draw = Some(Instant::now());
    }

    /// Redraws when nothing was printed for a while, so ages stay true.
    pub fn tick(&mut self, out: &mut dyn Write) {
        if self.last_draw.is_none_or(|t| t.elapsed() >= REDRAW_EVERY) {
            self.draw(out);
        }
    }

    /// Leaves the last status on the screen, as plain lines the console
    /// scrolls away normally.
    pub fn finish(&mut self, out: &mut dyn Write) {
        self.draw(out);
        self.drawn = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_lines_give_their_pairs() {
        let pairs = parse_counters("demo: t=3 misses=0 note sent=12").unwrap();
        assert_eq!(pairs, [("t", "3"), ("misses", "0"), ("sent", "12")].map(|(k, v)| (k.to_string(), v.to_string())));
        assert_eq!(parse_counters("demo: starting"), None);
        let after_prompt = parse_counters("partita-linux:/root# \x1b[6ndemo: t=1 received=64").unwrap();
        assert_eq!(after_prompt[1], ("received".to_string(), "64".to_string()));
        assert_eq!(parse_counters("partita-linux: demo: t=1"), None);
        assert_eq!(parse_counters("hello t=1"), None);
    }

    #[test]
    fn late_job_lines_are_kept_apart_from_the_counters() {
        let mut counters = Counters::new(&["rtos".to_string()]);
        counters.guest_text(0, "demo: t=1 jobs=200 misses=1");
        assert!(counters.guest_text(0, "demo: late job=17 release=1000 start=1200 end=9000 dropped=0"));
        counters.guest_text(0, "demo: late job=18 release=x start=1 end=2 dropped=0");
        assert_eq!(counters.late_jobs[0], [LateJob { job: 17, release: 1000, start: 1200, end: 9000 }]);
        assert_eq!(counters.get(0, "job"), None, "not a counter");
        assert_eq!(counters.number(0, "jobs"), Some(200));
    }

    #[test]
    fn health_lines_name_partition_event_and_action() {
        let line = "hm: 3 at 12345 us partition linux vcpu 1 StageTwoFault detail 0x9000000 action Suspend";
        assert_eq!(parse_hm(line), Some(("linux".into(), "StageTwoFault".into(), "Suspend".into())));
        assert_eq!(parse_hm("hm: garbage"), None);
    }

    #[test]
    fn the_latest_values_and_health_show() {
        let names = ["rtos".to_string(), "linux".to_string()];
        let mut live = Live::new(&names, false);
        live.guest_text(
            0,
            "demo: t=1 jobs=200 misses=0 cpu_pct=2 accel=qam16 accel_held=1 tio_max=3 tio_mean=1 tio_err=0",
        );
        live.guest_text(0, "demo: t=2 jobs=400 misses=1");
        live.hypervisor_text("hm: 1 at 5 us partition linux vcpu 0 StageTwoFault detail 0x0 action Suspend");
        let lines = render(&live.counters, &live.seen, &live.last_line, Instant::now());
        assert!(lines[0].contains("running") && lines[0].contains("misses 1/400"), "{}", lines[0]);
        assert!(lines[0].contains("accel qam16 held") && lines[0].contains("E max 3 mean 1"), "{}", lines[0]);
        assert!(lines[1].contains("accel -"), "no device named, none held: {}", lines[1]);
        assert!(lines[1].contains("suspended") && lines[1].contains("hm 1"), "{}", lines[1]);
        let mut screen = Vec::new();
        live.draw(&mut screen);
        live.draw(&mut screen);
        let text = String::from_utf8(screen).unwrap();
        assert!(text.contains("\x1b[2F\x1b[J"), "the second draw erases the first: {text:?}");
    }

    #[test]
    fn an_idle_rtos_shows_its_busy_time_and_its_errors_in_microseconds() {
        let names = ["rtos".to_string(), "linux".to_string()];
        let mut live = Live::new(&names, false);
        live.guest_text(0, "demo: t=5 jobs=1002 misses=0 cpu_pct=0.42 busy_us=4213 sent=11");
        live.guest_text(0, "demo: t=5 tio_done=800 tio_max=121078 tio_mean=2715 tio_err=0 counter_hz=62500000");
        live.guest_text(1, "demo: t=3 cpu_pct=92 received=9 lost=0 dup=0");
        let lines = render(&live.counters, &live.seen, &live.last_line, Instant::now());
        assert!(lines[0].contains(" cpu 0.42% (busy 4213 us/s) "), "{}", lines[0]);
        assert!(lines[0].contains(" E max 1937.2 us mean 43.4 us"), "{}", lines[0]);
        assert!(lines[1].contains(" cpu  92% "), "{}", lines[1]);
        let shown = live.counters.shown(0);
        assert!(shown.contains(&"tio_max=1937.2 us (121078 ticks)".to_string()), "{shown:?}");
        assert!(shown.contains(&"tio_done=800".to_string()), "a count stays a count: {shown:?}");
        // Without the counter's frequency the ticks are all there is.
        let mut old = Counters::new(&names[..1]);
        old.guest_text(0, "demo: t=5 tio_max=3 tio_mean=1");
        assert!(old.shown(0).contains(&"tio_max=3".to_string()));
    }
}
