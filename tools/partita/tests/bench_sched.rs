//! The parts of `partita bench pcs` and `partita bench slots` that need no
//! QEMU: reading the guests' lines, the loss and PCS arithmetic, the
//! generated configurations, the reports and the profile `--save` writes.

use partita::bench::pcs::*;
use partita::bench::report::{civil_date, today};
use partita::bench::{Board, Mode, Pass};
use partita::config;
use partita::config::raw::{Micros, RawConfig};
use partita::profile::{self, PlatformProfile};
use partita::trace::slots::SlotRun;
use std::path::Path;

const HZ: u64 = 62_500_000;

#[test]
fn count_lines_are_read_among_the_others() {
    let log = "hello from partition p: 1 vcpu(s), memory 0x40000000+0x1000000\nset/way clean done\n\
               count: 12451584 in 2000 ms\ntick 1\n";
    assert_eq!(parse_count(log), Some((12_451_584, 2000)));
    assert_eq!(parse_late(log), None);
    let late = "count: started 3417721 us late\ncount: 12440832 in 2000 ms\n";
    assert_eq!(parse_late(late), Some(3_417_721));
    assert_eq!(parse_count(late), Some((12_440_832, 2000)), "the late line is not a count");
    for bad in ["count: many in 2000 ms", "count: 5 in 2000", "count: 5 in 2 s", "tick 1", ""] {
        assert_eq!(parse_count(bad), None, "{bad:?}");
    }
}

#[test]
fn a_late_partition_moves_the_window_to_a_later_whole_second() {
    assert_eq!(later_start(3000, 3_417_721), 8000);
    assert_eq!(later_start(3000, 1), 5000);
    assert_eq!(later_start(2500, 0), 4000);
}

#[test]
fn loss_is_what_half_a_pcpu_missed_of_half_the_reference() {
    assert_eq!(loss(50, 100), Some(0.0));
    assert!((loss(49, 100).unwrap() - 0.02).abs() < 1e-12);
    assert!(loss(51, 100).unwrap() < 0.0, "a partition that beat the reference shows a negative loss");
    assert_eq!(loss(1, 0), None);
}

#[test]
fn windows_are_whole_major_frames_of_at_least_two_seconds() {
    assert_eq!(count_ms(1000), 4000);
    assert_eq!(count_ms(500), 2000);
    assert_eq!(count_ms(1), 2000);
    assert_eq!(count_ms(3), 2004);
    for &(d, _, _) in &XTRATUM_TABLE_1 {
        let window = count_ms(d);
        assert!(window >= MIN_COUNT_MS && window >= 4 * d && window.is_multiple_of(2 * d), "D={d}: {window}");
    }
    assert_eq!(ms_ticks(1, HZ), 62_500);
    assert_eq!(ms_ticks(3, 24_000_123), 72_000);
}

fn run(cpu: usize, planned: u64, seen: u64, entered: Option<u64>) -> SlotRun {
    SlotRun { cpu, plan: 0, slot: 0, partition: 0, vcpu: 0, planned, end: planned + 100, seen, entered }
}

#[test]
fn pcs_is_the_mean_entry_delay_of_the_slots_inside_the_window() {
    let runs = [
        run(1, 900, 910, Some(1_000)), // before the window
        run(1, 1_000, 1_010, Some(1_020)),
        run(2, 1_100, 1_105, Some(1_900)), // another pCPU
        run(1, 1_100, 1_130, Some(1_160)),
        run(1, 1_200, 1_205, None), // its vCPU never entered
        run(1, 1_300, 1_301, Some(1_303)),
        run(1, 1_400, 1_401, Some(9_999)), // at the window's end
    ];
    let s = switches(&runs, 1, 1_000, 1_400).expect("three slots");
    assert_eq!((s.slots, s.max_ticks), (3, 60));
    assert!((s.mean_ticks - (20.0 + 60.0 + 3.0) / 3.0).abs() < 1e-9, "{s:?}");
    assert!((s.seen_mean_ticks - (10.0 + 30.0 + 1.0) / 3.0).abs() < 1e-9, "{s:?}");
    assert_eq!(switches(&runs, 1, 5_000, 6_000), None);
    assert_eq!(switches(&runs, 3, 0, u64::MAX), None);
}

#[test]
fn ticks_become_nanoseconds_or_instructions() {
    assert_eq!(from_ticks(Pass::WALL, 62.5, HZ), 1000.0);
    assert_eq!(from_ticks(Pass::icount(4), 100.0, HZ), 100.0);
    assert_eq!(from_ticks(Pass::icount(5), 100.0, HZ), 50.0);
    assert_eq!((unit(Pass::WALL), unit(Pass::icount(4))), ("ns", "instructions"));
    assert_eq!((Pass::WALL.label(), Pass::icount(4).label()), ("wall".to_string(), "icount 4".to_string()));
    assert_eq!((reference(Pass::WALL), reference(Pass::icount(4))), (Reference::Beside, Reference::Alone));
}

