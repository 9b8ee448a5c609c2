//! The programmable logic's side of a reconfiguration and of a stop, as a
//! ZynqMP's static design takes them: register writes to the static part
//! and the firmware's `PM_FPGA_LOAD`. The manager's actions become these
//! operations on every board; the emulated logic answers them on QEMU, and
//! a board's PL would take the same ones (docs/zynqmp-board.md).
//!
//! The static part has a register block in the PL's window, past the PRRs'
//! interface pages: per PRR a decoupler, which isolates the region while
//! its logic is replaced, and a control word, whose STOP bit asks the
//! accelerator to stop at its next consistency point. Each (PRR,
//! accelerator) pair has its partial bitstream in a table of whole pages,
//! PRR by PRR, each PRR's accelerators in the fabric's order.

use super::zynqmp::{fpga_load, SmcCall};
use crate::config::model::Prr;

/// The static part's register block, from the PL window's base: 128 MiB
/// in, leaving the first half of a 256 MiB window to interface pages.
pub const STATIC_BLOCK: u64 = 0x0800_0000;
/// Bytes of registers per PRR in the block.
const PRR_STRIDE: u64 = 0x10;
/// A PRR's registers, from its place in the block.
pub mod reg {
    /// 1 while the PRR is decoupled from the rest of the design.
    pub const DECOUPLE: u64 = 0x0;
    /// Written by Partita: [`super::STOP`].
    pub const CONTROL: u64 = 0x4;
}
/// CONTROL's request to stop at the next consistency point; the PRR
/// raises its interrupt once stopped, with its context saved.
pub const STOP: u32 = 1 << 0;
/// Bitstreams start on pages, as the CSU DMA reads them.
const BITSTREAM_ALIGN: u64 = 4096;

/// One step the logic is asked to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A 32-bit write to the static part's registers.
    Write { address: u64, value: u32 },
    /// A firmware call: `PM_FPGA_LOAD` of a partial bitstream.
    Firmware(SmcCall),
}

/// A partial bitstream: where it is and its size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bitstream {
    pub address: u64,
    pub size: u32,
}

/// Where a PRR's register `offset` is, for a PL window at `window`.
pub const fn register(window: u64, prr: usize, offset: u64) -> u64 {
    window + STATIC_BLOCK + prr as u64 * PRR_STRIDE + offset
}

/// The PRR and register a write to `address` reaches, if it is one.
pub fn decode_register(window: u64, address: u64) -> Option<(usize, u64)> {
    let offset = address.checked_sub(window + STATIC_BLOCK)?;
    Some(((offset / PRR_STRIDE) as usize, offset % PRR_STRIDE))
}

/// `accelerator` into `prr`: decouple, load, couple again. The load blocks
/// its caller on a board until the PCAP is done.
pub fn reconfigure(window: u64, prr: usize, bitstream: Bitstream) -> [Op; 3] {
    let decouple = register(window, prr, reg::DECOUPLE);
    [
        Op::Write { address: decouple, value: 1 },
        Op::Firmware(fpga_load(bitstream.address, bitstream.size, true)),
        Op::Write { address: decouple, value: 0 },
    ]
}

/// Asks the accelerator in `prr` to stop at its next consistency point.
pub fn stop(window: u64, prr: usize) -> Op {
    Op::Write { address: register(window, prr, reg::CONTROL), value: STOP }
}

/// The table of partial bitstreams at `base`: one per PRR and accelerator
/// it hosts, each in whole pages.
pub struct Bitstreams<'a> {
    base: u64,
    prrs: &'a [Prr],
}

impl<'a> Bitstreams<'a> {
    pub fn new(base: u64, prrs: &'a [Prr]) -> Self {
        Self { base, prrs }
    }

    /// Bytes the table takes.
    pub fn size(&self) -> u64 {
        self.prrs.iter().map(|prr| slot(prr) * prr.hosts.len() as u64).sum()
    }

    /// The bitstream of `accelerator` for `prr`, if the PRR hosts it.
    pub fn get(&self, prr: usize, accelerator: usize) -> Option<Bitstream> {
        let mut address = self.base;
        for (r, region) in self.prrs.iter().enumerate() {
            for &hosted in &region.hosts {
                if (r, hosted) == (prr, accelerator) {
                    return Some(Bitstream { address, size: u32::try_from(region.bitstream).ok()? });
                }
                address += slot(region);
            }
        }
        None
    }

    /// The PRR and accelerator whose bitstream starts at `address`.
    pub fn find(&self, address: u64) -> Option<(usize, usize)> {
        let mut at = self.base;
        for (r, region) in self.prrs.iter().enumerate() {
            for &hosted in &region.hosts {
                if at == address {
                    return Some((r, hosted));
                }
                at += slot(region);
            }
        }
        None
    }
}

/// Bytes one of `prr`'s bitstreams takes in the table.
fn slot(prr: &Prr) -> u64 {
    prr.bitstream.div_ceil(BITSTREAM_ALIGN) * BITSTREAM_ALIGN
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;
    use alloc::vec::Vec;

    /// Ker-ONE's PRRs: bitstreams of 29,568, 103,680 and 154,368 bytes.
    fn prrs() -> Vec<Prr> {
        let prr = |bitstream, hosts: &[usize]| Prr { name: String::new(), size: 1, bitstream, hosts: hosts.to_vec() };
        vec![prr(29_568, &[0, 1]), prr(103_680, &[0, 1, 2]), prr(154_368, &[2, 3])]
    }

    #[test]
    fn a_reconfiguration_decouples_loads_and_couples() {
        let bitstream = Bitstream { address: 0x1000_0000, size: 103_680 };
        let ops = reconfigure(0xa000_0000, 1, bitstream);
        assert_eq!(ops[0], Op::Write { address: 0xa800_0010, value: 1 });
        assert_eq!(ops[1], Op::Firmware(fpga_load(0x1000_0000, 103_680, true)));
        assert_eq!(ops[2], Op::Write { address: 0xa800_0010, value: 0 });
        assert_eq!(stop(0xa000_0000, 2), Op::Write { address: 0xa800_0024, value: STOP });
        assert_eq!(decode_register(0xa000_0000, 0xa800_0024), Some((2, reg::CONTROL)));
        assert_eq!(decode_register(0xa000_0000, 0xa000_0000), None, "an interface page");
    }

    #[test]
    fn each_bitstream_has_its_page_aligned_slot() {
        let prrs = prrs();
        let table = Bitstreams::new(0x1000_0000, &prrs);
        // 29,568 bytes take 8 pages, 103,680 take 26, 154,368 take 38.
        assert_eq!(table.get(0, 1), Some(Bitstream { address: 0x1000_8000, size: 29_568 }));
        assert_eq!(table.get(1, 0), Some(Bitstream { address: 0x1001_0000, size: 103_680 }));
        assert_eq!(table.get(2, 3), Some(Bitstream { address: 0x1005_e000 + 0x2_6000, size: 154_368 }));
        assert_eq!(table.get(0, 3), None, "PRR 1 cannot host FFT-1024");
        assert_eq!(table.size(), 2 * 0x8000 + 3 * 0x1_a000 + 2 * 0x2_6000);
        for (prr, region) in prrs.iter().enumerate() {
            for &accelerator in &region.hosts {
                let bitstream = table.get(prr, accelerator).unwrap();
                assert_eq!(table.find(bitstream.address), Some((prr, accelerator)));
            }
        }
        assert_eq!(table.find(0x1000_0004), None, "not a bitstream's start");
    }
}
