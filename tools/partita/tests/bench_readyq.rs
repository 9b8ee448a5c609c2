//! `partita bench ready-queue` runs and its report holds both curves at
//! every measured priority. Nothing here is about speed: the numbers depend
//! on the host and, under `cargo test`, on a debug build.

mod common;

use partita::bench::ready_queue::{self, Options, Report};
use partita::paths;

/// Its own name, so a test run never overwrites the report of a real one.
const NAME: &str = "ready-queue-test";

#[test]
fn the_benchmark_reports_both_curves_at_every_priority() {
    common::source_out();
    let opts = Options { batches: 3, ops: 50, name: NAME.to_string() };
    let report = ready_queue::run(&opts).expect("the benchmark runs");
    let priorities = ready_queue::priorities();
    assert_eq!((priorities.first(), priorities.last()), (Some(&0), Some(&255)));
    check_rows(&report, &priorities);

    let dir = paths::bench_out(NAME);
    let markdown = std::fs::read_to_string(dir.join("report.md")).expect("report.md is written");
    for &priority in &priorities {
        let (bitmap, linear) = markdown_row(&markdown, priority);
        assert!(bitmap.is_finite() && linear.is_finite(), "priority {priority} in\n{markdown}");
    }
    let svg = std::fs::read_to_string(dir.join("curve.svg")).expect("curve.svg is written");
    assert!(svg.starts_with("<svg") && svg.contains("linear scan") && svg.contains("bitmap"), "{svg}");
    assert_eq!(svg.matches("<circle").count(), 2 * priorities.len(), "one marker per curve and priority");
    println!("{}", report.table());
}

fn check_rows(report: &Report, priorities: &[u8]) {
    assert_eq!((report.batches, report.ops), (3, 50));
    let measured: Vec<u8> = report.rows.iter().map(|row| row.priority).collect();
    assert_eq!(measured, priorities);
    for row in &report.rows {
        assert!(row.bitmap_ns.is_finite() && row.bitmap_ns >= 0.0, "{row:?}");
        assert!(row.linear_ns.is_finite() && row.linear_ns >= 0.0, "{row:?}");
        assert!(row.ratio().is_none_or(|r| r.is_finite() && r >= 0.0), "{row:?}");
    }
}

/// The bitmap and linear columns of the table row for `priority`.
fn markdown_row(markdown: &str, priority: u8) -> (f64, f64) {
    let prefix = format!("| {priority} |");
    let line = markdown.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no row {priority}"));
    let cells: Vec<&str> = line.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
    let number = |i: usize| cells[i].parse::<f64>().unwrap_or_else(|_| panic!("not a number in {line}"));
    (number(1), number(2))
}
