//! The guest-aware programming model in QEMU: the guest RTOS drives a
//! virtual accelerator through its library (`rtos_accel_run`,
//! `guests/rtos/include/rtos_partita.h`, bootargs `accel=`), asking with
//! `PARTITA_ACC_REQUEST` and sleeping until IPC_READY, while a test-guest
//! partition streams on the same kind of accelerator natively. The RTOS's
//! task waits, and another of its tasks runs meanwhile; every frame of
//! both is the host's computation.

mod common;
mod fabric_reference;

use common::*;
use fabric_reference::expected_hash;
use partita::config::raw::{Micros, RawChannel, RawFabric, RawPartition, RawPrr, RawVirtualDevice, Size};
use partita::guests;
use partita_core::fabric::compute::Function;

/// The word after `key` in `line`, parsed.
fn field<T: std::str::FromStr>(line: &str, key: &str) -> T {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == key).unwrap_or_else(|| panic!("no {key:?} in {line:?}"));
    words.get(at + 1).and_then(|w| w.parse().ok()).unwrap_or_else(|| panic!("a bad {key:?} in {line:?}"))
}

fn hash(line: &str) -> u64 {
    u64::from_str_radix(&field::<String>(line, "hash"), 16).unwrap()
}

fn job_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.starts_with("accel: job ") && l.contains(" hash ")).collect()
}

/// Connections by path, from the hypervisor's report at power-off.
fn path_count(hypervisor: &str, path: &str) -> u64 {
    let prefix = format!("fabric: path {path}: ");
    hypervisor
        .lines()
        .find_map(|l| l.split_once(&prefix).map(|(_, rest)| rest.split_whitespace().next().unwrap().parse().unwrap()))
        .unwrap_or(0)
}

const RTOS_SEED: u64 = 50;
const RTOS_JOBS: u64 = 4;
const RTOS_FRAMES: u64 = 2;
const STREAM_SEED: u64 = 30;
const STREAM_FRAMES: u64 = 800;

/// Ker-ONE's accelerators with one PRR for both mappers and one for both
/// FFTs, so that a stream on QAM-16 leaves no other PRR for it: every job
/// of the RTOS must preempt the stream (IPC_WAIT, then IPC_READY once the
/// stream stops at a consistency point), and the stream resumes between
/// them. The hold is long enough for an emulated vCPU, which a busy host
/// may leave unscheduled for milliseconds, to write START after READY;
/// an expired hold would hand the PRR back to the waiting stream.
fn one_qam_prr() -> RawFabric {
    let prr = |name: &str, size, bitstream, hosts: [&str; 2]| RawPrr {
        name: name.into(),
        size,
        bitstream: Size(bitstream),
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
    };
    RawFabric {
        hold: Some(Micros(100_000)),
        prr: vec![prr("qam", 8, 103_680, ["qam16", "qam64"]), prr("fft", 13, 154_368, ["fft512", "fft1024"])],
        ..RawFabric::default()
    }
}

fn rtos_part(name: &str, cpu: u32, bootargs: &str) -> RawPartition {
    RawPartition::new(name, &[cpu]).bootargs(bootargs).memory(RAM_BASE, RAM_SIZE).elf(&guests::image("rtos.elf"))
}

/// The RTOS (priority 200) asks for QAM-16 the guest-aware way only once
/// the test guest's stream (priority 50, native) computes on the one QAM
/// PRR. Each of its jobs waits for the stream to stop, its task asleep
/// while its other task counts; each job's output and the stream's, which
/// resumed after every job, are the host's.
#[test]
fn an_rtos_task_waits_for_ready_while_its_other_tasks_run() {
    let rtos_args = format!(
        "accel=qam16 accel_frames={RTOS_FRAMES} accel_jobs={RTOS_JOBS} accel_seed={RTOS_SEED} accel_wait=0 tick_hz=1000"
    );
    let rtos = rtos_part("rtos", 0, &rtos_args).priority(200).accelerator(RawVirtualDevice::new("qam16"));
    // The test guest's native driver (guests/test-guest/src/accel.c); it
    // tells the RTOS once its stream computes.
    let page = interface_page(0);
    let stream_args = format!(
        "ticks=1 period_ms=10 acc={page:#x} acc-fn=qam16 acc-frames={STREAM_FRAMES} acc-jobs=1 \
         acc-seed={STREAM_SEED} acc-tell=0"
    );
    let gpos = RawPartition::new("gpos", &[1])
        .bootargs(&stream_args)
        .memory(RAM_BASE, 64 << 20)
        .elf(&guest("elf"))
        .priority(50)
        .accelerator(RawVirtualDevice::new("qam16"));
    let config =
        machine([rtos, gpos]).cpus(3).fabric(one_qam_prr()).channel(RawChannel::queuing("turn", "gpos", "rtos", 8, 1));
    let boot = boot("qemu-fabric-rtos", &config, HANG_LIMIT);
    assert_powered_off(&boot);

    let rtos = boot.log("rtos");
    assert!(rtos.contains(&format!("accel: qam16 device 0 at {page:#x}, signals ")), "{rtos}");
    let lines = job_lines(rtos);
    assert_eq!(lines.len() as u64, RTOS_JOBS, "{rtos}");
    for (j, line) in lines.iter().enumerate() {
        assert_eq!(field::<u64>(line, "job"), j as u64, "{rtos}");
        assert_eq!((field::<u64>(line, "frames"), field::<u64>(line, "result")), (RTOS_FRAMES, RTOS_FRAMES), "{rtos}");
        let expected = expected_hash(Function::Qam16, RTOS_SEED + j as u64, RTOS_FRAMES as usize);
        assert_eq!(hash(line), expected, "job {j}: not the host's result\n{rtos}");
        // Each request found the PRR computing the stream: IPC_WAIT, then
        // READY once it stopped. The RTOS's own jobs are never preempted.
        assert_eq!(field::<u64>(line, "waits"), 1, "job {j}: not one IPC_WAIT\n{rtos}");
        assert_eq!(field::<u64>(line, "preempts"), 0, "{rtos}");
    }
    // Counted while the task slept until READY, at connection or at the
    // end of its job. The share before the connection alone is printed,
    // not asserted: on a host with fewer cores than QEMU has busy vCPU
    // threads, the request's hypercall can take milliseconds of counter
    // time (its vCPU descheduled, or spinning on a lock whose holder is),
    // and the connection may then be made before the task ever sleeps.
    let other = rtos
        .lines()
        .find(|l| l.starts_with("accel: other task ran "))
        .unwrap_or_else(|| panic!("no count of the other task:\n{rtos}"));
    assert!(field::<u64>(other, "ran") > 0, "the other task never ran while the first waited:\n{rtos}");
    assert!(rtos.lines().any(|l| l == "accel: done"), "{rtos}");

    // The stream was preempted by every job and resumed intact.
    let gpos = boot.log("gpos");
    let stream = job_lines(gpos);
    assert_eq!(stream.len(), 1, "{gpos}");
    assert_eq!(field::<u64>(stream[0], "result"), STREAM_FRAMES, "{gpos}");
    assert_eq!(hash(stream[0]), expected_hash(Function::Qam16, STREAM_SEED, STREAM_FRAMES as usize), "{gpos}");
    assert!(gpos.lines().any(|l| l == "accel: done"), "{gpos}");
    assert_eq!(path_count(&boot.hypervisor, "preempt"), RTOS_JOBS, "{}", boot.hypervisor);
    assert_eq!(path_count(&boot.hypervisor, "preempted, resumed"), RTOS_JOBS, "{}", boot.hypervisor);
}

