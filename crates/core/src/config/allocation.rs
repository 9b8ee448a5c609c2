//! The worst-case allocation latency of every virtual device of a
//! configuration (Ker-ONE section 6, eq. 5-8), from the model: which PRRs
//! can host its accelerator, what a request may have to displace there,
//! and whether anything bounds its wait at all.
//!
//! `fabric::bound` holds the arithmetic of the four paths and knows
//! nothing of partitions; this module reads the configuration to find its
//! inputs, the way `overhead` does for the switch cost. It runs on the host
//! (for `partita check`) and in the validator, so it must never panic on a
//! corrupt table: every index is looked up, never trusted.
//!
//! The PRR monitor never preempts a client of equal or higher priority.
//! A request is therefore served by one of Ker-ONE's paths only when some
//! PRR that can host its accelerator is free of such clients when it comes.
//! A virtual device holds one PRR at a time, so the question is whether the
//! other devices of equal or higher priority could hold every compatible
//! PRR at once (a matching between those devices and the PRRs): if they
//! can, the request may wait for as long as they keep them, and no bound
//! exists; if they cannot, one compatible PRR is always Idle or held by a
//! partition of lower priority, and eq. 5 bounds the latency. Ker-ONE's
//! analysis takes that PRR to be Idle, Busy or in Hold when the request
//! comes; this one adds what may stand before that: the downloads on the
//! one PCAP (T_PCAP) and another allocation's preemption under way in the
//! PRR (T_SWITCH), the PRR searched again as soon as it is in Hold.

use crate::config::model::{Fabric, Prr, System};
use crate::fabric::bound::{allocation_latency, reconfig_time, AtomicCosts, Bound};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Nanoseconds in a second: every time here is in nanoseconds, the unit
/// of the accelerators' δ_pre and of the board's atomic costs.
const NS_PER_SECOND: u64 = 1_000_000_000;

pub use crate::fabric::bound::KER_ONE_TABLE_4;

/// What T_preempt and T_RCFG are capped at (about 146 years): the paths
/// add them to each other and to the atomic costs, which must not
/// overflow on a corrupt table, and no real term comes near it.
const TERM_CEILING_NS: u64 = u64::MAX / 4;

/// T_RCFG of `prr`: its bitstream over the fabric's bandwidth, in
/// nanoseconds, rounded up.
pub fn reconfig_ns(fabric: &Fabric, prr: &Prr) -> u64 {
    reconfig_time(prr.bitstream, fabric.bandwidth, NS_PER_SECOND)
}

/// `816.76`: nanoseconds as microseconds, with the decimals they need
/// (at most three), as the file and Ker-ONE's tables write times.
pub fn micros_text(ns: u64) -> String {
    let fraction = format!("{:03}", ns % 1_000);
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{}", ns / 1_000)
    } else {
        format!("{}.{fraction}", ns / 1_000)
    }
}

/// The PRRs that can host accelerator `accelerator`, by index.
pub fn compatible_prrs(fabric: &Fabric, accelerator: usize) -> Vec<usize> {
    fabric.prrs.iter().enumerate().filter(|(_, prr)| prr.hosts.contains(&accelerator)).map(|(r, _)| r).collect()
}

/// What the analysis says of one virtual device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceLatency {
    /// Index into [`System::partitions`].
    pub partition: usize,
    /// Index into the partition's `accelerators`.
    pub device: usize,
    /// The PRRs that can host its accelerator.
    pub compatible: Vec<usize>,
    pub wait: Wait,
}

/// Whether the analysis bounds a device's allocation latency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Some compatible PRR is always Idle or held by a partition of lower
    /// priority when the request comes.
    Bounded {
        /// T_preempt(WCET), eq. 7: the longest δ_pre among the accelerators
        /// that partitions of lower priority may hold in a compatible PRR;
        /// `None` when there is nothing to preempt.
        preempt_ns: Option<u64>,
        /// T_RCFG(WCET), eq. 8: the longest download among the compatible
        /// PRRs.
        reconfig_ns: Option<u64>,
        /// The downloads other devices may have asked of the PCAP first,
        /// which eq. 5 leaves out; `None` when no other device downloads.
        pcap_ns: Option<u64>,
        /// The longest δ_pre of a preemption between other devices that
        /// may be under way in a compatible PRR; `None` when none can be.
        switch_ns: Option<u64>,
        /// L_alloc(WCET): eq. 5 and the PCAP's queue, when the atomic costs
        /// are known.
        latency: Option<Bound>,
    },
    /// Devices of equal or higher priority could hold every compatible PRR
    /// at once: `(prr, (partition, device))`, one holder per compatible PRR.
    Unbounded { holders: Vec<(usize, (usize, usize))> },
}

