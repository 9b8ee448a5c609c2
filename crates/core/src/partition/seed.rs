//! The seeds a partition finds in its device tree's `/chosen` at every
//! load: `kaslr-seed` (8 bytes, a big-endian u64 to Linux) and `rng-seed`
//! (bytes credited to its entropy pool).
//!
//! They grow from a secret the host drew for the partition at build time,
//! mixed with what differs at each load: the partition's index, how many
//! times it has been loaded, the counter, and the CPU's RNDR when it has
//! one. That makes them unpredictable to a guest that cannot read the
//! boot image, different per partition, per load and per boot; it is not
//! a hardware random source, and not a cryptographic generator: the
//! mixing only spreads the secret and the inputs over every output bit.

/// Bytes of `/chosen/kaslr-seed`.
pub const KASLR_SEED_LEN: usize = 8;
/// Bytes of `/chosen/rng-seed` the host writes; the most the hypervisor fills.
pub const RNG_SEED_LEN: usize = 64;
/// Independent 64-bit lanes: the build secret has one word per lane, so
/// the seeds carry 256 secret bits, not the 64 of a single state.
pub const LANES: usize = 4;

/// SplitMix64's increment, the golden ratio in 64 bits.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// What one load's seeds grow from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inputs {
    /// The partition's build-time secret (the boot table's `entropy`).
    pub secret: [u64; LANES],
    pub partition: u64,
    /// How many times the partition was loaded before this one.
    pub load: u64,
    /// The physical counter at the load.
    pub counter: u64,
    /// One RNDR value per lane, zero where there is none.
    pub hardware: [u64; LANES],
}

/// SplitMix64's output function (Steele, Lea, Flood, 2014): a bijection
/// whose every output bit depends on every input bit. Written here rather
/// than taken from a crate because the hypervisor is `no_std` and this is
/// three lines; the RNG crates bring a framework around them.
fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One step of folding `word` into `state`: a bijection of each.
fn fold(state: u64, word: u64) -> u64 {
    finalize(state.wrapping_add(GOLDEN) ^ word)
}

/// A SplitMix64 stream per lane, each started from its secret word with
/// every input folded in. Each fold step is a bijection of the state and
/// of the word folded, so two loads that differ in one input differ in
/// every lane.
pub struct Mixer {
    lanes: [u64; LANES],
    next: usize,
}

impl Mixer {
    pub fn new(inputs: &Inputs) -> Mixer {
        let mut lanes: [u64; LANES] = core::array::from_fn(|lane| {
            // The lane number keeps lanes apart when their secrets are equal.
            let start = inputs.secret[lane] ^ finalize((lane as u64 + 1).wrapping_mul(GOLDEN));
            let words = [inputs.partition, inputs.load, inputs.counter, inputs.hardware[lane]];
            words.iter().fold(start, |state, &word| fold(state, word))
        });
        // Every lane takes in every other, so each output word depends on
        // the whole secret, not on its own lane's quarter.
        let whole = lanes.iter().fold(0, |state, &lane| fold(state, lane));
        for lane in &mut lanes {
            *lane ^= whole;
        }
        Mixer { lanes, next: 0 }
    }

    /// The next output word, taking the lanes in turn.
    pub fn word(&mut self) -> u64 {
        let lane = &mut self.lanes[self.next % LANES];
        self.next += 1;
        *lane = lane.wrapping_add(GOLDEN);
        finalize(*lane)
    }

    /// Fills `out` with output bytes.
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let bytes = self.word().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// One load's two seeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seeds {
    pub kaslr: [u8; KASLR_SEED_LEN],
    rng: [u8; RNG_SEED_LEN],
    rng_len: usize,
}

impl Seeds {
    /// The seeds of the load `inputs` describe, with `rng_len` bytes of
    /// `rng-seed` (at most [`RNG_SEED_LEN`]).
    pub fn draw(inputs: &Inputs, rng_len: usize) -> Seeds {
        let mut mixer = Mixer::new(inputs);
        // Linux reads a zero kaslr-seed as no seed at all.
        let kaslr = core::iter::repeat_with(|| mixer.word()).find(|&word| word != 0).unwrap_or(1);
        let mut rng = [0; RNG_SEED_LEN];
        let rng_len = rng_len.min(RNG_SEED_LEN);
        mixer.fill(&mut rng[..rng_len]);
        Seeds { kaslr: kaslr.to_be_bytes(), rng, rng_len }
    }

