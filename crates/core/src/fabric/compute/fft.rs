//! The 512- and 1024-point FFTs in fixed point: Q15 samples in and out,
//! radix-2 decimation in time, each of the log2 N stages halving its
//! butterflies' sums, so a block's output is its DFT divided by N:
//! `X[k] = (1/N) Σ x[n] e^(-2πi kn/N)`.
//!
//! Each butterfly computes `(a ± w·b) / 2` in 64-bit integers and rounds
//! once, to nearest, ties up. Halving at every stage keeps each value's
//! modulus no larger than the largest input modulus (plus rounding), so an
//! input inside the Q15 unit circle, as the QAM mappers' points are, never
//! overflows; a component that would still leave the i16 range (inputs
//! such as (32767, 32767), outside the circle) saturates instead of
//! wrapping. The twiddles are a quarter-wave sine table computed at compile
//! time by integer arithmetic (no floating point in the hypervisor).
//!
//! Accuracy, as the tests measure it against an exact DFT on the host:
//! for inputs inside the unit circle the error's modulus is at most
//! (√2/2) log2 N + (√2/4)(log2 N - 2) LSB, 8.8 for N = 512 and 9.9 for
//! N = 1024 (rounding and twiddle error per stage, which later stages'
//! halving never amplifies); random inputs reach 3.8 and 4.0 LSB at most,
//! 0.6 LSB rms. Inputs with both components at full scale lie outside the
//! circle and may saturate from the third stage on: random ones then miss
//! by up to about 130 (N = 512) and 60 (N = 1024) LSB.
//!
//! Hand-written because the one `no_std` fixed-point FFT crate that fits
//! our float-free, allocation-free rule, `fixed-fft`, works on
//! `num_complex::Complex<i16>` (an old major version as a new dependency,
//! and a copy out of the interleaved guest layout), adds butterflies in
//! 16 bits, which wraps (or panics in a debug build) on full-scale inputs
//! off the unit circle, and halves its twiddles, which costs a bit of
//! precision per stage.

use super::{Context, ContextError, FrameError, Function, Progress, Sample, Saved, Stream};

/// The largest block; smaller powers of two use every `MAX_N / N`-th twiddle.
pub const MAX_N: usize = 1024;

/// π in Q60 (π · 2^60, rounded).
const PI_Q60: i128 = 3_622_009_729_038_561_421;

/// sin x for 0 ≤ x ≤ π/2, both in Q60, by its Taylor series: the terms fall
/// below 2^-60 after about 13, and every product fits in i128.
const fn sin_q60(x: i128) -> i128 {
    let x2 = (x * x) >> 60;
    let mut term = x;
    let mut sum = x;
    let mut k = 1;
    while term != 0 {
        term = -((term * x2) >> 60) / ((2 * k) * (2 * k + 1));
        sum += term;
        k += 1;
    }
    sum
}

/// `QUARTER[j]` is sin(2πj / MAX_N) · 32768, rounded, for j in 0..=MAX_N/4.
/// Unsigned so that sin 90° = 1.0 is exactly 32768: a twiddle of 32767 for
/// 1 and -i would shrink every trivial butterfly by 2^-15.
const QUARTER: [u16; MAX_N / 4 + 1] = {
    let mut table = [0; MAX_N / 4 + 1];
    let mut j = 0;
    while j <= MAX_N / 4 {
        let s = sin_q60(PI_Q60 * 2 * j as i128 / MAX_N as i128);
        table[j] = ((s + (1 << 44)) >> 45) as u16;
        j += 1;
    }
    table
};

/// `(cos θ, sin θ)` in Q15 for θ = 2πk / MAX_N, 0 ≤ k < MAX_N/2: the
/// twiddle is `cos θ - i sin θ`.
fn twiddle(k: usize) -> (i64, i64) {
    const Q: usize = MAX_N / 4;
    if k <= Q {
        (i64::from(QUARTER[Q - k]), i64::from(QUARTER[k]))
    } else {
        (-i64::from(QUARTER[k - Q]), i64::from(QUARTER[2 * Q - k]))
    }
}

/// `v / 2^16`, rounded to nearest, in the i16 range.
fn narrow(v: i64) -> i16 {
    ((v + (1 << 15)) >> 16).clamp(i64::from(i16::MIN), i64::from(i16::MAX)) as i16
}

