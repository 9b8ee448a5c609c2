//! The boot payload: the validated model plus every byte each partition
//! starts with. The host writes it in two parts: the head behind the
//! hypervisor, and the data section into the image store
//! ([`Hypervisor::images`](crate::config::model::Hypervisor::images)),
//! which the boot loader fills. The hypervisor reads and checks both before
//! it touches any partition memory.
//!
//! Head layout (little endian):
//! `magic[8] | version u32 | table_len u32 | data_len u64 | table_sum u64 | data_sum u64 | table`
//! where `table` is a postcard-encoded [`BootTable`], `table_sum` is FNV-1a
//! over its bytes and `data_sum` FNV-1a over the data's 64-bit words.

use crate::config::model::System;
use crate::partition::seed::{KASLR_SEED_LEN, LANES, RNG_SEED_LEN};
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

pub const MAGIC: [u8; 8] = *b"PARTITA\0";
/// Raised whenever the boot table's shape changes, so a hypervisor and a
/// payload from different versions refuse each other clearly.
pub const VERSION: u32 = 7;
const HEADER_LEN: usize = 40;

/// What the hypervisor needs to build and start every partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootTable {
    pub system: System,
    /// One entry per partition, in the order of `system.partitions`.
    pub boot: Vec<PartitionBoot>,
}

/// How one partition starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionBoot {
    /// Guest-physical entry point of vCPU 0.
    pub entry: u64,
    /// Guest-physical address of the partition's device tree, passed in x0.
    pub dtb: u64,
    /// Blobs copied into partition RAM before entry (images, device tree).
    pub loads: Vec<Load>,
    /// Where in the device tree the hypervisor writes each load's seeds.
    pub seeds: SeedPlaces,
    /// The partition's own secret, drawn from the host's random source at
    /// every build, that its seeds grow from (`partition::seed`).
    pub entropy: [u64; LANES],
}

/// Byte offsets, from the start of the device tree, of the values of
/// `/chosen/kaslr-seed` (8 bytes) and `/chosen/rng-seed` (`rng_len`
/// bytes), so the hypervisor fills them without parsing the tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedPlaces {
    pub kaslr: u32,
    pub rng: u32,
    pub rng_len: u32,
}

impl SeedPlaces {
    /// Both values lie inside a tree of `len` bytes, apart, and `rng-seed`
    /// is no longer than the hypervisor fills.
    pub fn fit(&self, len: u64) -> bool {
        let kaslr = (u64::from(self.kaslr), u64::from(self.kaslr) + KASLR_SEED_LEN as u64);
        let rng = (u64::from(self.rng), u64::from(self.rng) + u64::from(self.rng_len));
        let apart = kaslr.1 <= rng.0 || rng.1 <= kaslr.0;
        self.rng_len as usize <= RNG_SEED_LEN && kaslr.1 <= len && rng.1 <= len && apart
    }
}

/// `len` bytes at `offset` in the data section go to guest-physical `ipa`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Load {
    pub ipa: u64,
    pub offset: u64,
    pub len: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageError {
    TooShort,
    BadMagic,
    BadVersion(u32),
    Truncated,
    BadChecksum,
    BadTable,
    /// The data section is larger than the image store the table names.
    StoreTooSmall {
        data: u64,
        store: u64,
    },
    /// The image store does not hold the data the head was sealed with.
    BadData,
    /// A partition count that differs between the model and the boot entries.
    PartitionCount,
    /// Load `load` of partition `partition` lies outside the data or the partition's RAM.
    BadLoad {
        partition: usize,
        load: usize,
    },
    /// The entry point of `partition` is not in its RAM.
    BadEntry {
        partition: usize,
    },
    /// The seeds of `partition` do not lie in its device tree's load.
    BadSeeds {
        partition: usize,
    },
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a, 64 bit: enough to catch a truncated or stale payload; written
/// here because it is five lines and needs no table.
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash = FNV_OFFSET;
    for part in parts {
        for &byte in *part {
            hash = (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
        }
    }
    hash
}

/// FNV-1a over 64-bit little-endian words, the last one zero-padded: the
/// data section runs to tens of MiB (a Linux kernel and its initramfs),
/// which a byte at a time would take the boot CPU a noticeable while.
pub fn fnv1a_words(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut hash = FNV_OFFSET;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("chunks of 8"));
        hash = (hash ^ word).wrapping_mul(FNV_PRIME);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut word = [0u8; 8];
        word[..tail.len()].copy_from_slice(tail);
        hash = (hash ^ u64::from_le_bytes(word)).wrapping_mul(FNV_PRIME);
    }
    hash
}

