//! What the fabric's accelerators compute: the QAM-16 and QAM-64 mappers
//! and the 512- and 1024-point FFTs of Ker-ONE's OFDM experiment, with the
//! per-frame timings that experiment measured.
//!
//! QEMU has no FPGA, so Partita emulates the fabric, and the emulated
//! accelerators must still compute real results: a guest that hands a frame
//! to a virtual device reads back the same symbols or spectrum a hardware
//! accelerator would produce, and tests check them against a host
//! reference. Everything here works on buffers the caller owns and never
//! allocates, and nothing uses floating point: the hypervisor is built with
//! soft-float, where each float operation is a library call.
//!
//! Each accelerator is pure functions ([`qam::map`], [`fft::fft`]) and a
//! stream type ([`qam::QamStream`], [`fft::FftStream`]) that drives them
//! over a frame in bounded steps, both behind one [`Stream`] protocol. The
//! hypervisor copies guest memory in chunks, so a step takes whatever input
//! and output chunks the caller has at the stream's cursors and does at
//! most `budget` units of work. A stream may be preempted only at a
//! consistency point (Ker-ONE section 4): the QAM mappers between frames,
//! the FFTs between blocks. There its context (cursors and counters, never
//! the data, which lives in guest memory) fits the 1 KiB a virtual device
//! interface keeps, and a stream restored from it carries on exactly as if
//! it had never stopped.
//!
//! Samples are [`Sample`]s, `[I, Q]` (or `[re, im]`), 16-bit signed; in
//! guest memory one sample is I then Q, each little-endian.

pub mod fft;
pub mod qam;

/// One complex sample or constellation point: `[I, Q]`.
pub type Sample = [i16; 2];

/// The frame of Ker-ONE's experiment: 18,800 bits into the QAM mappers.
pub const EXPERIMENT_FRAME_BITS: u32 = 18_800;

/// The FFTs' frame in Ker-ONE's experiment: the 4,700 symbols QAM-16 makes
/// of [`EXPERIMENT_FRAME_BITS`].
pub const EXPERIMENT_FRAME_SAMPLES: u32 = 4_700;

/// What an accelerator computes: the four of Ker-ONE's experiment, by the
/// names the configuration and the device tree use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Function {
    Qam16,
    Qam64,
    Fft512,
    Fft1024,
}

/// How long an accelerator takes, in nanoseconds: Ker-ONE's figures have
/// tenths of a microsecond, which microseconds would round away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Processing one frame (Ker-ONE Table 6, T_HW).
    pub frame_ns: u64,
    /// δ_pre, the longest a preemption waits for the next consistency point
    /// (Ker-ONE Table 5).
    pub delta_pre_ns: u64,
}

impl Function {
    pub const ALL: [Function; 4] = [Function::Qam16, Function::Qam64, Function::Fft512, Function::Fft1024];

    /// The name the configuration gives it.
    pub const fn name(self) -> &'static str {
        match self {
            Function::Qam16 => "qam16",
            Function::Qam64 => "qam64",
            Function::Fft512 => "fft512",
            Function::Fft1024 => "fft1024",
        }
    }

    pub fn from_name(name: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Ker-ONE's measurements on the ZedBoard at 100 MHz. They are defaults:
    /// the configuration may override them for another fabric.
    pub const fn timing(self) -> Timing {
        let (frame_ns, delta_pre_ns) = match self {
            Function::Qam16 => (47_000, 47_000),
            Function::Qam64 => (31_000, 31_000),
            Function::Fft512 => (71_100, 24_100),
            Function::Fft1024 => (90_600, 33_600),
        };
        Timing { frame_ns, delta_pre_ns }
    }

    /// Its number in a saved context.
    const fn code(self) -> u8 {
        match self {
            Function::Qam16 => 1,
            Function::Qam64 => 2,
            Function::Fft512 => 3,
            Function::Fft1024 => 4,
        }
    }

    fn from_code(code: u8) -> Option<Function> {
        Function::ALL.into_iter().find(|a| a.code() == code)
    }
}

