//! EL2 residency: how long the hypervisor runs with interrupts masked, per
//! path, which is Ker-ONE's ΔVMMcritical (section 6, Figure 14). A stretch
//! starts where Partita is entered (a guest's exception, or a pCPU's loop
//! waking from WFI) and ends where an interrupt could be taken again: the
//! `eret` into a guest, a WFI, or a point in a long piece of work where
//! the loop looks for pending interrupts between steps.
//!
//! Each stretch is filed under the most specific path noted during it (the
//! vector's kind first, then the trap's class, then what the handler did)
//! and, separately, under whether it switched vCPUs. Partita keeps the
//! count, sum and maximum of each, per pCPU, and prints them at power-off
//! when it is built with its `residency` feature; `partita bench response`
//! reads those lines ([`Line`]).

use crate::hypercall::id;
use crate::trap::esr::Trap;
use crate::trap::sysreg::{self, Policy};

/// A stretch's path: an index below [`PATHS`]. The vector's four kinds come
/// first, so that the assembly can file a stretch by its kind alone.
pub type Path = u8;

/// How many paths there are; hypercalls take the upper half, by their
/// function number's low seven bits.
pub const PATHS: usize = 256;
/// The index of a stretch that switched vCPUs adds this to its path.
pub const SWITCHED: usize = PATHS;
/// Slots in one pCPU's table: every path, then every path with a switch.
pub const SLOTS: usize = 2 * PATHS;

pub mod path {
    use super::Path;
    /// A synchronous exception whose class the trap has not filed yet.
    pub const SYNC: Path = 0;
    /// An IRQ before it is known whose it is.
    pub const IRQ: Path = 1;
    pub const FIQ: Path = 2;
    pub const SERROR: Path = 3;
    pub const WFI: Path = 4;
    pub const PSCI: Path = 5;
    /// A data abort on an emulated frame (the GIC's, the console's).
    pub const MMIO: Path = 6;
    /// A stage-2 data abort outside the partition's memory.
    pub const DATA_ABORT: Path = 7;
    pub const INSTRUCTION_ABORT: Path = 8;
    /// An SGI the guest sends through ICC_SGI1R_EL1.
    pub const SGI: Path = 9;
    pub const SET_WAY: Path = 10;
    pub const ID_REGISTER: Path = 11;
    /// Any other trapped system register.
    pub const SYSREG: Path = 12;
    /// A vCPU's first FP/SIMD access on its pCPU.
    pub const FP: Path = 13;
    /// A vCPU's first debug-register access.
    pub const DEBUG: Path = 14;
    /// The running vCPU's own EL1 timer, forwarded.
    pub const OWN_TIMER: Path = 15;
    /// Partita's EL2 timer: a quantum, a slot, a wake-up, a watchdog or budget.
    pub const HYP_TIMER: Path = 16;
    /// The kick SGI another pCPU sends.
    pub const KICK: Path = 17;
    /// A passed-through device's interrupt.
    pub const PASSTHROUGH: Path = 18;
    pub const MAINTENANCE: Path = 19;
    /// A write to an accelerator's interface page: a request, Path 1.
    pub const ACCEL_REQUEST: Path = 20;
    /// One step of a partition's reload, from the scheduler loop.
    pub const RESTART_STEP: Path = 21;
    /// The scheduler loop after a WFI or between reload steps.
    pub const LOOP: Path = 22;
    /// The health monitor's action on a partition (stop, restart, ...).
    pub const HEALTH_ACTION: Path = 23;
    /// Timed outputs performed at their instant.
    pub const TIMED_OUTPUT: Path = 24;
    /// A vCPU moved to another pCPU (vlk's migration).
    pub const MIGRATION: Path = 25;
    /// One pass of the emulated fabric's logic on its own pCPU.
    pub const FABRIC_PASS: Path = 26;
    /// An accelerator's signal delivered, or a device connected or
    /// released, by the fabric's manager.
    pub const ACCEL_MANAGER: Path = 27;
    /// A cyclic slot starts (the EL2 timer at a slot edge).
    pub const SLOT: Path = 28;
    /// A pCPU's boot, until it first waits or enters a guest.
    pub const BOOT: Path = 29;
    /// Partita's hypercalls, from here on by the low seven bits of their
    /// function number ([`super::hypercall`]).
    pub const FIRST_HYPERCALL: Path = 128;
}

/// The path of Partita's hypercall `function` (x0), or PSCI's.
pub fn hypercall(function: u64) -> Path {
    if function & !0x7f == crate::hypercall::BASE {
        path::FIRST_HYPERCALL + (function & 0x7f) as Path
    } else {
        path::PSCI
    }
}

