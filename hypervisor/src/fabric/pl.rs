//! The manager's reconfigurations and stops as a ZynqMP's PL takes them
//! (`partita_core::fabric::pl`): decouple, `PM_FPGA_LOAD`, couple; a STOP
//! written to the PRR's control word. The operations are made here for
//! every board and answered by the emulated logic, which stands at the
//! PL's window on QEMU (`platform::PL_WINDOW`). A board's PL takes the same
//! operations as register writes and an SMC (docs/zynqmp-board.md).

use super::Fabric;
use crate::console::log;
use core::sync::atomic::Ordering;
use partita_arch::platform::PL_WINDOW;
use partita_core::fabric::pl::{self, reg, Bitstreams, Op};
use partita_core::fabric::zynqmp;

impl Fabric {
    /// Downloads `accelerator` into `prr`.
    pub fn reconfigure(&self, prr: usize, accelerator: usize) {
        match self.bitstreams().get(prr, accelerator) {
            Some(bitstream) => pl::reconfigure(PL_WINDOW, prr, bitstream).into_iter().for_each(|op| self.take(op)),
            // The manager only loads what a PRR hosts.
            None => log!("fabric: PRR {prr} has no bitstream for accelerator {accelerator}"),
        }
    }

    /// Asks the accelerator in `prr` to stop at its next consistency point.
    pub fn stop(&self, prr: usize) {
        self.take(pl::stop(PL_WINDOW, prr));
    }

    /// The partial bitstreams' table. It follows the fabric's memory, where
    /// a board's build puts the files; the emulated logic reads only which
    /// one a load names.
    fn bitstreams(&self) -> Bitstreams<'_> {
        Bitstreams::new(self.config.memory.end(), &self.config.prrs)
    }

    /// The emulated logic's answer to one operation. A load into a PRR
    /// that is not decoupled is refused, as a board's design must not let
    /// the region's half-loaded logic drive its outputs.
    fn take(&self, op: Op) {
        let logic = &self.logic;
        match op {
            Op::Write { address, value } => match pl::decode_register(PL_WINDOW, address) {
                Some((prr, reg::DECOUPLE)) if prr < logic.decoupled.len() => {
                    logic.decoupled[prr].store(value != 0, Ordering::Release);
                }
                Some((prr, reg::CONTROL)) if prr < logic.decoupled.len() && value & pl::STOP != 0 => logic.stop(prr),
                _ => log!("fabric: write of {value:#x} to {address:#x}, no register of the logic: ignored"),
            },
            Op::Firmware(call) => {
                let load = zynqmp::decode_load(call).and_then(|(address, _, _)| self.bitstreams().find(address));
                match load {
                    Some((prr, accelerator)) if logic.decoupled[prr].load(Ordering::Acquire) => {
                        logic.reconfigure(prr, accelerator)
                    }
                    Some((prr, _)) => log!("fabric: a load into PRR {prr}, which is not decoupled: refused"),
                    None => log!("fabric: firmware call {:#x} names no bitstream: refused", call.function),
                }
            }
        }
    }
}