/// Alone on Ker-ONE's fabric, the RTOS's FFT-512 is downloaded first
/// (IPC_WAIT, then READY once the bitstream is in), and its next job finds
/// the device still connected: no request waits. Both outputs, from the
/// samples the RTOS makes as the test guest does, are the host's.
#[test]
fn an_rtos_fft_job_waits_for_its_download_and_the_next_does_not() {
    let args = "accel=fft512 accel_frames=1 accel_jobs=2 accel_seed=70 tick_hz=1000";
    let rtos = rtos_part("rtos", 0, args).accelerator(RawVirtualDevice::new("fft512"));
    let config = machine([rtos]).cpus(2).fabric(RawFabric::default());
    let boot = boot("qemu-fabric-rtos-fft", &config, HANG_LIMIT);
    assert_powered_off(&boot);
    let rtos = boot.log("rtos");
    let lines = job_lines(rtos);
    assert_eq!(lines.len(), 2, "{rtos}");
    for (j, line) in lines.iter().enumerate() {
        assert_eq!(field::<u64>(line, "result"), 1, "{rtos}");
        assert_eq!(
            hash(line),
            expected_hash(Function::Fft512, 70 + j as u64, 1),
            "job {j}: not the host's result\n{rtos}"
        );
    }
    assert_eq!((field::<u64>(lines[0], "waits"), field::<u64>(lines[1], "waits")), (1, 0), "{rtos}");
    assert!(rtos.lines().any(|l| l == "accel: done"), "{rtos}");
    assert_eq!(path_count(&boot.hypervisor, "assign+reconfig"), 1, "{}", boot.hypervisor);
}

const TABLE6_FRAMES: u64 = 3;
const TABLE6_SEED: u64 = 90;

/// Ker-ONE's Table 6 in one boot: each function computed in software
/// (`accel_sw`) and through its virtual device on the same input; both
/// outputs are the host's, and both were timed.
#[test]
fn the_rtos_times_every_function_in_software_and_on_its_device() {
    let args = format!("accel_table6=all accel_frames={TABLE6_FRAMES} accel_seed={TABLE6_SEED} tick_hz=1000");
    let rtos = Function::ALL
        .into_iter()
        .fold(rtos_part("rtos", 0, &args), |p, f| p.accelerator(RawVirtualDevice::new(f.name())));
    let config = machine([rtos]).cpus(2).fabric(RawFabric::default());
    let boot = boot("qemu-fabric-rtos-table6", &config, HANG_LIMIT);
    assert_powered_off(&boot);
    let rtos = boot.log("rtos");
    let lines: Vec<&str> = rtos.lines().filter(|l| l.starts_with("accel-table6: fn ")).collect();
    let names: Vec<String> = lines.iter().map(|l| field::<String>(l, "fn")).collect();
    assert_eq!(names, Function::ALL.map(|f| f.name().to_string()), "{rtos}");
    for (line, f) in lines.iter().zip(Function::ALL) {
        let expected = expected_hash(f, TABLE6_SEED, TABLE6_FRAMES as usize);
        let hex = |key| u64::from_str_radix(&field::<String>(line, key), 16).unwrap();
        assert_eq!(hex("sw-hash"), expected, "{f} in software: not the host's result\n{rtos}");
        assert_eq!(hex("hw-hash"), expected, "{f} on its device: not the host's result\n{rtos}");
        assert_eq!((field::<u64>(line, "frames"), field::<u64>(line, "result")), (TABLE6_FRAMES, TABLE6_FRAMES));
        assert!(field::<u64>(line, "sw") > 0 && field::<u64>(line, "hw") > 0, "{line}");
        assert!(field::<u64>(line, "hz") > 0, "{line}");
    }
    assert!(rtos.lines().any(|l| l == "accel-table6: done"), "{rtos}");
}
