//! Counter ticks and microseconds. The configuration speaks microseconds,
//! the hardware counts ticks of `hz`; both ways go through u128 so that no
//! product overflows, and saturate rather than wrap.

/// `us` microseconds in ticks of a `hz` counter (rounded down).
pub fn us_to_ticks(us: u64, hz: u64) -> u64 {
    u64::try_from(u128::from(us) * u128::from(hz) / 1_000_000).unwrap_or(u64::MAX)
}

/// `ticks` of a `hz` counter in microseconds (rounded down); 0 for a
/// counter of no frequency.
pub fn ticks_to_us(ticks: u64, hz: u64) -> u64 {
    if hz == 0 {
        return 0;
    }
    u64::try_from(u128::from(ticks) * 1_000_000 / u128::from(hz)).unwrap_or(u64::MAX)
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
    fn saturates_instead_of_wrapping() {
        assert_eq!(us_to_ticks(u64::MAX, QEMU_HZ), u64::MAX);
        assert_eq!(ticks_to_us(5, 0), 0);
    }
}
