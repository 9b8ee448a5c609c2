//! The reconfigurable fabric (Ker-ONE section 4): accelerators run in
//! partially reconfigurable regions (PRRs) shared by preemption. Each PRR
//! follows a state machine, the PRR monitor finds a solution for every
//! request, the manager carries solutions out, the accelerators compute
//! real results, and the worst-case allocation latency is known before
//! boot.

pub mod bound;
pub mod compute;
pub mod interface;
pub mod job;
pub mod manager;
pub mod monitor;
pub mod pl;
pub mod prr;
pub mod zynqmp;

/// Ker-ONE's experiment (section 6.1, Table 5), which the tests of every
/// module here share: three PRRs of growing size and four accelerators.
#[cfg(test)]
pub(crate) mod ker_one {
    use super::monitor::Compatible;

    pub const QAM16: u8 = 0;
    pub const QAM64: u8 = 1;
    pub const FFT512: u8 = 2;
    pub const FFT1024: u8 = 3;
    /// Each PRR's share of the fabric (Table 6's resource usage).
    pub const SIZES: [u32; 3] = [2, 8, 13];
    /// PRR 1 hosts QAM only, PRR 2 QAM and FFT-512, PRR 3 the FFTs.
    pub const COMPATIBLE: [Compatible; 4] = [0b011, 0b011, 0b110, 0b100];
}
