//! The QAM-16 and QAM-64 mappers: a frame of bits in, one constellation
//! point per symbol out.
//!
//! Bits are read most significant first: bit `i` of a frame is bit
//! `7 - i % 8` of byte `i / 8`. A symbol takes the next 4 (QAM-16) or 6
//! (QAM-64) bits; the first half chooses I, the second half Q, each read
//! as a number whose first bit is the most significant. Each half is a
//! binary-reflected Gray code of the level, counted from the most negative,
//! the per-axis code of IEEE 802.11a's mappers:
//!
//! | QAM-16 bits | level | QAM-64 bits | level |
//! |---|---|---|---|
//! | 00 | -3 | 000 | -7 |
//! | 01 | -1 | 001 | -5 |
//! | 11 | +1 | 011 | -3 |
//! | 10 | +3 | 010 | -1 |
//! |    |    | 110 | +1 |
//! |    |    | 111 | +3 |
//! |    |    | 101 | +5 |
//! |    |    | 100 | +7 |
//!
//! so neighbouring points, across I or Q, differ in one bit. A level `l`
//! is `l * step` in the output, with `step` 7,644 for QAM-16 and 3,276 for
//! QAM-64: the outermost level is 22,932 in both (0.70 in Q15), and the
//! corner points, at 32,431, lie inside the Q15 unit circle, where the FFT
//! that follows never saturates.
//!
//! A frame is whole symbols: its bits beyond the last whole symbol (2 of
//! Ker-ONE's 18,800 for QAM-64, which makes 3,133 symbols) are ignored, not
//! carried into the next frame, and every frame starts on a byte.
//!
//! Hand-written because a mapper is a table lookup per symbol: no crate
//! offers these bit-order and scale conventions for less code than this.

use super::{Accelerator, Context, ContextError, FrameError, Progress, Sample, Saved};

/// Which mapper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modulation {
    Qam16,
    Qam64,
}

const STEP16: i16 = 7_644;
const STEP64: i16 = 3_276;

/// The levels of one axis, indexed by their Gray code.
const fn gray_levels<const L: usize>(step: i16) -> [i16; L] {
    let mut levels = [0; L];
    let mut k = 0;
    while k < L {
        levels[k ^ (k >> 1)] = (2 * k as i16 - (L as i16 - 1)) * step;
        k += 1;
    }
    levels
}

const LEVELS16: [i16; 4] = gray_levels(STEP16);
const LEVELS64: [i16; 8] = gray_levels(STEP64);

impl Modulation {
    /// Bits per symbol.
    pub const fn bits(self) -> u32 {
        match self {
            Modulation::Qam16 => 4,
            Modulation::Qam64 => 6,
        }
    }

    /// The output distance from 0 to the innermost level; levels are odd
    /// multiples of it.
    pub const fn step(self) -> i16 {
        match self {
            Modulation::Qam16 => STEP16,
            Modulation::Qam64 => STEP64,
        }
    }

    pub const fn accelerator(self) -> Accelerator {
        match self {
            Modulation::Qam16 => Accelerator::Qam16,
            Modulation::Qam64 => Accelerator::Qam64,
        }
    }

    pub const fn of(accelerator: Accelerator) -> Option<Modulation> {
        match accelerator {
            Accelerator::Qam16 => Some(Modulation::Qam16),
            Accelerator::Qam64 => Some(Modulation::Qam64),
            Accelerator::Fft512 | Accelerator::Fft1024 => None,
        }
    }

    const fn levels(self) -> &'static [i16] {
        match self {
            Modulation::Qam16 => &LEVELS16,
            Modulation::Qam64 => &LEVELS64,
        }
    }
}

/// The point of a symbol whose bits, first bit most significant, are the
/// low `m.bits()` bits of `code`.
pub fn point(m: Modulation, code: u8) -> Sample {
    let half = m.bits() / 2;
    let axis = (1u8 << half) - 1;
    let levels = m.levels();
    [levels[usize::from((code >> half) & axis)], levels[usize::from(code & axis)]]
}

/// Maps the symbols whose bits start at bit `first_bit` of `bits` into
/// `out`, as many as both hold, and returns how many.
pub fn map(m: Modulation, bits: &[u8], first_bit: usize, out: &mut [Sample]) -> usize {
    let width = m.bits() as usize;
    let available = (bits.len() * 8).saturating_sub(first_bit) / width;
    let count = available.min(out.len());
    let mask = (1u16 << width) - 1;
    for (s, slot) in out[..count].iter_mut().enumerate() {
        let bit = first_bit + s * width;
        let byte = bit / 8;
        // Six bits span at most two bytes; the second may lie past the end
        // when the symbol ends inside the last byte.
        let window = (u16::from(bits[byte]) << 8) | u16::from(bits.get(byte + 1).copied().unwrap_or(0));
        let code = (window >> (16 - bit % 8 - width)) & mask;
        *slot = point(m, code as u8);
    }
    count
}