/// Every virtual device of every partition, in file order, analysed with
/// `costs` (in nanoseconds) when they are known. Empty without a fabric.
pub fn device_latencies(system: &System, costs: Option<&AtomicCosts>) -> Vec<DeviceLatency> {
    let Some(fabric) = &system.fabric else { return Vec::new() };
    let mut all = Vec::new();
    for (p, partition) in system.partitions.iter().enumerate() {
        for (d, device) in partition.accelerators.iter().enumerate() {
            let compatible = compatible_prrs(fabric, device.accelerator);
            let wait = wait(system, fabric, (p, d), partition.priority, &compatible, costs);
            all.push(DeviceLatency { partition: p, device: d, compatible, wait });
        }
    }
    all
}

fn wait(
    system: &System,
    fabric: &Fabric,
    this: (usize, usize),
    priority: u8,
    compatible: &[usize],
    costs: Option<&AtomicCosts>,
) -> Wait {
    // Every other device, with its priority and the compatible PRRs it can use.
    let mut rivals: Vec<Rival> = Vec::new();
    for (q, other) in system.partitions.iter().enumerate() {
        for (e, device) in other.accelerators.iter().enumerate().filter(|&(e, _)| (q, e) != this) {
            let usable: Vec<usize> = compatible
                .iter()
                .copied()
                .filter(|&r| fabric.prrs.get(r).is_some_and(|prr| prr.hosts.contains(&device.accelerator)))
                .collect();
            if !usable.is_empty() {
                rivals.push((q, e, other.priority, device.accelerator, usable));
            }
        }
    }
    let keepers: Vec<(usize, usize, &[usize])> = rivals
        .iter()
        .filter(|rival| rival.2 >= priority)
        .map(|(q, e, _, _, usable)| (*q, *e, usable.as_slice()))
        .collect();
    if let Some(holders) = cover(compatible, &keepers) {
        return Wait::Unbounded { holders };
    }
    let reconfig: Vec<u64> = compatible
        .iter()
        .filter_map(|&r| fabric.prrs.get(r))
        .map(|prr| reconfig_ns(fabric, prr).min(TERM_CEILING_NS))
        .collect();
    let displaceable: Vec<u64> = rivals
        .iter()
        .filter(|rival| rival.2 < priority)
        .filter_map(|rival| fabric.accelerators.get(rival.3))
        .map(|accelerator| accelerator.preempt_ns.min(TERM_CEILING_NS))
        .collect();
    let others = others_downloads(system, fabric, this);
    let midway = midway_preemptions(fabric, priority, &rivals);
    let terms = allocation_latency(&costs.copied().unwrap_or_default(), &reconfig, &displaceable, &others, &midway);
    Wait::Bounded {
        preempt_ns: terms.preempt,
        reconfig_ns: terms.reconfig,
        pcap_ns: terms.pcap,
        switch_ns: midway.iter().copied().max(),
        latency: costs.map(|costs| allocation_latency(costs, &reconfig, &displaceable, &others, &midway)),
    }
}

/// The δ_pre of every accelerator that one rival may be stopping for
/// another in a PRR the request can use when it comes: a victim of lower
/// priority than the request (one of equal or higher priority holds its
/// PRR, which the cover above accounts for), its preemptor of higher
/// priority than the victim, both able to use that PRR. A rival is
/// `(partition, device, priority, accelerator, usable compatible PRRs)`.
fn midway_preemptions(fabric: &Fabric, priority: u8, rivals: &[Rival]) -> Vec<u64> {
    let preempted =
        |victim: &Rival| rivals.iter().any(|by| by.2 > victim.2 && by.4.iter().any(|prr| victim.4.contains(prr)));
    rivals
        .iter()
        .filter(|victim| victim.2 < priority && preempted(victim))
        .filter_map(|victim| fabric.accelerators.get(victim.3))
        .map(|accelerator| accelerator.preempt_ns.min(TERM_CEILING_NS))
        .collect()
}

type Rival = (usize, usize, u8, usize, Vec<usize>);

/// The download of every PRR that a device other than `this` may ask
/// for, whatever its priority: the PCAP serves them in the order asked.
fn others_downloads(system: &System, fabric: &Fabric, this: (usize, usize)) -> Vec<u64> {
    let others: Vec<usize> = system
        .partitions
        .iter()
        .enumerate()
        .flat_map(|(q, p)| p.accelerators.iter().enumerate().map(move |(e, d)| ((q, e), d.accelerator)))
        .filter(|&(at, _)| at != this)
        .map(|(_, accelerator)| accelerator)
        .collect();
    fabric
        .prrs
        .iter()
        .filter(|prr| prr.hosts.iter().any(|a| others.contains(a)))
        .map(|prr| reconfig_ns(fabric, prr).min(TERM_CEILING_NS))
        .collect()
}

