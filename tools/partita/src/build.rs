//! `partita build`: turns a checked configuration into one bootable file.
//!
//! Two files: `partita.img`, the hypervisor as QEMU's `-kernel` loads an
//! arm64 Linux Image (flat, with the Image header the hypervisor's entry
//! code carries), followed at `__payload_start` by the head of the boot
//! payload, the validated model; and `images.bin`, every byte each
//! partition starts with, which the boot loader puts at the image store's
//! address (QEMU: `-device loader`). No firmware is needed.

use crate::config::{virtio, Config, ImageFormat};
use crate::devicetree;
use crate::guest_console::GuestConsole;
use crate::linux;
use crate::paths;
use anyhow::{bail, ensure, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use object::elf::{PT_LOAD, SHF_ALLOC, SHF_WRITE, SHT_NOBITS};
use object::read::elf::{ElfFile64, ProgramHeader, SectionHeader};
use object::{Endianness, Object, ObjectSymbol};
use partita_core::config::image::{self, BootTable, Load, PartitionBoot};
use partita_core::config::model::{self, Range, System};
use partita_core::config::validate::validate;
use partita_core::partition::seed::LANES;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
use linux::{
    HEADER_LEN as IMAGE_HEADER_LEN, IMAGE_SIZE as IMAGE_SIZE_FIELD, MAGIC as IMAGE_MAGIC,
    MAGIC_OFFSET as IMAGE_MAGIC_OFFSET, TEXT_OFFSET as IMAGE_TEXT_OFFSET,
};
/// QEMU keeps its own boot stub in the first page of RAM and moves an Image
/// that asks for a smaller offset up by 2 MiB.
const QEMU_STUB_SIZE: u64 = 4 * KIB;
const PAYLOAD_SYMBOL: &str = "__payload_start";
const HYPERVISOR_PACKAGE: &str = "partita-hv";
/// Soft-float: Partita never touches FP/SIMD registers, so a guest's are saved
/// only when its pCPU switches to another vCPU, not on every trap.
const HYPERVISOR_TARGET: &str = "aarch64-unknown-none-softfloat";

/// Everything `run` and the user need from a build.
#[derive(Clone, Debug)]
pub struct BuildOutput {
    /// `<out>/<config-name>/`.
    pub out_dir: PathBuf,
    /// The file QEMU boots.
    pub image: PathBuf,
    /// The partitions' images, for the boot loader to put at `images_at`.
    pub images: PathBuf,
    /// Host-physical address of the image store.
    pub images_at: u64,
    /// QEMU's arguments for the virtio devices passed through.
    pub qemu_devices: Vec<String>,
    /// The hypervisor with symbols, for gdb.
    pub hypervisor_elf: PathBuf,
    /// Per partition (configuration order): its ELF images, for gdb.
    pub guest_elfs: Vec<Vec<PathBuf>>,
    /// The partitions' virtio consoles, for `run` to connect to.
    pub guest_consoles: Vec<GuestConsole>,
    pub sizes: Sizes,
}

/// Byte counts, with text/data/bss counted the way binutils' `size` does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sizes {
    pub text: u64,
    pub data: u64,
    pub bss: u64,
    pub payload: u64,
    pub image: u64,
    /// The image store's bytes (`images.bin`).
    pub images: u64,
}

/// Builds the hypervisor, then assembles the image for `config` into
/// `<out>/<config-name>/`.
pub fn build(config: &Config) -> Result<BuildOutput> {
    let hypervisor = build_hypervisor_for(&paths::source(), &config.system.platform.board)?;
    let output = assemble(config, &hypervisor, &paths::config_out(&config.system.name))?;
    print_summary(&output);
    Ok(output)
}

/// Compiles the hypervisor for QEMU `virt` and returns its ELF.
pub fn build_hypervisor(root: &Path) -> Result<PathBuf> {
    build_hypervisor_for(root, model::QEMU_VIRT)
}

/// Compiles the hypervisor for `board` and returns its ELF. Another board
/// than `virt` builds with its feature into a target folder of its own,
/// so that the two builds never overwrite each other's binary.
pub fn build_hypervisor_for(root: &Path, board: &str) -> Result<PathBuf> {
    build_hypervisor_with(root, board, None)
}

