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

use super::{Context, ContextError, FrameError, Function, Progress, Sample, Saved, Stream};

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

    pub const fn accelerator(self) -> Function {
        match self {
            Modulation::Qam16 => Function::Qam16,
            Modulation::Qam64 => Function::Qam64,
        }
    }

    pub const fn of(accelerator: Function) -> Option<Modulation> {
        match accelerator {
            Function::Qam16 => Some(Modulation::Qam16),
            Function::Qam64 => Some(Modulation::Qam64),
            Function::Fft512 | Function::Fft1024 => None,
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
/// A frame's input is [`Stream::input_len`] bytes, its last possibly
/// partial; its output [`QamStream::symbols_per_frame`] samples. The input
/// offset is a byte: a QAM-64 symbol may start inside it, and the stream
/// knows where. A unit of the budget is one symbol. The only consistency
/// point is between frames: Ker-ONE preempts a mapper once its frame is
/// complete, so δ_pre is a whole frame's time.
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

    pub fn symbols_per_frame(&self) -> u32 {
        self.frame_bits / self.m.bits()
    }

    /// Symbols mapped since the stream began, over all frames.
    pub fn symbols(&self) -> u64 {
        self.symbols
    }
}

impl Stream for QamStream {
    type Input = u8;

    fn input_len(&self) -> usize {
        self.frame_bits.div_ceil(8) as usize
    }

    fn output_len(&self) -> usize {
        self.symbols_per_frame() as usize
    }

    fn input_offset(&self) -> usize {
        self.symbol as usize * self.m.bits() as usize / 8
    }

    fn output_offset(&self) -> usize {
        self.symbol as usize
    }

    fn frames(&self) -> u64 {
        self.frames
    }

    fn at_consistency_point(&self) -> bool {
        self.symbol == 0
    }

    fn input_needed(&self, outputs: usize) -> usize {
        let phase = self.symbol as usize * self.m.bits() as usize % 8;
        (phase + outputs.saturating_mul(self.m.bits() as usize)).div_ceil(8)
    }

    fn step(&mut self, input: &[u8], output: &mut [Sample], budget: usize) -> Progress {
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

    fn save(&self, out: &mut Context) -> Result<(), ContextError> {
        if !self.at_consistency_point() {
            return Err(ContextError::NotAtConsistencyPoint);
        }
        let accelerator = self.m.accelerator();
        Saved { accelerator, frame_len: self.frame_bits, position: 0, frames: self.frames, units: self.symbols }
            .write(out);
        Ok(())
    }

    fn restore(ctx: &Context) -> Result<QamStream, ContextError> {
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
pub(super) mod tests {
    use super::super::tests::{drive, Rng};
    use super::super::{CONTEXT_SIZE, EXPERIMENT_FRAME_BITS};
    use super::*;
    use std::vec;
    use std::vec::Vec;

    const BOTH: [Modulation; 2] = [Modulation::Qam16, Modulation::Qam64];

    #[test]
    fn a_step_given_only_the_input_it_needs_makes_every_symbol_asked() {
        for m in BOTH {
            let mut stream = QamStream::new(m, EXPERIMENT_FRAME_BITS).unwrap();
            let bits: Vec<u8> = (0..EXPERIMENT_FRAME_BITS.div_ceil(8)).map(|i| (i * 37) as u8).collect();
            // Odd step sizes walk the symbols through every bit phase.
            for asked in [1, 3, 5, 7, 128, 11] {
                let at = stream.input_offset();
                let wanted = stream.input_needed(asked).min(bits.len() - at);
                let mut out = [[0i16; 2]; 128];
                let before = stream.output_offset();
                stream.step(&bits[at..at + wanted], &mut out[..asked], asked);
                assert_eq!(stream.output_offset() - before, asked, "{m:?} after {before} symbols");
            }
        }
    }

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

    /// The output of `frames` through a stream, preempted or not.
    fn run_stream(m: Modulation, frame_bits: u32, frames: &[Vec<u8>], rng: &mut Rng, preempt: bool) -> Vec<Sample> {
        let tenant = || {
            let mut other = QamStream::new(Modulation::Qam16, 64).unwrap();
            other.step(&[0xA5; 8], &mut [[0; 2]; 5], 5);
            assert!(other.save(&mut [0; CONTEXT_SIZE]).is_err(), "the tenant is inside its frame");
        };
        let stream = QamStream::new(m, frame_bits).unwrap();
        let out = drive(stream, frames, rng, preempt, tenant);
        assert_eq!(out.len(), (frame_bits / m.bits()) as usize * frames.len());
        out
    }

    /// What the stream must produce: each frame through [`map`].
    fn framewise(m: Modulation, frame_bits: u32, frames: &[Vec<u8>]) -> Vec<Sample> {
        frames
            .iter()
            .flat_map(|f| {
                let mut out = vec![[0; 2]; (frame_bits / m.bits()) as usize];
                map(m, f, 0, &mut out);
                out
            })
            .collect()
    }

    /// `count` random frames through a stream preempted at random
    /// consistency points, and what [`map`] makes of them.
    pub(in super::super) fn preempted_and_expected(
        m: Modulation,
        frame_bits: u32,
        count: usize,
        rng: &mut Rng,
    ) -> (Vec<Sample>, Vec<Sample>) {
        let frames: Vec<Vec<u8>> = (0..count).map(|_| rng.bytes(frame_bits.div_ceil(8) as usize)).collect();
        (run_stream(m, frame_bits, &frames, rng, true), framewise(m, frame_bits, &frames))
    }

    #[test]
    fn saving_and_restoring_at_every_consistency_point_changes_nothing() {
        let mut rng = Rng(0xfab);
        for m in BOTH {
            let frames: Vec<Vec<u8>> = (0..4).map(|_| rng.bytes(EXPERIMENT_FRAME_BITS.div_ceil(8) as usize)).collect();
            let whole = framewise(m, EXPERIMENT_FRAME_BITS, &frames);
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
        assert_eq!((stream.frames(), stream.symbols(), stream.input_offset()), (1, 100, 0));
        stream.save(&mut ctx).unwrap();
        assert_eq!(QamStream::restore(&ctx), Ok(stream.clone()));

        let mut fft = [0; CONTEXT_SIZE];
        Saved { accelerator: Function::Fft512, frame_len: 4700, position: 0, frames: 0, units: 0 }.write(&mut fft);
        assert_eq!(QamStream::restore(&fft), Err(ContextError::WrongAccelerator(Function::Fft512)));
        let mut inside = ctx;
        inside[12] = 1;
        assert_eq!(QamStream::restore(&inside), Err(ContextError::Corrupt));
        let mut empty = ctx;
        empty[8..12].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(QamStream::restore(&empty), Err(ContextError::Corrupt));
    }
}
