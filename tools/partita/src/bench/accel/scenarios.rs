//! The boots that make each of Ker-ONE's four paths happen again and
//! again, one PRR each, so every request of the measuring partition
//! (`bench`, pCPU 1) takes the path its scenario is named after:
//!
//! - `assign`: `bench` and `peer` (pCPU 2), of equal priority, take QAM-16
//!   in turns with pauses longer than the hold, so a request mostly finds
//!   the PRR idle with QAM-16 loaded; when it finds it busy it waits;
//! - `reconfig`: `bench` alternates QAM-16 and QAM-64 on the one PRR;
//! - `preempt`: `gpos`, of lower priority, streams QAM-16, and each of
//!   `bench`'s requests stops it at a consistency point; its stream
//!   resumes once `bench`'s job is over;
//! - `preempt-reconfig`: the same with `gpos` streaming QAM-64.
//!
//! The emulated fabric runs on pCPU 0.

use super::super::qemu::partition;
use super::super::Board;
use crate::config::raw::{Micros, RawChannel, RawConfig, RawFabric, RawPartition, RawVirtualDevice};
use std::path::Path;

#[derive(Clone)]
pub struct Scenario {
    pub name: &'static str,
    /// The partition whose requests are measured.
    pub requester: &'static str,
    /// The configuration, given the requests to make, the guest image and
    /// the board.
    pub config: fn(u32, &Path, Board) -> RawConfig,
}

pub fn all() -> Vec<Scenario> {
    vec![
        Scenario { name: "assign", requester: "bench", config: assign },
        Scenario { name: "reconfig", requester: "bench", config: reconfig },
        Scenario {
            name: "preempt",
            requester: "bench",
            config: |jobs, guest, board| preempt(jobs, guest, board, "qam16"),
        },
        Scenario {
            name: "preempt-reconfig",
            requester: "bench",
            config: |jobs, guest, board| preempt(jobs, guest, board, "qam64"),
        },
    ]
}

/// How long a PRR waits for its client's START. A request made while it
/// waits finds it in Hold, not Idle.
pub const HOLD_US: u64 = 200;
/// `bench`'s pause after each job: past the hold and a peer's frame, with
/// room to spare. Under `-icount` the emulated fabric computes a QAM-16
/// frame in about 8 ms of guest time, where Ker-ONE's takes 47 µs: its
/// results come when they are computed, never before the model's time.
const GAP_US: u64 = 20_000;
/// `peer`'s pause, not a multiple of `bench`'s, so their turns drift.
const PEER_GAP_US: u64 = 34_000;
/// Ker-ONE's PRR 2: 810 µs of download at 128 MB/s.
const BITSTREAM: u64 = 103_680;
/// Room in the trace for every step of every request.
const TRACE_EVENTS: u32 = 65_536;
/// Ker-ONE's four accelerators, in the order the fabric lists them, which
/// places their interface pages.
const ACCELERATORS: [&str; 4] = ["qam16", "qam64", "fft512", "fft1024"];

/// QAM-16's and QAM-64's interface pages, left at the board's defaults.
fn qam16_page(board: Board) -> u64 {
    board.accelerator_page(0)
}

fn qam64_page(board: Board) -> u64 {
    board.accelerator_page(1)
}

/// The PRR that can host `hosts`, with the fabric on pCPU 0. Every
/// accelerator must have a PRR, so the others get one of their own, which
/// no request of the scenario can use.
fn fabric(hosts: &[&str]) -> RawFabric {
    let others: Vec<&str> = ACCELERATORS.into_iter().filter(|a| !hosts.contains(a)).collect();
    RawFabric { cpu: Some(0), hold: Some(Micros(HOLD_US)), ..RawFabric::default() }
        .prr("prr", 8, BITSTREAM, hosts)
        .prr("others", 13, BITSTREAM, &others)
}

/// `jobs` one-frame jobs of `function` at `page`, a pause after each.
fn jobs_args(page: u64, function: &str, jobs: u32, gap_us: u64, seed: u64) -> String {
    format!(
        "ticks=1 period_ms=1 acc=0x{page:x} acc-fn={function} acc-frames=1 acc-jobs={jobs} acc-seed={seed} \
         acc-gap-us={gap_us}"
    )
}

fn machine(board: Board, partitions: Vec<RawPartition>, fabric: RawFabric) -> RawConfig {
    let mut config = RawConfig::new().board(board.name()).cpus(3).fabric(fabric).trace(TRACE_EVENTS);
    for p in partitions {
        config = config.partition(p);
    }
    config
}

