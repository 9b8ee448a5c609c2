//! `partita bench response` as `--save` runs it (a minute or two under
//! `-icount`): every term is measured, every
//! kind of pCPU drives the EL2 paths it should, and nothing it measures is
//! over the worst case the board's profile holds (`partita bench response
//! --save`), which `partita check` builds its bounds from. A path the
//! profile has no figure for, or one that grew past it, fails here.

mod common;

use partita::bench::response::{self, critical::Setup, Options};
use partita::paths;

/// Its own name, so a test run never overwrites the report of a real one.
const NAME: &str = "response-test";
/// The same boots as `--save` runs, under `-icount`, meet the same events
/// within a few instructions (QEMU's main loop still runs on the host's
/// time); more than this over the saved worst case is a change of the path.
/// A shorter run would not do: it meets its events at other moments, and
/// one path's worst moved by half.
const SLACK_PERCENT: u64 = 10;

#[test]
fn the_terms_are_measured_and_within_the_boards_profile() {
    common::source_out();
    let opts = Options { name: NAME.to_string(), ..Options::default() };
    let report = response::run(&opts).expect("the benchmark runs");
    let json = std::fs::read_to_string(paths::bench_out(NAME).join("report.json")).expect("report.json is written");
    assert_eq!(serde_json::from_str::<response::Report>(&json).expect("report.json parses"), report);
    print!("{}", report.summary());

    let paths_of = |setup: Setup| -> Vec<&str> {
        let measured = report.critical.iter().find(|m| m.setup == setup).expect("every setup is measured");
        measured.paths.iter().map(|p| p.path.as_str()).collect()
    };
    let shared = paths_of(Setup::Shared);
    for path in
        ["hvc-port-send", "hvc-port-receive", "restart-step", "health-action", "hyp-timer", "wfi", "mmio", "sgi"]
    {
        assert!(shared.contains(&path), "the shared pCPU's stress drove no `{path}`: {shared:?}");
    }
    assert!(paths_of(Setup::Cyclic).contains(&"slot"), "{:?}", paths_of(Setup::Cyclic));
    assert!(paths_of(Setup::Exclusive).contains(&"own-timer"));
    assert!(!paths_of(Setup::Direct).contains(&"own-timer"), "a direct partition's timer never exits");

    let sched = report.sched();
    assert!(0 < sched.min && sched.min <= sched.mean && sched.mean <= sched.max, "{sched:?}");
    let release = report.release.as_ref().expect("Δ_VM^relEv is measured");
    assert!(release.native.min <= release.alone.max, "{release:?}");

    let board = partita::profile::for_board("qemu-virt").expect("the board's profile parses");
    let saved = board.response.expect("platforms/qemu-virt.toml holds the response costs");
    let within = |what: &str, measured: u64, bound: u64| {
        assert!(
            measured * 100 <= bound * (100 + SLACK_PERCENT),
            "{what}: {measured} instructions, over the profile's {bound}; run `partita bench response --save`"
        );
    };
    for c in report.critical_by_path() {
        let what = format!("ΔVMMcritical `{}` on the {} pCPU", c.path, c.pcpu.name());
        let bound = saved.critical.iter().find(|s| s.pcpu == c.pcpu && s.path == c.path).map(|s| s.max);
        within(&what, c.max, bound.unwrap_or_else(|| panic!("{what}: no bound in the profile")));
    }
    within("ΔVMMsched", sched.max, saved.sched);
    within("Δ_VM^relEv", release.delta(), saved.release);
}
