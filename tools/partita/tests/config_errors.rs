//! One fixture per configuration error `partita check` must catch, each
//! asserting the message, the line and the field, plus the valid fixtures.
//!
//! Each fixture is copied into a scratch folder next to generated image
//! files; its faulty line ends in `# <- error` (no marker: line 0, for
//! problems with no single place).

mod config_support;

use config_support::{aarch64_elf, linux_image, scratch_dir};
use partita::config::virtio::Backend;
use partita::config::{self, Config, Diagnostic, Image, ImageFormat};
use partita::profile::PlatformProfile;
use partita_core::config::allocation::{micros_text, KER_ONE_TABLE_4};
use partita_core::config::model::{
    Action, Budget, Channel, ChannelKind, Criticality, CyclicCore, Function, Health, Interrupt, Perms, Range, Slot,
    VirtualDevice,
};
use partita_core::config::response::{Critical, PcpuKind, ResponseCosts};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

const MARKER: &str = "# <- error";

/// A scratch folder for `name` that no other test shares: tests run in
/// parallel, and several load the same file.
fn own_dir(name: &str) -> PathBuf {
    static COPIES: AtomicUsize = AtomicUsize::new(0);
    scratch_dir(&format!("{name}-{}", COPIES.fetch_add(1, Ordering::Relaxed)))
}

fn fixture(name: &str) -> (PathBuf, String) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs").join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&source).unwrap();
    let path = own_dir(name).join(format!("{name}.toml"));
    std::fs::write(&path, &text).unwrap();
    (path, text)
}

fn marked_line(text: &str) -> usize {
    text.lines().position(|line| line.trim_end().ends_with(MARKER)).map_or(0, |index| index + 1)
}

fn listing(diagnostics: &[Diagnostic]) -> String {
    diagnostics.iter().map(|d| format!("  {d}\n")).collect()
}

/// The fixture fails with exactly one diagnostic, on the marked line, for
/// `field`, with a message containing `message`.
fn expect_error(name: &str, field: &str, message: &str) {
    let (path, text) = fixture(name);
    let diagnostics = config::load(&path).expect_err(&format!("{name}.toml should be rejected"));
    assert_eq!(diagnostics.len(), 1, "{name}.toml: expected one error, got:\n{}", listing(&diagnostics));
    let diagnostic = &diagnostics[0];
    assert_eq!(diagnostic.file, path);
    assert_eq!(diagnostic.line, marked_line(&text), "{name}.toml: wrong line in {diagnostic}");
    assert_eq!(diagnostic.column > 0, diagnostic.line > 0, "{name}.toml: column of {diagnostic}");
    assert_eq!(diagnostic.field, field, "{name}.toml: wrong field in {diagnostic}");
    assert!(diagnostic.message.contains(message), "{name}.toml: {diagnostic}\n  lacks {message:?}");
}

/// The fixture fails with one diagnostic per marked line, in file order,
/// each for its field and with its message: problems that do not depend on
/// each other are all reported in one pass.
fn expect_errors(name: &str, expected: &[(&str, &str)]) {
    let (path, text) = fixture(name);
    let diagnostics = config::load(&path).expect_err(&format!("{name}.toml should be rejected"));
    assert_eq!(diagnostics.len(), expected.len(), "{name}.toml:\n{}", listing(&diagnostics));
    let marked = text.lines().enumerate().filter(|(_, line)| line.trim_end().ends_with(MARKER)).map(|(i, _)| i + 1);
    for ((diagnostic, (field, message)), line) in diagnostics.iter().zip(expected).zip(marked) {
        assert_eq!((diagnostic.line, diagnostic.field.as_str()), (line, *field), "{name}.toml: {diagnostic}");
        assert!(diagnostic.message.contains(message), "{name}.toml: {diagnostic}\n  lacks {message:?}");
    }
}

/// A fixed switch cost, so that the expected percentages do not move when
/// `partita bench pcs --save` rewrites the board's profile: 125
/// instructions of 16 ns, 2 us. The wall-clock figure is far off on
/// purpose, as an emulator's is, and must not be the one charged.
fn profile() -> PlatformProfile {
    PlatformProfile {
        pcs_ns: 90_000,
        pcs_instructions: 125,
        pcs_max_instructions: None,
        pcs_ns_per_instruction: 16,
        measured: "fixed for the tests".into(),
        accel: None,
        accel_measured: None,
        response: Some(ResponseCosts {
            sched: 400,
            release: 50,
            critical: vec![
                Critical { pcpu: PcpuKind::Shared, path: "hyp-timer".into(), max: 900 },
                Critical { pcpu: PcpuKind::Shared, path: "hvc-port-send".into(), max: 1400 },
            ],
            ns_per_instruction: 16,
        }),
        response_measured: Some("fixed for the tests".into()),
    }
}

fn load_good(name: &str) -> Config {
    let (path, _) = fixture(name);
    config::load(&path).unwrap_or_else(|diagnostics| panic!("{name}.toml rejected:\n{}", listing(&diagnostics)))
}

// --- Valid files -----------------------------------------------------------

#[test]
fn good_fixture_resolves_defaults_and_allocates() {
    let config = load_good("good");
    let system = &config.system;
    assert_eq!(system.name, "good");
    assert_eq!(system.platform.board, "qemu-virt");
    assert_eq!(system.platform.ram, Range::new(0x4000_0000, 1 << 30));
    assert_eq!(system.platform.gicd, Range::new(0x0800_0000, 0x1_0000));
    assert_eq!(system.platform.gicr, Range::new(0x080a_0000, 4 * 0x2_0000));
    assert_eq!(system.hypervisor.memory, Range::new(0x4000_0000, 32 << 20));
    assert_eq!(system.hypervisor.quantum_us, 500);
    assert_eq!(system.hypervisor.trace_events, 4096);
    assert_eq!(system.fabric, None, "no [fabric], no fabric");

    let [rtos, gpos] = &system.partitions[..] else { panic!("two partitions expected") };
    assert_eq!((rtos.criticality, gpos.criticality), (Criticality::High, Criticality::Low));
    assert_eq!((rtos.vcpus.as_slice(), gpos.vcpus.as_slice()), (&[1][..], &[2, 3][..]));
    assert_eq!((rtos.console, gpos.console), (0x0900_0000, 0x0a00_0000));
    assert_eq!(rtos.bootargs, "ticks=0 period_ms=500");
    // Allocation: after Partita's 32 MiB, around the fixed and identity regions.
    assert_eq!(rtos.memory[0].pa, 0x4200_0000);
    assert_eq!((rtos.memory[1].pa, rtos.memory[1].perms), (0x6000_0000, Perms::RW));
    assert_eq!(rtos.memory[0].perms, Perms::RWX);
    assert!(gpos.memory[0].identity && gpos.memory[0].pa == 0x4800_0000);
    assert_eq!(gpos.memory[1].pa, 0x4300_0000);
    assert_eq!((rtos.exclusive, gpos.exclusive), (true, false), "exclusive defaults to false");
    assert_eq!((rtos.devices[0].pa, rtos.devices[0].interrupts.as_slice()), (0x0903_0000, &[spi(39, 0)][..]));
    assert_eq!(gpos.devices[0].interrupts, [spi(34, 0), spi(40, 1)], "a bare INTID goes to vCPU 0");

    let dir = config.path.parent().unwrap();
    assert_eq!(config.images[0], vec![Image { path: dir.join("guest.elf"), format: ImageFormat::Elf }]);
    assert_eq!(config.images[1][0].format, ImageFormat::Raw { load: 0x4800_0000 });
    assert_eq!(config.entries, vec![None, Some(0x4800_0000)]);
}

#[test]
fn good_plans_resolve_names_defaults_and_times() {
    let config = load_good("good_plans");
    let [normal, degraded] = &config.system.plans[..] else { panic!("two plans expected") };
    assert_eq!((normal.name.as_str(), degraded.name.as_str()), ("normal", "degraded"));
    let slot = |partition, vcpu, start_us, duration_us| Slot { partition, vcpu, start_us, duration_us };
    assert_eq!(
        normal.cores,
        [
            CyclicCore { cpu: 2, major_frame_us: 10_000, slots: vec![slot(1, 0, 0, 4_000), slot(2, 0, 4_000, 4_000)] },
            CyclicCore { cpu: 3, major_frame_us: 10_000, slots: vec![slot(2, 1, 0, 10_000)] },
        ]
    );
    assert_eq!(degraded.cores[0], CyclicCore { cpu: 3, major_frame_us: 20_000, slots: vec![] });
    assert_eq!(degraded.cores[1].slots, [slot(1, 0, 5_000, 15_000)]);
    let summary = partita::check::summary(&config, &profile());
    assert!(
        summary.contains("pCPU 2: major frame 10000 us, 80.0 % in slots: control/vcpu0 0+4000 gpos/vcpu0 4000+4000"),
        "{summary}"
    );
}

#[test]
fn no_plans_by_default() {
    assert!(load_good("good").system.plans.is_empty());
}

fn spi(intid: u32, vcpu: u32) -> Interrupt {
    Interrupt { intid, vcpu }
}

/// Loads `text` as `configs/<name>.toml` of a scratch tree whose
/// `target/guests/test-guest.elf` is a stand-in for the real guest.
fn load_beside_stand_in_guest(name: &str, text: &str) -> Config {
    let root = own_dir(name);
    std::fs::create_dir_all(root.join("configs")).unwrap();
    std::fs::create_dir_all(root.join("target/guests")).unwrap();
    for guest in ["test-guest.elf", "rtos.elf"] {
        std::fs::write(root.join("target/guests").join(guest), aarch64_elf(0x4000_0000, 0x10_0000)).unwrap();
    }
    // The Linux guest's kernel and initramfs, for configurations that boot Linux.
    std::fs::create_dir_all(root.join("target/guests/linux")).unwrap();
    std::fs::write(root.join("target/guests/linux/Image"), linux_image(48 << 20)).unwrap();
    std::fs::write(root.join("target/guests/linux/initramfs.cpio"), vec![0u8; 0x1000]).unwrap();
    let path = root.join("configs").join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    config::load(&path).unwrap_or_else(|d| panic!("{name}.toml rejected:\n{}", listing(&d)))
}

#[test]
fn modes_configuration_is_valid() {
    let config = load_beside_stand_in_guest("modes", include_str!("../../../configs/modes.toml"));
    let names: Vec<&str> = config.system.plans.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["normal", "degraded"]);
    assert!(config.system.partitions[2].rights.switch_plan, "monitor may switch plans");
    assert_eq!(config.system.partitions[3].migrate.len(), 1, "gpos's vCPU 0 migrates");
}

/// `text` with its board changed to `board`.
fn on_board(text: &str, board: &str) -> String {
    let line = format!("board = \"{board}\"");
    if let Some(given) = text.lines().find(|l| l.starts_with("board = ")) {
        text.replace(given, &line)
    } else if text.contains("[platform]\n") {
        text.replacen("[platform]\n", &format!("[platform]\n{line}\n"), 1)
    } else {
        format!("[platform]\n{line}\n\n{text}")
    }
}

