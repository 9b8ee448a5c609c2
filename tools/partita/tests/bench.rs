//! `partita bench irq-latency` runs and its report parses. Nothing here is
//! about speed: the numbers depend on the host.

mod common;

use partita::bench::irq_latency::{self, Options, Report, Row, Setup};
use partita::bench::{stats, Board, Mode};
use partita::paths;

/// Its own name, so a test run never overwrites the report of a real one.
const NAME: &str = "irq-latency-test";

#[test]
fn the_benchmark_runs_and_its_report_parses() {
    common::source_out();
    let opts = Options { runs: 1, samples: 20, icount: Some(4), name: NAME.to_string(), boards: vec![Board::QemuVirt] };
    let returned = irq_latency::run(&opts).expect("the benchmark runs");
    let dir = paths::bench_out(NAME);
    let json = std::fs::read_to_string(dir.join("report.json")).expect("report.json is written");
    let report: Report = serde_json::from_str(&json).expect("report.json parses");
    assert_eq!(report, returned);
    assert_eq!((report.runs, report.samples, report.icount_shift), (1, 20, Some(4)));
    assert!(report.counter_hz > 0);
    for mode in [Mode::Wall, Mode::Icount] {
        for setup in Setup::ALL {
            let row = report.rows.iter().find(|r| r.mode == mode && r.setup == setup);
            check_row(row.unwrap_or_else(|| panic!("no {mode:?} {setup:?} row in {json}")));
        }
    }
    let markdown = std::fs::read_to_string(dir.join("report.md")).expect("report.md is written");
    assert_eq!(markdown.lines().filter(|l| l.starts_with("| wall |") || l.starts_with("| icount 4 |")).count(), 10);
    println!("{}", report.table());
}

fn check_row(row: &Row) {
    let ticks = [row.min_ticks, row.mean_ticks, row.max_ticks];
    let us = [row.min_us, row.mean_us, row.max_us];
    for values in [ticks, us] {
        assert!(values.iter().all(|v| v.is_finite() && *v >= 0.0), "{row:?}");
        assert!(values[0] <= values[1] && values[1] <= values[2], "not min <= mean <= max: {row:?}");
    }
    assert!(row.mean_over_native.is_none_or(|r| r.is_finite() && r >= 0.0), "{row:?}");
    assert_eq!(row.runs.len(), 1, "{row:?}");
    for run in &row.runs {
        assert!(run.n + run.missed == 20 && run.min <= run.mean && run.mean <= run.max, "{run:?}");
        assert_eq!(run.hist.len(), 16, "{run:?}");
        assert_eq!(run.hist.iter().sum::<u64>(), run.n, "{run:?}");
    }
}

#[test]
fn a_guest_report_is_read_whole() {
    let text = "timer latency: min 9 mean 9 max 9 counts (cntfrq 62500000)\n\
                irq-bench: n 18 min 3 mean 5 max 40 counts\n\
                irq-bench hist: 10 5 0 0 0 0 0 0 0 0 0 0 0 0 0 3\n\
                irq-bench: 2 missed\n";
    let sample = irq_latency::parse_sample(text).unwrap();
    assert_eq!((sample.n, sample.min, sample.mean, sample.max, sample.missed), (18, 3, 5, 40, 2));
    assert_eq!(sample.counter_hz, 62_500_000);
    assert_eq!(sample.hist.len(), 16);
    assert!(irq_latency::parse_sample("irq-bench: n 0, 20 missed\n").is_err());
}

#[test]
fn medians_of_odd_and_even_counts() {
    assert_eq!(stats::median(vec![5.0, 1.0, 3.0]), 3.0);
    assert_eq!(stats::median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
}
