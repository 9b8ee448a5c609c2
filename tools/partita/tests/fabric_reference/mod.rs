//! The host's side of the fabric tests: what a guest's job must compute,
//! from the same input the guests make (both accel.c) with the same
//! generator, hashed the same way.

use partita_core::fabric::compute::fft::fft;
use partita_core::fabric::compute::qam::{map, Modulation};
use partita_core::fabric::compute::{Function, Sample, EXPERIMENT_FRAME_BITS, EXPERIMENT_FRAME_SAMPLES};

/// The guests' generator (both accel.c): xorshift64*.
pub struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn encode(samples: &[Sample]) -> Vec<u8> {
    samples.iter().flat_map(|s| [s[0].to_le_bytes(), s[1].to_le_bytes()].concat()).collect()
}

/// What `accel_job_input` makes of `seed`: `bytes` random bytes for a
/// QAM mapper, or for an FFT samples inside the unit circle, I then Q,
/// 16-bit little-endian.
pub fn job_input(qam: bool, seed: u64, bytes: usize) -> Vec<u8> {
    let mut rng = Rng(seed);
    if qam {
        return (0..bytes).map(|_| rng.next() as u8).collect();
    }
    let mut sample = || ((rng.next() % 46_341) as i32 - 23_170) as i16;
    let samples: Vec<Sample> = (0..bytes / 4).map(|_| [sample(), sample()]).collect();
    encode(&samples)
}

fn decode(bytes: &[u8]) -> Vec<Sample> {
    bytes.chunks_exact(4).map(|b| [i16::from_le_bytes([b[0], b[1]]), i16::from_le_bytes([b[2], b[3]])]).collect()
}

/// The hash of what a job of `frames` frames of Ker-ONE's length computes
/// from `seed`, done on the host.
pub fn expected_hash(function: Function, seed: u64, frames: usize) -> u64 {
    let mut out = Vec::new();
    match function {
        Function::Qam16 | Function::Qam64 => {
            let m = Modulation::of(function).unwrap();
            let bytes = EXPERIMENT_FRAME_BITS.div_ceil(8) as usize;
            let input = job_input(true, seed, bytes * frames);
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
            let input = decode(&job_input(false, seed, samples * 4 * frames));
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
