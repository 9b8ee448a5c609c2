//! Times as a person reads them: the summary, the status lines and the
//! reports give microseconds, with the counter ticks they came from in
//! brackets where a bound or a target is set in ticks.

/// `ticks` of a `hz` counter in microseconds; 0 for a counter of no
/// frequency.
pub fn us(ticks: f64, hz: u64) -> f64 {
    if hz == 0 {
        return 0.0;
    }
    ticks * 1e6 / hz as f64
}

/// Microseconds with the places that matter: one from 10 us up, three below
/// (a tick of QEMU's 62.5 MHz counter is 0.016 us).
pub fn micros(us: f64) -> String {
    if us.abs() >= 10.0 {
        format!("{us:.1} us")
    } else {
        format!("{us:.3} us")
    }
}

/// `1937.2 us (121078 ticks)`; without a frequency, the ticks alone.
pub fn us_ticks(ticks: u64, hz: u64) -> String {
    let count = format!("{ticks} {}", if ticks == 1 { "tick" } else { "ticks" });
    if hz == 0 {
        count
    } else {
        format!("{} ({count})", micros(us(ticks as f64, hz)))
    }
}

/// [`us_ticks`] for a mean, whose ticks keep one place.
pub fn us_ticks_mean(ticks: f64, hz: u64) -> String {
    if hz == 0 {
        format!("{ticks:.1} ticks")
    } else {
        format!("{} ({ticks:.1} ticks)", micros(us(ticks, hz)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QEMU: u64 = 62_500_000;

    #[test]
    fn ticks_read_as_microseconds_with_the_ticks_beside() {
        assert_eq!(us_ticks(121_078, QEMU), "1937.2 us (121078 ticks)");
        assert_eq!(us_ticks(1, QEMU), "0.016 us (1 tick)");
        assert_eq!(us_ticks(0, QEMU), "0.000 us (0 ticks)");
        assert_eq!(us_ticks(625, QEMU), "10.0 us (625 ticks)");
        assert_eq!(us_ticks_mean(2715.9, QEMU), "43.5 us (2715.9 ticks)");
        assert_eq!(us_ticks(85_406, 1_000_000_000), "85.4 us (85406 ticks)");
    }

    #[test]
    fn without_a_frequency_only_the_ticks_are_known() {
        assert_eq!(us_ticks(7, 0), "7 ticks");
        assert_eq!(us_ticks_mean(2.5, 0), "2.5 ticks");
        assert_eq!(us(100.0, 0), 0.0);
    }
}