/// The hypervisor with one of its measuring features (`residency`), which
/// `partita bench response` needs and the product leaves out; it too gets a
/// target folder of its own.
pub fn build_hypervisor_with(root: &Path, board: &str, feature: Option<&str>) -> Result<PathBuf> {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.current_dir(root).args(["build", "-p", HYPERVISOR_PACKAGE, "--release", "--target", HYPERVISOR_TARGET]);
    let mut target = cargo_target_dir(root);
    let mut features = Vec::new();
    if board != model::QEMU_VIRT {
        target = target.join(board);
        features.push(board);
    }
    if let Some(feature) = feature {
        target = target.join(feature);
        features.push(feature);
    }
    if !features.is_empty() {
        cargo.args(["--features", &features.join(",")]).arg("--target-dir").arg(&target);
    }
    let what = match feature {
        Some(feature) => format!("building the hypervisor for {board} with {feature}"),
        None => format!("building the hypervisor for {board}"),
    };
    run_step(&what, &mut cargo)?;
    Ok(target.join(HYPERVISOR_TARGET).join("release").join(HYPERVISOR_PACKAGE))
}

/// Cargo's output folder, which a developer may have moved with CARGO_TARGET_DIR.
fn cargo_target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// Runs a long command behind a spinner; its output is shown only if it fails,
/// because a successful build has nothing to say.
pub fn run_step(what: &str, command: &mut Command) -> Result<()> {
    let started = Instant::now();
    let spinner = spinner(what);
    let program = command.get_program().to_string_lossy().into_owned();
    let result = command.stdin(Stdio::null()).output();
    spinner.finish_and_clear();
    let output = result.with_context(|| format!("{what}: cannot start `{program}` (is it installed?)"))?;
    if !output.status.success() {
        eprint!("{}", String::from_utf8_lossy(&output.stdout));
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        bail!("{what} failed ({})", output.status);
    }
    eprintln!("{what}: done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

fn spinner(message: &str) -> ProgressBar {
    let spinner = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        spinner.set_style(style);
    }
    spinner.set_message(message.to_string());
    spinner.enable_steady_tick(Duration::from_millis(100));
    spinner
}

/// Produces `out_dir/partita.img` (and one `.dtb` per partition) from an
/// already built hypervisor ELF.
pub fn assemble(config: &Config, hypervisor_elf: &Path, out_dir: &Path) -> Result<BuildOutput> {
    let system = &config.system;
    ensure!(
        config.images.len() == system.partitions.len() && config.entries.len() == system.partitions.len(),
        "internal error: the configuration lists images or entries for a different number of partitions"
    );
    std::fs::create_dir_all(out_dir).with_context(|| format!("cannot create {}", out_dir.display()))?;
    let payload = payload(config)?;
    for (partition, dtb) in system.partitions.iter().zip(&payload.dtbs) {
        write(&out_dir.join(format!("{}.dtb", partition.name)), dtb)?;
    }
    let elf = std::fs::read(hypervisor_elf)
        .with_context(|| format!("cannot read the hypervisor ELF {}", hypervisor_elf.display()))?;
    let bootable = bootable_image(&elf, &payload.head)?;
    check_fits(system, &bootable)?;
    let image = out_dir.join("partita.img");
    write(&image, &bootable)?;
    let images = out_dir.join("images.bin");
    write(&images, &payload.data)?;
    let sections = section_sizes(&elf)?;
    let names: Vec<String> = system.partitions.iter().map(|p| p.name.clone()).collect();
    Ok(BuildOutput {
        out_dir: out_dir.to_path_buf(),
        image,
        images,
        images_at: system.hypervisor.images.base,
        qemu_devices: virtio::qemu_args(&config.virtio, &names, out_dir),
        hypervisor_elf: hypervisor_elf.to_path_buf(),
        guest_elfs: guest_elfs(config),
        guest_consoles: virtio::consoles(&config.virtio, &names, out_dir),
        sizes: Sizes {
            payload: payload.head.len() as u64,
            image: bootable.len() as u64,
            images: payload.data.len() as u64,
            ..sections
        },
    })
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

fn guest_elfs(config: &Config) -> Vec<Vec<PathBuf>> {
    config
        .images
        .iter()
        .map(|images| images.iter().filter(|i| i.format == ImageFormat::Elf).map(|i| i.path.clone()).collect())
        .collect()
}

/// A boot payload in its two parts, and each partition's device tree.
pub struct Payload {
    /// Header and table, behind the hypervisor.
    pub head: Vec<u8>,
    /// The data section, for the image store.
    pub data: Vec<u8>,
    pub dtbs: Vec<Vec<u8>>,
}

/// The encoded boot payload of `config`.
pub fn payload(config: &Config) -> Result<Payload> {
    // The hypervisor trusts the model it is given (docs/architecture.md):
    // this is where a system is held to the validator's rules, whoever
    // built the `Config`.
    let issues = validate(&config.system);
    if let Some(issue) = issues.first() {
        bail!(
            "the system is invalid ({} issue(s)); first: {}.{}: {}",
            issues.len(),
            issue.path,
            issue.field,
            issue.message
        );
    }
    let mut data = Vec::new();
    let mut boot = Vec::new();
    let mut dtbs = Vec::new();
    for index in 0..config.system.partitions.len() {
        let (partition_boot, dtb) = partition_boot(config, index, &mut data)?;
        boot.push(partition_boot);
        dtbs.push(dtb);
    }
    let store = config.system.hypervisor.images;
    ensure!(
        data.len() as u64 <= store.size,
        "the partitions' images and device trees take {:#x} bytes, more than the image store's {:#x} \
         (hypervisor.images); enlarge it or leave its size out",
        data.len(),
        store.size
    );
    let table = BootTable { system: config.system.clone(), boot };
    let head = image::encode(&table, &data);
    // The hypervisor refuses a payload that fails this; better to learn it here.
    image::decode(&head, &data)
        .map_err(|e| anyhow::anyhow!("internal error: the boot payload fails its own check: {e:?}"))?;
    Ok(Payload { head, data, dtbs })
}

/// One partition's loads (images, then its device tree) and entry point.
fn partition_boot(config: &Config, index: usize, data: &mut Vec<u8>) -> Result<(PartitionBoot, Vec<u8>)> {
    let partition = &config.system.partitions[index];
    let dtb_ipa = devicetree::dtb_address(partition)?;
    let first = partition.memory.first().map(|region| region.guest()).context("a partition without memory")?;
    let mut loads = Vec::new();
    let mut default_entry = None;
    let mut chosen = devicetree::Chosen::default();
    for image in &config.images[index] {
        let bytes = std::fs::read(&image.path)
            .with_context(|| format!("partition `{}`: cannot read image {}", partition.name, image.path.display()))?;
        let what = || format!("partition `{}`: image {}", partition.name, image.path.display());
        let (blobs, entry) = match image.format {
            ImageFormat::Elf => {
                let (blobs, entry) = elf_loads(&bytes).with_context(what)?;
                (blobs, Some(entry))
            }
            ImageFormat::Raw { load } => (vec![(load, bytes)], Some(load)),
            ImageFormat::Linux => {
                let at = linux::header(&bytes).and_then(|header| linux::kernel_range(first, header));
                let at = at.map_err(anyhow::Error::msg).with_context(what)?.base;
                (vec![(at, bytes)], Some(at))
            }
            ImageFormat::Initrd => {
                let at =
                    linux::initrd_range(first, bytes.len() as u64).map_err(anyhow::Error::msg).with_context(what)?;
                chosen.initrd = Some(at);
                (vec![(at.base, bytes)], None)
            }
        };
        match entry {
            // A kernel starts the partition, whatever images precede it.
            Some(entry) if image.format == ImageFormat::Linux => default_entry = Some(entry),
            Some(entry) => _ = default_entry.get_or_insert(entry),
            None => {}
        }
        for (ipa, blob) in blobs {
            check_load(partition, dtb_ipa, ipa, blob.len() as u64).with_context(what)?;
            loads.push(append(data, ipa, &blob));
        }
    }
    let tree = devicetree::generate_with(&config.system, partition, &chosen)?;
    loads.push(append(data, dtb_ipa, &tree.blob));
    let entry = config.entries[index]
        .or(default_entry)
        .with_context(|| format!("partition `{}` has no image and no entry point", partition.name))?;
    let boot = PartitionBoot { entry, dtb: dtb_ipa, loads, seeds: tree.seeds, entropy: host_entropy()? };
    Ok((boot, tree.blob))
}

/// A partition's secret for its device-tree seeds, new at every build, so
/// two builds of one configuration do not share it (the image is not
/// reproducible byte for byte for that reason).
fn host_entropy() -> Result<[u64; LANES]> {
    let mut bytes = [0u8; LANES * 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .context("cannot read /dev/urandom for the partitions' device-tree seeds")?;
    Ok(core::array::from_fn(|lane| u64::from_le_bytes(bytes[lane * 8..][..8].try_into().expect("8 bytes"))))
}

/// Aligned so the hypervisor can copy with wide accesses.
fn append(data: &mut Vec<u8>, ipa: u64, blob: &[u8]) -> Load {
    data.resize(data.len().next_multiple_of(16), 0);
    let offset = data.len() as u64;
    data.extend_from_slice(blob);
    Load { ipa, offset, len: blob.len() as u64 }
}

/// A load must land in one RAM region of its partition and stay clear of the
/// window the device tree occupies.
fn check_load(partition: &partita_core::config::model::Partition, dtb_ipa: u64, ipa: u64, len: u64) -> Result<()> {
    let target = Range::new(ipa, len);
    let end = ipa.checked_add(len).context("load address overflows")?;
    ensure!(
        partition.memory.iter().any(|r| r.guest().covers(&target)),
        "{len:#x} bytes at {ipa:#x}..{end:#x} do not fit in any memory region of the partition"
    );
    ensure!(
        !target.overlaps(&Range::new(dtb_ipa, devicetree::DTB_WINDOW)),
        "{ipa:#x}..{end:#x} overlaps the device tree at {dtb_ipa:#x}, the last {:#x} bytes of the first memory region",
        devicetree::DTB_WINDOW
    );
    Ok(())
}

/// Bytes to place at a guest-physical address.
pub type Blob = (u64, Vec<u8>);

/// The file bytes of every PT_LOAD segment at its physical address, and the
/// entry point. The hypervisor zeroes partition RAM, so bss needs no bytes.
pub fn elf_loads(bytes: &[u8]) -> Result<(Vec<Blob>, u64)> {
    let elf = parse_elf(bytes)?;
    let loads =
        segments(&elf)?.into_iter().filter(|s| !s.data.is_empty()).map(|s| (s.paddr, s.data.to_vec())).collect();
    Ok((loads, elf.entry()))
}

fn parse_elf(bytes: &[u8]) -> Result<ElfFile64<'_, Endianness>> {
    ElfFile64::parse(bytes).map_err(|e| anyhow::anyhow!("not a 64-bit ELF file: {e}"))
}

struct Segment<'d> {
    paddr: u64,
    vaddr: u64,
    memsz: u64,
    data: &'d [u8],
}

fn segments<'d>(elf: &ElfFile64<'d, Endianness>) -> Result<Vec<Segment<'d>>> {
    let endian = elf.endian();
    elf.elf_program_headers()
        .iter()
        .filter(|ph| ph.p_type(endian) == PT_LOAD && ph.p_memsz(endian) > 0)
        .map(|ph| {
            let data =
                ph.data(endian, elf.data()).map_err(|()| anyhow::anyhow!("a PT_LOAD segment lies outside the file"))?;
            Ok(Segment { paddr: ph.p_paddr(endian), vaddr: ph.p_vaddr(endian), memsz: ph.p_memsz(endian), data })
        })
        .collect()
}

