//! `partita`: check, build, boot and test Partita configurations.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use partita::bench::rtos::{self, Suite};
use partita::bench::{
    accel, accel_software, ipc, irq_latency, linux, pcs, ready_queue, report, response, rtl, timed_io, Board, Boards,
};
use partita::build::{self, BuildOutput};
use partita::config::{self, Config};
use partita::paths;
use partita::run::{self, Ending, RunOptions};
use partita::{check, guests, soak, summary, testcmd, trace};
use partita_core::config::model::System;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The shell's convention for "stopped by SIGINT".
const EXIT_INTERRUPTED: u8 = 130;
const DEMO_SECONDS: u64 = 30;
/// In guest time the demo stops once the RTOS has run this many seconds of
/// its own clock ([`RunOptions::guest_seconds`]).
const DEMO_GUEST_SECONDS: u64 = 5;
/// ... and after this many of the host's at most.
const DEMO_GUEST_TIME_LIMIT: u64 = 300;
/// The -icount shift of guest-time runs: one instruction per nanosecond,
/// a 1 GHz core, so that the demo's work fits its deadlines as on a board
/// (at shift 2, four cores taking turns on one host thread each get a
/// quarter of 250 MIPS).
const GUEST_TIME_SHIFT: &str = "0";
const SOAK_MINUTES: u64 = 60;
const SOAK_TRACE_EVERY: std::time::Duration = std::time::Duration::from_secs(20);

