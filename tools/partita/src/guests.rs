//! Builds the guests a configuration boots, so that `build` packs fresh
//! images; `check` builds nothing and leaves out what it would learn from an
//! image not built yet.
//!
//! Each folder under `guests/` with a Makefile is a guest; its outputs go to
//! `target/guests/`, beside Cargo's, so a clean clone stays clean. A file
//! there belongs to the guest named by its first path component less any
//! extension: `rtos.bin` to `guests/rtos`, `linux/Image` to `guests/linux`.

use crate::build::run_step;
use crate::paths;
use anyhow::{bail, Result};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// Runs `make` for every guest; make itself skips what is up to date.
pub fn build_all() -> Result<()> {
    for guest in guest_dirs(&paths::source())? {
        make(&guest)?;
    }
    Ok(())
}

/// Runs `make` for each guest that makes one of `files`, once each; files
/// from elsewhere are the user's own and left alone.
pub fn build_for(files: &[PathBuf]) -> Result<()> {
    let known = guest_dirs(&paths::source())?;
    let mut names: Vec<String> = files.iter().filter_map(|file| maker(file)).collect();
    names.sort();
    names.dedup();
    for name in names {
        let Some(dir) = known.iter().find(|dir| dir.file_name().is_some_and(|n| *n == *name)) else {
            bail!("{}: no guest under guests/ builds {name}", output_dir().join(&name).display());
        };
        make(dir)?;
    }
    Ok(())
}

/// The guest whose build makes `file`, if it lies in the guests' output folder.
pub fn maker(file: &Path) -> Option<String> {
    let below = normalized(file).strip_prefix(normalized(&output_dir())).ok()?.to_path_buf();
    let first = below.components().next()?;
    let first = Path::new(first.as_os_str());
    Some(first.file_stem()?.to_string_lossy().into_owned())
}

/// `file` is a guest's output that is not there yet.
pub fn unbuilt(file: &Path) -> bool {
    maker(file).is_some() && !file.exists()
}

/// Where guest images land: `target/guests/` in the source tree.
pub fn output_dir() -> PathBuf {
    paths::scratch("guests")
}

/// One guest image, such as `test-guest.elf` or `rtos.bin`.
pub fn image(file: &str) -> PathBuf {
    output_dir().join(file)
}

fn make(guest: &Path) -> Result<()> {
    let name = guest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut make = Command::new("make");
    make.arg("-C").arg(guest).arg(format!("O={}", output_dir().display()));
    run_step(&format!("building guest {name}"), &mut make)
}

/// `path` with `.` and `..` resolved by their names: image paths are joined
/// to the configuration's folder (`configs/../target/guests/...`), and
/// `std::path::absolute` keeps the `..`.
pub fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_belongs_to_the_guest_named_by_its_first_component() {
        let built = |file: &str| maker(&output_dir().join(file));
        assert_eq!(built("rtos.bin").as_deref(), Some("rtos"));
        assert_eq!(built("test-guest.elf").as_deref(), Some("test-guest"));
        assert_eq!(built("linux/Image").as_deref(), Some("linux"));
        let beside = paths::source().join("configs/../target/guests/linux/disk.ext4");
        assert_eq!(maker(&beside).as_deref(), Some("linux"));
    }

    #[test]
    fn a_file_elsewhere_belongs_to_no_guest() {
        assert_eq!(maker(Path::new("/srv/kernels/Image")), None);
        assert_eq!(maker(&paths::source().join("target/guest.elf")), None);
    }
}
