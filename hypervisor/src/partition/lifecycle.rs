//! The one owner of partition and vCPU life cycles: every change of a
//! partition's state goes through [`change`], which applies the transition
//! table (`partita_core::partition::lifecycle`), says so on the console,
//! makes the other pCPUs look again, and powers the machine off once
//! every partition has ended. Restarts, vCPU starts and a partition's
//! power-on live here too, each once.

use super::{Console, Partition, Vcpu};
use crate::console::{self, log};
use crate::selfcheck;
use crate::state::System;
use crate::trap::exit::Fault;
use crate::vgic;
use core::sync::atomic::Ordering;
use partita_arch::platform::{self, Gic, InterruptController};
use partita_arch::{cpu, firmware, timer};
use partita_core::health::Watchdog;
use partita_core::partition::lifecycle::Change;
use partita_core::partition::reload::{self, Step};
use partita_core::partition::seed::{self, Seeds};
use partita_core::partition::vcpu::{Op, Refused, State};
use partita_core::time::{ticks_to_us, us_to_ticks};
use partita_core::trap::vuart::{LineBuffer, Pl011};

/// Bytes a restart zeroes, copies or cleans per step: a more urgent vCPU on
/// the pCPU that reloads waits for one such step at most. At 128 KiB a
/// step held EL2 for up to 41,000 instructions (`partita bench response`,
/// path `restart-step`); at 4 KiB a copy, the slowest kind, stays near a
/// thousand, and a 16 MiB partition reloads in 4,096 steps.
const RELOAD_CHUNK: u64 = 4 << 10;

/// Who or what asked for a change: it decides the console line.
#[derive(Clone, Copy)]
pub enum Cause<'a> {
    /// The partition itself, through PSCI SYSTEM_OFF or SYSTEM_RESET.
    Psci,
    /// A fault of its vCPU `vcpu` at `pc`.
    Fault { vcpu: usize, fault: &'a Fault, pc: u64 },
    /// Its health monitor, about `why`.
    Health(&'a str),
    /// A system partition's hypercall.
    By(&'a Partition),
}

/// Moves `part` through `change` for `cause`. False when its state does
/// not allow it (another pCPU changed it first, say): nothing happens and
/// nothing is logged, so each change is reported once.
pub fn change(sys: &System, part: &Partition, change: Change, cause: Cause) -> bool {
    let Ok(_) = part.apply(change) else { return false };
    if change == Change::Restart || change == Change::RestartByOther {
        begin_reload(part);
    }
    announce(part, change, cause);
    kick_others(part);
    let restarts = change == Change::Restart || change == Change::RestartByOther;
    if let Some(fabric) = sys.fabric.as_ref().filter(|_| restarts || part.state().ended()) {
        fabric.release(sys, part.vcpus[0].partition);
    }
    if part.state().ended() {
        power_off_when_all_ended(sys);
    }
    true
}

/// The console line of a change. The ones a guest can bring about again and
/// again (its own power-off and reset, a restart by the health monitor, a
/// stop) are put together without `core::fmt` (`console::Pieces`).
fn announce(part: &Partition, change: Change, cause: Cause) {
    let name = part.name();
    let why = cause.why();
    let line = || console::pieces().text("partition ").text(name);
    match (change, cause) {
        (Change::PowerOff, _) => line().text(" powered off (PSCI SYSTEM_OFF)").end(),
        (Change::Restart, Cause::Psci) => line().text(" restarting (PSCI SYSTEM_RESET)").end(),
        (Change::Stop, Cause::Fault { vcpu, fault, pc }) => {
            let address = Address(fault.address);
            log!("partition {name} vcpu {vcpu} stopped: {why} (EC 0x{:02x}, ELR 0x{pc:x}{address})", fault.class)
        }
        (Change::RestartByOther, Cause::By(caller)) => {
            log!("partition {}: restarting partition {name}", caller.name())
        }
        (_, Cause::By(caller)) => log!("partition {}: {change:?} of partition {name}", caller.name()),
        (Change::Restart, _) => {
            let restarts = u64::from(part.hm.lock().restarts);
            line().text(" restarting (health monitor; restart ").decimal(restarts).text("): ").text(why).end()
        }
        (Change::Stop, _) => line().text(" stopped: ").text(why).end(),
        (Change::Suspend, _) => log!("partition {name} suspended by the health monitor ({why})"),
        (change, _) => log!("partition {name}: {change:?} ({why})"),
    }
}

/// A fault's address in its console line, when it has one.
struct Address(Option<u64>);

impl core::fmt::Display for Address {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        match self.0 {
            Some(address) => write!(f, ", address 0x{address:x}"),
            None => Ok(()),
        }
    }
}

impl Cause<'_> {
    /// The reason in words, for the console.
    pub fn why(&self) -> &str {
        match self {
            Cause::Psci => "PSCI",
            Cause::Fault { fault, .. } => fault.what,
            Cause::Health(why) => why,
            Cause::By(_) => "system partition",
        }
    }
}

