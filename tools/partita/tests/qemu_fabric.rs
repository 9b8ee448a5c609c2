//! The reconfigurable fabric in QEMU: virtual devices driven by the test
//! guest, served by the PRR monitor on the emulated fabric, their results
//! checked against the host's own computation of the same input.

mod common;
mod fabric_reference;

use common::*;
use fabric_reference::expected_hash;
use partita::config::raw::{
    Micros, RawAction, RawChannel, RawConfig, RawFabric, RawHealth, RawPartition, RawVirtualDevice, Size,
};
use partita::run::RunOptions;
use partita::trace::read_file;
use partita_core::config::allocation::{device_latencies, Wait};
use partita_core::fabric::compute::Function;
use partita_core::fabric::manager::Path;
use partita_core::trace::{Event, Kind};

/// `accel: job J frames F result R hash H stat S alloc A ticks done D ticks fn NAME at T`
struct JobLine {
    job: u64,
    frames: u64,
    result: u64,
    hash: u64,
    stat: u32,
    function: Function,
}

fn jobs(log: &str) -> Vec<JobLine> {
    log.lines()
        .filter(|l| l.starts_with("accel: job ") && l.contains(" hash "))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            JobLine {
                job: w[2].parse().unwrap(),
                frames: w[4].parse().unwrap(),
                result: w[6].parse().unwrap(),
                hash: u64::from_str_radix(w[8], 16).unwrap(),
                stat: u32::from_str_radix(w[10].trim_start_matches("0x"), 16).unwrap(),
                function: Function::from_name(w[18]).unwrap(),
            }
        })
        .collect()
}

/// `count` jobs of `frames` frames each, all over, every one the host's
/// result for its function.
fn assert_jobs(log: &str, seed: u64, count: u64, frames: u64) {
    let lines = jobs(log);
    assert_eq!(lines.len() as u64, count, "{log}");
    for line in lines {
        assert_eq!((line.frames, line.result), (frames, frames), "{log}");
        assert_eq!(line.stat & !0xf, 0, "an error bit in STAT: {log}");
        let expected = expected_hash(line.function, seed + line.job, frames as usize);
        assert_eq!(line.hash, expected, "job {} of {}: not the host's result\n{log}", line.job, line.function);
    }
    assert!(log.contains("accel: done"), "{log}");
}

/// Connections by path, from the hypervisor's report at power-off:
/// `fabric: path NAME: N connection(s), ...`.
fn path_count(hypervisor: &str, path: &str) -> u64 {
    let prefix = format!("fabric: path {path}: ");
    hypervisor
        .lines()
        .find_map(|l| l.split_once(&prefix).map(|(_, rest)| rest.split_whitespace().next().unwrap().parse().unwrap()))
        .unwrap_or(0)
}

fn assert_paths(hypervisor: &str, expected: &[(&str, u64)]) {
    for path in
        ["assign", "assign+reconfig", "preempt", "preempt+reconfig", "unavailable, then served", "preempted, resumed"]
    {
        let want = expected.iter().find(|(p, _)| *p == path).map_or(0, |(_, n)| *n);
        assert_eq!(path_count(hypervisor, path), want, "connections by {path}:\n{hypervisor}");
    }
}

// Interface pages at their defaults: the board's window + 4 KiB x accelerator.
const QAM16: u64 = 0;
const QAM64: u64 = 1;
const FFT512: u64 = 2;
const FFT1024: u64 = 3;

/// Room for long streams: the test guest keeps its buffers in the upper
/// half of its RAM.
fn big(name: &str, cpus: &[u32], bootargs: &str) -> RawPartition {
    RawPartition::new(name, cpus).bootargs(bootargs).memory(RAM_BASE, 64 << 20).elf(&guest("elf"))
}

/// Ker-ONE's fabric with a hold long enough for an emulated vCPU, which a
/// busy host may leave unscheduled for milliseconds, to write START after
/// its connection: an expired hold would hand the PRR to the next waiting
/// request and make its holder ask again, which is the model but not what
/// these tests count.
fn patient_fabric() -> RawFabric {
    RawFabric { hold: Some(Micros(100_000)), ..RawFabric::default() }
}

/// A one-message queue from `from` to `to`: a turn handed on.
fn turn(name: &str, from: &str, to: &str) -> RawChannel {
    RawChannel::queuing(name, from, to, 8, 1)
}

