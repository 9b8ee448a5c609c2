//! The GICv3 virtual CPU interface (ICH_*_EL2): list registers and the
//! state that makes up a vCPU's view of its interrupts.

use crate::cpu::write_sysreg;
use crate::read_sysreg;

/// ICH_ELRSR_EL2: bit n set when list register n is free.
pub fn free_list_registers() -> u64 {
    read_sysreg!("S3_4_C12_C11_5")
}

/// ICH_HCR_EL2.En: the virtual CPU interface is on.
pub const HCR_EN: u64 = 1 << 0;
/// ICH_HCR_EL2.UIE: maintenance interrupt when at most one list register is valid.
pub const HCR_UIE: u64 = 1 << 1;
/// ICH_HCR_EL2.NPIE: maintenance interrupt when no list register is pending.
pub const HCR_NPIE: u64 = 1 << 3;

/// The most list registers an implementation has.
pub const MAX_LRS: usize = 16;

/// Number of list registers this CPU implements (ICH_VTR_EL2.ListRegs + 1).
pub fn list_registers() -> usize {
    ((read_sysreg!("S3_4_C12_C11_1") & 0x1f) as usize + 1).min(MAX_LRS)
}

macro_rules! by_index {
    ($n:expr, $read:ident, $( $i:literal => $reg:literal ),* ) => {
        match $n { $( $i => $read!($reg), )* _ => 0 }
    };
}

macro_rules! write_by_index {
    ($n:expr, $value:expr, $( $i:literal => $reg:literal ),* ) => {
        match $n { $( $i => write_sysreg!($reg, $value), )* _ => {} }
    };
}

/// Reads ICH_LR<n>_EL2.
pub fn read_lr(n: usize) -> u64 {
    by_index!(n, read_sysreg,
        0 => "S3_4_C12_C12_0", 1 => "S3_4_C12_C12_1", 2 => "S3_4_C12_C12_2", 3 => "S3_4_C12_C12_3",
        4 => "S3_4_C12_C12_4", 5 => "S3_4_C12_C12_5", 6 => "S3_4_C12_C12_6", 7 => "S3_4_C12_C12_7",
        8 => "S3_4_C12_C13_0", 9 => "S3_4_C12_C13_1", 10 => "S3_4_C12_C13_2", 11 => "S3_4_C12_C13_3",
        12 => "S3_4_C12_C13_4", 13 => "S3_4_C12_C13_5", 14 => "S3_4_C12_C13_6", 15 => "S3_4_C12_C13_7")
}

/// Writes ICH_LR<n>_EL2.
pub fn write_lr(n: usize, value: u64) {
    write_by_index!(n, value,
        0 => "S3_4_C12_C12_0", 1 => "S3_4_C12_C12_1", 2 => "S3_4_C12_C12_2", 3 => "S3_4_C12_C12_3",
        4 => "S3_4_C12_C12_4", 5 => "S3_4_C12_C12_5", 6 => "S3_4_C12_C12_6", 7 => "S3_4_C12_C12_7",
        8 => "S3_4_C12_C13_0", 9 => "S3_4_C12_C13_1", 10 => "S3_4_C12_C13_2", 11 => "S3_4_C12_C13_3",
        12 => "S3_4_C12_C13_4", 13 => "S3_4_C12_C13_5", 14 => "S3_4_C12_C13_6", 15 => "S3_4_C12_C13_7")
}

/// ICH_HCR_EL2.
pub fn set_control(value: u64) {
    write_sysreg!("S3_4_C12_C11_0", value);
    crate::cpu::isb();
}

/// ICH_MISR_EL2: why a maintenance interrupt fired.
pub fn maintenance_status() -> u64 {
    read_sysreg!("S3_4_C12_C11_2")
}

/// The virtual interface state of a vCPU that is not on a CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct VgicContext {
    pub lrs: [u64; MAX_LRS],
    pub vmcr: u64,
    pub ap0r0: u64,
    pub ap1r0: u64,
    pub hcr: u64,
}

impl VgicContext {
    /// A vCPU at reset: interface enabled, nothing listed.
    pub fn reset() -> Self {
        Self { hcr: HCR_EN, ..Self::default() }
    }

    /// Saves the running vCPU's virtual interface and turns it off.
    pub fn save(&mut self) {
        for n in 0..list_registers() {
            self.lrs[n] = read_lr(n);
            write_lr(n, 0);
        }
        self.vmcr = read_sysreg!("S3_4_C12_C11_7");
        self.ap0r0 = read_sysreg!("S3_4_C12_C8_0");
        self.ap1r0 = read_sysreg!("S3_4_C12_C9_0");
        self.hcr = read_sysreg!("S3_4_C12_C11_0");
        set_control(0);
    }

    pub fn restore(&self) {
        for n in 0..list_registers() {
            write_lr(n, self.lrs[n]);
        }
        write_sysreg!("S3_4_C12_C11_7", self.vmcr);
        write_sysreg!("S3_4_C12_C8_0", self.ap0r0);
        write_sysreg!("S3_4_C12_C9_0", self.ap1r0);
        set_control(self.hcr | HCR_EN);
    }
}