#[derive(Parser)]
#[command(name = "partita", version, about = "Partita: a static-partitioning mixed-criticality hypervisor for AArch64")]
struct Cli {
    /// Where builds, runs and benchmarks leave their outputs.
    #[arg(long, global = true, value_name = "DIR", default_value = "out")]
    out: PathBuf,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Validate a configuration; errors name the file, line and field.
    Check { config: PathBuf },
    /// Build the bootable image into <out>/<config-name>/partita.img.
    Build { config: PathBuf },
    /// Build, then boot in QEMU with one console per partition.
    Run {
        config: PathBuf,
        /// Stop QEMU after this many seconds (default: when it powers off).
        #[arg(long)]
        seconds: Option<u64>,
        /// Start halted with QEMU's gdb stub on :1234 and print the gdb command.
        #[arg(long)]
        gdb: bool,
        /// Guest time counts instructions (QEMU -icount shift=N): timing no
        /// longer depends on the host's load.
        #[arg(long, value_name = "SHIFT")]
        icount: Option<u32>,
        /// The terminal's keys go to this partition's virtio console
        /// (Ctrl-] moves them to the next console, Ctrl-\ stops the run).
        #[arg(long, value_name = "PARTITION")]
        attach: Option<String>,
        /// Give the vCPU threads of exclusive and high-criticality
        /// partitions a host core of their own and SCHED_FIFO, the other
        /// QEMU threads the remaining cores (see `partita demo --help`).
        #[arg(long)]
        isolate: bool,
    },
    /// Draw the event trace a run left in OUT_DIR/trace.bin: Perfetto JSON,
    /// a Gantt chart and an interrupt-latency histogram.
    Trace { out_dir: PathBuf },
    /// Boot configs/demo.toml and show every partition's console live.
    ///
    /// On a host with fewer cores than the configuration's pCPUs plus one,
    /// it runs in guest time (`--icount`) unless `--wall` is given: there
    /// QEMU's threads would wait for the host's cores, and the guests'
    /// deadlines would measure the host.
    Demo {
        /// Wall-clock seconds to run: 30 by default on the host's clock; in
        /// guest time the demo runs until the RTOS has run 5 s of its own
        /// clock (about a minute on two cores), at most this long.
        #[arg(long)]
        seconds: Option<u64>,
        /// Guest time: QEMU -icount shift=SHIFT (default 0, one
        /// instruction per nanosecond), one host thread running every
        /// emulated core in turns; the host's load cannot make a guest late.
        #[arg(long, value_name = "SHIFT", num_args = 0..=1, default_missing_value = GUEST_TIME_SHIFT,
              value_parser = clap::value_parser!(u32).range(0..=10), conflicts_with = "wall")]
        icount: Option<u32>,
        /// The host's clock, whatever the host: every emulated core a host
        /// thread of its own.
        #[arg(long)]
        wall: bool,
        /// Do not isolate the critical partition's emulated core. By
        /// default its vCPU thread gets a host core of its own and
        /// SCHED_FIFO, and QEMU's other threads the remaining cores: a
        /// host thread's priority, standing in for a board's separate core.
        #[arg(long)]
        no_isolate: bool,
    },
    /// Run the demo's system for minutes under Linux load and check it:
    /// deadlines, channel messages, accelerator allocations against their
    /// bound, timed-output error, health events. Writes <out>/soak/report.md;
    /// exits non-zero on a violation.
    Soak {
        #[arg(long, default_value_t = SOAK_MINUTES, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        minutes: u64,
        /// Seconds instead of minutes (short soaks, tests).
        #[arg(long, conflicts_with = "minutes", value_parser = clap::value_parser!(u64).range(10..))]
        seconds: Option<u64>,
        /// Guest time: QEMU -icount shift=SHIFT (default 0). The minutes
        /// are the host's; the report says how much guest time they covered.
        #[arg(long, value_name = "SHIFT", num_args = 0..=1, default_missing_value = GUEST_TIME_SHIFT,
              value_parser = clap::value_parser!(u32).range(0..=10))]
        icount: Option<u32>,
        /// The largest timed-output error allowed, in counter ticks; without
        /// it E is reported only (guest time is the host's wall clock).
        #[arg(long, value_name = "TICKS")]
        tio_target: Option<u64>,
        /// Do not isolate the critical partition's emulated core. By
        /// default its vCPU thread gets a host core of its own and
        /// SCHED_FIFO, and QEMU's other threads the remaining cores: a
        /// host thread's priority, standing in for a board's separate core.
        #[arg(long)]
        no_isolate: bool,
        /// Stop sooner, once the RTOS has run this many seconds of its own
        /// clock (its `t=` counter): with --icount, seconds of guest time.
        /// The minutes or seconds stay the limit.
        #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
        guest_seconds: Option<u64>,
    },
    /// Run every test and print a total.
    Test,
    /// Measure and report; nothing is asserted.
    Bench {
        #[command(subcommand)]
        what: Bench,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// Virtual-timer interrupt latency: natively, on an exclusive core under
    /// Partita (virtual and direct delivery), and on a core shared with a
    /// busy partition. Writes
    /// <out>/bench/irq-latency/report.md and report.json.
    ///
    /// On zcu102 (GIC-400) there is no native row (QEMU makes no device
    /// tree for that machine) and no direct one (refused on a GICv2 board);
    /// the report says so.
    IrqLatency {
        /// The board to run on; `both` runs every setup on qemu-virt
        /// (GICv3) and then on zcu102 (GICv2) before the next, and puts the
        /// two side by side with their ratio.
        #[arg(long, value_enum, default_value_t = Boards::QemuVirt)]
        board: Boards,
        /// After the wall-clock pass, run every setup again with QEMU
        /// -icount shift=SHIFT (with 4, one counter tick is one instruction).
        #[arg(long, value_name = "SHIFT")]
        icount: Option<u32>,
        /// QEMU boots per setup and mode; the table shows medians over them.
        #[arg(long, default_value_t = irq_latency::DEFAULT_RUNS, value_parser = clap::value_parser!(u32).range(1..))]
        runs: u32,
        /// Timer interrupts the guest times in each boot.
        #[arg(long, default_value_t = irq_latency::DEFAULT_SAMPLES,
              value_parser = clap::value_parser!(u32).range(1..=i64::from(irq_latency::MAX_SAMPLES)))]
        samples: u32,
    },
    /// Ready-queue lookup cost versus the priority found: the two-level
    /// bitmap against a linear scan from 255. Writes
    /// <out>/bench/ready-queue/report.md and curve.svg.
    ReadyQueue {
        /// Timed batches per queue and priority; the table shows medians.
        #[arg(long, default_value_t = ready_queue::DEFAULT_BATCHES, value_parser = clap::value_parser!(u32).range(1..))]
        batches: u32,
        /// Find-dequeue-enqueue operations per batch.
        #[arg(long, default_value_t = ready_queue::DEFAULT_OPS, value_parser = clap::value_parser!(u32).range(1..))]
        ops: u32,
    },
    /// The RTL in hardware/: cycles per operation of the ready queue and
    /// the PRR monitor, replayed in Icarus Verilog against the Rust models,
    /// and their Zynq-7000 resources from Yosys. Writes
    /// <out>/bench/rtl/report.md and rtl-<date>.md.
    Rtl {
        /// Random operations per block, after the edge cases.
        #[arg(long, default_value_t = rtl::DEFAULT_OPS)]
        ops: usize,
        /// Seed of the operation sequences.
        #[arg(long, default_value_t = rtl::DEFAULT_SEED)]
        seed: u64,
        /// Cycles only: skip the Yosys runs.
        #[arg(long)]
        no_synth: bool,
        /// Copy the report into bench/results/.
        #[arg(long)]
        save: bool,
    },
    /// Partition context switch (PCS) of a cyclic pCPU: two counting
    /// partitions alternate in 1 ms slots, wall-clock and under -icount 4,
    /// traced and untraced (timed by the partitions themselves). Writes
    /// <out>/bench/pcs/report.md and report.json.
    Pcs {
        /// QEMU boots per mode and tracing; the table shows medians over them.
        #[arg(long, default_value_t = pcs::DEFAULT_RUNS, value_parser = clap::value_parser!(u32).range(1..))]
        runs: u32,
        /// Write the result to platforms/<board>.toml (check uses it once
        /// partita is rebuilt), keeping the file's accel_* lines.
        #[arg(long)]
        save: bool,
        /// The board to measure on, and whose profile --save writes:
        /// qemu-virt (GICv3) or zcu102 (GIC-400).
        #[arg(long, value_enum, default_value_t = Board::QemuVirt)]
        board: Board,
    },
    /// XtratuM's Table 1: the share of its slots a partition loses to
    /// switches, for slots of 1000 ms down to 1 ms, against PCS / D.
    /// Writes <out>/bench/slots/report.md and report.json.
    Slots {
        /// QEMU boots per slot duration and mode; the table shows medians.
        #[arg(long, default_value_t = pcs::DEFAULT_RUNS, value_parser = clap::value_parser!(u32).range(1..))]
        runs: u32,
        /// Shift of the -icount pass that follows the wall-clock one (with 4,
        /// one counter tick is one instruction).
        #[arg(long, value_name = "SHIFT", default_value_t = pcs::DEFAULT_SHIFT,
              value_parser = clap::value_parser!(u32).range(0..=10))]
        icount: u32,
    },
    /// What Partita adds to an RTOS task's response (Ker-ONE Fig. 14, eq.
    /// 3-4): ΔVMMcritical per kind of pCPU, ΔVMMsched, Δ_VM^relEv and
    /// ΔResponse, under -icount. Writes <out>/bench/response/report.md,
    /// response-<date>.md and report.json.
    Response {
        /// Shift of -icount (with 4, one counter tick is one instruction).
        #[arg(long, value_name = "SHIFT", default_value_t = response::DEFAULT_SHIFT,
              value_parser = clap::value_parser!(u32).range(0..=10))]
        icount: u32,
        /// QEMU boots of the ΔVMMsched and Δ_VM^relEv setups; the worst counts.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        runs: u32,
        /// Samples of each latency in a boot.
        #[arg(long, default_value_t = response::DEFAULT_SAMPLES)]
        samples: u32,
        /// Write each term's worst case to platforms/qemu-virt.toml for
        /// `partita check`, and copy the report into bench/results/.
        #[arg(long)]
        save: bool,
    },
    /// Communication costs: a null hypercall, a queuing-port send and
    /// receive, the round trip through an echo partition, a doorbell, and
    /// a direct partition's SGI to itself (GICv3); wall-clock and under
    /// -icount. Writes <out>/bench/ipc/ipc-<date>.md.
    Ipc {
        /// The board to run on; `both` boots each setup on qemu-virt
        /// (GICv3) and then on zcu102 (GICv2) in every run, and puts the
        /// two side by side with their ratio.
        #[arg(long, value_enum, default_value_t = Boards::QemuVirt)]
        board: Boards,
        /// QEMU boots per pass; the report shows medians over them.
        #[arg(long, default_value_t = ipc::DEFAULT_RUNS, value_parser = clap::value_parser!(u32).range(1..))]
        runs: u32,
        /// Operations of each kind per boot.
        #[arg(long, default_value_t = ipc::DEFAULT_COUNT, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        count: u32,
        /// Shift of the -icount pass (with 4, one counter tick is one instruction).
        #[arg(long, value_name = "SHIFT", default_value_t = ipc::DEFAULT_SHIFT,
              value_parser = clap::value_parser!(u32).range(0..=10))]
        icount: u32,
        /// Copy the report into bench/results/ of the source tree.
        #[arg(long)]
        save: bool,
    },
    /// Timed outputs (BlueVisor's timing-accurate I/O): the error E of each
    /// GPIO output against its asked counter value, from the trace, for a
    /// partition alone on its pCPU and beside a busy one; under -icount and
    /// wall-clock. Writes <out>/bench/timed-io/timed-io-<date>.md.
    TimedIo {
        /// QEMU boots per setup and pass.
        #[arg(long, default_value_t = timed_io::DEFAULT_RUNS, value_parser = clap::value_parser!(u32).range(1..))]
        runs: u32,
        /// Outputs per boot, one every 500 µs (or five leads, if longer).
        #[arg(long, default_value_t = timed_io::DEFAULT_OUTPUTS, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        outputs: u32,
        /// How long before each output Partita's timer fires, in µs.
        #[arg(long, default_value_t = timed_io::DEFAULT_LEAD_US, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        lead_us: u64,
        /// Shift of the -icount pass (with 0, one counter tick is 16 instructions).
        #[arg(long, value_name = "SHIFT", default_value_t = timed_io::DEFAULT_SHIFT,
              value_parser = clap::value_parser!(u32).range(0..=10))]
        icount: u32,
        /// Copy the report into bench/results/ of the source tree.
        #[arg(long)]
        save: bool,
    },
    /// Linux beside an RTOS (vlk's Fig. 8): hackbench natively, under
    /// Partita alone and beside a 1 kHz RTOS busy f % of a shared pCPU, with
    /// and without migration; cyclictest natively and under Partita; under
    /// -icount and wall-clock. Writes <out>/bench/linux/linux-<date>.md and
    /// a chart per pass.
    Linux {
        /// QEMU boots per point; the report shows medians over them.
        #[arg(long, default_value_t = linux::DEFAULT_RUNS, value_parser = clap::value_parser!(u32).range(1..))]
        runs: u32,
        /// hackbench runs in each boot, one after the other.
        #[arg(long, default_value_t = linux::DEFAULT_PER_BOOT, value_parser = clap::value_parser!(u32).range(1..=100))]
        per_boot: u32,
        /// The RTOS's shares of the pCPU it shares with Linux, in percent.
        #[arg(long, value_delimiter = ',', default_values_t = linux::DEFAULT_FRACTIONS,
              value_parser = clap::value_parser!(u32).range(0..=90))]
        fractions: Vec<u32>,
        /// Shift of the -icount pass (0: one instruction per ns, a 1 GHz core).
        #[arg(long, value_name = "SHIFT", default_value_t = linux::DEFAULT_SHIFT,
              value_parser = clap::value_parser!(u32).range(0..=10))]
        icount: u32,
        /// Only the -icount pass.
        #[arg(long)]
        no_wall: bool,
        /// Copy the report into bench/results/ of the source tree.
        #[arg(long)]
        save: bool,
    },
    /// What an accelerator allocation costs (Ker-ONE section 6): Table 4's
    /// atomic costs from the trace, each path of eq. 6 measured against
    /// analysed, and the OFDM run of an RTOS and a GPOS sharing four
    /// virtual devices over three PRRs, with a plot; wall-clock and under
    /// -icount. Writes <out>/bench/accel/accel-<date>.md and ofdm-*.svg.
    Accel {
        /// Also a pass under -icount with this shift (with 4, one counter
        /// tick is one instruction); --save needs it.
        #[arg(long, value_name = "SHIFT", value_parser = clap::value_parser!(u32).range(0..=10))]
        icount: Option<u32>,
        /// Requests each path's scenario makes.
        #[arg(long, default_value_t = accel::DEFAULT_JOBS, value_parser = clap::value_parser!(u32).range(2..=1000))]
        jobs: u32,
        /// How long the OFDM run lasts, in ms of guest time.
        #[arg(long, default_value_t = accel::DEFAULT_OFDM_MS, value_parser = clap::value_parser!(u32).range(10..=10_000))]
        ofdm_ms: u32,
        /// Frames of each function that Table 6 computes in software and
        /// on its device.
        #[arg(long, default_value_t = accel_software::DEFAULT_FRAMES,
              value_parser = clap::value_parser!(u32).range(1..=accel_software::MAX_FRAMES as i64))]
        frames: u32,
        /// Write the -icount pass's costs into platforms/<board>.toml,
        /// for `partita check`, and copy the report into bench/results/.
        #[arg(long)]
        save: bool,
        /// The board to measure on, and whose profile --save writes:
        /// qemu-virt (GICv3) or zcu102 (GIC-400).
        #[arg(long, value_enum, default_value_t = Board::QemuVirt)]
        board: Board,
    },
    /// The RTOS's Thread-Metric tests (0-7 and the SVC variants of 3 and 4):
    /// natively, and under Partita alone (virtual and direct interrupts), loaded and sharing its pCPU; R_P =
    /// S_vm / S_native per test. Writes
    /// <out>/bench/thread-metric/thread-metric-<date>.md and .svg.
    ThreadMetric(RtosArgs),
    /// The RTOS's CoreMark-style workload, in the same setups as
    /// thread-metric. Writes <out>/bench/coremark/coremark-<date>.md and .svg.
    Coremark(RtosArgs),
    /// The RTOS's switch cost versus priority, bitmap and linear ready
    /// queue, natively and under Partita. Writes
    /// <out>/bench/sched-prio/sched-prio-<date>.md and .svg.
    SchedPrio(RtosArgs),
    /// thread-metric, coremark and sched-prio in one boot per setup. Writes
    /// <out>/bench/all/all-<date>.md, .svg and -sched-prio.svg.
    All(RtosArgs),
}