fn accel_args(page: u64, function: Function, frames: u64, jobs: u64, seed: u64) -> String {
    format!(
        "ticks=1 period_ms=10 acc=0x{page:x} acc-fn={} acc-frames={frames} acc-jobs={jobs} acc-seed={seed}",
        function.name()
    )
}

/// Both partitions drive their devices natively. The GPOS's FFT-1024 is
/// downloaded into PRR 3 (Assign with Reconfig) and serves two jobs; once
/// it is done, the RTOS's own FFT-1024 finds PRR 3 idle and holding it
/// (Assign, Path 1), and its QAM-16, taking turns with it, is downloaded
/// into PRR 1. Every frame's output is the host's.
#[test]
fn native_devices_compute_the_host_s_results() {
    let rtos_args = format!(
        "{} acc2={:#x} acc2-fn=qam16 acc-wait=0",
        accel_args(interface_page(FFT1024), Function::Fft1024, 1, 2, 10),
        interface_page(QAM16)
    );
    let rtos = part("rtos", &[1], &rtos_args)
        .priority(200)
        .accelerator(RawVirtualDevice::new("qam16"))
        .accelerator(RawVirtualDevice::new("fft1024"));
    let gpos_args =
        format!("{} acc-tell=0 acc-tell-at=done", accel_args(interface_page(FFT1024), Function::Fft1024, 1, 2, 20));
    let gpos = part("gpos", &[2], &gpos_args).priority(50).accelerator(RawVirtualDevice::new("fft1024"));
    let config: RawConfig =
        machine([rtos, gpos]).cpus(3).fabric(patient_fabric()).channel(turn("turn", "gpos", "rtos"));
    let boot = boot_with("qemu-fabric-native", &config, icount_run());
    assert_powered_off(&boot);
    assert_jobs(boot.log("rtos"), 10, 4, 1);
    assert_jobs(boot.log("gpos"), 20, 2, 1);
    assert_paths(&boot.hypervisor, &[("assign", 1), ("assign+reconfig", 2)]);
}

/// Preemption, both ways, of a GPOS stream that resumes each time from its
/// saved context. gpos-a streams QAM-16 on PRR 1 and gpos-b QAM-64 on
/// PRR 2, so every PRR that can host either is busy for a partition of
/// lower priority. The RTOS's QAM-16 then preempts PRR 1, which holds
/// QAM-16 already (Path 3); gpos-a's stream resumes there once the RTOS's
/// job is over; 5 ms later the RTOS's QAM-64 preempts PRR 1, the smallest,
/// again and downloads QAM-64 into it (Path 4); gpos-a's stream resumes
/// once more, after a download of QAM-16. Every frame of every job is the
/// host's result. Under `-icount`: on the host's clock a busy host could
/// let gpos-a's stream end before the RTOS asks.
#[test]
fn preemption_stops_a_stream_at_a_consistency_point_and_it_resumes_intact() {
    let stream = |page, function, seed| format!("{} acc-tell=0", accel_args(page, function, 400, 1, seed));
    let gpos_a = big("gpos-a", &[1], &stream(interface_page(QAM16), Function::Qam16, 30))
        .priority(50)
        .accelerator(RawVirtualDevice::new("qam16"));
    let gpos_b_args = format!("{} acc-wait=0", stream(interface_page(QAM64), Function::Qam64, 40))
        .replace("acc-tell=0", "acc-tell=1");
    let gpos_b = big("gpos-b", &[2], &gpos_b_args).priority(50).accelerator(RawVirtualDevice::new("qam64"));
    let rtos_args = format!(
        "{} acc2={:#x} acc2-fn=qam64 acc-wait=1 acc-gap-us=5000",
        accel_args(interface_page(QAM16), Function::Qam16, 1, 1, 50),
        interface_page(QAM64)
    );
    let rtos = part("rtos", &[0], &rtos_args)
        .priority(200)
        .accelerator(RawVirtualDevice::new("qam16"))
        .accelerator(RawVirtualDevice::new("qam64"));
    let config = machine([rtos, gpos_a, gpos_b])
        .cpus(4)
        .fabric(patient_fabric())
        .channel(turn("a-to-b", "gpos-a", "gpos-b"))
        .channel(turn("b-to-rtos", "gpos-b", "rtos"));
    let boot = boot_with("qemu-fabric-preempt", &config, icount_run());
    assert_powered_off(&boot);
    assert_jobs(boot.log("rtos"), 50, 2, 1);
    assert_jobs(boot.log("gpos-a"), 30, 1, 400);
    assert_jobs(boot.log("gpos-b"), 40, 1, 400);
    assert_paths(
        &boot.hypervisor,
        &[("assign+reconfig", 2), ("preempt", 1), ("preempt+reconfig", 1), ("preempted, resumed", 2)],
    );
}

