//! Host isolation of the critical partitions' emulated cores.
//!
//! On a board, an exclusive partition's pCPU is a physical core nothing
//! else runs on. Under QEMU it is one host thread (TCG runs a thread per
//! vCPU) that competes for the host's cores with the other vCPUs' threads
//! and QEMU's main loop: on a loaded host the guest's timer fires on time
//! in guest time, but the thread that should run the guest's handler waits
//! for a host core, and the guest sees it as lateness Partita never caused.
//!
//! `--isolate` gives those threads what the host can:
//! - the vCPU threads of the pCPUs of exclusive or high-criticality
//!   partitions get host cores of their own (`sched_setaffinity`), the
//!   last ones the process may use, and `SCHED_FIFO` at a moderate
//!   priority, so that no ordinary host thread preempts them there;
//! - QEMU's main loop, which runs the emulated timers and so raises every
//!   timer interrupt and wakes an idle vCPU, gets `SCHED_FIFO` too, on any
//!   core: without it the critical vCPU sits on its core waiting for a
//!   wake-up that waits behind Linux's vCPUs;
//! - every other QEMU thread (the other vCPUs, RCU, workers) goes to the
//!   remaining cores, now and, by a sweep every few seconds, later.
//!
//! Real-time threads use `SCHED_RESET_ON_FORK`, so a thread they start is
//! ordinary. Measured on 2 host cores, the main loop's priority is what
//! mattered: the critical vCPU alone on its core with `SCHED_FIFO` missed
//! about as many deadlines as with no isolation. Letting the other
//! threads share the critical core at their ordinary priority missed
//! about as many as keeping them off it, with a larger worst lateness.
//!
//! The limits: it is a host thread's priority and placement, not a core.
//! The critical vCPU still takes QEMU's big lock for every emulated
//! device access (the GIC, the UART, the GPIO), and an ordinary vCPU
//! thread that holds it may be waiting for a core; interrupts, the host's
//! own kernel threads, other processes' real-time threads and memory
//! bandwidth are shared. At least one host core must stay for the rest,
//! so on a host with one core (or as many critical pCPUs as host cores)
//! isolation is off, and so it is when the host refuses `SCHED_FIFO` (no
//! `CAP_SYS_NICE`): nothing is placed then; one line says which.

use crate::qmp::{Qmp, REPLY_TIMEOUT};
use anyhow::{bail, Context, Result};
use partita_core::config::model::{Criticality, System};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// SCHED_FIFO priority of the critical vCPU threads: above every ordinary
/// thread, below the kernel's own real-time threads (which use 50 and 99),
/// so a vCPU that spins cannot starve the host's interrupt handling.
pub const FIFO_PRIORITY: i32 = 10;
/// QEMU may start threads after the first look (its thread pool, I/O
/// workers); they are placed on the shared cores at this interval.
const RESWEEP: Duration = Duration::from_secs(2);

/// The pCPUs whose vCPU threads get a host core: those of exclusive or
/// high-criticality partitions, each with its partition's name.
pub fn critical_pcpus(system: &System) -> Vec<(u32, String)> {
    let mut pcpus: Vec<(u32, String)> = system
        .partitions
        .iter()
        .filter(|p| p.exclusive || p.criticality == Criticality::High)
        .flat_map(|p| p.vcpus.iter().map(move |&cpu| (cpu, p.name.clone())))
        .collect();
    pcpus.sort();
    pcpus.dedup_by_key(|(cpu, _)| *cpu);
    pcpus
}

/// Which host cores go to whom: `own[i]` to the i-th critical thread, the
/// `shared` ones to every other thread. `None` (with why) when the host
/// has too few cores to keep one for the rest.
pub fn split_cores(allowed: &[usize], critical: usize) -> std::result::Result<(Vec<usize>, Vec<usize>), String> {
    if critical == 0 {
        return Err("no exclusive or high-criticality partition".into());
    }
    if allowed.len() < 2 {
        return Err(format!(
            "the host gives this process {} core(s), none left for QEMU's other threads",
            allowed.len()
        ));
    }
    if critical >= allowed.len() {
        return Err(format!(
            "{critical} critical pCPU(s) need a host core each and one more for the rest; the host gives {}",
            allowed.len()
        ));
    }
    let split = allowed.len() - critical;
    Ok((allowed[split..].to_vec(), allowed[..split].to_vec()))
}

