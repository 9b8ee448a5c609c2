//! What Partita can add to a high-criticality partition's task response,
//! per release (Ker-ONE eq. 4): ΔResponse = ΔVMMcritical + ΔVMMsched +
//! Δ_VM^relEv, from the board's measured costs (`partita bench response
//! --save`), with ΔVMMcritical taken over the EL2 paths that can run on
//! the partition's pCPUs in this configuration.

use super::model::{ChannelKind, Criticality, Delivery, System};
use super::validate::Issue;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The measured terms, in instructions under `-icount` (one counter tick
/// each), and what one instruction is in guest time there.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseCosts {
    /// ΔVMMsched: the RTOS preempting a busy GPOS, worst case.
    pub sched: u64,
    /// Δ_VM^relEv (eq. 3): the worst release under Partita minus the best natively.
    pub release: u64,
    /// ΔVMMcritical per kind of pCPU and EL2 path
    /// (`partita_core::residency::name`), worst case.
    pub critical: Vec<Critical>,
    /// Nanoseconds of guest time per instruction (16 under `-icount 4`).
    pub ns_per_instruction: u64,
}

/// One path's worst stretch on one kind of pCPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Critical {
    pub pcpu: PcpuKind,
    pub path: String,
    pub max: u64,
}

/// The kinds of pCPU `partita bench response` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PcpuKind {
    /// Fixed priority, shared with other vCPUs.
    Shared,
    /// One partition's alone, virtual delivery.
    Exclusive,
    /// One partition's alone, direct delivery.
    Direct,
    /// Cyclic: a plan's slots.
    Cyclic,
}

impl PcpuKind {
    pub const ALL: [PcpuKind; 4] = [PcpuKind::Shared, PcpuKind::Exclusive, PcpuKind::Direct, PcpuKind::Cyclic];

    pub fn name(self) -> &'static str {
        match self {
            PcpuKind::Shared => "shared",
            PcpuKind::Exclusive => "exclusive",
            PcpuKind::Direct => "direct",
            PcpuKind::Cyclic => "cyclic",
        }
    }

    pub fn from_name(name: &str) -> Option<PcpuKind> {
        PcpuKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// What `pcpu` is in `system`, for `partition` on it.
    fn of(system: &System, partition: usize, pcpu: u32) -> PcpuKind {
        let part = &system.partitions[partition];
        if system.plans.iter().any(|plan| plan.cores.iter().any(|core| core.cpu == pcpu)) {
            PcpuKind::Cyclic
        } else if part.exclusive && part.interrupts == Delivery::Direct {
            PcpuKind::Direct
        } else if part.exclusive {
            PcpuKind::Exclusive
        } else {
            PcpuKind::Shared
        }
    }
}

/// The bound for one high-criticality partition, on its worst pCPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddedResponse {
    pub partition: usize,
    pub pcpu: u32,
    /// ΔVMMcritical there and the path it comes from.
    pub critical: u64,
    pub critical_path: String,
    /// ΔVMMsched: 0 where nothing else can run on the pCPU.
    pub sched: u64,
    pub release: u64,
}

impl AddedResponse {
    pub fn instructions(&self) -> u64 {
        self.critical + self.sched + self.release
    }

    pub fn ns(&self, costs: &ResponseCosts) -> u64 {
        self.instructions() * costs.ns_per_instruction
    }

    /// The terms as `check` prints them and an error names them.
    pub fn terms(&self, costs: &ResponseCosts) -> String {
        let us = |instructions: u64| micros(instructions * costs.ns_per_instruction);
        format!(
            "{} instructions ({} us) on pCPU {} = ΔVMMcritical {} ({}) + ΔVMMsched {} + Δ_VM^relEv {}",
            self.instructions(),
            us(self.instructions()),
            self.pcpu,
            self.critical,
            self.critical_path,
            self.sched,
            self.release
        )
    }
}

fn micros(ns: u64) -> String {
    format!("{}.{:02}", ns / 1000, ns % 1000 / 10)
}

