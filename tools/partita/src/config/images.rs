//! Rules that need the image files: they exist, parse, and land inside the
//! partition's RAM without hitting each other or the device tree.

use super::{Image, ImageFormat};
use crate::devicetree::DTB_WINDOW;
use object::elf::{EM_AARCH64, PT_LOAD};
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use object::{Endianness, FileKind, Object};
use partita_core::config::limits::MAX_IMAGES;
use partita_core::config::model::{MemoryRegion, Partition, Range, System};
use partita_core::config::validate::{hex_range, Issue};

/// What an image puts into guest memory.
struct Placed {
    /// Guest-physical ranges it occupies (ELF: one per PT_LOAD segment).
    ranges: Vec<Range>,
    entry: u64,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Elf,
    Raw,
    Linux,
    Initrd,
}

impl Placed {
    fn describe(&self, segment: usize, range: &Range) -> String {
        match self.kind {
            Kind::Elf => format!("ELF segment {segment} ({})", hex_range(range)),
            Kind::Raw => format!("raw image ({})", hex_range(range)),
            Kind::Linux => format!("the kernel ({})", hex_range(range)),
            Kind::Initrd => format!("the initrd ({})", hex_range(range)),
        }
    }

    /// The field an out-of-place range is blamed on.
    fn field(&self) -> &'static str {
        match self.kind {
            Kind::Elf => "path",
            Kind::Raw => "load",
            Kind::Linux => "kernel",
            Kind::Initrd => "initrd",
        }
    }
}

/// Checks every partition's images and entry point.
pub fn check(system: &System, images: &[Vec<Option<Image>>], entries: &[Option<u64>]) -> Vec<Issue> {
    let mut issues = Vec::new();
    for (p, partition) in system.partitions.iter().enumerate() {
        let slots = images.get(p).map_or(&[][..], Vec::as_slice);
        let entry = entries.get(p).copied().flatten();
        PartitionCheck { p, partition, issues: &mut issues }.run(slots, entry);
    }
    issues
}

struct PartitionCheck<'a> {
    p: usize,
    partition: &'a Partition,
    issues: &'a mut Vec<Issue>,
}

impl PartitionCheck<'_> {
    fn push(&mut self, path: String, field: &'static str, message: String) {
        self.issues.push(Issue { path, field, message });
    }

    fn image_path(&self, i: usize) -> String {
        format!("partition[{}].image[{i}]", self.p)
    }

    /// Where a problem with slot `i` is reported: a `[[partition.image]]`
    /// entry, or the partition's `kernel` or `initrd` field.
    fn slot_path(&self, i: usize, image: &Image) -> (String, &'static str) {
        match image.format {
            ImageFormat::Linux => (format!("partition[{}]", self.p), "kernel"),
            ImageFormat::Initrd => (format!("partition[{}]", self.p), "initrd"),
            _ => (self.image_path(i), "path"),
        }
    }

    fn run(&mut self, slots: &[Option<Image>], explicit_entry: Option<u64>) {
        if slots.is_empty() || slots.len() > MAX_IMAGES {
            let message = format!("{} images; a partition needs 1 to {MAX_IMAGES}", slots.len());
            self.push(format!("partition[{}]", self.p), "image", message);
        }
        let dtb = self.dtb_window();
        let mut placed: Vec<(usize, String, Range)> = Vec::new();
        let mut default_entry = None;
        let first = self.partition.memory.first().map(MemoryRegion::guest);
        for (i, image) in slots.iter().enumerate() {
            let Some(image) = image else { continue };
            let (path, field) = self.slot_path(i, image);
            match load(image, first) {
                Ok(placed_image) => {
                    self.place(i, &placed_image, dtb, &mut placed);
                    // A kernel's entry comes first, whatever precedes it.
                    let kernel = image.format == ImageFormat::Linux;
                    if kernel || (image.format != ImageFormat::Initrd && default_entry.is_none()) {
                        default_entry = Some((path, field, placed_image.entry));
                    }
                }
                Err(message) => self.push(path, field, message),
            }
        }
        match (explicit_entry, default_entry) {
            (Some(entry), _) => self.entry(format!("partition[{}]", self.p), "entry", "entry point", entry),
            (None, Some((path, field, entry))) => self.entry(path, field, "the image's entry point", entry),
            (None, None) => {}
        }
    }

    /// The builder puts the device tree in the last 64 KiB of the first region.
    fn dtb_window(&mut self) -> Option<Range> {
        let first = self.partition.memory.first()?;
        if first.size < DTB_WINDOW {
            let message = format!(
                "the first memory region holds the device tree in its last {} KiB, so it must be at least that large",
                DTB_WINDOW / 1024
            );
            self.push(format!("partition[{}].memory[0]", self.p), "size", message);
            return None;
        }
        Some(Range::new(first.ipa.saturating_add(first.size - DTB_WINDOW), DTB_WINDOW))
    }

    fn place(&mut self, i: usize, image: &Placed, dtb: Option<Range>, placed: &mut Vec<(usize, String, Range)>) {
        let path = match image.kind {
            Kind::Linux | Kind::Initrd => format!("partition[{}]", self.p),
            Kind::Elf | Kind::Raw => self.image_path(i),
        };
        let field = image.field();
        for (s, range) in image.ranges.iter().enumerate() {
            let what = image.describe(s, range);
            // Whatever else a misplaced range hits follows from being misplaced.
            if let Some(problem) = self.fit(range) {
                self.push(path.clone(), field, format!("{what} {problem}"));
                continue;
            }
            if let Some(dtb) = dtb.filter(|dtb| dtb.overlaps(range)) {
                let message = format!(
                    "{what} overlaps the device-tree window ({}), the last {} KiB of memory[0]",
                    hex_range(&dtb),
                    DTB_WINDOW / 1024
                );
                self.push(path.clone(), field, message);
            }
            if let Some((_, other, other_range)) = placed.iter().find(|(other, _, r)| *other != i && r.overlaps(range))
            {
                let message = format!("{what} overlaps {other} ({})", hex_range(other_range));
                self.push(path.clone(), field, message);
            }
        }
        let name = match image.kind {
            Kind::Linux => "the kernel".to_string(),
            Kind::Initrd => "the initrd".to_string(),
            Kind::Elf | Kind::Raw => format!("image[{i}]"),
        };
        placed.extend(image.ranges.iter().map(|range| (i, name.clone(), *range)));
    }

    /// Why `range` is not inside one RAM region of the partition, if it is not.
    fn fit(&self, range: &Range) -> Option<String> {
        if range.base.checked_add(range.size).is_none() {
            return Some("runs past the end of the 64-bit address space".into());
        }
        let regions = &self.partition.memory;
        if regions.iter().any(|region| region.guest().covers(range)) {
            return None;
        }
        let Some((m, region)) = regions.iter().enumerate().find(|(_, region)| region.guest().contains(range.base))
        else {
            return Some(format!("is not inside any memory region of partition \"{}\"", self.partition.name));
        };
        Some(format!(
            "does not fit: it runs past the end of memory[{m}] ({}); the image is larger than its region",
            hex_range(&region.guest())
        ))
    }

    fn entry(&mut self, path: String, field: &'static str, what: &str, entry: u64) {
        let region = self.partition.memory.iter().enumerate().find(|(_, r)| r.guest().contains(entry));
        let message = match region {
            None => {
                format!("{what} {entry:#x} is not inside any memory region of partition \"{}\"", self.partition.name)
            }
            Some((m, MemoryRegion { perms, .. })) if !perms.exec => {
                format!("{what} {entry:#x} is in memory[{m}], which is not executable (perms lack \"x\")")
            }
            Some(_) => return,
        };
        self.push(path, field, message);
    }
}