impl core::fmt::Display for Function {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a step left its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The budget, the input chunk or the output chunk ran out: call again
    /// with the chunks at the stream's cursors. Not a consistency point.
    Running,
    /// An FFT finished a block and the frame has more: a consistency point.
    Block,
    /// The frame is complete (the guest's OVER): a consistency point, and
    /// the next step starts the next frame at its beginning.
    Frame,
}

/// What every accelerator stream offers, so that the fabric drives them
/// all with one loop: copy the input chunk from [`Stream::input_offset`]
/// of the frame and room from [`Stream::output_offset`] of its output,
/// [`Stream::step`], copy the output back, and on [`Progress::Frame`] tell
/// the guest; at a consistency point, if the PRR must change hands,
/// [`Stream::save`] and later [`Stream::restore`].
///
/// Each frame is its own buffer of [`Stream::input_len`] input units and
/// [`Stream::output_len`] samples; a stream that ends a frame starts the
/// next at offset 0 of both.
pub trait Stream: Sized {
    /// What a frame's input is made of: bytes of bits (QAM), samples (FFT).
    type Input: Copy;

    fn input_len(&self) -> usize;
    fn output_len(&self) -> usize;

    /// Where in the frame's input the next chunk must start.
    fn input_offset(&self) -> usize;

    /// Where in the frame's output the next chunk must start.
    fn output_offset(&self) -> usize;

    /// Input units, from [`Stream::input_offset`], that `outputs` more
    /// outputs consume at most: a step fetches no more. By default as many
    /// as there are.
    fn input_needed(&self, outputs: usize) -> usize {
        let _ = outputs;
        usize::MAX
    }

    /// Frames completed since the stream began.
    fn frames(&self) -> u64;

    fn at_consistency_point(&self) -> bool;

    /// Does at most `budget` units of work, stopping at the next
    /// consistency point and wherever `input` (the frame from
    /// [`Stream::input_offset`]) or `output` (from [`Stream::output_offset`])
    /// ends; every unit is bounded, so the budget bounds the step.
    fn step(&mut self, input: &[Self::Input], output: &mut [Sample], budget: usize) -> Progress;

    /// Writes the context, which holds everything but the frames' data;
    /// refused away from a consistency point.
    fn save(&self, out: &mut Context) -> Result<(), ContextError>;

    /// The stream a saved context describes, ready to go on where it stopped.
    fn restore(ctx: &Context) -> Result<Self, ContextError>;
}

/// The context a virtual device interface keeps for its accelerator.
pub const CONTEXT_SIZE: usize = 1024;

/// A saved accelerator context.
pub type Context = [u8; CONTEXT_SIZE];

/// Why a frame length was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The frame holds no whole symbol (QAM) or no sample (FFT).
    Empty,
}

/// Why a context could not be saved or restored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextError {
    /// The stream is inside a frame (QAM) or a block (FFT): the data in
    /// flight is not in the context, so saving here would lose it.
    NotAtConsistencyPoint,
    /// Not a context, or one of another layout version.
    Unrecognised,
    /// A context of another accelerator family (an FFT's given to a QAM
    /// stream, or the other way round).
    WrongAccelerator(Function),
    /// A field out of range for its accelerator, or a reserved byte set.
    Corrupt,
}

impl core::fmt::Display for ContextError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ContextError::NotAtConsistencyPoint => f.write_str("the accelerator is not at a consistency point"),
            ContextError::Unrecognised => f.write_str("not an accelerator context"),
            ContextError::WrongAccelerator(a) => write!(f, "a context of {a}, another accelerator family"),
            ContextError::Corrupt => f.write_str("the accelerator context is corrupt"),
        }
    }
}

impl core::error::Error for ContextError {}

