//! A virtual device's interface page: Ker-ONE's PR accelerator interface
//! (Table 1), one 4 KiB page per (partition, device), at a fixed
//! guest-physical address. `docs/accelerators.md` and `partita.h` give the
//! same map to guests.
//!
//! The page is memory: while the device is connected, stage 2 maps it
//! read-write and the guest drives the accelerator with plain loads and
//! stores; while it is not, the page is read-only, so the registers keep
//! their values (the guest reads its last results) and the first write
//! faults, which is the request for a PRR. The fabric reads and writes the
//! same bytes, in the little-endian layout [`Registers::decode`] and
//! [`Registers::encode`] define.
//!
//! DATA_ADDR is 64 bits wide, not Ker-ONE's 32: guest-physical addresses
//! on AArch64 go beyond 4 GiB.

/// Bytes of an interface page.
pub const PAGE_SIZE: u64 = 0x1000;
/// Bytes of the page that hold registers; the rest reads as zero.
pub const REGISTERS_SIZE: usize = 0x60;
/// Bytes of an accelerator context saved at a preemption (Ker-ONE 4.3).
pub const CONTEXT_SIZE: usize = 1024;

/// Register offsets.
pub mod reg {
    /// Status, written by the fabric (see [`super::stat`]).
    pub const STAT: u64 = 0x00;
    /// Write 1 to start a computation.
    pub const START: u64 = 0x08;
    /// 1 once the computation is over; write 0 to clear.
    pub const OVER: u64 = 0x0c;
    /// The accelerator's command.
    pub const CMD: u64 = 0x10;
    /// Guest-physical address of the input buffer (64-bit).
    pub const DATA_ADDR: u64 = 0x18;
    /// Bytes of input.
    pub const DATA_SIZE: u64 = 0x20;
    /// The computation's result (64-bit): frames processed.
    pub const RESULT: u64 = 0x28;
    /// Bit 0: raise the device's READY signal when OVER is set.
    pub const INT_CTRL: u64 = 0x30;
    /// The first of 8 accelerator-defined 32-bit ports. Every accelerator
    /// of the emulated fabric takes its output buffer in PORT0 (low 32
    /// bits of its guest-physical address), PORT1 (high) and PORT2 (bytes).
    pub const PORT0: u64 = 0x40;
    /// How many custom ports there are.
    pub const PORTS: usize = 8;
}

/// STAT bits.
pub mod stat {
    /// The interface is connected to a PRR: writes go to the accelerator.
    pub const CONNECTED: u32 = 1 << 0;
    /// A computation is running.
    pub const BUSY: u32 = 1 << 1;
    /// A request for a PRR is waiting (IPC_WAIT was signalled).
    pub const WAITING: u32 = 1 << 2;
    /// The accelerator was preempted; its computation resumes from its
    /// saved context once the device is connected again.
    pub const PREEMPTED: u32 = 1 << 3;
    /// A buffer lay outside the partition's memory: nothing was accessed.
    pub const ERR_DMA: u32 = 1 << 8;
    /// A command or size the accelerator does not accept.
    pub const ERR_CMD: u32 = 1 << 9;
}

/// The registers of one interface page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Registers {
    pub stat: u32,
    pub start: u8,
    pub over: u8,
    pub cmd: u32,
    pub data_addr: u64,
    pub data_size: u32,
    pub result: u64,
    pub int_ctrl: u32,
    pub ports: [u32; reg::PORTS],
}

impl Registers {
    /// The registers as they sit in the page.
    pub fn decode(page: &[u8; REGISTERS_SIZE]) -> Self {
        let u32_at = |at: u64| {
            let at = at as usize;
            u32::from_le_bytes([page[at], page[at + 1], page[at + 2], page[at + 3]])
        };
        let u64_at = |at: u64| u64::from(u32_at(at)) | u64::from(u32_at(at + 4)) << 32;
        Self {
            stat: u32_at(reg::STAT),
            start: page[reg::START as usize],
            over: page[reg::OVER as usize],
            cmd: u32_at(reg::CMD),
            data_addr: u64_at(reg::DATA_ADDR),
            data_size: u32_at(reg::DATA_SIZE),
            result: u64_at(reg::RESULT),
            int_ctrl: u32_at(reg::INT_CTRL),
            ports: core::array::from_fn(|i| u32_at(reg::PORT0 + 4 * i as u64)),
        }
    }

