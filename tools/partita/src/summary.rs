//! The one page a run of the demo (or a soak) leaves behind: `summary.md`
//! in its output folder, with the checks of [`crate::soak`], each
//! partition's last counters, the trace's figures and its pictures.

use crate::attribution::Attributed;
use crate::host_share::{HostRecord, HostShare};
use crate::soak::{self, Analysis};
use crate::trace as host_trace;
use crate::trace::stream::Stream;
use anyhow::{Context, Result};
use partita_core::config::model::System;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub const SUMMARY_FILE: &str = "summary.md";

/// What the page is about: a demo of `seconds`, or a soak.
pub struct Run<'a> {
    pub title: &'a str,
    /// Wall-clock seconds it ran.
    pub seconds: u64,
    /// The -icount shift of a guest-time run.
    pub icount: Option<u32>,
    pub tio_target: Option<u64>,
    /// How the critical vCPU threads ran on the host ([`crate::isolate`]).
    pub isolation: Option<&'a str>,
    /// What a wall-clock run sampled of the host ([`crate::host_share`]).
    pub host: Option<&'a HostRecord>,
}

/// One line saying how the run keeps time, for the top of its output.
pub fn clock_line(icount: Option<u32>, emulated: u32) -> String {
    let host = std::thread::available_parallelism().map_or(1, |n| n.get());
    match icount {
        Some(shift) => format!(
            "clock: guest time (QEMU -icount shift={shift}): one host thread runs the {emulated} emulated cores in \
             turns and the guests' clock counts their instructions, so this host's {host} core(s) and its load cannot \
             make a guest late; `--wall` runs on the host's clock"
        ),
        None => format!("clock: the host's (wall-clock time), {host} host core(s) for {emulated} emulated core(s)"),
    }
}

/// The fabric's longest turn in guest time, in microseconds: the default
/// of `[fabric] turn`.
pub const GUEST_TIME_FABRIC_TURN_US: u64 = crate::config::DEFAULT_FABRIC_TURN_US;

/// Under QEMU's `-icount` one host thread runs the emulated cores by
/// turns, each up to the next deadline of any timer, and a core that
/// interrupts another (a kick, an SGI) or arms a timer of its own ends its
/// turn at once (QEMU then kicks every core): it runs again only after the
/// turns of the cores after it. The fabric's pCPU always has its timer
/// armed at most a turn ahead, so its turn bounds every core's; a
/// configured turn longer than [`GUEST_TIME_FABRIC_TURN_US`], chosen to
/// spare the host's clock wake-ups, is shortened to it for a guest-time
/// run. Returns the line that says so.
pub fn shorten_fabric_turn(system: &mut System, icount: Option<u32>) -> Option<String> {
    shorten_turn(&mut system.fabric.as_mut()?.turn_us, icount)
}

fn shorten_turn(turn_us: &mut u64, icount: Option<u32>) -> Option<String> {
    if icount.is_none() || *turn_us <= GUEST_TIME_FABRIC_TURN_US {
        return None;
    }
    let configured = std::mem::replace(turn_us, GUEST_TIME_FABRIC_TURN_US);
    Some(format!(
        "fabric: its turn is {GUEST_TIME_FABRIC_TURN_US} us in guest time (configured {configured} us): under -icount \
         it bounds every emulated core's turn, so an interrupted core waits that long at most for each core before it"
    ))
}

/// The isolation line, or why there is none.
pub fn isolation_line(isolation: Option<&str>, icount: Option<u32>) -> String {
    match (isolation, icount) {
        (Some(line), _) => line.to_string(),
        (None, Some(_)) => "isolation: off (guest time: one host thread runs every emulated core)".into(),
        (None, None) => "isolation: off (--no-isolate)".into(),
    }
}

/// How many host cores this process may use against the emulated ones
/// (QEMU runs a thread per emulated core, and its main loop).
pub fn host_cores(emulated: u32) -> String {
    let host = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores_line(host, emulated)
}

/// True when `host` cores cannot give each of `emulated` cores and QEMU's
/// main loop one of their own: there a run on the host's clock measures
/// the host, and the demo keeps guest time instead.
pub fn too_few_cores(host: usize, emulated: u32) -> bool {
    host < emulated as usize + 1
}