/// What `image` puts where; `first` is memory[0], where a kernel and its
/// initrd go.
fn load(image: &Image, first: Option<Range>) -> Result<Placed, String> {
    let shown = image.path.display();
    let bytes = std::fs::read(&image.path).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => format!("image file not found: {shown}"),
        _ => format!("cannot read image {shown}: {error}"),
    })?;
    let first = || first.ok_or_else(|| "the partition has no memory region to load it into".to_string());
    match image.format {
        ImageFormat::Elf => elf(&bytes),
        ImageFormat::Raw { load } if bytes.is_empty() => Err(format!("raw image {shown} for {load:#x} is empty")),
        ImageFormat::Raw { load } => {
            Ok(Placed { ranges: vec![Range::new(load, bytes.len() as u64)], entry: load, kind: Kind::Raw })
        }
        ImageFormat::Linux => {
            let kernel = crate::linux::kernel_range(first()?, crate::linux::header(&bytes)?)?;
            Ok(Placed { ranges: vec![kernel], entry: kernel.base, kind: Kind::Linux })
        }
        ImageFormat::Initrd => {
            let initrd = crate::linux::initrd_range(first()?, bytes.len() as u64)?;
            Ok(Placed { ranges: vec![initrd], entry: initrd.base, kind: Kind::Initrd })
        }
    }
}

fn elf(bytes: &[u8]) -> Result<Placed, String> {
    match FileKind::parse(bytes) {
        Ok(FileKind::Elf64) => {}
        Ok(FileKind::Elf32) => return Err("the image is a 32-bit ELF; Partita loads 64-bit AArch64 ELF images".into()),
        _ => {
            return Err("the image is not an ELF file, but its format is \"elf\" \
                        (for a flat binary use format = \"raw\" with a load address)"
                .into())
        }
    }
    let file =
        ElfFile64::<Endianness>::parse(bytes).map_err(|error| format!("the image is not a valid ELF file: {error}"))?;
    let endian = file.endian();
    let machine = file.elf_header().e_machine(endian);
    if machine != EM_AARCH64 {
        return Err(format!("the image is an ELF for machine {machine}, not AArch64 ({EM_AARCH64})"));
    }
    let mut ranges = Vec::new();
    for header in file.elf_program_headers().iter().filter(|h| h.p_type(endian) == PT_LOAD && h.p_memsz(endian) > 0) {
        if header.data(endian, bytes).is_err() || header.p_filesz(endian) > header.p_memsz(endian) {
            return Err(format!(
                "ELF segment {} is malformed (its file bytes lie outside the file or exceed its size)",
                ranges.len()
            ));
        }
        ranges.push(Range::new(header.p_paddr(endian), header.p_memsz(endian)));
    }
    if ranges.is_empty() {
        return Err("the ELF image has no loadable (PT_LOAD) segment".into());
    }
    Ok(Placed { ranges, entry: file.entry(), kind: Kind::Elf })
}
