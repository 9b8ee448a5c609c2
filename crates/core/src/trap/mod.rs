//! What a guest exit means: the syndrome, PSCI calls, trapped system
//! registers and ID registers, the exceptions Partita gives a guest, and
//! the emulated console UART.

pub mod esr;
pub mod idreg;
pub mod inject;
pub mod psci;
pub mod sysreg;
pub mod vuart;