const MAGIC: [u8; 4] = *b"PACX";
const VERSION: u8 = 1;
/// Bytes used by the layout below; the rest of the context must be zero,
/// so a later version can grow into it and an old context still reads.
const USED: usize = 32;

/// What a stream keeps across a preemption. Layout, little-endian: magic
/// (0..4), version (4), accelerator (5), two zero bytes, `frame_len`
/// (8..12), `position` (12..16), `frames` (16..24), `units` (24..32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Saved {
    accelerator: Function,
    /// Bits (QAM) or samples (FFT) per frame.
    frame_len: u32,
    /// The consistency point inside the frame: 0 for QAM, the block for FFT.
    position: u32,
    /// Frames completed.
    frames: u64,
    /// Symbols (QAM) or blocks (FFT) completed, over all frames.
    units: u64,
}

impl Saved {
    fn write(&self, out: &mut Context) {
        out.fill(0);
        out[0..4].copy_from_slice(&MAGIC);
        out[4] = VERSION;
        out[5] = self.accelerator.code();
        out[8..12].copy_from_slice(&self.frame_len.to_le_bytes());
        out[12..16].copy_from_slice(&self.position.to_le_bytes());
        out[16..24].copy_from_slice(&self.frames.to_le_bytes());
        out[24..32].copy_from_slice(&self.units.to_le_bytes());
    }

