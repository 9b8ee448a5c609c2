//! What the RTOS prints, read: one result line per benchmark, as
//! `guests/rtos/README.md` gives them, and what is wrong with a boot's lines.

use super::{Queue, LAST_LINE};
use serde::{Deserialize, Serialize};

/// What one boot is expected to print.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expect {
    pub tm: usize,
    pub coremark: bool,
    pub schedprio: Option<Queue>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    Ok,
    /// The guest's reason.
    Fail(String),
}

impl Check {
    fn parse(text: &str) -> Option<Check> {
        match text.trim() {
            "ok" => Some(Check::Ok),
            other => {
                let reason = other.strip_prefix("FAIL")?;
                Some(Check::Fail(reason.trim_start_matches(':').trim().to_string()))
            }
        }
    }
}

/// `tm <n> <name>: period <ms> ms events <count> check <ok|FAIL: reason>`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TmResult {
    pub number: u32,
    pub name: String,
    pub period_ms: u64,
    pub events: u64,
    pub check: Check,
}

impl TmResult {
    pub fn test(&self) -> String {
        format!("tm{} {}", self.number, self.name)
    }
}

/// `coremark: iterations <n> in <ms> ms, <x> iterations/s, crc 0x<hhhh> check <...>`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoreMarkResult {
    pub iterations: u64,
    pub ms: u64,
    pub per_second: f64,
    pub crc: u32,
    pub check: Check,
}

/// `schedprio <bitmap|linear>: prio <p> switch <ticks> counts`
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SchedPoint {
    pub queue: Queue,
    pub priority: u32,
    pub ticks: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    Tm(TmResult),
    CoreMark(CoreMarkResult),
    SchedPrio(SchedPoint),
    Done,
    /// Starts like a result but does not read as one.
    Malformed(String),
    /// Anything else the guest says (its banner, say).
    Other,
}

pub fn parse_line(line: &str) -> Line {
    let line = line.trim();
    let parsed = if line.starts_with("tm ") {
        parse_tm(line).map(Line::Tm)
    } else if line.starts_with("coremark:") {
        parse_coremark(line).map(Line::CoreMark)
    } else if line.starts_with("schedprio ") {
        parse_schedprio(line).map(Line::SchedPrio)
    } else if line == LAST_LINE {
        Some(Line::Done)
    } else {
        Some(Line::Other)
    };
    parsed.unwrap_or_else(|| Line::Malformed(line.to_string()))
}

fn parse_tm(line: &str) -> Option<TmResult> {
    let (head, rest) = line.strip_prefix("tm ")?.split_once(": ")?;
    let (number, name) = head.split_once(' ')?;
    let (period, rest) = rest.strip_prefix("period ")?.split_once(" ms events ")?;
    let (events, check) = rest.split_once(" check ")?;
    Some(TmResult {
        number: number.parse().ok()?,
        name: name.trim().to_string(),
        period_ms: period.parse().ok()?,
        events: events.parse().ok()?,
        check: Check::parse(check)?,
    })
}

fn parse_coremark(line: &str) -> Option<CoreMarkResult> {
    let rest = line.strip_prefix("coremark: iterations ")?;
    let (iterations, rest) = rest.split_once(" in ")?;
    let (ms, rest) = rest.split_once(" ms, ")?;
    let (per_second, rest) = rest.split_once(" iterations/s, crc ")?;
    let (crc, check) = rest.split_once(" check ")?;
    let per_second: f64 = per_second.parse().ok()?;
    Some(CoreMarkResult {
        iterations: iterations.parse().ok()?,
        ms: ms.parse().ok()?,
        per_second: per_second.is_finite().then_some(per_second)?,
        crc: u32::from_str_radix(crc.strip_prefix("0x")?, 16).ok()?,
        check: Check::parse(check)?,
    })
}

fn parse_schedprio(line: &str) -> Option<SchedPoint> {
    let (queue, rest) = line.strip_prefix("schedprio ")?.split_once(": prio ")?;
    let (priority, rest) = rest.split_once(" switch ")?;
    let ticks = rest.strip_suffix(" counts")?;
    let queue = match queue {
        "bitmap" => Queue::Bitmap,
        "linear" => Queue::Linear,
        _ => return None,
    };
    Some(SchedPoint { queue, priority: priority.parse().ok()?, ticks: ticks.parse().ok()? })
}

/// Everything one or more boots of the RTOS printed, read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Output {
    pub tm: Vec<TmResult>,
    pub coremark: Vec<CoreMarkResult>,
    pub schedprio: Vec<SchedPoint>,
    /// `bench done` lines.
    pub done: usize,
    pub malformed: Vec<String>,
}

pub fn parse_output(text: &str) -> Output {
    let mut output = Output::default();
    for line in text.lines() {
        match parse_line(line) {
            Line::Tm(tm) => output.tm.push(tm),
            Line::CoreMark(coremark) => output.coremark.push(coremark),
            Line::SchedPrio(point) => output.schedprio.push(point),
            Line::Done => output.done += 1,
            Line::Malformed(text) => output.malformed.push(text),
            Line::Other => {}
        }
    }
    output
}

impl Output {
    pub(super) fn extend(&mut self, other: Output) {
        self.tm.extend(other.tm);
        self.coremark.extend(other.coremark);
        self.schedprio.extend(other.schedprio);
        self.done += other.done;
        self.malformed.extend(other.malformed);
    }

    /// What is wrong with this output of a boot that should have printed
    /// `expect`: failed self-checks, unreadable result lines, missing ones.
    pub fn problems(&self, expect: &Expect) -> Vec<String> {
        let mut problems: Vec<String> = Vec::new();
        for tm in &self.tm {
            if let Check::Fail(reason) = &tm.check {
                problems.push(format!("{}: self-check FAILED: {reason}", tm.test()));
            }
        }
        for coremark in &self.coremark {
            if let Check::Fail(reason) = &coremark.check {
                problems.push(format!("coremark: self-check FAILED: {reason}"));
            }
        }
        problems.extend(self.malformed.iter().map(|line| format!("unreadable result line: `{line}`")));
        if self.tm.len() != expect.tm {
            problems.push(format!("{} Thread-Metric lines, expected {}", self.tm.len(), expect.tm));
        }
        if self.coremark.len() != usize::from(expect.coremark) {
            problems.push(format!("{} coremark lines, expected {}", self.coremark.len(), u8::from(expect.coremark)));
        }
        match expect.schedprio {
            Some(queue) if !self.schedprio.iter().any(|p| p.queue == queue) => {
                problems.push(format!("no `schedprio {}:` lines", queue.name()));
            }
            _ => {}
        }
        if self.schedprio.iter().any(|p| Some(p.queue) != expect.schedprio) {
            problems.push("schedprio lines of a queue that was not asked for".to_string());
        }
        if self.done != 1 {
            problems.push(format!("no `{LAST_LINE}` line"));
        }
        problems
    }
}
