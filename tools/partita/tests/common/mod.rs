//! What every QEMU test file shares: building once, writing a
//! configuration, booting it and reading back what each partition printed.
#![allow(dead_code)] // Each test file uses a different subset.

use partita::build::{self, repo_root};
use partita::config;
use partita::guests;
use partita::run::{self, Ending, RunOptions};
use std::path::PathBuf;
use std::sync::OnceLock;

/// Seconds after which a run that should have powered off counts as hung.
pub const HANG_LIMIT: u64 = 90;

/// The guests and the hypervisor are built once for all tests.
pub fn hypervisor_elf() -> &'static PathBuf {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| {
        guests::build_all().expect("building the guests");
        build::build_hypervisor(&repo_root()).expect("building the hypervisor")
    })
}

/// One `[[partition]]` running the test guest with 16 MiB at guest 0x40000000.
pub struct Part<'a> {
    pub name: &'a str,
    pub cpus: &'a str,
    pub bootargs: &'a str,
    pub phys: Option<u64>,
}

impl Part<'_> {
    pub fn toml(&self, guest: &str) -> String {
        let phys = self.phys.map(|p| format!("phys = 0x{p:x}\n")).unwrap_or_default();
        format!(
            "[[partition]]\nname = \"{}\"\ncpus = {}\nbootargs = \"{}\"\n\
             [[partition.memory]]\nbase = 0x40000000\nsize = \"16M\"\n{phys}\
             [[partition.image]]\npath = \"{guest}\"\n\n",
            self.name, self.cpus, self.bootargs
        )
    }
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
pub fn guest(extension: &str) -> String {
    guests::output_dir(&repo_root()).join(format!("test-guest.{extension}")).display().to_string()
}

pub fn boot(name: &str, parts: &[Part], seconds: u64) -> Boot {
    let text: String = parts.iter().map(|p| p.toml(&guest("elf"))).collect();
    boot_toml(name, &text, seconds)
}

pub fn boot_toml(name: &str, text: &str, seconds: u64) -> Boot {
    boot_with(name, text, RunOptions { seconds: Some(seconds), ..RunOptions::default() })
}

pub fn boot_with(name: &str, text: &str, opts: RunOptions) -> Boot {
    let elf = hypervisor_elf();
    let dir = repo_root().join("target").join("qemu-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    let config = config::load(&path).unwrap_or_else(|errors| panic!("{name}: {errors:#?}"));
    let out = build::assemble(&config, elf, &build::out_dir(&config.system)).expect("assembling the image");
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

/// The `[[partition]]` of the test guest with 16 MiB at 0x40000000, as TOML.
pub fn part(name: &str, cpus: &str, bootargs: &str) -> String {
    Part { name, cpus, bootargs, phys: None }.toml(&guest("elf"))
}

/// `part` with one more field (`priority = 200`, `rights = [...]`, ...).
pub fn with_field(part: String, field: &str, value: &str) -> String {
    part.replacen("cpus = ", &format!("{field} = {value}\ncpus = "), 1)
}
