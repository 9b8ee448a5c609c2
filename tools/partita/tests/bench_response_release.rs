//! Real boots of the RTOS's `relev=N` mode under `-icount 4`, natively and
//! sharing its pCPU with a spinning GPOS under Partita: every release is
//! timed, and the numbers are of the size the path they measure has. Under
//! icount at 62.5 MHz a counter tick is one guest instruction, so the
//! bounds below count instructions and do not depend on the host.

mod common;

use partita::bench::response::release::{self, ReleaseSample, ReleaseSetup};

/// Logs in `out/bench/release-test/`: a test run never overwrites a real one's.
const NAME: &str = "release-test";
const SAMPLES: u32 = 200;
const ICOUNT: Option<u32> = Some(4);
/// The native path is the vector, the GIC's acknowledge, the tick handler,
/// the scheduler and one switch: a few hundred instructions.
const NATIVE_MIN_AT_MOST: u64 = 500;

fn check(setup: ReleaseSetup, sample: &ReleaseSample) {
    assert_eq!((sample.n, sample.late), (u64::from(SAMPLES), 0), "{setup:?}: {sample:?}");
    assert!(sample.min <= sample.mean && sample.mean <= sample.max, "{setup:?}: {sample:?}");
    assert_eq!(sample.hist.iter().sum::<u64>(), sample.n, "{setup:?}: {sample:?}");
}

#[test]
fn every_release_is_timed_natively_and_beside_a_busy_gpos() {
    common::source_out();
    let hypervisor = common::hypervisor_elf();
    let measure = |setup| {
        let sample = release::measure(setup, ICOUNT, SAMPLES, hypervisor, NAME).expect("measuring");
        check(setup, &sample);
        println!("{}: {sample:?}", setup.name());
        sample
    };
    let native = measure(ReleaseSetup::Native);
    let shared = measure(ReleaseSetup::Shared);
    assert!(native.min > 0 && native.min <= NATIVE_MIN_AT_MOST, "native: {native:?}");
    // Taking the pCPU back from the GPOS can only add to the RTOS's own path.
    assert!(shared.max >= native.min, "shared: {shared:?}, native: {native:?}");
    assert!(release::delta_rel_ev(&shared, &native) >= 0);
}
