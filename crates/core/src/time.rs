//! Counter ticks and microseconds. The configuration speaks microseconds,
//! the hardware counts ticks of `hz`; both ways multiply in 64 bits while
//! the product fits and in 128 otherwise, so that no product overflows, and
//! saturate rather than wrap.

/// `us` microseconds in ticks of a `hz` counter (rounded down).
pub fn us_to_ticks(us: u64, hz: u64) -> u64 {
    match us.checked_mul(hz) {
        Some(product) => product / 1_000_000,
        None => u64::try_from(u128::from(us) * u128::from(hz) / 1_000_000).unwrap_or(u64::MAX),
    }
}

/// `ticks` of a `hz` counter in microseconds (rounded down); 0 for a
/// counter of no frequency.
pub fn ticks_to_us(ticks: u64, hz: u64) -> u64 {
    if hz == 0 {
        return 0;
    }
    // In 64 bits while the product fits (three days of a 62.5 MHz
    // counter): the 128-bit division is a library call of a few hundred
    // instructions, on paths that log with interrupts masked.
    match ticks.checked_mul(1_000_000) {
        Some(product) => product / hz,
        None => u64::try_from(u128::from(ticks) * 1_000_000 / u128::from(hz)).unwrap_or(u64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QEMU_HZ: u64 = 62_500_000;

    #[test]
    fn both_ways_at_qemus_frequency() {
        assert_eq!(us_to_ticks(1_000, QEMU_HZ), 62_500);
        assert_eq!(ticks_to_us(62_500, QEMU_HZ), 1_000);
        assert_eq!(ticks_to_us(62, QEMU_HZ), 0, "rounded down");
        assert_eq!(ticks_to_us(u64::MAX, QEMU_HZ), 295_147_905_179_352_825, "no overflow on the way");
    }

    #[test]
    fn the_64_bit_and_128_bit_ways_agree_where_they_meet() {
        let edge = u64::MAX / 1_000_000;
        for ticks in [edge - 1, edge, edge + 1, edge + 2] {
            let wide = u128::from(ticks) * 1_000_000 / u128::from(QEMU_HZ);
            assert_eq!(u128::from(ticks_to_us(ticks, QEMU_HZ)), wide, "{ticks}");
        }
        let edge = u64::MAX / QEMU_HZ;
        for us in [edge - 1, edge, edge + 1] {
            let wide = u128::from(us) * u128::from(QEMU_HZ) / 1_000_000;
            assert_eq!(u128::from(us_to_ticks(us, QEMU_HZ)), wide, "{us}");
        }
    }

    #[test]
    fn saturates_instead_of_wrapping() {
        assert_eq!(us_to_ticks(u64::MAX, QEMU_HZ), u64::MAX);
        assert_eq!(ticks_to_us(5, 0), 0);
    }
}
