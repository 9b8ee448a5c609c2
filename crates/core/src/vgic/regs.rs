//! Emulated distributor and redistributors.
