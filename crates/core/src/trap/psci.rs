//! PSCI 1.1 as Partita offers it to partitions, with the SMCCC discovery
//! calls a stock kernel makes: the decision for each call, independent of
//! how the hypervisor then carries it out.

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
    /// TRNG_VERSION (SMCCC TRNG, DEN0098): Linux probes it on every boot.
    pub const TRNG_VERSION: u32 = 0x8400_0050;
    /// The vendor hypervisor service's general queries (owner 6, function
    /// numbers 0xff00..): how Linux tells which hypervisor it runs on.
    pub const VENDOR_HYP_CALL_COUNT: u32 = 0x8600_ff00;
    pub const VENDOR_HYP_UID: u32 = 0x8600_ff01;
    pub const VENDOR_HYP_REVISION: u32 = 0x8600_ff03;
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

/// Partita's UID in the vendor hypervisor service,
/// `0b6e51c8-3d2a-4f57-9a41-7c28e90d16f3`, as SMCCC returns a UID: bytes
/// 0..3 of the UUID in w0 (byte 0 lowest), 4..7 in w1, and so on. Its own,
/// so no guest mistakes Partita for KVM and tries KVM's services.
pub const PARTITA_UID: [u32; 4] =
    uid_words([0x0b, 0x6e, 0x51, 0xc8, 0x3d, 0x2a, 0x4f, 0x57, 0x9a, 0x41, 0x7c, 0x28, 0xe9, 0x0d, 0x16, 0xf3]);

const fn uid_words(b: [u8; 16]) -> [u32; 4] {
    const fn word(b: &[u8; 16], i: usize) -> u32 {
        u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
    }
    [word(&b, 0), word(&b, 4), word(&b, 8), word(&b, 12)]
}

/// What a guest asked for, decoded from x0..x3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// Answered on the spot with this value in x0.
    Immediate(i64),
    /// Answered on the spot with these values in x0..x3.
    Values([u64; 4]),
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

/// True for the SMCCC architecture calls, the standard secure services
/// (owner 4: PSCI, SDEI, TRNG, ...) and every owner's general queries
/// (SMC32 function numbers 0xff00..0xffff): what firmware answers, if only
/// with NOT_SUPPORTED.
pub fn is_firmware_call(function: u32) -> bool {
    let arch = function & 0xbfff_0000 == 0x8000_0000;
    let standard = function & 0xbfff_0000 == 0x8400_0000;
    let query = function & 0xc0ff_ff00 == 0x8000_ff00;
    arch || standard || query
}

use crate::hypercall::{ABI_VERSION, CALLS};

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
        fid::VENDOR_HYP_UID => Call::Values(PARTITA_UID.map(u64::from)),
        fid::VENDOR_HYP_REVISION => Call::Values([ABI_VERSION >> 16, ABI_VERSION & 0xffff, 0, 0]),
        fid::VENDOR_HYP_CALL_COUNT => Call::Immediate(CALLS as i64),
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
    fn linux_s_discovery_calls_are_answered() {
        assert_eq!(decode([fid::TRNG_VERSION as u64, 0, 0, 0]), Call::Immediate(ret::NOT_SUPPORTED));
        assert_eq!(decode([0xc400_0053, 0, 0, 0]), Call::Immediate(ret::NOT_SUPPORTED), "TRNG_RND64");
        let Call::Values(uid) = decode([fid::VENDOR_HYP_UID as u64, 0, 0, 0]) else { panic!("the UID") };
        assert_eq!(uid, [0xc8516e0b, 0x574f2a3d, 0x287c419a, 0xf3160de9]);
        let kvm = [0xb66f_b428, 0xe911_c52e, 0x564b_caa9, 0x743a_004d];
        assert_ne!(uid, kvm, "not KVM's");
        let revision = decode([fid::VENDOR_HYP_REVISION as u64, 0, 0, 0]);
        assert_eq!(revision, Call::Values([1, 0, 0, 0]));
        assert_eq!(decode([fid::VENDOR_HYP_CALL_COUNT as u64, 0, 0, 0]), Call::Immediate(CALLS as i64));
        assert_eq!(decode([0x8500_ff01, 0, 0, 0]), Call::Immediate(ret::NOT_SUPPORTED), "another owner's UID");
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
        assert!(!is_firmware_call(0x0400_0050), "a yielding call");
        assert!(!is_firmware_call(0xc600_fff0), "SMC64: Partita's own range");
        assert!(is_firmware_call(0xb000_ff01), "owner 0x30's UID");
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