fn cores_line(host: usize, emulated: u32) -> String {
    let needed = emulated as usize + 1;
    let mut line = format!("host: {host} core(s) for {emulated} emulated core(s) and QEMU's main loop");
    if too_few_cores(host, emulated) {
        line += &format!(
            "; fewer than {needed}, so QEMU's threads take turns on them, and every register access QEMU treats \
             as I/O (the GIC's, the timers', the counter's) waits for its big lock, which a thread waiting for a \
             core may hold: deadline misses and late allocations measure this host as much as Partita \
             (tools/partita/README.md, soak)"
        );
    }
    line
}

/// The page's Markdown for the run in `out_dir`.
pub fn markdown(run: &Run, system: &System, analysis: &Analysis, out_dir: &Path) -> String {
    let checks = analysis.checks(run.tio_target);
    let mut text = format!("# {}\n\n", run.title);
    let time = time_text(run, analysis);
    let _ = writeln!(
        text,
        "Configuration `{}`, {time}, {} partition(s) on {} pCPU(s). {}.\n",
        system.name,
        system.partitions.len(),
        system.platform.cpus,
        soak::verdict(&checks).replace("soak: ", "Verdict: ")
    );
    for line in analysis.late_lines() {
        let _ = writeln!(text, "{line}\n");
    }
    text += "## Host\n\n";
    let _ = writeln!(text, "{}\n", clock_line(run.icount, system.platform.cpus));
    if run.icount.is_none() {
        let _ = writeln!(text, "{}\n", host_cores(system.platform.cpus));
    }
    let _ = writeln!(
        text,
        "{}\n\nUnder QEMU an emulated core is a host thread. Isolation gives the critical partitions' vCPU \
         threads a host core of their own and SCHED_FIFO: a host thread's priority, not a separate core (QEMU's \
         big lock, the host's interrupts and memory are still shared). Without it, deadline misses and late \
         allocations measure the host's scheduling as much as Partita's. In guest time there is one thread, and \
         nothing to isolate.\n",
        isolation_line(run.isolation, run.icount)
    );
    if let Some(note) = &analysis.host_note {
        let _ = writeln!(text, "{note}.\n");
    }
    text += "## Checks\n\n";
    text += &soak::markdown(&checks);
    text += &late_jobs(analysis);
    text += &late_allocations(analysis);
    text += "\n## Each partition's last counters\n\n| partition | counter lines | health events | last values |\n|---|--:|--:|---|\n";
    let counters = &analysis.counters;
    for (i, name) in counters.names.iter().enumerate() {
        let values = counters.shown(i).join(" ");
        let _ = writeln!(text, "| {name} | {} | {} | {values} |", counters.lines[i], counters.hm_events[i]);
    }
    for note in key_notes(counters) {
        let _ = writeln!(text, "\n{note}");
    }
    text += "\n## Trace\n\n";
    if analysis.lost_events.is_empty() {
        text += "No trace was recorded.\n";
    } else {
        let per_cpu: Vec<String> =
            analysis.lost_events.iter().enumerate().map(|(cpu, n)| format!("pCPU {cpu}: {n}")).collect();
        let _ = writeln!(text, "Lost events: {} ({}).\n", analysis.lost_total(), per_cpu.join(", "));
        if analysis.copies > 0 {
            let _ = writeln!(
                text,
                "The rings were copied out {} times while the run went and merged; the pictures show the last copy.\n",
                analysis.copies
            );
        }
        let _ = writeln!(text, "{} accelerator allocation(s) traced.\n", analysis.allocations.len());
        for (file, caption) in [
            (host_trace::GANTT_FILE, "vCPUs on each pCPU"),
            (host_trace::LATENCY_FILE, "interrupt-injection latency"),
            (host_trace::timed_io::HISTOGRAM_FILE, "timed-output error E"),
        ] {
            if out_dir.join(file).exists() {
                let _ = writeln!(text, "![{caption}]({file})\n");
            }
        }
        let _ = writeln!(text, "The whole timeline: open `{}` in ui.perfetto.dev.\n", host_trace::JSON_FILE);
    }
    let logs: Vec<String> = counters.names.iter().map(|n| format!("`{n}.log`")).collect();
    let _ = writeln!(text, "Logs: {}, `hypervisor.log`, `hm.log`, `console.log`.", logs.join(", "));
    text
}

