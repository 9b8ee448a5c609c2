//! The worst-case allocation latency of an accelerator, known before boot
//! (Ker-ONE section 6, eq. 5-8): the time from a partition's first write
//! to an unconnected interface until the accelerator is ready for it.
//!
//! Four paths lead there (Ker-ONE Fig. 15): a direct assignment; an
//! assignment with reconfiguration; a preemption; a preemption with
//! reconfiguration. Each is a sum of atomic costs, plus the preempted
//! accelerator's wait for its consistency point (δ_pre) and the download
//! time of the PRR's bitstream (T_RCFG). The bound is the longest path
//! that can happen to the request.
//!
//! Times are in one unit of the caller's choice (nanoseconds, counter
//! ticks, instructions): nothing here converts.

/// The atomic costs of an allocation (Ker-ONE Table 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicCosts {
    /// Detect the write to an unconnected interface and start handling it.
    pub trap: u64,
    /// Schedule back to the partition.
    pub resume: u64,
    /// Take an interrupt from the fabric and hand it to the manager.
    pub pl_irq: u64,
    /// Receive the request and search for a solution.
    pub search: u64,
    /// Carry out a direct assignment.
    pub assign: u64,
    /// Carry out an assignment with reconfiguration (start the download).
    pub assign_reconfig: u64,
    /// Carry out a preemption (ask the running accelerator to stop).
    pub preempt: u64,
    /// Handle the end of a reconfiguration.
    pub irq_pcap: u64,
    /// Handle the stop of a preempted accelerator.
    pub irq_stop: u64,
}

impl AtomicCosts {
    /// The fixed part of each path, Ker-ONE's eq. 6 without T_preempt and
    /// T_RCFG:
    /// 1. trap, search, assign, resume;
    /// 2. trap, search, assign with reconfiguration, resume (the partition
    ///    waits off its accelerator), fabric interrupt, end of the
    ///    download, resume;
    /// 3. trap, search, preempt, resume, fabric interrupt, stop handled,
    ///    then a direct assignment, resume;
    /// 4. path 3 up to the stop, then an assignment with reconfiguration
    ///    and the end of its download: three resumes in all.
    pub fn paths(&self) -> [u64; 4] {
        let c = self;
        let start = c.trap + c.search;
        let stopped = c.preempt + c.resume + c.pl_irq + c.irq_stop;
        let reconfigured = c.assign_reconfig + c.pl_irq + c.irq_pcap + c.resume;
        [
            start + c.assign + c.resume,
            start + reconfigured + c.resume,
            start + stopped + c.assign + c.resume,
            start + stopped + c.assign + reconfigured + c.resume,
        ]
    }
}

/// Ker-ONE's atomic costs as measured on a Zynq-7000 at 667 MHz (Table 4),
/// in nanoseconds: what Ker-ONE's own bounds (eq. 6) come from, to compare
/// a board's measurement with. Never taken for a board's costs.
pub const KER_ONE_TABLE_4: AtomicCosts = AtomicCosts {
    trap: 760,
    resume: 640,
    pl_irq: 810,
    search: 500,
    assign: 1_130,
    assign_reconfig: 2_770,
    preempt: 340,
    irq_pcap: 640,
    irq_stop: 280,
};

/// The analysed latency of one request: each path that can happen, and
/// the worst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    /// Path 1 to 4 in full; `None` for a path that cannot happen (no PRR
    /// to reconfigure, nothing of lower priority to preempt).
    pub paths: [Option<u64>; 4],
    /// T_preempt(WCET): the longest δ_pre of what the request may displace.
    pub preempt: Option<u64>,
    /// T_RCFG(WCET): the longest download among the compatible PRRs.
    pub reconfig: Option<u64>,
    /// T_PCAP: the downloads the one PCAP may have to finish first, which
    /// eq. 5 leaves out (`None` when no other device downloads anything).
    pub pcap: Option<u64>,
    /// T_SWITCH: another allocation's preemption that may be under way in
    /// the PRR the request needs, which eq. 5 also leaves out (`None` when
    /// no preemption but the request's own can happen there).
    pub switch: Option<u64>,
    /// L_alloc(WCET): eq. 5, then T_PCAP and T_SWITCH.
    pub worst: u64,
}