/// A mapper working through a stream of frames in bounded steps.
///
/// Each frame is its own buffer of [`QamStream::frame_bytes`] bytes in,
/// [`QamStream::symbols_per_frame`] samples out. A step reads input from
/// byte [`QamStream::input_offset`] of the frame (a symbol may start inside
/// that byte) and writes output from sample [`QamStream::output_offset`].
/// The only consistency point is between frames: Ker-ONE preempts a mapper
/// once its frame is complete, so δ_pre is a whole frame's time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QamStream {
    m: Modulation,
    frame_bits: u32,
    /// The next symbol of the current frame.
    symbol: u32,
    frames: u64,
    symbols: u64,
}

impl QamStream {
    pub fn new(m: Modulation, frame_bits: u32) -> Result<QamStream, FrameError> {
        if frame_bits < m.bits() {
            return Err(FrameError::Empty);
        }
        Ok(QamStream { m, frame_bits, symbol: 0, frames: 0, symbols: 0 })
    }

    pub fn modulation(&self) -> Modulation {
        self.m
    }

    pub fn frame_bits(&self) -> u32 {
        self.frame_bits
    }

    /// A frame's length in guest memory, its last byte possibly partial.
    pub fn frame_bytes(&self) -> usize {
        self.frame_bits.div_ceil(8) as usize
    }

    pub fn symbols_per_frame(&self) -> u32 {
        self.frame_bits / self.m.bits()
    }

    /// The byte of the frame at which the next input chunk must start.
    pub fn input_offset(&self) -> usize {
        self.symbol as usize * self.m.bits() as usize / 8
    }

    /// The sample of the frame's output at which the next output chunk
    /// must start.
    pub fn output_offset(&self) -> usize {
        self.symbol as usize
    }

    /// Frames completed since the stream began.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Symbols mapped since the stream began, over all frames.
    pub fn symbols(&self) -> u64 {
        self.symbols
    }

    pub fn at_consistency_point(&self) -> bool {
        self.symbol == 0
    }

    /// Maps at most `budget` symbols, no further than the frame's end or
    /// the chunks: `input` holds the frame from [`QamStream::input_offset`],
    /// `output` receives samples from [`QamStream::output_offset`].
    pub fn step(&mut self, input: &[u8], output: &mut [Sample], budget: usize) -> Progress {
        let left = (self.symbols_per_frame() - self.symbol) as usize;
        let room = output.len().min(budget).min(left);
        let phase = self.symbol as usize * self.m.bits() as usize % 8;
        let done = map(self.m, input, phase, &mut output[..room]);
        self.symbol += done as u32;
        self.symbols += done as u64;
        if self.symbol < self.symbols_per_frame() {
            return Progress::Running;
        }
        self.symbol = 0;
        self.frames += 1;
        Progress::Frame
    }

    pub fn save(&self, out: &mut Context) -> Result<(), ContextError> {
        if !self.at_consistency_point() {
            return Err(ContextError::NotAtConsistencyPoint);
        }
        let accelerator = self.m.accelerator();
        Saved { accelerator, frame_len: self.frame_bits, position: 0, frames: self.frames, units: self.symbols }
            .write(out);
        Ok(())
    }

