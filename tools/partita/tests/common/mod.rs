//! What every QEMU test file shares: building once, writing a
//! configuration, booting it and reading back what each partition printed.
#![allow(dead_code)] // Each test file uses a different subset.

pub mod linux;

use partita::build;
use partita::config;
use partita::config::raw::{RawAction, RawConfig, RawDevice, RawHealth, RawMemory, RawPartition};
use partita::guests;
use partita::paths;
use partita::run::{self, Ending, RunOptions};
use std::path::PathBuf;
use std::sync::OnceLock;

const DEFAULT_BOARD: &str = "qemu-virt";

/// Seconds after which a run that should have powered off counts as hung.
pub const HANG_LIMIT: u64 = 90;

/// The board the QEMU suites run on: `qemu-virt`, or the one
/// `PARTITA_BOARD` names. `partita test` runs the suites a second board
/// must pass again with it set (`testcmd::BOARD_SUITES`).
pub fn board() -> String {
    std::env::var("PARTITA_BOARD").unwrap_or_else(|_| DEFAULT_BOARD.to_owned())
}

/// The guests and the hypervisor for [`board`] are built once for all tests.
pub fn hypervisor_elf() -> &'static PathBuf {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| {
        let board = board();
        if board != DEFAULT_BOARD {
            return hypervisor_elf_for(&board);
        }
        guests::build_all().expect("building the guests");
        build::build_hypervisor(&paths::source()).expect("building the hypervisor")
    })
}

/// The hypervisor for another board than `virt`, built once per board,
/// with the guests.
pub fn hypervisor_elf_for(board: &str) -> PathBuf {
    static ELVES: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut elves = ELVES.lock().unwrap();
    if let Some((_, elf)) = elves.iter().find(|(b, _)| b == board) {
        return elf.clone();
    }
    guests::build_all().expect("building the guests");
    let elf = build::build_hypervisor_for(&paths::source(), board).expect("building the hypervisor");
    elves.push((board.to_owned(), elf.clone()));
    elf
}

/// Makes `out/` of the source tree the output root, whichever folder cargo
/// runs the test in, as `./partita` does.
pub fn source_out() {
    paths::set_out(&paths::source().join("out"));
}

/// `out/<name>/` of the source tree.
pub fn out_dir(name: &str) -> PathBuf {
    source_out();
    paths::config_out(name)
}

/// `out/<name>/hm.log`: a run's health-monitor entries.
pub fn hm_log(name: &str) -> String {
    std::fs::read_to_string(out_dir(name).join("hm.log")).expect("hm.log")
}

/// hm.log lines that contain all of `parts`.
pub fn hm_entries<'a>(hm: &'a str, parts: &[&str]) -> Vec<&'a str> {
    hm.lines().filter(|l| parts.iter().all(|p| l.contains(p))).collect()
}

/// Where every partition's RAM starts, guest-physical.
pub const RAM_BASE: u64 = 0x4000_0000;
pub const RAM_SIZE: u64 = 16 << 20;

/// A partition running the test guest with 16 MiB at guest 0x40000000.
pub fn part(name: &str, cpus: &[u32], bootargs: &str) -> RawPartition {
    RawPartition::new(name, cpus).bootargs(bootargs).memory(RAM_BASE, RAM_SIZE).elf(&guest("elf"))
}

/// [`part`] with its RAM at host-physical `phys`.
pub fn part_at(name: &str, cpus: &[u32], bootargs: &str, phys: u64) -> RawPartition {
    let ram = RawMemory::new(RAM_BASE, RAM_SIZE).phys(phys);
    RawPartition::new(name, cpus).bootargs(bootargs).region(ram).elf(&guest("elf"))
}

/// A health policy that stops the partition at a fault, as a test of what
/// happens to the others then asks (the default gives the guest its own
/// exception instead).
pub fn halt_on_faults() -> RawHealth {
    RawHealth { stage2_fault: Some(RawAction::Halt), forbidden: Some(RawAction::Halt), ..RawHealth::default() }
}

/// A machine of these partitions on [`board`], with defaults for
/// everything else.
pub fn machine(parts: impl IntoIterator<Item = RawPartition>) -> RawConfig {
    let mut config = RawConfig::new().partitions(parts);
    let board = board();
    if board != DEFAULT_BOARD {
        config.platform.board = Some(board);
    }
    config
}

/// A device of [`board`]'s that a partition may own, for the tests that
/// pass one through: where it is, its interrupt, and a register whose
/// reset value proves the guest reached the real device.
pub struct BoardDevice {
    pub device: RawDevice,
    pub intid: u32,
    pub id_register: u64,
    pub id_value: u32,
}