/// Butterflies `from..from + count` of stage `stage` (0-based, pairs
/// `2^stage` apart) over `data`, which is in bit-reversed order before
/// stage 0; `data.len()` is the block size.
fn butterflies(data: &mut [Sample], stage: u32, from: usize, count: usize) {
    let half = 1usize << stage;
    let stride = MAX_N / (2 * half);
    for b in from..from + count {
        let k = b & (half - 1);
        let top = (b - k) * 2 + k;
        let bottom = top + half;
        let (c, s) = twiddle(k * stride);
        let [ar, ai] = data[top].map(i64::from);
        let [br, bi] = data[bottom].map(i64::from);
        // Products of two Q15 numbers, and `a` raised to meet them, so the
        // butterfly rounds once, in `narrow`.
        let (tr, ti) = (c * br + s * bi, c * bi - s * br);
        let (ar, ai) = (ar << 15, ai << 15);
        data[top] = [narrow(ar + tr), narrow(ai + ti)];
        data[bottom] = [narrow(ar - tr), narrow(ai - ti)];
    }
}

/// Index `i` of an `n`-point block with its `log2 n` bits reversed.
fn bit_reversed(i: usize, log2: u32) -> usize {
    i.reverse_bits() >> (usize::BITS - log2)
}

/// Why [`fft`] refused its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FftError {
    /// The block is not a power of two from 2 to [`MAX_N`].
    BlockSize,
    /// More input than the block holds.
    InputTooLong,
}

/// The DFT of `input` divided by the block's size, into `block`: input
/// shorter than the block is zero-padded to it.
pub fn fft(input: &[Sample], block: &mut [Sample]) -> Result<(), FftError> {
    let n = block.len();
    if !n.is_power_of_two() || !(2..=MAX_N).contains(&n) {
        return Err(FftError::BlockSize);
    }
    if input.len() > n {
        return Err(FftError::InputTooLong);
    }
    let log2 = n.trailing_zeros();
    for i in 0..n {
        block[bit_reversed(i, log2)] = input.get(i).copied().unwrap_or([0, 0]);
    }
    for stage in 0..log2 {
        butterflies(block, stage, 0, n / 2);
    }
    Ok(())
}

/// Which FFT accelerator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FftSize {
    N512,
    N1024,
}

impl FftSize {
    pub const fn points(self) -> usize {
        match self {
            FftSize::N512 => 512,
            FftSize::N1024 => 1024,
        }
    }

    pub const fn accelerator(self) -> Function {
        match self {
            FftSize::N512 => Function::Fft512,
            FftSize::N1024 => Function::Fft1024,
        }
    }

    pub const fn of(accelerator: Function) -> Option<FftSize> {
        match accelerator {
            Function::Fft512 => Some(FftSize::N512),
            Function::Fft1024 => Some(FftSize::N1024),
            Function::Qam16 | Function::Qam64 => None,
        }
    }
}

/// Where a block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Reading the block's input into `work`, bit-reversed; past the
    /// frame's end, zeros.
    Load,
    /// Running the butterflies of this stage.
    Stage(u32),
    /// Writing `work` out.
    Store,
}

/// An FFT working through a stream of frames in bounded steps.
///
/// A frame of `frame_len` samples is cut into consecutive blocks of N; the
/// last one, if short, is zero-padded, so the output frame is a whole
/// number of blocks ([`Stream::output_len`]). A unit of the budget is one
/// sample loaded, padded or stored, or one butterfly, so a block costs
/// 2N + (N/2) log2 N units.
///
/// The consistency points are the block boundaries: the block in flight
/// lives in `work`, the accelerator's own memory, which a context does not
/// hold, so the stream can stop only when no block is in flight. That is
/// why Ker-ONE's δ_pre for the FFTs is a fraction of their frame time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FftStream {
    size: FftSize,
    frame_len: u32,
    /// The block of the frame in flight, or next.
    block: u32,
    phase: Phase,
    /// Samples loaded or stored, or butterflies done, in this phase.
    cursor: usize,
    frames: u64,
    blocks: u64,
    work: [Sample; MAX_N],
}

impl FftStream {
    pub fn new(size: FftSize, frame_len: u32) -> Result<FftStream, FrameError> {
        if frame_len == 0 {
            return Err(FrameError::Empty);
        }
        Ok(FftStream {
            size,
            frame_len,
            block: 0,
            phase: Phase::Load,
            cursor: 0,
            frames: 0,
            blocks: 0,
            work: [[0; 2]; MAX_N],
        })
    }

