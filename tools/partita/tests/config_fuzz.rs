//! Bounded property tests of the configuration parser and validator: no
//! input, however broken, may panic, and every diagnostic must point inside
//! the file. Case counts are capped so the whole file runs in a few seconds.

mod config_support;

use config_support::scratch_dir;
use partita::config::{self, Config, Diagnostic};
use proptest::prelude::*;
use proptest::sample::select;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const CASES: u32 = 192;

const GOOD: &str = include_str!("configs/good.toml");
const DEMO: &str = include_str!("../../../configs/demo.toml");
const ACCEL: &str = include_str!("../../../configs/accel.toml");
const GOOD_FABRIC: &str = include_str!("configs/good_fabric.toml");

/// The valid files mutations start from, with the guest the scratch folder has.
fn seeds() -> [String; 4] {
    [GOOD, DEMO, ACCEL, GOOD_FABRIC].map(|text| {
        text.replace("../target/guests/test-guest.elf", "guest.elf")
            .replace("../target/guests/rtos.elf", "guest.elf")
            .replace("../target/guests/linux/Image", "Image")
            .replace("../target/guests/linux/initramfs.cpio", "raw.bin")
    })
}

/// Pieces that steer mutations towards the interesting corners of the
/// schema rather than towards plain syntax errors.
const TOKENS: &[&str] = &[
    "\n[[partition]]\n",
    "\n[[partition.memory]]\n",
    "\n[[partition.device]]\n",
    "\n[[partition.image]]\n",
    "\n[platform]\n",
    "\n[hypervisor]\n",
    "\n[schedule]\n",
    "\n[fabric]\n",
    "\n[[fabric.accelerator]]\n",
    "\n[[fabric.prr]]\n",
    "accelerators = [{ name = \"qam16\" }]\n",
    "accelerators = [{ name = \"qam16\", signals = [33, 80] }]\n",
    "hosts = [\"fft1024\", \"nope\"]\n",
    "frame = \"0.5ns\"\n",
    "bandwidth = 0\n",
    "name = \"x\"\n",
    "cpus = [0, 1, 2, 3]\n",
    "cpus = []\n",
    "base = 0\n",
    "size = 0\n",
    "phys = 0x7fffffffffffffff\n",
    "identity = true\n",
    "perms = \"w\"\n",
    "format = \"raw\"\n",
    "load = 0x40000000\n",
    "entry = -1\n",
    "interrupts = [32, 1019, 1020, 4294967295]\n",
    "interrupts = [{ intid = 40, vcpu = 7 }, { intid = 41 }, { vcpu = 1 }]\n",
    "exclusive = true\n",
    "budget = { time = \"2ms\", period = \"10ms\" }\n",
    "budget = { time = 0, period = \"0s\" }\n",
    "budget = { time = \"1s\", period = 3 }\n",
    "overhead_limit_percent = 0.5\n",
    "overhead_limit_percent = -1\n",
    "overhead_limit_percent = nan\n",
    "\n[[channel]]\nname = \"c\"\nkind = \"sampling\"\nsource = \"rtos\"\ndestinations = [\"gpos\", \"x\"]\nmax_message = 64\nrefresh = \"10ms\"\n",
    "\n[[channel]]\nname = \"q\"\nkind = \"queuing\"\nsource = \"gpos\"\ndestination = \"gpos\"\nmax_message = 4097\ndepth = 0\n",
    "\n[[channel]]\nname = \"m\"\nkind = \"shared-memory\"\npartitions = [\"rtos\", \"gpos\"]\nbase = 0x50000000\nsize = \"64K\"\n",
    "kind = \"shared-memory\"\n",
    "read_only = [\"gpos\", \"rtos\"]\n",
    "doorbell_intid = 39\n",
    "max_message = \"1M\"\n",
    "depth = 1024\n",
    "refresh = 0\n",
    "health = { stage2-fault = \"restart\", watchdog = \"reset-system\", reported = \"ignore\" }\n",
    "health = { timeout = \"log\" }\n",
    "watchdog = \"100ms\"\n",
    "watchdog = \"61s\"\n",
    "hm_log_entries = 16\n",
    "[[plan]]\nname = \"p\"\n[[plan.core]]\ncpu = 2\nmajor_frame_us = \"10ms\"\n",
    "[[plan.core.slot]]\npartition = \"nobody\"\nvcpu = 9\nstart_us = 0\nduration_us = \"0s\"\n",
    "duration_us = \"18446744073709551615s\"\n",
    "compatible = [\"\\u0000\"]\n",
    "path = \"big.elf\"\n",
    "path = \"not-elf.elf\"\n",
    "path = \"/\"\n",
    "0",
    "-1",
    "0x7fffffffffffffff",
    "\"1G\"",
    "\"99999999999G\"",
    "\"0x\"",
    "[]",
    "{}",
    "=",
    "\"",
    "[[",
    "]]",
    ".",
    "\n",
];

fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| scratch_dir("fuzz"))
}

fn config_path() -> PathBuf {
    scratch().join("fuzz.toml")
}

/// Loads `text` and checks what must hold whatever the input.
fn load_and_check(text: &str) {
    let path = config_path();
    match config::load_str(&path, text) {
        Ok(config) => accepted(&config),
        Err(diagnostics) => rejected(text, &path, &diagnostics),
    }
}

fn accepted(config: &Config) {
    // What the host accepts, the hypervisor's own check must accept too.
    assert_eq!(partita_core::config::validate::validate(&config.system), vec![]);
    let profile = partita::profile::for_board(&config.system.platform.board).unwrap();
    let _ = partita::check::summary(config, &profile);
    let _ = partita::check::warnings(&config.system, &profile);
}

fn rejected(text: &str, path: &Path, diagnostics: &[Diagnostic]) {
    assert!(!diagnostics.is_empty());
    let lines = text.split('\n').count();
    for diagnostic in diagnostics {
        assert_eq!(diagnostic.file, path);
        assert!(diagnostic.line <= lines, "{diagnostic} points past line {lines}");
        assert!(!diagnostic.message.contains('\n'), "{diagnostic} spans lines");
        let _ = diagnostic.to_string();
    }
}

#[derive(Clone, Debug)]
enum Mutation {
    Insert { at: usize, token: &'static str },
    Delete { at: usize, len: usize },
    DuplicateLine { line: usize },
    SwapLines { a: usize, b: usize },
    ReplaceNumber { nth: usize, value: i64 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), select(TOKENS)).prop_map(|(at, token)| Mutation::Insert { at, token }),
        (any::<usize>(), 1usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines { a, b }),
        (any::<usize>(), prop_oneof![Just(0i64), Just(-1), Just(i64::MAX), Just(0x1000), any::<i64>()])
            .prop_map(|(nth, value)| Mutation::ReplaceNumber { nth, value }),
    ]
}

/// A char boundary derived from an arbitrary number.
fn boundary(text: &str, pick: usize) -> usize {
    let boundaries: Vec<usize> = text.char_indices().map(|(at, _)| at).chain([text.len()]).collect();
    boundaries[pick % boundaries.len()]
}

fn apply(text: &mut String, mutation: &Mutation) {
    let mut lines: Vec<String> = text.split('\n').map(String::from).collect();
    match *mutation {
        Mutation::Insert { at, token } => text.insert_str(boundary(text, at), token),
        Mutation::Delete { at, len } => {
            let start = boundary(text, at);
            let end = boundary(text, start + len).max(start);
            text.replace_range(start..end.min(text.len()), "");
        }
        Mutation::DuplicateLine { line } => {
            let copy = lines[line % lines.len()].clone();
            lines.insert(line % lines.len(), copy);
            *text = lines.join("\n");
        }
        Mutation::SwapLines { a, b } => {
            let count = lines.len();
            lines.swap(a % count, b % count);
            *text = lines.join("\n");
        }
        Mutation::ReplaceNumber { nth, value } => replace_number(text, nth, value),
    }
}

fn replace_number(text: &mut String, nth: usize, value: i64) {
    let numbers: Vec<(usize, usize)> = text
        .match_indices(|c: char| c.is_ascii_digit())
        .map(|(at, _)| at)
        .filter(|&at| at == 0 || !text.as_bytes()[at - 1].is_ascii_alphanumeric())
        .map(|at| {
            (at, at + text[at..].find(|c: char| !c.is_ascii_alphanumeric() && c != '_').unwrap_or(text.len() - at))
        })
        .collect();
    if let Some(&(start, end)) = numbers.get(nth % numbers.len().max(1)) {
        text.replace_range(start..end, &value.to_string());
    }
}