/// The bound `partita check` computes holds under `-icount`. gpos-a
/// streams QAM-64 and gpos-b FFT-512, of lower priority, so they hold
/// PRR 1 and PRR 2, every PRR that can host the RTOS's QAM-16, the whole
/// time the RTOS runs; each RTOS job preempts one of them and downloads
/// QAM-16 (Path 4). Every request, from the RTOS's write to its return,
/// takes no longer than L_alloc(WCET) from the board's measured costs.
#[test]
fn rtos_requests_against_busy_gpos_streams_are_served_within_the_checked_bound() {
    const RTOS_JOBS: u64 = 5;
    let gpos_a =
        big("gpos-a", &[1], &format!("{} acc-tell=0", accel_args(interface_page(QAM64), Function::Qam64, 60, 1, 90)))
            .priority(50)
            .accelerator(RawVirtualDevice::new("qam64"));
    let gpos_b_args =
        format!("{} acc-wait=0 acc-tell=1", accel_args(interface_page(FFT512), Function::Fft512, 10, 1, 100));
    let gpos_b = big("gpos-b", &[2], &gpos_b_args).priority(50).accelerator(RawVirtualDevice::new("fft512"));
    let rtos_args =
        format!("{} acc-wait=1 acc-gap-us=5000", accel_args(interface_page(QAM16), Function::Qam16, 1, RTOS_JOBS, 110));
    let rtos = part("rtos", &[0], &rtos_args).priority(200).accelerator(RawVirtualDevice::new("qam16"));
    let config = machine([rtos, gpos_a, gpos_b])
        .cpus(4)
        .fabric(patient_fabric())
        .channel(turn("a-to-b", "gpos-a", "gpos-b"))
        .channel(turn("b-to-rtos", "gpos-b", "rtos"))
        .trace(4096);
    let name = "qemu-fabric-bound";
    let Wait::Bounded { latency: Some(bound), .. } = first_device_wait(name, &config) else {
        panic!("the RTOS's QAM-16 is bounded")
    };
    let boot = boot_with(name, &config, icount_run());
    assert_powered_off(&boot);
    assert_jobs(boot.log("rtos"), 110, RTOS_JOBS, 1);
    assert_jobs(boot.log("gpos-a"), 90, 1, 60);
    assert_jobs(boot.log("gpos-b"), 100, 1, 10);
    assert_eq!(path_count(&boot.hypervisor, "preempt+reconfig"), RTOS_JOBS, "{}", boot.hypervisor);
    let (hz, _) = accel_events(name);
    assert_allocations_within(boot.log("rtos"), hz, bound.worst);
}

/// What `partita check` finds for the first device of `config`'s first
/// partition, with the board's measured costs.
fn first_device_wait(name: &str, config: &RawConfig) -> Wait {
    let system = write_config(name, config).system;
    let costs = partita::profile::for_board(&system.platform.board).unwrap().accel.expect("the board's costs measured");
    device_latencies(&system, Some(&costs)).swap_remove(0).wait
}

/// A run under `-icount`, so the guests' order is the same every time.
fn icount_run() -> RunOptions {
    RunOptions { seconds: Some(HANG_LIMIT), icount: Some(4), ..RunOptions::default() }
}

/// Every job in `log` was allocated its device within `worst_ns`: the
/// job line's `alloc` ticks, from the first write to its return.
fn assert_allocations_within(log: &str, hz: u64, worst_ns: u64) {
    for line in log.lines().filter(|l| l.starts_with("accel: job ")) {
        let alloc_ns = line.split_whitespace().nth(12).unwrap().parse::<u64>().unwrap() * 1_000_000_000 / hz;
        assert!(alloc_ns <= worst_ns, "{line}: {alloc_ns} ns, over the bound of {worst_ns} ns");
    }
}