fn assign(jobs: u32, guest: &Path, board: Board) -> RawConfig {
    let bench = partition("bench", &[1], &jobs_args(qam16_page(board), "qam16", jobs, GAP_US, 1), guest)
        .priority(100)
        .accelerator(RawVirtualDevice::new("qam16"));
    let peer = partition("peer", &[2], &jobs_args(qam16_page(board), "qam16", jobs, PEER_GAP_US, 1000), guest)
        .priority(100)
        .accelerator(RawVirtualDevice::new("qam16"));
    machine(board, vec![bench, peer], fabric(&["qam16"]))
}

/// `bench` alone, its pCPU to itself, and tracing off: Path 1 as the
/// null hypercall is measured, for the target that compares them. Its
/// first request downloads QAM-16; every later one finds it loaded and
/// the PRR idle.
pub fn assign_alone(jobs: u32, guest: &Path, board: Board) -> RawConfig {
    let bench = partition("bench", &[1], &jobs_args(qam16_page(board), "qam16", jobs, GAP_US, 1), guest)
        .priority(100)
        .accelerator(RawVirtualDevice::new("qam16"));
    RawConfig::new().board(board.name()).cpus(2).fabric(fabric(&["qam16"])).partition(bench)
}

fn reconfig(jobs: u32, guest: &Path, board: Board) -> RawConfig {
    let args = format!(
        "{} acc2=0x{:x} acc2-fn=qam64",
        jobs_args(qam16_page(board), "qam16", jobs / 2, GAP_US, 1),
        qam64_page(board)
    );
    let bench = partition("bench", &[1], &args, guest)
        .priority(100)
        .accelerator(RawVirtualDevice::new("qam16"))
        .accelerator(RawVirtualDevice::new("qam64"));
    machine(board, vec![bench], fabric(&["qam16", "qam64"]))
}

/// `gpos` streams `streamed` until `bench` is surely done; `bench` starts
/// once `gpos` computes.
fn preempt(jobs: u32, guest: &Path, board: Board, streamed: &str) -> RawConfig {
    let bench_args = format!("{} acc-wait=0", jobs_args(qam16_page(board), "qam16", jobs, GAP_US, 1));
    let bench = partition("bench", &[1], &bench_args, guest).priority(200).accelerator(RawVirtualDevice::new("qam16"));
    let page = if streamed == "qam16" { qam16_page(board) } else { qam64_page(board) };
    // Each of bench's turns takes its pause, a frame, a hold and a
    // download or two; twice as long as that is plenty.
    let for_ms = 20 + u64::from(jobs) * 2 * (GAP_US + 2 * 810 + HOLD_US) / 1000;
    let gpos_args = format!(
        "ticks=1 period_ms=1 acc=0x{page:x} acc-fn={streamed} acc-frames=40 acc-for-ms={for_ms} acc-seed=500 acc-tell=0"
    );
    let gpos = partition("gpos", &[2], &gpos_args, guest).priority(50).accelerator(RawVirtualDevice::new(streamed));
    let hosts: &[&str] = if streamed == "qam16" { &["qam16"] } else { &["qam16", "qam64"] };
    machine(board, vec![bench, gpos], fabric(hosts)).channel(RawChannel::queuing("go", "gpos", "bench", 8, 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config;

    #[test]
    fn every_scenario_loads() {
        let alone = Scenario { name: "assign-alone", requester: "bench", config: assign_alone };
        for (scenario, board) in all().into_iter().chain([alone]).flat_map(|s| Board::ALL.map(|b| (s.clone(), b))) {
            let path = std::env::temp_dir().join(format!(
                "partita-accel-{}-{}-{}.toml",
                scenario.name,
                board.name(),
                std::process::id()
            ));
            (scenario.config)(10, Path::new("guest.elf"), board).write(&path).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            let _ = std::fs::remove_file(&path);
            let loaded = config::load_str(&path, &text);
            // The image need not exist for the model to resolve.
            let errors: Vec<String> = match loaded {
                Ok(_) => Vec::new(),
                Err(errors) => errors.iter().map(ToString::to_string).filter(|e| !e.contains("guest.elf")).collect(),
            };
            assert!(errors.is_empty(), "{} on {}: {errors:?}", scenario.name, board.name());
        }
    }
}
