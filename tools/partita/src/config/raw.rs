//! The TOML schema exactly as written, before defaults and allocation.
//!
//! Every struct denies unknown fields so that a typo is an error naming the
//! field instead of a silently ignored setting. A later section (`[schedule]`)
//! becomes one more field of [`RawConfig`], as `[[plan]]`, `[[channel]]`
//! and `[fabric]` did.
//!
//! The same types serialise back to TOML, so that configurations the tool
//! and its tests generate are built as data and read by the one loader
//! users' files go through; what is left at its default is left out.

use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use std::fmt;

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    #[serde(default, skip_serializing_if = "is_default")]
    pub platform: RawPlatform,
    #[serde(default, skip_serializing_if = "is_default")]
    pub hypervisor: RawHypervisor,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partition: Vec<RawPartition>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub trace: RawTrace,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<RawPlan>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channel: Vec<RawChannel>,
    /// Present, even empty: the system has a fabric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<RawFabric>,
    /// Present: partitions may ask for timed outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_io: Option<RawTimedIo>,
}

/// `[timed_io]`: the GPIO controller Partita drives at asked times.
#[derive(Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTimedIo {
    /// Host-physical base of the PL061.
    pub device: Option<u64>,
    pub horizon: Option<Micros>,
    pub lead: Option<Micros>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grant: Vec<RawTimedIoGrant>,
}

/// `[[timed_io.grant]]`: the pins one partition may drive.
#[derive(Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTimedIoGrant {
    pub partition: String,
    /// GPIO line numbers; a list, so that a line out of range is reported
    /// with its number.
    pub pins: Vec<u32>,
    pub depth: Option<u32>,
    pub view: Option<u64>,
}

#[derive(Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPlatform {
    pub board: Option<String>,
    pub cpus: Option<u32>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub ram: RawRange,
    #[serde(default, skip_serializing_if = "is_default")]
    pub console: RawRange,
    #[serde(default, skip_serializing_if = "is_default")]
    pub gic: RawGic,
}

/// `{ base = ..., size = ... }`; either half may fall back to its default.
#[derive(Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRange {
    pub base: Option<u64>,
    pub size: Option<Size>,
}

#[derive(Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawGic {
    pub distributor: Option<u64>,
    /// GICv3 boards.
    pub redistributor: Option<u64>,
    /// GICv2 boards: GICC, followed by GICH and GICV.
    pub cpu_interface: Option<u64>,
}

#[derive(Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawHypervisor {
    #[serde(default, skip_serializing_if = "is_default")]
    pub memory: RawRange,
    /// The image store; placed and sized from the images when left out.
    #[serde(default, skip_serializing_if = "is_default")]
    pub images: RawRange,
    pub quantum_us: Option<u32>,
    /// A percentage; TOML integers are accepted too.
    pub overhead_limit_percent: Option<f64>,
    pub hm_log_entries: Option<u32>,
}

#[derive(Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrace {
    pub enabled: Option<bool>,
    pub events_per_cpu: Option<u32>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPartition {
    pub name: String,
    pub criticality: Option<RawCriticality>,
    pub priority: Option<u8>,
    pub cpus: Vec<u32>,
    pub exclusive: Option<bool>,
    /// `"virtual"` (the default) or `"direct"`.
    pub interrupts: Option<RawDelivery>,
    pub rights: Option<Vec<RawRight>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub migrate: Vec<RawMigration>,
    pub budget: Option<RawBudget>,
    pub console: Option<u64>,
    pub bootargs: Option<String>,
    pub health: Option<RawHealth>,
    /// The watchdog's period; no watchdog without it.
    pub watchdog: Option<Micros>,
    /// The most Partita may add to a release of this high-criticality
    /// partition's task (Ker-ONE eq. 4); `check` refuses more.
    pub max_added_response_us: Option<Micros>,
    pub entry: Option<u64>,
    /// An arm64 Linux `Image`, placed by its header (the boot protocol).
    pub kernel: Option<String>,
    /// An initrd or initramfs, named in `/chosen`: for `kernel`, or for any
    /// image that reads it from there.
    pub initrd: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<RawMemory>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image: Vec<RawImage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device: Vec<RawDevice>,
    /// Its virtual devices, each an accelerator of the fabric.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accelerators: Vec<RawVirtualDevice>,
    /// QEMU virtio-mmio devices passed through to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub virtio: Vec<RawVirtio>,
}

