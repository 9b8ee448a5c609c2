//! Image assembly: a hand-made hypervisor ELF and guest images go in, and
//! the bootable file must have exactly the layout QEMU and the hypervisor
//! expect.

mod host_fixtures;

use host_fixtures::*;
use partita::build::{assemble, bootable_image, qemu_load_address, section_sizes, BuildOutput, Sizes};
use partita::config::{Config, Image, ImageFormat};
use partita_core::config::image::decode;
use std::path::{Path, PathBuf};

const HV_BASE: u64 = RAM_BASE + 0x20_0000;
const PAYLOAD_AT: u64 = 0x4000;
const GUEST_ELF_BASE: u64 = 0x4800_0000;
const RAW_BASE: u64 = 0x4900_0000;

fn hypervisor_elf() -> Vec<u8> {
    let mut text = image_header(0);
    text.extend_from_slice(b"HVTEXT");
    elf(
        HV_BASE,
        &[Segment::identity(HV_BASE, &text, text.len() as u64), Segment::identity(HV_BASE + 0x1000, b"HVDATA", 0x2000)],
        &[
            Section { name: ".text", addr: HV_BASE, size: 0x100, kind: Kind::Text },
            Section { name: ".rodata", addr: HV_BASE + 0x100, size: 0x20, kind: Kind::ReadOnly },
            Section { name: ".data", addr: HV_BASE + 0x1000, size: 6, kind: Kind::Data },
            Section { name: ".bss", addr: HV_BASE + 0x1006, size: 0x1ffa, kind: Kind::Bss },
        ],
        &[("__payload_start", HV_BASE + PAYLOAD_AT), ("_start", HV_BASE)],
    )
}

/// A guest linked at a high virtual address: loads must follow p_paddr.
fn guest_elf() -> Vec<u8> {
    elf(
        GUEST_ELF_BASE + 0x40,
        &[
            Segment { paddr: GUEST_ELF_BASE, vaddr: 0xffff_0000_0000_0000, data: b"GUEST CODE".to_vec(), memsz: 10 },
            Segment { paddr: GUEST_ELF_BASE + 0x1000, vaddr: 0xffff_0000_0000_1000, data: vec![], memsz: 0x100 },
        ],
        &[],
        &[],
    )
}

struct Fixture {
    dir: PathBuf,
    config: Config,
    hypervisor: PathBuf,
}

fn fixture(name: &str) -> Fixture {
    let dir = scratch(name);
    let hypervisor = dir.join("partita-hv");
    std::fs::write(&hypervisor, hypervisor_elf()).unwrap();
    let guest = dir.join("guest.elf");
    std::fs::write(&guest, guest_elf()).unwrap();
    let raw = dir.join("raw.bin");
    std::fs::write(&raw, b"RAWBYTES").unwrap();
    let system = system(
        name,
        vec![
            partition("alpha", vec![0], vec![region(GUEST_ELF_BASE, 0x10_0000)]),
            partition("beta", vec![1, 2], vec![region(RAW_BASE, 0x10_0000), region(0x4a00_0000, 0x1000)]),
        ],
    );
    let config = Config {
        path: dir.join(format!("{name}.toml")),
        system,
        images: vec![
            vec![Image { path: guest, format: ImageFormat::Elf }],
            vec![Image { path: raw, format: ImageFormat::Raw { load: RAW_BASE } }],
        ],
        entries: vec![None, Some(RAW_BASE + 4)],
        virtio: vec![],
        unbuilt: vec![],
    };
    Fixture { dir, config, hypervisor }
}

