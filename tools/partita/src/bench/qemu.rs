//! QEMU as the benchmarks drive it: what a boot needs built, configurations
//! generated from a model, and two ways to end a boot: at a line the guest
//! prints (its benchmark is done, though a busy neighbour would keep the
//! machine up for ever) or when the machine powers off.

use super::Board;
use crate::build::{self, BuildOutput};
use crate::config::raw::{RawConfig, RawPartition};
use crate::config::{self, Config};
use crate::guests;
use crate::paths;
use crate::run::{self, Console, Ending, Monitor, RunOptions, RunReport, Source, Splitter};
use anyhow::{bail, Context, Result};
use partita_core::config::model::System;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Builds the guests and the hypervisor; returns the hypervisor's ELF.
pub fn prepare() -> Result<PathBuf> {
    guests::build_all()?;
    build::build_hypervisor(&paths::source())
}

/// Builds the guests and a hypervisor for each of `boards`; returns each
/// board's ELF, in the same order.
pub fn prepare_boards(boards: &[Board]) -> Result<Vec<(Board, PathBuf)>> {
    guests::build_all()?;
    boards.iter().map(|&board| Ok((board, build::build_hypervisor_for(&paths::source(), board.name())?))).collect()
}

/// Builds the guests and the hypervisor for `board`; returns its ELF.
pub fn prepare_board(board: Board) -> Result<PathBuf> {
    guests::build_all()?;
    build::build_hypervisor_for(&paths::source(), board.name())
}

/// A partition of a generated configuration: `image` on pinned vCPUs, with
/// the 16 MiB of RAM at guest-physical 0x40000000 every guest here fits in.
pub fn partition(name: &str, cpus: &[u32], bootargs: &str, image: &Path) -> RawPartition {
    RawPartition::new(name, cpus).bootargs(bootargs).memory(0x4000_0000, 16 << 20).elf(image)
}

/// Writes `config` to `target/bench/<name>-<variant>.toml`, loads it the
/// way `partita check` does, and assembles its image into
/// `<out>/bench/<name>/<variant>/`, where its boots leave their logs.
pub fn generated(name: &str, variant: &str, config: &RawConfig, hypervisor: &Path) -> Result<(Config, BuildOutput)> {
    let path = paths::scratch("bench").join(format!("{name}-{variant}.toml"));
    config.write(&path)?;
    let config = config::load(&path).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        anyhow::anyhow!("the generated configuration {} is invalid:\n{}", path.display(), lines.join("\n"))
    })?;
    let output = build::assemble(&config, hypervisor, &paths::bench_out(name).join(variant))?;
    Ok((config, output))
}

/// A guest as QEMU's kernel, without Partita: the same `virt` board and
/// flags `partita run` uses, with EL2 only if `el2` (a guest that drops to
/// EL1 by itself).
pub fn native_command(kernel: &Path, el2: bool, cpus: u32, bootargs: &str, icount: Option<u32>) -> Command {
    let machine = if el2 { "virt,gic-version=3,virtualization=on" } else { "virt,gic-version=3" };
    let mut qemu = Command::new("qemu-system-aarch64");
    qemu.args(["-machine", machine, "-cpu", "cortex-a72", "-smp", &cpus.to_string(), "-m", "256M"])
        .args(run::HEADLESS)
        .arg("-kernel")
        .arg(kernel)
        .args(["-append", bootargs]);
    run::add_icount(&mut qemu, icount);
    qemu
}

/// Kills QEMU on every way out of a boot.
struct Qemu(Child);

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the watched console printed, up to the line that ends the boot.
#[derive(Clone, Debug, PartialEq)]
pub struct Followed {
    /// The watched console's lines, without their tags.
    pub text: String,
    /// When each of those lines came, in seconds since QEMU started.
    pub seconds: Vec<f64>,
    /// Why the boot ended before that line, with what QEMU said on stderr.
    pub failure: Option<String>,
}

impl Followed {
    /// When the first line that starts with `prefix` came, in seconds
    /// since QEMU started.
    pub fn seconds_to(&self, prefix: &str) -> Option<f64> {
        let line = self.text.lines().position(|l| l.starts_with(prefix))?;
        self.seconds.get(line).copied()
    }
}