/// The examples that use no device of `virt`'s alone (no virtio, no
/// PL061) load with the board changed to the ZynqMP, and `check` judges
/// them with that board's measured costs: the modes' plans against its
/// partition switch, the accelerators' deadlines against its allocation
/// costs, which QEMU's `xlnx-zcu102` inflates past the RTOS's deadlines
/// (docs/zcu102.md, "Timing under -icount").
#[test]
fn examples_check_on_zcu102_with_the_board_changed() {
    let check = |name: &str, text: &str| {
        let on_zcu102 = format!("zcu102-{name}");
        let config = load_beside_stand_in_guest(&on_zcu102, &on_board(text, "zcu102"));
        assert_eq!(config.system.platform.board, "zcu102");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let result = partita::check::check_to(&config.path, None, &mut out, &mut err);
        (result.is_ok(), String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
    };
    for (name, text) in
        [("modes", include_str!("../../../configs/modes.toml")), ("ipc", include_str!("../../../configs/ipc.toml"))]
    {
        let (ok, out, err) = check(name, text);
        assert!(ok && out.contains(": OK, "), "{name}: {err}");
    }
    let (ok, _, err) = check("accel", include_str!("../../../configs/accel.toml"));
    assert!(!ok, "{err}");
    for device in ["accelerator \"qam16\": the deadline of 5500 us", "accelerator \"fft1024\": the deadline of 6000 us"]
    {
        assert!(err.contains(&format!("{device} is shorter than its worst-case allocation latency")), "{err}");
    }
}

#[test]
fn ipc_configuration_is_valid() {
    let config = load_beside_stand_in_guest("ipc", include_str!("../../../configs/ipc.toml"));
    let kinds: Vec<&str> = config.system.channels.iter().map(|c| c.kind.label()).collect();
    assert_eq!(kinds, ["queuing", "queuing", "shared-memory"]);
    let (ping, pong) = (&config.system.partitions[0], &config.system.partitions[1]);
    assert!(ping.rights.read_hm_log, "ping reads the log");
    assert_eq!((ping.health.watchdog_us, pong.health.watchdog_us), (Some(1_000_000), Some(100_000)));
    assert_eq!(pong.health.watchdog, Action::Log);
}

#[test]
fn demo_configuration_is_valid() {
    let config = load_beside_stand_in_guest("demo", include_str!("../../../configs/demo.toml"));
    let system = &config.system;
    let names: Vec<&str> = system.partitions.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["rtos", "linux"]);
    assert_eq!(system.hypervisor.trace_events, 262_144, "the demo's rings hold its 30 s");
    assert!(system.partitions[0].exclusive, "rtos owns pCPU 1");
    assert_eq!(system.partitions[1].vcpus, [2, 3], "Linux has two vCPUs, one per pCPU");
    let kinds: Vec<&str> = system.channels.iter().map(|c| c.kind.label()).collect();
    assert_eq!(kinds, ["shared-memory"], "the telemetry ring");
    assert!(system.fabric.is_some(), "the fabric shared by both");
    let devices: Vec<usize> = system.partitions.iter().map(|p| p.accelerators.len()).collect();
    assert_eq!(devices, [1, 1], "an accelerator each");
    let summary = partita::check::summary(&config, &profile());
    assert!(summary.contains("linux") && summary.contains("0->2 1->3"), "{summary}");
    assert!(summary.contains("telemetry") && summary.contains("timed I/O"), "{summary}");
}

#[test]
fn documented_example_is_valid() {
    let page = include_str!("../../../docs/configuration.md");
    let start = page.find("```toml\n").expect("a toml example") + "```toml\n".len();
    let example = &page[start..start + page[start..].find("```").unwrap()];
    let config = load_beside_stand_in_guest("documented_example", example);
    assert_eq!(config.system.partitions.len(), 2);
}

/// The `[[plan]]` section's example, appended to the full example as it says.
#[test]
fn documented_plan_example_is_valid() {
    let page = include_str!("../../../docs/configuration.md");
    let block = |from: usize| {
        let start = from + page[from..].find("```toml\n").expect("a toml example") + "```toml\n".len();
        &page[start..start + page[start..].find("```").unwrap()]
    };
    let text = format!("{}\n{}", block(0), block(page.find("## `[[plan]]`").expect("a plan section")));
    let config = load_beside_stand_in_guest("documented_plan_example", &text);
    let names: Vec<&str> = config.system.plans.iter().map(|plan| plan.name.as_str()).collect();
    assert_eq!(names, ["normal", "degraded"]);
}

/// The `[[channel]]` section's example, appended to the full example.
#[test]
fn documented_channel_example_is_valid() {
    let page = include_str!("../../../docs/configuration.md");
    let block = |from: usize| {
        let start = from + page[from..].find("```toml\n").expect("a toml example") + "```toml\n".len();
        &page[start..start + page[start..].find("```").unwrap()]
    };
    let text = format!("{}\n{}", block(0), block(page.find("## `[[channel]]`").expect("a channel section")));
    let config = load_beside_stand_in_guest("documented_channel_example", &text);
    let names: Vec<&str> = config.system.channels.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["status", "frames"]);
}

#[test]
fn check_reports_the_error_count() {
    let (path, _) = fixture("pcpu_twice");
    let error = partita::check::check(&path).unwrap_err();
    assert_eq!(error.to_string(), format!("1 error(s) in {}", path.display()));
    let (path, _) = fixture("good");
    assert!(partita::check::check(&path).is_ok());
}

// --- TOML and schema -------------------------------------------------------

#[test]
fn bad_toml_syntax() {
    expect_error("syntax", "", "invalid string");
}