    pub fn restore(ctx: &Context) -> Result<QamStream, ContextError> {
        let saved = Saved::read(ctx)?;
        let m = Modulation::of(saved.accelerator).ok_or(ContextError::WrongAccelerator(saved.accelerator))?;
        if saved.position != 0 {
            return Err(ContextError::Corrupt);
        }
        let stream = QamStream::new(m, saved.frame_len).map_err(|_| ContextError::Corrupt)?;
        Ok(QamStream { frames: saved.frames, symbols: saved.units, ..stream })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::Rng;
    use super::super::{CONTEXT_SIZE, EXPERIMENT_FRAME_BITS};
    use super::*;
    use proptest::prelude::*;
    use std::vec;
    use std::vec::Vec;

    const BOTH: [Modulation; 2] = [Modulation::Qam16, Modulation::Qam64];

    /// Hard decision: the nearest level on each axis, back to its code.
    fn demap(m: Modulation, p: Sample) -> u8 {
        let nearest = |v: i16| {
            let levels = m.levels();
            (0..levels.len()).min_by_key(|&g| (i32::from(levels[g]) - i32::from(v)).abs()).unwrap() as u8
        };
        nearest(p[0]) << (m.bits() / 2) | nearest(p[1])
    }

    /// Bit `i` of a frame, most significant first.
    fn bit(bits: &[u8], i: usize) -> u8 {
        bits[i / 8] >> (7 - i % 8) & 1
    }

    #[test]
    fn known_patterns_map_to_the_documented_points() {
        let (a16, a64) = (STEP16, STEP64);
        let mut out = [[0; 2]; 4];
        // 0000 1011: I 00 Q 00, then I 10 Q 11.
        assert_eq!(map(Modulation::Qam16, &[0b0000_1011], 0, &mut out), 2);
        assert_eq!(out[..2], [[-3 * a16, -3 * a16], [3 * a16, a16]]);
        // 000111 010110 100101 011001 in three bytes.
        let bits = [0b0001_1101, 0b0110_1001, 0b0101_1001];
        assert_eq!(map(Modulation::Qam64, &bits, 0, &mut out), 4);
        assert_eq!(out, [[-7 * a64, 3 * a64], [-a64, a64], [7 * a64, 5 * a64], [-3 * a64, -5 * a64]]);
        // The same symbols read from a bit offset inside a byte.
        let mut one = [[0; 2]; 1];
        assert_eq!(map(Modulation::Qam64, &bits, 12, &mut one), 1);
        assert_eq!(one[0], [7 * a64, 5 * a64]);
        assert_eq!(point(Modulation::Qam16, 0b1110), [a16, 3 * a16]);
    }

    #[test]
    fn levels_are_symmetric_odd_steps_inside_the_unit_circle() {
        for m in BOTH {
            let mut levels = m.levels().to_vec();
            levels.sort();
            let step = m.step();
            let expected: Vec<i16> =
                (0..levels.len() as i16).map(|k| (2 * k - (levels.len() as i16 - 1)) * step).collect();
            assert_eq!(levels, expected);
            assert_eq!(*levels.last().unwrap(), 22_932, "both mappers share the outermost level");
            let corner = 2.0 * f64::from(levels[levels.len() - 1]).powi(2);
            assert!(corner.sqrt() < 32_767.0, "{m:?}'s corners lie inside the Q15 unit circle");
        }
    }

    #[test]
    fn neighbours_differ_in_one_bit() {
        for m in BOTH {
            let codes = 1u8 << m.bits();
            let points: Vec<Sample> = (0..codes).map(|c| point(m, c)).collect();
            for a in 0..codes {
                for b in 0..codes {
                    let (pa, pb) = (points[a as usize], points[b as usize]);
                    let di = (i32::from(pa[0]) - i32::from(pb[0])).abs();
                    let dq = (i32::from(pa[1]) - i32::from(pb[1])).abs();
                    let step = 2 * i32::from(m.step());
                    if (di == step && dq == 0) || (di == 0 && dq == step) {
                        assert_eq!((a ^ b).count_ones(), 1, "{m:?} {a:b} and {b:b} are neighbours");
                    }
                }
                assert_eq!(points.iter().filter(|&&p| p == points[a as usize]).count(), 1, "points are distinct");
            }
        }
    }

    #[test]
    fn a_random_frame_demaps_to_its_bits() {
        let mut rng = Rng(0x5eed_0001);
        for m in BOTH {
            let bits = rng.bytes(EXPERIMENT_FRAME_BITS.div_ceil(8) as usize);
            let width = m.bits() as usize;
            let symbols = EXPERIMENT_FRAME_BITS as usize / width;
            let mut out = vec![[0; 2]; symbols + 1];
            assert_eq!(map(m, &bits, 0, &mut out[..symbols]), symbols);
            for (s, &p) in out[..symbols].iter().enumerate() {
                let code = demap(m, p);
                for j in 0..width {
                    assert_eq!(code >> (width - 1 - j) & 1, bit(&bits, s * width + j), "{m:?} symbol {s} bit {j}");
                }
            }
        }
    }

    #[test]
    fn the_experiments_frame_makes_4700_and_3133_symbols_leftovers_ignored() {
        let mut rng = Rng(7);
        let mut bits = rng.bytes(EXPERIMENT_FRAME_BITS.div_ceil(8) as usize);
        let run = |bits: &[u8], m: Modulation| {
            let mut stream = QamStream::new(m, EXPERIMENT_FRAME_BITS).unwrap();
            let mut out = vec![[0; 2]; stream.symbols_per_frame() as usize];
            assert_eq!(stream.step(bits, &mut out, usize::MAX), Progress::Frame);
            out
        };
        assert_eq!(QamStream::new(Modulation::Qam16, EXPERIMENT_FRAME_BITS).unwrap().symbols_per_frame(), 4_700);
        assert_eq!(QamStream::new(Modulation::Qam64, EXPERIMENT_FRAME_BITS).unwrap().symbols_per_frame(), 3_133);
        let before = run(&bits, Modulation::Qam64);
        *bits.last_mut().unwrap() ^= 0b11; // the two bits past symbol 3,132
        assert_eq!(run(&bits, Modulation::Qam64), before);
        assert_eq!(QamStream::new(Modulation::Qam64, 5), Err(FrameError::Empty));
    }

    /// Runs `frames` through a stream in steps of random budgets and
    /// chunks, preempting at every consistency point the coin picks: save,
    /// another tenant's stream in between, restore into a new stream.
    fn run_stream(m: Modulation, frame_bits: u32, frames: &[Vec<u8>], rng: &mut Rng, preempt: bool) -> Vec<Sample> {
        let mut stream = QamStream::new(m, frame_bits).unwrap();
        let per_frame = stream.symbols_per_frame() as usize;
        let mut out = vec![[0; 2]; per_frame * frames.len()];
        let mut frame = 0;
        while frame < frames.len() {
            if preempt && stream.at_consistency_point() && rng.below(2) == 0 {
                let mut ctx = [0; CONTEXT_SIZE];
                stream.save(&mut ctx).unwrap();
                let mut tenant = QamStream::new(Modulation::Qam16, 64).unwrap();
                tenant.step(&[0xA5; 8], &mut [[0; 2]; 5], 5);
                assert!(tenant.save(&mut [0; CONTEXT_SIZE]).is_err(), "the tenant is inside its frame");
                stream = QamStream::restore(&ctx).unwrap();
            }
            let input = &frames[frame][stream.input_offset()..];
            let input = &input[..input.len().min(1 + rng.below(300) as usize)];
            let at = frame * per_frame + stream.output_offset();
            let end = (at + 1 + rng.below(500) as usize).min((frame + 1) * per_frame);
            let budget = rng.below(800) as usize;
            if stream.step(input, &mut out[at..end], budget) == Progress::Frame {
                frame += 1;
            }
        }
        assert_eq!(stream.frames(), frames.len() as u64);
        assert_eq!(stream.symbols(), (per_frame * frames.len()) as u64);
        out
    }

    #[test]
    fn saving_and_restoring_at_every_consistency_point_changes_nothing() {
        let mut rng = Rng(0xfab);
        for m in BOTH {
            let frames: Vec<Vec<u8>> = (0..4).map(|_| rng.bytes(EXPERIMENT_FRAME_BITS.div_ceil(8) as usize)).collect();
            let whole: Vec<Sample> = frames
                .iter()
                .flat_map(|f| {
                    let mut out = vec![[0; 2]; (EXPERIMENT_FRAME_BITS / m.bits()) as usize];
                    map(m, f, 0, &mut out);
                    out
                })
                .collect();
            assert_eq!(run_stream(m, EXPERIMENT_FRAME_BITS, &frames, &mut rng, false), whole);
            assert_eq!(run_stream(m, EXPERIMENT_FRAME_BITS, &frames, &mut rng, true), whole);
        }
    }

    #[test]
    fn a_context_is_saved_only_between_frames_and_restored_only_into_a_mapper() {
        let mut stream = QamStream::new(Modulation::Qam64, 600).unwrap();
        let mut ctx = [0; CONTEXT_SIZE];
        assert_eq!(stream.step(&[0x3c; 75], &mut [[0; 2]; 10], 10), Progress::Running);
        assert_eq!(stream.save(&mut ctx), Err(ContextError::NotAtConsistencyPoint));
        assert_eq!(stream.step(&[0x3c; 75], &mut [[0; 2]; 90], 90), Progress::Frame);
        stream.save(&mut ctx).unwrap();
        assert_eq!(QamStream::restore(&ctx), Ok(stream.clone()));

        let mut fft = [0; CONTEXT_SIZE];
        Saved { accelerator: Accelerator::Fft512, frame_len: 4700, position: 0, frames: 0, units: 0 }.write(&mut fft);
        assert_eq!(QamStream::restore(&fft), Err(ContextError::WrongAccelerator(Accelerator::Fft512)));
        let mut inside = ctx;
        inside[12] = 1;
        assert_eq!(QamStream::restore(&inside), Err(ContextError::Corrupt));
        let mut empty = ctx;
        empty[8..12].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(QamStream::restore(&empty), Err(ContextError::Corrupt));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_frames_any_preemption_points(
            qam64 in any::<bool>(),
            frame_bits in 6u32..3_000,
            seed in any::<u64>(),
            count in 1usize..4,
        ) {
            let m = if qam64 { Modulation::Qam64 } else { Modulation::Qam16 };
            let mut rng = Rng(seed | 1);
            let frames: Vec<Vec<u8>> = (0..count).map(|_| rng.bytes(frame_bits.div_ceil(8) as usize)).collect();
            let whole = run_stream(m, frame_bits, &frames, &mut rng, false);
            prop_assert_eq!(run_stream(m, frame_bits, &frames, &mut rng, true), whole);
        }
    }
}