#[derive(Args)]
struct RtosArgs {
    /// After the wall-clock pass, run every setup but `loaded` again under
    /// QEMU -icount shift=SHIFT: instruction-counted, and the same every run.
    #[arg(long, value_name = "SHIFT", value_parser = clap::value_parser!(u32).range(0..=10))]
    icount: Option<u32>,
    /// Runs per setup and pass; the report shows medians over them.
    #[arg(long, default_value_t = rtos::DEFAULT_RUNS, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// Guest time of each Thread-Metric test's period.
    #[arg(long, default_value_t = rtos::DEFAULT_PERIOD_MS, value_parser = clap::value_parser!(u32).range(1..))]
    period_ms: u32,
    /// Guest time of the CoreMark-style run.
    #[arg(long, default_value_t = rtos::DEFAULT_COREMARK_MS, value_parser = clap::value_parser!(u32).range(1..))]
    coremark_ms: u32,
    /// Copy the report and its charts into bench/results/ of the source tree.
    #[arg(long)]
    save: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    paths::set_out(&cli.out);
    match execute(cli.command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn execute(command: Cmd) -> Result<ExitCode> {
    match command {
        Cmd::Check { config } => check::check(&config).map(|_| ExitCode::SUCCESS),
        Cmd::Build { config } => prepare(&config).map(|_| ExitCode::SUCCESS),
        Cmd::Run { config, seconds, gdb, icount, attach, isolate } => {
            boot(&config, RunOptions { seconds, live: true, gdb, icount, attach, isolate, ..RunOptions::default() })
        }
        Cmd::Trace { out_dir } => {
            println!("{}", trace::draw(&out_dir)?);
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Demo { seconds, no_isolate, icount, wall } => {
            let demo = paths::source().join("configs").join("demo.toml");
            let mut config = checked(&demo)?;
            let cpus = config.system.platform.cpus;
            let icount = if wall { None } else { icount.or_else(|| guest_time_by_default(cpus)) };
            let turn = summary::shorten_fabric_turn(&mut config.system, icount);
            let output = build::build(&config)?;
            println!("{}", summary::clock_line(icount, cpus));
            if let Some(line) = turn {
                println!("{line}");
            }
            let isolate = !no_isolate && icount.is_none();
            // Guest time runs about 14 times slower than the host's on two
            // cores: long enough for Linux to boot and take the telemetry.
            let guest_seconds = icount.map(|_| DEMO_GUEST_SECONDS);
            let seconds = seconds.unwrap_or(if icount.is_some() { DEMO_GUEST_TIME_LIMIT } else { DEMO_SECONDS });
            match guest_seconds {
                Some(guest) => println!("length: {guest} s of the RTOS's clock, at most {seconds} s of the host's"),
                None => println!("length: {seconds} s"),
            }
            let opts = RunOptions {
                seconds: Some(seconds),
                guest_seconds,
                live: true,
                icount,
                isolate,
                host_share: true,
                // On the wall clock the rings are copied as the soak's are:
                // each stop places the guests' clock on the host's from both
                // sides, for the host's share of a late job (host_share.rs).
                trace_every: icount.is_none().then_some(SOAK_TRACE_EVERY),
                ..RunOptions::default()
            };
            let started = std::time::Instant::now();
            let report = run::run(&output, &config.system, &opts)?;
            let seconds = started.elapsed().as_secs().min(seconds);
            // The demo leaves its trace drawn, not just recorded, and a page to open.
            let out = output.out_dir.clone();
            if out.join("trace.bin").exists() {
                println!("{}", trace::draw(&out)?);
            }
            let page = summary::Run {
                title: "Partita demo",
                seconds,
                icount,
                tio_target: icount.map(|_| GUEST_TIME_TIO_TARGET),
                isolation: report.isolation.as_deref(),
                host: report.host.as_ref(),
            };
            let (path, _) = summary::write(&page, &config.system, &out, summary::SUMMARY_FILE, report.stream.as_ref())?;
            println!("summary: {}", paths::shown(&path).display());
            Ok(exit_code(report.ending))
        }
        Cmd::Soak { minutes, seconds, tio_target, no_isolate, icount, guest_seconds } => {
            let tio_target = tio_target.or(icount.map(|_| GUEST_TIME_TIO_TARGET));
            let soak = Soak {
                seconds: seconds.unwrap_or(minutes * 60),
                guest_seconds,
                tio_target,
                isolate: !no_isolate && icount.is_none(),
                icount,
            };
            soak_run(&soak)
        }
        Cmd::Test => Ok(if testcmd::test()? { ExitCode::SUCCESS } else { ExitCode::FAILURE }),
        Cmd::Bench { what: Bench::IrqLatency { board, icount, runs, samples } } => {
            let opts =
                irq_latency::Options { runs, samples, icount, boards: board.list(), ..irq_latency::Options::default() };
            print!("{}", irq_latency::run(&opts)?.table());
            println!("report: {}/report.md, report.json", paths::bench_out(&opts.name).display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { what: Bench::Response { icount, runs, samples, save } } => {
            let opts = response::Options { shift: icount, runs, samples, ..response::Options::default() };
            let report = response::run(&opts)?;
            print!("{}", report.summary());
            if save {
                let profile = response::save(&report, &report::today())?;
                println!("saved: {}", paths::shown(&profile).display());
                let md = paths::bench_out(response::NAME).join(format!("response-{}.md", report::today()));
                for saved in report::save(&[md])? {
                    println!("saved: {}", paths::shown(&saved).display());
                }
            }
            println!("report: {}/report.md, report.json", paths::bench_out(response::NAME).display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { what: Bench::Pcs { runs, save, board } } => {
            let opts = pcs::PcsOptions { runs, save, board, ..pcs::PcsOptions::default() };
            print!("{}", pcs::pcs(&opts)?.table());
            println!("report: {}/report.md, report.json", paths::bench_out(pcs::PCS_NAME).display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { what: Bench::Slots { runs, icount } } => {
            let opts = pcs::SlotsOptions { runs, shift: icount, ..pcs::SlotsOptions::default() };
            print!("{}", pcs::slots(&opts)?.table());
            println!("report: {}/report.md, report.json", paths::bench_out(pcs::SLOTS_NAME).display());
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { what: Bench::Ipc { board, runs, count, icount, save } } => {
            let name = ipc::DEFAULT_NAME.to_string();
            let opts = ipc::Options { runs, count, shift: icount, name, boards: board.list() };
            let report = ipc::run(&opts)?;
            print!("{}", report.markdown());
            let written = ipc::write(&report, &opts.name)?;
            println!("report: {}", written.display());
            saved(&[written], save)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { what: Bench::TimedIo { runs, outputs, lead_us, icount, save } } => {
            let name = timed_io::DEFAULT_NAME.to_string();
            let opts = timed_io::Options { runs, outputs, shift: icount, lead_us, name };
            let report = timed_io::run(&opts)?;
            print!("{}", report.table().terminal());
            let written = timed_io::write(&report, &opts.name)?;
            println!("report: {}", written.display());
            saved(&[written], save)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { what: Bench::Linux { runs, per_boot, fractions, icount, no_wall, save } } => {
            let name = linux::DEFAULT_NAME.into();
            let opts = linux::Options { runs, per_boot, fractions, shift: icount, wall: !no_wall, name };
            let report = linux::run(&opts)?;
            print!("{}", report.table());
            let written = linux::write(&report, &opts.name)?;
            let markdown = linux::markdown_path(&written).context("no report written")?;
            println!("report: {}", markdown.display());
            // The report and its charts; report.json stays with the run.
            let kept: Vec<PathBuf> =
                written.into_iter().filter(|p| p.extension().is_some_and(|e| e != "json")).collect();
            saved(&kept, save)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { what: Bench::Accel { icount, jobs, ofdm_ms, frames, save, board } } => {
            let opts = accel::Options {
                shift: icount,
                jobs,
                ofdm_ms,
                frames,
                save,
                name: accel::DEFAULT_NAME.to_string(),
                board,
            };
            let report = accel::run(&opts)?;
            print!("{}", report.markdown());
            let written = accel::write(&report, &opts.name)?;
            for file in &written {
                println!("report: {}", file.display());
            }
            saved(&written, save)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { what: Bench::ThreadMetric(args) } => bench_rtos(Suite::ThreadMetric, args),
        Cmd::Bench { what: Bench::Coremark(args) } => bench_rtos(Suite::CoreMark, args),
        Cmd::Bench { what: Bench::SchedPrio(args) } => bench_rtos(Suite::SchedPrio, args),
        Cmd::Bench { what: Bench::All(args) } => bench_rtos(Suite::All, args),
        Cmd::Bench { what: Bench::Rtl { ops, seed, no_synth, save } } => {
            let opts = rtl::Options { ops, seed, synthesize: !no_synth, ..rtl::Options::default() };
            let (report, written) = rtl::run(&opts)?;
            print!("{}", report.table());
            println!("report: {}/report.md", paths::bench_out(&opts.name).display());
            saved(&[written], save)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Bench { what: Bench::ReadyQueue { batches, ops } } => {
            let opts = ready_queue::Options { batches, ops, ..ready_queue::Options::default() };
            print!("{}", ready_queue::run(&opts)?.table());
            println!("report: {}/report.md, curve.svg", paths::bench_out(&opts.name).display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A failed guest self-check fails the command, after the report that shows it is written.
fn bench_rtos(suite: Suite, args: RtosArgs) -> Result<ExitCode> {
    let opts = rtos::Options {
        runs: args.runs,
        icount: args.icount,
        period_ms: args.period_ms,
        coremark_ms: args.coremark_ms,
        ..rtos::Options::new(suite)
    };
    let (report, written) = rtos::run(&opts)?;
    print!("{}", report.table());
    for path in &written {
        println!("wrote {}", paths::shown(path).display());
    }
    saved(&written, args.save)?;
    Ok(if report.failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// With `--save`, copies a report's files into the source tree's `bench/results/`.
fn saved(files: &[PathBuf], save: bool) -> Result<()> {
    if save {
        for copy in report::save(files)? {
            println!("saved {}", paths::shown(&copy).display());
        }
    }
    Ok(())
}

/// The guests the configuration boots first, so that the check reads
/// fresh images; a file that fails to load builds nothing, and the check
/// says what is wrong with it.
fn checked(path: &Path) -> Result<Config> {
    if let Ok(config) = config::load(path) {
        guests::build_for(&config.files())?;
    }
    let config = check::check(path)?;
    if let Some(file) = config.unbuilt.first() {
        bail!("{}: its guest's build did not make it", paths::shown(file).display());
    }
    Ok(config)
}

fn prepare(path: &Path) -> Result<(Config, BuildOutput)> {
    let config = checked(path)?;
    let output = build::build(&config)?;
    Ok((config, output))
}

/// `--attach NAME` needs a partition with a virtio console.
fn attachable(system: &System, output: &BuildOutput, name: &str) -> Result<()> {
    let with_console: Vec<&str> =
        output.guest_consoles.iter().map(|c| system.partitions[c.partition].name.as_str()).collect();
    if with_console.contains(&name) {
        return Ok(());
    }
    let known =
        if system.partitions.iter().any(|p| p.name == name) { "has no virtio console" } else { "is not a partition" };
    let have = if with_console.is_empty() { "none does".to_string() } else { with_console.join(", ") };
    bail!("--attach {name}: {name} {known} (partitions with a virtio console: {have}; see docs/configuration.md, \"Virtio devices\")")
}

fn boot(path: &Path, opts: RunOptions) -> Result<ExitCode> {
    let (config, output) = prepare(path)?;
    if let Some(name) = &opts.attach {
        attachable(&config.system, &output, name)?;
    }
    let report = run::run(&output, &config.system, &opts)?;
    Ok(exit_code(report.ending))
}

fn exit_code(ending: Ending) -> ExitCode {
    match ending {
        Ending::Exited(status) if !status.success() => ExitCode::FAILURE,
        Ending::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
        _ => ExitCode::SUCCESS,
    }
}

/// The largest timed-output error a guest-time run allows, in counter
/// ticks: there Partita writes each output on its tick.
const GUEST_TIME_TIO_TARGET: u64 = 1;

/// The demo runs in guest time where the host has fewer cores than the
/// emulated ones and QEMU's main loop: there its threads would take turns
/// on the host's cores, and the guests' clocks would count the waits.
fn guest_time_by_default(emulated: u32) -> Option<u32> {
    let host = std::thread::available_parallelism().map_or(1, |n| n.get());
    summary::too_few_cores(host, emulated).then(|| GUEST_TIME_SHIFT.parse().expect("a shift"))
}

/// What `partita soak` was asked.
struct Soak {
    seconds: u64,
    guest_seconds: Option<u64>,
    tio_target: Option<u64>,
    isolate: bool,
    icount: Option<u32>,
}

/// The demo's system under the name `soak` (so <out>/soak/), for `seconds`,
/// with no live view; then the checks, printed and written to report.md.
fn soak_run(soak: &Soak) -> Result<ExitCode> {
    let &Soak { seconds, guest_seconds, tio_target, isolate, icount } = soak;
    let demo = paths::source().join("configs").join("demo.toml");
    let mut config = checked(&demo)?;
    config.system.name = "soak".into();
    let turn = summary::shorten_fabric_turn(&mut config.system, icount);
    let output = build::build(&config)?;
    let length = match guest_seconds {
        Some(guest) => format!("{guest} s of the RTOS's clock (at most {seconds} s)"),
        None => format!("{seconds} s"),
    };
    println!(
        "soak: {length} of configs/demo.toml under hackbench, logs in {}",
        paths::shown(&output.out_dir).display()
    );
    println!("{}", summary::clock_line(icount, config.system.platform.cpus));
    if let Some(line) = turn {
        println!("{line}");
    }
    // The rings hold about a minute of the RTOS's pCPU: copied every 20 s, none is lost.
    let opts = RunOptions {
        seconds: Some(seconds),
        guest_seconds,
        trace_every: Some(SOAK_TRACE_EVERY),
        isolate,
        icount,
        host_share: true,
        ..RunOptions::default()
    };
    let started = std::time::Instant::now();
    let report = run::run(&output, &config.system, &opts)?;
    // A soak stopped by its guest seconds ran for less than it was given.
    let seconds = started.elapsed().as_secs().min(seconds);
    if report.ending == Ending::Interrupted {
        println!("soak: interrupted, nothing checked");
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    let out = output.out_dir.clone();
    if out.join("trace.bin").exists() {
        trace::draw(&out)?;
    }
    let page = summary::Run {
        title: "Partita soak",
        seconds,
        icount,
        tio_target,
        isolation: report.isolation.as_deref(),
        host: report.host.as_ref(),
    };
    let (path, analysis) = summary::write(&page, &config.system, &out, "report.md", report.stream.as_ref())?;
    let checks = analysis.checks(tio_target);
    for line in analysis.late_lines() {
        println!("{line}");
    }
    for check in &checks {
        println!("{:<24} {:<8} {}", check.name, if check.ok { "ok" } else { "VIOLATED" }, check.detail);
    }
    println!("trace: {} copies merged, {} lost event(s)", analysis.copies, analysis.lost_total());
    // Repeated here so the verdict's context shows how the host ran it.
    if icount.is_none() {
        println!("{}", summary::host_cores(config.system.platform.cpus));
    }
    println!("{}", summary::isolation_line(report.isolation.as_deref(), icount));
    if let Some(note) = &analysis.host_note {
        println!("{note}");
    }
    if let Some(covered) = analysis.guest_seconds() {
        println!("guest time: {covered:.1} s");
    }
    println!("report: {}", paths::shown(&path).display());
    println!("{}", soak::verdict(&checks));
    Ok(if checks.iter().all(|c| c.ok) { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