    pub fn size(&self) -> FftSize {
        self.size
    }

    pub fn frame_len(&self) -> u32 {
        self.frame_len
    }

    pub fn blocks_per_frame(&self) -> u32 {
        self.frame_len.div_ceil(self.size.points() as u32)
    }

    /// Blocks completed since the stream began, over all frames.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    fn enter(&mut self, phase: Phase) {
        self.phase = phase;
        self.cursor = 0;
    }
}

impl Stream for FftStream {
    type Input = Sample;

    fn input_len(&self) -> usize {
        self.frame_len as usize
    }

    /// Whole blocks: the last one zero-padded.
    fn output_len(&self) -> usize {
        self.blocks_per_frame() as usize * self.size.points()
    }

    fn input_offset(&self) -> usize {
        let loaded = if self.phase == Phase::Load { self.cursor } else { self.size.points() };
        (self.block as usize * self.size.points() + loaded).min(self.frame_len as usize)
    }

    fn output_offset(&self) -> usize {
        let stored = if self.phase == Phase::Store { self.cursor } else { 0 };
        self.block as usize * self.size.points() + stored
    }

    fn frames(&self) -> u64 {
        self.frames
    }

    fn at_consistency_point(&self) -> bool {
        self.phase == Phase::Load && self.cursor == 0
    }

    fn step(&mut self, mut input: &[Sample], output: &mut [Sample], budget: usize) -> Progress {
        let n = self.size.points();
        let log2 = n.trailing_zeros();
        let mut left = budget;
        loop {
            match self.phase {
                Phase::Load => {
                    let valid = (self.frame_len as usize - self.block as usize * n).min(n);
                    while left > 0 && self.cursor < n {
                        let sample = if self.cursor < valid {
                            let Some((&first, rest)) = input.split_first() else { return Progress::Running };
                            input = rest;
                            first
                        } else {
                            [0, 0]
                        };
                        self.work[bit_reversed(self.cursor, log2)] = sample;
                        self.cursor += 1;
                        left -= 1;
                    }
                    if self.cursor < n {
                        return Progress::Running;
                    }
                    self.enter(Phase::Stage(0));
                }
                Phase::Stage(stage) => {
                    let count = left.min(n / 2 - self.cursor);
                    butterflies(&mut self.work[..n], stage, self.cursor, count);
                    self.cursor += count;
                    left -= count;
                    if self.cursor < n / 2 {
                        return Progress::Running;
                    }
                    self.enter(if stage + 1 < log2 { Phase::Stage(stage + 1) } else { Phase::Store });
                }
                Phase::Store => {
                    let count = left.min(n - self.cursor).min(output.len());
                    output[..count].copy_from_slice(&self.work[self.cursor..self.cursor + count]);
                    self.cursor += count;
                    if self.cursor < n {
                        return Progress::Running;
                    }
                    self.enter(Phase::Load);
                    self.blocks += 1;
                    self.block += 1;
                    if self.block < self.blocks_per_frame() {
                        return Progress::Block;
                    }
                    self.block = 0;
                    self.frames += 1;
                    return Progress::Frame;
                }
            }
        }
    }

    fn save(&self, out: &mut Context) -> Result<(), ContextError> {
        if !self.at_consistency_point() {
            return Err(ContextError::NotAtConsistencyPoint);
        }
        let accelerator = self.size.accelerator();
        Saved { accelerator, frame_len: self.frame_len, position: self.block, frames: self.frames, units: self.blocks }
            .write(out);
        Ok(())
    }

