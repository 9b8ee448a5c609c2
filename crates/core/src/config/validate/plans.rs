//! Cyclic plans: their names and cores, the slots of each core, and what
//! every plan must agree on. Budgets, which concern the pCPUs no plan runs,
//! are in `budgets`.

use super::overlap::overlapping_pairs;
use super::{core_path, name_problem, partition_path, plan_path, Validator};
use crate::config::limits::{MAX_CYCLIC_CORES, MAX_PLANS, MAX_PLAN_SLOTS};
use crate::config::model::{CyclicCore, Plan, Slot};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// How every message names a slot, so the reader finds it without counting
/// tables: `plan "normal" core 2 slot 1 (control/vcpu0, 4000..6000 us)`.
pub fn slot_label(plan: &str, cpu: u32, index: usize, partition: &str, slot: &Slot) -> String {
    let (vcpu, start, end) = (slot.vcpu, slot.start_us, slot.end_us());
    format!("plan \"{plan}\" core {cpu} slot {index} ({partition}/vcpu{vcpu}, {start}..{end} us)")
}

/// One cyclic core of one plan, with how issues name it.
#[derive(Clone, Copy)]
struct CoreAt<'a> {
    /// Index of the plan, then of the core within it.
    i: usize,
    c: usize,
    plan: &'a Plan,
    core: &'a CyclicCore,
}

impl CoreAt<'_> {
    fn path(&self) -> String {
        core_path(self.i, self.c)
    }

    fn label(&self) -> String {
        format!("plan \"{}\" core {}", self.plan.name, self.core.cpu)
    }
}

/// How to bring a slot that runs past its major frame back inside: the
/// frame restarts at `frame`, so the rest of the slot would never run.
fn frame_hint(slot: &Slot, frame: u64) -> String {
    let grow = format!("set major_frame_us to at least {} (on every core of the plan)", slot.end_us());
    if slot.start_us < frame {
        let (lost, fits) = (slot.end_us() - frame, frame - slot.start_us);
        format!("; the frame restarts there, so its last {lost} us are never reached: shorten duration_us to {fits} or {grow}")
    } else {
        format!("; the frame restarts there, so the slot is never reached: start it before {frame} or {grow}")
    }
}

/// Per slot of a core, the first slot before it that it overlaps.
fn first_overlapped(core: &CyclicCore) -> Vec<Option<usize>> {
    let intervals: Vec<((), u64, u64)> = core.slots.iter().map(|slot| ((), slot.start_us, slot.end_us())).collect();
    let mut first = alloc::vec![None; core.slots.len()];
    // Sorted by the later slot, then the earlier: the first seen is the first.
    for (later, earlier) in overlapping_pairs(&intervals) {
        first[later].get_or_insert(earlier);
    }
    first
}

