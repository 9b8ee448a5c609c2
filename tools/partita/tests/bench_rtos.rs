//! `partita bench thread-metric|coremark|sched-prio|all` without QEMU: the
//! guest's lines as `guests/rtos/README.md` gives them, R_P, the report and
//! its charts, and what a failed self-check does to them.

use partita::bench::rtos::parse::{parse_line, parse_output, Check, Line};
use partita::bench::rtos::report::Report;
use partita::bench::rtos::score::{ker_one, rp, target};
use partita::bench::rtos::setups::{self, boots, BootSpec, Capture, Run};
use partita::bench::rtos::{Options, Queue, Setup, Suite, RTOS};
use partita::bench::Pass;
use partita::paths;
use std::path::PathBuf;

const DATE: &str = "2025-01-31";

/// What `bench=all` prints, with scores scaled by `scale` % and the switch
/// costs offset by `extra` ticks.
fn all_output(scale: u64, extra: u64, queue: Queue) -> String {
    let tests = [
        (0, "basic"),
        (1, "cooperative"),
        (2, "preemptive"),
        (3, "interrupt"),
        (4, "interrupt-preemption"),
        (5, "message"),
        (6, "synchronization"),
        (7, "memory"),
        (3, "interrupt-svc"),
        (4, "interrupt-preemption-svc"),
    ];
    let mut text = String::from("rtos: hello, tick 100 Hz\n");
    for (i, (n, name)) in tests.iter().enumerate() {
        let events = (1_000_000 + 1000 * i as u64) * scale / 100;
        text += &format!("tm {n} {name}: period 200 ms events {events} check ok\n");
    }
    text +=
        &format!("coremark: iterations 5000 in 200 ms, {} iterations/s, crc 0xe9f5 check ok\n", 25_000 * scale / 100);
    text += &sched_lines(queue, extra);
    text + "bench done\n"
}

fn sched_lines(queue: Queue, extra: u64) -> String {
    (0..31)
        .map(|p| {
            let cost = match queue {
                Queue::Bitmap => 100,
                Queue::Linear => 100 + 3 * p,
            };
            format!("schedprio {}: prio {p} switch {} counts\n", queue.name(), cost + extra)
        })
        .collect()
}

fn capture(text: String) -> Capture {
    Capture { text, failure: None, dir: PathBuf::from("logs") }
}

fn run(pass: Pass, setup: Setup, number: u32, specs: &[BootSpec], texts: Vec<String>) -> Run {
    let boots: Vec<(BootSpec, Capture)> = specs.iter().cloned().zip(texts.into_iter().map(capture)).collect();
    Run::from_captures(pass, setup, number, &boots)
}

fn options(suite: Suite, icount: Option<u32>) -> Options {
    Options { runs: 1, icount, period_ms: 200, coremark_ms: 200, ..Options::new(suite) }
}

/// `all`, one run per setup: the VM setups score `scale` % of native.
fn all_report(scales: [u64; 5], tamper: impl Fn(Setup, String) -> String) -> Report {
    let specs = boots(Suite::All, 200, 200);
    let runs = Setup::ALL
        .into_iter()
        .zip(scales)
        .map(|(setup, scale)| {
            let extra = if setup == Setup::Native { 0 } else { 10 };
            let texts = vec![
                tamper(setup, all_output(scale, extra, Queue::Bitmap)),
                sched_lines(Queue::Linear, extra) + "bench done\n",
            ];
            run(Pass::WALL, setup, 1, &specs, texts)
        })
        .collect();
    Report::new(&options(Suite::All, None), DATE, runs)
}