#[test]
fn xtratums_own_pcs_gives_its_theoretical_column() {
    // XtratuM's 11 µs on the Atom; its Table 1 model column is PCS / D.
    let atom = PlatformProfile {
        pcs_ns: 11_000,
        pcs_instructions: 0,
        pcs_max_instructions: None,
        pcs_ns_per_instruction: 16,
        measured: String::new(),
        accel: None,
        accel_measured: None,
        response: None,
        response_measured: None,
    };
    for &(d, _, model) in &XTRATUM_TABLE_1 {
        let predicted = predicted_loss(&atom, Pass::WALL, d) * 100.0;
        assert!((predicted - model).abs() < 0.0006, "D={d}: {predicted} against {model}");
    }
    assert_eq!(xtratum(1), Some((1.074, 1.100)));
    assert_eq!(xtratum(2), None);
    let profile = PlatformProfile {
        pcs_ns: 0,
        pcs_instructions: 1250,
        pcs_max_instructions: None,
        pcs_ns_per_instruction: 16,
        measured: String::new(),
        accel: None,
        accel_measured: None,
        response: None,
        response_measured: None,
    };
    assert!((predicted_loss(&profile, Pass::icount(4), 1) - 0.02).abs() < 1e-12, "1250 x 16 ns of 1 ms");
}

/// The generated configurations are valid but for the guest image, which
/// these tests do not build.
fn only_the_image_is_missing(config: &RawConfig) {
    let text = config.to_toml();
    let errors = config::load_str(Path::new("generated.toml"), &text).expect_err("the image does not exist");
    assert!(errors.iter().all(|e| e.message.contains("image")), "{errors:#?}\n{text}");
}

fn names(config: &RawConfig) -> Vec<&str> {
    config.partition.iter().map(|p| p.name.as_str()).collect()
}

#[test]
fn the_generated_configurations_are_valid() {
    let guest = Path::new("no-such-dir/test-guest.elf");
    let args = counting_bootargs(2000, 3000);
    assert_eq!(args, "count_ms=2000 count_at_ms=3000 ticks=1 period_ms=1");
    let pcs = pcs_config(&args, guest, true);
    assert!(pcs.trace.enabled == Some(true) && pcs_config(&args, guest, false).trace.enabled.is_none());
    let core = &pcs.plan[0].core[0];
    assert_eq!(core.major_frame_us, Micros(2000));
    assert!(core.slot.iter().all(|s| s.duration_us == Micros(1000)) && core.slot.len() == 2, "{core:?}");
    only_the_image_is_missing(&pcs);
    let beside = slots_config(5, Reference::Beside, &args, guest);
    let r = &beside.partition[2];
    assert_eq!((r.name.as_str(), r.cpus.as_slice(), r.exclusive), ("r", &[2][..], Some(true)));
    let core = &beside.plan[0].core[0];
    assert_eq!((core.major_frame_us, core.slot[1].start_us), (Micros(10_000), Micros(5000)));
    only_the_image_is_missing(&beside);
    let alone = slots_config(5, Reference::Alone, &args, guest);
    assert_eq!(names(&alone), ["p", "q"]);
    only_the_image_is_missing(&alone);
    let reference = reference_config(&args, guest);
    assert_eq!(names(&reference), ["r"]);
    only_the_image_is_missing(&reference);
}

fn switches_of(mean: f64, max: u64) -> Switches {
    Switches { slots: 1000, mean_ticks: mean, max_ticks: max, seen_mean_ticks: mean / 2.0 }
}

/// 1000 gaps of a 62,500-tick slot and `first` ticks beyond it on average.
fn gaps(first: u64, longest: u64) -> Gaps {
    Gaps { gaps: 1000, beyond_ticks: 1000 * (62_500 + first), shortest_ticks: 1290, longest_ticks: 62_500 + longest }
}

