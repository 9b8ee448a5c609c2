//! A partition restart in bounded steps: zero its RAM, copy its images
//! back, clean everything to memory, one chunk at a time. The hypervisor
//! does one step each time the restarting partition's vCPU 0 would run, so
//! the restart costs the partition its own time at its own priority, and a
//! more urgent vCPU on that pCPU waits for one chunk at most, not for the
//! whole memory.
//!
//! The work is one sequence of bytes, indexed by a cursor: one unit for
//! the reset of its virtual devices, the regions (zero), then the loads
//! (copy), one unit for the device tree's seeds (`partition::seed`), the
//! regions again (clean), and one unit each for vCPU 0's registers and the
//! rest of its context.

use crate::config::model::Range;

/// One bounded piece of a reload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Reset its virtual devices and drop its previous life's
    /// translations: a step of its own, being as long as a chunk.
    Reset,
    /// Zero `[pa, pa + len)`.
    Zero { pa: u64, len: u64 },
    /// Copy `len` bytes from `offset` in the payload's data to `pa`.
    Copy { pa: u64, offset: u64, len: u64 },
    /// Write this load's seeds into the device tree just copied, before
    /// the clean takes them to memory.
    Seed,
    /// Clean and invalidate `[pa, pa + len)` to memory.
    Clean { pa: u64, len: u64 },
    /// Put vCPU 0's general and EL1 system registers in their reset
    /// state, at the image's entry: a step of its own, being as long as a
    /// chunk.
    Registers,
    /// Then the rest of its context (FP/SIMD, the virtual interface, the
    /// debug registers, its queue): another, the two together having held
    /// EL2 for about 1,000 instructions.
    Context,
}

/// A load as the reload copies it: host-physical target, data offset, length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Load {
    pub pa: u64,
    pub offset: u64,
    pub len: u64,
}

/// The cursor units the seed step takes.
const SEED_UNITS: u64 = 1;
/// The cursor units the reset step takes.
const RESET_UNITS: u64 = 1;
/// The cursor units the registers' step and the context's take, each.
const CONTEXT_UNITS: u64 = 1;

/// Cursors past every step: the hypervisor's marks for a reload that is
/// done and has said so, then has said how the partition starts, with
/// only the power-on left. A line each, in a step of its own.
pub const SAID_RELOADED: u64 = u64::MAX - 1;
pub const SAID_STARTING: u64 = u64::MAX;

/// The step at `cursor`, at most `chunk` bytes and never crossing a region
/// or a load, and the cursor after it; `None` once all is done.
pub fn step(regions: &[Range], loads: &[Load], cursor: u64, chunk: u64) -> Option<(Step, u64)> {
    if cursor < RESET_UNITS {
        return Some((Step::Reset, RESET_UNITS));
    }
    let (step, next) = step_after_reset(regions, loads, cursor - RESET_UNITS, chunk)?;
    Some((step, next + RESET_UNITS))
}

/// [`step`] with the cursor counted from the end of the reset.
fn step_after_reset(regions: &[Range], loads: &[Load], cursor: u64, chunk: u64) -> Option<(Step, u64)> {
    let chunk = chunk.max(1);
    let memory: u64 = regions.iter().map(|r| r.size).sum();
    let images: u64 = loads.iter().map(|l| l.len).sum();
    let (phase_start, step) = if cursor < memory {
        (0, piece(regions.iter().map(|r| (r.base, 0, r.size)), cursor, chunk, |pa, _, len| Step::Zero { pa, len }))
    } else if cursor < memory + images {
        let pieces = loads.iter().map(|l| (l.pa, l.offset, l.len));
        (memory, piece(pieces, cursor - memory, chunk, |pa, offset, len| Step::Copy { pa, offset, len }))
    } else if cursor == memory + images {
        return Some((Step::Seed, cursor + SEED_UNITS));
    } else if cursor < 2 * memory + images + SEED_UNITS {
        let pieces = regions.iter().map(|r| (r.base, 0, r.size));
        let start = memory + images + SEED_UNITS;
        (start, piece(pieces, cursor - start, chunk, |pa, _, len| Step::Clean { pa, len }))
    } else if cursor == 2 * memory + images + SEED_UNITS {
        return Some((Step::Registers, cursor + CONTEXT_UNITS));
    } else if cursor == 2 * memory + images + SEED_UNITS + CONTEXT_UNITS {
        return Some((Step::Context, cursor + CONTEXT_UNITS));
    } else {
        return None;
    };
    let (step, done) = step?;
    Some((step, phase_start + done))
}