#[test]
fn every_line_kind_parses() {
    let tm = parse_line("tm 5 message: period 3000 ms events 123456 check ok");
    let Line::Tm(tm) = tm else { panic!("{tm:?}") };
    assert_eq!((tm.number, tm.name.as_str(), tm.period_ms, tm.events), (5, "message", 3000, 123_456));
    assert_eq!(tm.check, Check::Ok);
    assert_eq!(tm.test(), "tm5 message");

    let svc = parse_line("tm 4 interrupt-preemption-svc: period 200 ms events 7 check ok\r");
    assert!(matches!(svc, Line::Tm(ref t) if t.name == "interrupt-preemption-svc" && t.number == 4), "{svc:?}");

    let line = "coremark: iterations 60000 in 3000 ms, 20000 iterations/s, crc 0x4983 check ok";
    let Line::CoreMark(coremark) = parse_line(line) else { panic!("{line}") };
    assert_eq!((coremark.iterations, coremark.ms, coremark.crc), (60_000, 3000, 0x4983));
    assert_eq!((coremark.per_second, coremark.check), (20_000.0, Check::Ok));
    let fractional = "coremark: iterations 10 in 3 ms, 3333.33 iterations/s, crc 0x0001 check ok";
    assert!(matches!(parse_line(fractional), Line::CoreMark(c) if (c.per_second - 3333.33).abs() < 1e-9));

    let line = "schedprio linear: prio 17 switch 842 counts";
    let Line::SchedPrio(point) = parse_line(line) else { panic!("{line}") };
    assert_eq!((point.queue, point.priority, point.ticks), (Queue::Linear, 17, 842));

    assert_eq!(parse_line("bench done"), Line::Done);
    assert_eq!(parse_line("  bench done  "), Line::Done);
}

#[test]
fn fail_lines_keep_their_reason() {
    let line = "tm 1 cooperative: period 3000 ms events 999 check FAIL: counters differ by 7";
    let Line::Tm(tm) = parse_line(line) else { panic!("{line}") };
    assert_eq!(tm.check, Check::Fail("counters differ by 7".to_string()));
    assert_eq!(tm.events, 999);
    let line = "coremark: iterations 5 in 3000 ms, 1 iterations/s, crc 0xdead check FAIL: crc 0xdead, expected 0xe9f5";
    let Line::CoreMark(coremark) = parse_line(line) else { panic!("{line}") };
    assert_eq!(coremark.check, Check::Fail("crc 0xdead, expected 0xe9f5".to_string()));
    let bare = parse_line("tm 2 preemptive: period 10 ms events 1 check FAIL");
    assert!(matches!(bare, Line::Tm(t) if t.check == Check::Fail(String::new())));
}

#[test]
fn garbage_is_ignored_or_flagged() {
    for other in
        ["", "rtos: hello", "hello from partition native", "tmux", "benchmark", "\u{fffd}\u{fffd}", "schedprio"]
    {
        assert_eq!(parse_line(other), Line::Other, "{other:?}");
    }
    for broken in [
        "tm 3 interrupt: period ms events 5 check ok",
        "tm x basic: period 10 ms events 5 check ok",
        "tm 0 basic: period 10 ms events -5 check ok",
        "tm 0 basic: period 10 ms events 5 check maybe",
        "tm 0 basic: period 10 ms events 5",
        "tm 0 basic: period 10 ms ev",
        "coremark: iterations 1 in 2 ms, fast iterations/s, crc 0x1 check ok",
        "coremark: iterations 1 in 2 ms, 3 iterations/s, crc 12 check ok",
        "coremark: iterations 1 in 2 ms, NaN iterations/s, crc 0x1 check ok",
        "schedprio fifo: prio 1 switch 2 counts",
        "schedprio bitmap: prio 1 switch 2",
        "schedprio bitmap: prio one switch 2 counts",
    ] {
        assert!(matches!(parse_line(broken), Line::Malformed(_)), "{broken:?} read as {:?}", parse_line(broken));
    }
    let output = parse_output("junk\ntm 0 basic: period 10 ms events 5 check ok\ntm 0 basic: peri\nbench done\n");
    assert_eq!((output.tm.len(), output.done, output.malformed.len()), (1, 1, 1));
}

#[test]
fn a_whole_run_reads_back() {
    let output = parse_output(&all_output(100, 0, Queue::Bitmap));
    assert_eq!((output.tm.len(), output.coremark.len(), output.schedprio.len(), output.done), (10, 1, 31, 1));
    let expect = boots(Suite::All, 200, 200)[0].expect;
    assert_eq!(output.problems(&expect), Vec::<String>::new());
}

