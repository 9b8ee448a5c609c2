//! The emulated PL011 each partition sees as its console.
//!
//! Enough of the register file for polled output and for Linux's amba-pl011
//! probe: the data register, the flag register (transmitter always empty,
//! receiver always empty), stored control registers and the PrimeCell IDs.
//! Output bytes are collected into lines that the hypervisor tags with the
//! partition's name.
//!
//! Its interrupt (`CONSOLE_INTID`) is a virtual SPI of the partition's own,
//! so that a driver can request and enable it; it never fires, because
//! nothing the interrupt could signal ever happens: a transmitted byte
//! leaves at once (the FIFO is never above its trigger level) and nothing
//! is received (input goes to a virtio console). RIS and MIS read as zero.

/// Register offsets.
mod reg {
    pub const DR: u64 = 0x000;
    pub const FR: u64 = 0x018;
    pub const IBRD: u64 = 0x024;
    pub const FBRD: u64 = 0x028;
    pub const LCR_H: u64 = 0x02c;
    pub const CR: u64 = 0x030;
    pub const IFLS: u64 = 0x034;
    pub const IMSC: u64 = 0x038;
    pub const PERIPH_ID0: u64 = 0xfe0;
}

/// UARTFR: TX FIFO empty, RX FIFO empty.
const FR_IDLE: u32 = (1 << 7) | (1 << 4);
/// PeriphID0..3 then CellID0..3: an ARM PL011 r1p5.
const IDS: [u32; 8] = [0x11, 0x10, 0x34, 0x00, 0x0d, 0xf0, 0x05, 0xb1];

/// Size of the console's register page.
pub const PAGE_SIZE: u64 = 0x1000;

#[derive(Clone, Debug, Default)]
pub struct Pl011 {
    ibrd: u32,
    fbrd: u32,
    lcr_h: u32,
    cr: u32,
    ifls: u32,
    imsc: u32,
}

impl Pl011 {
    pub const fn new() -> Self {
        Self { ibrd: 0, fbrd: 0, lcr_h: 0, cr: 0x300, ifls: 0x12, imsc: 0 }
    }

    /// A guest read at `offset` within the page.
    pub fn read(&self, offset: u64) -> u32 {
        match offset {
            reg::FR => FR_IDLE,
            reg::IBRD => self.ibrd,
            reg::FBRD => self.fbrd,
            reg::LCR_H => self.lcr_h,
            reg::CR => self.cr,
            reg::IFLS => self.ifls,
            reg::IMSC => self.imsc,
            o if (reg::PERIPH_ID0..PAGE_SIZE).contains(&o) && o % 4 == 0 => IDS[((o - reg::PERIPH_ID0) / 4) as usize],
            _ => 0,
        }
    }

    /// A guest write; returns the byte sent when it wrote the data register.
    pub fn write(&mut self, offset: u64, value: u32) -> Option<u8> {
        match offset {
            reg::DR => return Some(value as u8),
            reg::IBRD => self.ibrd = value & 0xffff,
            reg::FBRD => self.fbrd = value & 0x3f,
            reg::LCR_H => self.lcr_h = value & 0xff,
            reg::CR => self.cr = value & 0xff87,
            reg::IFLS => self.ifls = value & 0x3f,
            reg::IMSC => self.imsc = value & 0x7ff,
            _ => {}
        }
        None
    }
}

/// Collects output bytes into lines of at most `N` bytes.
#[derive(Clone, Debug)]
pub struct LineBuffer<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Default for LineBuffer<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> LineBuffer<N> {
    pub const fn new() -> Self {
        Self { bytes: [0; N], len: 0 }
    }

    /// Adds a byte. Returns true when the line is complete (newline, or the
    /// buffer is full) and should be taken with [`take`](Self::take).
    /// Carriage returns and NULs are dropped; other control bytes become '?'
    /// so that a guest cannot forge another partition's tag or colours.
    pub fn push(&mut self, byte: u8) -> bool {
        match byte {
            b'\n' => return true,
            b'\r' | 0 => {}
            b'\t' | 0x20..=0x7e => self.append(byte),
            _ => self.append(b'?'),
        }
        self.len == N
    }

    fn append(&mut self, byte: u8) {
        if self.len < N {
            self.bytes[self.len] = byte;
            self.len += 1;
        }
    }

    /// The line collected so far; empties the buffer.
    pub fn take(&mut self) -> &[u8] {
        let len = core::mem::take(&mut self.len);
        &self.bytes[..len]
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmitter_always_ready_and_ids_match_a_pl011() {
        let uart = Pl011::new();
        assert_eq!(uart.read(reg::FR) & (1 << 5), 0, "TXFF must stay clear");
        assert_ne!(uart.read(reg::FR) & (1 << 4), 0, "RX FIFO reads empty");
        let ids: [u32; 8] = core::array::from_fn(|i| uart.read(0xfe0 + 4 * i as u64));
        assert_eq!(ids, IDS);
    }

    #[test]
    fn data_register_emits_bytes_and_control_registers_read_back() {
        let mut uart = Pl011::new();
        assert_eq!(uart.write(reg::DR, 0x141), Some(b'A'));
        assert_eq!(uart.write(reg::CR, 0x301), None);
        assert_eq!(uart.read(reg::CR), 0x301);
        assert_eq!(uart.read(0x800), 0);
    }

    #[test]
    fn lines_split_on_newline_and_when_full() {
        let mut line = LineBuffer::<4>::new();
        assert!(!line.push(b'h'));
        assert!(!line.push(b'\r'));
        assert!(line.push(b'\n'));
        assert_eq!(line.take(), b"h");
        assert!(line.is_empty());
        for &b in b"abc" {
            assert!(!line.push(b));
        }
        assert!(line.push(b'd'));
        assert_eq!(line.take(), b"abcd");
    }

    #[test]
    fn control_bytes_cannot_forge_output() {
        let mut line = LineBuffer::<8>::new();
        for &b in b"\x1b[31m" {
            line.push(b);
        }
        assert_eq!(line.take(), b"?[31m");
    }
}
