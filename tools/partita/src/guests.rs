//! Builds the guests the configurations boot, so that `check` finds their
//! images and `build` packs fresh ones.
//!
//! Each folder under `guests/` with a Makefile is a guest; its outputs go to
//! `target/guests/`, beside Cargo's, so a clean clone stays clean.

use crate::build::run_step;
use crate::paths;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `make` for every guest; make itself skips what is up to date.
pub fn build_all() -> Result<()> {
    let root = paths::source();
    let out = output_dir();
    for guest in guest_dirs(&root)? {
        let name = guest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mut make = Command::new("make");
        make.arg("-C").arg(&guest).arg(format!("O={}", out.display()));
        run_step(&format!("building guest {name}"), &mut make)?;
    }
    Ok(())
}

/// Where guest images land: `target/guests/` in the source tree.
pub fn output_dir() -> PathBuf {
    paths::scratch("guests")
}

/// One guest image, such as `test-guest.elf` or `rtos.bin`.
pub fn image(file: &str) -> PathBuf {
    output_dir().join(file)
}

fn guest_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    let Ok(entries) = std::fs::read_dir(root.join("guests")) else {
        return Ok(Vec::new());
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("Makefile").is_file())
        .collect();
    dirs.sort();
    Ok(dirs)
}
