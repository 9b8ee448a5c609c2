//! Ker-ONE section 6.1's run: an RTOS and a GPOS share four virtual
//! devices over the three PRRs of Ker-ONE's fabric for a fixed time. The
//! RTOS (pCPU 1, high priority) takes turns between QAM-16 and FFT-1024,
//! one frame a job with a pause after each; the GPOS (pCPU 2, low) between
//! QAM-64 and FFT-512, ten frames a job, without pause. The report counts
//! each path's connections, and sets the largest latency measured on each
//! path of each RTOS device against the bound `partita check` computes
//! for it.

use super::scenarios::HOLD_US;
use super::steps::{self, Allocation};
use super::{ns_to_instructions, ticks_to_ns, writes, Options, RUN_LIMIT_S};
use crate::bench::{qemu, Board, Mode, Pass};
use crate::chart::{self, palette, Curve, LineChart};
use crate::config::raw::{Micros, RawChannel, RawConfig, RawFabric, RawVirtualDevice};
use crate::run::RunOptions;
use anyhow::{Context, Result};
use partita_core::config::allocation::{device_latencies, Wait};
use partita_core::fabric::bound::AtomicCosts;
use partita_core::fabric::manager::Path as AllocPath;
use partita_core::trace::Kind;
use plotters::prelude::SeriesLabelPosition;
use std::fmt::Write as _;
use std::path::Path;

const RTOS_GAP_US: u64 = 500;
const GPOS_FRAMES: u32 = 10;
const TRACE_EVENTS: u32 = 65_536;

/// One boot of the run.
pub struct Run {
    pub pass: Pass,
    pub hz: u64,
    pub ms: u32,
    /// The file its plot is written to.
    pub plot_file: String,
    /// Connections by path, every partition's.
    pub counts: [u64; AllocPath::ALL.len()],
    /// The RTOS's requests, with its device's accelerator name.
    pub rtos: Vec<(String, Allocation)>,
    /// Per RTOS device (accelerator name): eq. 6's paths, in ns, when the
    /// costs are known and the device is bounded.
    pub bounds: Vec<(String, [Option<u64>; 4])>,
    /// Jobs each partition completed.
    pub jobs: [usize; 2],
}

pub fn config(ms: u32, guest: &Path, board: Board) -> RawConfig {
    // The fabric lists QAM-16, QAM-64, FFT-512 and FFT-1024 in that order,
    // which places their interface pages.
    let page = |index| board.accelerator_page(index);
    let rtos_args = format!(
        "ticks=1 period_ms=1 acc=0x{:x} acc-fn=qam16 acc2=0x{:x} acc2-fn=fft1024 acc-frames=1 \
         acc-for-ms={ms} acc-gap-us={RTOS_GAP_US} acc-seed=1 acc-wait=0",
        page(0),
        page(3)
    );
    let gpos_args = format!(
        "ticks=1 period_ms=1 acc=0x{:x} acc-fn=qam64 acc2=0x{:x} acc2-fn=fft512 acc-frames={GPOS_FRAMES} \
         acc-for-ms={ms} acc-seed=1000 acc-tell=0",
        page(1),
        page(2)
    );
    let rtos = qemu::partition("rtos", &[1], &rtos_args, guest)
        .priority(200)
        .accelerator(RawVirtualDevice::new("qam16"))
        .accelerator(RawVirtualDevice::new("fft1024"));
    let gpos = qemu::partition("gpos", &[2], &gpos_args, guest)
        .priority(50)
        .accelerator(RawVirtualDevice::new("qam64"))
        .accelerator(RawVirtualDevice::new("fft512"));
    RawConfig::new()
        .board(board.name())
        .cpus(3)
        .fabric(RawFabric { cpu: Some(0), hold: Some(Micros(HOLD_US)), ..RawFabric::default() })
        .trace(TRACE_EVENTS)
        .partition(rtos)
        .partition(gpos)
        .channel(RawChannel::queuing("go", "gpos", "rtos", 8, 1))
}

pub fn run(opts: &Options, pass: Pass, hypervisor: &Path, guest: &Path, costs: Option<&AtomicCosts>) -> Result<Run> {
    let raw = config(opts.ofdm_ms, guest, opts.board);
    let variant = format!("ofdm-{}", pass.label().replace(' ', "-"));
    let (config, output) = qemu::generated(&opts.name, &variant, &raw, hypervisor)?;
    let run = RunOptions { seconds: Some(RUN_LIMIT_S), icount: pass.shift, ..RunOptions::default() };
    let report = qemu::to_power_off(&output, &config.system, &run, true)?;
    let logs = qemu::logs(&config.system, &report)?;
    let path = report.trace.with_context(|| format!("no trace.bin in {}", output.out_dir.display()))?;
    let (_, trace) = crate::trace::read_file(&path)?;
    let mut counts = [0; AllocPath::ALL.len()];
    for event in trace.cpus.iter().flatten().filter(|e| e.kind == Kind::AccelConnect) {
        if let Some(count) = counts.get_mut((event.arg >> 24) as usize) {
            *count += 1;
        }
    }
    let system = &config.system;
    let name_of = |device: usize| -> String {
        let accelerator = system.partitions[0].accelerators[device].accelerator;
        system.fabric.as_ref().map_or("?".into(), |f| f.accelerators[accelerator].name.clone())
    };
    let rtos_writes = writes(&logs[0].1);
    let rtos =
        steps::allocations(&trace, 0, &rtos_writes).into_iter().map(|a| (name_of(usize::from(a.device)), a)).collect();
    let bounds = device_latencies(system, costs)
        .into_iter()
        .filter(|d| d.partition == 0)
        .map(|d| {
            let paths = match d.wait {
                // Each path, behind whatever the PCAP had to do first.
                Wait::Bounded { latency: Some(bound), .. } => {
                    bound.paths.map(|path| path.map(|ns| ns + bound.pcap.unwrap_or(0)))
                }
                _ => [None; 4],
            };
            (name_of(d.device), paths)
        })
        .collect();
    let jobs = [rtos_writes.len(), writes(&logs[1].1).len()];
    let plot_file = format!("ofdm{}-{}.svg", super::file_suffix(opts.board), pass.label().replace(' ', "-"));
    Ok(Run { pass, hz: trace.counter_hz, ms: opts.ofdm_ms, plot_file, counts, rtos, bounds, jobs })
}