#[test]
fn each_suite_boots_what_it_needs() {
    let tm = boots(Suite::ThreadMetric, 3000, 3000);
    assert_eq!(tm.len(), 10);
    assert!(tm.iter().all(|b| b.bootargs.contains("period_ms=3000") && b.expect.tm == 1));
    assert_eq!(tm[8].bootargs, "bench=tm3svc period_ms=3000");
    let coremark = boots(Suite::CoreMark, 3000, 500);
    assert_eq!(coremark.len(), 1);
    assert_eq!(coremark[0].bootargs, "bench=coremark coremark_ms=500");
    let probe: Vec<String> = boots(Suite::SchedPrio, 1, 1).into_iter().map(|b| b.bootargs).collect();
    assert_eq!(probe, ["bench=schedprio sched=bitmap", "bench=schedprio sched=linear"]);
    let all = boots(Suite::All, 1000, 2000);
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].bootargs, "bench=all period_ms=1000 coremark_ms=2000 sched=bitmap");
    assert_eq!(all[0].guest_ms, 12_000);
    assert!(setups::time_limit(all[0].guest_ms) > std::time::Duration::from_secs(12));
}

#[test]
fn rp_is_vm_over_native() {
    assert_eq!(rp(99.0, 100.0), Some(99.0));
    assert_eq!(rp(5.0, 0.0), None);
    let report = all_report([100, 99, 99, 50, 98], |_, text| text);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let rp = |setup, test: &str| report.score(Pass::WALL, setup, test).and_then(|s| s.rp).unwrap();
    assert!((rp(Setup::Alone, "tm0 basic") - 99.0).abs() < 1e-9);
    assert!((rp(Setup::Loaded, "tm5 message") - 50.0).abs() < 1e-9);
    assert!((rp(Setup::Shared, "coremark") - 98.0).abs() < 1e-9);
    assert_eq!(report.score(Pass::WALL, Setup::Native, "tm0 basic").unwrap().rp, None);
    assert_eq!(report.scores.iter().filter(|s| s.setup == Setup::Native).count(), 11);
    // Both queues, all five setups, 31 priorities each.
    assert_eq!(report.curve.len(), 2 * 5 * 31);
    assert_eq!(target("tm3 interrupt-svc"), 97.0);
    assert_eq!(target("tm6 synchronization"), 99.0);
    assert_eq!(ker_one("tm3 interrupt"), Some(79.2));
    assert_eq!(ker_one("tm1 cooperative"), None);
}

#[test]
fn scores_are_medians_over_runs() {
    let specs = boots(Suite::CoreMark, 200, 200);
    let line =
        |per_s: u64| format!("coremark: iterations 1 in 200 ms, {per_s} iterations/s, crc 0x1 check ok\nbench done\n");
    let runs: Vec<Run> = [(Setup::Native, 1, 100), (Setup::Native, 2, 300), (Setup::Native, 3, 200)]
        .into_iter()
        .chain([(Setup::Alone, 1, 150), (Setup::Alone, 2, 190), (Setup::Alone, 3, 5)])
        .map(|(setup, n, per_s)| run(Pass::WALL, setup, n, &specs, vec![line(per_s)]))
        .collect();
    let opts = Options { runs: 3, ..options(Suite::CoreMark, None) };
    let report = Report::new(&opts, DATE, runs);
    assert_eq!(report.score(Pass::WALL, Setup::Native, "coremark").unwrap().score, 200.0);
    let alone = report.score(Pass::WALL, Setup::Alone, "coremark").unwrap();
    assert_eq!((alone.score, alone.rp), (150.0, Some(75.0)));
}

#[test]
fn the_report_shows_scores_ratios_anchors_and_charts() {
    let report = all_report([100, 99, 99, 97, 100], |_, text| text);
    let markdown = report.markdown();
    assert!(markdown.starts_with("# RTOS benchmarks: all, 2025-01-31\n"), "{markdown}");
    assert!(!markdown.contains("SELF-CHECK") && !markdown.contains(" FAIL |"), "{markdown}");
    for needle in [
        "| tm0 basic | 1000000 | 990000 | 99.00 % | 990000 | 99.00 % | 970000 | 97.00 % ✗ | 1000000 | 100.00 % | >= 99.0 % | 98.6 % |",
        "| tm3 interrupt | 1003000 |",
        "79.2 %",
        "98.6 %",
        "0.18 %",
        "CoreMark loss (100 % - R_P): alone 1.000 %, direct 1.000 %, loaded 3.000 %, shared 0.000 %",
        "![R_P per test and setup](all-2025-01-31.svg)",
        "![switch cost versus priority](all-2025-01-31-sched-prio.svg)",
        "| priority | bitmap native | bitmap alone | bitmap direct | bitmap loaded | bitmap shared | linear native |",
        "| 30 | 100 | 110 | 110 | 110 | 110 | 190 | 200 | 200 | 200 | 200 |",
    ] {
        assert!(markdown.contains(needle), "no {needle:?} in\n{markdown}");
    }
    let table = report.table();
    assert!(table.contains("every guest self-check passed"), "{table}");
    assert!(table.contains("tm7 memory"), "{table}");
    let files = report.files().unwrap();
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["all-2025-01-31.md", "all-2025-01-31.svg", "all-2025-01-31-sched-prio.svg"]);
    for (name, text) in &files[1..] {
        assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"), "{name}");
    }
    assert!(files[1].1.contains("Ker-ONE") && files[1].1.contains("tm4 interrupt-preemption-svc"));
    assert!(files[2].1.contains("linear alone"));
}

