//! Yosys.