impl Run {
    /// A latency in ticks in the pass's unit: instructions, or µs.
    fn unit(&self, ticks: u64, shift: u32) -> f64 {
        let ns = ticks_to_ns(ticks, self.hz);
        match self.pass.mode {
            Mode::Icount => ns_to_instructions(ns, shift) as f64,
            Mode::Wall => ns as f64 / 1e3,
        }
    }

    fn unit_name(&self) -> &'static str {
        match self.pass.mode {
            Mode::Icount => "instr.",
            Mode::Wall => "µs",
        }
    }

    /// What the RTOS's write took, or Partita's own measure without it.
    fn latency(allocation: &Allocation) -> u64 {
        allocation.write.map_or(allocation.asked_to_connected, |w| w.t1 - w.t0)
    }

    pub fn markdown(&self, shift: u32) -> String {
        let unit = self.unit_name();
        let mut out = format!(
            "\n## The OFDM run ({}, {} ms)\n\nThe RTOS completed {} jobs, the GPOS {}. Connections by path, both \
             partitions:\n\n| path | connections |\n|---|---:|\n",
            self.pass.label(),
            self.ms,
            self.jobs[0],
            self.jobs[1]
        );
        for (path, count) in AllocPath::ALL.iter().zip(self.counts) {
            let _ = writeln!(out, "| {} | {count} |", path.name());
        }
        let _ = write!(
            out,
            "\nThe RTOS's requests, its write to the write's return ({unit}), against the bound:\n\n\
             | device | path | n | max measured | bound | within |\n|---|---|---:|---:|---:|---|\n"
        );
        for (device, paths) in &self.bounds {
            for (index, path) in AllocPath::ALL.iter().enumerate() {
                let latencies: Vec<u64> = self
                    .rtos
                    .iter()
                    .filter(|(d, a)| d == device && a.path == *path)
                    .map(|(_, a)| Self::latency(a))
                    .collect();
                let Some(&max) = latencies.iter().max() else { continue };
                let bound = paths.get(index).copied().flatten();
                let bound_ticks = bound.map(|ns| ns * self.hz / 1_000_000_000);
                let _ = writeln!(
                    out,
                    "| {device} | {} | {} | {:.0} | {} | {} |",
                    path.name(),
                    latencies.len(),
                    self.unit(max, shift),
                    bound_ticks.map_or("-".into(), |b| format!("{:.0}", self.unit(b, shift))),
                    bound_ticks.map_or("-", |b| if max <= b { "yes" } else { "NO" }),
                );
            }
        }
        let _ = writeln!(out, "\nPlot: `{}`.", self.plot_file);
        out
    }

    /// Each RTOS request's latency over the run, a color per path, with
    /// each path's bound as a line.
    pub fn plot(&self) -> Result<String> {
        const COLORS: [plotters::style::RGBColor; 6] =
            [palette::BLUE, palette::ORANGE, palette::GREEN, palette::RED, palette::PURPLE, palette::BROWN];
        let shift = self.pass.shift.unwrap_or(0);
        let start = self.rtos.iter().filter_map(|(_, a)| a.write.map(|w| w.t0)).min().unwrap_or(0);
        let ms = |t: u64| ticks_to_ns(t.saturating_sub(start), self.hz) as f64 / 1e6;
        let mut curves = Vec::new();
        let mut top: f64 = 1.0;
        for (index, path) in AllocPath::ALL.iter().enumerate() {
            let points: Vec<(f64, f64)> = self
                .rtos
                .iter()
                .filter(|(_, a)| a.path == *path)
                .filter_map(|(_, a)| a.write.map(|w| (ms(w.t0), self.unit(w.t1 - w.t0, shift))))
                .collect();
            if points.is_empty() {
                continue;
            }
            top = points.iter().map(|p| p.1).fold(top, f64::max);
            curves.push(Curve { name: path.name().to_string(), color: COLORS[index], points, width: 0 });
            let bound = self.bounds.iter().filter_map(|(_, paths)| paths.get(index).copied().flatten()).max();
            if let Some(ns) = bound {
                let y = self.unit(ns * self.hz / 1_000_000_000, shift);
                top = top.max(y);
                let points = vec![(0.0, y), (f64::from(self.ms), y)];
                curves.push(Curve { name: format!("bound, {}", path.name()), color: COLORS[index], points, width: 1 });
            }
        }
        chart::line_chart(&LineChart {
            caption: format!("RTOS allocation latency, OFDM run ({})", self.pass.label()),
            size: (900, 500),
            x: 0.0..f64::from(self.ms),
            y: 0.0..top * 1.1,
            x_desc: "time (ms)".into(),
            y_desc: format!("write to return ({})", self.unit_name()),
            y_label_area: 70,
            key_at: SeriesLabelPosition::UpperRight,
            dot: 3,
            curves,
        })
    }
}
