//! Numbers as text without `core::fmt`, whose machinery costs the
//! hypervisor thousands of instructions a line on paths a guest can drive
//! (see `console::Pieces` in the hypervisor).

/// `value` in decimal, in the end of `digits`.
pub fn decimal(mut value: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return &digits[at..];
        }
    }
}

/// `value` in lowercase hexadecimal, without leading zeros, in the end of
/// `digits`.
pub fn hex(mut value: u64, digits: &mut [u8; 16]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b"0123456789abcdef"[(value & 0xf) as usize];
        value >>= 4;
        if value == 0 {
            return &digits[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_core_fmt_writes_them() {
        for value in [0, 1, 9, 10, 42, 1_000_000, u64::MAX] {
            assert_eq!(decimal(value, &mut [0; 20]), alloc::format!("{value}").as_bytes());
            assert_eq!(hex(value, &mut [0; 16]), alloc::format!("{value:x}").as_bytes());
        }
    }
}