/// What isolation did, kept for the rest of the run.
#[derive(Debug)]
pub struct Isolation {
    qemu: u32,
    shared: Vec<usize>,
    /// Threads already placed (critical and shared).
    placed: BTreeSet<u32>,
    /// How many of them are critical vCPU threads.
    critical: usize,
    next_sweep: Instant,
    /// The line printed and written into the report.
    pub summary: String,
}

impl Isolation {
    /// Places QEMU's threads; on any refusal, undoes nothing it need not
    /// (QEMU exits with the run) and says why it is off.
    pub fn apply(qmp: &mut Qmp, qemu: u32, critical: &[(u32, String)]) -> std::result::Result<Isolation, String> {
        let allowed = allowed_cores().map_err(|e| format!("{e:#}"))?;
        let (own, shared) = split_cores(&allowed, critical.len())?;
        let threads = vcpu_threads(qmp).map_err(|e| format!("{e:#}"))?;
        let mut pinned = Vec::new();
        for ((cpu, name), &core) in critical.iter().zip(&own) {
            let Some(&(_, tid)) = threads.iter().find(|(index, _)| index == cpu) else {
                return Err(format!("QEMU reported no thread for pCPU {cpu}"));
            };
            pinned.push((tid, core, format!("pCPU {cpu} ({name}) on host core {core}")));
        }
        // QEMU's main loop runs the emulated timers: it is the thread that
        // raises the RTOS's timer interrupt and wakes its idle vCPU, so it
        // is on the critical path of every release. It gets SCHED_FIFO too,
        // and every core, so it preempts an ordinary thread wherever one
        // runs instead of waiting behind Linux's vCPUs; it sleeps in poll
        // between events, so it takes little.
        let fifo_threads: Vec<u32> = pinned.iter().map(|p| p.0).chain([qemu]).collect();
        // The priority first: measured, placement without it changes next
        // to nothing, so a host that refuses it gets no isolation at all.
        for (i, &tid) in fifo_threads.iter().enumerate() {
            if let Err(error) = set_fifo(tid, FIFO_PRIORITY) {
                for &done in &fifo_threads[..i] {
                    let _ = set_other(done);
                }
                return Err(format!("SCHED_FIFO was refused: {error}; it needs CAP_SYS_NICE or an RLIMIT_RTPRIO"));
            }
        }
        let refused = |e: std::io::Error| format!("placing QEMU's threads was refused: {e}");
        for &(tid, core, _) in &pinned {
            set_affinity(tid, &[core]).map_err(refused)?;
        }
        set_affinity(qemu, &allowed).map_err(refused)?;
        let placed: BTreeSet<u32> = fifo_threads.iter().copied().collect();
        let mut isolation = Isolation {
            qemu,
            shared,
            critical: placed.len(),
            placed,
            next_sweep: Instant::now() + RESWEEP,
            summary: String::new(),
        };
        let others = isolation.sweep().map_err(|e| format!("{e:#}"))?;
        let parts: Vec<&str> = pinned.iter().map(|p| p.2.as_str()).collect();
        isolation.summary = format!(
            "isolation: {}, SCHED_FIFO {FIFO_PRIORITY}; QEMU's main loop SCHED_FIFO {FIFO_PRIORITY} on any core; \
             QEMU's other {others} thread(s) on host core(s) {}",
            parts.join(", "),
            join(&isolation.shared)
        );
        Ok(isolation)
    }

