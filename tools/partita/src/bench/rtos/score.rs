//! From runs to figures: the median score of each test in each pass and
//! setup, R_P = S_vm / S_native against the native score of the same pass,
//! and the scheduler probe's median switch cost per priority.

use super::parse::Check;
use super::report::Report;
use super::setups::Run;
use super::{Options, Queue, Setup, KER_ONE_RP, TARGET_COREMARK_LOSS, TARGET_RP, TARGET_RP_INTERRUPT};
use crate::bench::stats::median;
use crate::bench::Pass;
use serde::{Deserialize, Serialize};

/// One test in one pass and setup: the median score over the runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub pass: Pass,
    pub setup: Setup,
    /// `tm3 interrupt`, `coremark`.
    pub test: String,
    /// Events per period, or CoreMark iterations per second.
    pub score: f64,
    /// S_vm / S_native in %; `None` natively or without a native score.
    pub rp: Option<f64>,
    /// A run's self-check of this test failed.
    pub failed: bool,
}

/// One priority of the scheduler probe: median switch cost in counter ticks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub pass: Pass,
    pub setup: Setup,
    pub queue: Queue,
    pub priority: u32,
    pub ticks: f64,
}

/// The R_P a test should reach, in %: Thread-Metric's interrupt tests
/// (the SVC variants included, which never leave the guest) get the lower
/// target, CoreMark the loss target.
pub fn target(test: &str) -> f64 {
    if test == "coremark" {
        100.0 - TARGET_COREMARK_LOSS
    } else if test.contains("interrupt") {
        TARGET_RP_INTERRUPT
    } else {
        TARGET_RP
    }
}

/// Ker-ONE's R_P for a test, where it ran it.
pub fn ker_one(test: &str) -> Option<f64> {
    let name = test.split_once(' ').map_or(test, |(_, name)| name);
    KER_ONE_RP.iter().find(|(n, _)| *n == name).map(|(_, rp)| *rp)
}

/// S_vm / S_native in %, `None` without a native score.
pub fn rp(vm: f64, native: f64) -> Option<f64> {
    (native > 0.0).then(|| 100.0 * vm / native)
}
impl Report {
    pub fn new(opts: &Options, date: &str, runs: Vec<Run>) -> Self {
        let passes = opts.passes();
        let mut report = Report {
            suite: opts.suite,
            date: date.to_string(),
            runs: opts.runs,
            period_ms: opts.period_ms,
            coremark_ms: opts.coremark_ms,
            passes: passes.clone(),
            scores: Vec::new(),
            curve: Vec::new(),
            failures: Vec::new(),
        };
        for run in &runs {
            report.failures.extend(
                run.problems.iter().map(|p| format!("{} {} run {}: {p}", run.pass.label(), run.setup.name(), run.run)),
            );
        }
        for &pass in &passes {
            for setup in Setup::ALL {
                let mine: Vec<&Run> = runs.iter().filter(|r| r.pass == pass && r.setup == setup).collect();
                report.scores.extend(scores(pass, setup, &mine));
                report.curve.extend(curve(pass, setup, &mine));
            }
        }
        let natives: Vec<(Pass, String, f64)> = report
            .scores
            .iter()
            .filter(|s| s.setup == Setup::Native)
            .map(|s| (s.pass, s.test.clone(), s.score))
            .collect();
        for score in report.scores.iter_mut().filter(|s| s.setup != Setup::Native) {
            let native = natives.iter().find(|(pass, test, _)| *pass == score.pass && *test == score.test);
            score.rp = native.and_then(|(_, _, native)| rp(score.score, *native));
        }
        report
    }
}

fn scores(pass: Pass, setup: Setup, runs: &[&Run]) -> Vec<Score> {
    let mut tests: Vec<(String, Vec<f64>, bool)> = Vec::new();
    let mut add = |test: String, value: f64, failed: bool| match tests.iter_mut().find(|(t, _, _)| *t == test) {
        Some((_, values, any_failed)) => {
            values.push(value);
            *any_failed |= failed;
        }
        None => tests.push((test, vec![value], failed)),
    };
    for run in runs {
        for tm in &run.output.tm {
            add(tm.test(), tm.events as f64, tm.check != Check::Ok);
        }
        for coremark in &run.output.coremark {
            add("coremark".to_string(), coremark.per_second, coremark.check != Check::Ok);
        }
    }
    tests
        .into_iter()
        .map(|(test, values, failed)| Score { pass, setup, test, score: median(values), rp: None, failed })
        .collect()
}

fn curve(pass: Pass, setup: Setup, runs: &[&Run]) -> Vec<CurvePoint> {
    let mut keys: Vec<(Queue, u32)> =
        runs.iter().flat_map(|r| r.output.schedprio.iter().map(|p| (p.queue, p.priority))).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|(queue, priority)| {
            let values = runs
                .iter()
                .flat_map(|r| r.output.schedprio.iter())
                .filter(|p| p.queue == queue && p.priority == priority)
                .map(|p| p.ticks as f64)
                .collect();
            CurvePoint { pass, setup, queue, priority, ticks: median(values) }
        })
        .collect()
}