/// What the demo's less obvious counters mean, for those the partitions
/// gave.
const KEY_NOTES: [(&str, &str); 3] = [
    (
        "busy_us",
        "`cpu_pct` with `busy_us`: the share of the last second its tasks ran, and that time in us; alone on \
         its core an RTOS waits in WFI most of the time, hence two decimals.",
    ),
    (
        "ctrl_u",
        "`last_seq`: the number of the newest telemetry message read (beside the sender's `sent`, how far the \
         reader is behind); `ctrl_u`: the controller's output it carried, in the plant's units (±1.000 at rest on \
         either set point).",
    ),
    (
        "counter_hz",
        "Values a guest counts in ticks of its counter (`counter_hz`) show in us with the ticks beside: \
         `tio_max` and `tio_mean`, the timed outputs' largest and mean error E by Partita's own count.",
    ),
];

/// The notes of [`KEY_NOTES`] whose key some partition gave.
fn key_notes(counters: &crate::status::Counters) -> Vec<&'static str> {
    let given = |key: &str| (0..counters.names.len()).any(|i| counters.get(i, key).is_some());
    KEY_NOTES.iter().filter(|(key, _)| given(key)).map(|(_, note)| *note).collect()
}

/// How long the run went, and in which time.
fn time_text(run: &Run, analysis: &Analysis) -> String {
    match (run.icount, analysis.guest_seconds()) {
        (Some(shift), covered) => format!(
            "{} s of host time in guest time (QEMU -icount shift={shift}), covering {} of guest time",
            run.seconds,
            covered.map_or("an unknown length".into(), |s| format!("{s:.1} s"))
        ),
        (None, _) => format!("{} s of wall-clock time", run.seconds),
    }
}

/// Every job a partition reported late, with its window and, where the
/// trace allows, Partita's share of it against its bound: those over it
/// first. None is left out.
fn late_jobs(analysis: &Analysis) -> String {
    let counters = &analysis.counters;
    if counters.late_jobs.iter().all(Vec::is_empty) {
        return String::new();
    }
    let us = |ticks: u64| if analysis.counter_hz == 0 { 0.0 } else { ticks as f64 * 1e6 / analysis.counter_hz as f64 };
    let mut text = String::from(
        "\n## Late jobs\n\nEach job that missed its deadline, as its partition reported it: its release on the counter \
         (in us, and in ticks to find it in the trace), how long after it the job started and ended, and the time its pCPU spent at EL2 in that window \
         against Partita's bound for it (`partita check`'s added response per release, a release latency for each \
         interrupt delivered in the window). A job over the bound is Partita's defect. On the wall clock, the \
         host's share of the window beside it: how long the partition's vCPU threads were off their host core \
         (waiting for one, or asleep: the guest's WFI, QEMU's big lock), how long they and QEMU's main loop waited \
         for a host core, and the host's steal (see Host above). There Partita is granted all of that off-CPU \
         time first: a job is over the bound only when its EL2 time less the off-CPU time still exceeds it.\n\n\
         | partition | job | release: us (ticks) | start after (us) | end after (us) | at EL2 (us) | bound (us) | verdict \
         | host: vCPU off-CPU (us) | vCPU waited (us) | main loop waited (us) | steal (us) |\n\
         |---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|\n",
    );
    let counter_hz = analysis.counter_hz;
    let row = |text: &mut String, partition: &str, job: &crate::status::LateJob, late: Option<&Attributed>| {
        let (el2, bound, verdict) = match late {
            Some(late) => (
                format!("{:.1}", us(late.partita)),
                format!("{:.1}", us(late.bound)),
                if late.over_bound(counter_hz) { "Partita over its bound" } else { "Partita within its bound" },
            ),
            None => ("-".into(), "-".into(), "not attributed"),
        };
        let _ = writeln!(
            text,
            "| {partition} | {} | {:.1} ({}) | {:.1} | {:.1} | {el2} | {bound} | {verdict} | {} |",
            job.job,
            us(job.release),
            job.release,
            us(job.start.saturating_sub(job.release)),
            us(job.end.saturating_sub(job.release)),
            host_cells(late.and_then(|l| l.host.as_ref()))
        );
    };
    let mut attributed: Vec<_> = analysis.late.iter().collect();
    attributed.sort_by_key(|l| !l.over_bound(counter_hz));
    for late in attributed {
        row(&mut text, &late.partition, &late.job, Some(late));
    }
    for (i, jobs) in counters.late_jobs.iter().enumerate() {
        let name = &counters.names[i];
        for job in jobs.iter().filter(|job| !analysis.late.iter().any(|l| &l.partition == name && l.job == **job)) {
            row(&mut text, name, job, None);
        }
    }
    text
}