fn build(fixture: &Fixture) -> anyhow::Result<BuildOutput> {
    assemble(&fixture.config, &fixture.hypervisor, &fixture.dir.join("out"))
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn flat_binary_pads_to_payload_start_and_patches_image_size() {
    let image = bootable_image(&hypervisor_elf(), b"PAYLOAD").unwrap();
    assert_eq!(&image[0x38..0x3c], b"ARM\x64");
    assert_eq!(&image[64..70], b"HVTEXT");
    assert_eq!(&image[0x1000..0x1006], b"HVDATA");
    assert!(image[0x1006..PAYLOAD_AT as usize].iter().all(|&b| b == 0), "bss and padding are zero");
    assert_eq!(&image[PAYLOAD_AT as usize..], b"PAYLOAD");
    let image_size = u64::from_le_bytes(image[16..24].try_into().unwrap());
    assert_eq!(image_size, 0x5000 + 0x10_0000, "length rounded to 4 KiB plus 1 MiB");
    assert_eq!(qemu_load_address(RAM_BASE, &image), HV_BASE);
}

#[test]
fn sizes_follow_section_flags() {
    let sizes = section_sizes(&hypervisor_elf()).unwrap();
    assert_eq!(sizes, Sizes { text: 0x120, data: 6, bss: 0x1ffa, payload: 0, image: 0, images: 0 });
}

#[test]
fn payload_carries_model_loads_entries_and_device_trees() {
    let fixture = fixture("image-layout");
    let output = build(&fixture).unwrap();
    let image = read(&output.image);
    assert_eq!(output.sizes.image, image.len() as u64);
    assert_eq!(output.sizes.text, 0x120);
    let store = read(&output.images);
    let (table, data) = decode(&image[PAYLOAD_AT as usize..], &store).unwrap();
    assert_eq!(output.sizes.payload, (image.len() as u64) - PAYLOAD_AT);
    assert_eq!(output.sizes.images, store.len() as u64);
    assert_eq!(output.images_at, fixture.config.system.hypervisor.images.base);
    assert_eq!(table.system, fixture.config.system);
    let bytes =
        |load: &partita_core::config::image::Load| &data[load.offset as usize..(load.offset + load.len) as usize];

    let alpha = &table.boot[0];
    assert_eq!(alpha.entry, GUEST_ELF_BASE + 0x40, "ELF entry by default");
    assert_eq!(alpha.loads.len(), 2, "one file-backed segment and the device tree; bss-only segments carry no bytes");
    assert_eq!(alpha.loads[0].ipa, GUEST_ELF_BASE);
    assert_eq!(bytes(&alpha.loads[0]), b"GUEST CODE");
    assert_eq!(alpha.dtb, GUEST_ELF_BASE + 0x10_0000 - 0x1_0000);
    assert_eq!(alpha.loads[1].ipa, alpha.dtb);
    assert_eq!(bytes(&alpha.loads[1]), read(&output.out_dir.join("alpha.dtb")).as_slice());

    let beta = &table.boot[1];
    assert_eq!(beta.entry, RAW_BASE + 4, "explicit entry wins");
    assert_eq!(beta.loads[0].ipa, RAW_BASE);
    assert_eq!(bytes(&beta.loads[0]), b"RAWBYTES");
    assert_eq!(beta.dtb, RAW_BASE + 0x10_0000 - 0x1_0000, "the tree sits in the first region");
    assert_eq!(bytes(&beta.loads[1]), read(&output.out_dir.join("beta.dtb")).as_slice());

    for boot in &table.boot {
        let tree = bytes(boot.loads.last().unwrap());
        let kaslr = boot.seeds.kaslr as usize;
        let rng = boot.seeds.rng as usize..(boot.seeds.rng + boot.seeds.rng_len) as usize;
        assert!(tree[kaslr..kaslr + 8].iter().chain(&tree[rng]).all(|&b| b == 0), "the seeds' placeholders");
    }
    assert_ne!(alpha.entropy, beta.entropy, "each partition has its own secret");
    assert_eq!(output.guest_elfs, vec![vec![fixture.config.images[0][0].path.clone()], vec![]]);
    assert_eq!(output.hypervisor_elf, fixture.hypervisor);
}

#[test]
fn every_build_draws_new_seed_secrets() {
    let fixture = fixture("seed-secrets");
    let secrets = || {
        let output = build(&fixture).unwrap();
        let (table, _) = decode(&read(&output.image)[PAYLOAD_AT as usize..], &read(&output.images)).unwrap();
        table.boot.iter().map(|boot| boot.entropy).collect::<Vec<_>>()
    };
    let first = secrets();
    assert_ne!(first, secrets());
    assert!(first.iter().all(|secret| secret.iter().any(|&word| word != 0)));
}

#[test]
fn raw_image_entry_defaults_to_its_load_address() {
    let mut fixture = fixture("raw-entry");
    fixture.config.entries[1] = None;
    let output = build(&fixture).unwrap();
    let (table, _) = decode(&read(&output.image)[PAYLOAD_AT as usize..], &read(&output.images)).unwrap();
    assert_eq!(table.boot[1].entry, RAW_BASE);
}

#[test]
fn image_larger_than_hypervisor_memory_is_refused() {
    let mut fixture = fixture("too-big");
    fixture.config.system.hypervisor.memory = partita_core::config::model::Range::new(RAM_BASE, 0x20_4000);
    let error = format!("{:#}", build(&fixture).unwrap_err());
    assert!(error.contains("does not fit in the hypervisor's memory"), "{error}");
}

#[test]
fn image_outside_partition_memory_is_refused() {
    let mut fixture = fixture("outside");
    fixture.config.images[1][0].format = ImageFormat::Raw { load: 0x4a00_0ffc };
    let error = format!("{:#}", build(&fixture).unwrap_err());
    assert!(error.contains("partition `beta`") && error.contains("do not fit"), "{error}");
}

#[test]
fn image_over_the_device_tree_is_refused() {
    let mut fixture = fixture("over-dtb");
    fixture.config.images[1][0].format = ImageFormat::Raw { load: RAW_BASE + 0x10_0000 - 0x1_0000 };
    let error = format!("{:#}", build(&fixture).unwrap_err());
    assert!(error.contains("overlaps the device tree"), "{error}");
}

#[test]
fn missing_image_names_the_file() {
    let mut fixture = fixture("missing");
    fixture.config.images[0][0].path = fixture.dir.join("nope.elf");
    let error = format!("{:#}", build(&fixture).unwrap_err());
    assert!(error.contains("nope.elf") && error.contains("alpha"), "{error}");
}

#[test]
fn hypervisor_without_payload_symbol_or_header_is_refused() {
    let text = image_header(0);
    let no_symbol = elf(HV_BASE, &[Segment::identity(HV_BASE, &text, 64)], &[], &[]);
    let error = format!("{:#}", bootable_image(&no_symbol, b"P").unwrap_err());
    assert!(error.contains("__payload_start"), "{error}");

    let headerless =
        elf(HV_BASE, &[Segment::identity(HV_BASE, &[0; 64], 64)], &[], &[("__payload_start", HV_BASE + 0x1000)]);
    let error = format!("{:#}", bootable_image(&headerless, b"P").unwrap_err());
    assert!(error.contains("Image header"), "{error}");
}

#[test]
fn payload_symbol_inside_the_code_is_refused() {
    let text = image_header(0);
    let bad = elf(HV_BASE, &[Segment::identity(HV_BASE, &text, 64)], &[], &[("__payload_start", HV_BASE + 8)]);
    assert!(bootable_image(&bad, b"P").is_err());
}

#[test]
fn text_offset_moves_the_load_address_like_qemu() {
    assert_eq!(qemu_load_address(RAM_BASE, &image_header(0)), RAM_BASE + 0x20_0000);
    assert_eq!(qemu_load_address(RAM_BASE, &image_header(0x8_0000)), RAM_BASE + 0x8_0000);
}

/// An arm64 Image of `len` bytes that asks for `image_size` once running.
fn linux_image(text_offset: u64, image_size: u64, len: usize) -> Vec<u8> {
    let mut image = image_header(text_offset);
    image[16..24].copy_from_slice(&image_size.to_le_bytes());
    image.resize(len, 0x5a);
    image
}

#[test]
fn a_linux_kernel_and_initrd_follow_the_boot_protocol() {
    let mut fixture = fixture("linux");
    let kernel = fixture.dir.join("Image");
    std::fs::write(&kernel, linux_image(0, 0x3_0000, 0x1_8000)).unwrap();
    let initrd = fixture.dir.join("initramfs.cpio");
    std::fs::write(&initrd, vec![0x07; 0x2345]).unwrap();
    // beta's first region starts 2 MiB aligned; the kernel goes there.
    fixture.config.images[1] =
        vec![Image { path: kernel, format: ImageFormat::Linux }, Image { path: initrd, format: ImageFormat::Initrd }];
    fixture.config.entries[1] = None;
    let output = build(&fixture).unwrap();
    let store = read(&output.images);
    let (table, data) = decode(&read(&output.image)[PAYLOAD_AT as usize..], &store).unwrap();
    let beta = &table.boot[1];
    assert_eq!(beta.entry, RAW_BASE, "the kernel's load address: the 2 MiB boundary plus text_offset 0");
    assert_eq!((beta.loads[0].ipa, beta.loads[0].len), (RAW_BASE, 0x1_8000));
    let dtb_at = RAW_BASE + 0x10_0000 - 0x1_0000;
    let initrd_at = (dtb_at - 0x2345) & !0xfff;
    assert_eq!((beta.loads[1].ipa, beta.loads[1].len), (initrd_at, 0x2345), "just below the device tree");
    let initrd_bytes = &data[beta.loads[1].offset as usize..][..0x2345];
    assert!(initrd_bytes.iter().all(|&b| b == 0x07));

    let dtb = read(&output.out_dir.join("beta.dtb"));
    let tree = fdt::Fdt::new(&dtb).unwrap();
    let chosen = tree.find_node("/chosen").unwrap();
    let cell = |name: &str| {
        let value = chosen.property(name).unwrap_or_else(|| panic!("/chosen has no {name}")).value;
        u64::from_be_bytes(value.try_into().expect("a 64-bit value"))
    };
    assert_eq!((cell("linux,initrd-start"), cell("linux,initrd-end")), (initrd_at, initrd_at + 0x2345));
}

#[test]
fn a_kernel_larger_than_its_region_is_refused_by_image_size_not_file_size() {
    let mut fixture = fixture("linux-big");
    let kernel = fixture.dir.join("Image");
    // 64 KiB of file, but 1 MiB once running: more than beta's region below its tree.
    std::fs::write(&kernel, linux_image(0, 0x10_0000, 0x1_0000)).unwrap();
    fixture.config.images[1] = vec![Image { path: kernel, format: ImageFormat::Linux }];
    fixture.config.entries[1] = None;
    let error = format!("{:#}", build(&fixture).unwrap_err());
    assert!(error.contains("the kernel needs 0x100000 bytes"), "{error}");
}

/// The hypervisor does not run the validator again at boot: no payload is
/// written for a system that fails it, however the model was made.
#[test]
fn an_invalid_system_gets_no_payload() {
    let mut fixture = fixture("invalid");
    // Beta's first RAM region moved over alpha's, host-physically.
    let beta = &mut fixture.config.system.partitions[1].memory[0];
    (beta.pa, beta.identity) = (GUEST_ELF_BASE, false);
    let error = format!("{:#}", build(&fixture).unwrap_err());
    assert!(error.contains("the system is invalid") && error.contains("overlaps"), "{error}");
    assert!(!fixture.dir.join("out").join("partita.img").exists(), "an image was written");
}
