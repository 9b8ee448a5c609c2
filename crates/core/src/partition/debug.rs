//! A vCPU's hardware debug registers (breakpoints, watchpoints, single
//! step, the OS lock): its own, switched with it, but only once it has
//! touched them.
//!
//! The debug registers are about twenty on a typical core, and a switch
//! that saves and loads them all would cost every partition switch that
//! much for guests that never debug. So a vCPU starts with them trapped;
//! its first access makes them its own (`Given`) and runs again
//! untrapped. Only a given vCPU's registers are saved and loaded; a vCPU
//! that has not touched them finds the pCPU's registers in their reset
//! state, cleared once when the last vCPU there that had them left.

/// Whether a vCPU has the debug registers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ownership {
    /// Never touched since it (re)started: accesses trap.
    #[default]
    Untouched,
    /// Touched: accesses run untrapped; its values are switched with it.
    Given,
}

/// What loading a vCPU does to its pCPU's debug registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Load {
    /// Load the vCPU's saved values.
    pub restore: bool,
    /// Put the registers in their reset state (the last vCPU here had them).
    pub clear: bool,
    /// Trap accesses (MDCR_EL2.TDA, TDOSA, TDRA).
    pub trap: bool,
}

impl Ownership {
    /// Loading a vCPU of this ownership onto a pCPU whose registers hold a
    /// vCPU's values (`pcpu_dirty`) rather than the reset state.
    pub const fn load(self, pcpu_dirty: bool) -> Load {
        match self {
            Ownership::Given => Load { restore: true, clear: false, trap: false },
            Ownership::Untouched => Load { restore: false, clear: pcpu_dirty, trap: true },
        }
    }

    /// Whether the pCPU's registers hold a vCPU's values once a vCPU of
    /// this ownership runs there.
    pub const fn leaves_dirty(self) -> bool {
        matches!(self, Ownership::Given)
    }

    /// Whether taking the vCPU off its pCPU saves its registers.
    pub const fn saves(self) -> bool {
        matches!(self, Ownership::Given)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vcpu_that_never_debugs_costs_nothing_but_one_clear() {
        let untouched = Ownership::default();
        assert_eq!(untouched, Ownership::Untouched);
        assert_eq!(untouched.load(false), Load { restore: false, clear: false, trap: true });
        assert_eq!(untouched.load(true), Load { restore: false, clear: true, trap: true });
        assert!(!untouched.saves() && !untouched.leaves_dirty());
    }

    #[test]
    fn a_given_vcpu_has_its_values_switched_with_it() {
        for dirty in [false, true] {
            assert_eq!(Ownership::Given.load(dirty), Load { restore: true, clear: false, trap: false });
        }
        assert!(Ownership::Given.saves() && Ownership::Given.leaves_dirty());
    }

    #[test]
    fn a_pcpu_is_cleared_once_between_a_debugger_and_the_others() {
        // Given, untouched, untouched: one clear, at the first switch only.
        let mut dirty = false;
        let mut clears = 0;
        for vcpu in [Ownership::Given, Ownership::Untouched, Ownership::Untouched] {
            clears += usize::from(vcpu.load(dirty).clear);
            dirty = vcpu.leaves_dirty();
        }
        assert_eq!(clears, 1);
    }
}