/// `{ kind = "block", file = "disk.ext4" }`, `{ kind = "console" }` or
/// `{ kind = "net", forward = ["tcp:2222:22"] }`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawVirtio {
    pub kind: RawVirtioKind,
    pub file: Option<String>,
    pub snapshot: Option<bool>,
    /// A net device's host ports, `PROTOCOL:HOST_PORT:GUEST_PORT`; an
    /// `Option` so that one given to another kind is an error, not ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward: Option<Vec<String>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RawVirtioKind {
    Block,
    Console,
    Net,
}

/// `{ name = "qam16", ipa = 0x0b000000, signals = [80, 81, 82], deadline = "2ms" }`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawVirtualDevice {
    /// The accelerator's name in the fabric.
    pub name: String,
    pub ipa: Option<u64>,
    /// A list rather than an array of three, so that a wrong count is
    /// reported with the other problems, naming what the three are for.
    pub signals: Option<Vec<u32>>,
    pub deadline: Option<Micros>,
}

/// `[fabric]`: the reconfigurable fabric; what it leaves out is Ker-ONE's.
#[derive(Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFabric {
    /// Bytes per second of the reconfiguration port.
    pub bandwidth: Option<Size>,
    pub hold: Option<Micros>,
    /// The emulated fabric's longest look away from its PRRs.
    pub turn: Option<Micros>,
    /// The pCPU of the emulated fabric.
    pub cpu: Option<u32>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub memory: RawRange,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accelerator: Vec<RawAccelerator>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prr: Vec<RawPrr>,
}

#[derive(Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawAccelerator {
    pub name: String,
    pub function: RawFunction,
    pub frame: Nanos,
    pub preempt: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RawFunction {
    Qam16,
    Qam64,
    Fft512,
    Fft1024,
}

#[derive(Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPrr {
    pub name: String,
    pub size: u32,
    pub bitstream: Size,
    /// Accelerator names.
    pub hosts: Vec<String>,
}

/// `{ vcpu = 0, to = [3] }`: vCPU 0 may move to pCPU 3.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMigration {
    #[serde(default, skip_serializing_if = "is_default")]
    pub vcpu: u32,
    pub to: Vec<u32>,
}

/// A right of `rights = [...]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RawRight {
    Suspend,
    Resume,
    Restart,
    Halt,
    SwitchPlan,
    ReadHmLog,
}

/// `{ time = "2ms", period = "10ms" }`: both halves are required, since
/// neither has a value that would fit every partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawBudget {
    pub time: Micros,
    pub period: Micros,
}

/// `{ stage2-fault = "restart", ... }`: each event left out keeps its default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RawHealth {
    pub stage2_fault: Option<RawAction>,
    pub forbidden: Option<RawAction>,
    pub illegal_hypercall: Option<RawAction>,
    pub watchdog: Option<RawAction>,
    pub budget_overrun: Option<RawAction>,
    pub reported: Option<RawAction>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RawAction {
    Ignore,
    Log,
    Suspend,
    Restart,
    Halt,
    ResetSystem,
    Inject,
}