/// Makes every other pCPU running a vCPU of `part` look at it again.
fn kick_others(part: &Partition) {
    let me = partita_arch::cpu::index();
    for vcpu in &part.vcpus {
        let pcpu = vcpu.pcpu();
        if pcpu != me {
            Gic::kick(pcpu);
        }
    }
}

fn power_off_when_all_ended(sys: &System) {
    if sys.partitions.iter().all(|p| p.state().ended()) {
        if let Some(fabric) = &sys.fabric {
            fabric.report();
        }
        selfcheck::run(sys);
        report_residency(sys);
        log!("all partitions stopped; powering off");
        crate::console::flush();
        firmware::system_off();
    }
}

/// Each pCPU's EL2 residency per path, in a build that keeps it
/// (`partita_arch::residency`), for `partita bench response`.
fn report_residency(sys: &System) {
    if !partita_arch::residency::ENABLED {
        return;
    }
    for cpu in 0..sys.cpus.len() {
        for (slot, figures) in partita_arch::residency::figures(cpu) {
            log!("{}", partita_core::residency::Line::new(cpu, slot, figures));
        }
        log!("{}{cpu}: {} overlapped", partita_core::residency::LEFT_OUT, partita_arch::residency::left_out(cpu));
    }
}

/// A restart begins: its vCPUs leave their pCPUs (kicked by [`change`]),
/// then vCPU 0's pCPU reloads it a step at a time in vCPU 0's place.
fn begin_reload(part: &Partition) {
    crate::timedio::forget(part);
    part.reload_started.store(timer::counter(), Ordering::Release);
    part.reload_cursor.store(0, Ordering::Release);
    let first = part.vcpus[0];
    first.move_to(first.home);
    first.set_waiting(false);
}

/// One step of a restart, by the pCPU that holds vCPU 0 (so only one at a
/// time); nothing while another of its vCPUs is still on a pCPU. The last
/// step powers it on again.
#[inline(never)]
pub fn restart_step(sys: &System, part: &Partition) {
    if part.vcpus[1..].iter().any(|v| v.is_on_cpu()) {
        return;
    }
    let cursor = part.reload_cursor.load(Ordering::Acquire);
    match reload_step(part, cursor, sys.data) {
        Some(next) => part.reload_cursor.store(next, Ordering::Release),
        // Its two lines and the power-on are a step each: together, with
        // the kick's chunk of the console that follows, they held EL2 for
        // about 2,000 instructions.
        None if cursor < reload::SAID_RELOADED => {
            let ticks = timer::counter() - part.reload_started.load(Ordering::Acquire);
            let us = ticks_to_us(ticks, platform::counter_frequency());
            console::pieces().text("partition ").text(part.name()).text(" reloaded in ").decimal(us).text(" us").end();
            part.reload_cursor.store(reload::SAID_RELOADED, Ordering::Release);
        }
        None if cursor == reload::SAID_RELOADED => {
            say_starting(part);
            part.reload_cursor.store(reload::SAID_STARTING, Ordering::Release);
        }
        None => {
            power_on(part);
            // Cannot fail: nothing leaves Restarting but this.
            let _ = part.apply(Change::Reloaded);
        }
    }
}

/// Loads a partition at boot: every step of a reload at once, then it
/// powers on.
pub fn first_boot(part: &Partition, data: &[u8]) {
    let mut cursor = 0;
    while let Some(next) = reload_step(part, cursor, data) {
        cursor = next;
    }
    power_on(part);
    say_starting(part);
}

/// Virtual devices start afresh (distributor, console); its devices'
/// physical interrupts stay quiet until the guest enables them again in
/// its fresh distributor, and a pending state its last run set through
/// ISPENDR does not outlive it.
fn reset_devices(part: &Partition) {
    part.gic.lock().reset_to(&part.initial_gic);
    *part.console.lock() = Console { uart: Pl011::new(), line: LineBuffer::new() };
    for device in &part.config.devices {
        for interrupt in &device.interrupts {
            Gic::enable_spi(interrupt.intid, false);
            Gic::set_spi_pending(interrupt.intid, false);
        }
    }
}

