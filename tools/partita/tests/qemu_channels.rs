//! Channels, the watchdog and the health-monitor log in QEMU: queuing and
//! sampling ports between partitions, a shared-memory window with its
//! doorbell, the statuses and health events of calls a partition may not
//! make, a watchdog that restarts its partition, a million random
//! hypercalls, and a system partition reading the log. The sampling test,
//! which asserts on ages, runs under `-icount`.

mod common;

use common::*;
use partita::config::raw::{RawAction, RawChannel, RawHealth, RawRight};
use partita::run::RunOptions;

/// Counter ticks per millisecond on QEMU virt (62.5 MHz).
const TICKS_PER_MS: u64 = 62_500;

fn icount(seconds: u64) -> RunOptions {
    RunOptions { seconds: Some(seconds), icount: Some(4), ..RunOptions::default() }
}

fn wall(seconds: u64) -> RunOptions {
    RunOptions { seconds: Some(seconds), ..RunOptions::default() }
}

/// `action` for a stage-2 fault, the default for everything else.
fn on_fault(action: RawAction) -> RawHealth {
    RawHealth { stage2_fault: Some(action), ..RawHealth::default() }
}

/// The hypervisor log and one partition's lines, for failure messages.
fn lines(boot: &Boot, name: &str) -> String {
    format!("{name}:\n{}\nhypervisor:\n{}", boot.log(name), boot.hypervisor)
}

/// The line of `name`'s log that starts with `prefix`.
fn line<'a>(boot: &'a Boot, name: &str, prefix: &str) -> &'a str {
    boot.log(name)
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in {}", lines(boot, name)))
}

/// The number after `word` in `line`.
fn number_after(line: &str, word: &str) -> u64 {
    let words: Vec<&str> = line.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    let at = words.iter().position(|w| *w == word).unwrap_or_else(|| panic!("no {word:?} in {line:?}"));
    words[at + 1].parse().unwrap_or_else(|_| panic!("no number after {word:?} in {line:?}"))
}

fn assert_line(boot: &Boot, name: &str, expected: &str) {
    assert!(boot.log(name).lines().any(|l| l == expected), "missing {expected:?} in {}", lines(boot, name));
}

fn assert_state_check_ok(boot: &Boot) {
    assert!(!boot.hypervisor.contains("PANIC"), "{}", boot.hypervisor);
    assert!(boot.hypervisor.lines().any(|l| l.contains("state check: ok")), "{}", boot.hypervisor);
}

/// A producer on pCPU 1 sends 100,000 numbered messages through a queue of
/// 16 to a consumer on pCPU 2, which pauses now and then, so the queue
/// fills: the producer is told (EFULL) and retries, polling, with a
/// deadline or blocking. The consumer blocks, waits with a deadline and
/// polls in turn, and gets every message once, in order. A busy partition
/// ticks on pCPU 3 all along.
#[test]
fn a_queue_delivers_every_message_once_in_order_under_load() {
    const MESSAGES: u64 = 100_000;
    let config = machine([
        part("producer", &[1], &format!("queue-send={MESSAGES} ticks=1 period_ms=1")),
        part("consumer", &[2], &format!("queue-recv={MESSAGES} pause_every=4000 pause_ms=3 ticks=1 period_ms=1")),
        part("load", &[3], "until-off=1 ticks=0 period_ms=20"),
    ])
    .channel(RawChannel::queuing("seq", "producer", "consumer", 16, 16));
    let boot = boot_with("qemu-queue-load", &config, wall(HANG_LIMIT));
    assert_powered_off(&boot);
    assert_line(&boot, "consumer", &format!("ipc: received {MESSAGES} in order, 0 lost, 0 duplicated"));
    let sent = line(&boot, "producer", "ipc: sent ");
    assert_eq!(number_after(sent, "sent"), MESSAGES, "{sent}");
    let full = number_after(sent, "full");
    assert!(full > 0, "the queue never filled: {sent}");
    let consumer = line(&boot, "consumer", "ipc: corrupt ");
    assert_eq!(number_after(consumer, "corrupt"), 0, "{consumer}");
    assert!(number_after(consumer, "left") < 16, "more messages left than the depth: {consumer}");
    let (from, to) = (boot.position("[producer] psci features"), boot.position("[consumer] ipc: received"));
    let load_ticks = boot.console[from..to].iter().filter(|l| l.starts_with("[load] tick ")).count();
    assert!(load_ticks >= 2, "the load partition hardly ran meanwhile:\n{}", boot.console.join("\n"));
    println!("{sent}; {consumer}; load ticked {load_ticks} times");
    assert_state_check_ok(&boot);
}