/// The hypervisor as flat bytes from its lowest load address, padded to
/// `__payload_start`, then the payload, with the Image header's size patched.
pub fn bootable_image(hypervisor_elf: &[u8], payload: &[u8]) -> Result<Vec<u8>> {
    let elf = parse_elf(hypervisor_elf).context("the hypervisor ELF")?;
    let segments = segments(&elf)?;
    let base = segments.iter().map(|s| s.paddr).min().context("the hypervisor ELF has no loadable segment")?;
    let mut flat = Vec::new();
    for segment in &segments {
        let at = (segment.paddr - base) as usize;
        let end = at + segment.data.len();
        if flat.len() < end {
            flat.resize(end, 0);
        }
        flat[at..end].copy_from_slice(segment.data);
    }
    let payload_at = payload_offset(&elf, &segments, base)?;
    ensure!(
        payload_at >= flat.len() as u64,
        "`{PAYLOAD_SYMBOL}` ({payload_at:#x} bytes from the start) lies inside the hypervisor's loaded bytes ({:#x})",
        flat.len()
    );
    flat.resize(payload_at as usize, 0);
    flat.extend_from_slice(payload);
    patch_image_header(&mut flat)?;
    Ok(flat)
}

/// Offset of `__payload_start` from the image start. The symbol holds a
/// virtual address; the image is laid out by physical address.
fn payload_offset(elf: &ElfFile64<'_, Endianness>, segments: &[Segment<'_>], base: u64) -> Result<u64> {
    let symbol = elf.symbols().find(|s| s.name() == Ok(PAYLOAD_SYMBOL)).with_context(|| {
        format!("the hypervisor ELF has no `{PAYLOAD_SYMBOL}` symbol (its linker script defines it)")
    })?;
    let vaddr = symbol.address();
    let home = segments
        .iter()
        .find(|s| vaddr >= s.vaddr && vaddr <= s.vaddr + s.memsz)
        .or_else(|| segments.iter().min_by_key(|s| s.paddr))
        .context("the hypervisor ELF has no loadable segment")?;
    let paddr = vaddr.wrapping_sub(home.vaddr).wrapping_add(home.paddr);
    paddr.checked_sub(base).with_context(|| {
        format!("`{PAYLOAD_SYMBOL}` at {paddr:#x} lies below the hypervisor's first segment at {base:#x}")
    })
}