/// A holder for each PRR of `prrs` among `keepers` (each `(partition,
/// device, PRRs it can use)`, holding one PRR at most), if they can hold
/// them all at once: a maximum bipartite matching by augmenting paths, on
/// at most 32 PRRs. No PRR at all is trivially held: nothing can serve.
fn cover(prrs: &[usize], keepers: &[(usize, usize, &[usize])]) -> Option<Vec<(usize, (usize, usize))>> {
    // held_by[i]: the keeper holding prrs[i].
    let mut held_by: Vec<Option<usize>> = vec![None; prrs.len()];
    for k in 0..keepers.len() {
        let mut seen = vec![false; prrs.len()];
        augment(k, prrs, keepers, &mut held_by, &mut seen);
    }
    let holders: Option<Vec<_>> =
        prrs.iter().zip(&held_by).map(|(&r, k)| k.map(|k| (r, (keepers[k].0, keepers[k].1)))).collect();
    holders
}

/// Kuhn's step: finds keeper `k` a PRR, moving earlier keepers along.
fn augment(
    k: usize,
    prrs: &[usize],
    keepers: &[(usize, usize, &[usize])],
    held_by: &mut [Option<usize>],
    seen: &mut [bool],
) -> bool {
    for (i, r) in prrs.iter().enumerate() {
        if seen[i] || !keepers[k].2.contains(r) {
            continue;
        }
        seen[i] = true;
        let free = match held_by[i] {
            None => true,
            Some(other) => augment(other, prrs, keepers, held_by, seen),
        };
        if free {
            held_by[i] = Some(k);
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::{Accelerator, Function, Range, VirtualDevice};
    use crate::config::validate::fixtures;
    use alloc::string::ToString;

    const QAM16: usize = 0;
    const QAM64: usize = 1;
    const FFT512: usize = 2;
    const FFT1024: usize = 3;

    fn device(accelerator: usize) -> VirtualDevice {
        VirtualDevice { accelerator, ipa: 0x0b00_0000, signals: [80, 81, 82], deadline_us: None }
    }

    /// rtos (192) and gpos (64) of the validator's sample on Ker-ONE's fabric.
    fn system(rtos: &[usize], gpos: &[usize]) -> System {
        let mut s = fixtures::fabric_system();
        s.partitions[0].priority = 192;
        s.partitions[0].accelerators = rtos.iter().copied().map(device).collect();
        s.partitions[1].accelerators = gpos.iter().copied().map(device).collect();
        s
    }

    fn bounded(wait: &Wait) -> (Option<u64>, Option<u64>, Option<u64>) {
        match wait {
            Wait::Bounded { preempt_ns, reconfig_ns, latency, .. } => {
                (*preempt_ns, *reconfig_ns, latency.map(|bound| bound.worst))
            }
            Wait::Unbounded { holders } => panic!("unbounded: {holders:?}"),
        }
    }

    #[test]
    fn times_read_as_microseconds() {
        assert_eq!(micros_text(816_760), "816.76");
        assert_eq!(micros_text(71_100), "71.1");
        assert_eq!(micros_text(231_000), "231");
        assert_eq!(micros_text(1), "0.001");
        assert_eq!(micros_text(0), "0");
    }

    #[test]
    fn table_5_s_download_times_come_from_the_bitstreams() {
        let s = system(&[], &[]);
        let fabric = s.fabric.as_ref().unwrap();
        let times: Vec<u64> = fabric.prrs.iter().map(|prr| reconfig_ns(fabric, prr)).collect();
        assert_eq!(times, [231_000, 810_000, 1_206_000]);
        assert_eq!(compatible_prrs(fabric, QAM16), [0, 1]);
        assert_eq!(compatible_prrs(fabric, FFT1024), [2]);
        assert_eq!(compatible_prrs(fabric, 9), [] as [usize; 0]);
    }

    #[test]
    fn the_rtos_qam16_follows_eq_7_and_8() {
        // gpos may hold QAM-16, QAM-64 and FFT-512 in PRR 1 and 2: eq. 7.
        let s = system(&[QAM16], &[QAM16, QAM64, FFT512, FFT1024]);
        let all = device_latencies(&s, Some(&KER_ONE_TABLE_4));
        assert_eq!((all[0].partition, all[0].device, all[0].compatible.clone()), (0, 0, vec![0, 1]));
        // Then the PCAP: gpos may ask for a download into each of the
        // three; the last one's end hands its PRR over, then a search.
        let pcap = 231_000 + 810_000 + 1_206_000 + 3 * 810 + 640 + 500;
        assert_eq!(bounded(&all[0].wait), (Some(47_000), Some(810_000), Some(866_960 + pcap)));
        // Without the costs, the two terms still come out.
        let terms = device_latencies(&s, None);
        assert_eq!(bounded(&terms[0].wait), (Some(47_000), Some(810_000), None));
    }

    #[test]
    fn only_what_a_lower_priority_partition_may_hold_is_displaced() {
        // gpos uses FFT-1024 only, which never sits in PRR 1 or 2.
        let s = system(&[QAM16], &[FFT1024]);
        assert_eq!(
            bounded(&device_latencies(&s, Some(&KER_ONE_TABLE_4))[0].wait),
            (None, Some(810_000), Some(816_760 + 1_206_000 + 810 + 640 + 500))
        );
        // Alone on the fabric: no preemption path at all.
        let s = system(&[FFT512], &[]);
        assert_eq!(bounded(&device_latencies(&s, None)[0].wait), (None, Some(1_206_000), None));
    }

    #[test]
    fn a_preemption_between_two_others_may_be_under_way() {
        // A third partition, between rtos and gpos, may be stopping gpos's
        // QAM-64 or FFT-512 in PRR 2 (δ_pre 31 and 24.1 µs) when rtos asks.
        let mut s = system(&[QAM16], &[QAM64, FFT512]);
        let mut mid = s.partitions[1].clone();
        mid.priority = 150;
        mid.accelerators = vec![device(QAM16)];
        s.partitions.push(mid);
        let Wait::Bounded { switch_ns, latency: Some(bound), .. } =
            device_latencies(&s, Some(&KER_ONE_TABLE_4))[0].wait.clone()
        else {
            panic!("rtos's QAM-16 is bounded");
        };
        assert_eq!(switch_ns, Some(31_000));
        assert_eq!(bound.switch, Some(31_000 + 810 + 280 + 1_130 + 500));
        // Nothing can be stopped for another when all the others share one
        // priority.
        let s = system(&[QAM16], &[QAM64, FFT512]);
        assert!(matches!(device_latencies(&s, None)[0].wait, Wait::Bounded { switch_ns: None, .. }));
    }

    #[test]
    fn equal_priority_never_preempts() {
        let mut s = system(&[QAM16], &[QAM64]);
        s.partitions[1].priority = 192;
        // gpos's QAM-64 may hold one of PRR 1 and 2, never both: still bounded,
        // with nothing to preempt.
        assert_eq!(bounded(&device_latencies(&s, None)[0].wait), (None, Some(810_000), None));
        // Two devices of equal priority can hold both.
        s.partitions[1].accelerators.push(device(FFT512));
        let all = device_latencies(&s, None);
        assert_eq!(all[0].wait, Wait::Unbounded { holders: vec![(0, (1, 0)), (1, (1, 1))] });
    }

    #[test]
    fn a_partition_s_own_devices_compete_with_each_other() {
        // rtos's QAM-64 and FFT-512 can hold PRR 1 and 2, which is all its
        // QAM-16 can use.
        let s = system(&[QAM16, QAM64, FFT512], &[]);
        let all = device_latencies(&s, None);
        assert!(matches!(all[0].wait, Wait::Unbounded { .. }), "{:?}", all[0].wait);
        // FFT-512 can still fall back on PRR 3.
        assert_eq!(bounded(&all[2].wait), (None, Some(1_206_000), None));
    }

    #[test]
    fn higher_priority_holders_bound_nothing_for_the_lower() {
        let s = system(&[FFT1024], &[FFT1024]);
        let all = device_latencies(&s, Some(&KER_ONE_TABLE_4));
        let pcap = 1_206_000 + 810 + 640 + 500;
        assert_eq!(bounded(&all[0].wait), (Some(33_600), Some(1_206_000), Some(9_960 + 33_600 + 1_206_000 + pcap)));
        assert_eq!(all[1].wait, Wait::Unbounded { holders: vec![(2, (0, 0))] });
    }

    #[test]
    fn corrupt_indices_never_panic() {
        let mut s = system(&[QAM16, 7], &[usize::MAX]);
        let fabric = s.fabric.as_mut().unwrap();
        fabric.prrs[0].hosts.push(usize::MAX);
        fabric.bandwidth = 0;
        fabric.accelerators.push(Accelerator {
            name: "x".to_string(),
            function: Function::Qam16,
            frame_ns: u64::MAX,
            preempt_ns: u64::MAX,
        });
        fabric.memory = Range::new(0, 0);
        let all = device_latencies(&s, Some(&KER_ONE_TABLE_4));
        assert_eq!(all.len(), 3);
        // A device no PRR can host has nowhere to go.
        assert_eq!(all[1].wait, Wait::Unbounded { holders: vec![] });
        s.fabric = None;
        assert!(device_latencies(&s, None).is_empty());
    }
}