/// The head of a payload whose data section is `data`: the header and the
/// table. The data goes to the image store separately.
pub fn encode(table: &BootTable, data: &[u8]) -> Vec<u8> {
    let table_bytes = postcard::to_allocvec(table).expect("postcard encoding into a Vec cannot fail");
    let mut out = Vec::with_capacity(HEADER_LEN + table_bytes.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(table_bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    out.extend_from_slice(&fnv1a(&[&table_bytes]).to_le_bytes());
    out.extend_from_slice(&fnv1a_words(data).to_le_bytes());
    out.extend_from_slice(&table_bytes);
    out
}

/// Length of a payload's head from its header, so a reader can bound it
/// before looking at the rest.
pub fn head_len(header: &[u8]) -> Result<usize, ImageError> {
    let (table_len, _) = read_header(header)?;
    Ok(HEADER_LEN + table_len)
}

fn read_header(bytes: &[u8]) -> Result<(usize, u64), ImageError> {
    if bytes.len() < HEADER_LEN {
        return Err(ImageError::TooShort);
    }
    if bytes[..8] != MAGIC {
        return Err(ImageError::BadMagic);
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if version != VERSION {
        return Err(ImageError::BadVersion(version));
    }
    let table_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    Ok((table_len, word(bytes, 16)))
}

fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// What the head says the data section must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seal {
    pub len: u64,
    sum: u64,
}

impl Seal {
    /// The first `len` bytes of the image store, when they are the data
    /// the head was made with.
    pub fn check<'d>(&self, store: &'d [u8]) -> Result<&'d [u8], ImageError> {
        let data = usize::try_from(self.len).ok().and_then(|len| store.get(..len)).ok_or(ImageError::Truncated)?;
        if fnv1a_words(data) != self.sum {
            return Err(ImageError::BadData);
        }
        Ok(data)
    }
}

/// Parses and checks a payload's head: the table, and that its loads fit
/// the data section it seals and the data fits the image store.
// Never inlined, so that its decoder keeps core's size-first code even in
// a caller compiled for speed: it runs once per boot.
#[inline(never)]
pub fn decode_head(bytes: &[u8]) -> Result<(BootTable, Seal), ImageError> {
    let (table_len, data_len) = read_header(bytes)?;
    let table_end = HEADER_LEN.checked_add(table_len).ok_or(ImageError::Truncated)?;
    let table_bytes = bytes.get(HEADER_LEN..table_end).ok_or(ImageError::Truncated)?;
    if fnv1a(&[table_bytes]) != word(bytes, 24) {
        return Err(ImageError::BadChecksum);
    }
    let table: BootTable = postcard::from_bytes(table_bytes).map_err(|_| ImageError::BadTable)?;
    let store = table.system.hypervisor.images.size;
    if data_len > store {
        return Err(ImageError::StoreTooSmall { data: data_len, store });
    }
    table.check(data_len)?;
    Ok((table, Seal { len: data_len, sum: word(bytes, 32) }))
}

/// A whole payload: its head and the image store's bytes.
pub fn decode<'d>(head: &[u8], store: &'d [u8]) -> Result<(BootTable, &'d [u8]), ImageError> {
    let (table, seal) = decode_head(head)?;
    Ok((table, seal.check(store)?))
}

