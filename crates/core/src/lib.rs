//! Partita's core: everything the hypervisor decides, written without `unsafe`
//! so that `cargo test` can pin it down on the host.
//!
//! The same crate serves the host tools (validation, image building) and the
//! hypervisor (decoding the image, trap decisions), so both read one model.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod budget;
pub mod esr;
pub mod hm;
pub mod hypercall;
pub mod image;
pub mod model;
pub mod overhead;
pub mod plan;
pub mod ports;
pub mod psci;
pub mod readyq;
pub mod reload;
pub mod sysreg;
pub mod time;
pub mod trace;
pub mod validate;
pub mod utilisation;
pub mod vcpu;
pub mod vgic;
pub mod vuart;