    /// Writes the registers into the page's layout; every byte between
    /// registers is zero.
    pub fn encode(&self) -> [u8; REGISTERS_SIZE] {
        let mut page = [0u8; REGISTERS_SIZE];
        let mut put = |at: u64, bytes: &[u8]| page[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
        put(reg::STAT, &self.stat.to_le_bytes());
        put(reg::START, &[self.start]);
        put(reg::OVER, &[self.over]);
        put(reg::CMD, &self.cmd.to_le_bytes());
        put(reg::DATA_ADDR, &self.data_addr.to_le_bytes());
        put(reg::DATA_SIZE, &self.data_size.to_le_bytes());
        put(reg::RESULT, &self.result.to_le_bytes());
        put(reg::INT_CTRL, &self.int_ctrl.to_le_bytes());
        for (i, port) in self.ports.iter().enumerate() {
            put(reg::PORT0 + 4 * i as u64, &port.to_le_bytes());
        }
        page
    }

    /// The output buffer the custom ports name: guest-physical address
    /// and bytes.
    pub fn output(&self) -> (u64, u32) {
        (u64::from(self.ports[0]) | u64::from(self.ports[1]) << 32, self.ports[2])
    }
}

/// Whether `offset` is a register a guest may write (not STAT or RESULT,
/// which only the fabric writes, and not the unused rest of the page):
/// a write elsewhere is ignored, never an error, as on the real interface.
pub fn writable(offset: u64) -> bool {
    let ports = reg::PORT0..reg::PORT0 + 4 * reg::PORTS as u64;
    matches!(offset, reg::START | reg::OVER | reg::CMD | reg::INT_CTRL | reg::DATA_SIZE)
        || (reg::DATA_ADDR..reg::DATA_ADDR + 8).contains(&offset)
        || ports.contains(&offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Registers {
        Registers {
            stat: stat::CONNECTED | stat::BUSY,
            start: 1,
            over: 0,
            cmd: 7,
            data_addr: 0x1_2345_6000,
            data_size: 2350,
            result: 0xdead_beef_0000_0001,
            int_ctrl: 1,
            ports: [0x4010_0000, 0x1, 9400, 3, 4, 5, 6, 0xffff_ffff],
        }
    }

    #[test]
    fn registers_round_trip_through_the_page() {
        let regs = sample();
        assert_eq!(Registers::decode(&regs.encode()), regs);
        assert_eq!(Registers::decode(&[0; REGISTERS_SIZE]), Registers::default());
    }

    #[test]
    fn the_layout_is_the_documented_one() {
        let page = sample().encode();
        assert_eq!(&page[0x00..0x04], &(stat::CONNECTED | stat::BUSY).to_le_bytes());
        assert_eq!(page[0x08], 1, "START");
        assert_eq!(&page[0x18..0x20], &0x1_2345_6000u64.to_le_bytes(), "DATA_ADDR, 64-bit");
        assert_eq!(&page[0x28..0x30], &0xdead_beef_0000_0001u64.to_le_bytes(), "RESULT, 64-bit");
        assert_eq!(&page[0x5c..0x60], &u32::MAX.to_le_bytes(), "PORT7 ends the registers");
        // Gaps between registers stay zero.
        for gap in [0x04..0x08, 0x09..0x0c, 0x0d..0x10, 0x14..0x18, 0x24..0x28, 0x34..0x40] {
            assert!(page[gap.clone()].iter().all(|&b| b == 0), "{gap:?}");
        }
    }

    #[test]
    fn the_output_buffer_comes_from_ports_0_to_2() {
        assert_eq!(sample().output(), (0x1_4010_0000, 9400));
    }

    #[test]
    fn a_guest_writes_only_its_own_registers() {
        for offset in [
            reg::START,
            reg::OVER,
            reg::CMD,
            reg::DATA_ADDR,
            reg::DATA_ADDR + 4,
            reg::DATA_SIZE,
            reg::INT_CTRL,
            reg::PORT0,
            reg::PORT0 + 28,
        ] {
            assert!(writable(offset), "0x{offset:x}");
        }
        for offset in [reg::STAT, reg::RESULT, reg::RESULT + 4, 0x60, 0xffc, 0x04] {
            assert!(!writable(offset), "0x{offset:x}");
        }
    }
}