#[test]
fn unknown_field() {
    let message = "unknown field `phys_addr`, expected one of `base`, `size`, `phys`, `perms`, `identity`; did you \
                   mean \"phys\"?";
    expect_error("unknown_field", r#"partition["a"].memory[0].phys_addr"#, message);
}

#[test]
fn misspelt_word_gets_the_nearest_one() {
    expect_error("criticality_misspelt", r#"partition["rtos"].criticality"#, "; did you mean \"high\"?");
}

#[test]
fn every_misspelt_field_and_what_else_is_wrong_in_one_pass() {
    expect_errors(
        "two_typos_and_an_overlap",
        &[
            (r#"partition["rtos"].bootarg"#, "unknown field `bootarg`, expected one of `name`"),
            (r#"partition["rtos"].memory[0].phys"#, "memory region overlaps partition \"linux\" memory[0]"),
            (r#"partition["rtos"].memory[0].perm"#, "unknown field `perm`, expected one of `base`"),
        ],
    );
    let (path, _) = fixture("two_typos_and_an_overlap");
    let diagnostics = config::load(&path).unwrap_err();
    assert!(diagnostics[0].message.ends_with("did you mean \"bootargs\"?"), "{}", diagnostics[0]);
    assert!(diagnostics[2].message.ends_with("did you mean \"perms\"?"), "{}", diagnostics[2]);
}

#[test]
fn unknown_section() {
    expect_error("unknown_section", "schedule", "unknown field `schedule`");
}

#[test]
fn wrong_type() {
    expect_error("wrong_type", r#"partition["a"].cpus"#, "invalid type: string \"1\"");
}

#[test]
fn bad_size_suffix() {
    expect_error("bad_size", r#"partition["a"].memory[0].size"#, "invalid size \"16Q\"");
}

#[test]
fn missing_field() {
    expect_error("missing_field", r#"partition["a"].memory[0].size"#, "missing field `size`");
}

#[test]
fn unknown_key_in_an_interrupt_table() {
    expect_error(
        "interrupt_unknown_key",
        r#"partition["a"].device["gpio"].interrupts[1].cpu"#,
        "unknown field `cpu`, expected `intid` or `vcpu`",
    );
}

#[test]
fn bad_permission_letters() {
    expect_error("bad_perms", r#"partition["a"].memory[0].perms"#, "invalid permissions \"rwz\"");
}

#[test]
fn not_utf8() {
    let path = scratch_dir("not_utf8").join("not_utf8.toml");
    std::fs::write(&path, b"[platform]\ncpus = \xff\n").unwrap();
    let diagnostics = config::load(&path).unwrap_err();
    assert_eq!((diagnostics[0].line, diagnostics[0].column), (2, 8));
    assert!(diagnostics[0].message.contains("UTF-8"));
}

#[test]
fn missing_configuration_file() {
    let diagnostics = config::load(Path::new("no/such/config.toml")).unwrap_err();
    assert_eq!(diagnostics[0].line, 0);
    assert!(diagnostics[0].message.contains("cannot read"), "{}", diagnostics[0]);
}

// --- Memory ----------------------------------------------------------------

#[test]
fn host_overlap_between_partitions() {
    expect_error(
        "overlap_host",
        r#"partition["rtos"].memory[0].phys"#,
        "memory region overlaps partition \"linux\" memory[0] (0x48000000..0x49000000); drop `phys` to let \
         Partita place the region, or move it to a free range such as 0x49000000..0x4a000000",
    );
}

#[test]
fn host_overlap_with_hypervisor_memory() {
    expect_error(
        "overlap_hypervisor",
        r#"partition["a"].memory[0].phys"#,
        "overlaps hypervisor memory (0x40000000..0x42000000); drop `phys` to let Partita place the region, \
         or move it to a free range such as",
    );
}

#[test]
fn guest_overlap_between_regions() {
    expect_error(
        "overlap_guest",
        r#"partition["a"].memory[1].base"#,
        "memory region overlaps memory[0] (0x40000000..0x41000000) in guest-physical space",
    );
}

#[test]
fn guest_overlap_between_console_and_device() {
    expect_error(
        "overlap_console",
        r#"partition["a"].console"#,
        "the console overlaps device \"gpio\" (0x09030000..0x09031000)",
    );
}

#[test]
fn region_outside_ram() {
    expect_error(
        "outside_ram",
        r#"partition["a"].memory[0].phys"#,
        "memory region 0x7f800000..0x80800000 is outside platform RAM",
    );
}

#[test]
fn no_space_left_to_allocate() {
    expect_error("no_space", r#"partition["a"].memory[0].size"#, "no free 2 MiB-aligned space of 0x3000000 bytes");
}

#[test]
fn unaligned_address() {
    expect_error("unaligned", r#"partition["a"].memory[0].phys"#, "0x42000800 is not 4 KiB aligned");
}

#[test]
fn zero_size() {
    expect_error("zero_size", r#"partition["a"].memory[1].size"#, "size must not be zero");
}

#[test]
fn identity_region_with_other_phys() {
    expect_error("identity_phys", r#"partition["a"].memory[0].phys"#, "identity region must have phys == base");
}

#[test]
fn region_without_read_permission() {
    expect_error("perms_without_read", r#"partition["a"].memory[1].perms"#, "must include read");
}

#[test]
fn too_many_memory_regions() {
    expect_error("too_many_regions", r#"partition["a"].memory"#, "9 memory regions; a partition needs 1 to 8");
}

// --- CPUs ------------------------------------------------------------------

#[test]
fn pcpu_out_of_range() {
    expect_error(
        "pcpu_out_of_range",
        r#"partition["a"].cpus"#,
        "vCPU 1 is on pCPU 2, which does not exist: platform.cpus is 2",
    );
}

#[test]
fn two_vcpus_on_one_pcpu() {
    expect_error("pcpu_twice", r#"partition["a"].cpus"#, "vCPU 1 and vCPU 0 are both on pCPU 1");
}

#[test]
fn exclusive_partition_sharing_its_pcpu() {
    expect_error(
        "exclusive_shared",
        r#"partition["rtos"].exclusive"#,
        "partition \"rtos\" is exclusive, but its vCPU 0 shares pCPU 1 with partition \"gpos\" vCPU 1",
    );
}

#[test]
fn empty_vcpu_list() {
    expect_error("no_vcpus", r#"partition["a"].cpus"#, "0 vCPUs; a partition needs 1 to 8");
}

#[test]
fn too_many_platform_cpus() {
    expect_error("too_many_cpus", "platform.cpus", "9 CPUs; the platform must have 1 to 8");
}

// --- Images ----------------------------------------------------------------

#[test]
fn missing_image() {
    expect_error("missing_image", r#"partition["a"].image[0].path"#, "image file not found:");
}

#[test]
fn elf_larger_than_its_region() {
    expect_error(
        "image_too_big",
        r#"partition["a"].image[0].path"#,
        "ELF segment 0 (0x40000000..0x42000000) does not fit: it runs past the end of memory[0] (0x40000000..0x41000000)",
    );
}

#[test]
fn raw_image_larger_than_its_region() {
    expect_error("raw_too_big", r#"partition["a"].image[1].load"#, "raw image (0x501ff000..0x50201000) does not fit");
}

#[test]
fn linux_kernel_errors_name_the_kernel_field() {
    expect_error("linux_entry", r#"partition["linux"].entry"#, "leave `entry` out");
    expect_error("linux_not_an_image", r#"partition["linux"].kernel"#, "not an arm64 Image");
    expect_error("linux_too_big", r#"partition["linux"].kernel"#, "the kernel needs 0x3000000 bytes at 0x40000000");
}

#[test]
fn an_initrd_is_taken_beside_an_elf_image_too() {
    let config = load_good("initrd_beside_elf");
    let images = &config.images[0];
    assert_eq!(images.iter().map(|image| image.format).collect::<Vec<_>>(), [ImageFormat::Elf, ImageFormat::Initrd]);
}

#[test]
fn a_linux_partition_boots_its_kernel_with_the_initrd_on_top() {
    let config = load_good("linux_good");
    let images = &config.images[0];
    assert_eq!(images.iter().map(|image| image.format).collect::<Vec<_>>(), [ImageFormat::Linux, ImageFormat::Initrd]);
    assert_eq!(config.entries[0], None, "the build takes the kernel's load address");
    let store = config.system.hypervisor.images;
    assert!(store.size >= 0x3000 && store.size.is_multiple_of(2 << 20), "{store:x?}");
}

#[test]
fn virtio_devices_need_identity_memory_a_disk_and_a_page_each() {
    expect_error(
        "virtio_not_identity",
        r#"partition["linux"].virtio[0].kind"#,
        "must be identity-mapped; add `identity = true` to memory[0] (its host address is then its `base`)",
    );
    expect_error("virtio_no_disk", r#"partition["linux"].virtio[0].file"#, "disk image not found");
    expect_error("virtio_too_many", r#"partition["linux"].virtio[4].kind"#, "at most 4 virtio devices in all");
}

#[test]
fn a_net_device_forwards_host_ports_on_the_loopback_address() {
    let config = load_good("virtio_net_good");
    let net = &config.virtio[1];
    let Backend::Net { forwards } = &net.backend else { panic!("{net:?}") };
    let shown: Vec<String> = forwards.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["tcp 127.0.0.1:2222 -> port 22", "udp 127.0.0.1:5353 -> port 53"]);
    let device = config.system.partitions[0].devices.iter().find(|d| d.name == "virtio-net1").expect("its device");
    assert_eq!((device.ipa, device.pa, device.interrupts[0].intid), (0x0a00_2000, 0x0a00_2000, 64));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    partita::check::check_to(&config.path, None, &mut out, &mut err).unwrap();
    let out = String::from_utf8(out).unwrap();
    let expected = "network (QEMU's user-mode network; forwards listen on 127.0.0.1 alone):\n  \
                    linux: tcp 127.0.0.1:2222 -> port 22\n  linux: udp 127.0.0.1:5353 -> port 53\n";
    assert!(out.contains(expected), "{out}");
}

#[test]
fn forwards_that_do_not_read_say_what_to_write_each_on_its_line() {
    let field = |k: usize| format!(r#"partition["linux"].virtio[0].forward[{k}]"#);
    let fields: Vec<String> = (1..6).map(field).collect();
    expect_errors(
        "virtio_net_forward_bad",
        &[
            (&fields[0], "listens on 127.0.0.1 alone, so it names no address; write \"tcp:8080:80\""),
            (&fields[1], "unknown protocol \"tpc\", \"tcp\" or \"udp\"; did you mean \"tcp\"?"),
            (&fields[2], "\"tcp:2224\" is not a forward: write PROTOCOL:HOST_PORT:GUEST_PORT, e.g. \"tcp:2222:22\""),
            (
                &fields[3],
                "host port 80 is privileged (below 1024) and QEMU, run as a user, cannot listen on it; pick \
                          one from 1024 up, e.g. \"tcp:8080:80\"",
            ),
            (&fields[4], "the partition's port \"dns\" is not a port number (1 to 65535)"),
        ],
    );
}

#[test]
fn a_host_port_is_forwarded_once_with_a_free_one_offered() {
    expect_error(
        "virtio_net_forward_twice",
        r#"partition["linux"].virtio[0].forward[1]"#,
        "host port 8080 (tcp) is forwarded twice: partition \"web\"'s forward \"tcp:8080:80\" has it already; \
         give this one another, e.g. 8081",
    );
}

#[test]
fn only_a_net_device_has_forwards_and_a_misspelt_kind_is_named() {
    expect_error(
        "virtio_forward_not_net",
        r#"partition["linux"].virtio[0].forward"#,
        "only a net device (kind = \"net\") has port forwards",
    );
    expect_error("virtio_kind_misspelt", r#"partition["linux"].virtio[0].kind"#, "did you mean \"net\"?");
}

#[test]
fn images_overlapping_each_other() {
    expect_error(
        "image_overlap",
        r#"partition["a"].image[1].load"#,
        "raw image (0x40000000..0x40002000) overlaps image[0]",
    );
}

#[test]
fn image_over_the_device_tree() {
    expect_error(
        "dtb_overlap",
        r#"partition["a"].image[1].load"#,
        "overlaps the device-tree window (0x40ff0000..0x41000000), the last 64 KiB of memory[0]",
    );
}

#[test]
fn declared_elf_but_not_elf() {
    expect_error(
        "not_elf",
        r#"partition["a"].image[0].path"#,
        "the image is not an ELF file, but its format is \"elf\"",
    );
}

#[test]
fn raw_image_without_load_address() {
    expect_error("raw_without_load", r#"partition["a"].image[0].format"#, "a raw image needs a load address");
}

#[test]
fn elf_image_with_load_address() {
    expect_error("elf_with_load", r#"partition["a"].image[0].load"#, "load is only for raw images");
}

#[test]
fn partition_without_images() {
    expect_error("no_images", r#"partition["a"].image"#, "0 images; a partition needs 1 to 4");
}

#[test]
fn entry_outside_memory() {
    expect_error("entry_outside", r#"partition["a"].entry"#, "entry point 0x80000000 is not inside any memory region");
}

#[test]
fn entry_in_a_region_without_execute_permission() {
    expect_error(
        "entry_not_executable",
        r#"partition["a"].image[0].path"#,
        "the image's entry point 0x40000000 is in memory[0], which is not executable",
    );
}

#[test]
fn first_region_smaller_than_the_device_tree_window() {
    expect_error("dtb_region_too_small", r#"partition["a"].memory[0].size"#, "must be at least that large");
}

#[test]
fn elf_for_another_machine() {
    let dir = scratch_dir("x86_elf");
    let mut elf = aarch64_elf(0x4000_0000, 0x1000);
    elf[18] = 62; // e_machine = EM_X86_64
    std::fs::write(dir.join("x86.elf"), elf).unwrap();
    let text = include_str!("configs/missing_image.toml").replace("no-such-guest.elf", "x86.elf");
    let diagnostics = config::load_str(&dir.join("x86.toml"), &text).unwrap_err();
    assert_eq!(diagnostics.len(), 1, "{}", listing(&diagnostics));
    assert!(diagnostics[0].message.contains("ELF for machine 62, not AArch64"), "{}", diagnostics[0]);
}

// --- Cyclic plans ----------------------------------------------------------

#[test]
fn overlapping_slots() {
    expect_error(
        "plan_overlap",
        r#"plan["normal"].core[0].slot[1].start_us"#,
        "plan \"normal\" core 2 slot 1 (control/vcpu0, 4000..6000 us) overlaps slot 0 (2000..5000 us)",
    );
}

#[test]
fn slot_beyond_the_major_frame() {
    expect_error(
        "plan_beyond_frame",
        r#"plan["normal"].core[0].slot[1].duration_us"#,
        "plan \"normal\" core 2 slot 1 (gpos/vcpu0, 8000..11000 us) ends beyond the major frame (10000 us); \
         the frame restarts there, so its last 1000 us are never reached: shorten duration_us to 2000 or set \
         major_frame_us to at least 11000 (on every core of the plan)",
    );
}

#[test]
fn slot_past_the_major_frame_is_never_reached() {
    expect_error(
        "plan_slot_unreachable",
        r#"plan["normal"].core[0].slot[1].start_us"#,
        "(gpos/vcpu0, 12000..15000 us) ends beyond the major frame (10000 us); the frame restarts there, so the \
         slot is never reached: start it before 10000 or set major_frame_us to at least 15000",
    );
}

#[test]
fn slot_of_a_misspelt_partition() {
    expect_error(
        "plan_misspelt_partition",
        r#"plan["normal"].core[0].slot[1].partition"#,
        "no partition is named \"gpso\"; did you mean \"gpos\"?",
    );
}

#[test]
fn slot_of_an_unknown_partition() {
    expect_error(
        "plan_unknown_partition",
        r#"plan["normal"].core[0].slot[0].partition"#,
        "plan \"normal\" core 2 slot 0 (ctrl/vcpu0, 0..4000 us): no partition is named \"ctrl\"",
    );
}

#[test]
fn slot_of_an_unknown_vcpu() {
    expect_error(
        "plan_unknown_vcpu",
        r#"plan["normal"].core[0].slot[0].vcpu"#,
        "plan \"normal\" core 3 slot 0 (gpos/vcpu2, 0..4000 us): partition \"gpos\" has 2 vCPU(s), so vCPU 2 does not exist",
    );
}

#[test]
fn slot_of_a_vcpu_pinned_to_another_core() {
    expect_error(
        "plan_vcpu_elsewhere",
        r#"plan["normal"].core[0].slot[0].vcpu"#,
        "plan \"normal\" core 3 slot 0 (control/vcpu0, 0..4000 us): vCPU 0 of partition \"control\" is pinned to pCPU 2, \
         not to core 3",
    );
}

#[test]
fn cyclic_cores_with_different_major_frames() {
    expect_error(
        "plan_frames_differ",
        r#"plan["normal"].core[1].major_frame_us"#,
        "plan \"normal\" core 3 has a major frame of 20000 us, but core 2 has 10000 us; all cyclic cores of a plan share one",
    );
}

#[test]
fn zero_major_frame() {
    expect_error(
        "plan_zero_frame",
        r#"plan["normal"].core[0].major_frame_us"#,
        "the major frame must be longer than 0 us",
    );
}

#[test]
fn zero_slot_duration() {
    expect_error(
        "plan_zero_duration",
        r#"plan["normal"].core[0].slot[0].duration_us"#,
        "plan \"normal\" core 2 slot 0 (control/vcpu0, 1000..1000 us) has a duration of 0 us",
    );
}

#[test]
fn time_with_an_unknown_unit() {
    expect_error("plan_bad_time", r#"plan["normal"].core[0].major_frame_us"#, "invalid time \"10min\"");
}

#[test]
fn duplicate_plan_names() {
    expect_error("plan_duplicate_name", r#"plan["normal"].name"#, "duplicate plan name \"normal\" (also plan[0])");
}

#[test]
fn core_listed_twice_in_a_plan() {
    expect_error(
        "plan_core_twice",
        r#"plan["normal"].core[1].cpu"#,
        "plan \"normal\" lists core 2 twice (also core[0])",
    );
}

#[test]
fn cyclic_core_out_of_range() {
    expect_error(
        "plan_cpu_out_of_range",
        r#"plan["normal"].core[0].cpu"#,
        "plan \"normal\" core 4: pCPU 4 does not exist: platform.cpus is 4",
    );
}

#[test]
fn core_cyclic_in_a_later_plan_only() {
    expect_error(
        "plan_core_not_in_first",
        r#"plan["degraded"].core[1].cpu"#,
        "core 3 is cyclic in plan \"degraded\" but not in plan \"normal\"; every plan must schedule the same cores",
    );
}

#[test]
fn core_left_out_of_a_later_plan() {
    expect_error(
        "plan_core_missing",
        r#"plan["idle"].core"#,
        "core 2 is cyclic in plan \"normal\" but not in plan \"idle\"",
    );
}

#[test]
fn exclusive_partition_on_a_cyclic_core() {
    expect_error(
        "plan_exclusive_cyclic",
        r#"partition["control"].exclusive"#,
        "partition \"control\" is exclusive, but its vCPU 0 is on pCPU 2, which plan \"normal\" schedules cyclically",
    );
}

#[test]
fn too_many_plans() {
    expect_error("too_many_plans", "plan", "9 plans; at most 8 are allowed");
}

#[test]
fn too_many_slots_on_a_core() {
    expect_error(
        "too_many_slots",
        r#"plan["normal"].core[0].slot"#,
        "plan \"normal\" core 2 has 65 slots; a core has at most 64",
    );
}

// --- Budgets and partition-switch overhead --------------------------------

#[test]
fn budget_of_no_time() {
    expect_error(
        "budget_zero_time",
        r#"partition["rtos"].budget.time"#,
        "partition \"rtos\": the budget time must be longer than 0 us",
    );
}

#[test]
fn budget_of_no_period() {
    expect_error(
        "budget_zero_period",
        r#"partition["rtos"].budget.period"#,
        "partition \"rtos\": the budget period must be longer than 0 us",
    );
}

#[test]
fn budget_longer_than_its_period() {
    expect_error(
        "budget_over_period",
        r#"partition["rtos"].budget.time"#,
        "partition \"rtos\": the budget time (12000 us) is longer than its period (10000 us)",
    );
}

#[test]
fn budget_of_a_partition_that_runs_only_in_slots() {
    expect_error(
        "budget_cyclic_only",
        r#"partition["control"].budget"#,
        "partition \"control\" has a budget, but all its vCPUs are on cyclic pCPUs (2), where the plan's slots \
         bound their time; a budget applies only on fixed-priority pCPUs",
    );
}

#[test]
fn budgets_over_a_whole_pcpu() {
    expect_error(
        "budget_over_subscribed",
        r#"partition["gpos"].budget"#,
        "pCPU 1 is over-subscribed: the budgets of its vCPUs add up to 110.0 % \
         (rtos 50.0 %, logger 30.0 %, gpos 30.0 %), more than 100 %",
    );
}

#[test]
fn three_thirds_fill_a_pcpu_and_are_accepted() {
    let config = load_good("budget_thirds");
    let budgets: Vec<Option<Budget>> = config.system.partitions.iter().map(|p| p.budget).collect();
    let third = |time_us, period_us| Some(Budget { time_us, period_us });
    assert_eq!(budgets, [third(1_000, 3_000), third(2_000, 6_000), third(10, 30)], "times in every spelling");
    let summary = partita::check::summary(&config, &profile());
    let line = "  pCPU 1: 100.0 % budgeted: a 33.3 % (1000 us every 3000 us), b 33.3 % (2000 us every 6000 us), \
                c 33.3 % (10 us every 30 us)\n";
    assert!(summary.contains(line), "{summary}");
}

#[test]
fn overhead_limit_out_of_range() {
    expect_error(
        "overhead_limit_out_of_range",
        "hypervisor.overhead_limit_percent",
        "the overhead limit must be more than 0 % and at most 100 %",
    );
    // The same line for every value outside (0, 100], however it is spelt.
    let (path, text) = fixture("overhead_limit_out_of_range");
    for value in ["-1", "100.5", "1e3", "nan"] {
        let text = text.replace("overhead_limit_percent = 0 ", &format!("overhead_limit_percent = {value} "));
        let diagnostics = config::load_str(&path, &text).expect_err(value);
        assert_eq!(diagnostics.len(), 1, "{value}: {}", listing(&diagnostics));
        assert_eq!(diagnostics[0].line, marked_line(&text), "{value}: {}", diagnostics[0]);
        assert_eq!(diagnostics[0].field, "hypervisor.overhead_limit_percent", "{value}");
    }
}

#[test]
fn overhead_limit_defaults_to_one_percent_and_takes_fractions() {
    assert_eq!(load_good("good").system.hypervisor.overhead_limit_bp, 100);
    assert_eq!(load_good("overhead_warning").system.hypervisor.overhead_limit_bp, 10);
}

/// Runs `partita check` on a fixture with the test profile; returns its
/// result, stdout and stderr.
fn check_streams(name: &str) -> (anyhow::Result<Config>, String, String) {
    let (path, _) = fixture(name);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let result = partita::check::check_to(&path, Some(&profile()), &mut out, &mut err);
    (result, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

#[test]
fn summary_shows_utilisation_and_switch_overhead() {
    let (result, out, err) = check_streams("good_schedule");
    assert!(result.is_ok(), "{err}");
    assert_eq!(err, "", "no warning under the default 1 % limit");
    let pcpu1 = "  pCPU 1: 70.0 % budgeted: rtos 20.0 % (2000 us every 10000 us), \
                 logger 50.0 % (500 us every 1000 us); unbudgeted: gpos\n";
    assert!(out.contains(&format!("\nbudgets on fixed-priority pCPUs\n{pcpu1}")), "{out}");
    assert!(!out.contains("pCPU 3:"), "pCPU 3 hosts no budgeted vCPU: {out}");
    assert!(
        out.contains(
            "  partition switches: PCS 2 us (-icount measurement of 125 instructions at 16 ns; fixed for the tests), \
             limit 1 %\n"
        ),
        "{out}"
    );
    let rows: Vec<Vec<&str>> = out.lines().map(|line| line.split_whitespace().collect()).collect();
    for row in [["PARTITION", "SLOTS", "SUM", "SD", "PL"].as_slice(), &["control", "2", "2000", "us", "0.200", "%"]] {
        assert!(rows.iter().any(|r| r == row), "no row {row:?} in:\n{out}");
    }
    // 2 us / 6 ms = 0.0333 %.
    assert!(rows.iter().any(|r| r == &["monitor", "1", "6000", "us", "0.033", "%"]), "{out}");
}

#[test]
fn switch_overhead_over_the_limit_warns_on_stderr_and_passes() {
    let (result, out, err) = check_streams("overhead_warning");
    let config = result.expect("a warning is not an error");
    assert_eq!(config.system.plans.len(), 1);
    assert_eq!(
        err,
        "warning: plan \"normal\": partition \"control\" loses 0.200 % to partition switches of 2 us each \
         (limit 0.1 %)\n",
        "monitor loses only 0.025 %"
    );
    assert!(out.contains("OK") && out.contains("0.200 %  over the limit"), "{out}");
    // A faster switch stays under the limit: no warning at all.
    let (path, _) = fixture("overhead_warning");
    let fast = PlatformProfile { pcs_ns_per_instruction: 8, ..profile() };
    let mut err = Vec::new();
    partita::check::check_to(&path, Some(&fast), &mut Vec::new(), &mut err).unwrap();
    assert!(err.is_empty(), "{}", String::from_utf8_lossy(&err));
}

/// The RTOS beside a GPOS on pCPU 1, no channel: the worst path it can
/// meet is the EL2 timer's (900), the port copy (1400) cannot run there.
const RTOS_BESIDE_GPOS: &str =
    "rtos: 1350 instructions (21.60 us) on pCPU 1 = ΔVMMcritical 900 (hyp-timer) + ΔVMMsched 400 + Δ_VM^relEv 50";

#[test]
fn check_prints_what_partita_adds_to_each_release_of_a_high_partition() {
    let (result, out, err) = check_streams("response_within_limit");
    assert!(result.is_ok(), "{err}");
    assert!(out.contains("added response per release, Ker-ONE eq. 4 (fixed for the tests):\n"), "{out}");
    assert!(out.contains(&format!("  {RTOS_BESIDE_GPOS}, limit 22 us\n")), "{out}");
    assert!(!out.contains("gpos: "), "only high-criticality partitions: {out}");
}

#[test]
fn check_refuses_a_high_partition_whose_added_response_exceeds_its_limit() {
    let (_, text) = fixture("response_over_limit");
    let (result, out, err) = check_streams("response_over_limit");
    assert!(result.is_err() && out.is_empty(), "{out}");
    let expected = format!(
        "response_over_limit.toml:{}:1: error: partition[\"rtos\"].max_added_response_us: partition \"rtos\": Partita can \
         add {} to each release, more than its max_added_response_us of 20 us\n",
        marked_line(&text),
        RTOS_BESIDE_GPOS.trim_start_matches("rtos: ")
    );
    assert!(err.ends_with(&expected) && err.lines().count() == 1, "{err}");
}

#[test]
fn check_refuses_a_response_limit_on_a_partition_that_is_not_high() {
    let (result, _, err) = check_streams("response_limit_low");
    assert!(result.is_err());
    assert!(
        err.contains("partition[\"gpos\"].max_added_response_us: partition \"gpos\": a limit on what Partita adds"),
        "{err}"
    );
    // Without measured costs the limit cannot be shown to hold.
    let (path, _) = fixture("response_over_limit");
    let unmeasured = PlatformProfile { response: None, response_measured: None, ..profile() };
    let mut err = Vec::new();
    assert!(partita::check::check_to(&path, Some(&unmeasured), &mut Vec::new(), &mut err).is_err());
    let err = String::from_utf8(err).unwrap();
    assert!(err.contains("has no measured response costs to check it against"), "{err}");
}

#[test]
fn check_takes_the_boards_profile() {
    let (path, _) = fixture("overhead_warning");
    let switch = partita::profile::for_board("qemu-virt").unwrap().switch();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    partita::check::check_to(&path, None, &mut out, &mut err).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains(&format!("PCS {} us ({})", micros_text(switch.ns), switch.source)), "{out}");
}

/// The overhead model's worked example in the reference page is what
/// `check` prints on QEMU `virt` today: a new `bench pcs --save` updates
/// both.
#[test]
fn documented_overhead_output_is_what_check_prints() {
    let page = include_str!("../../../docs/configuration.md");
    let (out, err) = check_on_board("cyclic_100us_qemu_virt");
    let header = out.lines().find(|line| line.starts_with("  partition switches: ")).expect("a plan's switches");
    assert!(page.contains(&format!("```\n{header}\n```")), "the reference page lacks\n{header}");
    let warning = err.lines().next().expect("a warning");
    assert!(page.contains(&format!("```\n{warning}\n```")), "the reference page lacks\n{warning}");
}

/// `check` of `name` with the board's own profile, as a user runs it.
fn check_on_board(name: &str) -> (String, String) {
    let (path, _) = fixture(name);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    partita::check::check_to(&path, None, &mut out, &mut err).unwrap_or_else(|e| panic!("{name}: {e}"));
    (String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

/// The switch each board charges is its `-icount` count in guest time, not
/// the wall-clock delay of a loaded emulator host: a plan of 10 ms slots is
/// within the default 1 %, and one of 100 us slots is not.
#[test]
fn a_realistic_cyclic_plan_passes_on_every_board_and_a_tight_one_warns() {
    let boards = [
        ("qemu-virt", "cyclic_10ms_qemu_virt", "cyclic_100us_qemu_virt"),
        ("zcu102", "cyclic_10ms_zcu102", "cyclic_100us_zcu102"),
    ];
    for (board, realistic, tight) in boards {
        let profile = partita::profile::for_board(board).unwrap();
        let switch = profile.switch();
        assert_eq!(switch.ns, profile.pcs_instructions * 16, "{board}: shift 4, 16 ns an instruction");
        let header = format!(
            "  partition switches: PCS {} us (-icount measurement of {} instructions at 16 ns",
            micros_text(switch.ns),
            profile.pcs_instructions
        );

        let (out, err) = check_on_board(realistic);
        assert_eq!(err, "", "{board}: no warning for 10 ms slots:\n{out}");
        assert!(out.contains(&header) && out.contains("; partita bench pcs"), "{board}: {out}");
        assert!(!out.contains("over the limit"), "{board}: {out}");

        let (out, err) = check_on_board(tight);
        assert!(out.contains(&header), "{board}: {out}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{board}: one warning per partition:\n{err}");
        for (line, partition) in lines.iter().zip(["control", "monitor"]) {
            let expected = format!(
                "warning: plan \"normal\": partition \"{partition}\" loses {}.{:03} % to partition switches of {} us \
                 each (limit 1 %)",
                switch.ns / 1000,
                switch.ns % 1000,
                micros_text(switch.ns)
            );
            assert_eq!(*line, expected, "{board}");
        }
    }
}

// --- Names -----------------------------------------------------------------

#[test]
fn duplicate_partition_names() {
    expect_error("duplicate_partition", r#"partition["a"].name"#, "duplicate partition name \"a\" (also partition[0])");
}

#[test]
fn duplicate_device_names() {
    expect_error(
        "duplicate_device",
        r#"partition["a"].device["gpio"].name"#,
        "duplicate device name \"gpio\" (also device[0])",
    );
}

#[test]
fn bad_partition_name() {
    expect_error("bad_name", r#"partition["Control Unit"].name"#, "may only use a-z, 0-9, '_' and '-'");
}

#[test]
fn reserved_partition_name() {
    expect_error("reserved_name", r#"partition["partita"].name"#, "\"partita\" is reserved");
}

// --- Devices and interrupts ------------------------------------------------

#[test]
fn interrupt_claimed_twice() {
    expect_error(
        "interrupt_twice",
        r#"partition["b"].device["uart"].interrupts"#,
        "interrupt 39 is already claimed by partition \"a\" device \"gpio\"; an interrupt goes to one partition \
         only, so remove 39 from one of the two `interrupts` lists",
    );
}

#[test]
fn interrupt_outside_spi_range() {
    expect_error("interrupt_not_spi", r#"partition["a"].device["gpio"].interrupts"#, "interrupt 27 is not an SPI");
}

#[test]
fn interrupt_routed_to_a_missing_vcpu() {
    expect_error(
        "interrupt_no_vcpu",
        r#"partition["rtos"].device["gpio"].interrupts"#,
        "interrupt 40 is routed to vCPU 3, but partition \"rtos\" has 2 vCPU(s): nobody would own it",
    );
}

#[test]
fn device_overlapping_ram() {
    expect_error(
        "device_in_ram",
        r#"partition["a"].device["gpio"].phys"#,
        "overlaps platform RAM (0x40000000..0x80000000)",
    );
}

#[test]
fn device_overlapping_partitas_console() {
    expect_error(
        "device_on_console",
        r#"partition["a"].device["gpio"].phys"#,
        "overlaps Partita's console (0x09000000..0x09001000)",
    );
}

#[test]
fn device_overlapping_the_gic() {
    expect_error("device_on_gic", r#"partition["a"].device["gpio"].phys"#, "overlaps the GIC redistributors");
}

#[test]
fn device_given_to_two_partitions() {
    expect_error(
        "device_shared",
        r#"partition["b"].device["gpio"].phys"#,
        "device overlaps partition \"a\" device \"gpio\"",
    );
}

#[test]
fn device_without_compatible() {
    expect_error(
        "no_compatible",
        r#"partition["a"].device["gpio"].compatible"#,
        "at least one compatible string is required",
    );
}

// --- System-wide -----------------------------------------------------------

#[test]
fn no_partitions() {
    expect_error("no_partitions", "partition", "no partitions; a system needs 1 to 16");
}

#[test]
fn too_many_partitions() {
    expect_error("too_many_partitions", "partition", "17 partitions; at most 16 are allowed");
}

#[test]
fn hypervisor_memory_outside_ram() {
    expect_error(
        "hypervisor_outside_ram",
        "hypervisor.memory.base",
        "hypervisor memory 0x30000000..0x32000000 is outside platform RAM",
    );
}

#[test]
fn quantum_out_of_range() {
    expect_error("quantum_out_of_range", "hypervisor.quantum_us", "quantum 50 us is out of range 100..=1000000 us");
}

#[test]
fn trace_ring_too_small() {
    expect_error("trace_events_out_of_range", "trace.events_per_cpu", "32 events per CPU is out of range 64..=1048576");
}

#[test]
fn trace_larger_than_a_quarter_of_hypervisor_memory() {
    expect_error(
        "trace_too_big",
        "trace.events_per_cpu",
        "the trace needs 16385 KiB (4 CPUs x 262144 events), more than a quarter of hypervisor memory (8192 KiB)",
    );
}

#[test]
fn default_trace_too_big_points_at_the_section() {
    expect_error("trace_default_too_big", "trace.events_per_cpu", "more than a quarter of hypervisor memory (512 KiB)");
}

#[test]
fn trace_off_ignores_the_ring_size() {
    let text = "[trace]\nenabled = false\nevents_per_cpu = 32\n\n[[partition]]\nname = \"a\"\ncpus = [1]\n\
                [[partition.memory]]\nbase = 0x40000000\nsize = \"16M\"\n\
                [[partition.image]]\npath = \"../target/guests/test-guest.elf\"\n";
    let config = load_beside_stand_in_guest("trace_off", text);
    assert_eq!(config.system.hypervisor.trace_events, 0);
}

#[test]
fn unsupported_board() {
    expect_error(
        "bad_board",
        "platform.board",
        "board \"raspberry-pi\" is not supported; the boards are \"qemu-virt\" and \"zcu102\"",
    );
}

/// The ZCU102's map comes from the board's name: DDR at 0, UART0, the
/// GIC-400's distributor and its CPU-side frames from GICC.
#[test]
fn zcu102_takes_the_board_s_defaults() {
    let config = load_good("good_zcu102");
    let platform = &config.system.platform;
    assert_eq!(platform.board, "zcu102");
    assert_eq!(platform.ram, Range::new(0, 2 << 30));
    assert_eq!(platform.console, Range::new(0xff00_0000, 0x1000));
    assert_eq!(platform.gicd, Range::new(0xf901_0000, 0x1_0000));
    assert_eq!(platform.gicr, Range::new(0xf902_0000, 0x5_0000));
    assert_eq!(config.system.hypervisor.memory, Range::new(0, 32 << 20));
    let (path, _) = fixture("good_zcu102");
    let mut out = Vec::new();
    partita::check::check_to(&path, None, &mut out, &mut Vec::new()).expect("no plan needs a measured switch");
    assert!(String::from_utf8(out).unwrap().contains(": OK, 1 partition(s) on 4 pCPU(s)"));
}

#[test]
fn zcu102_has_no_redistributors() {
    expect_error(
        "zcu102_redistributor",
        "platform.gic.redistributor",
        "board \"zcu102\" has a GICv2, which has no redistributors",
    );
}

/// Every fixture in the folder is exercised by some test above.
#[test]
fn every_fixture_has_a_test() {
    let source = include_str!("config_errors.rs");
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs")).unwrap() {
        let name = entry.unwrap().path().file_stem().unwrap().to_string_lossy().into_owned();
        assert!(source.contains(&format!("\"{name}\"")), "tests/configs/{name}.toml has no test");
    }
}

#[test]
fn priority_defaults_from_criticality_and_can_be_given() {
    let text = include_str!("../../../configs/demo.toml").replacen(
        "criticality = \"low\"\n",
        "criticality = \"low\"\npriority = 100\n",
        1,
    );
    let config = load_beside_stand_in_guest("priorities", &text);
    let priorities: Vec<u8> = config.system.partitions.iter().map(|p| p.priority).collect();
    assert_eq!(priorities, [192, 100], "rtos high (default), linux given");
    let defaults = load_beside_stand_in_guest("default-priorities", include_str!("../../../configs/demo.toml"));
    let priorities: Vec<u8> = defaults.system.partitions.iter().map(|p| p.priority).collect();
    assert_eq!(priorities, [192, 64], "high and low by default");
}

#[test]
fn a_priority_beyond_255_is_refused() {
    let root = scratch_dir("priority-range");
    std::fs::create_dir_all(&root).unwrap();
    let path = root.join("priority.toml");
    std::fs::write(&path, "[[partition]]\nname = \"a\"\ncpus = [1]\npriority = 256\n").unwrap();
    let diagnostics = config::load(&path).expect_err("256 is not a priority");
    assert_eq!(diagnostics.len(), 1, "{}", listing(&diagnostics));
    assert_eq!(
        (diagnostics[0].line, diagnostics[0].field.as_str()),
        (4, r#"partition["a"].priority"#),
        "{}",
        listing(&diagnostics)
    );
}

#[test]
fn switch_plan_right_without_plans() {
    expect_error(
        "rights_without_plans",
        r#"partition["control"].rights"#,
        "grants \"switch-plan\", but the configuration declares no [[plan]]",
    );
}

#[test]
fn unknown_right() {
    expect_error(
        "rights_unknown",
        r#"partition["control"].rights[1]"#,
        "unknown variant `reboot`, expected one of `suspend`",
    );
}

#[test]
fn migration_to_an_exclusive_partitions_pcpu() {
    expect_error(
        "migrate_bad_target",
        r#"partition["gpos"].migrate[0].to"#,
        "pCPU 3 belongs to exclusive partition \"rtos\"",
    );
}

#[test]
fn migration_of_a_vcpu_that_does_not_exist() {
    expect_error(
        "migrate_unknown_vcpu",
        r#"partition["gpos"].migrate[0].vcpu"#,
        "vCPU 2 does not exist: the partition has 2",
    );
}

// --- Channels and health ---------------------------------------------------

#[test]
fn good_channels_resolve_names_sizes_and_health() {
    let config = load_good("good_channels");
    let system = &config.system;
    assert_eq!(system.hypervisor.hm_log_entries, 512);
    assert_eq!(load_good("good").system.hypervisor.hm_log_entries, 256, "the default");
    assert_eq!(
        system.channels,
        [
            Channel {
                name: "status".into(),
                kind: ChannelKind::Sampling {
                    source: 0,
                    destinations: vec![1, 2],
                    max_message: 64,
                    refresh_us: 10_000
                },
            },
            Channel {
                name: "commands".into(),
                kind: ChannelKind::Queuing { source: 1, destination: 0, max_message: 1024, depth: 16 },
            },
            Channel {
                name: "frames".into(),
                kind: ChannelKind::SharedMemory {
                    partitions: vec![0, 2],
                    ipa: 0x5000_0000,
                    // After Partita's 32 MiB and three 16 MiB regions.
                    pa: 0x4500_0000,
                    size: 0x1_0000,
                    read_only: vec![2],
                    doorbell: Some(48),
                },
            },
            Channel {
                name: "log".into(),
                kind: ChannelKind::SharedMemory {
                    partitions: vec![1, 2],
                    ipa: 0x5100_0000,
                    pa: 0x7f00_0000,
                    size: 0x1000,
                    read_only: vec![],
                    doorbell: None,
                },
            },
        ]
    );
    let [rtos, monitor, gpos] = &system.partitions[..] else { panic!("three partitions expected") };
    assert_eq!(
        rtos.health,
        Health {
            stage2_fault: Action::Restart,
            watchdog: Action::Restart,
            reported: Action::Ignore,
            watchdog_us: Some(100_000),
            ..Health::DEFAULT
        }
    );
    assert_eq!(
        monitor.health,
        Health { illegal_hypercall: Action::Suspend, budget_overrun: Action::ResetSystem, ..Health::DEFAULT }
    );
    assert_eq!(gpos.health, Health::DEFAULT);
    assert_eq!(
        (Health::DEFAULT.stage2_fault, Health::DEFAULT.forbidden, Health::DEFAULT.illegal_hypercall),
        (Action::Inject, Action::Inject, Action::Log),
        "faults are the guest's own exceptions, a bad hypercall is logged"
    );
    let summary = partita::check::summary(&config, &profile());
    let rows: Vec<Vec<&str>> = summary.lines().map(|line| line.split_whitespace().collect()).collect();
    for row in [
        &["0", "status", "sampling", "rtos", "->", "monitor,", "gpos", "64", "B,", "refresh", "10000", "us"][..],
        &["1", "commands", "queuing", "monitor", "->", "rtos", "16", "x", "1024", "B"],
        &[
            "2",
            "frames",
            "shared-memory",
            "rtos,",
            "gpos",
            "(read-only:",
            "gpos)",
            "64K",
            "0x50000000",
            "->",
            "0x45000000,",
        ],
        &["3", "log", "shared-memory", "monitor,", "gpos", "4K", "0x51000000", "->", "0x7f000000"],
    ] {
        assert!(rows.iter().any(|r| r.starts_with(row)), "no row {row:?} in:\n{summary}");
    }
    assert!(summary.contains("\nhealth monitor: log of 512 entries\n"), "{summary}");
    assert!(
        summary.contains("  rtos: watchdog every 100000 us, stage2-fault restart, watchdog restart, reported ignore\n"),
        "{summary}"
    );
    assert!(summary.contains("  monitor: illegal-hypercall suspend, budget-overrun reset-system\n"), "{summary}");
    assert!(!summary.contains("  gpos:"), "defaults go unsaid: {summary}");
}

#[test]
fn channel_of_an_unknown_partition() {
    expect_error(
        "channel_unknown_partition",
        r#"channel["status"].destinations"#,
        "channel \"status\": no partition is named \"logger\"",
    );
    let (path, _) = fixture("channel_unknown_partition");
    let diagnostics = config::load(&path).unwrap_err();
    assert!(!diagnostics[0].message.contains("did you mean"), "nothing near \"logger\": {}", diagnostics[0]);
}

#[test]
fn channel_to_a_misspelt_partition() {
    expect_error(
        "channel_misspelt_partition",
        r#"channel["status"].destinations"#,
        "channel \"status\": no partition is named \"gpso\"; did you mean \"gpos\"?",
    );
}

#[test]
fn duplicate_channel_names() {
    expect_error(
        "channel_duplicate_name",
        r#"channel["status"].name"#,
        "duplicate channel name \"status\" (also channel[0])",
    );
}

#[test]
fn sampling_channel_without_destination() {
    expect_error(
        "channel_no_destination",
        r#"channel["status"].destinations"#,
        "channel \"status\" has no destination",
    );
}

#[test]
fn sampling_source_among_its_destinations() {
    expect_error(
        "channel_source_reads",
        r#"channel["status"].destinations"#,
        "channel \"status\": partition \"rtos\" is both the source and a destination",
    );
}

#[test]
fn sampling_destination_listed_twice() {
    expect_error(
        "channel_destination_twice",
        r#"channel["status"].destinations"#,
        "channel \"status\" lists partition \"gpos\" twice in destinations",
    );
}

#[test]
fn queuing_channel_to_its_own_source() {
    expect_error(
        "channel_direction_conflict",
        r#"channel["commands"].destination"#,
        "channel \"commands\": partition \"gpos\" is both the source and the destination",
    );
}

#[test]
fn message_larger_than_4_kib() {
    expect_error(
        "channel_message_too_big",
        r#"channel["status"].max_message"#,
        "channel \"status\": a message of 8192 bytes is out of range 1..=4096 bytes",
    );
}

#[test]
fn sampling_refresh_of_zero() {
    expect_error("channel_zero_refresh", r#"channel["status"].refresh"#, "the refresh period must be longer than 0 us");
}

#[test]
fn queue_depth_out_of_range() {
    expect_error(
        "channel_depth_out_of_range",
        r#"channel["commands"].depth"#,
        "a depth of 0 messages is out of range 1..=1024",
    );
}

#[test]
fn queue_larger_than_1_mib() {
    expect_error(
        "channel_queue_too_big",
        r#"channel["commands"].depth"#,
        "channel \"commands\": 512 messages of 4096 bytes take 2048 KiB; a queue may take at most 1024 KiB",
    );
}

#[test]
fn channel_field_of_another_kind() {
    expect_error(
        "channel_field_of_other_kind",
        r#"channel["commands"].refresh"#,
        "channel \"commands\": `refresh` is not a field of a queuing channel",
    );
}

#[test]
fn channel_missing_a_field_of_its_kind() {
    expect_error(
        "channel_missing_field",
        r#"channel["commands"].depth"#,
        "channel \"commands\": a queuing channel needs `depth`",
    );
}

#[test]
fn unknown_channel_kind() {
    expect_error(
        "channel_unknown_kind",
        r#"channel["status"].kind"#,
        "unknown variant `mailbox`, expected one of `sampling`",
    );
}

#[test]
fn shared_memory_of_one_partition() {
    expect_error(
        "shared_one_partition",
        r#"channel["frames"].partitions"#,
        "channel \"frames\" has 1 partition(s); shared memory needs 2 or more",
    );
}

#[test]
fn shared_memory_partition_listed_twice() {
    expect_error(
        "shared_partition_twice",
        r#"channel["frames"].partitions"#,
        "lists partition \"rtos\" twice in partitions",
    );
}

#[test]
fn read_only_partition_that_is_not_a_member() {
    expect_error("shared_read_only_outsider", r#"channel["frames"].read_only"#, "no partition is named \"monitor\"");
}

#[test]
fn shared_memory_nobody_may_write() {
    expect_error(
        "shared_all_read_only",
        r#"channel["frames"].read_only"#,
        "channel \"frames\": every partition maps it read-only, so nobody could write to it",
    );
}

#[test]
fn shared_memory_of_part_of_a_page() {
    expect_error("shared_unaligned_size", r#"channel["frames"].size"#, "size 0x1800 is not a multiple of 4 KiB");
}

#[test]
fn shared_memory_over_partition_ram() {
    expect_error(
        "shared_over_memory",
        r#"channel["frames"].base"#,
        "channel \"frames\" at 0x601f0000..0x60200000 overlaps memory[1] (0x60000000..0x60200000) of partition \"rtos\"",
    );
}

#[test]
fn shared_memory_over_a_device() {
    expect_error(
        "shared_over_device",
        r#"channel["frames"].base"#,
        "overlaps device \"gpio\" (0x09030000..0x09031000) of partition \"rtos\" in guest-physical space",
    );
}

#[test]
fn shared_memory_over_the_gic() {
    let (path, _) = fixture("shared_over_gic");
    let diagnostics = config::load(&path).unwrap_err();
    // One per member partition: each would lose its distributor.
    assert_eq!(diagnostics.len(), 2, "{}", listing(&diagnostics));
    for (diagnostic, name) in diagnostics.iter().zip(["rtos", "gpos"]) {
        assert_eq!(diagnostic.field, r#"channel["frames"].base"#);
        let text = format!("overlaps the virtual GIC distributor (0x08000000..0x08010000) of partition \"{name}\"");
        assert!(diagnostic.message.contains(&text), "{diagnostic}");
    }
}

#[test]
fn shared_memory_on_a_partitions_host_pages() {
    expect_error(
        "shared_host_overlap",
        r#"channel["frames"].phys"#,
        "channel \"frames\": host memory 0x60000000..0x60010000 overlaps partition \"rtos\" memory[0]",
    );
}

#[test]
fn doorbell_outside_the_spis() {
    expect_error(
        "shared_doorbell_range",
        r#"channel["frames"].doorbell_intid"#,
        "doorbell INTID 16 is out of range 32..=1019",
    );
}

#[test]
fn doorbell_on_a_passthrough_interrupt() {
    expect_error(
        "shared_doorbell_passthrough",
        r#"channel["frames"].doorbell_intid"#,
        "doorbell INTID 39 is already partition \"rtos\" device \"gpio\"'s interrupt",
    );
}

#[test]
fn doorbell_of_two_channels() {
    expect_error(
        "shared_doorbell_twice",
        r#"channel["frames2"].doorbell_intid"#,
        "doorbell INTID 48 is already channel \"frames\"'s",
    );
}

#[test]
fn too_many_channels() {
    expect_error("too_many_channels", "channel", "65 channels; at most 64 are allowed");
}

#[test]
fn unknown_health_event() {
    expect_error(
        "health_unknown_event",
        r#"partition["rtos"].health.timeout"#,
        "unknown field `timeout`, expected one of `stage2-fault`",
    );
}

#[test]
fn unknown_health_action() {
    expect_error(
        "health_unknown_action",
        r#"partition["rtos"].health.forbidden"#,
        "unknown variant `reboot`, expected one of `ignore`",
    );
}

#[test]
fn watchdog_action_without_a_watchdog() {
    expect_error(
        "health_watchdog_without_period",
        r#"partition["rtos"].health.watchdog"#,
        "partition \"rtos\" sets a watchdog action but no watchdog period",
    );
}

#[test]
fn inject_for_an_event_that_is_not_a_fault() {
    expect_error(
        "health_inject_not_a_fault",
        r#"partition["rtos"].health.reported"#,
        "partition \"rtos\": reported cannot be \"inject\": only stage2-fault and forbidden have an exception",
    );
}

#[test]
fn watchdog_period_out_of_range() {
    expect_error(
        "health_watchdog_out_of_range",
        r#"partition["rtos"].watchdog"#,
        "partition \"rtos\": the watchdog period of 500 us is out of range 1000..=60000000 us",
    );
}

#[test]
fn health_log_out_of_range() {
    expect_error(
        "hm_log_out_of_range",
        "hypervisor.hm_log_entries",
        "8 health-monitor log entries is out of range 16..=4096",
    );
}

// --- The fabric and virtual devices ----------------------------------------

/// Ker-ONE's Table 4, as a board's measured costs.
fn costed_profile() -> PlatformProfile {
    PlatformProfile { accel: Some(KER_ONE_TABLE_4), ..profile() }
}

fn accel_example() -> Config {
    load_beside_stand_in_guest("accel", include_str!("../../../configs/accel.toml"))
}

/// The same system on the ZynqMP: its devices' interface pages move to the
/// PL's AXI window and their signals to the PL-to-PS interrupts, where a
/// real fabric would put them.
#[test]
fn on_zcu102_virtual_devices_sit_in_the_pl_window() {
    let config =
        load_beside_stand_in_guest("accel-zcu102", &on_board(include_str!("../../../configs/accel.toml"), "zcu102"));
    let devices: Vec<(u64, [u32; 3])> =
        config.system.partitions[0].accelerators.iter().map(|d| (d.ipa, d.signals)).collect();
    assert_eq!(devices, [(0xa000_0000, [121, 122, 123]), (0xa000_3000, [124, 125, 126])]);
}

#[test]
fn an_empty_fabric_table_is_ker_one_s_experiment() {
    let config = accel_example();
    let fabric = config.system.fabric.as_ref().expect("[fabric] gives a fabric");
    assert_eq!((fabric.bandwidth, fabric.hold_us, fabric.turn_us), (128_000_000, 1_000, 50));
    let accelerators: Vec<(&str, Function, u64, u64)> =
        fabric.accelerators.iter().map(|a| (a.name.as_str(), a.function, a.frame_ns, a.preempt_ns)).collect();
    assert_eq!(
        accelerators,
        [
            ("qam16", Function::Qam16, 47_000, 47_000),
            ("qam64", Function::Qam64, 31_000, 31_000),
            ("fft512", Function::Fft512, 71_100, 24_100),
            ("fft1024", Function::Fft1024, 90_600, 33_600),
        ]
    );
    let prrs: Vec<(&str, u32, u64, &[usize])> =
        fabric.prrs.iter().map(|p| (p.name.as_str(), p.size, p.bitstream, p.hosts.as_slice())).collect();
    assert_eq!(
        prrs,
        [("prr1", 2, 29_568, &[0, 1][..]), ("prr2", 8, 103_680, &[0, 1, 2]), ("prr3", 13, 154_368, &[2, 3])]
    );
    // After Partita's 32 MiB and the two 16 MiB regions; four devices of
    // a page and a 1 KiB context each take 20 KiB.
    assert_eq!(fabric.memory, Range::new(0x4400_0000, 0x5000));
    let [rtos, gpos] = &config.system.partitions[..] else { panic!("two partitions expected") };
    assert_eq!(
        rtos.accelerators,
        [
            VirtualDevice { accelerator: 0, ipa: 0x0b00_0000, signals: [80, 81, 82], deadline_us: Some(5_500) },
            VirtualDevice { accelerator: 3, ipa: 0x0b00_3000, signals: [83, 84, 85], deadline_us: Some(6_000) },
        ]
    );
    assert_eq!(
        gpos.accelerators,
        [
            VirtualDevice { accelerator: 1, ipa: 0x0b00_1000, signals: [80, 81, 82], deadline_us: None },
            VirtualDevice { accelerator: 2, ipa: 0x0b00_2000, signals: [83, 84, 85], deadline_us: None },
        ]
    );
}

/// The reference page writes out the default fabric: the same as `[fabric]`
/// alone.
#[test]
fn documented_default_fabric_is_the_default() {
    let page = include_str!("../../../docs/configuration.md");
    let block = |from: usize| {
        let start = from + page[from..].find("```toml\n").expect("a toml example") + "```toml\n".len();
        &page[start..start + page[start..].find("```").unwrap()]
    };
    let example = block(0);
    let written_out = block(page.find("## `[fabric]`").expect("a fabric section"));
    let empty = "[fabric]                                     # optional: Ker-ONE's fabric\n";
    assert!(example.contains(empty), "the full example has an empty [fabric]");
    let default = load_beside_stand_in_guest("documented_example_fabric", example);
    let explicit = load_beside_stand_in_guest("documented_fabric", &example.replace(empty, written_out));
    assert_eq!(default.system.fabric, explicit.system.fabric);
    assert_eq!(default.system.partitions[0].accelerators.len(), 1, "the example's rtos uses FFT-1024");
}

#[test]
fn every_field_of_the_fabric_resolves() {
    let config = load_good("good_fabric");
    let fabric = config.system.fabric.as_ref().unwrap();
    assert_eq!((fabric.bandwidth, fabric.hold_us, fabric.turn_us), (64 << 20, 500, 200));
    assert_eq!(fabric.memory, Range::new(0x7f00_0000, 0x4000), "its base given, its size for three devices");
    let accelerators: Vec<(&str, Function, u64, u64)> =
        fabric.accelerators.iter().map(|a| (a.name.as_str(), a.function, a.frame_ns, a.preempt_ns)).collect();
    assert_eq!(accelerators, [("fft", Function::Fft1024, 90_600, 33_600), ("qam", Function::Qam64, 31_000, 31_000)]);
    let prrs: Vec<(&str, u32, u64, &[usize])> =
        fabric.prrs.iter().map(|p| (p.name.as_str(), p.size, p.bitstream, p.hosts.as_slice())).collect();
    assert_eq!(prrs, [("big", 13, 150 << 10, &[0, 1][..]), ("small", 2, 29_568, &[1])]);
    let [rtos, gpos] = &config.system.partitions[..] else { panic!("two partitions expected") };
    // rtos has the doorbell 80, its GPIO's 81 and 100 to 102 of its own.
    assert_eq!(
        rtos.accelerators,
        [
            VirtualDevice { accelerator: 1, ipa: 0x0b00_1000, signals: [82, 83, 84], deadline_us: Some(6_000) },
            VirtualDevice { accelerator: 0, ipa: 0x0c10_0000, signals: [100, 101, 102], deadline_us: None },
        ]
    );
    assert_eq!(
        gpos.accelerators,
        [VirtualDevice { accelerator: 1, ipa: 0x0b00_1000, signals: [81, 82, 83], deadline_us: None }]
    );
    // With the costs, 6 ms holds: 9.96 + 31 + 2,288.819 us, a download of
    // 150 KiB at 64 MiB/s rounded up to the nanosecond, then the PCAP's
    // queue: that download and the other PRR's, 0.81 us each to start, and
    // 0.64 + 0.5 us to hand the last PRR over and search again; then the
    // rtos's own FFT may be stopping the gpos's QAM (31 us) in `big`, taken
    // 0.81 us late, handled in 0.28 us, handed over in 1.13 us, 0.5 us to
    // search again.
    let (path, _) = fixture("good_fabric");
    let mut out = Vec::new();
    partita::check::check_to(&path, Some(&costed_profile()), &mut out, &mut Vec::new()).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("2288.819 us  2732.177 us  33.72 us  5095.676 us  6000 us"), "{out}");
}

#[test]
fn prr_hosting_an_unknown_accelerator() {
    expect_error(
        "fabric_unknown_host",
        r#"fabric.prr["prr1"].hosts"#,
        "PRR \"prr1\": no accelerator is named \"qam61\"; did you mean \"qam16\"?",
    );
}

#[test]
fn partition_naming_an_unknown_accelerator() {
    expect_error(
        "fabric_unknown_accelerator",
        r#"partition["rtos"].accelerators["fft2048"].name"#,
        "partition \"rtos\": the fabric has no accelerator named \"fft2048\"",
    );
}

#[test]
fn device_of_a_misspelt_accelerator() {
    expect_error(
        "fabric_misspelt_accelerator",
        r#"partition["rtos"].accelerators["fft1042"].name"#,
        "no accelerator named \"fft1042\"; did you mean \"fft1024\"?",
    );
}

#[test]
fn own_accelerators_with_the_default_prrs() {
    expect_error(
        "fabric_default_prrs",
        "fabric.accelerator",
        "the default PRRs host accelerators the fabric does not declare (\"qam64\", \"fft512\", \"fft1024\")",
    );
}

#[test]
fn two_signals_instead_of_three() {
    expect_error(
        "fabric_signal_count",
        r#"partition["rtos"].accelerators["qam16"].signals"#,
        "partition \"rtos\" accelerator \"qam16\": 2 signal(s) given; a virtual device has three, for IPC_WAIT",
    );
}

#[test]
fn virtual_devices_without_a_fabric() {
    expect_error(
        "fabric_missing",
        r#"partition["rtos"].accelerators"#,
        "partition \"rtos\" has virtual devices, but the configuration has no [fabric]",
    );
}

#[test]
fn duplicate_accelerator_names() {
    expect_error(
        "fabric_duplicate_accelerator",
        r#"fabric.accelerator["qam16"].name"#,
        "duplicate accelerator name \"qam16\" (also accelerator[0])",
    );
}

#[test]
fn duplicate_prr_names() {
    expect_error("fabric_duplicate_prr", r#"fabric.prr["prr1"].name"#, "duplicate PRR name \"prr1\" (also prr[0])");
}

#[test]
fn zero_bandwidth() {
    expect_error(
        "fabric_zero_bandwidth",
        "fabric.bandwidth",
        "the reconfiguration bandwidth must be more than 0 bytes per second",
    );
}

#[test]
fn hold_and_turn_out_of_range() {
    expect_error("fabric_hold_out_of_range", "fabric.hold", "hold time 2000000 us is out of range 10..=1000000 us");
    expect_error("fabric_turn_out_of_range", "fabric.turn", "turn 20000 us is out of range 10..=10000 us");
}

#[test]
fn fabric_memory_over_partitas() {
    expect_error(
        "fabric_memory_overlap",
        "fabric.memory.base",
        "fabric memory 0x41000000..0x41010000 overlaps hypervisor memory (0x40000000..0x42000000)",
    );
}

#[test]
fn fabric_memory_too_small() {
    expect_error(
        "fabric_memory_too_small",
        "fabric.memory.size",
        "fabric memory of 0x2000 bytes is too small for 2 virtual device(s), which need 0x3000",
    );
}

#[test]
fn accelerator_frame_out_of_range() {
    expect_error(
        "fabric_zero_frame",
        r#"fabric.accelerator["qam16"].frame"#,
        "accelerator \"qam16\": a frame of 0 ns is out of range 1..=1000000000 ns",
    );
}

#[test]
fn preemption_longer_than_a_frame() {
    expect_error(
        "fabric_preempt_over_frame",
        r#"fabric.accelerator["qam16"].preempt"#,
        "accelerator \"qam16\": preempt (47.5 us) is longer than a frame (47 us)",
    );
}

#[test]
fn accelerator_hosted_by_no_prr() {
    expect_error(
        "fabric_unhosted",
        r#"fabric.accelerator["fft1024"].name"#,
        "accelerator \"fft1024\" is hosted by no PRR",
    );
}

#[test]
fn prr_hosting_nothing() {
    expect_error("fabric_prr_no_hosts", r#"fabric.prr["prr4"].hosts"#, "PRR \"prr4\" hosts no accelerator");
}

#[test]
fn prr_of_no_size() {
    expect_error("fabric_prr_zero_size", r#"fabric.prr["prr2"].size"#, "PRR \"prr2\": the size must be more than 0");
}

#[test]
fn prr_with_an_empty_bitstream() {
    expect_error(
        "fabric_prr_zero_bitstream",
        r#"fabric.prr["prr3"].bitstream"#,
        "PRR \"prr3\": the bitstream must be more than 0 bytes",
    );
}

#[test]
fn prr_hosting_an_accelerator_twice() {
    expect_error("fabric_host_twice", r#"fabric.prr["prr3"].hosts"#, "PRR \"prr3\" lists accelerator \"fft512\" twice");
}

#[test]
fn partition_using_an_accelerator_twice() {
    expect_error(
        "fabric_device_twice",
        r#"partition["rtos"].accelerators["qam16"].name"#,
        "partition \"rtos\" accelerator \"qam16\" is listed twice (also accelerators[0])",
    );
}

#[test]
fn interface_page_over_the_partitions_memory() {
    expect_error(
        "fabric_page_over_memory",
        r#"partition["rtos"].accelerators["qam16"].ipa"#,
        "the interface page 0x40800000..0x40801000 overlaps memory[0] (0x40000000..0x41000000) in guest-physical space",
    );
}

#[test]
fn interface_page_unaligned() {
    expect_error(
        "fabric_page_unaligned",
        r#"partition["rtos"].accelerators["qam16"].ipa"#,
        "0xb000800 is not 4 KiB aligned",
    );
}

#[test]
fn signal_outside_the_spis() {
    expect_error(
        "fabric_signal_not_spi",
        r#"partition["rtos"].accelerators["qam16"].signals"#,
        "signal INTID 27 is out of range 32..=1019 (an SPI)",
    );
}

#[test]
fn signal_on_a_passthrough_interrupt() {
    expect_error(
        "fabric_signal_device_interrupt",
        r#"partition["rtos"].accelerators["qam16"].signals"#,
        "signal INTID 39 is already device \"gpio\"'s interrupt",
    );
}

#[test]
fn signal_on_a_doorbell() {
    expect_error(
        "fabric_signal_doorbell",
        r#"partition["rtos"].accelerators["qam16"].signals"#,
        "signal INTID 48 is already channel \"frames\"'s doorbell",
    );
}

#[test]
fn signal_of_two_devices() {
    expect_error(
        "fabric_signal_shared",
        r#"partition["rtos"].accelerators["fft1024"].signals"#,
        "partition \"rtos\" accelerator \"fft1024\": signal INTID 92 is already accelerators[0]'s",
    );
}

#[test]
fn deadline_without_a_bound() {
    expect_error(
        "fabric_deadline_unbounded",
        r#"partition["rtos"].accelerators["qam16"].deadline"#,
        "partition \"rtos\" accelerator \"qam16\": no bound on its allocation latency, so no deadline can hold: \
         virtual devices of equal or higher priority may hold every PRR that can host it at once (prr1 by partition \
         \"gpos\" accelerator \"qam64\", prr2 by partition \"gpos\" accelerator \"fft512\")",
    );
}

#[test]
fn deadline_of_no_time() {
    expect_error(
        "fabric_deadline_zero",
        r#"partition["rtos"].accelerators["qam16"].deadline"#,
        "partition \"rtos\" accelerator \"qam16\": the deadline must be longer than 0 us",
    );
}

/// Only the board's atomic costs make this an error: without them the
/// file is valid, with them `check` names the device and the bound.
#[test]
fn deadline_shorter_than_the_bound() {
    let (path, text) = fixture("fabric_deadline_missed");
    let config = config::load(&path).expect("valid without the costs");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    partita::check::check_to(&path, Some(&profile()), &mut out, &mut err).expect("no costs, no comparison");
    assert!(String::from_utf8(out).unwrap().contains("n/a"));
    let error = partita::check::check_to(&path, Some(&costed_profile()), &mut Vec::new(), &mut err).unwrap_err();
    assert_eq!(error.to_string(), format!("1 error(s) in {}", path.display()));
    let err = String::from_utf8(err).unwrap();
    let line = marked_line(&text);
    assert_eq!(
        err,
        format!(
            "{}:{line}:35: error: partition[\"rtos\"].accelerators[\"qam16\"].deadline: partition \"rtos\" accelerator \"qam16\": \
             the deadline of 800 us is shorter than its worst-case allocation latency, 1894.72 us\n",
            path.display()
        )
    );
    assert_eq!(config.system.partitions[0].accelerators[0].deadline_us, Some(800));
}

#[test]
fn too_many_virtual_devices() {
    expect_error(
        "fabric_too_many_devices",
        r#"partition["rtos"].accelerators"#,
        "9 virtual devices; at most 8 are allowed",
    );
}

#[test]
fn too_many_prrs() {
    let prr = "[[fabric.prr]]\nname = \"p{i}\"\nsize = 1\nbitstream = 1\nhosts = [\"qam16\"]\n";
    let prrs: String = (0..33).map(|i| prr.replace("{i}", &i.to_string())).collect();
    let text = format!("{}\n[fabric]\n{prrs}", include_str!("configs/good.toml"));
    let root = scratch_dir("fabric_too_many_prrs");
    let path = root.join("fabric_too_many_prrs.toml");
    std::fs::write(&path, text).unwrap();
    let diagnostics = config::load(&path).expect_err("33 PRRs");
    assert_eq!(diagnostics.len(), 1, "{}", listing(&diagnostics));
    assert_eq!(diagnostics[0].field, "fabric.prr");
    assert!(diagnostics[0].message.contains("33 PRRs; at most 32 are allowed"), "{}", diagnostics[0]);
}

#[test]
fn frame_time_finer_than_a_nanosecond() {
    expect_error("fabric_bad_time", r#"fabric.accelerator["qam16"].frame"#, "invalid time \"47.0005us\"");
}

#[test]
fn unknown_accelerator_function() {
    expect_error(
        "fabric_unknown_function",
        r#"fabric.accelerator["fir"].function"#,
        "unknown variant `fir64`, expected one of `qam16`, `qam64`, `fft512`, `fft1024`",
    );
}

#[test]
fn accel_configuration_checks_clean() {
    let config = accel_example();
    let names: Vec<&str> = config.system.partitions.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["rtos", "gpos"]);
    let summary = partita::check::summary(&config, &profile());
    for line in [
        "  PRR   SIZE  BITSTREAM  T_RCFG   qam16  qam64  fft512  fft1024\n",
        "  prr1  2     29568 B    231 us   x      x      -       -\n",
        "  prr2  8     103680 B   810 us   x      x      x       -\n",
        "  prr3  13    154368 B   1206 us  -      -      x       x\n",
        "  fft512       fft512    71.1 us  24.1 us\n",
        "allocation latency (Ker-ONE eq. 5-8): the atomic costs are not measured yet",
        "  rtos       192       qam16    0x0b000000  80,81,82  31 us      810 us   2247 us  -         n/a          5500 us\n",
        "  rtos       192       fft1024  0x0b003000  83,84,85  24.1 us    1206 us  2247 us  -         n/a          6000 us\n",
        "  gpos       64        qam64    0x0b001000  80,81,82  -          -        -        -         not bounded  -\n",
        "  gpos/fft512: not bounded: virtual devices of equal or higher priority may hold every PRR that can host it \
         at once (prr2 by partition \"rtos\" accelerator \"qam16\", prr3 by partition \"rtos\" accelerator \"fft1024\")\n",
    ] {
        assert!(summary.contains(line), "no {line:?} in:\n{summary}");
    }
}

/// With Ker-ONE's own atomic costs, the bounds of the default fabric are
/// Ker-ONE's: eq. 6 plus T_preempt and T_RCFG.
#[test]
fn accel_configuration_bounds_with_measured_costs() {
    let summary = partita::check::summary(&accel_example(), &costed_profile());
    assert!(summary.contains("atomic costs from the board's profile (fixed for the tests):"), "{summary}");
    for line in [
        // 9.96 + 31 + 810 us, then 3 downloads of 231, 810 and 1,206 us
        // with 0.81 us each to start, 0.64 us to hand the last PRR over
        // and 0.5 us to search again, within 5.5 ms. The GPOS's devices
        // share one priority: none is stopped for another (no T_SWITCH).
        "  rtos       192       qam16    0x0b000000  80,81,82  31 us      810 us   2250.57 us  -         3101.53 us   5500 us\n",
        // 9.96 + 24.1 + 1,206 us and the same downloads, within 6 ms.
        "  rtos       192       fft1024  0x0b003000  83,84,85  24.1 us    1206 us  2250.57 us  -         3490.63 us   6000 us\n",
    ] {
        assert!(summary.contains(line), "no {line:?} in:\n{summary}");
    }
}

// --- Timed I/O -------------------------------------------------------------

#[test]
fn good_timed_io_resolves_pins_defaults_and_views() {
    let config = load_good("good_timed_io");
    let timed_io = config.system.timed_io.as_ref().expect("a [timed_io] section");
    assert_eq!((timed_io.device, timed_io.horizon_us, timed_io.lead_us), (0x0903_0000, 500_000, 20));
    let grants: Vec<(usize, u8, u32, Option<u64>)> =
        timed_io.grants.iter().map(|g| (g.partition, g.pins, g.depth, g.view)).collect();
    assert_eq!(grants, [(0, 0b11, 8, Some(0x0903_0000)), (1, 0b1_0000, 16, None)]);
    assert_eq!(load_good("good").system.timed_io, None, "no [timed_io], no timed outputs");
}

#[test]
fn timed_io_controller_given_to_a_partition() {
    expect_error("timed_io_device_owned", "timed_io.device", "partition \"io\" has the timed-I/O controller");
}

#[test]
fn timed_io_pin_granted_twice() {
    expect_error("timed_io_pin_shared", "timed_io.grant[1].pins", "pin 1 is granted to partition \"rt\" already");
}

#[test]
fn timed_io_pin_the_controller_lacks() {
    expect_error("timed_io_pin_out_of_range", "timed_io.grant[0].pins", "pin 8 does not exist");
}

#[test]
fn timed_io_grant_of_an_unknown_partition() {
    expect_error("timed_io_unknown_partition", "timed_io.grant[0].partition", "no partition is named \"ctrl\"");
}

#[test]
fn timed_io_grant_of_a_misspelt_partition() {
    expect_error(
        "timed_io_misspelt_partition",
        "timed_io.grant[0].partition",
        "no partition is named \"ri\"; did you mean \"rt\"?",
    );
}

#[test]
fn timed_io_depth_out_of_range() {
    expect_error("timed_io_depth_out_of_range", "timed_io.grant[0].depth", "a depth of 0 operations is out of range");
}

#[test]
fn timed_io_lead_beyond_the_horizon() {
    expect_error("timed_io_lead_over_horizon", "timed_io.lead", "must be shorter than the horizon");
}

#[test]
fn timed_io_view_over_the_partitions_memory() {
    expect_error("timed_io_view_over_memory", "timed_io.grant[0].view", "overlaps its memory");
}