impl Validator<'_> {
    pub(super) fn plan_counts(&mut self) {
        let plans = &self.system.plans;
        if plans.len() > MAX_PLANS {
            self.push(String::new(), "plan", format!("{} plans; at most {MAX_PLANS} are allowed", plans.len()));
        }
        for (i, plan) in plans.iter().enumerate() {
            if plan.cores.len() > MAX_CYCLIC_CORES {
                let message = format!(
                    "plan \"{}\" has {} cores; a plan has at most {MAX_CYCLIC_CORES}",
                    plan.name,
                    plan.cores.len()
                );
                self.push(plan_path(i), "core", message);
            }
            for (c, core) in plan.cores.iter().enumerate().filter(|(_, core)| core.slots.len() > MAX_PLAN_SLOTS) {
                let at = CoreAt { i, c, plan, core };
                let message =
                    format!("{} has {} slots; a core has at most {MAX_PLAN_SLOTS}", at.label(), core.slots.len());
                self.push(at.path(), "slot", message);
            }
        }
    }

    pub(super) fn plans(&mut self) {
        let plans = &self.system.plans;
        for (i, plan) in plans.iter().enumerate() {
            self.plan_name(i, plan);
            for (c, core) in plan.cores.iter().enumerate() {
                self.cyclic_core(CoreAt { i, c, plan, core });
            }
            self.shared_major_frame(i, plan);
        }
        self.same_cores_in_every_plan();
        self.exclusive_not_cyclic();
    }

    fn plan_name(&mut self, i: usize, plan: &Plan) {
        if let Some(problem) = name_problem(&plan.name) {
            self.push(plan_path(i), "name", problem);
        }
        if let Some(first) = self.system.plans.iter().take(i).position(|other| other.name == plan.name) {
            self.push(plan_path(i), "name", format!("duplicate plan name \"{}\" (also plan[{first}])", plan.name));
        }
    }

    fn cyclic_core(&mut self, at: CoreAt) {
        let cpus = self.system.platform.cpus;
        let cpu = at.core.cpu;
        if cpu >= cpus {
            let message = format!("{}: pCPU {cpu} does not exist: platform.cpus is {cpus}", at.label());
            self.push(at.path(), "cpu", message);
        }
        if let Some(first) = at.plan.cores.iter().take(at.c).position(|other| other.cpu == cpu) {
            let message = format!("plan \"{}\" lists core {cpu} twice (also core[{first}])", at.plan.name);
            self.push(at.path(), "cpu", message);
        }
        if at.core.major_frame_us == 0 {
            self.push(at.path(), "major_frame_us", format!("{}: the major frame must be longer than 0 us", at.label()));
        }
        for (s, overlapped) in first_overlapped(at.core).into_iter().enumerate() {
            self.slot(at, s, overlapped);
        }
    }

    fn slot(&mut self, at: CoreAt, s: usize, overlapped: Option<usize>) {
        let slot = &at.core.slots[s];
        let path = format!("{}.slot[{s}]", at.path());
        let label = slot_label(&at.plan.name, at.core.cpu, s, self.partition_name(slot.partition), slot);
        self.slot_timing(at, s, overlapped, &path, &label);
        self.slot_owner(at, slot, &path, &label);
    }

    fn slot_timing(&mut self, at: CoreAt, s: usize, overlapped: Option<usize>, path: &str, label: &str) {
        let slot = &at.core.slots[s];
        let frame = at.core.major_frame_us;
        if slot.duration_us == 0 {
            self.push(path.into(), "duration_us", format!("{label} has a duration of 0 us; it must be longer"));
        } else if frame != 0 && slot.end_us() > frame {
            // A slot that even starts outside the frame is fixed at its start.
            let field = if slot.start_us >= frame { "start_us" } else { "duration_us" };
            let message = format!("{label} ends beyond the major frame ({frame} us){}", frame_hint(slot, frame));
            self.push(path.into(), field, message);
        }
        if let Some(first) = overlapped {
            let other = &at.core.slots[first];
            let message = format!("{label} overlaps slot {first} ({}..{} us)", other.start_us, other.end_us());
            self.push(path.into(), "start_us", message);
        }
    }

    /// The slot's vCPU must exist and be pinned to the slot's core: the
    /// hypervisor runs a vCPU only on its own pCPU.
    fn slot_owner(&mut self, at: CoreAt, slot: &Slot, path: &str, label: &str) {
        let partitions = &self.system.partitions;
        let Some(partition) = partitions.get(slot.partition) else {
            let message =
                format!("{label}: partition {} does not exist; there are {}", slot.partition, partitions.len());
            self.push(path.into(), "partition", message);
            return;
        };
        let vcpu = slot.vcpu;
        let Some(&pcpu) = partition.vcpus.get(vcpu as usize) else {
            let message = format!(
                "{label}: partition \"{}\" has {} vCPU(s), so vCPU {vcpu} does not exist",
                partition.name,
                partition.vcpus.len()
            );
            self.push(path.into(), "vcpu", message);
            return;
        };
        if pcpu != at.core.cpu {
            let message = format!(
                "{label}: vCPU {vcpu} of partition \"{}\" is pinned to pCPU {pcpu}, not to core {}",
                partition.name, at.core.cpu
            );
            self.push(path.into(), "vcpu", message);
        }
    }

    /// XtratuM: all cores under cyclic scheduling share the major frame, so
    /// their frames start together and a plan switch happens on all at once.
    fn shared_major_frame(&mut self, i: usize, plan: &Plan) {
        let Some(first) = plan.cores.first() else { return };
        for (c, core) in plan.cores.iter().enumerate().skip(1) {
            if core.major_frame_us != first.major_frame_us {
                let at = CoreAt { i, c, plan, core };
                let message = format!(
                    "{} has a major frame of {} us, but core {} has {} us; all cyclic cores of a plan share one",
                    at.label(),
                    core.major_frame_us,
                    first.cpu,
                    first.major_frame_us
                );
                self.push(at.path(), "major_frame_us", message);
            }
        }
    }

    /// A plan switch changes slots, not policies: a core that became cyclic
    /// (or stopped being) would change scheduler under running vCPUs.
    fn same_cores_in_every_plan(&mut self) {
        let Some((first, rest)) = self.system.plans.split_first() else { return };
        let has = |plan: &Plan, cpu: u32| plan.cores.iter().any(|core| core.cpu == cpu);
        let differ = |cpu: u32, cyclic: &Plan, other: &Plan| {
            format!(
                "core {cpu} is cyclic in plan \"{}\" but not in plan \"{}\"; every plan must schedule the same cores",
                cyclic.name, other.name
            )
        };
        for (i, plan) in rest.iter().enumerate().map(|(i, plan)| (i + 1, plan)) {
            for (c, core) in plan.cores.iter().enumerate().filter(|(_, core)| !has(first, core.cpu)) {
                self.push(core_path(i, c), "cpu", differ(core.cpu, plan, first));
            }
            for core in first.cores.iter().filter(|core| !has(plan, core.cpu)) {
                self.push(plan_path(i), "core", differ(core.cpu, first, plan));
            }
        }
    }

    /// An exclusive partition's pCPUs keep no scheduler at all.
    fn exclusive_not_cyclic(&mut self) {
        let (partitions, plans) = (&self.system.partitions, &self.system.plans);
        for (p, partition) in partitions.iter().enumerate().filter(|(_, partition)| partition.exclusive) {
            for (v, &pcpu) in partition.vcpus.iter().enumerate() {
                let cyclic = plans.iter().find(|plan| plan.cores.iter().any(|core| core.cpu == pcpu));
                if let Some(plan) = cyclic {
                    let message = format!(
                        "partition \"{}\" is exclusive, but its vCPU {v} is on pCPU {pcpu}, \
                         which plan \"{}\" schedules cyclically",
                        partition.name, plan.name
                    );
                    self.push(partition_path(p), "exclusive", message);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use alloc::format;
    use alloc::vec;

    #[test]
    fn overlapping_slots() {
        let mut s = planned();
        s.plans[0].cores[0].slots = vec![slot(1, 0, 2_000, 3_000), slot(2, 0, 4_000, 2_000)];
        expect_one(
            &s,
            "plan[0].core[0].slot[1]",
            "start_us",
            "plan \"normal\" core 2 slot 1 (control/vcpu0, 4000..6000 us) overlaps slot 0 (2000..5000 us)",
        );
        // Touching is not overlapping.
        s.plans[0].cores[0].slots[1].start_us = 5_000;
        assert_eq!(validate(&s), vec![]);
    }

    #[test]
    fn slot_beyond_the_major_frame() {
        let mut s = planned();
        s.plans[0].cores[0].slots[1].duration_us = 6_001;
        let text = "plan \"normal\" core 2 slot 1 (gpos/vcpu0, 4000..10001 us) ends beyond the major frame (10000 us)";
        expect_one(&s, "plan[0].core[0].slot[1]", "duration_us", text);
        s.plans[0].cores[0].slots[1] = slot(1, 0, 10_000, 1);
        expect_one(&s, "plan[0].core[0].slot[1]", "start_us", "ends beyond the major frame");
        s.plans[0].cores[0].slots[1] = slot(1, 0, u64::MAX, u64::MAX);
        expect_one(&s, "plan[0].core[0].slot[1]", "start_us", "ends beyond the major frame");
    }

    #[test]
    fn zero_durations() {
        let mut s = planned();
        s.plans[1].cores[0].slots[0].duration_us = 0;
        expect_one(&s, "plan[1].core[0].slot[0]", "duration_us", "has a duration of 0 us");
        let mut s = planned();
        for core in &mut s.plans[1].cores {
            core.major_frame_us = 0;
        }
        let issues = validate(&s);
        assert_eq!(issues.len(), 2, "{issues:#?}");
        assert!(issues.iter().all(|i| i.field == "major_frame_us" && i.message.contains("longer than 0 us")));
    }

    #[test]
    fn slot_of_a_missing_partition_or_vcpu() {
        let mut s = planned();
        s.plans[0].cores[0].slots[0].partition = 3;
        expect_one(
            &s,
            "plan[0].core[0].slot[0]",
            "partition",
            "plan \"normal\" core 2 slot 0 (?/vcpu0, 0..4000 us): partition 3 does not exist; there are 3",
        );
        let mut s = planned();
        s.plans[0].cores[1].slots[0].vcpu = 2;
        expect_one(&s, "plan[0].core[1].slot[0]", "vcpu", "partition \"gpos\" has 2 vCPU(s), so vCPU 2 does not exist");
    }

    #[test]
    fn slot_of_a_vcpu_pinned_elsewhere() {
        let mut s = planned();
        s.plans[0].cores[1].slots[0].vcpu = 0;
        expect_one(
            &s,
            "plan[0].core[1].slot[0]",
            "vcpu",
            "(gpos/vcpu0, 0..10000 us): vCPU 0 of partition \"gpos\" is pinned to pCPU 2, not to core 3",
        );
    }

    #[test]
    fn different_major_frames_in_one_plan() {
        let mut s = planned();
        s.plans[0].cores[1].major_frame_us = 20_000;
        expect_one(
            &s,
            "plan[0].core[1]",
            "major_frame_us",
            "plan \"normal\" core 3 has a major frame of 20000 us, but core 2 has 10000 us",
        );
        // Plans need not share it: each is its own hyperperiod.
        let mut s = planned();
        for core in &mut s.plans[1].cores {
            core.major_frame_us = 20_000;
        }
        assert_eq!(validate(&s), vec![]);
    }

    #[test]
    fn plan_names_and_cores() {
        let mut s = planned();
        s.plans[1].name = "normal".into();
        expect_one(&s, "plan[1]", "name", "duplicate plan name \"normal\" (also plan[0])");
        s.plans[1].name = "Normal".into();
        expect_one(&s, "plan[1]", "name", "may only use");
        let mut s = planned();
        s.plans[1].cores[1].cpu = 3;
        s.plans[1].cores[1].slots.clear();
        let issues = validate(&s);
        assert_eq!(issues.len(), 2, "{issues:#?}");
        assert_eq!((issues[0].path.as_str(), issues[0].field), ("plan[1].core[1]", "cpu"));
        assert!(issues[0].message.contains("plan \"degraded\" lists core 3 twice (also core[0])"));
        assert_eq!((issues[1].path.as_str(), issues[1].field), ("plan[1]", "core"), "core 2 is now missing");
    }

    #[test]
    fn cyclic_core_out_of_range() {
        let mut s = planned();
        s.plans[0].cores[1] = cyclic(4, vec![]);
        s.plans[1].cores[0] = cyclic(4, vec![]);
        let issues = validate(&s);
        assert_eq!(issues.len(), 2, "one per plan: {issues:#?}");
        assert_eq!((issues[0].path.as_str(), issues[0].field), ("plan[0].core[1]", "cpu"));
        assert_eq!(issues[0].message, "plan \"normal\" core 4: pCPU 4 does not exist: platform.cpus is 4");
    }

    #[test]
    fn every_plan_schedules_the_same_cores() {
        let mut s = planned();
        s.plans[1].cores.remove(1);
        expect_one(
            &s,
            "plan[1]",
            "core",
            "core 2 is cyclic in plan \"normal\" but not in plan \"degraded\"; every plan must schedule the same cores",
        );
        let mut s = planned();
        s.plans[0].cores.remove(0);
        expect_one(&s, "plan[1].core[1]", "cpu", "core 2 is cyclic in plan \"degraded\" but not in plan \"normal\"");
    }

    #[test]
    fn exclusive_partition_on_a_cyclic_core() {
        let mut s = planned();
        s.partitions[0].exclusive = true;
        assert_eq!(validate(&s), vec![]);
        s.partitions[2].exclusive = true;
        let issues = validate(&s);
        // Sharing pCPU 2 with gpos is the other half of the same mistake.
        assert_eq!(issues.len(), 2, "{issues:#?}");
        let issue = issues.iter().find(|i| i.message.contains("cyclically")).unwrap();
        assert_eq!((issue.path.as_str(), issue.field), ("partition[2]", "exclusive"));
        assert_eq!(
            issue.message,
            "partition \"control\" is exclusive, but its vCPU 0 is on pCPU 2, which plan \"normal\" schedules cyclically"
        );
    }

    #[test]
    fn plan_counts() {
        let mut s = planned();
        let template = s.plans[1].clone();
        s.plans.extend((0..7).map(|i| Plan { name: format!("p{i}"), ..template.clone() }));
        expect_one(&s, "", "plan", "9 plans; at most 8 are allowed");
        let mut s = planned();
        s.plans[0].cores[0].slots = (0..65).map(|i| slot(2, 0, i * 10, 10)).collect();
        expect_one(&s, "plan[0].core[0]", "slot", "plan \"normal\" core 2 has 65 slots; a core has at most 64");
        let mut s = planned();
        s.platform.cpus = 8;
        s.plans[0].cores = (0..9).map(|cpu| cyclic(cpu % 8, vec![])).collect();
        s.plans.truncate(1);
        expect_one(&s, "plan[0]", "core", "plan \"normal\" has 9 cores; a plan has at most 8");
    }
}
