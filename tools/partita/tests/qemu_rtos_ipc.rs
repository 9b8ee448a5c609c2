//! Two partitions of the guest RTOS talk over queuing ports through its
//! Partita library (`guests/rtos/include/rtos_partita.h`, `bench=` replaced
//! by `ipc=ping|pong`): every message comes back intact, the ports' edges
//! answer as the ABI says, a task that kicks the watchdog keeps its
//! partition alive while the partition that never kicks is reported, and a
//! partition with `read-hm-log` finds its own report in the log. A
//! doorbell rung long before its peer attaches to it still reaches it, and
//! the words left in the shared window before each ring are read back. Both
//! find their channels by name in their device trees.

mod common;

use common::*;
use partita::config::raw::{RawAction, RawChannel, RawHealth, RawPartition, RawRight};
use partita::guests;

const ROUND_TRIPS: u32 = 100;
const REPORT_CODE: u32 = 4242;
const BELL_INTID: u32 = 48;

fn rtos_part(name: &str, cpu: u32, bootargs: &str) -> RawPartition {
    RawPartition::new(name, &[cpu]).bootargs(bootargs).memory(RAM_BASE, RAM_SIZE).elf(&guests::image("rtos.elf"))
}

fn queue(name: &str, source: &str, destination: &str) -> RawChannel {
    RawChannel::queuing(name, source, destination, 64, 4)
}

/// The line `ipc <role>: <n> passed, <m> failed` -> (n, m).
fn summary(log: &str, role: &str) -> (u32, u32) {
    let prefix = format!("ipc {role}: ");
    let line = log
        .lines()
        .find(|l| l.starts_with(&prefix) && l.contains(" passed, "))
        .unwrap_or_else(|| panic!("no {role} summary in\n{log}"));
    let words: Vec<&str> = line[prefix.len()..].split_whitespace().collect();
    (words[0].parse().unwrap(), words[2].parse().unwrap())
}

#[test]
fn rtos_partitions_exchange_messages_and_kick_their_watchdog() {
    // 100 Hz ticks: ping kicks every 50 ms against a 1 s watchdog (QEMU's
    // vCPUs may stall on a loaded host while the counter runs on) and stays
    // up 3 s after the exchange, so kicks that did not count would halt it
    // (the default action). Pong never kicks and only logs.
    let ping_args =
        format!("ipc=ping ipc_tx=0 ipc_rx=1 ipc_count={ROUND_TRIPS} ipc_kick=5 ipc_hold=300 ipc_report={REPORT_CODE} ipc_bell=1");
    let pong_args = format!("ipc=pong ipc_tx=1 ipc_rx=0 ipc_count={ROUND_TRIPS} ipc_hold=30 ipc_bell=1");
    let log = RawHealth { watchdog: Some(RawAction::Log), ..RawHealth::default() };
    let config = machine([
        rtos_part("ping", 1, &ping_args).watchdog_us(1_000_000).rights(&[RawRight::ReadHmLog]),
        rtos_part("pong", 2, &pong_args).watchdog_us(100_000).health(log),
    ])
    .channel(queue("requests", "ping", "pong"))
    .channel(queue("replies", "pong", "ping"))
    .channel(RawChannel::shared_memory("bell", &["ping", "pong"], 0x5000_0000, 4096).doorbell(BELL_INTID));
    let boot = boot("qemu-rtos-ipc", &config, HANG_LIMIT);
    assert_powered_off(&boot);

    let ping = boot.log("ping");
    let (passed, failed) = summary(ping, "ping");
    assert_eq!(failed, 0, "{ping}");
    assert!(passed >= 15, "only {passed} checks ran:\n{ping}");
    let round_trips = format!("ipc ping: {ROUND_TRIPS} round trips in ");
    for expected in [
        round_trips.as_str(),
        "ipc ping: channel 0 kind 1 max 64 depth 4",
        "ipc ping: small buffer ok",
        "ipc ping: round trips ok",
        "ipc ping: full queue ok",
        "ipc ping: watchdog kicks ok",
        "ipc ping: hm read ok",
        "ipc ping: bell ring ok",
        "ipc ping: doorbell from pong ok",
        "ipc ping: find tx ok",
        "ipc ping: find rx ok",
        "ipc ping: find unknown ok",
        "ipc ping: bell info ok",
    ] {
        assert!(ping.lines().any(|l| l.starts_with(expected)), "missing {expected:?}:\n{ping}");
    }
    let own_report = format!("reported action log code {REPORT_CODE}");
    assert!(ping.lines().any(|l| l.starts_with("ipc ping: hm seq ") && l.contains(&own_report)), "{ping}");

    let pong = boot.log("pong");
    assert_eq!(summary(pong, "pong").1, 0, "{pong}");
    let echoed = format!("ipc pong: {ROUND_TRIPS} echoed");
    assert!(pong.lines().any(|l| l == echoed), "{pong}");
    let bell = format!("ipc pong: bell is channel 2 at 0x50000000, doorbell {BELL_INTID}");
    for expected in [
        "ipc pong: denied ok",
        "ipc pong: find tx ok",
        "ipc pong: find rx ok",
        bell.as_str(),
        "ipc pong: doorbell rung before attach ok",
        "ipc pong: bell ring ok",
    ] {
        assert!(pong.lines().any(|l| l == expected), "missing {expected:?}:\n{pong}");
    }

    let hm = hm_log("qemu-rtos-ipc");
    let has = |partition: &str, event: &str, action: &str| {
        hm.lines().any(|l| l.contains(&format!("partition {partition} vcpu 0 {event}")) && l.ends_with(action))
    };
    assert!(
        !hm.lines().any(|l| l.contains("partition ping") && l.contains("Watchdog")),
        "ping's watchdog expired:\n{hm}"
    );
    assert!(has("pong", "Watchdog", "action Log"), "pong never kicked, yet no watchdog event:\n{hm}");
    assert!(has("pong", "IllegalHypercall", "action Log"), "pong's send on a channel it reads:\n{hm}");
    assert!(has("ping", &format!("Reported({REPORT_CODE})"), "action Log"), "{hm}");
}
