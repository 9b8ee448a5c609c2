//! A Linux partition for the QEMU tests: Debian's kernel from
//! guests/linux on pCPUs 2 and 3, and a `Session` that boots it in the
//! background and types commands into its shell.

use super::*;
use partita::config::raw::{RawConfig, RawMemory, RawPartition};
use partita::guest_console::Typist;
use partita::guests;
use partita::run::RunOptions;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where the Linux partition's RAM is, guest- and host-physical alike (its
/// virtio devices reach it by DMA).
pub const LINUX_RAM: u64 = 0x4800_0000;
pub const LINUX_SIZE: u64 = 256 << 20;
/// What `/init` prints once the modules are in and the console is open.
pub const MARKER: &str = "partita-linux: init ";

pub fn linux_image(name: &str) -> PathBuf {
    guests::image(&format!("linux/{name}"))
}

/// Linux on pCPUs 2 and 3, its shell on a virtio console, the build's ext4
/// image as a virtio disk.
pub fn linux(bootargs: &str) -> RawPartition {
    let ram = RawMemory::new(LINUX_RAM, LINUX_SIZE).identity();
    RawPartition::new("linux", &[2, 3])
        .bootargs(bootargs)
        .region(ram)
        .linux(&linux_image("Image"), Some(&linux_image("initramfs.cpio")))
        .virtio_console()
        .virtio_disk(&linux_image("disk.ext4"))
}

/// The RTOS stand-in alone on pCPU 1: `ticks` virtual-timer ticks at 1 kHz,
/// each late one counted, then it stops.
pub fn rtos(ticks: u32) -> RawPartition {
    part("rtos", &[1], &format!("timer_hz=1000 timer_ticks={ticks} ticks=1 period_ms=10")).exclusive()
}

/// A boot going on in the background, and the means to talk to its Linux.
pub struct Session {
    pub name: &'static str,
    pub typist: Typist,
    log: PathBuf,
    run: Option<JoinHandle<Boot>>,
    commands: u32,
}

impl Session {
    pub fn start(name: &'static str, config: RawConfig, icount: Option<u32>) -> Session {
        Self::start_with(name, icount, move |opts| boot_with(name, &config, opts))
    }

    /// The configuration file at `path`, loaded as `partita run` loads it.
    pub fn start_file(name: &'static str, path: &std::path::Path) -> Session {
        let config = partita::config::load(path).unwrap_or_else(|errors| panic!("{}: {errors:#?}", path.display()));
        Self::start_with(name, None, move |opts| boot_config(name, &config, hypervisor_elf(), opts))
    }

    fn start_with(
        name: &'static str,
        icount: Option<u32>,
        boot: impl FnOnce(RunOptions) -> Boot + Send + 'static,
    ) -> Session {
        let log = out_dir(name).join("linux.log");
        let _ = std::fs::remove_file(&log);
        let typist = Typist::default();
        let opts =
            RunOptions { seconds: Some(HANG_LIMIT * 6), icount, typist: typist.clone(), ..RunOptions::default() };
        let run = std::thread::spawn(move || boot(opts));
        Session { name, typist, log, run: Some(run), commands: 0 }
    }

    pub fn text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until Linux has printed the line containing `needle` `nth`
    /// times (1 for the first); fails if the run ends first.
    pub fn wait_for(&self, needle: &str, nth: usize, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let text = self.text();
            if text.matches(needle).count() >= nth {
                return text;
            }
            let ended = self.run.as_ref().is_none_or(JoinHandle::is_finished);
            if ended || Instant::now() >= deadline {
                let why = if ended { "the run ended" } else { "time ran out" };
                panic!("{}: {why} before {needle:?} (#{nth}); linux.log ends:\n{}", self.name, tail(&text, 40));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types `command` into the shell and returns what it printed, found
    /// between two lines the shell computes: neither the echo of the typed
    /// line nor its wrapping at the terminal's width can pass for them.
    pub fn run(&mut self, command: &str) -> String {
        self.commands += 1;
        let n = self.commands;
        self.typist.type_to("linux", format!("echo \"@@start-$(({n}+0))\"; {command}; echo \"@@done-$(({n}+0))\"\n"));
        let (begin, end) = (format!("\n@@start-{n}\n"), format!("\n@@done-{n}\n"));
        let text = self.wait_for(&end, 1, Duration::from_secs(HANG_LIMIT));
        let finish = text.rfind(&end).unwrap();
        let start = text[..finish].rfind(&begin).map_or(finish, |at| at + begin.len());
        text[start..finish].trim().to_owned()
    }

    pub fn finish(mut self) -> Boot {
        self.run.take().unwrap().join().expect("the run panicked")
    }
}

/// A test that fails mid-way stops its QEMU, which would otherwise outlive
/// the test process.
impl Drop for Session {
    fn drop(&mut self) {
        if let Some(run) = self.run.take() {
            self.typist.hang_up();
            let _ = run.join();
        }
    }
}

pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The count of interrupt `intid` on all CPUs, from `/proc/interrupts`.
pub fn interrupt_count(table: &str, intid: u32) -> u64 {
    let line = table
        .lines()
        .find(|l| l.contains(&format!("GICv3 {intid:>3} ")) || l.contains(&format!("GICv3 {intid} ")))
        .unwrap_or_else(|| panic!("no interrupt {intid} in\n{table}"));
    let columns = line.split_whitespace().skip(1);
    columns.take_while(|w| w.parse::<u64>().is_ok()).map(|w| w.parse::<u64>().unwrap()).sum()
}
