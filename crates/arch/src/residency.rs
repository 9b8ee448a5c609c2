//! EL2 residency per path and pCPU (`partita_core::residency`), kept only
//! in a build with the `residency` feature: without it every function here
//! is empty and the vector has no hook, so the paths it measures cost what
//! they cost in the product.
//!
//! The vector opens a stretch as it saves the caller-saved registers and
//! closes it just before it restores them; what lies outside (the vector's
//! first 17 instructions, the restore and the `eret`, about 35) is the
//! same for every stretch and `partita bench response` adds it. The
//! scheduler and fabric loops close a stretch before they wait and open
//! one when they wake, and a long piece of work closes and reopens one
//! where it looks for pending interrupts.
//!
//! Under QEMU's `-icount` one clock counts every vCPU's instructions, and
//! QEMU runs them in turns: a stretch during which another pCPU was at EL2
//! too may hold that pCPU's turn as well. Such a stretch is counted apart,
//! as overlapped, and left out of the figures: one global count of the
//! stretches open, and one of their beginnings and ends, tell. A pCPU's
//! boot is a stretch of its own, so that the primary's, which goes on
//! while the others start, shows.
//!
//! Each pCPU touches only its own entries, with interrupts masked, so
//! relaxed atomics are enough for those: they only make the tables `Sync`
//! without `unsafe`.

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed, Ordering::SeqCst};
use partita_core::residency::{self, Figures, Path, SLOTS};

/// Whether this build keeps residency at all.
pub const ENABLED: bool = cfg!(feature = "residency");

#[cfg_attr(not(feature = "residency"), allow(dead_code))]
struct Cpu {
    /// The counter where the open stretch began; 0: none is open.
    start: AtomicU64,
    /// [`EDGES`] as this pCPU's stretch opened it.
    edge: AtomicU64,
    /// Another pCPU was at EL2 when it opened.
    overlapped: AtomicBool,
    /// Stretches left out for having overlapped another pCPU's.
    left_out: AtomicU64,
    path: AtomicU8,
    switched: AtomicBool,
    count: [AtomicU64; SLOTS],
    sum: [AtomicU64; SLOTS],
    max: [AtomicU64; SLOTS],
}

#[cfg_attr(not(feature = "residency"), allow(dead_code))]
impl Cpu {
    const fn new() -> Cpu {
        Cpu {
            start: AtomicU64::new(0),
            edge: AtomicU64::new(0),
            overlapped: AtomicBool::new(false),
            left_out: AtomicU64::new(0),
            path: AtomicU8::new(0),
            switched: AtomicBool::new(false),
            count: [const { AtomicU64::new(0) }; SLOTS],
            sum: [const { AtomicU64::new(0) }; SLOTS],
            max: [const { AtomicU64::new(0) }; SLOTS],
        }
    }
}

/// Empty unless the feature is on, so the product carries no tables.
#[cfg(feature = "residency")]
static CPUS: [Cpu; crate::MAX_CPUS] = [const { Cpu::new() }; crate::MAX_CPUS];
#[cfg(not(feature = "residency"))]
static CPUS: [Cpu; 0] = [];

/// Stretches open on every pCPU.
static OPEN: AtomicU64 = AtomicU64::new(0);
/// Beginnings and ends of stretches on every pCPU.
static EDGES: AtomicU64 = AtomicU64::new(0);

fn mine() -> Option<&'static Cpu> {
    CPUS.get(crate::cpu::index())
}

/// Opens a stretch of `path` on this pCPU.
#[inline(always)]
pub fn begin(path: Path) {
    if !ENABLED {
        return;
    }
    let Some(cpu) = mine() else { return };
    if cpu.start.load(Relaxed) != 0 {
        end();
    }
    cpu.path.store(path, Relaxed);
    cpu.switched.store(false, Relaxed);
    cpu.overlapped.store(OPEN.fetch_add(1, SeqCst) > 0, Relaxed);
    cpu.edge.store(EDGES.fetch_add(1, SeqCst) + 1, Relaxed);
    cpu.start.store(crate::timer::counter().max(1), Relaxed);
}

/// Files the open stretch under `path`: later notes are more specific.
#[inline(always)]
pub fn note(path: Path) {
    if !ENABLED {
        return;
    }
    if let Some(cpu) = mine() {
        cpu.path.store(path, Relaxed);
    }
}

/// The open stretch switches vCPUs.
#[inline(always)]
pub fn note_switch() {
    if !ENABLED {
        return;
    }
    if let Some(cpu) = mine() {
        cpu.switched.store(true, Relaxed);
    }
}

/// Closes the open stretch, if any, and counts it.
#[inline(always)]
pub fn end() {
    if !ENABLED {
        return;
    }
    let Some(cpu) = mine() else { return };
    let start = cpu.start.swap(0, Relaxed);
    if start == 0 {
        return;
    }
    let ticks = crate::timer::counter().saturating_sub(start);
    OPEN.fetch_sub(1, SeqCst);
    let others = EDGES.fetch_add(1, SeqCst) != cpu.edge.load(Relaxed);
    if others || cpu.overlapped.load(Relaxed) {
        cpu.left_out.fetch_add(1, Relaxed);
        return;
    }
    let slot = residency::slot(cpu.path.load(Relaxed), cpu.switched.load(Relaxed));
    cpu.count[slot].fetch_add(1, Relaxed);
    cpu.sum[slot].fetch_add(ticks, Relaxed);
    cpu.max[slot].fetch_max(ticks, Relaxed);
}

/// Closes the open stretch and opens one of `path`: a point where a
/// pending interrupt is looked for.
#[inline(always)]
pub fn checkpoint(path: Path) {
    if ENABLED {
        end();
        begin(path);
    }
}

/// On a secondary pCPU, before it runs anything: waits until the primary's
/// boot stretch is over, so that the guests' first traps, which are the
/// same in every run, are never left out as overlapping it. Only in a
/// build that keeps residency; the primary closes its stretch when it
/// first waits or enters a guest.
pub fn wait_for_primary() {
    if !ENABLED {
        return;
    }
    while CPUS.first().is_some_and(|primary| primary.start.load(Relaxed) != 0) {
        // Under QEMU's turns, YIELD hands the turn to the primary.
        crate::cpu::yield_now();
    }
}

/// `pcpu`'s stretches left out for having overlapped another pCPU's.
pub fn left_out(pcpu: usize) -> u64 {
    CPUS.get(pcpu).map_or(0, |cpu| cpu.left_out.load(Relaxed))
}

/// `pcpu`'s figures for each slot that saw a stretch.
pub fn figures(pcpu: usize) -> impl Iterator<Item = (usize, Figures)> {
    CPUS.get(pcpu).into_iter().flat_map(|cpu| {
        (0..SLOTS).filter_map(move |slot| {
            let count = cpu.count[slot].load(Relaxed);
            (count > 0)
                .then(|| (slot, Figures { count, sum: cpu.sum[slot].load(Relaxed), max: cpu.max[slot].load(Relaxed) }))
        })
    })
}

/// The vector's hook as it saves the frame: opens a stretch of the
/// exception's `kind` (0-3, the first four paths) and gives `kind` back.
#[cfg(feature = "residency")]
#[unsafe(no_mangle)]
extern "C" fn hv_residency_begin(kind: u64) -> u64 {
    begin(kind as Path);
    kind
}

/// The vector's hook before it restores the frame and returns.
#[cfg(feature = "residency")]
#[unsafe(no_mangle)]
extern "C" fn hv_residency_end() {
    end();
}