/// The trace's counter frequency and its requests and connections in
/// time order.
fn accel_events(name: &str) -> (u64, Vec<Event>) {
    let (_, trace) = read_file(&out_dir(name).join("trace.bin")).expect("the trace parses");
    let mut events: Vec<Event> = trace
        .cpus
        .iter()
        .flatten()
        .filter(|e| matches!(e.kind, Kind::AccelRequest | Kind::AccelConnect))
        .copied()
        .collect();
    events.sort_by_key(|e| e.time);
    (trace.counter_hz, events)
}

/// A request that comes while a download is under way into the only PRR
/// that can host it waits for the download, then preempts the client it
/// was for, and the whole wait stays within `check`'s bound (its T_PCAP
/// term). Once the RTOS waits for its turn, the GPOS asks for FFT-1024
/// and tells it so; the RTOS makes its input and asks for its own
/// FFT-1024, a few milliseconds later, inside PRR 3's download, which a
/// slow configuration port stretches to 19 ms so that the order never
/// depends on how long the RTOS's input takes.
#[test]
fn a_request_behind_a_download_is_served_when_it_ends_within_the_checked_bound() {
    let gpos_args = format!(
        "{} acc-wait=1 acc-tell=0 acc-tell-at=ask",
        accel_args(interface_page(FFT1024), Function::Fft1024, 4, 1, 130)
    );
    let gpos = part("gpos", &[2], &gpos_args).priority(50).accelerator(RawVirtualDevice::new("fft1024"));
    let rtos_args = format!(
        "{} acc-tell=1 acc-tell-at=ready acc-wait=0",
        accel_args(interface_page(FFT1024), Function::Fft1024, 1, 1, 140)
    );
    let rtos = part("rtos", &[1], &rtos_args).priority(200).accelerator(RawVirtualDevice::new("fft1024"));
    let slow_port = RawFabric { bandwidth: Some(Size(8_000_000)), ..patient_fabric() };
    let config = machine([rtos, gpos])
        .cpus(3)
        .fabric(slow_port)
        .channel(turn("gpos-to-rtos", "gpos", "rtos"))
        .channel(turn("rtos-to-gpos", "rtos", "gpos"))
        .trace(4096);
    let name = "qemu-fabric-behind-download";
    let wait = first_device_wait(name, &config);
    let Wait::Bounded { latency: Some(bound), pcap_ns: Some(_), .. } = wait else {
        panic!("the RTOS's FFT-1024 is bounded, the GPOS's download counted: {wait:?}")
    };
    let boot = boot_with(name, &config, icount_run());
    assert_powered_off(&boot);
    assert_jobs(boot.log("rtos"), 140, 1, 1);
    assert_jobs(boot.log("gpos"), 130, 1, 4);
    assert_eq!(path_count(&boot.hypervisor, "assign+reconfig"), 1, "{}", boot.hypervisor);
    let (hz, events) = accel_events(name);
    let order: Vec<(Kind, u8)> = events.iter().map(|e| (e.kind, e.partition)).take(4).collect();
    let (rtos, gpos) = (0, 1);
    assert_eq!(
        order,
        [
            (Kind::AccelRequest, gpos),
            (Kind::AccelRequest, rtos),
            (Kind::AccelConnect, gpos),
            (Kind::AccelConnect, rtos),
        ],
        "the RTOS asks during the GPOS's download and is connected right after it: {events:#?}"
    );
    assert_eq!(events[3].arg >> 24, Path::Waited as u32, "the RTOS waited: {events:#?}");
    assert_allocations_within(boot.log("rtos"), hz, bound.worst);
}

/// A client lets its PRR go one hold after its last job, and its next job
/// asks again: Path 1, the accelerator still loaded. Under `-icount`, so
/// a busy host cannot stretch the guest's way from one write to the next
/// past the hold.
#[test]
fn a_client_idle_for_a_hold_lets_go_and_its_next_job_asks_again() {
    let args = format!("{} acc-gap-us=20000", accel_args(interface_page(QAM16), Function::Qam16, 1, 3, 120));
    let solo = part("solo", &[0], &args).accelerator(RawVirtualDevice::new("qam16"));
    let fabric = RawFabric { hold: Some(Micros(2_000)), ..RawFabric::default() };
    let config = machine([solo]).cpus(2).fabric(fabric);
    let boot = boot_with("qemu-fabric-let-go", &config, icount_run());
    assert_powered_off(&boot);
    assert_jobs(boot.log("solo"), 120, 3, 1);
    assert_paths(&boot.hypervisor, &[("assign+reconfig", 1), ("assign", 2)]);
}