/// A syntactically valid file with arbitrary values: it gets past the
/// parser, so it exercises allocation, validation and the image checks.
fn random_config() -> impl Strategy<Value = String> {
    let address = prop_oneof![
        Just(0x4000_0000i64),
        Just(0x4200_0000),
        Just(0x0903_0000),
        Just(0x0900_0000),
        Just(i64::MAX),
        (0i64..0x10_0000).prop_map(|page| page << 12),
        any::<i64>(),
    ];
    let size = prop_oneof![
        Just("\"16M\"".to_owned()),
        Just("\"2M\"".to_owned()),
        Just("0".to_owned()),
        any::<u32>().prop_map(|s| s.to_string())
    ];
    let region = (
        address.clone(),
        size.clone(),
        proptest::option::of(address.clone()),
        any::<bool>(),
        select(&["r", "rw", "rwx", "w"][..]),
    );
    let image = (
        select(&["guest.elf", "big.elf", "not-elf.elf", "raw.bin", "missing.elf"][..]),
        proptest::option::of(address.clone()),
        any::<bool>(),
    );
    // No vCPU: the bare form; otherwise the table form.
    let interrupt = (0u32..1100, proptest::option::of(0u32..4)).prop_map(|(intid, vcpu)| match vcpu {
        None => intid.to_string(),
        Some(vcpu) => format!("{{ intid = {intid}, vcpu = {vcpu} }}"),
    });
    let device = (address.clone(), proptest::option::of(address), size, proptest::collection::vec(interrupt, 0..3));
    let partition = (
        select(&["a", "b", "partita", "B", ""][..]),
        proptest::collection::vec(0u32..6, 0..3),
        any::<bool>(),
        proptest::collection::vec(region, 0..3),
        proptest::collection::vec(image, 0..3),
        proptest::collection::vec(device, 0..3),
    );
    (1u32..10, proptest::collection::vec(partition, 0..4)).prop_map(|(cpus, partitions)| {
        let mut text = format!("[platform]\ncpus = {cpus}\n");
        for (name, vcpus, exclusive, regions, images, devices) in partitions {
            text += &format!("[[partition]]\nname = \"{name}\"\ncpus = {vcpus:?}\nexclusive = {exclusive}\n");
            for (base, size, phys, identity, perms) in regions {
                let phys = phys.map_or(String::new(), |p| format!("phys = {p}\n"));
                text += &format!("[[partition.memory]]\nbase = {base}\nsize = {size}\n{phys}identity = {identity}\nperms = \"{perms}\"\n");
            }
            for (file, load, raw) in images {
                let load = load.map_or(String::new(), |l| format!("load = {l}\n"));
                let format = if raw { "raw" } else { "elf" };
                text += &format!("[[partition.image]]\npath = \"{file}\"\nformat = \"{format}\"\n{load}");
            }
            for (d, (base, phys, size, interrupts)) in devices.into_iter().enumerate() {
                let phys = phys.map_or(String::new(), |p| format!("phys = {p}\n"));
                let interrupts = format!("[{}]", interrupts.join(", "));
                text += &format!(
                    "[[partition.device]]\nname = \"d{d}\"\nbase = {base}\n{phys}size = {size}\ninterrupts = {interrupts}\ncompatible = [\"x\"]\n"
                );
            }
        }
        text
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let path = scratch().join("bytes.toml");
        std::fs::write(&path, &bytes).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        match config::load(&path) {
            Ok(config) => accepted(&config),
            Err(diagnostics) => rejected(&text, &path, &diagnostics),
        }
    }

    #[test]
    fn toml_like_text_never_panics(text in "([\\[\\]{}=\",.#a-z0-9_ -]|\n|partition|memory|base|size|0x){0,200}") {
        load_and_check(&text);
    }

    #[test]
    fn mutated_valid_files_never_panic(
        seed in 0usize..4,
        mutations in proptest::collection::vec(mutation(), 1..5),
    ) {
        let mut text = seeds()[seed].clone();
        for mutation in &mutations {
            apply(&mut text, mutation);
        }
        load_and_check(&text);
    }

    #[test]
    fn random_valid_toml_never_panics(text in random_config()) {
        load_and_check(&text);
    }
}

#[test]
fn the_unmutated_files_are_accepted() {
    for text in seeds() {
        let config = config::load_str(&config_path(), &text);
        assert!(config.is_ok(), "{:?}", config.err());
    }
}