impl BootTable {
    /// Every load lies inside the data section and inside one RAM region of
    /// its partition, every entry point is in RAM, and the seeds lie in the
    /// device tree's load. The hypervisor relies on this before it copies
    /// anything.
    pub fn check(&self, data_len: u64) -> Result<(), ImageError> {
        if self.boot.len() != self.system.partitions.len() {
            return Err(ImageError::PartitionCount);
        }
        for (index, (part, boot)) in self.system.partitions.iter().zip(&self.boot).enumerate() {
            for (n, load) in boot.loads.iter().enumerate() {
                let bad = ImageError::BadLoad { partition: index, load: n };
                let in_data = load.offset.checked_add(load.len).is_some_and(|end| end <= data_len);
                let target = crate::config::model::Range::new(load.ipa, load.len);
                let in_ram =
                    part.memory.iter().any(|r| r.guest().covers(&target) && load.ipa.checked_add(load.len).is_some());
                if !in_data || !in_ram {
                    return Err(bad);
                }
            }
            if part.translate_ram(boot.entry).is_none() {
                return Err(ImageError::BadEntry { partition: index });
            }
            let tree = boot.loads.iter().find(|load| load.ipa == boot.dtb);
            if !tree.is_some_and(|tree| boot.seeds.fit(tree.len)) {
                return Err(ImageError::BadSeeds { partition: index });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::*;
    use alloc::string::ToString;
    use alloc::vec;

    const DATA_LEN: usize = 128;

    /// A data section: an image `abcd`, then bytes standing for a device tree.
    fn data() -> Vec<u8> {
        let mut data = b"abcd".to_vec();
        data.resize(DATA_LEN, 0x5a);
        data
    }

    pub(crate) fn sample() -> BootTable {
        let part = Partition {
            name: "rtos".to_string(),
            criticality: Criticality::High,
            priority: 192,
            vcpus: vec![1],
            exclusive: false,
            interrupts: crate::config::model::Delivery::Virtual,
            rights: Default::default(),
            migrate: vec![],
            budget: Some(Budget { time_us: 2_000, period_us: 10_000 }),
            memory: vec![MemoryRegion {
                ipa: 0x4000_0000,
                pa: 0x4200_0000,
                size: 0x10_0000,
                perms: Perms::RWX,
                identity: false,
            }],
            devices: vec![],
            console: 0x0900_0000,
            bootargs: "hello".to_string(),
            health: Health { reported: Action::Restart, watchdog_us: Some(100_000), ..Health::DEFAULT },
            accelerators: Vec::new(),
            max_added_response_us: None,
        };
        BootTable {
            system: System {
                name: "sample".to_string(),
                platform: Platform {
                    board: "qemu-virt".to_string(),
                    cpus: 4,
                    ram: Range::new(0x4000_0000, 0x4000_0000),
                    console: Range::new(0x0900_0000, 0x1000),
                    gicd: Range::new(0x0800_0000, 0x1_0000),
                    gicr: Range::new(0x080a_0000, 0xf6_0000),
                },
                hypervisor: Hypervisor {
                    memory: Range::new(0x4000_0000, 0x200_0000),
                    quantum_us: 1000,
                    trace_events: 0,
                    overhead_limit_bp: 100,
                    hm_log_entries: 256,
                    images: Range::new(0x7000_0000, 0x20_0000),
                },
                partitions: vec![part],
                plans: vec![Plan {
                    name: "normal".to_string(),
                    cores: vec![CyclicCore {
                        cpu: 1,
                        major_frame_us: 10_000,
                        slots: vec![Slot { partition: 0, vcpu: 0, start_us: 1_000, duration_us: 5_000 }],
                    }],
                }],
                channels: vec![Channel {
                    name: "status".to_string(),
                    kind: ChannelKind::Sampling {
                        source: 0,
                        destinations: vec![0],
                        max_message: 64,
                        refresh_us: 10_000,
                    },
                }],
                fabric: None,
                timed_io: None,
            },
            boot: vec![PartitionBoot {
                entry: 0x4000_0000,
                dtb: 0x400f_f000,
                loads: vec![
                    Load { ipa: 0x4000_0000, offset: 0, len: 4 },
                    Load { ipa: 0x400f_f000, offset: 16, len: 100 },
                ],
                seeds: SeedPlaces { kaslr: 20, rng: 30, rng_len: 64 },
                entropy: [1, 2, 0xdead_beef, u64::MAX],
            }],
        }
    }

    #[test]
    fn round_trip() {
        let table = sample();
        let head = encode(&table, &data());
        let mut store = data();
        store.extend_from_slice(b"more than the data");
        let (back, decoded) = decode(&head, &store).unwrap();
        assert_eq!(back, table);
        assert_eq!(decoded, data());
        assert_eq!(head_len(&head).unwrap(), head.len());
    }

    #[test]
    fn corruption_is_caught() {
        let mut head = encode(&sample(), &data());
        let mut changed = data();
        changed[3] = b'e';
        assert_eq!(decode(&head, &changed).unwrap_err(), ImageError::BadData);
        assert_eq!(decode(&head, &data()[..DATA_LEN - 1]).unwrap_err(), ImageError::Truncated);
        let last = head.len() - 1;
        head[last] ^= 1;
        assert_eq!(decode(&head, &data()).unwrap_err(), ImageError::BadChecksum);
        assert_eq!(decode(&head[..head.len() - 1], &data()).unwrap_err(), ImageError::Truncated);
        head[0] = b'X';
        assert_eq!(decode(&head, &data()).unwrap_err(), ImageError::BadMagic);
        assert_eq!(decode(&head[..4], &data()).unwrap_err(), ImageError::TooShort);
    }

    #[test]
    fn a_payload_of_another_version_is_refused() {
        let mut head = encode(&sample(), &data());
        head[8..12].copy_from_slice(&(VERSION - 1).to_le_bytes());
        assert_eq!(decode(&head, &data()).unwrap_err(), ImageError::BadVersion(VERSION - 1));
    }

    #[test]
    fn data_larger_than_the_image_store_is_refused() {
        let mut table = sample();
        table.system.hypervisor.images.size = 2;
        let head = encode(&table, &data());
        assert_eq!(decode(&head, &data()).unwrap_err(), ImageError::StoreTooSmall { data: DATA_LEN as u64, store: 2 });
    }

    #[test]
    fn the_word_checksum_sees_every_byte_and_the_length() {
        let data: Vec<u8> = (0..29u8).collect();
        let sum = fnv1a_words(&data);
        for at in 0..data.len() {
            let mut changed = data.clone();
            changed[at] ^= 0x80;
            assert_ne!(fnv1a_words(&changed), sum, "byte {at}");
        }
        assert_ne!(fnv1a_words(&data[..24]), fnv1a_words(&data[..25]), "a zero-padded tail still counts");
    }

    #[test]
    fn load_outside_partition_ram_is_rejected() {
        let mut table = sample();
        table.boot[0].loads[0].ipa = 0x5000_0000;
        assert_eq!(table.check(DATA_LEN as u64).unwrap_err(), ImageError::BadLoad { partition: 0, load: 0 });
        let mut table = sample();
        table.boot[0].loads[0].offset = DATA_LEN as u64 - 3;
        assert_eq!(table.check(DATA_LEN as u64).unwrap_err(), ImageError::BadLoad { partition: 0, load: 0 });
        let mut table = sample();
        table.boot[0].entry = 0;
        assert_eq!(table.check(DATA_LEN as u64).unwrap_err(), ImageError::BadEntry { partition: 0 });
    }

    #[test]
    fn seeds_outside_the_device_tree_or_overlapping_are_rejected() {
        let bad = ImageError::BadSeeds { partition: 0 };
        let check = |seeds: SeedPlaces| {
            let mut table = sample();
            table.boot[0].seeds = seeds;
            table.check(DATA_LEN as u64)
        };
        assert_eq!(check(SeedPlaces { kaslr: 92, rng: 28, rng_len: 64 }), Ok(()), "they may fill the tree exactly");
        assert_eq!(
            check(SeedPlaces { kaslr: 93, rng: 0, rng_len: 64 }),
            Err(bad.clone()),
            "kaslr-seed runs past the end"
        );
        assert_eq!(
            check(SeedPlaces { kaslr: 0, rng: 40, rng_len: 61 }),
            Err(bad.clone()),
            "rng-seed runs past the end"
        );
        assert_eq!(check(SeedPlaces { kaslr: 36, rng: 8, rng_len: 32 }), Err(bad.clone()), "they overlap");
        assert_eq!(check(SeedPlaces { kaslr: 0, rng: 8, rng_len: 65 }), Err(bad.clone()), "more than is filled");
        let mut table = sample();
        table.boot[0].dtb += 0x10;
        assert_eq!(table.check(DATA_LEN as u64), Err(bad), "no load is the device tree");
    }

    #[test]
    fn seed_places_and_entropy_survive_the_round_trip() {
        let mut table = sample();
        table.boot[0].seeds = SeedPlaces { kaslr: 0xff0, rng: 0x10, rng_len: 32 };
        table.boot[0].loads[1].len = 0x1000;
        let mut data = data();
        data.resize(0x1010, 0);
        let (back, _) = decode(&encode(&table, &data), &data).unwrap();
        assert_eq!(back.boot[0].seeds, table.boot[0].seeds);
        assert_eq!(back.boot[0].entropy, [1, 2, 0xdead_beef, u64::MAX]);
    }
}
