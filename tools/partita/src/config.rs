//! Reading a TOML configuration into the validated model.
//!
//! The TOML layer knows where every field sits in the file, so every
//! diagnostic names the file, line and field. Validation rules that need no
//! file system live in `partita_core::config::validate`.

mod generate;
mod images;
pub mod raw;
mod resolve;
pub use resolve::{default_interface_page, DEFAULT_FABRIC_TURN_US, DEFAULT_GICD, ZCU102_GICD};
mod spans;
mod suggest;
pub mod virtio;

use partita_core::config::model::System;
use partita_core::config::validate::{allocation_deadlines, validate, Issue};
use spans::SpanIndex;
use std::path::{Path, PathBuf};

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
    /// QEMU's virtio devices, passed through to their partitions.
    pub virtio: Vec<virtio::VirtioDevice>,
    /// Images and disks a guest build makes that are not there yet; the
    /// rules that read an image's bytes skipped them.
    pub unbuilt: Vec<PathBuf>,
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
    /// An arm64 Linux `Image`, placed by its header ([`crate::linux`]); the
    /// default entry point.
    Linux,
    /// The initrd of a `Linux` image, at the top of memory[0], named in the
    /// device tree's `/chosen`.
    Initrd,
}

/// One problem found in a configuration file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// 1-based; 0 when the problem has no single place (e.g. a missing section).
    pub line: usize,
    pub column: usize,
    /// Dotted path of the field in TOML spelling, e.g. `partition[1].memory[0].size`.
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}: error: ", self.file.display(), self.line, self.column)?;
        // A syntax error has no field to name.
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

impl Diagnostic {
    /// A problem with the file as a whole (unreadable, not text).
    fn whole_file(file: &Path, message: String) -> Self {
        Self { file: file.into(), line: 0, column: 0, field: String::new(), message }
    }
}

/// Rules of the host alone over a model that passed every other, whose
/// issues are placed in the file like the validator's: the deadlines of
/// virtual devices against the allocation-latency analysis, which `check`
/// judges with the board's atomic costs.
pub type Rules<'r> = &'r dyn Fn(&System) -> Vec<Issue>;

/// Reads, resolves and validates a configuration file, with the deadlines
/// that need no board: none on a device whose wait has no bound.
pub fn load(path: &Path) -> Result<Config, Vec<Diagnostic>> {
    load_with(path, &|system| allocation_deadlines(system, None))
}

/// [`load`] with `rules` in place of its deadline rule, once nothing else
/// is wrong.
pub fn load_with(path: &Path, rules: Rules) -> Result<Config, Vec<Diagnostic>> {
    let bytes =
        std::fs::read(path).map_err(|error| vec![Diagnostic::whole_file(path, format!("cannot read: {error}"))])?;
    match String::from_utf8(bytes) {
        Ok(text) => load_str_with(path, &text, rules),
        Err(error) => {
            let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
            let valid = String::from_utf8_lossy(valid);
            let (line, column) = SpanIndex::new(&valid).line_column(valid.len());
            let message = "the file is not valid UTF-8".to_owned();
            Err(vec![Diagnostic { file: path.into(), line, column, field: String::new(), message }])
        }
    }
}

/// Like [`load`], for text already in memory; `path` names the file in
/// diagnostics and anchors relative image paths.
pub fn load_str(path: &Path, text: &str) -> Result<Config, Vec<Diagnostic>> {
    load_str_with(path, text, &|system| allocation_deadlines(system, None))
}

fn load_str_with(path: &Path, text: &str, rules: Rules) -> Result<Config, Vec<Diagnostic>> {
    let spans = SpanIndex::new(text);
    let (raw, misspelt) = parse(path, &spans, text)?;
    let name = path.file_stem().map_or_else(|| "config".into(), |stem| stem.to_string_lossy().into_owned());
    let config_dir = path.parent().unwrap_or(Path::new("."));
    let resolved = resolve::resolve(raw, name, config_dir);
    let mut issues = resolved.issues;
    // An unplaced region has no host address to judge, an entry naming no
    // partition no index, and a malformed channel no values; their own
    // issues say why.
    let placed = |issue: &Issue| !(issue.field == "phys" && resolved.unallocated.contains(&issue.path));
    let named = |issue: &Issue| {
        !resolved
            .unresolved
            .iter()
            .any(|(path, field)| *path == issue.path && (field.is_empty() || *field == issue.field))
    };
    issues.extend(validate(&resolved.system).into_iter().filter(|issue| placed(issue) && named(issue)));
    let unbuilt = unbuilt(&resolved.images, &resolved.virtio);
    let present = without(&resolved.images, &unbuilt);
    issues.extend(images::check(&resolved.system, &present, &resolved.entries));
    if issues.is_empty() && misspelt.is_empty() {
        issues = rules(&resolved.system);
    }
    if !issues.is_empty() || !misspelt.is_empty() {
        let mut all = misspelt;
        all.extend(diagnostics(path, &spans, issues));
        all.sort_by_key(|d| (d.line, d.column));
        return Err(all);
    }
    let images = resolved.images.into_iter().map(|slots| slots.into_iter().flatten().collect()).collect();
    Ok(Config {
        path: path.into(),
        system: resolved.system,
        images,
        entries: resolved.entries,
        virtio: resolved.virtio,
        unbuilt,
    })
}

impl Config {
    /// Every file the partitions boot from: images, then virtio disks.
    pub fn files(&self) -> Vec<PathBuf> {
        files(self.images.iter().flatten(), &self.virtio)
    }
}