/// QEMU boots `-kernel` as a Linux Image only when `image_size` is set, and
/// reserves that much memory for it.
fn patch_image_header(image: &mut [u8]) -> Result<()> {
    ensure!(
        image.len() >= IMAGE_HEADER_LEN && &image[IMAGE_MAGIC_OFFSET..IMAGE_MAGIC_OFFSET + 4] == IMAGE_MAGIC,
        "the hypervisor does not start with an arm64 Image header (magic \"ARM\\x64\" at {IMAGE_MAGIC_OFFSET:#x})"
    );
    let size = (image.len() as u64).next_multiple_of(4 * KIB) + MIB;
    image[IMAGE_SIZE_FIELD..IMAGE_SIZE_FIELD + 8].copy_from_slice(&size.to_le_bytes());
    Ok(())
}

/// Where QEMU places an arm64 Image: RAM base plus its text_offset, moved
/// above QEMU's boot stub when the offset would collide with it.
pub fn qemu_load_address(ram_base: u64, image: &[u8]) -> u64 {
    let mut field = [0u8; 8];
    field.copy_from_slice(&image[IMAGE_TEXT_OFFSET..IMAGE_TEXT_OFFSET + 8]);
    let text_offset = u64::from_le_bytes(field);
    let offset = if text_offset < QEMU_STUB_SIZE { text_offset + 2 * MIB } else { text_offset };
    ram_base + offset
}

