//! Where the tool reads and writes: the Partita source tree it builds the
//! hypervisor and the guests from, and the folder its outputs go to.
//!
//! The two are apart so that an installed `partita` works on an
//! integrator's own files: configuration paths are taken as given (relative
//! to the working directory), outputs land in `./out` or `--out DIR`, and
//! only what needs building comes from the source tree.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Names the source tree when the one the tool was built from has moved.
pub const SOURCE_ENV: &str = "PARTITA_SOURCE";

/// The Partita source tree: `$PARTITA_SOURCE` when set, else the tree this
/// binary was compiled from.
pub fn source() -> PathBuf {
    match std::env::var_os(SOURCE_ENV) {
        Some(dir) if !dir.is_empty() => absolute(Path::new(&dir)),
        _ => {
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            root.canonicalize().unwrap_or(root)
        }
    }
}

static OUT: OnceLock<PathBuf> = OnceLock::new();

/// Makes `dir` the output root for the rest of the process; the first call
/// wins, so that every output of one command lands in one place.
pub fn set_out(dir: &Path) {
    let _ = OUT.set(absolute(dir));
}

/// The output root: what [`set_out`] was given, else `out` in the working
/// directory.
pub fn out() -> PathBuf {
    OUT.get().cloned().unwrap_or_else(|| absolute(Path::new("out")))
}

/// `<out>/<config-name>/`: what `build` and `run` leave for one configuration.
pub fn config_out(name: &str) -> PathBuf {
    out().join(name)
}

/// `<out>/bench/<name>/`: one benchmark's reports and the logs of its boots.
pub fn bench_out(name: &str) -> PathBuf {
    out().join("bench").join(name)
}

/// Generated files that belong to the build rather than to the user:
/// `<source>/target/<what>/`.
pub fn scratch(what: &str) -> PathBuf {
    source().join("target").join(what)
}

/// A path as the user would type it from here: relative when it lies below
/// the current directory.
pub fn shown(path: &Path) -> PathBuf {
    let here = std::env::current_dir().unwrap_or_default();
    path.strip_prefix(&here).map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
