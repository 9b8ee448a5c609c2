//! Reading a TOML configuration into the validated model.
//!
//! The TOML layer knows where every field sits in the file, so every
//! diagnostic names the file, line and field. Validation rules that need no
//! file system live in `partita_core::validate`.

use partita_core::model::System;
use std::path::PathBuf;

/// A configuration that passed every check.
#[derive(Clone, Debug)]
pub struct Config {
    /// The file it came from.
    pub path: PathBuf,
    /// The resolved model, exactly what the hypervisor will read.
    pub system: System,
    /// Per partition (same order as `system.partitions`): its images.
    pub images: Vec<Vec<Image>>,
    /// Per partition: an explicit entry point, if the file gives one.
    pub entries: Vec<Option<u64>>,
}

/// One image to load into a partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Absolute path (resolved relative to the configuration file).
    pub path: PathBuf,
    pub format: ImageFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    /// ELF: loaded by its program headers; its entry point is the default entry.
    Elf,
    /// Raw bytes copied to a guest-physical load address.
    Raw { load: u64 },
}

/// One problem found in a configuration file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// 1-based; 0 when the problem has no single place (e.g. a missing section).
    pub line: usize,
    pub column: usize,
    /// Dotted path of the field, e.g. `partitions[1].memory[0].size`.
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}: error: {}: {}", self.file.display(), self.line, self.column, self.field, self.message)
    }
}

/// Reads, resolves and validates a configuration file.
pub fn load(path: &std::path::Path) -> Result<Config, Vec<Diagnostic>> {
    let _ = path;
    unimplemented!("configuration loader")
}
