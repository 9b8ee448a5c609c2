//! Lazy FP/SIMD switching: a vCPU's vector registers, FPCR and FPSR (528
//! bytes) move between its context and a pCPU's registers only when it
//! uses them.
//!
//! Saving and loading them at every switch costs about 45 instructions
//! and 1 KiB of memory traffic, for guests that often never touch them (an
//! RTOS built without floating point) or touch them in one partition of a
//! cyclic pCPU. So a vCPU enters its pCPU with FP/SIMD trapped
//! (CPTR_EL2.TFP) unless its values are still in that pCPU's registers.
//! Its first access there saves the values of whichever vCPU holds the
//! registers ([`Holder`]), loads its own, and runs again untrapped. A vCPU
//! that leaves keeps its values in the registers, for its next turn, when
//! it can only come back to this pCPU; one that may migrate saves them as
//! it leaves, since no other pCPU can reach this one's registers.
//!
//! Two records say where the values are: the vCPU's [`Place`], in its
//! context under its lock (a restart resets it to `Saved`, which drops
//! whatever a pCPU still holds of the old run), and each pCPU's holder,
//! which only that pCPU reads or writes. The holder's values are saved
//! only when its place still names this pCPU.

/// Where a vCPU's FP/SIMD values are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Place {
    /// In its context; no pCPU's registers hold them.
    #[default]
    Saved,
    /// In the registers of this pCPU; the copy in its context is stale.
    Loaded(usize),
}

impl Place {
    /// Whether the vCPU, put on pCPU `cpu`, runs with FP/SIMD trapped.
    pub const fn trap_on_entry(self, cpu: usize) -> bool {
        !matches!(self, Place::Loaded(on) if on == cpu)
    }

    /// Whether the vCPU, leaving pCPU `cpu`, saves its values: only a
    /// vCPU that may next run elsewhere.
    pub const fn save_on_leave(self, cpu: usize, may_migrate: bool) -> bool {
        may_migrate && matches!(self, Place::Loaded(on) if on == cpu)
    }
}

/// What one pCPU knows of its FP/SIMD registers: the vCPU whose values
/// they may hold, as an index the hypervisor picks (0: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Holder(pub u32);

impl Holder {
    pub const NONE: Holder = Holder(0);