/// The path a synchronous trap takes, as far as its syndrome and x0 tell;
/// a data abort is [`path::MMIO`] until the handler finds it is not.
pub fn of_trap(trap: &Trap, x0: u64) -> Path {
    match trap {
        Trap::Wait { .. } => path::WFI,
        Trap::Hvc { .. } | Trap::Smc { .. } => hypercall(x0),
        Trap::SysReg(access) => match sysreg::policy(&access.reg, access.read) {
            Policy::GenerateSgi => path::SGI,
            Policy::SetWay => path::SET_WAY,
            Policy::IdRegister => path::ID_REGISTER,
            Policy::Debug => path::DEBUG,
            Policy::ReadZeroWriteIgnore | Policy::Forbidden => path::SYSREG,
        },
        Trap::DataAbort { .. } => path::MMIO,
        Trap::InstructionAbort { .. } => path::INSTRUCTION_ABORT,
        Trap::Other { .. } => path::SYNC,
    }
}

/// What a report calls the path in `slot` (of [`SLOTS`]).
pub fn name(slot: usize) -> &'static str {
    let path = slot % PATHS;
    if path >= usize::from(path::FIRST_HYPERCALL) {
        return hypercall_name(crate::hypercall::BASE + (path - usize::from(path::FIRST_HYPERCALL)) as u64);
    }
    const NAMES: [&str; 30] = [
        "sync",
        "irq",
        "fiq",
        "serror",
        "wfi",
        "psci",
        "mmio",
        "data-abort",
        "instruction-abort",
        "sgi",
        "set-way",
        "id-register",
        "sysreg",
        "fp",
        "debug",
        "own-timer",
        "hyp-timer",
        "kick",
        "passthrough",
        "maintenance",
        "accel-request",
        "restart-step",
        "loop",
        "health-action",
        "timed-output",
        "migration",
        "fabric-pass",
        "accel-manager",
        "slot",
        "boot",
    ];
    NAMES.get(path).copied().unwrap_or("unknown")
}

/// A hypercall's name, as `docs/hypercalls.md` spells it.
fn hypercall_name(function: u64) -> &'static str {
    match function {
        id::VERSION => "hvc-version",
        id::VCPU_START => "hvc-vcpu-start",
        id::VCPU_SUSPEND => "hvc-vcpu-suspend",
        id::VCPU_RESUME => "hvc-vcpu-resume",
        id::VCPU_HALT => "hvc-vcpu-halt",
        id::VCPU_STATE => "hvc-vcpu-state",
        id::PARTITION_SELF => "hvc-partition-self",
        id::PARTITION_SUSPEND => "hvc-partition-suspend",
        id::PARTITION_RESUME => "hvc-partition-resume",
        id::PARTITION_RESTART => "hvc-partition-restart",
        id::PARTITION_HALT => "hvc-partition-halt",
        id::PARTITION_STATE => "hvc-partition-state",
        id::PLAN_SWITCH => "hvc-plan-switch",
        id::PLAN_CURRENT => "hvc-plan-current",
        id::PORT_SEND => "hvc-port-send",
        id::PORT_RECEIVE => "hvc-port-receive",
        id::PORT_INFO => "hvc-port-info",
        id::DOORBELL_RING => "hvc-doorbell-ring",
        id::HM_REPORT => "hvc-hm-report",
        id::WATCHDOG_KICK => "hvc-watchdog-kick",
        id::HM_READ => "hvc-hm-read",
        id::ACC_REQUEST => "hvc-acc-request",
        id::ACC_RELEASE => "hvc-acc-release",
        id::TIO_WRITE_AT => "hvc-tio-write-at",
        id::TIO_CANCEL => "hvc-tio-cancel",
        id::TIO_STATS => "hvc-tio-stats",
        _ => "hvc-unknown",
    }
}

/// The slot a stretch of `path` is filed in.
pub fn slot(path: Path, switched: bool) -> usize {
    usize::from(path) + if switched { SWITCHED } else { 0 }
}

/// One slot's figures, in counter ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub count: u64,
    pub sum: u64,
    pub max: u64,
}

impl Figures {
    pub fn add(&mut self, ticks: u64) {
        self.count += 1;
        self.sum = self.sum.saturating_add(ticks);
        self.max = self.max.max(ticks);
    }

    pub fn mean(&self) -> u64 {
        self.sum.checked_div(self.count).unwrap_or(0)
    }
}

/// The line Partita prints for one pCPU's slot at power-off, and that the
/// host reads back:
/// `residency: cpu <c> <name> switch <0|1> n <count> mean <m> max <x>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line<'a> {
    pub cpu: usize,
    pub name: &'a str,
    pub switched: bool,
    pub figures: Figures,
}

pub const PREFIX: &str = "residency: ";
/// Then `<cpu>: <n> overlapped`: the stretches left out for having
/// overlapped another pCPU's (under `-icount` they may hold its turn).
pub const LEFT_OUT: &str = "residency left out on cpu ";