/// L_alloc(WCET) for a request (eq. 5), from the atomic costs, the
/// reconfiguration time of each PRR that can host the accelerator
/// (`reconfig`, eq. 8), and the δ_pre of every accelerator the request may
/// preempt in one of those PRRs (`displaceable`, eq. 7: those a partition
/// of lower priority holds). A PRR whose download never happens for this
/// request (it holds the accelerator for good) still counts: the bound
/// does not assume which accelerator a PRR holds when the request comes.
///
/// Eq. 5 takes the PRR a request gets to be Idle, Busy or in Hold when
/// the request comes. Two waits come before that otherwise, and the
/// request waits in the list meanwhile:
///
/// - `others` is the download of each PRR that another device may ask
///   for. The PCAP downloads one bitstream at a time, in the order asked,
///   and each PRR has at most one download under way or waiting, so a
///   request may find all of them ahead of its own download, or of the
///   PRR it needs leaving Reconfig. Each starts when the last one's end is
///   taken, up to T_PL_irq late; the last one's end hands its PRR over and
///   searches for the request again (T_PCAP).
/// - `midway` is the δ_pre of each accelerator that another device's
///   preemption may be stopping in a PRR the request can use. The request
///   waits for that stop, its handling and the hand-over to the
///   preemptor, then searches again (T_SWITCH); a download that follows
///   is among `others`.
pub fn allocation_latency(
    costs: &AtomicCosts,
    reconfig: &[u64],
    displaceable: &[u64],
    others: &[u64],
    midway: &[u64],
) -> Bound {
    let [p1, p2, p3, p4] = costs.paths();
    let reconfig = reconfig.iter().copied().max();
    let preempt = displaceable.iter().copied().max();
    let paths =
        [Some(p1), reconfig.map(|r| p2 + r), preempt.map(|d| p3 + d), preempt.zip(reconfig).map(|(d, r)| p4 + d + r)];
    let pcap = (!others.is_empty()).then(|| {
        let downloads = others.iter().fold(0u64, |sum, d| sum.saturating_add(d.saturating_add(costs.pl_irq)));
        downloads.saturating_add(costs.irq_pcap + costs.search)
    });
    let switch = midway
        .iter()
        .copied()
        .max()
        .map(|d| d.saturating_add(costs.pl_irq + costs.irq_stop + costs.assign + costs.search));
    let worst = paths
        .iter()
        .flatten()
        .copied()
        .max()
        .unwrap_or(p1)
        .saturating_add(pcap.unwrap_or(0))
        .saturating_add(switch.unwrap_or(0));
    Bound { paths, preempt, reconfig, pcap, switch, worst }
}

