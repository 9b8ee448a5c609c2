//! The `partita` host tool as a library, so integration tests drive the same
//! code paths as the command line.

pub mod bench;
pub mod bench_ipc;
pub mod bench_readyq;
pub mod bench_rtos;
pub mod bench_sched;
pub mod build;
pub mod check;
pub mod config;
pub mod devicetree;
pub mod guests;
pub mod profile;
pub mod qmp;
pub mod run;
pub mod slots;
pub mod testcmd;
pub mod trace;