/// `virt`'s PL031 RTC (peripheral ID 0 reads 0x31), or on the ZynqMP the
/// second Cadence UART (Partita's console is the first; its baud-rate
/// generator resets to 0x28b).
pub fn board_device() -> BoardDevice {
    if board() == DEFAULT_BOARD {
        let device = RawDevice::new("rtc", 0x0901_0000, 0x1000, &["arm,pl031", "arm,primecell"]).interrupts(&[34]);
        BoardDevice { device, intid: 34, id_register: 0x0901_0fe0, id_value: 0x31 }
    } else {
        let device = RawDevice::new("uart1", 0xff01_0000, 0x1000, &["cdns,uart-r1p12"]).interrupts(&[54]);
        BoardDevice { device, intid: 54, id_register: 0xff01_0018, id_value: 0x28b }
    }
}

/// Where [`board`]'s GIC distributor is, as a partition sees it too.
pub fn board_gicd() -> u64 {
    if board() == DEFAULT_BOARD {
        config::DEFAULT_GICD
    } else {
        config::ZCU102_GICD
    }
}

/// Accelerator `a`'s interface page where the configuration leaves it: the
/// board's window (`virt`'s empty `0x0b000000`, the ZynqMP's PL window at
/// `0xa0000000`) plus 4 KiB per accelerator.
pub fn interface_page(a: u64) -> u64 {
    config::default_interface_page(&board(), a as usize)
}

/// What one boot left behind.
pub struct Boot {
    pub ending: Ending,
    pub console: Vec<String>,
    pub hypervisor: String,
    pub logs: Vec<(String, String)>,
}

impl Boot {
    pub fn log(&self, partition: &str) -> &str {
        &self.logs.iter().find(|(name, _)| name == partition).expect("no such partition").1
    }

    /// Index of the first raw console line containing `needle`.
    pub fn position(&self, needle: &str) -> usize {
        self.console
            .iter()
            .position(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("no console line contains {needle:?}:\n{}", self.console.join("\n")))
    }

    /// Console lines after index `from` that start with `prefix`.
    pub fn lines_after(&self, from: usize, prefix: &str) -> usize {
        self.console[from + 1..].iter().filter(|line| line.starts_with(prefix)).count()
    }
}

/// The test guest, as ELF (`.elf`) or raw (`.bin`).
pub fn guest(extension: &str) -> PathBuf {
    guests::image(&format!("test-guest.{extension}"))
}

/// Writes `config` to `target/qemu-tests/<name>.toml` and loads it as
/// `partita run` would.
pub fn write_config(name: &str, config: &RawConfig) -> config::Config {
    let path = paths::scratch("qemu-tests").join(format!("{name}.toml"));
    config.write(&path).unwrap();
    config::load(&path).unwrap_or_else(|errors| panic!("{name}: {errors:#?}\n{}", config.to_toml()))
}

pub fn boot(name: &str, config: &RawConfig, seconds: u64) -> Boot {
    boot_with(name, config, RunOptions { seconds: Some(seconds), ..RunOptions::default() })
}

pub fn boot_with(name: &str, config: &RawConfig, opts: RunOptions) -> Boot {
    let config = write_config(name, config);
    boot_config(name, &config, hypervisor_elf(), opts)
}

/// Boots a loaded configuration with `elf` into `out/<name>/`.
pub fn boot_config(name: &str, config: &config::Config, elf: &std::path::Path, opts: RunOptions) -> Boot {
    let out = build::assemble(config, elf, &out_dir(name)).expect("assembling the image");
    let report = run::run(&out, &config.system, &opts).expect("running QEMU");
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap();
    Boot {
        ending: report.ending,
        console: read(&report.console_log).lines().map(str::to_owned).collect(),
        hypervisor: read(&report.hypervisor_log),
        logs: config
            .system
            .partitions
            .iter()
            .zip(&report.partition_logs)
            .map(|(p, l)| (p.name.clone(), read(l)))
            .collect(),
    }
}

pub fn assert_powered_off(boot: &Boot) {
    assert!(matches!(boot.ending, Ending::Exited(_)), "QEMU did not power off by itself: {:?}", boot.ending);
    assert!(boot.hypervisor.contains("all partitions stopped; powering off"), "{}", boot.hypervisor);
    // Partita checks its own invariants before it powers off; a broken one
    // fails every test that ends this way, not only those that look.
    assert!(boot.hypervisor.contains("state check: ok"), "state check did not pass:\n{}", boot.hypervisor);
}

/// `timer: <n> ticks at <hz> Hz, <late> late` -> (n, late).
pub fn timer_counts(log: &str) -> (u64, u64) {
    let line = log.lines().find(|l| l.starts_with("timer: ")).unwrap_or_else(|| panic!("no timer line in\n{log}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    (words[1].parse().unwrap(), words[6].parse().unwrap())
}