/// The time to download `bytes` of bitstream at `bytes_per_second`, in
/// ticks of a `hz` clock, rounded up: PCAP moves the whole bitstream.
pub fn reconfig_time(bytes: u64, bytes_per_second: u64, hz: u64) -> u64 {
    let ticks = u128::from(bytes) * u128::from(hz);
    u64::try_from(ticks.div_ceil(u128::from(bytes_per_second.max(1)))).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE_4: AtomicCosts = KER_ONE_TABLE_4;

    #[test]
    fn table_4_gives_ker_one_s_paths_of_eq_6() {
        // 3.03 µs, 6.76 µs + T_RCFG, 5.10 µs + T_preempt, 9.96 µs + both.
        assert_eq!(TABLE_4.paths(), [3_030, 6_760, 5_100, 9_960]);
    }

    // Table 5: δ_pre per accelerator and T_RCFG per PRR, in nanoseconds.
    const DELTA_PRE: [u64; 4] = [47_000, 31_000, 24_100, 33_600];
    const T_RCFG: [u64; 3] = [231_000, 810_000, 1_206_000];

    #[test]
    fn qam16_s_bound_follows_eq_7_and_8() {
        // QAM-16 fits PRR 1 and 2, where QAM-16, QAM-64 and FFT-512 may run.
        let bound = allocation_latency(&TABLE_4, &T_RCFG[..2], &DELTA_PRE[..3], &[], &[]);
        assert_eq!(bound.preempt, Some(47_000));
        assert_eq!(bound.reconfig, Some(810_000));
        assert_eq!(bound.paths, [Some(3_030), Some(816_760), Some(52_100), Some(866_960)]);
        assert_eq!(bound.worst, 866_960);
    }

    #[test]
    fn fft1024_s_bound_uses_prr_3_only() {
        // FFT-1024 fits PRR 3 only, where FFT-512 and FFT-1024 may run.
        let bound = allocation_latency(&TABLE_4, &T_RCFG[2..], &DELTA_PRE[2..], &[], &[]);
        assert_eq!(bound.worst, 9_960 + 33_600 + 1_206_000);
    }

    #[test]
    fn paths_that_cannot_happen_do_not_count() {
        // Nothing of lower priority to preempt: paths 3 and 4 are out.
        let bound = allocation_latency(&TABLE_4, &[231_000], &[], &[], &[]);
        assert_eq!(bound.paths, [Some(3_030), Some(237_760), None, None]);
        assert_eq!(bound.worst, 237_760);
        // No compatible PRR at all: only the direct path is described.
        let bound = allocation_latency(&TABLE_4, &[], &[], &[], &[]);
        assert_eq!(bound.worst, 3_030);
    }

    #[test]
    fn every_download_another_device_may_ask_for_comes_first() {
        // The RTOS's QAM-16 on Ker-ONE's fabric, with the GPOS's QAM-64
        // and FFT-512 free to download into all three PRRs: each may be
        // under way or waiting on the PCAP, each taken T_PL_irq late.
        let bound = allocation_latency(&TABLE_4, &T_RCFG[..2], &DELTA_PRE[..3], &T_RCFG, &[]);
        let pcap = 231_000 + 810_000 + 1_206_000 + 3 * 810 + 640 + 500;
        assert_eq!(bound.pcap, Some(pcap));
        assert_eq!(bound.paths[3], Some(866_960), "the paths stay eq. 6's");
        assert_eq!(bound.worst, 866_960 + pcap);
    }

    #[test]
    fn a_preemption_under_way_in_the_prr_comes_first() {
        // The RTOS's QAM-16, while a mid-priority partition's request
        // stops a GPOS's QAM-16 (47 µs to its consistency point) in a PRR
        // the RTOS needs: the stop, its handling, the hand-over, a search.
        let bound = allocation_latency(&TABLE_4, &T_RCFG[..2], &DELTA_PRE[..3], &[], &[47_000, 31_000]);
        let switch = 47_000 + 810 + 280 + 1_130 + 500;
        assert_eq!(bound.switch, Some(switch));
        assert_eq!(bound.worst, 866_960 + switch);
    }

    #[test]
    fn the_bound_never_shrinks_when_a_cost_grows() {
        let base = allocation_latency(&TABLE_4, &T_RCFG, &DELTA_PRE, &[], &[]).worst;
        let mut slower = TABLE_4;
        slower.irq_stop += 1;
        assert!(allocation_latency(&slower, &T_RCFG, &DELTA_PRE, &[], &[]).worst > base);
        assert!(allocation_latency(&TABLE_4, &[T_RCFG[2] + 1], &DELTA_PRE, &[], &[]).worst > base);
        assert!(allocation_latency(&TABLE_4, &T_RCFG, &DELTA_PRE, &[1], &[]).worst > base);
        assert!(allocation_latency(&TABLE_4, &T_RCFG, &DELTA_PRE, &[], &[1]).worst > base);
    }

    #[test]
    fn a_download_takes_its_size_over_the_bandwidth_rounded_up() {
        // 128 MB/s: 29,568 bytes take 231 µs, counted in a 1 MHz clock.
        assert_eq!(reconfig_time(29_568, 128_000_000, 1_000_000), 231);
        assert_eq!(reconfig_time(1, 128_000_000, 1_000_000), 1);
        assert_eq!(reconfig_time(0, 128_000_000, 62_500_000), 0);
        assert_eq!(reconfig_time(u64::MAX, 1, u64::MAX), u64::MAX);
    }
}
