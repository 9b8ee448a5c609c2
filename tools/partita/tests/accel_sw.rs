//! The guests' software accelerators (`guests/common/accel_sw.c`), built
//! for the host behind `accel_sw_driver.c`, against the core's `Job`: the
//! same frame sizes, and the same bytes for any run of frames of a job,
//! from its first frame or from a later one, on aligned buffers and not.

use partita::paths;
use partita_core::fabric::compute::Function;
use partita_core::fabric::interface::Registers;
use partita_core::fabric::job::{Dma, Job};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// What the driver prefills the output with: frames it must not write keep it.
const FILL: u8 = 0xa5;

/// The driver, compiled once per test binary.
fn driver() -> &'static PathBuf {
    static DRIVER: OnceLock<PathBuf> = OnceLock::new();
    DRIVER.get_or_init(|| {
        let root = paths::source();
        let common = root.join("guests/common");
        let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("accel-sw-driver");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
        let out = Command::new(cc)
            .args(["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(&common)
            .arg(common.join("accel_sw.c"))
            .arg(root.join("tools/partita/tests/accel_sw_driver.c"))
            .arg("-o")
            .arg(&exe)
            .output()
            .expect("running the host C compiler");
        assert!(out.status.success(), "compiling the driver:\n{}", String::from_utf8_lossy(&out.stderr));
        exe
    })
}

/// The number `accel_sw.h` gives a function.
fn number(f: Function) -> u32 {
    match f {
        Function::Qam16 => 1,
        Function::Qam64 => 2,
        Function::Fft512 => 3,
        Function::Fft1024 => 4,
    }
}

fn run(args: &[String], stdin: &[u8]) -> Vec<u8> {
    let mut child = Command::new(driver())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the driver");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "driver {args:?} exited with {}", out.status);
    out.stdout
}

/// The C side's frame sizes, or None where it refuses the job.
fn sizes(function: u32, cmd: u32) -> Option<(u64, u64)> {
    let text = String::from_utf8(run(&["sizes".into(), function.to_string(), cmd.to_string()], &[])).unwrap();
    let mut words = text.split_whitespace();
    match (words.next()?, words.next()) {
        ("einval", None) => None,
        (a, Some(b)) => Some((a.parse().unwrap(), b.parse().unwrap())),
        _ => panic!("driver said {text:?}"),
    }
}

/// Frames `[first, first + count)` of the job with input `input`, by the
/// driver with both buffers `misalign` bytes off alignment.
fn software(f: Function, cmd: u32, input: &[u8], first: u64, count: u64, misalign: usize) -> Vec<u8> {
    let args = [
        "frames".to_string(),
        number(f).to_string(),
        cmd.to_string(),
        first.to_string(),
        count.to_string(),
        misalign.to_string(),
    ];
    run(&args, input)
}

const IN_BASE: u64 = 0x1000_0000;
const OUT_BASE: u64 = 0x2000_0000;

/// Guest memory as the accelerator sees it: the input buffer and the
/// output buffer, each at its own address.
struct Memory {
    input: Vec<u8>,
    output: Vec<u8>,
}

impl Memory {
    fn at(&mut self, addr: u64, len: usize) -> &mut [u8] {
        let (buf, at) =
            if addr >= OUT_BASE { (&mut self.output, addr - OUT_BASE) } else { (&mut self.input, addr - IN_BASE) };
        &mut buf[at as usize..at as usize + len]
    }
}

impl Dma for Memory {
    fn read(&mut self, addr: u64, out: &mut [u8]) {
        out.copy_from_slice(self.at(addr, out.len()));
    }

    fn write(&mut self, addr: u64, bytes: &[u8]) {
        self.at(addr, bytes.len()).copy_from_slice(bytes);
    }
}

fn registers(cmd: u32, input_bytes: usize, output_bytes: u64) -> Registers {
    let mut regs = Registers { cmd, data_addr: IN_BASE, data_size: input_bytes as u32, ..Registers::default() };
    regs.ports[0] = OUT_BASE as u32;
    regs.ports[2] = output_bytes as u32;
    regs
}

/// The whole job's output as the emulated accelerator computes it.
fn accelerator(f: Function, cmd: u32, input: &[u8], out_frame: u64) -> Vec<u8> {
    let frames = frames_of(f, cmd, input);
    let regs = registers(cmd, input.len(), frames * out_frame);
    let mut job = Job::new(f, &regs).expect("a job the accelerator takes");
    let mut mem = Memory { input: input.to_vec(), output: vec![0; (frames * out_frame) as usize] };
    while !job.is_done() {
        job.step(&mut mem, 1000);
    }
    mem.output
}

/// Frames of the job `input` makes, by the core's reckoning.
fn frames_of(f: Function, cmd: u32, input: &[u8]) -> u64 {
    Job::new(f, &registers(cmd, input.len(), u64::from(u32::MAX))).unwrap().frames()
}

/// xorshift64, for the tests' inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Frame lengths worth trying: Ker-ONE's (0), one that leaves a partial
/// byte or a zero-padded block, the shortest, and one just over a block.
fn commands(f: Function) -> [u32; 4] {
    match f {
        Function::Qam16 | Function::Qam64 => [0, 1_001, if f == Function::Qam16 { 4 } else { 6 }, 8_191],
        Function::Fft512 | Function::Fft1024 => [0, 700, 1, 1_025],
    }
}

#[test]
fn frame_sizes_match_the_core_s_job() {
    for f in Function::ALL {
        for cmd in commands(f) {
            let (in_frame, out_frame) = sizes(number(f), cmd).unwrap_or_else(|| panic!("{f} cmd {cmd} refused"));
            let job = Job::new(f, &registers(cmd, in_frame as usize, u64::from(u32::MAX))).unwrap();
            assert_eq!(job.frames(), 1, "{f} cmd {cmd}: {in_frame} bytes are not one frame");
            let [_, (_, out)] = Job::new(f, &registers(cmd, in_frame as usize, out_frame)).unwrap().buffers();
            assert_eq!(out, out_frame, "{f} cmd {cmd}");
        }
    }
    // A QAM frame too short for one symbol, and functions that do not exist.
    assert_eq!(sizes(number(Function::Qam64), 5), None);
    assert_eq!(sizes(number(Function::Qam16), 3), None);
    assert_eq!(sizes(0, 0), None);
    assert_eq!(sizes(5, 0), None);
}

#[test]
fn every_function_matches_the_accelerator_bit_for_bit_from_any_frame() {
    let mut rng = Rng(0x5eed_acce1);
    for f in Function::ALL {
        for cmd in commands(f) {
            let (in_frame, out_frame) = sizes(number(f), cmd).unwrap();
            let frames = 3u64;
            // Full-range bytes: for an FFT, samples off the unit circle
            // too, where the core saturates.
            let input = rng.bytes((frames * in_frame) as usize);
            assert_eq!(frames_of(f, cmd, &input), frames);
            let reference = accelerator(f, cmd, &input, out_frame);
            for first in 0..frames {
                for misalign in [0, 1] {
                    let count = frames - first;
                    let got = software(f, cmd, &input, first, count, misalign);
                    assert_eq!(got.len(), reference.len(), "{f} cmd {cmd}");
                    let from = (first * out_frame) as usize;
                    assert!(got[..from].iter().all(|&b| b == FILL), "{f} cmd {cmd}: wrote before frame {first}");
                    let differ = got[from..].iter().zip(&reference[from..]).position(|(a, b)| a != b);
                    assert_eq!(
                        differ, None,
                        "{f} cmd {cmd} from frame {first}, misaligned by {misalign}: first differing byte"
                    );
                }
            }
            // One frame in the middle leaves the last untouched.
            let got = software(f, cmd, &input, 1, 1, 0);
            let (one, two) = (out_frame as usize, (2 * out_frame) as usize);
            assert_eq!(got[one..two], reference[one..two], "{f} cmd {cmd}: frame 1 alone");
            assert!(got[two..].iter().all(|&b| b == FILL), "{f} cmd {cmd}: wrote past frame 1");
        }
    }
}

/// The guests' own jobs (`accel_job_input`, inside the unit circle for
/// an FFT), hashed: the same hash as the shared reference's, which the
/// QEMU tests hold the accelerators to.
#[test]
fn the_guests_jobs_hash_as_the_reference() {
    for (f, seed) in [(Function::Qam16, 11), (Function::Qam64, 12), (Function::Fft512, 13), (Function::Fft1024, 14)] {
        let (in_frame, _) = sizes(number(f), 0).unwrap();
        let qam = matches!(f, Function::Qam16 | Function::Qam64);
        let input = fabric_reference::job_input(qam, seed, (2 * in_frame) as usize);
        let got = software(f, 0, &input, 0, 2, 0);
        assert_eq!(fabric_reference::fnv1a(&got), fabric_reference::expected_hash(f, seed, 2), "{f}");
    }
}

mod fabric_reference;