/// The waiting list serves by priority, not arrival. The RTOS streams
/// FFT-1024 on PRR 3, the only PRR that can host it; `low` asks for it,
/// then `mid`; neither may preempt the RTOS, so both wait. Once the
/// stream is over, `mid` is connected first, then `low`, each with the
/// host's result.
#[test]
fn waiting_requests_are_served_by_priority_then_arrival() {
    let rtos = big(
        "rtos",
        &[0],
        &format!("{} acc-tell=0", accel_args(interface_page(FFT1024), Function::Fft1024, 100, 1, 60)),
    )
    .priority(200)
    .accelerator(RawVirtualDevice::new("fft1024"));
    let low_args = format!(
        "{} acc-wait=0 acc-tell=1 acc-tell-at=ask",
        accel_args(interface_page(FFT1024), Function::Fft1024, 1, 1, 70)
    );
    let low = part("low", &[1], &low_args).priority(50).accelerator(RawVirtualDevice::new("fft1024"));
    // Long enough after low's message that low's request comes first however
    // the host schedules the vCPUs.
    let mid_args =
        format!("{} acc-wait=1 acc-delay-ms=20", accel_args(interface_page(FFT1024), Function::Fft1024, 1, 1, 80));
    let mid = part("mid", &[2], &mid_args).priority(100).accelerator(RawVirtualDevice::new("fft1024"));
    let config = machine([rtos, low, mid])
        .cpus(4)
        .fabric(patient_fabric())
        .channel(turn("rtos-to-low", "rtos", "low"))
        .channel(turn("low-to-mid", "low", "mid"))
        .trace(4096);
    let boot = boot_with("qemu-fabric-waiting", &config, icount_run());
    assert_powered_off(&boot);
    assert_jobs(boot.log("rtos"), 60, 1, 100);
    assert_jobs(boot.log("low"), 70, 1, 1);
    assert_jobs(boot.log("mid"), 80, 1, 1);
    assert_paths(&boot.hypervisor, &[("assign+reconfig", 1), ("unavailable, then served", 2)]);
    let (_, events) = accel_events("qemu-fabric-waiting");
    let order: Vec<(Kind, u8)> = events.iter().map(|e| (e.kind, e.partition)).collect();
    let (rtos, low, mid) = (0, 1, 2);
    assert_eq!(
        order,
        [
            (Kind::AccelRequest, rtos),
            (Kind::AccelConnect, rtos),
            (Kind::AccelRequest, low),
            (Kind::AccelRequest, mid),
            (Kind::AccelConnect, mid),
            (Kind::AccelConnect, low),
        ],
        "{events:#?}"
    );
}

/// Isolation: a job whose input lies outside the holder's memory sets
/// ERR_DMA, touches nothing and is a stage-2 fault for the health monitor
/// (logged here, by policy); a partition that writes to an interface page
/// it was not given faults like any other write outside its map.
#[test]
fn devices_reach_only_their_holder_s_memory_and_only_their_holder() {
    let log_faults = RawHealth { stage2_fault: Some(RawAction::Log), ..RawHealth::default() };
    let bad = part("bad", &[1], &format!("{} acc-bad=1", accel_args(interface_page(QAM16), Function::Qam16, 1, 1, 1)))
        .accelerator(RawVirtualDevice::new("qam16"))
        .health(log_faults);
    let page = interface_page(QAM16);
    let stranger_args = format!("ticks=3 period_ms=20 misbehave=write-outside at=2 addr={page:#x}");
    let stranger = part("stranger", &[2], &stranger_args).health(halt_on_faults());
    let config = machine([bad, stranger]).cpus(3).fabric(RawFabric::default());
    let boot = boot_with("qemu-fabric-isolation", &config, icount_run());
    assert_powered_off(&boot);
    let lines = jobs(boot.log("bad"));
    assert_eq!(lines.len(), 1, "{}", boot.log("bad"));
    assert_ne!(lines[0].stat & 0x100, 0, "ERR_DMA: {}", boot.log("bad"));
    assert_eq!(lines[0].result, 0, "{}", boot.log("bad"));
    assert!(
        boot.hypervisor.contains("fabric: partition bad accelerator DMA outside its memory at 0x1000"),
        "{}",
        boot.hypervisor
    );
    let hm = hm_log("qemu-fabric-isolation");
    assert!(
        hm.lines().any(|l| l.contains("partition bad vcpu 0 Stage2Fault detail 0x1000") && l.ends_with("action Log")),
        "{hm}"
    );
    assert!(
        boot.hypervisor.contains("partition stranger vcpu 0 stopped: stage-2 data abort outside its memory")
            && boot.hypervisor.contains(&format!("address {page:#x}")),
        "{}",
        boot.hypervisor
    );
}