    /// Puts every QEMU thread not yet placed onto the shared cores; returns
    /// how many threads are there now. A thread that ended meanwhile is
    /// skipped.
    fn sweep(&mut self) -> Result<usize> {
        let dir = format!("/proc/{}/task", self.qemu);
        let entries = std::fs::read_dir(&dir).with_context(|| format!("cannot list {dir}"))?;
        for entry in entries.flatten() {
            let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
            if self.placed.contains(&tid) {
                continue;
            }
            match set_affinity(tid, &self.shared) {
                Ok(()) => {
                    self.placed.insert(tid);
                }
                Err(error) if error.raw_os_error() == Some(libc::ESRCH) => {}
                Err(error) => bail!("placing QEMU's thread {tid} was refused: {error}"),
            }
        }
        Ok(self.placed.len() - self.critical)
    }

    /// Called while the run goes: places threads QEMU started since.
    pub fn tick(&mut self) {
        if Instant::now() < self.next_sweep {
            return;
        }
        self.next_sweep = Instant::now() + RESWEEP;
        let _ = self.sweep();
    }
}

fn join(cores: &[usize]) -> String {
    cores.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

/// `(pCPU index, host thread id)` of every vCPU, from `query-cpus-fast`.
pub fn vcpu_threads(qmp: &mut Qmp) -> Result<Vec<(u32, u32)>> {
    let reply = qmp.execute("query-cpus-fast", None, REPLY_TIMEOUT)?;
    parse_cpus(&reply)
}

pub fn parse_cpus(reply: &serde_json::Value) -> Result<Vec<(u32, u32)>> {
    let Some(cpus) = reply.as_array() else { bail!("query-cpus-fast: not a list") };
    cpus.iter()
        .map(|cpu| {
            let field = |name: &str| {
                cpu.get(name)
                    .and_then(serde_json::Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .with_context(|| format!("query-cpus-fast: a vCPU without `{name}`"))
            };
            Ok((field("cpu-index")?, field("thread-id")?))
        })
        .collect()
}

/// The host cores this process may run on, in order.
fn allowed_cores() -> Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the set is ours and its size is passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot read this process's host cores");
    }
    // SAFETY: CPU_ISSET reads the set within CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect())
}

fn set_affinity(tid: u32, cores: &[usize]) -> std::io::Result<()> {
    // SAFETY: as in allowed_cores.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &core in cores {
        // SAFETY: the core came from sched_getaffinity, so it is below CPU_SETSIZE.
        unsafe { libc::CPU_SET(core, &mut set) };
    }
    // SAFETY: a thread id of QEMU's, the set and its size.
    let rc = unsafe { libc::sched_setaffinity(tid as libc::pid_t, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn set_fifo(tid: u32, priority: i32) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: a thread id of QEMU's and a valid parameter. Linux applies
    // the policy to that one thread.
    let rc =
        unsafe { libc::sched_setscheduler(tid as libc::pid_t, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Back to the ordinary policy, when isolation is given up half-way.
fn set_other(tid: u32) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: as in set_fifo.
    let rc = unsafe { libc::sched_setscheduler(tid as libc::pid_t, libc::SCHED_OTHER, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_critical_thread_gets_the_last_core() {
        assert_eq!(split_cores(&[0, 1], 1), Ok((vec![1], vec![0])));
        assert_eq!(split_cores(&[2, 5, 7], 1), Ok((vec![7], vec![2, 5])));
        assert_eq!(split_cores(&[0, 1, 2, 3], 2), Ok((vec![2, 3], vec![0, 1])));
        assert!(split_cores(&[0], 1).unwrap_err().contains("1 core(s)"));
        assert!(split_cores(&[0, 1], 2).is_err(), "one core must stay for the rest");
        assert!(split_cores(&[0, 1], 0).is_err());
    }

    #[test]
    fn qemu_names_each_vcpus_thread() {
        let reply = json!([
            {"cpu-index": 0, "thread-id": 4100, "qom-path": "/machine/unattached/device[0]", "target": "aarch64"},
            {"cpu-index": 1, "thread-id": 4101, "qom-path": "/machine/unattached/device[1]", "target": "aarch64"}
        ]);
        assert_eq!(parse_cpus(&reply).unwrap(), [(0, 4100), (1, 4101)]);
        assert!(parse_cpus(&json!([{"cpu-index": 0}])).is_err());
        assert!(parse_cpus(&json!({})).is_err());
    }
}
