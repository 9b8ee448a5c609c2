//! Partita's core: everything the hypervisor decides, written without `unsafe`
//! so that `cargo test` can pin it down on the host.
//!
//! The same crate serves the host tools (validation, image building) and the
//! hypervisor (decoding the image, trap decisions), so both read one model.
//! Modules are grouped by concern, under the names the hypervisor and the
//! docs use for the same things: `config` is what is known before boot,
//! the rest is what runs.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod channel;
pub mod config;
pub mod fabric;
pub mod health;
pub mod hypercall;
pub mod partition;
pub mod residency;
pub mod scheduler;
pub mod text;
pub mod time;
pub mod timedio;
pub mod trace;
pub mod trap;
pub mod vgic;