/// The line that ends a boot: its text for messages, and the test.
#[derive(Clone, Copy, Debug)]
pub struct Until {
    pub line: &'static str,
    pub is_it: fn(&str) -> bool,
}

/// Boots `qemu` with its consoles logged into `dir` as `partita run` logs
/// them (`console.log`, one log per partition of `names`, `hypervisor.log`)
/// and returns what `watched` printed up to `until`, where QEMU is killed;
/// or after `limit`, or when QEMU stops, as a failure. Natively there are
/// no `names`, and the guest's untagged lines count as the hypervisor's.
pub fn follow(
    qemu: Command,
    names: &[String],
    watched: Source,
    dir: &Path,
    until: Until,
    limit: Duration,
) -> Result<Followed> {
    let (child, lines, mut console, errors) = spawn_logged(qemu, names, dir)?;
    let splitter = Splitter::new(names);
    let started = Instant::now();
    let deadline = started + limit;
    let mut text = String::new();
    let mut seconds = Vec::new();
    let failure = loop {
        let line = match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                break Some(format!("no `{}` line within {} s", until.line, limit.as_secs()));
            }
            Err(RecvTimeoutError::Disconnected) => {
                break Some(format!("QEMU stopped before the `{}` line", until.line))
            }
        };
        console.line(&line)?;
        let (source, said) = splitter.split(&line);
        if source == watched {
            text += said;
            text.push('\n');
            seconds.push(started.elapsed().as_secs_f64());
            if (until.is_it)(said) {
                break None;
            }
        }
    };
    drop(child);
    // The socket `partita run`'s command line asks for is of no use to a killed QEMU.
    let _ = std::fs::remove_file(run::qmp_socket(dir));
    let failure = failure.map(|failure| match errors.join().unwrap_or_default().trim() {
        "" => failure,
        said => format!("{failure}; QEMU said: {said}"),
    });
    Ok(Followed { text, seconds, failure })
}

type Logged = (Qemu, Receiver<String>, Console, JoinHandle<String>);

fn spawn_logged(mut qemu: Command, names: &[String], dir: &Path) -> Result<Logged> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let raw = File::create(dir.join("console.log")).context("cannot create console.log")?;
    let console = Console::create(names, dir, None)?;
    qemu.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = Qemu(qemu.spawn().context("cannot start qemu-system-aarch64 (is it installed?)")?);
    let stdout = child.0.stdout.take().context("QEMU's stdout is not piped")?;
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || run::pump(stdout, raw, tx));
    let mut stderr = child.0.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(stderr) = stderr.as_mut() {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    });
    Ok((child, lines, console, errors))
}

/// Boots `output` until the machine powers off, or fails after
/// `opts.seconds`. `quiet` leaves out `partita run`'s summary; the first
/// boot of a benchmark should not be quiet, since going through
/// `run::run` also makes Ctrl-C stop QEMU cleanly for every later boot
/// (QEMU runs in its own process group, to live until its trace is copied).
pub fn to_power_off(output: &BuildOutput, system: &System, opts: &RunOptions, quiet: bool) -> Result<RunReport> {
    let report = if quiet {
        let names: Vec<String> = system.partitions.iter().map(|p| p.name.clone()).collect();
        let monitor = Monitor::for_run(output, system);
        let command = run::qemu_command(output, system, opts);
        run::supervise_with(command, &names, &output.out_dir, opts, Some(&monitor))?
    } else {
        run::run(output, system, opts)?
    };
    let dir = output.out_dir.display();
    match report.ending {
        Ending::Exited(status) if status.success() => Ok(report),
        Ending::Exited(status) => bail!("QEMU failed ({status}); logs in {dir}"),
        Ending::TimedOut => {
            bail!("the machine still ran after {} s; logs in {dir}", opts.seconds.unwrap_or_default())
        }
        Ending::Interrupted => bail!("interrupted"),
        Ending::PartitionEnded { .. } => bail!("the attached partition ended the run; logs in {dir}"),
    }
}

/// Each partition's name and log, in configuration order.
pub fn logs(system: &System, report: &RunReport) -> Result<Vec<(String, String)>> {
    let mut logs = Vec::new();
    for (partition, path) in system.partitions.iter().zip(&report.partition_logs) {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        logs.push((partition.name.clone(), text));
    }
    Ok(logs)
}
