//! What a trap's handler found: the vocabulary shared by the handlers
//! (`trap`, `hypercall`, `channel`, `health`) and the one place that
//! carries their outcome out (`trap::handle`).

use partita_core::trap::inject::Exception;

/// What a handler asks for once it is done with the guest's registers.
pub enum Exit {
    /// Back to the guest, unless its pCPU's policy wants another vCPU.
    Resume,
    /// The EL2 timer fired: a quantum ended, a slot ended, a waiting vCPU's
    /// timer or a watchdog or budget deadline is due.
    Tick,
    /// The vCPU waits for an interrupt (WFI, a parked call): it leaves the
    /// pCPU unless one came meanwhile.
    Wait,
    /// A fault for the health monitor, which has not heard of it yet.
    Fault(Fault),
    /// The health monitor decided something other than going on about an
    /// event of this call (already logged).
    Health(partita_core::health::Action, Fault),
    /// PSCI SYSTEM_RESET: the partition restarts.
    Restart,
}

/// A fault, as the console line and the health monitor name it.
pub struct Fault {
    pub what: &'static str,
    /// The exception class (0 for an event that is not an exception).
    pub class: u8,
    pub address: Option<u64>,
    /// The exception the guest would have taken without Partita, which
    /// the health monitor's `inject` gives it; `None` for an event that is
    /// no such fault.
    pub exception: Option<Exception>,
}

impl Fault {
    /// An event with no exception for the guest.
    pub const fn event(what: &'static str, class: u8, address: Option<u64>) -> Fault {
        Fault { what, class, address, exception: None }
    }

    /// An access the guest was not given: UNDEFINED for it.
    pub const fn undefined(what: &'static str, class: u8, address: Option<u64>) -> Fault {
        Fault { what, class, address, exception: Some(Exception::Undefined) }
    }
}

/// What a port, doorbell or health-monitor read call comes to.
pub enum Reply {
    /// Status and x1..x3.
    Done(i64, [u64; 3]),
    /// The vCPU is parked (already marked waiting): the call is re-issued
    /// when it runs again.
    Wait,
    /// An argument the caller may not pass: the status, and an
    /// `illegal-hypercall` event for the health monitor.
    Illegal(i64),
}