/// Paths that only a configuration with the matching feature on a pCPU
/// can take there; every other path can happen anywhere.
fn feature_of(path: &str) -> Option<Feature> {
    match path {
        "hvc-port-send" | "hvc-port-receive" | "hvc-port-info" | "hvc-doorbell-ring" => Some(Feature::Channels),
        "accel-request" | "accel-manager" | "fabric-pass" | "hvc-acc-request" | "hvc-acc-release" => {
            Some(Feature::Accelerators)
        }
        "timed-output" | "hvc-tio-write-at" | "hvc-tio-cancel" | "hvc-tio-stats" => Some(Feature::TimedIo),
        "slot" => Some(Feature::Cyclic),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Feature {
    Channels,
    Accelerators,
    TimedIo,
    Cyclic,
}

/// Whether some partition on `pcpu` has `feature`.
fn on_cpu(system: &System, pcpu: u32, feature: Feature) -> bool {
    let here: Vec<usize> = (0..system.partitions.len()).filter(|&p| system.partitions[p].uses_cpu(pcpu)).collect();
    match feature {
        Feature::Channels => system.channels.iter().any(|c| match &c.kind {
            ChannelKind::Sampling { source, destinations, .. } => {
                here.contains(source) || destinations.iter().any(|d| here.contains(d))
            }
            ChannelKind::Queuing { source, destination, .. } => here.contains(source) || here.contains(destination),
            ChannelKind::SharedMemory { partitions, .. } => partitions.iter().any(|p| here.contains(p)),
        }),
        Feature::Accelerators => here.iter().any(|&p| !system.partitions[p].accelerators.is_empty()),
        Feature::TimedIo => system
            .timed_io
            .as_ref()
            .is_some_and(|t| t.grants.iter().any(|g| system.partitions[g.partition].vcpus.first() == Some(&pcpu))),
        Feature::Cyclic => system.plans.iter().any(|plan| plan.cores.iter().any(|core| core.cpu == pcpu)),
    }
}

/// Whether another partition than `partition` can run on `pcpu`.
fn shared(system: &System, partition: usize, pcpu: u32) -> bool {
    system.partitions.iter().enumerate().any(|(p, part)| p != partition && part.uses_cpu(pcpu))
        || system.partitions[partition].vcpus.iter().filter(|&&c| c == pcpu).count() > 1
}

/// The bound of each high-criticality partition, on the worst of its pCPUs.
pub fn added_responses(system: &System, costs: &ResponseCosts) -> Vec<AddedResponse> {
    let mut bounds = Vec::new();
    for (p, part) in system.partitions.iter().enumerate() {
        if part.criticality != Criticality::High {
            continue;
        }
        let mut cpus = part.vcpus.clone();
        cpus.extend(part.migrate.iter().flat_map(|m| m.to.iter().copied()));
        let worst = cpus.iter().map(|&pcpu| on(system, costs, p, pcpu)).max_by_key(AddedResponse::instructions);
        bounds.extend(worst);
    }
    bounds
}

fn on(system: &System, costs: &ResponseCosts, partition: usize, pcpu: u32) -> AddedResponse {
    let possible = |path: &str| feature_of(path).is_none_or(|feature| on_cpu(system, pcpu, feature));
    // The figures of this kind of pCPU; all of them where it was not
    // measured, the larger for it.
    let kind = PcpuKind::of(system, partition, pcpu);
    let measured = costs.critical.iter().any(|c| c.pcpu == kind);
    let (critical_path, critical) = costs
        .critical
        .iter()
        .filter(|c| (!measured || c.pcpu == kind) && possible(&c.path))
        .max_by_key(|c| c.max)
        .map(|c| (c.path.clone(), c.max))
        .unwrap_or_default();
    let sched = if shared(system, partition, pcpu) { costs.sched } else { 0 };
    AddedResponse { partition, pcpu, critical, critical_path, sched, release: costs.release }
}

/// A partition whose bound exceeds its `max_added_response_us`.
pub fn response_limits(system: &System, costs: &ResponseCosts) -> Vec<Issue> {
    let mut issues = Vec::new();
    for (p, part) in system.partitions.iter().enumerate() {
        if part.max_added_response_us.is_some() && part.criticality != Criticality::High {
            let message = format!(
                "partition \"{}\": a limit on what Partita adds to a release applies to high-criticality partitions only",
                part.name
            );
            issues.push(Issue { path: format!("partition[{p}]"), field: "max_added_response_us", message });
        }
    }
    for bound in added_responses(system, costs) {
        let part = &system.partitions[bound.partition];
        let Some(limit_us) = part.max_added_response_us else { continue };
        if bound.ns(costs) <= limit_us.saturating_mul(1000) {
            continue;
        }
        let message = format!(
            "partition \"{}\": Partita can add {} to each release, more than its max_added_response_us of {limit_us} us",
            part.name,
            bound.terms(costs)
        );
        issues.push(Issue { path: format!("partition[{}]", bound.partition), field: "max_added_response_us", message });
    }
    issues
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::validate::fixtures;
    use alloc::string::ToString;
    use alloc::vec;

    fn costs() -> ResponseCosts {
        ResponseCosts {
            sched: 400,
            release: 50,
            critical: vec![
                Critical { pcpu: PcpuKind::Shared, path: "hyp-timer".to_string(), max: 900 },
                Critical { pcpu: PcpuKind::Shared, path: "hvc-port-send".to_string(), max: 1400 },
                Critical { pcpu: PcpuKind::Exclusive, path: "set-way".to_string(), max: 700 },
            ],
            ns_per_instruction: 16,
        }
    }

    #[test]
    fn a_high_partition_alone_pays_neither_sched_nor_a_path_it_cannot_take() {
        let mut system = fixtures::system();
        system.partitions.truncate(1);
        system.partitions[0].criticality = Criticality::High;
        system.channels.clear();
        let bounds = added_responses(&system, &costs());
        assert_eq!(bounds.len(), 1);
        let bound = &bounds[0];
        assert_eq!(
            (bound.critical, bound.critical_path.as_str(), bound.sched, bound.release),
            (900, "hyp-timer", 0, 50)
        );
        assert_eq!(bound.instructions(), 950);
        assert_eq!(bound.ns(&costs()), 15_200);
    }

    #[test]
    fn sharing_a_pcpu_with_a_channel_user_adds_sched_and_the_port_copy() {
        let mut system = fixtures::system();
        let cpu = system.partitions[0].vcpus[0];
        system.partitions[0].criticality = Criticality::High;
        system.partitions[1].vcpus = vec![cpu];
        system.channels = vec![crate::config::model::Channel {
            name: "c".to_string(),
            kind: ChannelKind::Queuing { source: 1, destination: 1, max_message: 64, depth: 1 },
        }];
        let bound = &added_responses(&system, &costs())[0];
        assert_eq!((bound.critical_path.as_str(), bound.sched), ("hvc-port-send", 400));
        assert_eq!(bound.instructions(), 1850);
    }

    #[test]
    fn an_exclusive_pcpu_takes_its_own_figures_and_a_kind_not_measured_takes_all() {
        let mut system = fixtures::system();
        system.partitions.truncate(1);
        system.channels.clear();
        system.partitions[0].criticality = Criticality::High;
        system.partitions[0].exclusive = true;
        let bound = &added_responses(&system, &costs())[0];
        assert_eq!((bound.critical_path.as_str(), bound.critical), ("set-way", 700));
        system.partitions[0].interrupts = Delivery::Direct;
        let bound = &added_responses(&system, &costs())[0];
        assert_eq!((bound.critical_path.as_str(), bound.critical), ("hyp-timer", 900), "no direct figures");
    }

    #[test]
    fn a_limit_on_a_low_partition_is_refused() {
        let mut system = fixtures::system();
        system.partitions[1].max_added_response_us = Some(100);
        let issues = response_limits(&system, &costs());
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].path, "partition[1]");
        assert!(issues[0].message.contains("high-criticality partitions only"), "{}", issues[0].message);
    }

    #[test]
    fn a_limit_under_the_bound_is_refused_with_its_terms() {
        let mut system = fixtures::system();
        system.partitions.truncate(1);
        system.channels.clear();
        system.partitions[0].criticality = Criticality::High;
        system.partitions[0].max_added_response_us = Some(16);
        assert!(response_limits(&system, &costs()).is_empty(), "15.2 us fits in 16");
        system.partitions[0].max_added_response_us = Some(15);
        let issues = response_limits(&system, &costs());
        assert_eq!(issues.len(), 1);
        assert_eq!((issues[0].path.as_str(), issues[0].field), ("partition[0]", "max_added_response_us"));
        assert!(issues[0].message.contains("950 instructions (15.20 us)"), "{}", issues[0].message);
        assert!(issues[0].message.contains("ΔVMMcritical 900 (hyp-timer) + ΔVMMsched 0 + Δ_VM^relEv 50"));
    }
}
