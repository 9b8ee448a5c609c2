//! The calls a ZynqMP's programmable logic is reconfigured by: the platform
//! management firmware's `PM_FPGA_LOAD` and `PM_FPGA_GET_STATUS`, reached
//! from EL2 through Trusted Firmware-A's SiP service (an SMC). The PMU
//! firmware's XilFPGA then streams the bitstream from DDR into the PCAP
//! with the CSU DMA.
//!
//! Only the encoding lives here, so that the host tests pin it down; the
//! backend that makes the calls is the board's (`docs/zynqmp-board.md`).
//! QEMU's `xlnx-zcu102` has neither PMU firmware nor TF-A, so there the
//! emulated fabric stands in.

/// SMC function IDs of the SiP service: fast call, SMC64, owner SiP (2).
const SIP_SERVICE: u32 = 0xc200_0000;
/// The firmware's API identifiers for the two calls.
const PM_FPGA_LOAD: u32 = 22;
const PM_FPGA_GET_STATUS: u32 = 23;
/// `PM_FPGA_LOAD`'s flags: bit 0 set for a partial bitstream, the kind
/// each PRR is reconfigured with.
const FLAG_PARTIAL: u32 = 1 << 0;

/// One SMC: the function ID in x0 and its arguments in x1 and x2, each
/// carrying two 32-bit firmware arguments, the first in the low half.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmcCall {
    pub function: u32,
    pub args: [u64; 2],
}

const fn pair(low: u32, high: u32) -> u64 {
    (high as u64) << 32 | low as u64
}

/// Loads `size` bytes of bitstream at DDR address `address` (which the
/// CSU DMA reads: cleaned to the point of coherency first).
pub const fn fpga_load(address: u64, size: u32, partial: bool) -> SmcCall {
    let flags = if partial { FLAG_PARTIAL } else { 0 };
    SmcCall {
        function: SIP_SERVICE | PM_FPGA_LOAD,
        args: [pair(address as u32, (address >> 32) as u32), pair(size, flags)],
    }
}

/// A `PM_FPGA_LOAD` call's buffer, size and kind (partial or not); `None`
/// for another call.
pub const fn decode_load(call: SmcCall) -> Option<(u64, u32, bool)> {
    if call.function != SIP_SERVICE | PM_FPGA_LOAD {
        return None;
    }
    let [address, size_flags] = call.args;
    Some((address, size_flags as u32, (size_flags >> 32) as u32 & FLAG_PARTIAL != 0))
}

/// Reads the PCAP's status register through the firmware.
pub const fn fpga_status() -> SmcCall {
    SmcCall { function: SIP_SERVICE | PM_FPGA_GET_STATUS, args: [0, 0] }
}

/// What the firmware answers in the low 32 bits of x0, named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirmwareStatus {
    Success,
    Internal,
    Conflict,
    NoAccess,
    InvalidNode,
    DoubleRequest,
    AbortSuspend,
    Timeout,
    /// A code this table does not know, kept for the report.
    Other(u32),
}

impl FirmwareStatus {
    /// From x0 after the SMC; the upper half carries a call's first return
    /// value (the PCAP status for `fpga_status`), not the status.
    pub const fn from_x0(x0: u64) -> Self {
        match x0 as u32 {
            0 => Self::Success,
            2000 => Self::Internal,
            2001 => Self::Conflict,
            2002 => Self::NoAccess,
            2003 => Self::InvalidNode,
            2004 => Self::DoubleRequest,
            2005 => Self::AbortSuspend,
            2006 => Self::Timeout,
            other => Self::Other(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_load_names_its_buffer_size_and_kind() {
        let call = fpga_load(0x8_1234_5000, 103_680, true);
        assert_eq!(call.function, 0xc200_0016);
        assert_eq!(call.args, [0x0000_0008_1234_5000, 0x0000_0001_0001_9500]);
        assert_eq!(fpga_load(0x1000, 16, false).args[1], 16, "a full bitstream sets no flag");
        assert_eq!(fpga_status(), SmcCall { function: 0xc200_0017, args: [0, 0] });
        assert_eq!(decode_load(call), Some((0x8_1234_5000, 103_680, true)));
        assert_eq!(decode_load(fpga_status()), None);
    }

    #[test]
    fn firmware_statuses_are_named() {
        assert_eq!(FirmwareStatus::from_x0(0x0000_0004_0000_0000), FirmwareStatus::Success, "a value above");
        assert_eq!(FirmwareStatus::from_x0(2002), FirmwareStatus::NoAccess);
        assert_eq!(FirmwareStatus::from_x0(7), FirmwareStatus::Other(7));
    }
}
