//! One computation a virtual device asks for, as the fabric runs it.
//!
//! A guest starts a job by writing START after it has set up its
//! interface's registers: DATA_ADDR and DATA_SIZE name the input, PORT0-2
//! the output buffer, and CMD the frame length (bits for the QAM mappers,
//! samples for the FFTs; 0 for Ker-ONE's frame). The input is a whole
//! number of frames laid end to end; the output receives each frame's
//! samples, I then Q, little-endian, laid end to end too.
//!
//! A job runs in bounded steps, each moving at most a chunk of data
//! through the accelerator's [`Stream`], so the fabric can look at its
//! other PRRs between steps. At a consistency point its context (the
//! stream's, 1 KiB) can be saved and the job later rebuilt from the same
//! registers and that context, carrying on exactly where it stopped.
//!
//! The data moves through [`Dma`], which the caller implements over the
//! holder's memory once it has checked that both buffers lie inside it
//! ([`Job::buffers`]): a job never names an address itself.

use super::compute::fft::{FftSize, FftStream};
use super::compute::qam::{Modulation, QamStream};
use super::compute::{
    Context, ContextError, Function, Progress, Sample, Stream, EXPERIMENT_FRAME_BITS, EXPERIMENT_FRAME_SAMPLES,
};
use super::interface::Registers;

/// The accelerator's access to the holder's memory.
pub trait Dma {
    /// Reads `out.len()` bytes at guest-physical `addr`.
    fn read(&mut self, addr: u64, out: &mut [u8]);
    /// Writes `bytes` at guest-physical `addr`.
    fn write(&mut self, addr: u64, bytes: &[u8]);
}

/// Why the registers describe no job the accelerator can run: the
/// interface reports it as ERR_CMD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobError {
    /// CMD names a frame that holds no whole symbol or sample.
    Frame,
    /// DATA_SIZE is 0 or not a whole number of frames.
    Size,
    /// The output buffer (PORT2) is smaller than the job's output.
    Output,
}

/// Bytes of input moved per step: the largest chunk a step reads.
const CHUNK_BYTES: usize = 512;
/// Samples of output per step.
const CHUNK_SAMPLES: usize = CHUNK_BYTES / 4;

/// The accelerator's stream, whichever it is.
// The FFT's block buffer lives inline: the fabric keeps one engine per
// PRR for its whole life, and boxing would only add an indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
enum Engine {
    Qam(QamStream),
    Fft(FftStream),
}

/// A job in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    engine: Engine,
    function: Function,
    input: u64,
    output: u64,
    /// Frames the job is made of.
    frames: u64,
    /// Bytes of one frame's input and of its output.
    frame_in: u64,
    frame_out: u64,
    /// The frame length, relative to Ker-ONE's: the frame time scales by
    /// `frame_len / experiment_len`.
    frame_len: u64,
    experiment_len: u64,
}

impl Job {
    /// The job `regs` describe for an accelerator computing `function`.
    pub fn new(function: Function, regs: &Registers) -> Result<Job, JobError> {
        let engine = match (Modulation::of(function), FftSize::of(function)) {
            (Some(m), _) => {
                let bits = if regs.cmd == 0 { EXPERIMENT_FRAME_BITS } else { regs.cmd };
                Engine::Qam(QamStream::new(m, bits).map_err(|_| JobError::Frame)?)
            }
            (None, Some(size)) => {
                let samples = if regs.cmd == 0 { EXPERIMENT_FRAME_SAMPLES } else { regs.cmd };
                Engine::Fft(FftStream::new(size, samples).map_err(|_| JobError::Frame)?)
            }
            (None, None) => unreachable!("every function is a mapper or an FFT"),
        };
        let (frame_in, frame_out, frame_len, experiment_len) = match &engine {
            Engine::Qam(s) => (
                s.input_len() as u64,
                s.output_len() as u64 * 4,
                u64::from(s.frame_bits()),
                u64::from(EXPERIMENT_FRAME_BITS),
            ),
            Engine::Fft(s) => (
                s.input_len() as u64 * 4,
                s.output_len() as u64 * 4,
                u64::from(s.frame_len()),
                u64::from(EXPERIMENT_FRAME_SAMPLES),
            ),
        };
        let size = u64::from(regs.data_size);
        if size == 0 || !size.is_multiple_of(frame_in) {
            return Err(JobError::Size);
        }
        let frames = size / frame_in;
        let (output, room) = regs.output();
        if u64::from(room) < frames * frame_out {
            return Err(JobError::Output);
        }
        let input = regs.data_addr;
        Ok(Job { engine, function, input, output, frames, frame_in, frame_out, frame_len, experiment_len })
    }

