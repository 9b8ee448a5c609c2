//! PSCI 1.1 as Partita offers it to partitions: the decision for each call,
//! independent of how the hypervisor then carries it out.

/// Function IDs (SMC Calling Convention, PSCI 1.1).
pub mod fid {
    pub const SMCCC_VERSION: u32 = 0x8000_0000;
    pub const SMCCC_ARCH_FEATURES: u32 = 0x8000_0001;
    pub const PSCI_VERSION: u32 = 0x8400_0000;
    pub const CPU_OFF: u32 = 0x8400_0002;
    pub const CPU_ON_32: u32 = 0x8400_0003;
    pub const CPU_ON_64: u32 = 0xc400_0003;
    pub const AFFINITY_INFO_32: u32 = 0x8400_0004;
    pub const AFFINITY_INFO_64: u32 = 0xc400_0004;
    pub const SYSTEM_OFF: u32 = 0x8400_0008;
    pub const SYSTEM_RESET: u32 = 0x8400_0009;
    pub const PSCI_FEATURES: u32 = 0x8400_000a;
}

/// Return codes, as the signed values a guest reads in x0.
pub mod ret {
    pub const SUCCESS: i64 = 0;
    pub const NOT_SUPPORTED: i64 = -1;
    pub const INVALID_PARAMETERS: i64 = -2;
    pub const DENIED: i64 = -3;
    pub const ALREADY_ON: i64 = -4;
    pub const ON_PENDING: i64 = -5;
    pub const INVALID_ADDRESS: i64 = -9;
}

/// PSCI 1.1, as PSCI_VERSION encodes it (major << 16 | minor).
pub const VERSION_1_1: i64 = 0x1_0001;
/// SMCCC 1.1.
pub const SMCCC_1_1: i64 = 0x1_0001;

/// What a guest asked for, decoded from x0..x3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// Answered on the spot with this value in x0.
    Immediate(i64),
    CpuOn {
        target: u64,
        entry: u64,
        context: u64,
    },
    CpuOff,
    AffinityInfo {
        target: u64,
        lowest_level: u64,
    },
    SystemOff,
    SystemReset,
    /// Not a standard firmware call at all (neither PSCI nor SMCCC arch).
    Unknown,
}

/// True for the PSCI (0x84/0xC4 prefix, 0x00..0x1f) and SMCCC architecture ranges.
pub fn is_firmware_call(function: u32) -> bool {
    let psci = matches!(function & 0xffff_ffe0, 0x8400_0000 | 0xc400_0000);
    let arch = function & 0xbfff_0000 == 0x8000_0000;
    psci || arch
}

/// Decodes a call. 32-bit variants truncate their arguments to 32 bits, as
/// the calling convention says.
pub fn decode(x: [u64; 4]) -> Call {
    let function = x[0] as u32;
    let wide = function & 0x4000_0000 != 0;
    let arg = |n: usize| if wide { x[n] } else { x[n] & 0xffff_ffff };
    match function {
        fid::SMCCC_VERSION => Call::Immediate(SMCCC_1_1),
        fid::SMCCC_ARCH_FEATURES => Call::Immediate(smccc_feature(arg(1) as u32)),
        fid::PSCI_VERSION => Call::Immediate(VERSION_1_1),
        fid::PSCI_FEATURES => Call::Immediate(psci_feature(arg(1) as u32)),
        fid::CPU_ON_32 | fid::CPU_ON_64 => Call::CpuOn { target: arg(1), entry: arg(2), context: arg(3) },
        fid::CPU_OFF => Call::CpuOff,
        fid::AFFINITY_INFO_32 | fid::AFFINITY_INFO_64 => Call::AffinityInfo { target: arg(1), lowest_level: arg(2) },
        fid::SYSTEM_OFF => Call::SystemOff,
        fid::SYSTEM_RESET => Call::SystemReset,
        f if is_firmware_call(f) => Call::Immediate(ret::NOT_SUPPORTED),
        _ => Call::Unknown,
    }
}

fn psci_feature(function: u32) -> i64 {
    match function {
        fid::PSCI_VERSION
        | fid::CPU_OFF
        | fid::CPU_ON_32
        | fid::CPU_ON_64
        | fid::AFFINITY_INFO_32
        | fid::AFFINITY_INFO_64
        | fid::SYSTEM_OFF
        | fid::SYSTEM_RESET
        | fid::PSCI_FEATURES
        | fid::SMCCC_VERSION => ret::SUCCESS,
        _ => ret::NOT_SUPPORTED,
    }
}

fn smccc_feature(function: u32) -> i64 {
    match function {
        fid::SMCCC_VERSION | fid::SMCCC_ARCH_FEATURES => ret::SUCCESS,
        _ => ret::NOT_SUPPORTED,
    }
}

/// The vCPU index a CPU_ON or AFFINITY_INFO target MPIDR names, if the
/// partition has it. Partita numbers vCPUs 0..n in Aff0; higher affinity
/// fields must be zero.
pub fn target_vcpu(mpidr: u64, vcpus: usize) -> Option<usize> {
    let affinity = mpidr & 0xff_00ff_ffff;
    let index = (affinity & 0xff) as usize;
    (affinity >> 8 == 0 && index < vcpus).then_some(index)
}

/// MPIDR value a guest reads for vCPU `index` (VMPIDR_EL2): bit 31 is RES1.
pub const fn vmpidr(index: usize) -> u64 {
    (1 << 31) | (index as u64 & 0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_and_features() {
        assert_eq!(decode([fid::PSCI_VERSION as u64, 0, 0, 0]), Call::Immediate(VERSION_1_1));
        assert_eq!(decode([fid::PSCI_FEATURES as u64, fid::CPU_ON_64 as u64, 0, 0]), Call::Immediate(0));
        assert_eq!(decode([fid::PSCI_FEATURES as u64, 0x8400_0001, 0, 0]), Call::Immediate(ret::NOT_SUPPORTED));
        assert_eq!(decode([fid::SMCCC_VERSION as u64, 0, 0, 0]), Call::Immediate(SMCCC_1_1));
    }

    #[test]
    fn cpu_on_32_bit_truncates_arguments() {
        let call = decode([fid::CPU_ON_32 as u64, 0xffff_0000_0000_0001, 0x1_4000_0000, 7]);
        assert_eq!(call, Call::CpuOn { target: 1, entry: 0x4000_0000, context: 7 });
        let call = decode([fid::CPU_ON_64 as u64, 1, 0x1_4000_0000, 7]);
        assert_eq!(call, Call::CpuOn { target: 1, entry: 0x1_4000_0000, context: 7 });
    }

    #[test]
    fn unknown_psci_function_is_not_supported_but_sip_call_is_unknown() {
        assert_eq!(decode([0x8400_0011, 0, 0, 0]), Call::Immediate(ret::NOT_SUPPORTED));
        assert_eq!(decode([0xc200_0000, 0, 0, 0]), Call::Unknown);
        assert!(!is_firmware_call(0xc200_0000));
        assert!(is_firmware_call(0x8000_8000));
    }

    #[test]
    fn targets_are_aff0_indices() {
        assert_eq!(target_vcpu(1, 2), Some(1));
        assert_eq!(target_vcpu(0x8000_0001, 2), Some(1));
        assert_eq!(target_vcpu(2, 2), None);
        assert_eq!(target_vcpu(0x100, 2), None);
        assert_eq!(vmpidr(3), 0x8000_0003);
    }
}
