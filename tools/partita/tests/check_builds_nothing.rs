//! `partita check` builds nothing, even for a configuration that boots
//! Linux in a tree where no guest is built yet; `partita build` of the same
//! file builds the guests it boots and no other.
//!
//! The tree is a copy of `configs/linux.toml` beside three stand-in guests
//! whose Makefiles only leave a mark that they ran, so that what `build`
//! does is seen without a compiler or a Debian download.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const GUESTS: [&str; 3] = ["linux", "rtos", "test-guest"];

/// A Partita source tree of its own and an output folder beside it.
struct Tree {
    source: PathBuf,
    out: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Self {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-builds-nothing").join(name);
        let _ = std::fs::remove_dir_all(&root);
        let source = root.join("source");
        std::fs::create_dir_all(source.join("configs")).unwrap();
        let linux = include_str!("../../../configs/linux.toml");
        std::fs::write(source.join("configs/linux.toml"), linux).unwrap();
        for guest in GUESTS {
            let dir = source.join("guests").join(guest);
            std::fs::create_dir_all(&dir).unwrap();
            let makefile = format!("all:\n\tmkdir -p $(O)\n\ttouch $(O)/{guest}.made\n");
            std::fs::write(dir.join("Makefile"), makefile).unwrap();
        }
        Tree { source, out: root.join("out") }
    }

    /// `partita COMMAND configs/linux.toml`, run in the tree as its source.
    fn partita(&self, command: &str) -> (Output, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_partita"))
            .current_dir(&self.source)
            .env("PARTITA_SOURCE", &self.source)
            .arg("--out")
            .arg(&self.out)
            .args([command, "configs/linux.toml"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        (output, stderr)
    }

    /// The guests whose build ran, by the marks their Makefiles left.
    fn built(&self) -> Vec<String> {
        let marks = self.source.join("target/guests");
        GUESTS.iter().filter(|guest| marks.join(format!("{guest}.made")).exists()).map(|g| g.to_string()).collect()
    }

    /// Every file below `target/` and the output folder.
    fn outputs(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for dir in [self.source.join("target"), self.out.clone()] {
            files_below(&dir, &mut files);
        }
        files
    }
}

fn files_below(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for path in entries.map(|entry| entry.unwrap().path()) {
        if path.is_dir() {
            files_below(&path, files);
        } else {
            files.push(path);
        }
    }
}

#[test]
fn check_of_a_linux_configuration_builds_nothing() {
    let tree = Tree::new("check");
    let (output, stderr) = tree.partita("check");
    assert!(output.status.success(), "check failed:\n{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("configs/linux.toml: OK, 2 partition(s)"), "{stdout}");
    assert!(!stderr.contains("building"), "check built something:\n{stderr}");
    assert_eq!(tree.built(), Vec::<String>::new());
    assert_eq!(tree.outputs(), Vec::<PathBuf>::new(), "check wrote files");
    for image in ["target/guests/test-guest.elf", "target/guests/linux/Image", "target/guests/linux/disk.ext4"] {
        assert!(stderr.contains(image), "the note lacks {image}:\n{stderr}");
    }
    assert!(stderr.contains("note: not built yet, so their size, entry point and place"), "{stderr}");
}

#[test]
fn build_of_the_same_configuration_builds_only_its_guests() {
    let tree = Tree::new("build");
    let (output, stderr) = tree.partita("build");
    // The stand-ins make no image, which `build` then says.
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("its guest's build did not make it"), "{stderr}");
    for guest in ["linux", "test-guest"] {
        assert!(stderr.contains(&format!("building guest {guest}: done")), "{guest} not built:\n{stderr}");
    }
    assert!(!stderr.contains("building guest rtos"), "{stderr}");
    assert_eq!(tree.built(), ["linux", "test-guest"]);
}
