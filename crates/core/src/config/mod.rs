//! The configuration: the model the tools resolve from TOML, the rules it
//! must keep, the analyses `partita check` prints, and the boot payload
//! that carries it to the hypervisor.

pub mod allocation;
pub mod image;
pub mod limits;
pub mod model;
pub mod overhead;
pub mod response;
pub mod utilisation;
pub mod validate;