/// The piece at `at` bytes into the concatenation of `(pa, offset, len)`
/// pieces, and how far into the concatenation it ends.
fn piece(
    pieces: impl Iterator<Item = (u64, u64, u64)>,
    at: u64,
    chunk: u64,
    make: impl Fn(u64, u64, u64) -> Step,
) -> Option<(Step, u64)> {
    let mut start = 0;
    for (pa, offset, len) in pieces {
        if at < start + len {
            let into = at - start;
            let n = chunk.min(len - into);
            return Some((make(pa + into, offset + into, n), at + n));
        }
        start += len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn all(regions: &[Range], loads: &[Load], chunk: u64) -> Vec<Step> {
        let mut steps = Vec::new();
        let mut cursor = 0;
        while let Some((step, next)) = step(regions, loads, cursor, chunk) {
            assert!(next > cursor, "every step advances");
            steps.push(step);
            cursor = next;
        }
        steps
    }

    #[test]
    fn zero_then_copy_then_clean_in_chunks() {
        let regions = [Range::new(0x1000, 0x2800), Range::new(0x9000, 0x800)];
        let loads = [Load { pa: 0x1100, offset: 0, len: 0x1200 }, Load { pa: 0x9000, offset: 0x1200, len: 0x10 }];
        let steps = all(&regions, &loads, 0x1000);
        assert_eq!(
            steps,
            [
                Step::Reset,
                Step::Zero { pa: 0x1000, len: 0x1000 },
                Step::Zero { pa: 0x2000, len: 0x1000 },
                Step::Zero { pa: 0x3000, len: 0x800 },
                Step::Zero { pa: 0x9000, len: 0x800 },
                Step::Copy { pa: 0x1100, offset: 0, len: 0x1000 },
                Step::Copy { pa: 0x2100, offset: 0x1000, len: 0x200 },
                Step::Copy { pa: 0x9000, offset: 0x1200, len: 0x10 },
                Step::Seed,
                Step::Clean { pa: 0x1000, len: 0x1000 },
                Step::Clean { pa: 0x2000, len: 0x1000 },
                Step::Clean { pa: 0x3000, len: 0x800 },
                Step::Clean { pa: 0x9000, len: 0x800 },
                Step::Registers,
                Step::Context,
            ]
        );
    }

    #[test]
    fn every_byte_once_per_phase_whatever_the_chunk() {
        let regions = [Range::new(0, 10_000), Range::new(50_000, 777)];
        let loads = [Load { pa: 100, offset: 0, len: 4321 }, Load { pa: 50_001, offset: 4321, len: 5 }];
        for chunk in [1, 7, 512, 4096, 1 << 20] {
            let steps = all(&regions, &loads, chunk);
            let total = |f: fn(&Step) -> u64| steps.iter().map(f).sum::<u64>();
            assert_eq!(total(|s| if let Step::Zero { len, .. } = s { *len } else { 0 }), 10_777);
            assert_eq!(total(|s| if let Step::Copy { len, .. } = s { *len } else { 0 }), 4326);
            assert_eq!(total(|s| if let Step::Clean { len, .. } = s { *len } else { 0 }), 10_777);
            assert_eq!(steps.iter().filter(|s| **s == Step::Seed).count(), 1);
            assert_eq!(steps[0], Step::Reset, "the devices are reset first");
            assert_eq!(steps.iter().filter(|s| **s == Step::Reset).count(), 1);
            assert_eq!(steps[steps.len() - 2..], [Step::Registers, Step::Context], "vCPU 0's context last");
            assert!(steps.iter().all(|s| match *s {
                Step::Zero { len, .. } | Step::Copy { len, .. } | Step::Clean { len, .. } => len <= chunk && len > 0,
                Step::Seed | Step::Reset | Step::Registers | Step::Context => true,
            }));
        }
    }

    #[test]
    fn nothing_but_the_reset_the_seeds_and_the_context_to_do_is_four_steps() {
        assert_eq!(step(&[], &[], 0, 4096), Some((Step::Reset, 1)));
        assert_eq!(step(&[], &[], 1, 4096), Some((Step::Seed, 2)));
        assert_eq!(step(&[], &[], 2, 4096), Some((Step::Registers, 3)));
        assert_eq!(step(&[], &[], 3, 4096), Some((Step::Context, 4)));
        assert_eq!(step(&[], &[], 4, 4096), None);
    }

    #[test]
    fn a_reload_said_done_has_no_step_left() {
        let regions = [Range::new(0x1000, 0x2800)];
        let loads = [Load { pa: 0x1100, offset: 0, len: 0x1200 }];
        assert_eq!(step(&regions, &loads, SAID_RELOADED, 4096), None);
        assert_eq!(step(&regions, &loads, SAID_STARTING, 4096), None);
    }
}