fn files<'i>(images: impl Iterator<Item = &'i Image>, virtio: &[virtio::VirtioDevice]) -> Vec<PathBuf> {
    let disks = virtio.iter().filter_map(|device| match &device.backend {
        virtio::Backend::Block { file, .. } => Some(file),
        virtio::Backend::Console | virtio::Backend::Net { .. } => None,
    });
    images.map(|image| &image.path).chain(disks).cloned().collect()
}

/// The guest outputs the configuration names that no build has made yet.
fn unbuilt(images: &[Vec<Option<Image>>], virtio: &[virtio::VirtioDevice]) -> Vec<PathBuf> {
    let mut files = files(images.iter().flatten().flatten(), virtio);
    files.retain(|file| crate::guests::unbuilt(file));
    files
}

/// `images` with the slots of the `absent` files emptied, as the image
/// rules skip a slot whose entry has its own issue.
fn without(images: &[Vec<Option<Image>>], absent: &[PathBuf]) -> Vec<Vec<Option<Image>>> {
    let keep = |slot: &Option<Image>| slot.clone().filter(|image| !absent.contains(&image.path));
    images.iter().map(|slots| slots.iter().map(keep).collect()).collect()
}

fn diagnostics(path: &Path, spans: &SpanIndex, issues: Vec<Issue>) -> Vec<Diagnostic> {
    let mut diagnostics: Vec<Diagnostic> =
        issues.into_iter().map(|issue| issue_diagnostic(path, spans, issue)).collect();
    diagnostics.sort_by_key(|d| (d.line, d.column));
    diagnostics
}

fn issue_diagnostic(path: &Path, spans: &SpanIndex, issue: Issue) -> Diagnostic {
    let (line, column) = spans.locate(&issue.path, issue.field).map_or((0, 0), |offset| spans.line_column(offset));
    let field = match (issue.path.is_empty(), issue.field.is_empty()) {
        (_, true) => issue.path,
        (true, false) => issue.field.into(),
        (false, false) => format!("{}.{}", issue.path, issue.field),
    };
    let field = spans.named(&field);
    Diagnostic { file: path.into(), line, column, field, message: issue.message }
}

/// How many misspelt keys one pass reports before it stops looking.
const MAX_MISSPELT: usize = 32;

/// Deserializes `text`. serde stops at the first problem; a misspelt key
/// is reported and the text read again with the entry blanked out, as if
/// it were not written, so that one pass names every typo. Any other
/// problem ends the pass: what follows may depend on the value that could
/// not be read.
fn parse(path: &Path, spans: &SpanIndex, text: &str) -> Result<(raw::RawConfig, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut text = text.to_owned();
    let mut misspelt = Vec::new();
    loop {
        let error = match toml::from_str(&text) {
            Ok(raw) => return Ok((raw, misspelt)),
            Err(error) => error,
        };
        misspelt.push(parse_diagnostic(path, spans, &error));
        let unknown = error.message().starts_with("unknown field");
        let key = error.span().filter(|_| unknown && misspelt.len() < MAX_MISSPELT);
        let Some(entry) = key.and_then(|key| SpanIndex::new(&text).entry_at(key.start)) else {
            return Err(misspelt);
        };
        blank(&mut text, entry);
    }
}

/// Overwrites `range` with spaces, keeping every other offset and line
/// where it was; inside an inline table, with the comma that separated
/// the entry from the next or the one before.
fn blank(text: &mut String, range: std::ops::Range<usize>) {
    let mut bytes = std::mem::take(text).into_bytes();
    for byte in &mut bytes[range.clone()] {
        if *byte != b'\n' {
            *byte = b' ';
        }
    }
    let inline_space = |b: &u8| *b == b' ' || *b == b'\t';
    let after = range.end + bytes[range.end..].iter().take_while(|b| inline_space(b)).count();
    let before = range.start - bytes[..range.start].iter().rev().take_while(|b| inline_space(b)).count();
    if bytes.get(after) == Some(&b',') {
        bytes[after] = b' ';
    } else if before > 0 && bytes[before - 1] == b',' {
        bytes[before - 1] = b' ';
    }
    // Only ASCII bytes of whole entries were replaced by ASCII.
    *text = String::from_utf8(bytes).unwrap_or_default();
}

fn parse_diagnostic(path: &Path, spans: &SpanIndex, error: &toml::de::Error) -> Diagnostic {
    let offset = error.span().map(|span| span.start);
    let (line, column) = offset.map_or((0, 0), |offset| spans.line_column(offset));
    let mut message = error.message().trim().replace('\n', "; ");
    let mut field = offset.map(|offset| spans.path_at(offset)).unwrap_or_default();
    if let Some(missing) = backquoted_after(&message, "missing field `") {
        field = if field.is_empty() { missing.into() } else { format!("{field}.{missing}") };
    }
    message += &spelling_hint(&message);
    Diagnostic { file: path.into(), line, column, field: spans.named(&field), message }
}

/// serde's "unknown field `x`, expected one of `a`, `b`" (or "unknown
/// variant"): the expected name nearest `x`.
fn spelling_hint(message: &str) -> String {
    let given = backquoted_after(message, "unknown field `").or_else(|| backquoted_after(message, "unknown variant `"));
    let (Some(given), Some((_, expected))) = (given, message.split_once("expected")) else {
        return String::new();
    };
    let names = expected.split('`').skip(1).step_by(2);
    suggest::did_you_mean(given, names)
}

fn backquoted_after<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    message.strip_prefix(prefix)?.split('`').next()
}