    /// Whether the first FP/SIMD access of vCPU `taker` on pCPU `cpu` saves
    /// the registers into the holder's context first, the holder's place
    /// being `holder_place`: only while they are its values (it was not
    /// restarted, and did not leave with them saved).
    pub fn saves_holder(self, taker: Holder, cpu: usize, holder_place: Place) -> bool {
        self != Holder::NONE && self != taker && holder_place == Place::Loaded(cpu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_vcpu_whose_values_are_here_runs_untrapped() {
        assert!(Place::Saved.trap_on_entry(1));
        assert!(!Place::Loaded(1).trap_on_entry(1));
        assert!(Place::Loaded(2).trap_on_entry(1));
    }

    #[test]
    fn only_a_vcpu_that_may_migrate_saves_as_it_leaves() {
        assert!(!Place::Loaded(1).save_on_leave(1, false));
        assert!(Place::Loaded(1).save_on_leave(1, true));
        assert!(!Place::Saved.save_on_leave(1, true));
    }

    #[test]
    fn the_holder_is_saved_only_while_the_registers_are_its_values() {
        let (a, b) = (Holder(1), Holder(2));
        assert!(a.saves_holder(b, 0, Place::Loaded(0)));
        assert!(!a.saves_holder(b, 0, Place::Saved), "restarted or saved as it left");
        assert!(!a.saves_holder(b, 0, Place::Loaded(1)), "loaded on another pCPU since");
        assert!(!a.saves_holder(a, 0, Place::Loaded(0)), "its own values");
        assert!(!Holder::NONE.saves_holder(b, 0, Place::Saved));
    }

    /// A machine of pCPUs and vCPUs that follows the protocol: every vCPU
    /// writes its own values, and must read back the last ones it wrote,
    /// whatever ran, migrated or restarted in between.
    struct Machine {
        registers: Vec<u64>,
        holders: Vec<Holder>,
        trapped: Vec<bool>,
        running: Vec<Option<usize>>,
        /// Per vCPU: the saved copy, its place, where it runs, whether it
        /// may migrate, and the value it last wrote.
        saved: Vec<u64>,
        places: Vec<Place>,
        pcpu: Vec<usize>,
        migrates: Vec<bool>,
        written: Vec<u64>,
        loads: usize,
    }

    #[derive(Clone, Debug)]
    enum Step {
        /// The running vCPU of pCPU .0 leaves, and vCPU .1 runs there
        /// (if it may: its home, or any pCPU for one that migrates).
        Switch(usize, usize),
        /// The vCPU on pCPU .0 writes a new value, or checks its value.
        Use(usize, bool),
        /// vCPU .0 restarts (off every pCPU first).
        Restart(usize),
    }

    impl Machine {
        fn new(cpus: usize, migrates: Vec<bool>) -> Machine {
            let vcpus = migrates.len();
            Machine {
                registers: vec![0xdead; cpus],
                holders: vec![Holder::NONE; cpus],
                trapped: vec![true; cpus],
                running: vec![None; cpus],
                saved: vec![0; vcpus],
                places: vec![Place::Saved; vcpus],
                pcpu: (0..vcpus).map(|v| v % cpus).collect(),
                migrates,
                written: vec![0; vcpus],
                loads: 0,
            }
        }

        fn leave(&mut self, cpu: usize) {
            let Some(v) = self.running[cpu].take() else { return };
            if self.places[v].save_on_leave(cpu, self.migrates[v]) {
                self.saved[v] = self.registers[cpu];
                self.places[v] = Place::Saved;
                self.holders[cpu] = Holder::NONE;
            }
        }

        fn enter(&mut self, cpu: usize, v: usize) {
            self.running[cpu] = Some(v);
            self.pcpu[v] = cpu;
            self.trapped[cpu] = self.places[v].trap_on_entry(cpu);
        }

        /// The FP trap: what the hypervisor does on the first access.
        fn take(&mut self, cpu: usize, v: usize) {
            let holder = self.holders[cpu];
            let taker = Holder(v as u32 + 1);
            if let Some(h) = (holder.0 as usize).checked_sub(1) {
                if holder.saves_holder(taker, cpu, self.places[h]) {
                    self.saved[h] = self.registers[cpu];
                    self.places[h] = Place::Saved;
                }
            }
            self.registers[cpu] = self.saved[v];
            self.places[v] = Place::Loaded(cpu);
            self.holders[cpu] = taker;
            self.trapped[cpu] = false;
            self.loads += 1;
        }

        fn step(&mut self, step: Step, next: u64) {
            let cpus = self.registers.len();
            match step {
                Step::Switch(cpu, v) => {
                    let cpu = cpu % cpus;
                    let v = v % self.saved.len();
                    let home = v % cpus;
                    let allowed = cpu == home || self.migrates[v];
                    if !allowed || self.running.contains(&Some(v)) {
                        return;
                    }
                    self.leave(cpu);
                    self.enter(cpu, v);
                }
                Step::Use(cpu, write) => {
                    let cpu = cpu % cpus;
                    let Some(v) = self.running[cpu] else { return };
                    if self.trapped[cpu] {
                        self.take(cpu, v);
                    }
                    if write {
                        self.registers[cpu] = next;
                        self.written[v] = next;
                    } else {
                        assert_eq!(self.registers[cpu], self.written[v], "vCPU {v} on pCPU {cpu}");
                    }
                }
                Step::Restart(v) => {
                    let v = v % self.saved.len();
                    if let Some(cpu) = self.running.iter().position(|&r| r == Some(v)) {
                        self.leave(cpu);
                        self.trapped[cpu] = true;
                    }
                    self.saved[v] = 0;
                    self.places[v] = Place::Saved;
                    self.written[v] = 0;
                }
            }
        }
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0..3usize, 0..6usize).prop_map(|(c, v)| Step::Switch(c, v)),
            (0..3usize, any::<bool>()).prop_map(|(c, w)| Step::Use(c, w)),
            (0..6usize).prop_map(Step::Restart),
        ]
    }

    proptest! {
        #[test]
        fn every_vcpu_reads_back_what_it_wrote(
            migrates in proptest::collection::vec(any::<bool>(), 6),
            steps in proptest::collection::vec(step(), 1..300),
        ) {
            let mut machine = Machine::new(3, migrates);
            for (i, step) in steps.into_iter().enumerate() {
                machine.step(step, 1000 + i as u64);
            }
        }
    }

    #[test]
    fn a_pcpu_with_one_user_loads_its_values_once() {
        // vCPU 0 uses FP; vCPU 3 (same home, pCPU 0) never does.
        let mut machine = Machine::new(3, vec![false; 6]);
        for round in 0..10u64 {
            machine.step(Step::Switch(0, 0), 0);
            machine.step(Step::Use(0, true), round);
            machine.step(Step::Switch(0, 3), 0);
        }
        assert_eq!(machine.loads, 1);
    }
}