/// A writer writes a sample every 10 ms with a 20 ms refresh; two readers
/// read halfway between writes. Before the first write a read finds
/// nothing; while the writer runs every read is valid and fresh; once it
/// has stopped, the last sample reads as stale.
#[test]
fn sampling_reads_are_fresh_while_written_and_stale_after() {
    let timing = "sample_ms=10 sample_at_ms=3000";
    let config = machine([
        part("writer", &[1], &format!("sample-write=50 {timing} ticks=1 period_ms=1")),
        part("reader-a", &[2], &format!("sample-read=50 {timing} ticks=1 period_ms=1")),
        part("reader-b", &[3], &format!("sample-read=50 {timing} ticks=1 period_ms=1")),
    ])
    .channel(RawChannel::sampling("status", "writer", &["reader-a", "reader-b"], 16, 20_000));
    let boot = boot_with("qemu-sampling", &config, icount(HANG_LIMIT));
    assert_powered_off(&boot);
    assert_line(&boot, "writer", "sampling: wrote 50, errors 0");
    for name in ["writer", "reader-a", "reader-b"] {
        assert!(!boot.log(name).contains("late"), "{name} began after the first write was due: {}", lines(&boot, name));
    }
    for name in ["reader-a", "reader-b"] {
        assert_line(&boot, name, "sampling: before any write: -7");
        let during = line(&boot, name, "sampling: 50 reads while writing");
        assert_eq!(number_after(during, "writing"), 50, "not every read was valid: {during}");
        let refresh = number_after(during, "refresh");
        assert_eq!(refresh, 20_000, "{during}");
        assert!(number_after(during, "age") <= refresh, "a read older than the refresh: {during}");
        assert!(during.ends_with("last seq 50, 0 backwards"), "{during}");
        let after = line(&boot, name, "sampling: after the writer stopped: ");
        assert!(after.starts_with("sampling: after the writer stopped: 0 valid 0 age "), "{after}");
        assert!(number_after(after, "age") > refresh, "stale but not older than the refresh: {after}");
    }
}