    /// The job `regs` describe, carrying on from a context saved by
    /// [`Job::save`]; a context of another job's shape is refused.
    pub fn resume(function: Function, regs: &Registers, ctx: &Context) -> Result<Job, ContextError> {
        let mut job = Job::new(function, regs).map_err(|_| ContextError::Corrupt)?;
        let engine = match &job.engine {
            Engine::Qam(_) => Engine::Qam(QamStream::restore(ctx)?),
            Engine::Fft(_) => Engine::Fft(FftStream::restore(ctx)?),
        };
        let same_shape = match (&engine, &job.engine) {
            (Engine::Qam(a), Engine::Qam(b)) => a.frame_bits() == b.frame_bits() && a.modulation() == b.modulation(),
            (Engine::Fft(a), Engine::Fft(b)) => a.frame_len() == b.frame_len() && a.size() == b.size(),
            _ => false,
        };
        if !same_shape {
            return Err(ContextError::WrongAccelerator(function));
        }
        job.engine = engine;
        if job.frames_done() > job.frames {
            return Err(ContextError::Corrupt);
        }
        Ok(job)
    }

    pub fn function(&self) -> Function {
        self.function
    }

    /// The input and output buffers, guest-physical `(address, bytes)`:
    /// what the holder's memory must contain before the job may start.
    pub fn buffers(&self) -> [(u64, u64); 2] {
        [(self.input, self.frames * self.frame_in), (self.output, self.frames * self.frame_out)]
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Frames complete: their output is in memory.
    pub fn frames_done(&self) -> u64 {
        match &self.engine {
            Engine::Qam(s) => s.frames(),
            Engine::Fft(s) => s.frames(),
        }
    }

    pub fn is_done(&self) -> bool {
        self.frames_done() >= self.frames
    }

    pub fn at_consistency_point(&self) -> bool {
        match &self.engine {
            Engine::Qam(s) => s.at_consistency_point(),
            Engine::Fft(s) => s.at_consistency_point(),
        }
    }

    /// One frame's processing time for an accelerator whose frame of
    /// Ker-ONE's length takes `experiment_ns`: proportional to the frame
    /// length, rounded up.
    pub fn frame_ns(&self, experiment_ns: u64) -> u64 {
        let scaled = u128::from(experiment_ns) * u128::from(self.frame_len);
        u64::try_from(scaled.div_ceil(u128::from(self.experiment_len))).unwrap_or(u64::MAX)
    }

    /// Moves at most one chunk through the accelerator, doing at most
    /// `budget` units of its work.
    pub fn step(&mut self, dma: &mut impl Dma, budget: usize) -> Progress {
        if self.is_done() {
            return Progress::Frame;
        }
        let frame = self.frames_done();
        let input = self.input + frame * self.frame_in;
        let output = self.output + frame * self.frame_out;
        match &mut self.engine {
            Engine::Qam(s) => step_stream(s, dma, input, output, budget, |b| b[0]),
            Engine::Fft(s) => step_stream(s, dma, input, output, budget, |b| {
                [i16::from_le_bytes([b[0], b[1]]), i16::from_le_bytes([b[2], b[3]])]
            }),
        }
    }

    /// Saves the job's context: only at a consistency point.
    pub fn save(&self, ctx: &mut Context) -> Result<(), ContextError> {
        match &self.engine {
            Engine::Qam(s) => s.save(ctx),
            Engine::Fft(s) => s.save(ctx),
        }
    }
}

/// One step of `stream` over the frame whose input starts at `input` and
/// whose output starts at `output`; `decode` reads one input unit from
/// its little-endian bytes.
fn step_stream<S: Stream>(
    stream: &mut S,
    dma: &mut impl Dma,
    input: u64,
    output: u64,
    budget: usize,
    decode: impl Fn(&[u8]) -> S::Input,
) -> Progress
where
    S::Input: Default,
{
    let unit = core::mem::size_of::<S::Input>();
    let out_at = stream.output_offset();
    let room = (stream.output_len() - out_at).min(CHUNK_SAMPLES);
    // Only what this step can use is fetched and decoded: the step's cost
    // is the fabric pCPU's, and under -icount the guests' time too.
    let in_at = stream.input_offset();
    let wanted = stream.input_needed(room.min(budget));
    // At most a chunk of samples: FFT's input is samples, and 128 output
    // symbols of QAM-64 take 96 bytes.
    let in_units = (stream.input_len() - in_at).min(CHUNK_BYTES / unit).min(CHUNK_SAMPLES).min(wanted);
    let mut bytes = [0u8; CHUNK_BYTES];
    dma.read(input + (in_at * unit) as u64, &mut bytes[..in_units * unit]);
    let mut units = [S::Input::default(); CHUNK_SAMPLES];
    for (slot, raw) in units.iter_mut().zip(bytes[..in_units * unit].chunks_exact(unit)) {
        *slot = decode(raw);
    }
    let mut out: [Sample; CHUNK_SAMPLES] = [[0; 2]; CHUNK_SAMPLES];
    let progress = stream.step(&units[..in_units], &mut out[..room], budget);
    let produced = match progress {
        Progress::Frame => stream.output_len() - out_at,
        _ => stream.output_offset() - out_at,
    };
    let mut encoded = [0u8; CHUNK_BYTES];
    for (bytes, sample) in encoded.chunks_exact_mut(4).zip(&out[..produced]) {
        // I then Q, each 16-bit little-endian: one word, one copy.
        let word = u32::from(sample[0] as u16) | u32::from(sample[1] as u16) << 16;
        bytes.copy_from_slice(&word.to_le_bytes());
    }
    dma.write(output + (out_at * 4) as u64, &encoded[..produced * 4]);
    progress
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::compute::fft::fft;
    use crate::fabric::compute::qam::map;
    use crate::fabric::compute::tests::Rng;
    use crate::fabric::compute::CONTEXT_SIZE;
    use alloc::vec;
    use alloc::vec::Vec;

    /// Guest memory from 0x1000: what the tests' jobs read and write.
    struct Memory(Vec<u8>);

    const BASE: u64 = 0x1000;

    impl Dma for Memory {
        fn read(&mut self, addr: u64, out: &mut [u8]) {
            let at = (addr - BASE) as usize;
            out.copy_from_slice(&self.0[at..at + out.len()]);
        }

        fn write(&mut self, addr: u64, bytes: &[u8]) {
            let at = (addr - BASE) as usize;
            self.0[at..at + bytes.len()].copy_from_slice(bytes);
        }
    }

    const OUT: u64 = 0x10_0000;

    fn registers(cmd: u32, input: &[u8], room: u32) -> Registers {
        let mut regs = Registers { cmd, data_addr: BASE, data_size: input.len() as u32, ..Registers::default() };
        regs.ports[0] = OUT as u32;
        regs.ports[2] = room;
        regs
    }

    fn memory(input: &[u8]) -> Memory {
        let mut bytes = vec![0u8; (OUT - BASE) as usize + 0x10_0000];
        bytes[..input.len()].copy_from_slice(input);
        Memory(bytes)
    }

    fn output(memory: &Memory, samples: usize) -> Vec<Sample> {
        let at = (OUT - BASE) as usize;
        memory.0[at..at + samples * 4]
            .chunks_exact(4)
            .map(|b| [i16::from_le_bytes([b[0], b[1]]), i16::from_le_bytes([b[2], b[3]])])
            .collect()
    }

    /// Runs `job` to its end in steps of `budget`; with `preempt`, saves
    /// and resumes it at every other consistency point it reaches.
    fn run(mut job: Job, regs: &Registers, memory: &mut Memory, budget: usize, preempt: bool) -> Job {
        let mut coin = false;
        while !job.is_done() {
            job.step(memory, budget);
            if preempt && job.at_consistency_point() {
                coin = !coin;
                if coin {
                    let mut ctx = [0; CONTEXT_SIZE];
                    job.save(&mut ctx).unwrap();
                    job = Job::resume(job.function(), regs, &ctx).unwrap();
                }
            }
        }
        job
    }

    #[test]
    fn qam16_maps_each_frame_of_ker_one_s_length() {
        let input = Rng(7).bytes(2_350 * 3);
        let regs = registers(0, &input, 3 * 4_700 * 4);
        let job = Job::new(Function::Qam16, &regs).unwrap();
        assert_eq!(job.frames(), 3);
        assert_eq!(job.buffers(), [(BASE, 7_050), (OUT, 3 * 4_700 * 4)]);
        let mut mem = memory(&input);
        let job = run(job, &regs, &mut mem, 300, false);
        assert_eq!(job.frames_done(), 3);
        let mut expected = vec![[0; 2]; 3 * 4_700];
        for (frame, out) in input.chunks(2_350).zip(expected.chunks_mut(4_700)) {
            assert_eq!(map(Modulation::Qam16, frame, 0, out), 4_700);
        }
        assert_eq!(output(&mem, 3 * 4_700), expected);
    }

    #[test]
    fn fft_blocks_match_the_block_transform_and_survive_preemption() {
        // Two frames of 1,500 samples: two 1024-point blocks each, the
        // second zero-padded.
        let mut rng = Rng(3);
        let samples: Vec<Sample> =
            (0..3_000).map(|_| [(rng.below(20_000) as i16) - 10_000, (rng.below(20_000) as i16) - 10_000]).collect();
        let input: Vec<u8> = samples.iter().flat_map(|s| [s[0].to_le_bytes(), s[1].to_le_bytes()].concat()).collect();
        let regs = registers(1_500, &input, 4 * 1_024 * 4);
        let mut plain = memory(&input);
        run(Job::new(Function::Fft1024, &regs).unwrap(), &regs, &mut plain, 700, false);
        let mut expected = Vec::new();
        for frame in samples.chunks(1_500) {
            for block in frame.chunks(1_024) {
                let mut out = [[0; 2]; 1_024];
                fft(block, &mut out).unwrap();
                expected.extend_from_slice(&out);
            }
        }
        assert_eq!(output(&plain, 4 * 1_024), expected);
        let mut preempted = memory(&input);
        run(Job::new(Function::Fft1024, &regs).unwrap(), &regs, &mut preempted, 700, true);
        assert_eq!(output(&preempted, 4 * 1_024), expected);
    }

    #[test]
    fn registers_that_describe_no_job_are_refused() {
        let input = [0u8; 2_350];
        assert_eq!(Job::new(Function::Qam16, &registers(0, &input[..2_349], 1 << 20)), Err(JobError::Size));
        assert_eq!(Job::new(Function::Qam16, &registers(0, &[], 1 << 20)), Err(JobError::Size));
        assert_eq!(Job::new(Function::Qam16, &registers(0, &input, 4_700 * 4 - 1)), Err(JobError::Output));
        assert_eq!(Job::new(Function::Qam64, &registers(5, &input[..1], 1 << 20)), Err(JobError::Frame));
        assert!(Job::new(Function::Qam16, &registers(0, &input, 4_700 * 4)).is_ok());
    }

    #[test]
    fn a_context_of_another_shape_is_refused() {
        let input = [0u8; 2_350 * 2];
        let regs = registers(0, &input, 1 << 20);
        let job = Job::new(Function::Qam16, &regs).unwrap();
        let mut ctx = [0; CONTEXT_SIZE];
        job.save(&mut ctx).unwrap();
        assert!(Job::resume(Function::Qam16, &regs, &ctx).is_ok());
        assert!(Job::resume(Function::Qam64, &regs, &ctx).is_err());
        assert!(Job::resume(Function::Fft512, &registers(0, &[0; 4_700 * 4], 1 << 20), &ctx).is_err());
        assert!(Job::resume(Function::Qam16, &registers(9_400, &[0; 1_175 * 4], 1 << 20), &ctx).is_err());
    }

    #[test]
    fn the_frame_time_scales_with_the_frame_length() {
        let regs = registers(9_400, &[0; 1_175], 1 << 20);
        let job = Job::new(Function::Qam16, &regs).unwrap();
        assert_eq!(job.frame_ns(47_000), 23_500);
        let regs = registers(0, &[0; 2_350], 1 << 20);
        assert_eq!(Job::new(Function::Qam16, &regs).unwrap().frame_ns(47_000), 47_000);
    }
}
