//! `partita bench`: measurements reported, never asserted.
//!
//! The shared pieces come first: driving QEMU and following what a boot
//! prints ([`qemu`]), statistics ([`stats`]), tables and report files
//! ([`report`]). Then one module per benchmark; a benchmark uses the shared
//! pieces and nothing of another benchmark's.
//!
//! Every benchmark writes its reports, and the logs of its boots, under one
//! folder, `<out>/bench/<name>/` (see [`crate::paths::bench_out`]).

pub mod accel;
pub mod accel_software;
pub mod ipc;
pub mod irq_latency;
pub mod linux;
pub mod pcs;
pub mod qemu;
pub mod ready_queue;
pub mod report;
pub mod response;
pub mod rtl;
pub mod rtos;
pub mod stats;
pub mod timed_io;

use indicatif::{ProgressBar, ProgressStyle};
use partita_core::config::model;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What QEMU virt's generic timer runs at, for cortex-a72.
pub const NOMINAL_HZ: u64 = 62_500_000;

/// The board a benchmark boots: each has its own hypervisor build and its
/// own interrupt controller, which is what sets the two apart in a report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Board {
    /// QEMU `virt`, GICv3.
    #[default]
    QemuVirt,
    /// QEMU `xlnx-zcu102`, GIC-400 (GICv2).
    Zcu102,
}

impl Board {
    pub const ALL: [Board; 2] = [Board::QemuVirt, Board::Zcu102];

    /// `platform.board` of a configuration.
    pub fn name(self) -> &'static str {
        match self {
            Board::QemuVirt => model::QEMU_VIRT,
            Board::Zcu102 => model::ZCU102,
        }
    }

    /// The board as a sentence names it.
    pub fn machine(self) -> &'static str {
        match self {
            Board::QemuVirt => "QEMU `virt`",
            Board::Zcu102 => "the ZCU102 (QEMU `xlnx-zcu102`)",
        }
    }

    /// Where a partition sees accelerator `index`'s interface page when
    /// its configuration leaves it at the default.
    pub fn accelerator_page(self, index: u64) -> u64 {
        crate::config::default_interface_page(self.name(), index as usize)
    }

    pub fn gic(self) -> &'static str {
        match self {
            Board::QemuVirt => "GICv3",
            Board::Zcu102 => "GIC-400, GICv2",
        }
    }
}

/// `--board`: one board, or both measured in one run, interleaved, so that
/// their ratio is taken under the same load of the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Boards {
    #[default]
    QemuVirt,
    Zcu102,
    Both,
}

impl Boards {
    pub fn list(self) -> Vec<Board> {
        match self {
            Boards::QemuVirt => vec![Board::QemuVirt],
            Boards::Zcu102 => vec![Board::Zcu102],
            Boards::Both => Board::ALL.to_vec(),
        }
    }
}

/// How guest time runs in a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// With the host's clock.
    Wall,
    /// Counting instructions (QEMU `-icount`).
    Icount,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Wall => "wall",
            Mode::Icount => "icount",
        }
    }
}

/// One pass of a benchmark: wall-clock, or `-icount shift=N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pass {
    pub mode: Mode,
    pub shift: Option<u32>,
}

impl Pass {
    pub const WALL: Pass = Pass { mode: Mode::Wall, shift: None };

    pub fn icount(shift: u32) -> Self {
        Pass { mode: Mode::Icount, shift: Some(shift) }
    }

    /// The wall-clock pass, then an `-icount` one if `icount` asks for it.
    pub fn with_icount(icount: Option<u32>) -> Vec<Pass> {
        let mut passes = vec![Pass::WALL];
        passes.extend(icount.map(Pass::icount));
        passes
    }

    /// `wall`, `icount 4`.
    pub fn label(self) -> String {
        match (self.mode, self.shift) {
            (Mode::Icount, Some(shift)) => format!("icount {shift}"),
            _ => self.mode.name().to_string(),
        }
    }
}

/// A bar over every QEMU boot a benchmark makes.
pub fn progress_bar(total: usize) -> ProgressBar {
    let bar = ProgressBar::new(total as u64);
    if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} QEMU runs: {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}