fn pcs_report() -> PcsReport {
    let wall = |mean, max| PcsRun {
        start_ms: 1500,
        switches: Some(switches_of(mean, max)),
        gaps: Some(gaps(200, 1000)),
        counts: [10, 11],
    };
    let icount = |mean, max| PcsRun {
        start_ms: 3000,
        switches: Some(switches_of(mean, max)),
        gaps: Some(gaps(1560, 1600)),
        counts: [6, 6],
    };
    let untraced = |first| PcsRun { start_ms: 3000, switches: None, gaps: Some(gaps(first, 1300)), counts: [6, 6] };
    PcsReport {
        board: Board::QemuVirt,
        runs: 3,
        counter_hz: HZ,
        rows: vec![
            PcsRow::new(Pass::WALL, true, vec![wall(100.0, 900), wall(62.5, 300), wall(80.0, 500)], HZ),
            PcsRow::new(
                Pass::icount(4),
                true,
                vec![icount(1490.0, 1550), icount(1491.0, 1551), icount(1489.0, 1549)],
                HZ,
            ),
            PcsRow::new(Pass::icount(4), false, vec![untraced(1210), untraced(1200), untraced(1190)], HZ),
        ],
        saved: None,
    }
}

#[test]
fn a_partition_times_the_switches_into_it_from_its_own_batches() {
    let log = "count: 500 gaps, 31937000 ticks beyond the shortest batch (1290 ticks), at most 64100\n\
               count: 6036736 in 1000 ms\n";
    let a = parse_gaps(log).expect("the gaps line");
    assert_eq!(a, Gaps { gaps: 500, beyond_ticks: 31_937_000, shortest_ticks: 1290, longest_ticks: 64_100 });
    assert_eq!(parse_count(log), Some((6_036_736, 1000)), "the gaps line is not a count");
    assert_eq!(a.switches(62_500), Some((1374.0, 1600)));
    let b = Gaps { gaps: 500, beyond_ticks: 31_750_000, shortest_ticks: 1285, longest_ticks: 63_000 };
    let both = a.merge(b);
    assert_eq!((both.gaps, both.shortest_ticks, both.longest_ticks), (1000, 1285, 64_100));
    assert_eq!(both.switches(62_500), Some((1187.0, 1600)));
    assert_eq!(Gaps { gaps: 0, ..a }.switches(62_500), None);
    for bad in ["count: no gaps", "count: 5 gaps, 7 ticks", "count: 6036736 in 1000 ms", ""] {
        assert_eq!(parse_gaps(bad), None, "{bad:?}");
    }
    assert_eq!(pcs_bootargs(3000, HZ), "count_ms=1000 count_at_ms=3000 ticks=1 period_ms=1 count_gap_ticks=31250");
}

#[test]
fn the_pcs_report_shows_medians_in_both_units() {
    let report = pcs_report();
    let wall = &report.rows[0];
    assert_eq!((wall.mean_ticks, wall.max_ticks, wall.mean, wall.max), (Some(80.0), Some(500.0), 1280.0, 8000.0));
    assert_eq!((report.rows[1].mean, report.rows[1].max), (1490.0, 1550.0));
    let untraced = &report.rows[2];
    assert_eq!((untraced.mean_ticks, untraced.first_mean_ticks), (None, Some(1200.0)));
    assert_eq!((untraced.mean, untraced.max), (1200.0, 1300.0), "untraced, the partitions' own figure");
    let markdown = report.markdown();
    assert!(markdown.starts_with("# pcs\n"), "{markdown}");
    assert!(
        markdown.contains("| wall, traced | 1000 | 80.0 | 500 | 40.0 | 200.0 | 1000 | 1280 ns | 8000 ns |"),
        "{markdown}"
    );
    assert!(markdown.contains(
        "| icount 4, traced | 1000 | 1490.0 | 1550 | 745.0 | 1560.0 | 1600 | 1490 instructions | 1550 instructions |"
    ));
    assert!(
        markdown.contains(
            "| icount 4, untraced | 1000 | - | - | - | 1200.0 | 1300 | 1200 instructions | 1300 instructions |"
        ),
        "{markdown}"
    );
    assert_eq!(markdown.matches("- wall, traced run ").count(), 3);
    assert!(
        markdown.contains("- icount 4, untraced run 2: untraced; 1200.0 / 1300 ticks over 1000 gaps;"),
        "{markdown}"
    );
    let table = report.table();
    assert!(table.lines().any(|l| l.starts_with("icount 4, traced") && l.contains("1490 instr")), "{table}");
    assert!(table.lines().any(|l| l.starts_with("icount 4, untraced") && l.contains("1200 instr")), "{table}");
    let json = serde_json::to_string(&report).unwrap();
    assert_eq!(serde_json::from_str::<PcsReport>(&json).unwrap(), report);
}