#[test]
fn an_icount_pass_has_no_loaded_setup() {
    let specs = boots(Suite::CoreMark, 200, 200);
    let line = "coremark: iterations 1 in 200 ms, 100 iterations/s, crc 0x1 check ok\nbench done\n".to_string();
    let icount = Pass::icount(4);
    assert!(!Setup::Loaded.runs_in(icount) && Setup::Loaded.runs_in(Pass::WALL));
    let runs = [Pass::WALL, icount]
        .into_iter()
        .flat_map(|pass| Setup::ALL.into_iter().filter(move |s| s.runs_in(pass)).map(move |s| (pass, s)))
        .map(|(pass, setup)| run(pass, setup, 1, &specs, vec![line.clone()]))
        .collect();
    let report = Report::new(&options(Suite::CoreMark, Some(4)), DATE, runs);
    assert_eq!(report.scores.len(), 9);
    let markdown = report.markdown();
    assert!(markdown.contains("### icount 4") && markdown.contains("### wall"), "{markdown}");
    let names: Vec<String> = report.files().unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["coremark-2025-01-31.md", "coremark-2025-01-31.svg"]);
}

#[test]
fn sched_prio_alone_draws_its_curve_as_the_chart() {
    let specs = boots(Suite::SchedPrio, 1, 1);
    let runs = Setup::ALL
        .into_iter()
        .map(|setup| {
            let texts = Queue::ALL.into_iter().map(|q| sched_lines(q, 0) + "bench done\n").collect();
            run(Pass::WALL, setup, 1, &specs, texts)
        })
        .collect();
    let report = Report::new(&options(Suite::SchedPrio, None), DATE, runs);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert!(report.scores.is_empty());
    let names: Vec<String> = report.files().unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["sched-prio-2025-01-31.md", "sched-prio-2025-01-31.svg"]);
    let markdown = report.markdown();
    assert!(!markdown.contains("## Scores") && !markdown.contains("period"), "{markdown}");
}

#[test]
fn a_failed_self_check_is_reported_clearly() {
    let report = all_report([100, 100, 100, 100, 100], |setup, text| {
        if setup == Setup::Shared {
            text.replace(
                "tm 3 interrupt: period 200 ms events 1003000 check ok",
                "tm 3 interrupt: period 200 ms events 1003000 check FAIL: 12 interrupts lost",
            )
        } else {
            text
        }
    });
    assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
    let failure = &report.failures[0];
    assert!(
        failure.starts_with("wall shared run 1: all: tm3 interrupt: self-check FAILED: 12 interrupts lost"),
        "{failure}"
    );
    assert!(failure.contains("logs in logs"), "{failure}");
    let markdown = report.markdown();
    let heading = markdown.find("## SELF-CHECK FAILURES").expect("a failure section");
    assert!(heading < markdown.find("## Scores").unwrap(), "the failure comes first:\n{markdown}");
    assert!(markdown.contains("1003000 FAIL"), "{markdown}");
    assert!(report.table().contains("SELF-CHECK FAILURES (1)"), "{}", report.table());
    assert!(report.score(Pass::WALL, Setup::Shared, "tm3 interrupt").unwrap().failed);
    assert!(!report.score(Pass::WALL, Setup::Alone, "tm3 interrupt").unwrap().failed);
}

