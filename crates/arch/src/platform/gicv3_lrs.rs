//! The GICv3 virtual CPU interface (ICH_*_EL2): list registers and the
//! state that makes up a vCPU's view of its interrupts.

use super::{ListRegisters, VgicContext, MAX_LRS};
use crate::cpu::write_sysreg;
use crate::read_sysreg;
use partita_core::vgic::lr::Refill;

/// ICH_ELRSR_EL2: bit n set when list register n is free.
fn free_list_registers() -> u64 {
    read_sysreg!("S3_4_C12_C11_5")
}

/// ICH_HCR_EL2.En: the virtual CPU interface is on.
const HCR_EN: u64 = 1 << 0;
/// ICH_HCR_EL2.UIE: maintenance interrupt when at most one list register is valid.
const HCR_UIE: u64 = 1 << 1;
/// ICH_HCR_EL2.NPIE: maintenance interrupt when no list register is pending.
const HCR_NPIE: u64 = 1 << 3;

/// Number of list registers this CPU implements (ICH_VTR_EL2.ListRegs + 1).
fn list_registers() -> usize {
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
fn read_lr(n: usize) -> u64 {
    by_index!(n, read_sysreg,
        0 => "S3_4_C12_C12_0", 1 => "S3_4_C12_C12_1", 2 => "S3_4_C12_C12_2", 3 => "S3_4_C12_C12_3",
        4 => "S3_4_C12_C12_4", 5 => "S3_4_C12_C12_5", 6 => "S3_4_C12_C12_6", 7 => "S3_4_C12_C12_7",
        8 => "S3_4_C12_C13_0", 9 => "S3_4_C12_C13_1", 10 => "S3_4_C12_C13_2", 11 => "S3_4_C12_C13_3",
        12 => "S3_4_C12_C13_4", 13 => "S3_4_C12_C13_5", 14 => "S3_4_C12_C13_6", 15 => "S3_4_C12_C13_7")
}

/// Writes ICH_LR<n>_EL2.
fn write_lr(n: usize, value: u64) {
    write_by_index!(n, value,
        0 => "S3_4_C12_C12_0", 1 => "S3_4_C12_C12_1", 2 => "S3_4_C12_C12_2", 3 => "S3_4_C12_C12_3",
        4 => "S3_4_C12_C12_4", 5 => "S3_4_C12_C12_5", 6 => "S3_4_C12_C12_6", 7 => "S3_4_C12_C12_7",
        8 => "S3_4_C12_C13_0", 9 => "S3_4_C12_C13_1", 10 => "S3_4_C12_C13_2", 11 => "S3_4_C12_C13_3",
        12 => "S3_4_C12_C13_4", 13 => "S3_4_C12_C13_5", 14 => "S3_4_C12_C13_6", 15 => "S3_4_C12_C13_7")
}

/// ICH_HCR_EL2.
fn set_control(value: u64) {
    write_sysreg!("S3_4_C12_C11_0", value);
    crate::cpu::isb();
}

/// The GICv3 virtual CPU interface, through the ICH_*_EL2 registers.
pub struct IchListRegisters;

impl ListRegisters for IchListRegisters {
    fn count() -> usize {
        list_registers()
    }

    fn read(n: usize) -> u64 {
        read_lr(n)
    }

    fn write(n: usize, value: u64) {
        write_lr(n, value)
    }

    fn free() -> u64 {
        free_list_registers()
    }

    fn request_maintenance(refill: Refill) {
        let request = match refill {
            Refill::NotNeeded => 0,
            Refill::WhenNonePending => HCR_NPIE,
            Refill::WhenFewListed => HCR_UIE,
        };
        set_control(HCR_EN | request);
    }

    fn save(ctx: &mut VgicContext) {
        // An empty register (ICH_ELRSR_EL2) holds nothing to keep, and the
        // next load writes only the ones listed here.
        let count = list_registers();
        let listed = !free_list_registers() & ((1 << count) - 1);
        let mut left = listed;
        while left != 0 {
            let n = left.trailing_zeros() as usize;
            left &= left - 1;
            ctx.lrs[n] = read_lr(n);
            write_lr(n, 0);
        }
        ctx.listed = listed;
        ctx.vmcr = read_sysreg!("S3_4_C12_C11_7");
        ctx.apr[0] = read_sysreg!("S3_4_C12_C8_0");
        ctx.apr[1] = read_sysreg!("S3_4_C12_C9_0");
        ctx.hcr = read_sysreg!("S3_4_C12_C11_0");
        set_control(0);
    }

    fn restore(ctx: &VgicContext) {
        // Every other register is free: emptied by the save that listed it,
        // or free when that save looked.
        let mut left = ctx.listed;
        while left != 0 {
            let n = left.trailing_zeros() as usize;
            left &= left - 1;
            write_lr(n, ctx.lrs[n]);
        }
        write_sysreg!("S3_4_C12_C11_7", ctx.vmcr);
        write_sysreg!("S3_4_C12_C8_0", ctx.apr[0]);
        write_sysreg!("S3_4_C12_C9_0", ctx.apr[1]);
        set_control(ctx.hcr | HCR_EN);
    }
}