/// Three members share a window: `writer` fills it and rings the doorbell
/// a hundred times, `reader` takes every doorbell interrupt (spinning, then
/// asleep in WFI) and checks the pattern, `viewer` (read-only) may read but
/// its write is a stage-2 fault that halts it. `outsider`, on no channel,
/// is refused the doorbell and the channel's details, and its accesses at
/// the window's address are stage-2 faults it survives (`log`); none of
/// the refused writes reaches the window.
#[test]
fn a_shared_window_with_a_doorbell_is_closed_to_others() {
    const ROUNDS: u64 = 100;
    let frames = RawChannel::shared_memory("frames", &["writer", "reader", "viewer"], 0x7000_0000, 64 << 10)
        .read_only(&["viewer"])
        .doorbell(48);
    let config = machine([
        part("writer", &[1], &format!("shm=write shm_rounds={ROUNDS} ticks=1 period_ms=1")),
        part("reader", &[2], &format!("shm=read shm_rounds={ROUNDS} doorbell=48 ticks=1 period_ms=1")),
        part("viewer", &[3], "shm=view ticks=1 period_ms=1").health(halt_on_faults()),
        part("outsider", &[3], "shm=outside addr=0x70000000 ctl_after_ms=20 ticks=1 period_ms=1")
            .health(on_fault(RawAction::Log)),
    ])
    .channel(frames);
    let boot = boot_with("qemu-shared-memory", &config, wall(HANG_LIMIT));
    assert_powered_off(&boot);
    let window = "shm: channel 0 info 0 kind 2 size 0x10000 at 0x70000000";
    for name in ["writer", "reader", "viewer"] {
        assert_line(&boot, name, window);
    }
    assert_line(&boot, "writer", &format!("shm: wrote {ROUNDS} rounds, rang {ROUNDS}, acked {ROUNDS}"));
    assert_line(&boot, "reader", &format!("shm: doorbells {ROUNDS}, rounds checked {ROUNDS}, bad words 0"));
    assert_line(&boot, "viewer", "shm: read-only member read ready 0x5245414459");
    assert!(!boot.log("viewer").contains("survived"), "{}", lines(&boot, "viewer"));
    assert!(boot.hypervisor.contains("partition viewer vcpu 0 stopped"), "{}", boot.hypervisor);
    for expected in ["shm: outsider ring -3 info -3", "shm: outsider read 0x0", "shm: outsider wrote, survived"] {
        assert_line(&boot, "outsider", expected);
    }
    // The refused writes came before the reader looked at their slots.
    let checked = boot.position("[reader] shm: slots");
    assert!(boot.position("[outsider] shm: outsider wrote") < checked, "{}", boot.console.join("\n"));
    assert!(boot.position("partition viewer vcpu 0 Stage2Fault") < checked, "{}", boot.console.join("\n"));
    assert_line(&boot, "reader", "shm: slots kept");
    let hm = hm_log("qemu-shared-memory");
    let viewer = hm_entries(&hm, &["partition viewer vcpu 0 Stage2Fault", "detail 0x70000028"]);
    assert!(viewer.len() == 1 && viewer[0].ends_with("action Halt"), "{hm}");
    let refused = hm_entries(&hm, &["partition outsider vcpu 0 IllegalHypercall"]);
    assert_eq!(refused.len(), 2, "the ring and the info call:\n{hm}");
    for address in ["0x70000000", "0x70000020"] {
        let fault = hm_entries(&hm, &["partition outsider vcpu 0 Stage2Fault", &format!("detail {address} ")]);
        assert!(fault.len() == 1 && fault[0].ends_with("action Log"), "{address}:\n{hm}");
    }
    assert!(
        hm_entries(&hm, &["partition writer"]).is_empty() && hm_entries(&hm, &["partition reader"]).is_empty(),
        "{hm}"
    );
}

/// Channel 0 is a queue `src` -> `dst`, channel 1 a sampling port from
/// `src`; `other` is on neither. Each partition makes a fixed series of
/// calls and prints their statuses: a port the caller is not an endpoint of
/// (or not in that direction) is EDENIED, an index past the last channel
/// EINVAL, a buffer outside the caller's RAM EFAULT; the refusals are
/// illegal-hypercall events in hm.log.
#[test]
fn ports_refuse_strangers_bad_indices_and_bad_buffers() {
    let config = machine([
        part("src", &[1], "port-probe=source ticks=1 period_ms=1"),
        part("dst", &[2], "port-probe=destination ticks=1 period_ms=1"),
        part("other", &[3], "port-probe=other ticks=1 period_ms=1"),
    ])
    .channel(RawChannel::queuing("q", "src", "dst", 16, 4))
    .channel(RawChannel::sampling("s", "src", &["dst"], 16, 100_000));
    let boot = boot_with("qemu-port-refusals", &config, wall(HANG_LIMIT));
    assert_powered_off(&boot);
    assert_line(
        &boot,
        "src",
        "port: source send 0, too long -8, outside ram -11, straddling -11, receive -3, sample 0, no channel -2, ring -2",
    );
    assert_line(
        &boot,
        "dst",
        "port: destination small -9 needs 16, outside ram -11, receive 0 len 16 left 0 seq 1, empty -7, timeout -10, send -3",
    );
    assert_line(
        &boot,
        "other",
        "port: other send -3, receive -3, info -3, sample send -3, sample receive -3, no channel -2, ring -3",
    );
    let hm = hm_log("qemu-port-refusals");
    let illegal = |name: &str| hm_entries(&hm, &[&format!("partition {name} vcpu 0 IllegalHypercall")]);
    assert_eq!(illegal("other").len(), 7, "every call of the stranger is an event:\n{hm}");
    assert!(illegal("other").iter().all(|l| l.ends_with("action Log")), "{hm}");
    // The wrong direction, the missing channel and the ring on a queue.
    assert!(illegal("src").len() >= 3, "{hm}");
    assert!(!illegal("dst").is_empty(), "the destination's send:\n{hm}");
    assert_state_check_ok(&boot);
}

