//! Real boots of the guest RTOS running every benchmark briefly, natively
//! and under Partita (alone, and sharing its pCPU with a busy partition):
//! every self-check passes and `partita bench`'s report reads the output.
//! Nothing here is about speed.

mod common;

use partita::bench::rtos::parse::Check;
use partita::bench::rtos::report::Report;
use partita::bench::rtos::setups::{self, boots, BootSpec, Capture, Machine, Run};
use partita::bench::rtos::{Options, Queue, Setup, Suite};
use partita::bench::Pass;
use partita::paths;

/// Logs in `out/bench/qemu-rtos/`, the report in `target/qemu-rtos/`: a
/// test run never overwrites the report of a real one.
const LOGS: &str = "qemu-rtos";
/// Short enough to keep the test well under a minute, long enough for
/// every Thread-Metric test to count a few thousand events.
const PERIOD_MS: u32 = 200;

fn boot_all(machine: &Machine, setup: Setup) -> Vec<(BootSpec, Capture)> {
    boots(Suite::All, PERIOD_MS, PERIOD_MS)
        .into_iter()
        .map(|spec| {
            let variant = format!("{}-{}", setup.name(), spec.label);
            let limit = setups::time_limit(spec.guest_ms);
            let capture = machine.boot(setup, &variant, &spec.bootargs, None, limit).expect("booting QEMU");
            (spec, capture)
        })
        .collect()
}

#[test]
fn every_benchmark_passes_its_self_check_natively_and_under_partita() {
    common::source_out();
    let machine = Machine::new(LOGS).expect("building the guests and the hypervisor");
    let mut runs = Vec::new();
    for setup in [Setup::Native, Setup::Alone, Setup::Shared] {
        let captured = boot_all(&machine, setup);
        for (spec, capture) in &captured {
            assert!(capture.failure.is_none(), "{setup:?} {}: {:?}\n{}", spec.label, capture.failure, capture.text);
        }
        let run = Run::from_captures(Pass::WALL, setup, 1, &captured);
        assert_eq!(run.problems, Vec::<String>::new(), "{setup:?}");
        let output = &run.output;
        assert_eq!(output.tm.len(), 10, "{setup:?}: {output:?}");
        assert!(output.tm.iter().all(|t| t.check == Check::Ok && t.events > 0), "{setup:?}: {:?}", output.tm);
        assert_eq!(output.coremark.len(), 1, "{setup:?}");
        assert_eq!(output.coremark[0].check, Check::Ok, "{setup:?}");
        for queue in Queue::ALL {
            let lines = output.schedprio.iter().filter(|p| p.queue == queue).count();
            assert_eq!(lines, 31, "{setup:?} {queue:?}: {:?}", output.schedprio);
        }
        assert_eq!(output.done, 2, "{setup:?}");
        runs.push(run);
    }
    let opts = Options { runs: 1, period_ms: PERIOD_MS, coremark_ms: PERIOD_MS, ..Options::new(Suite::All) };
    let report = Report::new(&opts, "test", runs);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    for setup in [Setup::Alone, Setup::Shared] {
        for score in report.scores.iter().filter(|s| s.setup == setup) {
            let rp = score.rp.unwrap_or_else(|| panic!("no R_P for {score:?}"));
            assert!(rp.is_finite() && rp > 0.0, "{score:?}");
        }
    }
    let dir = paths::scratch(LOGS);
    let written = report.write(&dir).expect("writing the report");
    assert_eq!(written.len(), 3);
    println!("{}", report.table());
}

/// The kernel's own tests in QEMU (preemption, suspend/resume, yield, round
/// robin, sleep, the tick's deadline, semaphores, queues, pools, SGIs, svc,
/// task exit), natively and as a partition. The selftest powers off instead
/// of printing `bench done`, so the boot ends "early" by design; its summary
/// line decides.
/// Guest time for the selftest: its sleep and round-robin checks count
/// ticks against the counter, which a busy host would make late.
const SELFTEST_ICOUNT: u32 = 4;

#[test]
fn the_kernel_selftest_passes_natively_and_under_partita() {
    common::source_out();
    let machine = Machine::new(LOGS).expect("building the guests and the hypervisor");
    for setup in [Setup::Native, Setup::Alone] {
        let capture = machine
            .boot(
                setup,
                &format!("{}-selftest", setup.name()),
                "bench=selftest",
                Some(SELFTEST_ICOUNT),
                std::time::Duration::from_secs(60),
            )
            .expect("booting QEMU");
        let summary = capture.text.lines().find(|l| l.contains("selftest: ") && l.contains(" passed, "));
        let summary = summary.unwrap_or_else(|| panic!("{setup:?}: no selftest summary in\n{}", capture.text));
        assert!(summary.ends_with(" passed, 0 failed"), "{setup:?}: {summary}\n{}", capture.text);
        let passed: u32 =
            summary.split("selftest: ").nth(1).and_then(|s| s.split(' ').next()).and_then(|n| n.parse().ok()).unwrap();
        assert!(passed >= 10, "{setup:?}: only {passed} selftests ran");
    }
}