/// One `[[channel]]`. Flat rather than an enum tagged by `kind`: serde
/// buffers a tagged enum and then reports its errors at the whole table;
/// this way each field keeps its place, and resolution names any field that
/// the kind needs or does not take.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawChannel {
    pub name: String,
    pub kind: RawChannelKind,
    pub source: Option<String>,
    pub destinations: Option<Vec<String>>,
    pub destination: Option<String>,
    pub max_message: Option<Size>,
    pub refresh: Option<Micros>,
    pub depth: Option<u32>,
    pub partitions: Option<Vec<String>>,
    pub base: Option<u64>,
    pub phys: Option<u64>,
    pub size: Option<Size>,
    pub read_only: Option<Vec<String>>,
    pub doorbell_intid: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RawChannelKind {
    Sampling,
    Queuing,
    SharedMemory,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RawDelivery {
    Virtual,
    Direct,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RawCriticality {
    High,
    Medium,
    Low,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMemory {
    pub base: u64,
    pub size: Size,
    pub phys: Option<u64>,
    pub perms: Option<Perms>,
    pub identity: Option<bool>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawImage {
    pub path: String,
    pub format: Option<RawFormat>,
    pub load: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RawFormat {
    Elf,
    Raw,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawDevice {
    pub name: String,
    pub base: u64,
    pub phys: Option<u64>,
    pub size: Size,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interrupts: Vec<RawInterrupt>,
    pub compatible: Vec<String>,
}

/// `39` (to vCPU 0) or `{ intid = 40, vcpu = 1 }`.
#[derive(Clone, Copy, Debug)]
pub enum RawInterrupt {
    Bare(u32),
    Routed(RawRoutedInterrupt),
}

/// By hand rather than `#[serde(untagged)]`: an untagged enum buffers the
/// value and, when no variant fits, says only that, at the whole array; this
/// way a misspelt key in the table form is named, at the table.
impl Serialize for RawInterrupt {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RawInterrupt::Bare(intid) => serializer.serialize_u32(*intid),
            RawInterrupt::Routed(routed) => routed.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for RawInterrupt {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(InterruptVisitor)
    }
}

struct InterruptVisitor;

impl<'de> Visitor<'de> for InterruptVisitor {
    type Value = RawInterrupt;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an interrupt: an INTID such as 39, or a table such as { intid = 40, vcpu = 1 }")
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<RawInterrupt, E> {
        u32::try_from(value)
            .map(RawInterrupt::Bare)
            .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(value), &self))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<RawInterrupt, E> {
        u32::try_from(value).map(RawInterrupt::Bare).map_err(|_| E::invalid_value(de::Unexpected::Signed(value), &self))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<RawInterrupt, A::Error> {
        RawRoutedInterrupt::deserialize(de::value::MapAccessDeserializer::new(map)).map(RawInterrupt::Routed)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRoutedInterrupt {
    pub intid: u32,
    pub vcpu: Option<u32>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPlan {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub core: Vec<RawCore>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCore {
    pub cpu: u32,
    pub major_frame_us: Micros,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slot: Vec<RawSlot>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSlot {
    pub partition: String,
    pub vcpu: Option<u32>,
    pub start_us: Micros,
    pub duration_us: Micros,
}

/// A time in microseconds: an integer, or a string such as `"500us"`, `"10ms"`, `"1s"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Micros(pub u64);

/// Parses the string form of [`Micros`]; the unit is required, so that
/// `"10"` cannot be read as milliseconds by one reader and microseconds by another.
pub fn parse_micros(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits_end = text.find(|c: char| !c.is_ascii_digit() && c != '_')?;
    let (digits, unit) = (&text[..digits_end], text[digits_end..].trim_start());
    let scale: u64 = match unit {
        "us" => 1,
        "ms" => 1_000,
        "s" => 1_000_000,
        _ => return None,
    };
    if !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    digits.replace('_', "").parse::<u64>().ok()?.checked_mul(scale)
}

/// As an integer: the field names say microseconds, and every reader agrees.
impl Serialize for Micros {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Micros {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MicrosVisitor)
    }
}

struct MicrosVisitor;

impl Visitor<'_> for MicrosVisitor {
    type Value = Micros;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a time: microseconds as a non-negative integer, or a string like \"500us\", \"10ms\", \"1s\"")
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Micros, E> {
        Ok(Micros(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Micros, E> {
        u64::try_from(value).map(Micros).map_err(|_| E::custom(format!("time {value} is negative")))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Micros, E> {
        parse_micros(text).map(Micros).ok_or_else(|| {
            E::custom(format!(
                "invalid time \"{text}\": expected microseconds or a string like \"500us\", \"10ms\", \"1s\""
            ))
        })
    }
}

/// A time in nanoseconds, for what is shorter than a few microseconds or
/// not a whole number of them: an integer (microseconds, like every time),
/// or a string with a decimal number and a unit, `ns`, `us`, `ms` or `s`
/// (`"47.0us"`, `"71.1us"`, `"47000ns"`), down to a whole nanosecond.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nanos(pub u64);

/// Parses the string form of [`Nanos`]; like [`parse_micros`], the unit is
/// required.
pub fn parse_nanos(text: &str) -> Option<u64> {
    let text = text.trim();
    let number_end = text.find(|c: char| !c.is_ascii_digit() && c != '_' && c != '.')?;
    let (number, unit) = (&text[..number_end], text[number_end..].trim_start());
    let decimals: u32 = match unit {
        "ns" => 0,
        "us" => 3,
        "ms" => 6,
        "s" => 9,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if !whole.starts_with(|c: char| c.is_ascii_digit()) || !digits(whole) || !digits(fraction) {
        return None;
    }
    if number.contains('.') && !fraction.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let fraction = fraction.replace('_', "");
    // Digits past the nanosecond must be zeros: nothing is rounded away.
    let (kept, dropped) = fraction.split_at(fraction.len().min(decimals as usize));
    if dropped.bytes().any(|b| b != b'0') {
        return None;
    }
    let scale = 10u64.pow(decimals);
    let whole = whole.replace('_', "").parse::<u64>().ok()?.checked_mul(scale)?;
    let kept_value = if kept.is_empty() { 0 } else { kept.parse::<u64>().ok()? };
    whole.checked_add(kept_value * 10u64.pow(decimals - kept.len() as u32))
}

/// Whole microseconds as an integer, as every time is written; anything
/// finer in nanoseconds.
impl Serialize for Nanos {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_multiple_of(1_000) {
            serializer.serialize_u64(self.0 / 1_000)
        } else {
            serializer.serialize_str(&format!("{}ns", self.0))
        }
    }
}

impl<'de> Deserialize<'de> for Nanos {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NanosVisitor)
    }
}

struct NanosVisitor;

impl Visitor<'_> for NanosVisitor {
    type Value = Nanos;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a time: microseconds as a non-negative integer, or a string like \"47.0us\", \"47000ns\"")
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Nanos, E> {
        value.checked_mul(1_000).map(Nanos).ok_or_else(|| E::custom(format!("time {value} us is too long")))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Nanos, E> {
        let value = u64::try_from(value).map_err(|_| E::custom(format!("time {value} is negative")))?;
        self.visit_u64(value)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Nanos, E> {
        parse_nanos(text).map(Nanos).ok_or_else(|| {
            E::custom(format!(
                "invalid time \"{text}\": expected microseconds or a string like \"47.0us\", \"71.1us\", \"47000ns\" \
                 (a whole number of nanoseconds)"
            ))
        })
    }
}

/// A byte count: an integer, or a string such as `"64K"`, `"16M"`, `"1G"`, `"0x1000"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub u64);

/// Parses the string form of a [`Size`].
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return u64::from_str_radix(&hex.replace('_', ""), 16).ok();
    }
    let (digits, unit) = match text.char_indices().last()? {
        (at, 'K') => (&text[..at], 1u64 << 10),
        (at, 'M') => (&text[..at], 1 << 20),
        (at, 'G') => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return None;
    }
    digits.replace('_', "").parse::<u64>().ok()?.checked_mul(unit)
}

/// In the largest unit that divides it, as people write sizes: `"16M"`.
impl Serialize for Size {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let unit = [('G', 1u64 << 30), ('M', 1 << 20), ('K', 1 << 10)]
            .into_iter()
            .find(|&(_, scale)| self.0 != 0 && self.0.is_multiple_of(scale));
        match unit {
            Some((letter, scale)) => serializer.serialize_str(&format!("{}{letter}", self.0 / scale)),
            None => serializer.serialize_u64(self.0),
        }
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SizeVisitor)
    }
}

struct SizeVisitor;

impl Visitor<'_> for SizeVisitor {
    type Value = Size;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a size: a non-negative integer or a string like \"64K\", \"16M\", \"1G\"")
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Size, E> {
        Ok(Size(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Size, E> {
        u64::try_from(value).map(Size).map_err(|_| E::custom(format!("size {value} is negative")))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Size, E> {
        parse_size(text).map(Size).ok_or_else(|| {
            E::custom(format!("invalid size \"{text}\": expected an integer or a string like \"64K\", \"16M\", \"1G\""))
        })
    }
}

/// Access rights written as letters from `r`, `w`, `x`, each at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Perms(pub partita_core::config::model::Perms);

fn parse_perms(text: &str) -> Option<partita_core::config::model::Perms> {
    let mut perms = partita_core::config::model::Perms { read: false, write: false, exec: false };
    for letter in text.chars() {
        let flag = match letter {
            'r' => &mut perms.read,
            'w' => &mut perms.write,
            'x' => &mut perms.exec,
            _ => return None,
        };
        if std::mem::replace(flag, true) {
            return None;
        }
    }
    Some(perms)
}

impl Perms {
    /// `"rw"` and the like; `None` for anything [`Perms`] would not read.
    pub fn from_letters(text: &str) -> Option<Self> {
        parse_perms(text).map(Perms)
    }

    fn letters(&self) -> String {
        let p = self.0;
        [(p.read, 'r'), (p.write, 'w'), (p.exec, 'x')].into_iter().filter(|&(on, _)| on).map(|(_, c)| c).collect()
    }
}

impl Serialize for Perms {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.letters())
    }
}

impl<'de> Deserialize<'de> for Perms {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_perms(&text).map(Perms).ok_or_else(|| {
            de::Error::custom(format!("invalid permissions \"{text}\": use the letters r, w, x, each at most once"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64K"), Some(0x1_0000));
        assert_eq!(parse_size("16M"), Some(0x100_0000));
        assert_eq!(parse_size("1G"), Some(0x4000_0000));
        assert_eq!(parse_size("0x1000"), Some(0x1000));
        assert_eq!(parse_size("4096"), Some(4096));
        for bad in ["", "K", "16Q", "-1M", "1.5M", "99999999999999999999G", "0xZZ"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn times() {
        assert_eq!(parse_micros("500us"), Some(500));
        assert_eq!(parse_micros("10ms"), Some(10_000));
        assert_eq!(parse_micros("1s"), Some(1_000_000));
        assert_eq!(parse_micros(" 2 ms "), Some(2_000));
        assert_eq!(parse_micros("1_000us"), Some(1_000));
        for bad in
            ["", "10", "ms", "_1ms", "1.5ms", "10m", "-1ms", "10 mss", "99999999999999999999s", "20000000000000s"]
        {
            assert_eq!(parse_micros(bad), None, "{bad}");
        }
    }

    #[test]
    fn nanosecond_times() {
        assert_eq!(parse_nanos("47.0us"), Some(47_000));
        assert_eq!(parse_nanos("71.1us"), Some(71_100));
        assert_eq!(parse_nanos("47000ns"), Some(47_000));
        assert_eq!(parse_nanos("0.000_5ms"), Some(500));
        assert_eq!(parse_nanos("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_nanos(" 24.100 us "), Some(24_100));
        assert_eq!(parse_nanos("2ms"), Some(2_000_000));
        for bad in ["", "47", "47.0", ".5us", "5.us", "1.0001us", "1.5ns", "47 min", "-1us", "1.2.3us", "99999999999s"]
        {
            assert_eq!(parse_nanos(bad), None, "{bad}");
        }
    }

    #[test]
    fn perms() {
        assert_eq!(
            parse_perms("rx"),
            Some(partita_core::config::model::Perms { read: true, write: false, exec: true })
        );
        assert_eq!(parse_perms("rwx"), Some(partita_core::config::model::Perms::RWX));
        assert_eq!(parse_perms("rr"), None);
        assert_eq!(parse_perms("rq"), None);
    }
}