/// `wd` kicks its 100 ms watchdog every 20 ms ten times, then stops: the
/// watchdog expires, the health monitor restarts it, and it comes back and
/// kicks again, over and over, until `bystander` is done. `bystander`, a
/// 20 Hz timer on a pCPU of its own, keeps its rhythm all along. So does
/// `neighbour`, on `wd`'s pCPU at a higher priority: the reload runs in
/// `wd`'s time, a bounded step at a time, so it never holds the neighbour
/// back by more than a step. Wall clock: under -icount QEMU's round robin,
/// not Partita, would decide when the other pCPU's timer is served while
/// pCPU 1 reloads.
#[test]
fn an_expired_watchdog_restarts_its_partition_and_others_keep_time() {
    // Slow enough that a busy host's scheduling does not make a tick late.
    const TIMER_HZ: u64 = 20;
    const TIMER_TICKS: u64 = 60;
    let restart = RawHealth { watchdog: Some(RawAction::Restart), ..RawHealth::default() };
    let wd = part("wd", &[1], "watchdog-kicks=10 kick_ms=20 until-off=2").watchdog_us(100_000).health(restart);
    let timer = format!("timer_hz={TIMER_HZ} timer_ticks={TIMER_TICKS} ticks=1 period_ms=1");
    // Traced, so that a run that goes wrong can be looked at afterwards.
    let config = machine([wd, part("neighbour", &[1], &timer).priority(200), part("bystander", &[2], &timer)]);
    let boot = boot_with("qemu-watchdog", &config.trace(65536), wall(HANG_LIMIT));
    assert_powered_off(&boot);
    let log = boot.log("wd");
    let greetings = log.lines().filter(|l| l.starts_with("hello from partition wd")).count();
    assert!(greetings >= 2, "{greetings} boots of wd:\n{}", lines(&boot, "wd"));
    let kicked = log.lines().filter(|l| *l == "watchdog: kicked 10 times every 20 ms, 0 failed; stopping").count();
    assert!(kicked >= 2, "wd did not kick again after a restart:\n{}", lines(&boot, "wd"));
    let first = line(&boot, "wd", "watchdog: kick 0, deadline ");
    let (from_call, from_return) = (number_after(first, "deadline"), number_after(first, "call"));
    assert!(from_call >= 99_999 && from_return <= 100_000, "the deadline is not one period after the kick: {first}");
    assert!(boot.hypervisor.contains("partition wd restarting"), "{}", boot.hypervisor);
    let hm = hm_log("qemu-watchdog");
    let expired = hm_entries(&hm, &["partition wd vcpu 0 WatchdogExpired"]);
    assert!(expired.len() + 1 >= greetings, "{} expiries for {greetings} boots:\n{hm}", expired.len());
    assert!(expired.iter().all(|l| l.ends_with("action Restart")), "{hm}");
    for name in ["neighbour", "bystander"] {
        assert_eq!(timer_counts(boot.log(name)).0, TIMER_TICKS, "{}", lines(&boot, name));
        println!("{name}: {}", line(&boot, name, "timer latency: "));
    }
    let period = 1000 / TIMER_HZ * TICKS_PER_MS;
    for name in ["neighbour", "bystander"] {
        let latency = line(&boot, name, "timer latency: ");
        assert!(number_after(latency, "max") <= 2 * period, "{name}: a tick more than two periods late: {latency}");
    }
    assert!(
        hm_entries(&hm, &["partition neighbour"]).is_empty() && hm_entries(&hm, &["partition bystander"]).is_empty(),
        "{hm}"
    );
}