/// A partition that restarts while it holds a PRR releases it: in its
/// next life its first write asks again and is served again, with the
/// same results.
#[test]
fn a_restart_releases_the_prr_and_the_next_life_asks_again() {
    let args = format!("{} end=reset", accel_args(interface_page(QAM64), Function::Qam64, 1, 1, 5));
    let again = part("again", &[1], &args).accelerator(RawVirtualDevice::new("qam64"));
    let config = machine([again]).cpus(2).fabric(RawFabric::default());
    let boot = boot("qemu-fabric-restart", &config, 6);
    let log = boot.log("again");
    let lives = log.lines().filter(|l| l.starts_with("hello from partition again")).count();
    assert!(lives >= 2, "{log}");
    let lines = jobs(log);
    assert!(lines.len() >= 2, "{log}");
    for line in &lines {
        assert_eq!(line.hash, expected_hash(Function::Qam64, 5, 1), "{log}");
        assert_eq!(line.stat & !0xf, 0, "{log}");
    }
}

/// `accel: job J moved to cpu at frame K of N` -> (J, K, N), for every job
/// the guest moved to its CPU.
fn moves(log: &str) -> Vec<(u64, u64, u64)> {
    log.lines()
        .filter_map(|l| l.strip_prefix("accel: job "))
        .filter_map(|rest| {
            let w: Vec<&str> = rest.split_whitespace().collect();
            (w.get(1..6)? == ["moved", "to", "cpu", "at", "frame"])
                .then(|| (w[0].parse().unwrap(), w[6].parse().unwrap(), w[8].parse().unwrap()))
        })
        .collect()
}

/// The guest-aware GPOS: a stream of long FFT-1024 jobs on PRR 3, the
/// only PRR that can host it, with `acc-fallback`. The RTOS, once the
/// GPOS computes, asks for PRR 3 and preempts it at a consistency point;
/// the GPOS gives its device up and finishes the job on its CPU from the
/// frame RESULT counts, while its saved context is discarded: the job is
/// never resumed on the accelerator, even once the RTOS's job is over and
/// PRR 3 is free. Its next jobs ask afresh. Every job's output, frames of
/// the accelerator and of the CPU together, is the host's; the GPOS lives
/// until the RTOS is done, so a request left waiting would be served.
#[test]
fn a_preempted_gpos_moves_its_job_to_its_cpu_and_it_is_never_resumed() {
    // Its first job lasts 5.4 ms in the model, more than the RTOS's
    // delay, however fast the host computes: the RTOS, its input made
    // before it waits, preempts it.
    let frames = 60;
    let gpos_args = format!(
        "{} acc-fallback=1 acc-tell=0 ticks=0 until-off=0",
        accel_args(interface_page(FFT1024), Function::Fft1024, frames, 3, 90)
    );
    let gpos = big("gpos", &[2], &gpos_args).priority(50).accelerator(RawVirtualDevice::new("fft1024"));
    let rtos_args =
        format!("{} acc-wait=0 acc-delay-ms=2", accel_args(interface_page(FFT1024), Function::Fft1024, 100, 1, 95));
    let rtos = big("rtos", &[1], &rtos_args).priority(200).accelerator(RawVirtualDevice::new("fft1024"));
    let config = machine([rtos, gpos]).cpus(3).fabric(patient_fabric()).channel(turn("turn", "gpos", "rtos"));
    let boot = boot_with("qemu-fabric-fallback", &config, icount_run());
    assert_powered_off(&boot);
    let gpos_log = boot.log("gpos");
    let moved = moves(gpos_log);
    assert_eq!(moved.len(), 1, "one job moved to the cpu:\n{gpos_log}");
    // Job 0 unless the host kept the GPOS's vCPU from seeing it compute
    // for the whole job; the one the RTOS met is the one that moves.
    let (job, at, of) = moved[0];
    assert!(job < 3 && of == frames, "{gpos_log}");
    assert!(at < frames, "moved before the accelerator was done: {gpos_log}");
    assert_jobs(gpos_log, 90, 3, frames);
    assert_jobs(boot.log("rtos"), 95, 1, 100);
    assert_eq!(path_count(&boot.hypervisor, "preempt"), 1, "{}", boot.hypervisor);
    assert_eq!(path_count(&boot.hypervisor, "preempted, resumed"), 0, "resumed after it moved:\n{}", boot.hypervisor);
    assert_eq!(path_count(&boot.hypervisor, "preempt+reconfig"), 0, "{}", boot.hypervisor);
}

