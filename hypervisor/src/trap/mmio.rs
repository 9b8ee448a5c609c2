//! Stage-2 data aborts a partition may make: its emulated console page
//! and its view of the GIC distributor and redistributors. Any other is a
//! fault, which the caller raises.

use super::exit::Exit;
use crate::partition::Partition;
use crate::state::{PerCpu, System};
use crate::vgic;
use partita_arch::exception::Regs;
use partita_core::trap::esr::MmioAccess;
use partita_core::trap::vuart;

/// Emulates the access, or `None` when it is outside every emulated frame
/// (or the syndrome does not describe it).
pub fn data_abort(
    sys: &System,
    me: &PerCpu,
    regs: &mut Regs,
    part: &Partition,
    access: Option<MmioAccess>,
    ipa: u64,
) -> Option<Exit> {
    let access = access?;
    let offset = ipa.wrapping_sub(part.config.console);
    if offset < vuart::PAGE_SIZE {
        console_access(regs, part, access, offset);
    } else if let Some(frame) = vgic::frame(sys, part, ipa) {
        gic_access(me, regs, part, access, frame);
    } else {
        return None;
    }
    regs.skip_instruction();
    Some(Exit::Resume)
}

fn gic_access(me: &PerCpu, regs: &mut Regs, part: &Partition, access: MmioAccess, frame: vgic::Frame) {
    let rt = usize::from(access.rt);
    let value = access.write.then(|| regs.get(rt) & size_mask(access.size));
    let vcpu = me.current_vcpu().map_or(0, |v| v.index);
    let result = vgic::mmio(me, part, vcpu, frame, access.size, value);
    if !access.write {
        regs.set(rt, result & size_mask(access.size));
    }
}

pub fn console_access(regs: &mut Regs, part: &Partition, access: MmioAccess, offset: u64) {
    let rt = usize::from(access.rt);
    if access.write {
        let value = regs.get(rt) as u32;
        let byte = part.console.lock().uart.write(offset, value);
        if let Some(byte) = byte {
            part.console_byte(byte);
        }
    } else {
        let value = part.console.lock().uart.read(offset);
        regs.set(rt, u64::from(value) & size_mask(access.size));
    }
}

fn size_mask(size: u8) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (size * 8)) - 1
    }
}
