//! Numbers as text without `core::fmt`, whose machinery costs the
//! hypervisor thousands of instructions a line on paths a guest can drive
//! (see `console::Pieces` in the hypervisor).

/// "00" to "99": two digits per division, half the divisions of one
/// digit at a time (an `hm:` line's numbers took some 280 instructions).
const PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// `value` in decimal, in the end of `digits`.
pub fn decimal(mut value: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    while value >= 100 {
        let pair = (value % 100) as usize * 2;
        value /= 100;
        at -= 2;
        digits[at] = PAIRS[pair];
        digits[at + 1] = PAIRS[pair + 1];
    }
    if value >= 10 {
        let pair = value as usize * 2;
        at -= 2;
        digits[at] = PAIRS[pair];
        digits[at + 1] = PAIRS[pair + 1];
    } else {
        at -= 1;
        digits[at] = b'0' + value as u8;
    }
    &digits[at..]
}

/// `0x` and `value` in lowercase hexadecimal, in the end of `text`: one
/// piece of a line rather than two.
pub fn hex(mut value: u64, text: &mut [u8; 18]) -> &[u8] {
    let mut at = text.len();
    loop {
        at -= 1;
        text[at] = b"0123456789abcdef"[(value & 0xf) as usize];
        value >>= 4;
        if value == 0 {
            break;
        }
    }
    text[at - 2] = b'0';
    text[at - 1] = b'x';
    &text[at - 2..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_core_fmt_writes_them() {
        for value in [0, 1, 9, 10, 42, 99, 100, 101, 999, 1_000_000, 12_345_678_901, u64::MAX] {
            assert_eq!(decimal(value, &mut [0; 20]), alloc::format!("{value}").as_bytes());
            assert_eq!(hex(value, &mut [0; 18]), alloc::format!("{value:#x}").as_bytes());
        }
    }
}