/// One bounded step of a reload (`partita_core::partition::reload`): zero
/// its RAM (nothing of a previous run or of the boot loader stays behind),
/// copy its images and device tree in, give the tree this load's seeds,
/// write everything back to memory for a guest that starts with its
/// caches off. Returns the next cursor, `None` once done.
fn reload_step(part: &Partition, cursor: u64, data: &[u8]) -> Option<u64> {
    let (step, next) = reload::step(&part.reload_regions, &part.reload_loads, cursor, RELOAD_CHUNK)?;
    match step {
        Step::Reset => {
            // Translations of its previous life must go: each pCPU drops
            // them before it next runs one of its vCPUs.
            part.tlb_generation.fetch_add(1, Ordering::SeqCst);
            reset_devices(part);
        }
        Step::Zero { pa, len } => partita_arch::cache::zero(pa, len),
        // BootTable::check proved the load inside the data and its RAM.
        Step::Copy { pa, offset, len } => {
            partita_arch::cache::copy_to(pa, &data[offset as usize..(offset + len) as usize])
        }
        Step::Seed => seed_device_tree(part),
        Step::Clean { pa, len } => partita_arch::cache::clean_invalidate(pa, len),
        // Off the pCPUs all the while: nothing loads or saves it.
        Step::Registers => part.vcpus[0].reset_registers(part.boot.entry, part.boot.dtb),
        Step::Context => part.vcpus[0].reset_context(),
    }
    Some(next)
}

/// Writes fresh `kaslr-seed` and `rng-seed` values over the placeholders
/// of the device tree just copied from the image store.
fn seed_device_tree(part: &Partition) {
    let inputs = seed::Inputs {
        secret: part.boot.entropy,
        partition: part.vcpus[0].partition as u64,
        load: part.times_loaded.fetch_add(1, Ordering::AcqRel),
        counter: timer::counter(),
        hardware: core::array::from_fn(|_| cpu::hardware_random().unwrap_or(0)),
    };
    let places = part.boot.seeds;
    let seeds = Seeds::draw(&inputs, places.rng_len as usize);
    for (offset, bytes) in [(places.kaslr, &seeds.kaslr[..]), (places.rng, seeds.rng())] {
        // BootTable::check proved both inside the tree's load, in its RAM.
        if let Some(pa) = part.config.translate_ram(part.boot.dtb + u64::from(offset)) {
            partita_arch::cache::copy_to(pa, bytes);
        }
    }
}

/// vCPU 0 starts at the entry point with x0 = device tree (the reload's
/// `Step::Registers` set them so); the others wait for PSCI CPU_ON.
fn power_on(part: &Partition) {
    for vcpu in &part.vcpus {
        vcpu.power_down();
        vcpu.move_to(vcpu.home);
    }
    part.vcpus[0].apply(Op::Start).expect("a vCPU that is off can start");
    if let Some(period_us) = part.config.health.watchdog_us {
        let period = us_to_ticks(period_us, platform::counter_frequency());
        *part.watchdog.lock() = Some(Watchdog::new(period, timer::counter()));
    }
}

/// The line a partition's power-on has: a restart writes it in a step of
/// its own, without `core::fmt`, which cost some 2,000 instructions.
fn say_starting(part: &Partition) {
    console::pieces()
        .text("partition ")
        .text(part.name())
        .text(" starts: ")
        .decimal(part.vcpus.len() as u64)
        .text(" vCPU(s), entry ")
        .hex(part.boot.entry)
        .text(", device tree at ")
        .hex(part.boot.dtb)
        .end();
}

/// Why a vCPU did not start.
pub enum Start {
    BadEntry,
    /// Another start of it is under way (PSCI: ON_PENDING).
    Pending,
    Refused(Refused),
}

/// Starts vCPU `index` of `part` at `entry` with x0 = `context`: PSCI
/// CPU_ON and the start hypercall alike. Of simultaneous starts, one sets
/// the vCPU up and the others are told it is pending or already on.
pub fn start_vcpu(part: &Partition, index: usize, entry: u64, context: u64) -> Result<(), Start> {
    if part.config.translate_ram(entry).is_none() {
        return Err(Start::BadEntry);
    }
    let target = part.vcpus[index];
    if !target.claim_start() {
        return Err(Start::Pending);
    }
    let started = start_claimed(target, entry, context);
    target.end_start();
    started
}

/// [`start_vcpu`] with the start claimed: no other start runs meanwhile.
fn start_claimed(target: &Vcpu, entry: u64, context: u64) -> Result<(), Start> {
    if target.state() != State::Off {
        return Err(Start::Refused(target.state().next(Op::Start).err().unwrap_or(Refused::AlreadyOn)));
    }
    // It may still be saving its registers after CPU_OFF on its own pCPU,
    // which does so with interrupts masked: a short, bounded wait. YIELD,
    // as the locks do (partita_arch::sync), lets that CPU run meanwhile
    // under QEMU's -icount.
    while target.is_on_cpu() {
        partita_arch::cpu::yield_now();
    }
    target.reset(entry, context);
    target.apply(Op::Start).map_err(Start::Refused)?;
    vgic::wake(target);
    Ok(())
}

/// Suspends, resumes or halts a vCPU (the caller's own, or itself: it then
/// leaves its pCPU on the way out of this trap); its pCPU looks again.
pub fn vcpu_op(target: &Vcpu, op: Op) -> Result<State, Refused> {
    let state = target.apply(op)?;
    vgic::wake(target);
    Ok(state)
}
