//! The reconfigurable fabric in QEMU: virtual devices driven by the test
//! guest, served by the PRR monitor on the emulated fabric, their results
//! checked against the host's own computation of the same input.

mod common;

use common::*;
use partita::config::raw::{RawAction, RawConfig, RawFabric, RawHealth, RawVirtualDevice};
use partita_core::fabric::compute::fft::fft;
use partita_core::fabric::compute::qam::{map, Modulation};
use partita_core::fabric::compute::{Function, Sample, EXPERIMENT_FRAME_BITS, EXPERIMENT_FRAME_SAMPLES};

/// The test guest's generator (accel.c): xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn encode(samples: &[Sample]) -> Vec<u8> {
    samples.iter().flat_map(|s| [s[0].to_le_bytes(), s[1].to_le_bytes()].concat()).collect()
}

/// The hash of what a job of `frames` frames of Ker-ONE's length computes
/// from `seed`, done on the host.
fn expected_hash(function: Function, seed: u64, frames: usize) -> u64 {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    match function {
        Function::Qam16 | Function::Qam64 => {
            let m = Modulation::of(function).unwrap();
            let bytes = EXPERIMENT_FRAME_BITS.div_ceil(8) as usize;
            let input: Vec<u8> = (0..bytes * frames).map(|_| rng.next() as u8).collect();
            let symbols = (EXPERIMENT_FRAME_BITS / m.bits()) as usize;
            for frame in input.chunks(bytes) {
                let mut symbols_out = vec![[0; 2]; symbols];
                assert_eq!(map(m, frame, 0, &mut symbols_out), symbols);
                out.extend(encode(&symbols_out));
            }
        }
        Function::Fft512 | Function::Fft1024 => {
            let n = if function == Function::Fft512 { 512 } else { 1024 };
            let samples = EXPERIMENT_FRAME_SAMPLES as usize;
            let mut sample = || ((rng.next() % 46_341) as i32 - 23_170) as i16;
            let input: Vec<Sample> = (0..samples * frames).map(|_| [sample(), sample()]).collect();
            for frame in input.chunks(samples) {
                for block in frame.chunks(n) {
                    let mut transformed = vec![[0; 2]; n];
                    fft(block, &mut transformed).unwrap();
                    out.extend(encode(&transformed));
                }
            }
        }
    }
    fnv1a(&out)
}

/// `accel: job J frames F result R hash H stat S alloc A ticks done D ticks`
struct JobLine {
    job: u64,
    frames: u64,
    result: u64,
    hash: u64,
    stat: u32,
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
            }
        })
        .collect()
}

fn assert_jobs(log: &str, function: Function, seed: u64, count: u64, frames: u64) {
    let lines = jobs(log);
    assert_eq!(lines.len() as u64, count, "{log}");
    for line in lines {
        assert_eq!((line.frames, line.result), (frames, frames), "{log}");
        assert_eq!(line.stat & !0xf, 0, "an error bit in STAT: {log}");
        let expected = expected_hash(function, seed + line.job, frames as usize);
        assert_eq!(line.hash, expected, "job {} of {function}: not the host's result\n{log}", line.job);
    }
    assert!(log.contains("accel: done"), "{log}");
}

fn accel_args(page: u64, function: Function, frames: u64, jobs: u64, seed: u64) -> String {
    format!(
        "ticks=1 period_ms=10 acc=0x{page:x} acc-fn={} acc-frames={frames} acc-jobs={jobs} acc-seed={seed}",
        function.name()
    )
}

/// Both partitions drive their devices natively: the RTOS's QAM-16 is
/// downloaded into PRR 1 (Assign with Reconfig), the GPOS's FFT-1024 into
/// PRR 3; a second job of each finds its device still connected. Every
/// frame's output is the host's.
#[test]
fn native_devices_compute_the_host_s_results() {
    let rtos = part("rtos", &[1], &accel_args(0x0b00_0000, Function::Qam16, 2, 2, 10))
        .priority(200)
        .accelerator(RawVirtualDevice::new("qam16"));
    let gpos = part("gpos", &[2], &accel_args(0x0b00_3000, Function::Fft1024, 1, 2, 20))
        .priority(50)
        .accelerator(RawVirtualDevice::new("fft1024"));
    let config: RawConfig = machine([rtos, gpos]).cpus(3).fabric(RawFabric::default());
    let boot = boot("qemu-fabric-native", &config, HANG_LIMIT);
    assert_powered_off(&boot);
    assert_jobs(boot.log("rtos"), Function::Qam16, 10, 2, 2);
    assert_jobs(boot.log("gpos"), Function::Fft1024, 20, 2, 1);
}

/// Isolation: a job whose input lies outside the holder's memory sets
/// ERR_DMA, touches nothing and is a stage-2 fault for the health monitor
/// (logged here, by policy); a partition that writes to an interface page
/// it was not given faults like any other write outside its map.
#[test]
fn devices_reach_only_their_holder_s_memory_and_only_their_holder() {
    let log_faults = RawHealth { stage2_fault: Some(RawAction::Log), ..RawHealth::default() };
    let bad = part("bad", &[1], &format!("{} acc-bad=1", accel_args(0x0b00_0000, Function::Qam16, 1, 1, 1)))
        .accelerator(RawVirtualDevice::new("qam16"))
        .health(log_faults);
    let stranger = part("stranger", &[2], "ticks=3 period_ms=20 misbehave=write-outside at=2 addr=0x0b000000");
    let config = machine([bad, stranger]).cpus(3).fabric(RawFabric::default());
    let boot = boot("qemu-fabric-isolation", &config, HANG_LIMIT);
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
            && boot.hypervisor.contains("address 0xb000000"),
        "{}",
        boot.hypervisor
    );
}

/// A partition that restarts while it holds a PRR releases it: in its
/// next life its first write asks again and is served again, with the
/// same results.
#[test]
fn a_restart_releases_the_prr_and_the_next_life_asks_again() {
    let args = format!("{} end=reset", accel_args(0x0b00_1000, Function::Qam64, 1, 1, 5));
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
