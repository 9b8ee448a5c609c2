//! The RTL twins of two core models, in `hardware/`: the ready queue and
//! the PRR monitor's search. The models write the test vectors
//! ([`vectors`], [`readyq`], [`monitor`]), Icarus Verilog replays them
//! through each block's AXI4-Lite slave ([`sim`]), and Yosys says what the
//! blocks cost in a Zynq-7000's fabric ([`synth`]).

pub mod monitor;
pub mod readyq;
pub mod sim;
pub mod synth;
pub mod vectors;

use crate::paths;
use std::path::PathBuf;

/// The two blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// `ready_queue.v` with this many thread slots.
    ReadyQueue { slots: usize },
    /// `prr_monitor.v` with this many waiting-list entries.
    PrrMonitor { waiting: usize },
}

impl Block {
    pub fn name(self) -> &'static str {
        match self {
            Block::ReadyQueue { .. } => "ready_queue",
            Block::PrrMonitor { .. } => "prr_monitor",
        }
    }

    /// The block's source files: the shared bus port, then its own.
    pub fn sources(self) -> [PathBuf; 2] {
        [hardware().join("axi_lite_port.v"), hardware().join(format!("{}.v", self.name()))]
    }

    /// The block's size parameter, as Verilog names it.
    pub fn parameter(self) -> (&'static str, usize) {
        match self {
            Block::ReadyQueue { slots } => ("SLOTS", slots),
            Block::PrrMonitor { waiting } => ("WAITING", waiting),
        }
    }

    /// What each cycle-count tag of this block's vectors stands for.
    pub fn tags(self) -> &'static [&'static str] {
        match self {
            Block::ReadyQueue { .. } => readyq::TAGS,
            Block::PrrMonitor { .. } => monitor::TAGS,
        }
    }
}

/// `hardware/` in the source tree.
pub fn hardware() -> PathBuf {
    paths::source().join("hardware")
}