    fn restore(ctx: &Context) -> Result<FftStream, ContextError> {
        let saved = Saved::read(ctx)?;
        let size = FftSize::of(saved.accelerator).ok_or(ContextError::WrongAccelerator(saved.accelerator))?;
        let stream = FftStream::new(size, saved.frame_len).map_err(|_| ContextError::Corrupt)?;
        if saved.position >= stream.blocks_per_frame() {
            return Err(ContextError::Corrupt);
        }
        Ok(FftStream { block: saved.position, frames: saved.frames, blocks: saved.units, ..stream })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tests::{drive, Rng};
    use super::super::{CONTEXT_SIZE, EXPERIMENT_FRAME_SAMPLES};
    use super::*;
    use core::f64::consts::{PI, SQRT_2};
    use std::vec;
    use std::vec::Vec;

    /// The exact DFT of `x`, zero-padded to `n`, divided by `n`.
    fn reference(x: &[Sample], n: usize) -> Vec<(f64, f64)> {
        let (cos, sin): (Vec<f64>, Vec<f64>) =
            (0..n).map(|m| 2.0 * PI * m as f64 / n as f64).map(|a| (a.cos(), a.sin())).unzip();
        (0..n)
            .map(|k| {
                let (mut re, mut im) = (0.0, 0.0);
                for (i, &[xr, xi]) in x.iter().enumerate() {
                    let (c, s) = (cos[k * i % n], sin[k * i % n]);
                    let (xr, xi) = (f64::from(xr), f64::from(xi));
                    re += xr * c + xi * s;
                    im += xi * c - xr * s;
                }
                (re / n as f64, im / n as f64)
            })
            .collect()
    }

    /// The worst case of the error's modulus, in LSB, for a block of
    /// 2^log2 inputs inside the unit circle. Each stage adds its rounding
    /// (at most 1/2 per component: √2/2) and, from the third stage on, its
    /// twiddle's error (at most √2/2 LSB of Q15 times |b| ≤ 1, halved:
    /// √2/4); a stage halves the sum of two errors, so what the earlier
    /// stages left grows by neither. The first two stages' twiddles, 1 and
    /// -i, are exact.
    fn bound(log2: u32) -> f64 {
        SQRT_2 / 2.0 * f64::from(log2) + SQRT_2 / 4.0 * f64::from(log2.saturating_sub(2))
    }

    struct Errors {
        max: f64,
        sum_sq: f64,
        count: usize,
    }

    impl Errors {
        fn new() -> Errors {
            Errors { max: 0.0, sum_sq: 0.0, count: 0 }
        }

        /// Runs the FFT on `x` and records its error against the reference.
        fn check(&mut self, x: &[Sample], n: usize) -> Vec<Sample> {
            let mut out = vec![[0; 2]; n];
            fft(x, &mut out).unwrap();
            for (&[re, im], (rr, ri)) in out.iter().zip(reference(x, n)) {
                let e = (f64::from(re) - rr).hypot(f64::from(im) - ri);
                self.max = self.max.max(e);
                self.sum_sq += e * e;
                self.count += 1;
            }
            out
        }

        fn rms(&self) -> f64 {
            (self.sum_sq / self.count as f64).sqrt()
        }
    }

    /// A sample uniformly inside the Q15 unit circle.
    fn in_circle(rng: &mut Rng) -> Sample {
        loop {
            let r = rng.below(65_535) as i32 - 32_767;
            let i = rng.below(65_535) as i32 - 32_767;
            if r * r + i * i <= 32_767 * 32_767 {
                return [r as i16, i as i16];
            }
        }
    }

    #[test]
    fn the_twiddles_are_sines_rounded() {
        assert!((PI_Q60 as f64 / 2f64.powi(60) - PI).abs() < 1e-15);
        for (j, &q) in QUARTER.iter().enumerate() {
            let exact = (2.0 * PI * j as f64 / MAX_N as f64).sin() * 32_768.0;
            assert!((f64::from(q) - exact).abs() <= 0.5 + 1e-9, "sin entry {j}: {q} for {exact}");
        }
        assert_eq!((QUARTER[0], QUARTER[MAX_N / 4]), (0, 32_768), "0 and 1 are exact");
        for k in 0..MAX_N / 2 {
            let (c, s) = twiddle(k);
            let a = 2.0 * PI * k as f64 / MAX_N as f64;
            assert!((c as f64 - a.cos() * 32_768.0).abs() <= 0.5 + 1e-9, "cos {k}");
            assert!((s as f64 - a.sin() * 32_768.0).abs() <= 0.5 + 1e-9, "sin {k}");
        }
    }

    #[test]
    fn impulses_spread_flat_with_their_phase() {
        for n in [8usize, 512, 1024] {
            let log2 = n.trailing_zeros();
            let mut errors = Errors::new();
            for at in [0, 1, 7, n / 2 - 1, n - 1] {
                let mut x = vec![[0; 2]; n];
                x[at] = [32_767, 0];
                errors.check(&x, n);
                x[at] = [-20_000, 25_000];
                errors.check(&x, n);
            }
            assert!(errors.max <= bound(log2), "N={n}: impulse error {} > {}", errors.max, bound(log2));
        }
        let mut out = [[0; 2]; 8];
        fft(&[[8_000, -800]], &mut out).unwrap();
        assert_eq!(out, [[1_000, -100]; 8], "an impulse at 0 is flat and exact when N divides it");
    }

    #[test]
    fn a_tone_at_bin_k_lands_in_bin_k() {
        for n in [512usize, 1024] {
            let log2 = n.trailing_zeros();
            let mut errors = Errors::new();
            for k in [0, 1, 5, 100, n / 2, n - 3] {
                let amplitude = 30_000.0;
                let x: Vec<Sample> = (0..n)
                    .map(|i| {
                        let a = 2.0 * PI * (k * i % n) as f64 / n as f64;
                        [(amplitude * a.cos()).round() as i16, (amplitude * a.sin()).round() as i16]
                    })
                    .collect();
                let out = errors.check(&x, n);
                let energy = |s: &Sample| f64::from(s[0]).powi(2) + f64::from(s[1]).powi(2);
                let total: f64 = out.iter().map(energy).sum();
                assert!(energy(&out[k]) / total > 0.9999, "N={n} k={k}: bin k holds too little");
                assert!((f64::from(out[k][0]) - amplitude).abs() <= bound(log2), "N={n} k={k}: {:?}", out[k]);
            }
            assert!(errors.max <= bound(log2), "N={n}: tone error {}", errors.max);
        }
    }

    #[test]
    fn random_inputs_stay_within_the_bound() {
        let mut rng = Rng(0x0ff7);
        for (n, blocks) in [(512usize, 24), (1024, 12)] {
            let log2 = n.trailing_zeros();
            let mut errors = Errors::new();
            for _ in 0..blocks {
                let x: Vec<Sample> = (0..n).map(|_| in_circle(&mut rng)).collect();
                errors.check(&x, n);
            }
            std::println!(
                "N={n}: max error {:.3} LSB (bound {:.3}), rms {:.3} LSB",
                errors.max,
                bound(log2),
                errors.rms()
            );
            assert!(errors.max <= bound(log2), "N={n}: max error {}", errors.max);
            // Each stage's rounding noise (1/12 LSB² per component) is
            // halved in power by every later stage, so about 2/12 per
            // component reach the output: an rms modulus near 0.58 LSB.
            assert!(errors.rms() <= 0.7, "N={n}: rms error {}", errors.rms());
        }
    }

    #[test]
    fn energy_is_kept_as_parseval_says() {
        let mut rng = Rng(0x9a5e);
        for n in [512usize, 1024] {
            let x: Vec<Sample> = (0..n).map(|_| in_circle(&mut rng)).collect();
            let mut out = vec![[0; 2]; n];
            fft(&x, &mut out).unwrap();
            let energy =
                |s: &[Sample]| s.iter().map(|v| f64::from(v[0]).powi(2) + f64::from(v[1]).powi(2)).sum::<f64>();
            let (time, freq) = (energy(&x) / n as f64, energy(&out));
            assert!((freq - time).abs() / time < 1e-3, "N={n}: Σ|X|² = {freq}, Σ|x|²/N = {time}");
        }
    }

    #[test]
    fn full_scale_inputs_do_not_overflow() {
        let mut rng = Rng(0xf011);
        let sign = |rng: &mut Rng| if rng.below(2) == 0 { 32_767 } else { -32_767 };
        for n in [512usize, 1024] {
            let log2 = n.trailing_zeros();
            let mut out = vec![[0; 2]; n];
            let alternating: Vec<Sample> = (0..n).map(|i| [if i % 2 == 0 { 32_767 } else { -32_767 }, 0]).collect();
            fft(&alternating, &mut out).unwrap();
            assert_eq!(out[n / 2], [32_767, 0], "all energy in bin N/2, exactly");
            assert!(out.iter().enumerate().all(|(k, &s)| k == n / 2 || s == [0, 0]));
            fft(&vec![[i16::MIN, i16::MIN]; n], &mut out).unwrap();
            assert_eq!(out[0], [i16::MIN, i16::MIN]);

            // ±32767 on one axis is on the unit circle: the bound holds.
            let mut errors = Errors::new();
            for _ in 0..4 {
                errors.check(&(0..n).map(|_| [sign(&mut rng), 0]).collect::<Vec<_>>(), n);
                errors.check(&(0..n).map(|_| [0, sign(&mut rng)]).collect::<Vec<_>>(), n);
            }
            assert!(errors.max <= bound(log2), "N={n}: one axis at full scale: {}", errors.max);

            // ±32767 on both axes lies outside it, up to √2: from the third
            // stage on a value may leave the i16 range and saturate. A wrap
            // there would move it by 65,536 and its outputs by 65,536 over
            // the halvings left, at least 2^16 >> (log2 N - 3); clipping
            // costs far less.
            let mut errors = Errors::new();
            for _ in 0..8 {
                errors.check(&(0..n).map(|_| [sign(&mut rng), sign(&mut rng)]).collect::<Vec<_>>(), n);
            }
            std::println!("N={n}: corners, max error {:.1} LSB", errors.max);
            assert!(errors.max < f64::from(1 << (16 - (log2 - 3))), "N={n}: corners: {}", errors.max);
            fft(&vec![[32_767, -32_767]; n], &mut out).unwrap();
            assert_eq!(out[0], [32_767, -32_767]);
            assert!(out[1..].iter().all(|&s| s == [0, 0]), "a constant is one bin, exactly");

            // Corners lined up with bin 3: its exact value leaves the i16
            // range, and the output sits on the rail, with the right sign.
            let x: Vec<Sample> = (0..n)
                .map(|i| {
                    let a = 2.0 * PI * (3 * i % n) as f64 / n as f64;
                    let sign = |v: f64| if v >= 0.0 { 32_767 } else { -32_767 };
                    [sign(a.cos()), sign(a.sin())]
                })
                .collect();
            fft(&x, &mut out).unwrap();
            let (re, _) = reference(&x, n)[3];
            assert!(re > 40_000.0, "the exact bin 3 leaves the range: {re}");
            assert_eq!(out[3][0], i16::MAX, "bin 3 saturates: {:?}", out[3]);
        }
    }

    /// Ker-ONE's chain: a frame through QAM-16, its 4,700 symbols through
    /// both FFTs, every block within the bound, nothing on the rails.
    #[test]
    fn the_experiments_chain_stays_within_the_bound() {
        use super::super::qam::{map, Modulation};
        use super::super::EXPERIMENT_FRAME_BITS;
        let bits = Rng(0xc4a1).bytes(EXPERIMENT_FRAME_BITS as usize / 8);
        let mut symbols = vec![[0; 2]; EXPERIMENT_FRAME_SAMPLES as usize];
        assert_eq!(map(Modulation::Qam16, &bits, 0, &mut symbols), symbols.len());
        for n in [512usize, 1024] {
            let mut errors = Errors::new();
            for block in symbols.chunks(n) {
                let out = errors.check(block, n);
                assert!(out.iter().flatten().all(|&v| v != i16::MAX && v != i16::MIN), "N={n}: saturated");
            }
            assert!(errors.max <= bound(n.trailing_zeros()), "N={n}: {}", errors.max);
        }
    }

    #[test]
    fn a_short_input_is_zero_padded() {
        let mut rng = Rng(3);
        let x: Vec<Sample> = (0..300).map(|_| in_circle(&mut rng)).collect();
        let mut padded = x.clone();
        padded.resize(512, [0, 0]);
        let (mut short, mut full) = ([[0; 2]; 512], [[0; 2]; 512]);
        fft(&x, &mut short).unwrap();
        fft(&padded, &mut full).unwrap();
        assert_eq!(short, full);
        let mut errors = Errors::new();
        errors.check(&x, 512);
        assert!(errors.max <= bound(9), "the reference pads with zeros too: {}", errors.max);
    }

    #[test]
    fn bad_buffers_are_refused() {
        for n in [0, 1, 3, 6, 2048] {
            assert_eq!(fft(&[], &mut vec![[0; 2]; n]), Err(FftError::BlockSize), "N={n}");
        }
        assert_eq!(fft(&[[0; 2]; 9], &mut [[0; 2]; 8]), Err(FftError::InputTooLong));
    }

    /// What the stream must produce: each block through [`fft`].
    fn blockwise(size: FftSize, frame: &[Sample]) -> Vec<Sample> {
        frame
            .chunks(size.points())
            .flat_map(|chunk| {
                let mut out = vec![[0; 2]; size.points()];
                fft(chunk, &mut out).unwrap();
                out
            })
            .collect()
    }

    /// The output of `frames` through a stream, preempted or not.
    fn run_stream(size: FftSize, frames: &[Vec<Sample>], rng: &mut Rng, preempt: bool) -> Vec<Sample> {
        let tenant = || {
            let mut other = FftStream::new(FftSize::N1024, 2_000).unwrap();
            other.step(&[[1_000, -1_000]; 1_024], &mut [], 3_000);
            assert!(other.save(&mut [0; CONTEXT_SIZE]).is_err(), "the tenant is inside its block");
        };
        let stream = FftStream::new(size, frames[0].len() as u32).unwrap();
        let blocks = stream.blocks_per_frame() as usize * frames.len();
        let out = drive(stream, frames, rng, preempt, tenant);
        assert_eq!(out.len(), blocks * size.points());
        out
    }

    /// `count` random frames of `frame_len` samples through a stream
    /// preempted at random consistency points, and what [`fft`] makes of
    /// their blocks.
    pub(in super::super) fn preempted_and_expected(
        size: FftSize,
        frame_len: u32,
        count: usize,
        rng: &mut Rng,
    ) -> (Vec<Sample>, Vec<Sample>) {
        let frames: Vec<Vec<Sample>> = (0..count).map(|_| (0..frame_len).map(|_| in_circle(rng)).collect()).collect();
        let expected = frames.iter().flat_map(|f| blockwise(size, f)).collect();
        (run_stream(size, &frames, rng, true), expected)
    }

    #[test]
    fn saving_and_restoring_at_every_consistency_point_changes_nothing() {
        let mut rng = Rng(0xfab2);
        for size in [FftSize::N512, FftSize::N1024] {
            let frames: Vec<Vec<Sample>> =
                (0..3).map(|_| (0..EXPERIMENT_FRAME_SAMPLES).map(|_| in_circle(&mut rng)).collect()).collect();
            let whole: Vec<Sample> = frames.iter().flat_map(|f| blockwise(size, f)).collect();
            assert_eq!(whole.len(), 3 * 5_120, "4,700 samples make 10 or 5 blocks, the last zero-padded");
            assert_eq!(run_stream(size, &frames, &mut rng, false), whole);
            assert_eq!(run_stream(size, &frames, &mut rng, true), whole);
        }
    }

    #[test]
    fn a_one_sample_frame_is_one_padded_block() {
        let mut stream = FftStream::new(FftSize::N512, 1).unwrap();
        let mut out = [[0; 2]; 512];
        assert_eq!(stream.step(&[[5_120, 512]], &mut out, usize::MAX), Progress::Frame);
        assert_eq!(out, [[10, 1]; 512]);
        assert_eq!((stream.frames(), stream.blocks(), stream.input_offset()), (1, 1, 0));
    }

    #[test]
    fn a_context_is_saved_only_between_blocks_and_restored_only_into_an_fft() {
        let mut stream = FftStream::new(FftSize::N512, 1_000).unwrap();
        let mut ctx = [0; CONTEXT_SIZE];
        stream.save(&mut ctx).unwrap();
        assert_eq!(FftStream::restore(&ctx), Ok(stream.clone()));
        let input = [[100, 200]; 1_000];
        let mut output = [[0; 2]; 1_024];
        assert_eq!(stream.step(&input, &mut output, 600), Progress::Running);
        assert_eq!((stream.input_offset(), stream.output_offset()), (512, 0));
        assert_eq!(stream.save(&mut ctx), Err(ContextError::NotAtConsistencyPoint));
        assert_eq!(stream.step(&input[512..], &mut output, usize::MAX), Progress::Block);
        assert_eq!((stream.input_offset(), stream.output_offset()), (512, 512));
        stream.save(&mut ctx).unwrap();
        let restored = FftStream::restore(&ctx).unwrap();
        assert_eq!((restored.input_offset(), restored.output_offset(), restored.blocks()), (512, 512, 1));

        let mut qam = [0; CONTEXT_SIZE];
        Saved { accelerator: Function::Qam16, frame_len: 18_800, position: 0, frames: 0, units: 0 }.write(&mut qam);
        assert_eq!(FftStream::restore(&qam), Err(ContextError::WrongAccelerator(Function::Qam16)));
        let mut past = ctx;
        past[12] = 2; // block 2 of a two-block frame
        assert_eq!(FftStream::restore(&past), Err(ContextError::Corrupt));
        assert_eq!(FftStream::new(FftSize::N512, 0), Err(FrameError::Empty));
    }
}
