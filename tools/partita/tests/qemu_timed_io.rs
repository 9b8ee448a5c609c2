//! Timed outputs in QEMU: a partition asks for GPIO writes at counter
//! values and reads the lines back through its read-only view of the
//! PL061 just before and after each; a periodic pair makes a square wave;
//! every refusal comes back with its status; a second partition can drive
//! the first one's lines neither by call nor by store, and its burst of
//! requests is bounded by its queue without touching the first one's
//! timing. The error E of every output is read back from the trace: at
//! most 1 counter tick under `-icount`, printed under wall-clock time.

mod common;

use common::*;
use partita::config::raw::RawTimedIo;
use partita::run::RunOptions;
use partita::trace::read_file;
use partita::trace::timed_io::{errors_per_partition, operations, Errors};

/// QEMU `virt`'s PL061, mapped read-only where the guests read it.
const PL061: u64 = 0x0903_0000;
/// How early Partita's timer fires before an output.
const LEAD_US: u64 = 20;
const EVENTS: u32 = 65_536;

/// `-icount shift=0`: 16 instructions per counter tick, so the last
/// stretch of polling fits in one.
fn icount(seconds: u64) -> RunOptions {
    RunOptions { seconds: Some(seconds), icount: Some(0), ..RunOptions::default() }
}

fn wall(seconds: u64) -> RunOptions {
    RunOptions { seconds: Some(seconds), ..RunOptions::default() }
}

fn line<'a>(boot: &'a Boot, name: &str, prefix: &str) -> &'a str {
    let log = boot.log(name);
    log.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in {name}:\n{log}\nhypervisor:\n{}", boot.hypervisor))
}

/// Each partition's errors from the run's trace, by name.
fn trace_errors(name: &str) -> Vec<(String, Errors)> {
    let (meta, trace) = read_file(&out_dir(name).join("trace.bin")).expect("the trace parses");
    assert!(trace.lost.iter().all(|&n| n == 0), "lost events: {:?}", trace.lost);
    // Nothing granted: these runs keep the other pCPUs asleep while outputs are due.
    let errors = errors_per_partition(&operations(&trace), |_| None);
    errors.into_iter().map(|e| (meta.partitions[usize::from(e.partition)].clone(), e)).collect()
}

fn errors_of<'a>(all: &'a [(String, Errors)], name: &str) -> &'a Errors {
    &all.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no outputs of {name} in {all:?}")).1
}

/// One partition on pCPU 1 with lines 0 and 1: 20 outputs read back, a
/// wave of 10 half-periods, the refusals.
fn reader(outputs: u64) -> partita::config::raw::RawConfig {
    let args = format!("tio={outputs} tio_pins=3 tio_gap_us=500 tio-wave=10 tio-status=1 ticks=1 period_ms=1");
    machine([part("io", &[1], &args)])
        .timed_io(RawTimedIo::with_lead(LEAD_US).grant("io", &[0, 1], 16, Some(PL061)))
        .trace(EVENTS)
}

#[test]
fn outputs_change_the_lines_on_time_within_one_tick_under_icount() {
    let boot = boot_with("qemu-tio-icount", &reader(20), icount(HANG_LIMIT));
    assert_powered_off(&boot);
    let check = line(&boot, "io", "tio: 20 outputs");
    assert!(check.contains("20 on time, 0 early, 0 late, 0 refused"), "{check}");
    let wave = line(&boot, "io", "tio wave:");
    assert!(wave.contains("10 right (high 0, low 0); cancel 0 dropped 2"), "{wave}");
    let status = line(&boot, "io", "tio status:");
    assert_eq!(
        status, "tio status: past -12, too far -13, foreign pins -3, no pins -3, wide mask -2, short period -2",
        "each refusal has its own status"
    );
    let errors = trace_errors("qemu-tio-icount");
    let io = errors_of(&errors, "io");
    eprintln!("E under -icount: {io:?}");
    // 20 read back, the wave's edges up to its cancel.
    assert!(io.count >= 30, "{io:?}");
    assert!(io.max <= 1, "E over one tick under -icount: {io:?}");
    let stats = line(&boot, "io", "tio: stats 0: done 20,");
    assert!(stats.contains("max E 0 ticks") || stats.contains("max E 1 ticks"), "{stats}");
}

#[test]
fn outputs_under_wall_clock_are_all_done_and_their_error_printed() {
    let boot = boot_with("qemu-tio-wall", &reader(20), wall(HANG_LIMIT));
    assert_powered_off(&boot);
    let errors = trace_errors("qemu-tio-wall");
    let io = errors_of(&errors, "io");
    eprintln!("E under wall clock: {} outputs, max {} ticks, mean {:.2} ticks", io.count, io.max, io.mean);
    eprintln!("{}", line(&boot, "io", "tio: 20 outputs"));
    // Under wall-clock time a late wake-up may leave the next request
    // too late to be taken (ELATE); every one taken is done, late or not.
    let stats = line(&boot, "io", "tio: stats 0: done ");
    let done: u64 = stats["tio: stats 0: done ".len()..].split(',').next().unwrap().parse().unwrap();
    assert!(done > 0 && io.count as u64 >= done, "{stats}; trace: {io:?}");
}