/// A million random hypercalls (fixed seed) from a partition on channels
/// of every kind, its illegal calls and reports ignored by its policy,
/// while a counting partition ticks on. The fuzzer finishes and powers off,
/// the counter follows, and Partita's own state checks pass.
#[test]
fn a_million_random_hypercalls_leave_partita_sound() {
    const CALLS: u64 = 1_000_000;
    let ignore = RawHealth {
        illegal_hypercall: Some(RawAction::Ignore),
        reported: Some(RawAction::Ignore),
        ..RawHealth::default()
    };
    let config = machine([
        part("fuzzer", &[1], &format!("fuzz={CALLS} fuzz_seed=20261122 ticks=1 period_ms=1")).health(ignore),
        part("counter", &[2], "until-off=0 ticks=0 period_ms=50"),
    ])
    .channel(RawChannel::queuing("out", "fuzzer", "counter", 64, 8))
    .channel(RawChannel::queuing("in", "counter", "fuzzer", 64, 8))
    .channel(RawChannel::sampling("state", "fuzzer", &["counter"], 32, 10_000))
    .channel(RawChannel::shared_memory("window", &["fuzzer", "counter"], 0x7000_0000, 64 << 10).doorbell(48));
    let boot = boot_with("qemu-fuzz", &config, wall(HANG_LIMIT));
    assert_powered_off(&boot);
    let done = line(&boot, "fuzzer", "fuzz: 1000000 calls in ");
    assert!(done.ends_with("seed 20261122, guards intact"), "{done}");
    println!("{done}");
    for status in boot.log("fuzzer").lines().filter(|l| l.starts_with("fuzz: status") || l.starts_with("fuzz: other")) {
        println!("{status}");
    }
    // The counter ticked all the while the fuzzer ran, not just before or after.
    let (from, to) = (boot.position("[fuzzer] fuzz: 100000 calls"), boot.position("[fuzzer] fuzz: 1000000 calls in"));
    let during = boot.console[from..to].iter().filter(|l| l.starts_with("[counter] tick ")).count();
    assert!(during >= 3, "the counter ticked {during} times during the fuzzing:\n{}", boot.console.join("\n"));
    assert!(boot.log("counter").lines().any(|l| l.starts_with("tick ")), "{}", lines(&boot, "counter"));
    assert_state_check_ok(&boot);
}

/// A system partition with `read-hm-log` reads the log once `reporter` has
/// reported error 42 and `nosy` (without the right) has been refused the
/// same read: both events are there, with their partition, event and code.
#[test]
fn a_system_partition_reads_the_health_monitor_log() {
    let config = machine([
        part("sys", &[1], "hm-read=2 ticks=1 period_ms=1").rights(&[RawRight::ReadHmLog]),
        part("reporter", &[2], "hm-report=42 ticks=1 period_ms=1"),
        part("nosy", &[3], "hm-read=1 ticks=1 period_ms=1"),
    ]);
    let boot = boot_with("qemu-hm-read", &config, wall(HANG_LIMIT));
    assert_powered_off(&boot);
    assert_line(&boot, "nosy", "hm-read: status -3, 0 records, next 0, lost 0");
    assert_line(&boot, "reporter", "hm-report: 0");
    let summary = line(&boot, "sys", "hm-read: status ");
    assert!(summary.starts_with("hm-read: status 0, "), "{summary}");
    let records: Vec<&str> = boot.log("sys").lines().filter(|l| l.starts_with("hm-read: seq ")).collect();
    assert!(records.len() >= 2, "{}", lines(&boot, "sys"));
    assert!(
        records.iter().any(|l| l.contains("partition 1 vcpu 0 event 5 action 1 code 42 detail 0x2a")),
        "no record of the report: {records:#?}"
    );
    assert!(
        records.iter().any(|l| l.contains("partition 2 vcpu 0 event 2 action 1 ") && l.ends_with("detail 0xc6000042")),
        "no record of the refused read: {records:#?}"
    );
    assert_line(&boot, "sys", "hm-read: misaligned -2, outside ram -11");
    let hm = hm_log("qemu-hm-read");
    assert_eq!(hm_entries(&hm, &["partition reporter vcpu 0 Reported(42)"]).len(), 1, "{hm}");
    assert_eq!(hm_entries(&hm, &["partition nosy vcpu 0 IllegalHypercall"]).len(), 1, "{hm}");
    assert_state_check_ok(&boot);
}
