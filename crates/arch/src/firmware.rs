//! Calls to the platform firmware (PSCI over SMC; on QEMU `virt` the
//! emulator itself answers them).

use smccc::psci;
use smccc::Smc;

/// Starts physical CPU `mpidr` at `entry` with x0 = `context`.
pub fn cpu_on(mpidr: u64, entry: u64, context: u64) -> Result<(), psci::Error> {
    psci::cpu_on::<Smc>(mpidr, entry, context)
}

/// Powers the machine off.
pub fn system_off() -> ! {
    let _ = psci::system_off::<Smc>();
    crate::cpu::park()
}

/// Restarts the whole machine.
pub fn system_reset() -> ! {
    let _ = psci::system_reset::<Smc>();
    crate::cpu::park()
}
