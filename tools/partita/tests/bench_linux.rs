//! `partita bench linux` runs, small: one RTOS share, the `-icount` pass
//! only. Its report and chart are written and say what was measured.
//! Nothing here is about speed.

mod common;

use partita::bench::linux::{self, Options, Setup};

/// Its own name, so a test run never overwrites the report of a real one.
const NAME: &str = "linux-test";

#[test]
fn the_benchmark_measures_every_setup_and_writes_its_report() {
    common::source_out();
    let opts = Options { runs: 1, per_boot: 2, fractions: vec![50], shift: 0, wall: false, name: NAME.to_string() };
    let report = linux::run(&opts).expect("the benchmark runs");
    let [pass] = &report.passes[..] else { panic!("one pass: {report:?}") };
    let setups: Vec<Setup> = pass.points.iter().map(|p| p.setup).collect();
    assert_eq!(setups, linux::setups(&[50]));
    for point in &pass.points {
        assert!(point.time > 0.0 && point.time.is_finite(), "{point:?}");
        assert_eq!(point.samples, 2, "{point:?}");
    }
    let activation = pass.activation.expect("the traced boot of the -icount pass");
    assert!(activation.samples > 100, "{activation:?}");
    assert!(activation.rtos_us > 0.0 && activation.away_us > activation.rtos_us, "{activation:?}");
    assert_eq!(pass.points[0].loss, 0.0, "native is the reference");
    for latency in [pass.cyclictest_native, pass.cyclictest_partita] {
        assert!(latency.min <= latency.avg && latency.avg <= latency.max, "{latency:?}");
    }
    let written = linux::write(&report, NAME).expect("the report is written");
    let markdown = std::fs::read_to_string(linux::markdown_path(&written).expect("a markdown report")).unwrap();
    assert!(markdown.contains("| RTOS 50 %, migration |"), "{markdown}");
    assert!(markdown.contains("| RTOS 0 %, own pCPU |"), "{markdown}");
    assert!(markdown.contains("Partita's switches take"), "{markdown}");
    assert!(markdown.contains("## Boot to /init"), "{markdown}");
    assert!(pass.points.iter().all(|p| p.boot > 0.0), "every boot timed to /init");
    let chart = written.iter().find(|p| p.to_string_lossy().ends_with("-fig8-icount0.svg")).expect("the chart");
    let chart = std::fs::read_to_string(chart).unwrap();
    assert!(chart.contains("<svg"));
    println!("{}", report.table());
}
