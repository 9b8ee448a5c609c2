//! The `partita` host tool as a library, so integration tests drive the same
//! code paths as the command line.

pub mod attach;
pub mod attribution;
pub mod bench;
pub mod build;
pub mod chart;
pub mod check;
pub mod config;
pub mod devicetree;
pub mod guest_console;
pub mod guests;
pub mod host_share;
pub mod isolate;
pub mod linux;
pub mod paths;
pub mod profile;
pub mod qmp;
pub mod rtl;
pub mod run;
pub mod soak;
pub mod status;
pub mod summary;
pub mod testcmd;
pub mod trace;
pub mod units;