#[test]
fn the_saved_profile_parses_back_to_the_medians() {
    let measured = pcs_report().measured("2025-01-31").expect("both passes ran");
    assert_eq!(
        (measured.pcs_ns, measured.pcs_instructions, measured.pcs_max_ns, measured.pcs_max_instructions),
        (1280, 1490, 8000, 1550)
    );
    assert!(measured.measured.starts_with("partita bench pcs --runs 3 --save, 2025-01-31: "), "{measured:?}");
    let text = profile_text(&measured);
    let parsed = profile::parse("platforms/qemu-virt.toml", &text).expect("the profile parses");
    let expected = PlatformProfile {
        pcs_ns: 1280,
        pcs_instructions: 1490,
        pcs_max_instructions: Some(1550),
        pcs_ns_per_instruction: 16,
        measured: measured.measured.clone(),
        accel: None,
        accel_measured: None,
        response: None,
        response_measured: None,
    };
    assert_eq!(parsed, expected);
    assert!(!text.contains("provisional"), "{text}");
    // A `measured` line that needs escaping still round-trips.
    let awkward = Measured { measured: "say \"hi\" \\ twice".to_string(), ..measured };
    assert_eq!(profile::parse("p.toml", &profile_text(&awkward)).unwrap().measured, awkward.measured);
    let wall_only = PcsReport { rows: vec![pcs_report().rows[0].clone()], ..pcs_report() };
    assert_eq!(wall_only.measured("2025-01-31"), None, "--save needs both passes");
}

#[test]
fn dates_are_gregorian() {
    assert_eq!(civil_date(0), (1970, 1, 1));
    assert_eq!(civil_date(11_016), (2000, 2, 29));
    assert_eq!(civil_date(19_723), (2024, 1, 1));
    assert_eq!(civil_date(20_147), (2025, 2, 28));
    assert_eq!(civil_date(-1), (1969, 12, 31));
    let today = today();
    assert_eq!((today.len(), &today[4..5], &today[7..8]), (10, "-", "-"), "{today}");
}

fn slots_run(start_ms: u64, counts: [u64; 3], pcs_ticks: f64) -> SlotsRun {
    SlotsRun::new(start_ms, counts, Some(switches_of(pcs_ticks, 1600))).unwrap()
}

#[test]
fn the_slots_report_sets_measured_beside_predicted_and_xtratum() {
    let profile = PlatformProfile {
        pcs_ns: 20_000,
        pcs_instructions: 1250,
        pcs_max_instructions: None,
        pcs_ns_per_instruction: 16,
        measured: "unit".into(),
        accel: None,
        accel_measured: None,
        response: None,
        response_measured: None,
    };
    let icount = Pass::icount(4);
    let runs = vec![
        slots_run(3000, [960, 980, 2000], 1250.0),
        slots_run(3000, [990, 990, 2000], 1250.0),
        slots_run(3000, [1000, 1000, 2000], 1250.0),
    ];
    assert!((runs[0].loss_p - 0.04).abs() < 1e-12 && (runs[0].loss_q - 0.02).abs() < 1e-12);
    assert!((runs[0].loss - 0.03).abs() < 1e-12);
    let row = SlotsRow::new(icount, 1, runs, &profile, HZ);
    assert!((row.loss - 0.01).abs() < 1e-12 && row.loss_min == 0.0 && (row.loss_max - 0.03).abs() < 1e-12);
    assert!((row.predicted - 0.02).abs() < 1e-12 && (row.predicted_here.unwrap() - 0.02).abs() < 1e-12);
    assert_eq!((row.reference, row.count_ms), (Reference::Alone, 2000));
    let wall = SlotsRow::new(Pass::WALL, 1000, vec![slots_run(2000, [100, 100, 200], 62.5)], &profile, HZ);
    assert!((wall.predicted - 0.00002).abs() < 1e-12, "20 µs of 1 s");
    let report = SlotsReport::new(3, HZ, &profile, vec![wall, row]);
    let markdown = report.markdown();
    assert!(markdown.contains("\n## wall\n") && markdown.contains("\n## icount 4\n"), "{markdown}");
    assert!(markdown.contains("| 1 | 2000 | 1.000 | 0.000 .. 3.000 | 2.000 | 2.000 | 1.074 | 1.100 |"), "{markdown}");
    assert!(
        markdown.contains("| 1000 | 4000 | 0.000 | 0.000 .. 0.000 | 0.002 | 0.000 | 0.000 | 0.001 |"),
        "{markdown}"
    );
    assert!(markdown.contains("- icount 4 D=1 run 1: 960 980 2000; 4.000 2.000; 1250.0 over 1000; window from 3000 ms"));
    let table = report.table();
    assert_eq!(table.lines().filter(|l| l.starts_with("wall") || l.starts_with("icount 4")).count(), 2, "{table}");
    let json = serde_json::to_string(&report).unwrap();
    assert_eq!(serde_json::from_str::<SlotsReport>(&json).unwrap(), report);
    assert!(SlotsRun::new(0, [1, 1, 0], None).is_err(), "a reference that counted nothing");
    assert_eq!(Mode::Icount, icount.mode);
}