    pub fn rng(&self) -> &[u8] {
        &self.rng[..self.rng_len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::vec::Vec;

    fn inputs() -> Inputs {
        Inputs {
            secret: [0x0123_4567_89ab_cdef, 0x1111, 0x2222, 0x3333],
            partition: 1,
            load: 0,
            counter: 0x1234_5678,
            hardware: [0; LANES],
        }
    }

    /// Every way a load can differ from another, one input at a time.
    fn neighbours() -> Vec<Inputs> {
        let base = inputs();
        let mut all = vec![base];
        for lane in 0..LANES {
            let mut secret = base;
            secret.secret[lane] ^= 1;
            let mut hardware = base;
            hardware.hardware[lane] = 1;
            all.extend([secret, hardware]);
        }
        all.extend([
            Inputs { partition: 2, ..base },
            Inputs { load: 1, ..base },
            Inputs { counter: base.counter + 1, ..base },
        ]);
        all
    }

    #[test]
    fn inputs_that_differ_in_one_bit_give_different_seeds() {
        let drawn: Vec<Seeds> = neighbours().iter().map(|i| Seeds::draw(i, RNG_SEED_LEN)).collect();
        let kaslr: HashSet<[u8; 8]> = drawn.iter().map(|s| s.kaslr).collect();
        let rng: HashSet<&[u8]> = drawn.iter().map(|s| s.rng()).collect();
        assert_eq!(kaslr.len(), drawn.len());
        assert_eq!(rng.len(), drawn.len());
    }

    #[test]
    fn the_same_inputs_give_the_same_seeds() {
        assert_eq!(Seeds::draw(&inputs(), 32), Seeds::draw(&inputs(), 32));
    }

    #[test]
    fn fills_the_lengths_asked_and_no_more_than_it_holds() {
        for len in [0, 1, 7, 8, 9, 32, 64] {
            assert_eq!(Seeds::draw(&inputs(), len).rng().len(), len);
        }
        assert_eq!(Seeds::draw(&inputs(), 1000).rng().len(), RNG_SEED_LEN);
        let mut odd = [0u8; 13];
        Mixer::new(&inputs()).fill(&mut odd);
        assert!(odd[8..].iter().any(|&b| b != 0), "the partial last word is filled too: {odd:?}");
    }

    #[test]
    fn loads_in_a_row_give_seeds_unlike_each_other() {
        let seeds: HashSet<[u8; 8]> =
            (0..10_000).map(|load| Seeds::draw(&Inputs { load, ..inputs() }, 8).kaslr).collect();
        assert_eq!(seeds.len(), 10_000);
    }

    #[test]
    fn all_zero_inputs_still_give_a_nonzero_kaslr_seed_and_distinct_lanes() {
        let zero = Inputs { secret: [0; LANES], partition: 0, load: 0, counter: 0, hardware: [0; LANES] };
        let seeds = Seeds::draw(&zero, RNG_SEED_LEN);
        assert_ne!(seeds.kaslr, [0; 8]);
        let words: HashSet<&[u8]> = seeds.rng().chunks(8).collect();
        assert_eq!(words.len(), RNG_SEED_LEN / 8, "equal secrets must not make lanes repeat each other");
    }

    #[test]
    fn output_bits_are_balanced() {
        // Counter values one apart, as two close loads would see: each
        // output bit should still be set about half the time.
        let mut ones = [0u32; 64];
        let draws = 4096;
        for counter in 0..draws {
            let word = u64::from_be_bytes(Seeds::draw(&Inputs { counter, ..inputs() }, 0).kaslr);
            for (bit, count) in ones.iter_mut().enumerate() {
                *count += (word >> bit & 1) as u32;
            }
        }
        for (bit, &count) in ones.iter().enumerate() {
            assert!((1800..2300).contains(&count), "bit {bit} set {count} times in {draws}");
        }
    }
}
