//! Vectors for `hardware/prr_monitor.v`.

pub const TAGS: &[&str] = &[];