/// A request given up while it still waits is never served. The RTOS
/// streams FFT-1024 on PRR 3; the GPOS asks for it guest-aware, waits
/// `acc-fallback-ms`, gives its device up and computes the whole job on
/// its CPU. It lives on until the RTOS is done, yet PRR 3 is never
/// connected to it: the trace shows its request and no connection.
#[test]
fn a_gpos_that_gives_up_a_waiting_request_computes_on_its_cpu_and_is_never_connected() {
    let rtos = big(
        "rtos",
        &[1],
        &format!("{} acc-tell=0", accel_args(interface_page(FFT1024), Function::Fft1024, 100, 1, 100)),
    )
    .priority(200)
    .accelerator(RawVirtualDevice::new("fft1024"));
    let gpos_args = format!(
        "{} acc-wait=0 acc-fallback=1 acc-fallback-ms=3 ticks=0 until-off=0",
        accel_args(interface_page(FFT1024), Function::Fft1024, 4, 1, 110)
    );
    let gpos = part("gpos", &[2], &gpos_args).priority(50).accelerator(RawVirtualDevice::new("fft1024"));
    let config =
        machine([rtos, gpos]).cpus(3).fabric(patient_fabric()).channel(turn("turn", "rtos", "gpos")).trace(4096);
    let boot = boot("qemu-fabric-give-up", &config, HANG_LIMIT);
    assert_powered_off(&boot);
    let gpos_log = boot.log("gpos");
    assert_eq!(moves(gpos_log), [(0, 0, 4)], "{gpos_log}");
    assert_jobs(gpos_log, 110, 1, 4);
    assert_jobs(boot.log("rtos"), 100, 1, 100);
    assert_paths(&boot.hypervisor, &[("assign+reconfig", 1)]);
    let (_, trace) = read_file(&out_dir("qemu-fabric-give-up").join("trace.bin")).expect("the trace parses");
    let gpos = 1;
    let events: Vec<_> = trace.cpus.iter().flatten().filter(|e| e.partition == gpos).collect();
    let count = |kind: Kind| events.iter().filter(|e| e.kind == kind).count();
    assert_eq!((count(Kind::AccelRequest), count(Kind::AccelConnect)), (1, 0), "{events:#?}");
}

/// A START is never lost when it crosses the hold's expiry. A job's last
/// write is START; a hold of 50 us against a 30 us pause between jobs
/// (plus the guest's print and input) makes the fabric's pCPU let the PRR
/// go, again and again, just as the guest writes its registers. On the
/// wall clock, with the guest's pCPU running in parallel, some STARTs then
/// come through the writable mapping its TLB still caches, after the
/// disconnection looked for one: Partita must find them once that pCPU
/// has dropped the mapping and ask again, or the job never runs and the
/// guest times out. (Without that, about 1 job in 50 was lost.)
#[test]
fn a_start_written_as_the_hold_expires_is_never_lost() {
    const JOBS: u64 = 500;
    let args = format!("{} acc-gap-us=30", accel_args(interface_page(QAM16), Function::Qam16, 1, JOBS, 150));
    let solo = part("solo", &[0], &args).accelerator(RawVirtualDevice::new("qam16"));
    let fabric = RawFabric { hold: Some(Micros(50)), ..RawFabric::default() };
    let config = machine([solo]).cpus(2).fabric(fabric);
    let boot =
        boot_with("qemu-fabric-late-start", &config, RunOptions { seconds: Some(HANG_LIMIT), ..RunOptions::default() });
    assert_powered_off(&boot);
    assert!(!boot.log("solo").contains("timed out"), "a job never ran\n{}", boot.hypervisor);
    assert_jobs(boot.log("solo"), 150, JOBS, 1);
    // Informative: how often the race came this time.
    for line in boot.hypervisor.lines().filter(|l| l.starts_with("fabric:")) {
        eprintln!("{line}");
    }
}