impl<'a> Line<'a> {
    pub fn new(cpu: usize, slot: usize, figures: Figures) -> Line<'static> {
        Line { cpu, name: name(slot), switched: slot >= SWITCHED, figures }
    }

    /// Reads a line as [`core::fmt::Display`] writes it (after the log's
    /// own prefix, if any); `None` for any other line.
    pub fn parse(text: &'a str) -> Option<Line<'a>> {
        let mut words = text[text.find(PREFIX)? + PREFIX.len()..].split_whitespace();
        let cpu = keyed(&mut words, "cpu")? as usize;
        let name = words.next()?;
        let switched = keyed(&mut words, "switch")? == 1;
        let count = keyed(&mut words, "n")?;
        let mean = keyed(&mut words, "mean")?;
        let max = keyed(&mut words, "max")?;
        Some(Line { cpu, name, switched, figures: Figures { count, sum: mean * count, max } })
    }
}

/// The number after the next word, if that word is `key`.
fn keyed(words: &mut core::str::SplitWhitespace<'_>, key: &str) -> Option<u64> {
    if words.next()? != key {
        return None;
    }
    words.next()?.parse().ok()
}

impl core::fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let Figures { count, max, .. } = self.figures;
        write!(
            f,
            "{PREFIX}cpu {} {} switch {} n {count} mean {} max {max}",
            self.cpu,
            self.name,
            u8::from(self.switched),
            self.figures.mean()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypercalls_take_the_upper_half_and_psci_its_own_path() {
        assert_eq!(hypercall(id::VERSION), path::FIRST_HYPERCALL);
        assert_eq!(name(usize::from(hypercall(id::PORT_SEND))), "hvc-port-send");
        assert_eq!(name(usize::from(hypercall(id::TIO_STATS)) + SWITCHED), "hvc-tio-stats");
        assert_eq!(hypercall(0x8400_0000), path::PSCI);
        assert_eq!(hypercall(0xC400_0003), path::PSCI);
        assert_eq!(name(usize::from(path::PSCI)), "psci");
    }

    #[test]
    fn a_trap_is_filed_by_its_class_and_call() {
        assert_eq!(of_trap(&Trap::Wait { wfe: false }, 0), path::WFI);
        assert_eq!(of_trap(&Trap::Hvc { imm: 0 }, id::PORT_RECEIVE), hypercall(id::PORT_RECEIVE));
        assert_eq!(of_trap(&Trap::Smc { imm: 0 }, 0x8400_0008), path::PSCI);
        assert_eq!(of_trap(&Trap::DataAbort { fault_status: 0x07 }, 0), path::MMIO);
        assert_eq!(of_trap(&Trap::InstructionAbort { fault_status: 0x07 }, 0), path::INSTRUCTION_ABORT);
        assert_eq!(of_trap(&Trap::Other { class: 0x07 }, 0), path::SYNC);
        // MSR ICC_SGI1R_EL1, x1: op0 3, op1 0, CRn 12, CRm 11, op2 5.
        let sgi = crate::trap::esr::decode(0x6200_0000 | 0x3 << 20 | 0xc << 10 | 0xb << 1 | 5 << 17 | 1 << 5);
        assert_eq!(of_trap(&sgi, 0), path::SGI);
    }

    #[test]
    fn every_named_path_has_its_name() {
        assert_eq!(name(usize::from(path::SYNC)), "sync");
        assert_eq!(name(usize::from(path::SLOT)), "slot");
        assert_eq!(name(usize::from(path::RESTART_STEP) + SWITCHED), "restart-step");
        assert_eq!(name(100), "unknown");
    }

    #[test]
    fn figures_keep_count_mean_and_max() {
        let mut figures = Figures::default();
        assert_eq!(figures.mean(), 0);
        for ticks in [10, 30, 20] {
            figures.add(ticks);
        }
        assert_eq!(figures, Figures { count: 3, sum: 60, max: 30 });
        assert_eq!(figures.mean(), 20);
    }

    #[test]
    fn a_line_reads_back_as_it_was_written() {
        let figures = Figures { count: 4, sum: 400, max: 130 };
        let line = Line::new(1, slot(path::HYP_TIMER, true), figures);
        let text = alloc::format!("[partita] {line}");
        assert_eq!(text, "[partita] residency: cpu 1 hyp-timer switch 1 n 4 mean 100 max 130");
        let back = Line::parse(&text).expect("parses");
        assert_eq!((back.cpu, back.name, back.switched), (1, "hyp-timer", true));
        assert_eq!((back.figures.count, back.figures.mean(), back.figures.max), (4, 100, 130));
        assert_eq!(Line::parse("[partita] state check: ok"), None);
        assert_eq!(Line::parse("residency: cpu x sync switch 0 n 1 mean 1 max 1"), None);
    }
}
