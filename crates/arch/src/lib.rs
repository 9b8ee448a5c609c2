//! Partita's AArch64 layer. Every `unsafe` block and every line of assembly
//! in the hypervisor lives here, behind safe functions whose contracts the
//! comments state. The rest of Partita is safe Rust.
#![no_std]

extern crate alloc;

pub mod boot;
pub mod bytes;
pub mod cache;
pub mod context;
pub mod cpu;
pub mod direct_sgi;
pub mod el2;
pub mod exception;
pub mod firmware;
pub mod gpio;
pub mod guest_memory;
pub mod heap;
pub mod inject;
pub mod mmu;
pub mod platform;
pub mod residency;
pub mod stage2;
pub mod sync;
pub mod timer;
pub mod uncached;

pub(crate) use cpu::read_sysreg;

/// The most physical CPUs Partita supports (stacks are reserved per CPU).
pub const MAX_CPUS: usize = partita_core::config::limits::MAX_PCPUS as usize;
/// Bytes of EL2 stack per CPU.
pub const STACK_SIZE: usize = 64 * 1024;