fn check_fits(system: &System, image: &[u8]) -> Result<()> {
    let load = qemu_load_address(system.platform.ram.base, image);
    let len = image.len() as u64;
    let memory = system.hypervisor.memory;
    ensure!(
        memory.covers(&Range::new(load, len)),
        "the image ({len:#x} bytes, loaded at {load:#x}) does not fit in the hypervisor's memory {:#x}..{:#x}; \
         enlarge `hypervisor.memory` or shrink the partition images",
        memory.base,
        memory.end()
    );
    Ok(())
}

/// text/data/bss of the hypervisor, counted over its allocated sections.
pub fn section_sizes(hypervisor_elf: &[u8]) -> Result<Sizes> {
    let elf = parse_elf(hypervisor_elf)?;
    let endian = elf.endian();
    let mut sizes = Sizes::default();
    for section in elf.elf_section_table().iter() {
        let flags = section.sh_flags(endian);
        if flags & u64::from(SHF_ALLOC) == 0 {
            continue;
        }
        let size = section.sh_size(endian);
        if section.sh_type(endian) == SHT_NOBITS {
            sizes.bss += size;
        } else if flags & u64::from(SHF_WRITE) != 0 {
            sizes.data += size;
        } else {
            sizes.text += size;
        }
    }
    Ok(sizes)
}

pub fn print_summary(output: &BuildOutput) {
    let s = output.sizes;
    println!("hypervisor: text {} B, data {} B, bss {} B; payload head {} B", s.text, s.data, s.bss, s.payload);
    println!("image: {} ({} B)", output.image.display(), s.image);
    println!("image store: {} ({} B at {:#x})", output.images.display(), s.images, output.images_at);
}