    fn read(ctx: &Context) -> Result<Saved, ContextError> {
        if ctx[0..4] != MAGIC || ctx[4] != VERSION {
            return Err(ContextError::Unrecognised);
        }
        let accelerator = Function::from_code(ctx[5]).ok_or(ContextError::Corrupt)?;
        if ctx[6..8].iter().chain(&ctx[USED..]).any(|&b| b != 0) {
            return Err(ContextError::Corrupt);
        }
        let u32_at = |i: usize| u32::from_le_bytes([ctx[i], ctx[i + 1], ctx[i + 2], ctx[i + 3]]);
        let u64_at = |i: usize| u64::from(u32_at(i)) | u64::from(u32_at(i + 4)) << 32;
        Ok(Saved { accelerator, frame_len: u32_at(8), position: u32_at(12), frames: u64_at(16), units: u64_at(24) })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    /// xorshift64*: the tests' frames are random but the same on every run.
    pub(crate) struct Rng(pub(crate) u64);

    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        pub(crate) fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| self.next() as u8).collect()
        }
    }

    /// Runs `frames` through `stream` in steps of random budgets and
    /// chunks. With `preempt`, at every consistency point the coin picks it
    /// saves the stream, lets `tenant` use the PRR, and restores the stream
    /// into a new one. Returns every frame's output, end to end.
    pub(crate) fn drive<S: Stream>(
        mut stream: S,
        frames: &[Vec<S::Input>],
        rng: &mut Rng,
        preempt: bool,
        mut tenant: impl FnMut(),
    ) -> Vec<[i16; 2]> {
        let per_frame = stream.output_len();
        let mut out = std::vec![[0; 2]; per_frame * frames.len()];
        let mut frame = 0;
        while frame < frames.len() {
            if preempt && stream.at_consistency_point() && rng.below(2) == 0 {
                let mut ctx = [0; CONTEXT_SIZE];
                stream.save(&mut ctx).unwrap();
                tenant();
                stream = S::restore(&ctx).unwrap();
            }
            let input = &frames[frame][stream.input_offset()..];
            let input = &input[..input.len().min(rng.below(700) as usize)];
            let at = frame * per_frame + stream.output_offset();
            let end = (at + rng.below(700) as usize).min((frame + 1) * per_frame);
            match stream.step(input, &mut out[at..end], rng.below(3_000) as usize) {
                Progress::Running => {}
                Progress::Block => assert!(stream.at_consistency_point()),
                Progress::Frame => {
                    assert!(stream.at_consistency_point() && stream.input_offset() == 0);
                    frame += 1;
                }
            }
        }
        assert_eq!(stream.frames(), frames.len() as u64);
        out
    }

    #[test]
    fn names_are_the_configurations() {
        let names: Vec<&str> = Function::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names, ["qam16", "qam64", "fft512", "fft1024"]);
        for a in Function::ALL {
            assert_eq!(Function::from_name(a.name()), Some(a));
            assert_eq!(Function::from_code(a.code()), Some(a));
        }
        assert_eq!(Function::from_name("QAM16"), None);
        assert_eq!(Function::from_code(0), None);
    }

    #[test]
    fn timings_are_ker_ones_tables_5_and_6() {
        let us = |a: Function| (a.timing().frame_ns, a.timing().delta_pre_ns);
        assert_eq!(us(Function::Qam16), (47_000, 47_000));
        assert_eq!(us(Function::Qam64), (31_000, 31_000));
        assert_eq!(us(Function::Fft512), (71_100, 24_100));
        assert_eq!(us(Function::Fft1024), (90_600, 33_600));
        // A preemption never waits longer than a frame: a frame end is
        // always a consistency point.
        assert!(Function::ALL.iter().all(|a| a.timing().delta_pre_ns <= a.timing().frame_ns));
    }

    #[test]
    fn a_context_reads_back_and_refuses_garbage() {
        let saved = Saved { accelerator: Function::Fft1024, frame_len: 4700, position: 3, frames: 1 << 40, units: 7 };
        let mut ctx = [0xAA; CONTEXT_SIZE];
        saved.write(&mut ctx);
        assert_eq!(Saved::read(&ctx), Ok(saved));
        assert!(ctx[USED..].iter().all(|&b| b == 0), "the unused tail is cleared");

        let mut bad = ctx;
        bad[0] = b'X';
        assert_eq!(Saved::read(&bad), Err(ContextError::Unrecognised));
        let mut bad = ctx;
        bad[4] = VERSION + 1;
        assert_eq!(Saved::read(&bad), Err(ContextError::Unrecognised));
        let mut bad = ctx;
        bad[5] = 9;
        assert_eq!(Saved::read(&bad), Err(ContextError::Corrupt));
        let mut bad = ctx;
        bad[CONTEXT_SIZE - 1] = 1;
        assert_eq!(Saved::read(&bad), Err(ContextError::Corrupt));
        assert_eq!(Saved::read(&[0; CONTEXT_SIZE]), Err(ContextError::Unrecognised));
    }

    /// The compute path stays integer-only: no float type appears in the
    /// code the hypervisor links (everything above each file's tests).
    #[test]
    fn no_floating_point_outside_the_tests() {
        for (file, source) in
            [("mod.rs", include_str!("mod.rs")), ("qam.rs", include_str!("qam.rs")), ("fft.rs", include_str!("fft.rs"))]
        {
            let code = source.split("#[cfg(test)]").next().unwrap();
            for word in ["f32", "f64"] {
                assert!(!code.contains(word), "{file} uses {word} outside its tests");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// Whatever the accelerator, the frames and where the stream is
        /// preempted, its output is the pure functions'.
        #[test]
        fn any_frames_any_preemption_points(
            which in 0..Function::ALL.len(),
            frame_len in 6u32..3_000,
            seed in any::<u64>(),
            count in 1usize..4,
        ) {
            let mut rng = Rng(seed | 1);
            let accelerator = Function::ALL[which];
            let (preempted, expected) = match (qam::Modulation::of(accelerator), fft::FftSize::of(accelerator)) {
                (Some(m), _) => qam::tests::preempted_and_expected(m, frame_len, count, &mut rng),
                (_, Some(size)) => fft::tests::preempted_and_expected(size, frame_len, count, &mut rng),
                (None, None) => unreachable!("{accelerator} is a mapper or an FFT"),
            };
            prop_assert_eq!(preempted, expected);
        }
    }
}