/// Every allocation longer than its bound, with both shares of its window:
/// those over the bound once the time the fabric's pCPU was not run is
/// granted first. None is left out.
fn late_allocations(analysis: &Analysis) -> String {
    let (over, within) = analysis.late_allocations();
    if over.is_empty() && within.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "\n## Late allocations\n\nEach accelerator allocation longer than its bound (`partita check`'s L_alloc), \
         from the request to the connection: the part of that window the fabric's pCPU was not run while its \
         logic had something due (another core's turn under -icount, the host's scheduling on its clock) is \
         granted, and the rest is Partita's. An allocation whose rest is still over the bound is Partita's \
         defect.\n\n",
    );
    for (allocations, verdict) in [(over, "Partita over its bound"), (within, "Partita within its bound")] {
        for a in allocations {
            let _ = writeln!(text, "- {} {}: {verdict}.", a.partition, analysis.describe_allocation(a));
        }
    }
    text
}

/// The vCPU threads' off-CPU time and the host's three waits in us, or
/// `-` where they are not known.
fn host_cells(host: Option<&HostShare>) -> String {
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    match host {
        Some(h) => format!(
            "{} | {} | {} | {}",
            us(h.vcpu_off_cpu_ns),
            us(h.vcpu_delay_ns),
            us(h.main_loop_delay_ns),
            us(h.steal_ns)
        ),
        None => "- | - | - | -".into(),
    }
}

