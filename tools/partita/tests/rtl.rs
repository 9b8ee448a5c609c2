//! The RTL in `hardware/` against the core's models: each block replays
//! the vectors its model wrote, operation by operation, in Icarus Verilog.
//! A block built wrong on purpose must fail the same check, or the check
//! proves nothing.

mod common;

use partita::bench::rtl::{self as bench, Options};
use partita::paths;
use partita::rtl::sim::{self, Outcome};
use partita::rtl::vectors::Vectors;
use partita::rtl::{monitor, readyq, synth, Block};

/// Small enough that one FIFO holds every slot in a short run, large
/// enough for long FIFOs.
const SLOTS: usize = 16;
const SEED: u64 = 0x5eed_0016;

fn simulate(block: Block, vectors: &Vectors, defines: &[&str], dir: &str) -> Outcome {
    let out = paths::scratch("rtl-test").join(dir);
    sim::run(block, vectors, defines, &out).unwrap_or_else(|e| panic!("{dir}: {e:#}"))
}

/// Replays `vectors` through the block as written; every one must match,
/// and every one of `tag` must have been timed.
fn agrees(block: Block, vectors: &Vectors, tag: u8) -> sim::Cycles {
    let outcome = simulate(block, vectors, &[], block.name());
    assert_eq!(outcome.mismatches, 0, "{}", outcome.mismatch_lines.join("\n"));
    assert_eq!(outcome.ops, vectors.lines.len() as u64);
    let cycles = *outcome.cycles_of(tag).expect("the operation was timed");
    assert_eq!(cycles.count, vectors.count(tag) as u64);
    cycles
}

#[test]
fn the_ready_queue_answers_every_vector_as_the_model_does() {
    let vectors = readyq::generate::<SLOTS>(SEED, 4000);
    let pops = agrees(Block::ReadyQueue { slots: SLOTS }, &vectors, readyq::tag::POP_HIGHEST);
    // Constant time: a pop costs the same whatever priority it finds.
    assert!(pops.max - pops.min <= 1, "{pops:?}");
}

#[test]
fn a_ready_queue_that_breaks_fifo_order_is_caught() {
    let vectors = readyq::generate::<SLOTS>(SEED, 500);
    let outcome = simulate(Block::ReadyQueue { slots: SLOTS }, &vectors, &["BREAK_FIFO_ORDER"], "ready_queue_broken");
    assert!(outcome.mismatches > 0, "the broken queue passed {} vectors", outcome.ops);
    assert_eq!(outcome.mismatches as usize, outcome.mismatch_lines.len());
}

/// Small, so the vectors fill the list often; the hypervisor's holds 256,
/// which the RTL takes too.
const WAITING: usize = 8;

#[test]
fn the_prr_monitor_answers_every_vector_as_the_model_does() {
    let vectors = monitor::generate::<WAITING>(SEED, 3000);
    let searches = agrees(Block::PrrMonitor { waiting: WAITING }, &vectors, monitor::tag::SEARCH);
    // The bounded scan: one cycle per PRR and a few for the bus.
    assert!(searches.max <= 32 + 4, "{searches:?}");
}

#[test]
fn a_prr_monitor_that_lets_equals_preempt_is_caught() {
    let vectors = monitor::generate::<WAITING>(SEED, 500);
    let outcome =
        simulate(Block::PrrMonitor { waiting: WAITING }, &vectors, &["BREAK_EQUAL_PREEMPTS"], "prr_monitor_broken");
    assert!(outcome.mismatches > 0, "the broken monitor passed {} vectors", outcome.ops);
}

#[test]
fn the_cost_report_gives_the_cycles_of_every_operation() {
    common::source_out();
    let opts = Options { ops: 300, synthesize: false, name: "rtl-test".to_string(), ..Options::default() };
    let (report, dated) = bench::run(&opts).expect("the benchmark runs");
    let markdown = std::fs::read_to_string(paths::bench_out("rtl-test").join("report.md")).expect("report.md");
    assert_eq!(std::fs::read_to_string(dated).expect("the dated copy"), markdown);
    for operation in ["enqueue", "enqueue front", "remove", "pop highest", "find highest"] {
        let cycles = report.queue_cycles(operation).unwrap_or_else(|| panic!("no {operation} in\n{markdown}"));
        // docs/hardware.md gives these: 3 cycles, 4 when a slot is unlinked.
        assert!(cycles.min >= 3 && cycles.max <= 4 && cycles.count > 0, "{cycles:?}");
        assert!(markdown.contains(&format!("| ready_queue | {operation} |")), "{operation} in\n{markdown}");
    }
    assert!(markdown.contains("| prr_monitor | search |") && markdown.contains("6.5"), "{markdown}");
}

#[test]
fn yosys_maps_the_ready_queue_to_a_zynq() {
    let slots = 8;
    let dir = paths::scratch("rtl-test").join("yosys");
    let r = synth::synthesize(Block::ReadyQueue { slots }, &dir).unwrap_or_else(|e| panic!("{e:#}"));
    // At least the 256-bit map of non-empty FIFOs and a queued bit per slot.
    assert!(r.flip_flops >= 256 + slots as u64, "{r:?}");
    assert!(r.luts > 0 && r.lutram > 0, "{r:?}");
}
