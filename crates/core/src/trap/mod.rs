//! What a guest exit means: the syndrome, PSCI calls, trapped system
//! registers and the emulated console UART.

pub mod esr;
pub mod psci;
pub mod sysreg;
pub mod vuart;