/// Writes `summary.md` (or `name`) into `out_dir`; returns its path and the analysis.
pub fn write(
    run: &Run,
    system: &System,
    out_dir: &Path,
    name: &str,
    stream: Option<&Stream>,
) -> Result<(PathBuf, Analysis)> {
    let analysis = Analysis::of(out_dir, system, stream, run.icount, run.host)?;
    let path = out_dir.join(name);
    std::fs::write(&path, markdown(run, system, &analysis, out_dir))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok((path, analysis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_time_shortens_a_long_fabric_turn_and_says_so() {
        // The demo's own turn, as its file gives it (its images need not be built).
        let demo = std::fs::read_to_string(crate::paths::source().join("configs").join("demo.toml")).unwrap();
        let raw: crate::config::raw::RawConfig = toml::from_str(&demo).expect("the demo's configuration");
        let mut turn = raw.fabric.and_then(|fabric| fabric.turn).expect("a turn").0;
        let configured = turn;
        assert!(configured > GUEST_TIME_FABRIC_TURN_US, "the demo's turn spares the host's wake-ups");
        assert_eq!(shorten_turn(&mut turn, None), None, "the host's clock keeps it");
        assert_eq!(turn, configured);
        let line = shorten_turn(&mut turn, Some(0)).expect("a line");
        assert!(line.contains(&format!("(configured {configured} us)")), "{line}");
        assert_eq!(turn, GUEST_TIME_FABRIC_TURN_US);
        assert_eq!(shorten_turn(&mut turn, Some(0)), None, "a turn short enough stays");
    }

    #[test]
    fn the_host_line_says_when_cores_are_too_few() {
        assert_eq!(cores_line(8, 4), "host: 8 core(s) for 4 emulated core(s) and QEMU's main loop");
        assert!(cores_line(2, 4).contains("fewer than 5"), "{}", cores_line(2, 4));
    }

    #[test]
    fn the_demo_keeps_guest_time_where_the_host_has_too_few_cores() {
        // The demo's 4 pCPUs and QEMU's main loop want 5.
        assert!(too_few_cores(2, 4) && too_few_cores(4, 4));
        assert!(!too_few_cores(5, 4) && !too_few_cores(64, 4));
        assert!(clock_line(Some(0), 4).starts_with("clock: guest time (QEMU -icount shift=0)"));
        assert!(clock_line(None, 4).starts_with("clock: the host's (wall-clock time)"));
    }

    fn analysis_with(rtos_log: &str) -> Analysis {
        let mut counters = crate::status::Counters::new(&["rtos".to_string()]);
        counters.guest_log(0, rtos_log);
        Analysis { counters, counter_hz: 62_500_000, span_ticks: 125_000_000, ..Analysis::default() }
    }

    #[test]
    fn a_guest_time_page_says_how_much_guest_time_its_host_time_covered() {
        let run = Run { title: "t", seconds: 60, icount: Some(0), tio_target: Some(1), isolation: None, host: None };
        let analysis = analysis_with("demo: t=2 jobs=400 misses=0");
        let text = time_text(&run, &analysis);
        assert_eq!(text, "60 s of host time in guest time (QEMU -icount shift=0), covering 2.0 s of guest time");
        assert!(isolation_line(None, Some(0)).starts_with("isolation: off (guest time"));
        assert!(late_jobs(&analysis).is_empty());
        let wall = Run { icount: None, ..run };
        assert_eq!(time_text(&wall, &analysis), "60 s of wall-clock time");
    }

    #[test]
    fn the_less_obvious_counters_are_explained_when_given() {
        let mut counters = crate::status::Counters::new(&["rtos".to_string(), "linux".to_string()]);
        assert!(key_notes(&counters).is_empty());
        counters
            .guest_log(0, "demo: t=2 jobs=400 cpu_pct=0.42 busy_us=4213\ndemo: t=2 tio_max=121078 counter_hz=62500000");
        let notes = key_notes(&counters);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("`cpu_pct` with `busy_us`") && notes[1].contains("`tio_max`"), "{notes:?}");
        counters.guest_log(1, "demo: t=3 cpu_pct=92 received=9 last_seq=11 ctrl_u=-0.655");
        assert!(key_notes(&counters)[1].starts_with("`last_seq`"), "{:?}", key_notes(&counters));
    }

    #[test]
    fn every_late_allocation_is_listed_with_both_shares_the_defects_first() {
        let mut analysis = analysis_with("demo: t=1 jobs=200 misses=0");
        let allocation = |ticks, absent| crate::soak::Allocation {
            partition: "rtos".into(),
            device: 0,
            request: 1_000,
            ticks,
            bound: Some(62_500),
            absent,
        };
        analysis.allocations = vec![allocation(1_000, 0), allocation(70_000, 10_000), allocation(70_000, 1_000)];
        let text = late_allocations(&analysis);
        let within =
            "- rtos device 0 requested at 16.0 us (1000 ticks), window 1120.0 us: Partita 960.0 us, the fabric's pCPU \
                      not run 160.0 us; bound 1000.0 us: Partita within its bound.";
        let over = "- rtos device 0 requested at 16.0 us (1000 ticks), window 1120.0 us: Partita 1104.0 us, the fabric's pCPU \
                    not run 16.0 us; bound 1000.0 us: Partita over its bound.";
        assert!(text.find(over).is_some_and(|o| text.find(within).is_some_and(|w| o < w)), "{text}");
        assert!(!text.contains("window 16.0 us"), "one within its bound is not late: {text}");
        analysis.allocations.truncate(1);
        assert!(late_allocations(&analysis).is_empty());
    }

    #[test]
    fn every_late_job_is_listed_with_its_window() {
        let log = "demo: t=1 jobs=200 misses=2\n\
                   demo: late job=7 release=1000000 start=1375000 end=1375100 dropped=0\n\
                   demo: late job=9 release=2000000 start=2062500 end=2400000 dropped=0";
        let text = late_jobs(&analysis_with(log));
        assert!(
            text.contains(
                "| rtos | 7 | 16000.0 (1000000) | 6000.0 | 6001.6 | - | - | not attributed | - | - | - | - |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| rtos | 9 | 32000.0 (2000000) | 1000.0 | 6400.0 | - | - | not attributed | - | - | - | - |"
            ),
            "{text}"
        );
        let mut analysis = analysis_with(log);
        let job = analysis.counters.late_jobs[0][1];
        // 100 us at EL2 against a bound of 10 us, 60 us of the window off its core: 40 us surely executed.
        let host = HostShare {
            vcpu_delay_ns: 5_000_000,
            vcpu_off_cpu_ns: 60_000,
            main_loop_delay_ns: 250_000,
            steal_ns: 0,
            span_ns: 7_000_000,
        };
        let late = Attributed { partition: "rtos".into(), job, partita: 6_250, bound: 625, host: None };
        analysis.late = vec![Attributed { host: Some(host), ..late.clone() }];
        let text = late_jobs(&analysis);
        let over = text.find(
            "| rtos | 9 | 32000.0 (2000000) | 1000.0 | 6400.0 | 100.0 | 10.0 | Partita over its bound | 60.0 | 5000.0 | 250.0 | \
             0.0 |",
        );
        let other = text.find("| rtos | 7 |");
        assert!(over.is_some_and(|over| other.is_some_and(|other| over < other)), "the defect first: {text}");
        // 95 us off its core leaves 5 us surely executed, within the bound.
        analysis.late = vec![Attributed { host: Some(HostShare { vcpu_off_cpu_ns: 95_000, ..host }), ..late }];
        let text = late_jobs(&analysis);
        assert!(
            text.contains(
                "| rtos | 9 | 32000.0 (2000000) | 1000.0 | 6400.0 | 100.0 | 10.0 | Partita within its bound | 95.0 | 5000.0 | \
                 250.0 | 0.0 |"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_page_opens_with_both_kinds_of_late_job_and_the_worst_of_each() {
        let log = "demo: t=1 jobs=200 misses=2\n\
                   demo: late job=7 release=1000000 start=1375000 end=1375100 dropped=0\n\
                   demo: late job=9 release=2000000 start=2062500 end=2400000 dropped=0";
        let mut analysis = analysis_with(log);
        analysis.host_note = Some("host share: sampled".into());
        let jobs = analysis.counters.late_jobs[0].clone();
        let late = |job, host| Attributed { partition: "rtos".into(), job, partita: 625, bound: 6_250, host };
        let host = HostShare {
            vcpu_delay_ns: 5_000_000,
            vcpu_off_cpu_ns: 6_000_000,
            main_loop_delay_ns: 250_000,
            steal_ns: 1_000,
            span_ns: 0,
        };
        analysis.late = vec![late(jobs[0], None), late(jobs[1], Some(host))];
        let lines = analysis.late_lines();
        assert_eq!(lines[0], "Late jobs with Partita over its bound (Partita's defect: the verdict fails): 0.");
        assert_eq!(
            lines[1],
            "Late jobs with Partita within its bound: 2; the worst, rtos job 9: window 6400.0 us: Partita 10.0 us \
             (bound 100.0 us), host: vCPU off-CPU 6000.0 us (waited 5000.0 us), main loop 250.0 us, steal 1.0 us."
        );
        // 10 us at EL2 over a bound of 9.6 us, but the vCPU's thread was off its core for longer.
        analysis.late[1].bound = 600;
        assert!(analysis.late_lines()[0].ends_with("fails): 0."), "{:?}", analysis.late_lines());
        // Off its core for 0.16 us (10 ticks): 615 ticks surely executed, over 600.
        analysis.late[1].host = Some(HostShare { vcpu_off_cpu_ns: 160, ..host });
        let lines = analysis.late_lines();
        assert!(lines[0].starts_with("Late jobs with Partita over its bound (Partita's defect: the verdict fails): 1; the worst, rtos job 9:"), "{}", lines[0]);
        assert!(
            lines[1].starts_with("Late jobs with Partita within its bound: 1; the worst, rtos job 7:")
                && lines[1].ends_with("host: unknown."),
            "{}",
            lines[1]
        );
    }
}
