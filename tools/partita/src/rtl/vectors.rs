//! Test vectors: bus transactions and the response the Rust model gives
//! for each, in the text form `hardware/tb/axi_lite_tb.v` reads.

use std::fmt::Write as _;

/// One AXI4-Lite transaction and the response it must get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vector {
    /// Groups the cycle counts: one tag per kind of operation.
    pub tag: u8,
    pub write: bool,
    pub addr: u32,
    /// Written for a write; ignored for a read.
    pub data: u32,
    /// RDATA for a read, BRESP for a write.
    pub expected: u32,
}

/// AXI4-Lite's BRESP and RRESP codes.
pub const OKAY: u32 = 0;
pub const SLVERR: u32 = 2;

/// A sequence of vectors and how many model operations they check.
#[derive(Clone, Debug, Default)]
pub struct Vectors {
    pub lines: Vec<Vector>,
}

impl Vectors {
    pub fn read(&mut self, tag: u8, addr: u32, expected: u32) {
        self.lines.push(Vector { tag, write: false, addr, data: 0, expected });
    }

    pub fn write(&mut self, tag: u8, addr: u32, data: u32, expected: u32) {
        self.lines.push(Vector { tag, write: true, addr, data, expected });
    }

    /// `op tag addr data expected` in hex, one line each.
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.lines.len() * 32);
        for v in &self.lines {
            let _ = writeln!(out, "{:x} {:x} {:x} {:x} {:x}", u8::from(v.write), v.tag, v.addr, v.data, v.expected);
        }
        out
    }

    /// How many transactions carry `tag`.
    pub fn count(&self, tag: u8) -> usize {
        self.lines.iter().filter(|v| v.tag == tag).count()
    }
}

/// A small seeded generator (SplitMix64): the same seed gives the same
/// vectors on every machine, so a failure can be replayed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`; `n` must not be 0.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `percent` in 100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }

    pub fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_vector_is_one_line_of_five_hex_fields() {
        let mut vectors = Vectors::default();
        vectors.write(1, 0x2c, 7, SLVERR);
        vectors.read(3, 0x800, 0x8000_0000);
        assert_eq!(vectors.text(), "1 1 2c 7 2\n0 3 800 0 80000000\n");
        assert_eq!((vectors.count(1), vectors.count(3), vectors.count(0)), (1, 1, 0));
    }

    #[test]
    fn the_same_seed_gives_the_same_numbers() {
        let (mut a, mut b, mut c) = (Rng::new(7), Rng::new(7), Rng::new(8));
        let first: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        assert_eq!(first, (0..4).map(|_| b.next_u64()).collect::<Vec<_>>());
        assert_ne!(first, (0..4).map(|_| c.next_u64()).collect::<Vec<_>>());
        assert!((0..1000).all(|_| a.below(5) < 5));
    }
}
