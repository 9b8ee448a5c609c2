//! The one page a run of the demo (or a soak) leaves behind: `summary.md`
//! in its output folder, with the checks of [`crate::soak`], each
//! partition's last counters, the trace's figures and its pictures.

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
    pub seconds: u64,
    pub tio_target: Option<u64>,
    /// How the critical vCPU threads ran on the host ([`crate::isolate`]).
    pub isolation: Option<&'a str>,
}

/// How many host cores this process may use against the emulated ones
/// (QEMU runs a thread per emulated core, and its main loop).
pub fn host_cores(emulated: u32) -> String {
    let host = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores_line(host, emulated)
}

fn cores_line(host: usize, emulated: u32) -> String {
    let needed = emulated as usize + 1;
    let mut line = format!("host: {host} core(s) for {emulated} emulated core(s) and QEMU's main loop");
    if host < needed {
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
    let _ = writeln!(
        text,
        "Configuration `{}`, {} s of wall-clock time, {} partition(s) on {} pCPU(s). {}.\n",
        system.name,
        run.seconds,
        system.partitions.len(),
        system.platform.cpus,
        soak::verdict(&checks).replace("soak: ", "Verdict: ")
    );
    text += "## Host\n\n";
    let _ = writeln!(text, "{}\n", host_cores(system.platform.cpus));
    let _ = writeln!(
        text,
        "{}\n\nUnder QEMU an emulated core is a host thread. Isolation gives the critical partitions' vCPU \
         threads a host core of their own and SCHED_FIFO: a host thread's priority, not a separate core (QEMU's \
         big lock, the host's interrupts and memory are still shared). Without it, deadline misses and late \
         allocations measure the host's scheduling as much as Partita's.\n",
        run.isolation.unwrap_or("isolation: off (--no-isolate)")
    );
    text += "## Checks\n\n";
    text += &soak::markdown(&checks);
    text += "\n## Each partition's last counters\n\n| partition | counter lines | health events | last values |\n|---|--:|--:|---|\n";
    let counters = &analysis.counters;
    for (i, name) in counters.names.iter().enumerate() {
        let values: Vec<String> = counters.values[i].iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(text, "| {name} | {} | {} | {} |", counters.lines[i], counters.hm_events[i], values.join(" "));
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

/// Writes `summary.md` (or `name`) into `out_dir`; returns its path and the analysis.
pub fn write(
    run: &Run,
    system: &System,
    out_dir: &Path,
    name: &str,
    stream: Option<&Stream>,
) -> Result<(PathBuf, Analysis)> {
    let analysis = Analysis::of(out_dir, system, stream)?;
    let path = out_dir.join(name);
    std::fs::write(&path, markdown(run, system, &analysis, out_dir))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok((path, analysis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_line_says_when_cores_are_too_few() {
        assert_eq!(cores_line(8, 4), "host: 8 core(s) for 4 emulated core(s) and QEMU's main loop");
        assert!(cores_line(2, 4).contains("fewer than 5"), "{}", cores_line(2, 4));
    }
}