/// "io" on pCPU 1 owns line 0 and reads it back 40 times. "noisy" on pCPU
/// 2 owns lines 1 and 2 with a queue of 8: it tries line 0 by call and by
/// a store through its read-only view, then asks for 40 outputs at once.
/// "outsider" on pCPU 3 has no grant and no view.
#[test]
fn other_partitions_cannot_drive_the_lines_and_a_burst_is_bounded() {
    let timed_io =
        RawTimedIo::with_lead(LEAD_US).grant("io", &[0], 16, Some(PL061)).grant("noisy", &[1, 2], 8, Some(PL061));
    let config = machine([
        // Under -icount a busy vCPU can hold up another's timer (see
        // docs/architecture.md): the outputs start once the others have
        // booted, and "noisy" sleeps until "io" is done, but its eight
        // outputs fall among those of "io".
        part("io", &[1], "tio=40 tio_pins=1 tio_gap_us=400 tio_at_ms=250 ticks=1 period_ms=1"),
        part("noisy", &[2], "tio-attack=0 tio-burst=40 tio_pins=2 tio_gap_us=400 tio_at_ms=250 ticks=1 period_ms=1"),
        part("outsider", &[3], "tio-attack=0 ticks=1 period_ms=1"),
    ])
    .timed_io(timed_io)
    .trace(EVENTS);
    let boot = boot_with("qemu-tio-isolation", &config, icount(HANG_LIMIT));
    assert_powered_off(&boot);
    for name in ["noisy", "outsider"] {
        let attack = line(&boot, name, "tio attack:");
        assert_eq!(attack, "tio attack: pin 0 call -3, store faulted EC 0x25 FSC 0x10", "{name}");
    }
    let burst = line(&boot, "noisy", "tio burst: 40 asked");
    assert_eq!(burst, "tio burst: 40 asked, 8 taken, 32 full, 0 other");
    let done = line(&boot, "noisy", "tio burst: stats");
    assert!(done.starts_with("tio burst: stats 0: done 8,"), "{done}");
    let check = line(&boot, "io", "tio: 40 outputs");
    assert!(check.contains("40 on time, 0 early, 0 late, 0 refused"), "{check}");
    let errors = trace_errors("qemu-tio-isolation");
    let (io, noisy) = (errors_of(&errors, "io"), errors_of(&errors, "noisy"));
    eprintln!("E under -icount beside a burst: io {io:?}, noisy {noisy:?}");
    assert_eq!((io.count, noisy.count), (40, 8));
    assert!(io.max <= 1 && noisy.max <= 1, "io {io:?}, noisy {noisy:?}");
    assert!(errors.iter().all(|(name, _)| name != "outsider"));
    // The refused calls are illegal hypercalls to the health monitor; the
    // stores, stage-2 faults given back to the guests.
    for name in ["noisy", "outsider"] {
        let events: Vec<&str> =
            boot.hypervisor.lines().filter(|l| l.contains(&format!("partition {name} vcpu 0"))).collect();
        assert!(events.iter().any(|l| l.contains("IllegalHypercall")), "{name}: {events:?}");
        assert!(events.iter().any(|l| l.contains("Stage2Fault")), "{name}: {events:?}");
    }
}

/// `partita bench timed-io`, small: both setups, both passes, every output
/// in the report, and the -icount rows within one tick.
#[test]
fn the_benchmark_reports_every_output_of_every_pass() {
    use partita::bench::timed_io::{self, Options, SETUPS};
    use partita::bench::Mode;
    source_out();
    let opts = Options { runs: 1, outputs: 20, shift: 0, lead_us: LEAD_US, name: "timed-io-test".into() };
    let report = timed_io::run(&opts).expect("the benchmark runs");
    assert_eq!(report.passes.len(), 2 * SETUPS.len());
    for errors in &report.passes {
        assert!(!errors.ticks.is_empty() && errors.ticks.len() <= 20, "{:?}", errors.ticks);
        if errors.pass.mode == Mode::Icount {
            assert_eq!(errors.ticks.len(), 20, "{}: every output taken and done", errors.setup);
            assert!(errors.ticks.iter().all(|&e| e <= 1), "{}: {:?}", errors.setup, errors.ticks);
        }
    }
    let written = timed_io::write(&report, &opts.name).expect("the report is written");
    let markdown = std::fs::read_to_string(&written).unwrap();
    assert_eq!(markdown.lines().filter(|l| l.starts_with("| alone |") || l.starts_with("| beside")).count(), 4);
    print!("{}", report.table().terminal());
}