#[test]
fn missing_and_unreadable_lines_are_failures() {
    let report = all_report([100, 100, 100, 100, 100], |setup, text| match setup {
        Setup::Alone => text.replace("bench done\n", ""),
        Setup::Direct => text,
        Setup::Loaded => text.replace("tm 7 memory", "tm 7 memory garbled").replace("events 1007000", "events ?"),
        Setup::Shared => text.lines().filter(|l| !l.starts_with("coremark")).map(|l| format!("{l}\n")).collect(),
        Setup::Native => text,
    });
    let joined = report.failures.join("\n");
    assert!(joined.contains("wall alone run 1: all: no `bench done` line"), "{joined}");
    assert!(joined.contains("wall loaded run 1: all: unreadable result line: `tm 7 memory garbled"), "{joined}");
    assert!(joined.contains("wall loaded run 1: all: 9 Thread-Metric lines, expected 10"), "{joined}");
    assert!(joined.contains("wall shared run 1: all: 0 coremark lines, expected 1"), "{joined}");
    assert_eq!(report.failures.len(), 4, "{joined}");
}

#[test]
fn a_boot_that_died_says_why() {
    let specs = boots(Suite::CoreMark, 200, 200);
    let dead = Capture {
        text: "rtos: hello\n".to_string(),
        failure: Some("no `bench done` line within 66 s".to_string()),
        dir: PathBuf::from("out/x"),
    };
    let run = Run::from_captures(Pass::WALL, Setup::Alone, 2, &[(specs[0].clone(), dead)]);
    assert_eq!(
        run.problems,
        [
            "coremark: 0 coremark lines, expected 1 (logs in out/x)",
            "coremark: no `bench done` line within 66 s (logs in out/x)"
        ]
    );
}

#[test]
fn the_configurations_are_valid() {
    let dir = paths::scratch("bench-rtos-host-test");
    std::fs::create_dir_all(&dir).unwrap();
    let image = dir.join("guest.elf");
    // A minimal AArch64 ELF is enough for the loader to accept the file.
    std::fs::write(&image, minimal_elf()).unwrap();
    for setup in Setup::VIRTUALIZED {
        let generated = setups::config(setup, "bench=all period_ms=200", &image, &image);
        let path = dir.join(format!("{}.toml", setup.name()));
        generated.write(&path).unwrap();
        let text = generated.to_toml();
        let config = partita::config::load(&path).unwrap_or_else(|e| panic!("{setup:?}: {e:#?}\n{text}"));
        let rtos = config.system.partitions.iter().find(|p| p.name == RTOS).unwrap();
        assert_eq!(rtos.vcpus, [1]);
        assert_eq!(rtos.exclusive, setup != Setup::Shared, "{text}");
        let others: Vec<_> = config.system.partitions.iter().filter(|p| p.name != RTOS).collect();
        match setup {
            Setup::Alone | Setup::Direct => assert!(others.is_empty()),
            Setup::Loaded => assert_eq!(others[0].vcpus, [2]),
            _ => {
                assert_eq!(others[0].vcpus, [1]);
                assert!(others[0].priority < rtos.priority, "{text}");
            }
        }
    }
}

/// An ELF64 AArch64 executable with one loadable segment at 0x40000000.
fn minimal_elf() -> Vec<u8> {
    use object::write::elf::{FileHeader, ProgramHeader, Writer};
    let code = [0x1f, 0x20, 0x03, 0xd5, 0x00, 0x00, 0x00, 0x14]; // nop; b .
    let mut bytes = Vec::new();
    let mut writer = Writer::new(object::Endianness::Little, true, &mut bytes);
    writer.reserve_file_header();
    writer.reserve_program_headers(1);
    let offset = writer.reserve(code.len(), 8);
    writer
        .write_file_header(&FileHeader {
            os_abi: 0,
            abi_version: 0,
            e_type: object::elf::ET_EXEC,
            e_machine: object::elf::EM_AARCH64,
            e_entry: 0x4000_0000,
            e_flags: 0,
        })
        .unwrap();
    writer.write_program_header(&ProgramHeader {
        p_type: object::elf::PT_LOAD,
        p_flags: object::elf::PF_R | object::elf::PF_X,
        p_offset: offset as u64,
        p_vaddr: 0x4000_0000,
        p_paddr: 0x4000_0000,
        p_filesz: code.len() as u64,
        p_memsz: code.len() as u64,
        p_align: 8,
    });
    writer.write_align(8);
    writer.write(&code);
    bytes
}
