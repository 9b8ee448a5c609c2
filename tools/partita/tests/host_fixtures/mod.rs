//! Shared by the host-tool tests: a small system model, scratch folders and
//! hand-made ELF files, so the tests need neither the hypervisor nor a cross
//! compiler.
#![allow(dead_code)]

use object::elf;
use object::write::elf::{FileHeader, ProgramHeader, SectionHeader, Sym, Writer};
use object::Endianness;
use partita_core::config::model::*;
use std::path::PathBuf;

pub const RAM_BASE: u64 = 0x4000_0000;

/// A fresh, empty folder under Cargo's scratch space for integration tests.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("partita-host").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn region(ipa: u64, size: u64) -> MemoryRegion {
    MemoryRegion { ipa, pa: ipa, size, perms: Perms::RWX, identity: true }
}

pub fn partition(name: &str, vcpus: Vec<u32>, memory: Vec<MemoryRegion>) -> Partition {
    Partition {
        name: name.to_string(),
        criticality: Criticality::High,
        priority: 192,
        vcpus,
        exclusive: false,
        interrupts: Default::default(),
        rights: Default::default(),
        migrate: vec![],
        budget: None,
        memory,
        devices: vec![],
        console: 0x0900_0000,
        bootargs: format!("console=ttyAMA0 name={name}"),
        health: Health::DEFAULT,
        accelerators: Vec::new(),
        max_added_response_us: None,
    }
}

pub fn system(name: &str, partitions: Vec<Partition>) -> System {
    System {
        name: name.to_string(),
        platform: Platform {
            board: "qemu-virt".to_string(),
            cpus: 4,
            ram: Range::new(RAM_BASE, 0x4000_0000),
            console: Range::new(0x0900_0000, 0x1000),
            gicd: Range::new(0x0800_0000, 0x1_0000),
            gicr: Range::new(0x080a_0000, 0xf6_0000),
        },
        hypervisor: Hypervisor {
            memory: Range::new(RAM_BASE, 0x400_0000),
            quantum_us: 1000,
            trace_events: 0,
            overhead_limit_bp: 100,
            hm_log_entries: 256,
            images: Range::new(0x7000_0000, 0x20_0000),
        },
        partitions,
        plans: vec![],
        channels: vec![],
        fabric: None,
        timed_io: None,
    }
}

pub struct Segment {
    pub paddr: u64,
    pub vaddr: u64,
    pub data: Vec<u8>,
    pub memsz: u64,
}

impl Segment {
    pub fn identity(addr: u64, data: &[u8], memsz: u64) -> Self {
        Self { paddr: addr, vaddr: addr, data: data.to_vec(), memsz }
    }
}

pub enum Kind {
    Text,
    ReadOnly,
    Data,
    Bss,
}

pub struct Section {
    pub name: &'static str,
    pub addr: u64,
    pub size: u64,
    pub kind: Kind,
}

/// An AArch64 executable with the given segments, section headers and
/// absolute symbols.
pub fn elf(entry: u64, segments: &[Segment], sections: &[Section], symbols: &[(&str, u64)]) -> Vec<u8> {
    let mut buffer = Vec::new();
    let mut w = Writer::new(Endianness::Little, true, &mut buffer);
    w.reserve_file_header();
    w.reserve_program_headers(segments.len() as u32);
    let offsets: Vec<usize> = segments.iter().map(|s| w.reserve(s.data.len(), 16)).collect();
    w.reserve_null_section_index();
    let section_names: Vec<_> = sections
        .iter()
        .map(|s| {
            let name = w.add_section_name(s.name.as_bytes());
            w.reserve_section_index();
            name
        })
        .collect();
    w.reserve_null_symbol_index();
    let symbol_names: Vec<_> = symbols
        .iter()
        .map(|(name, _)| {
            let id = w.add_string(name.as_bytes());
            w.reserve_symbol_index(None);
            id
        })
        .collect();
    w.reserve_symtab_section_index();
    w.reserve_strtab_section_index();
    w.reserve_shstrtab_section_index();
    w.reserve_symtab();
    w.reserve_strtab();
    w.reserve_shstrtab();
    w.reserve_section_headers();

    w.write_file_header(&FileHeader {
        os_abi: 0,
        abi_version: 0,
        e_type: elf::ET_EXEC,
        e_machine: elf::EM_AARCH64,
        e_entry: entry,
        e_flags: 0,
    })
    .unwrap();
    w.write_align_program_headers();
    for (segment, &offset) in segments.iter().zip(&offsets) {
        w.write_program_header(&ProgramHeader {
            p_type: elf::PT_LOAD,
            p_flags: elf::PF_R | elf::PF_W | elf::PF_X,
            p_offset: offset as u64,
            p_vaddr: segment.vaddr,
            p_paddr: segment.paddr,
            p_filesz: segment.data.len() as u64,
            p_memsz: segment.memsz,
            p_align: 16,
        });
    }
    for segment in segments {
        w.write_align(16);
        w.write(&segment.data);
    }
    w.write_null_symbol();
    for (&(_, value), &name) in symbols.iter().zip(&symbol_names) {
        w.write_symbol(&Sym {
            name: Some(name),
            section: None,
            st_info: (elf::STB_GLOBAL << 4) | elf::STT_NOTYPE,
            st_other: 0,
            st_shndx: elf::SHN_ABS,
            st_value: value,
            st_size: 0,
        });
    }
    w.write_strtab();
    w.write_shstrtab();
    w.write_null_section_header();
    for (section, &name) in sections.iter().zip(&section_names) {
        let (sh_type, flags) = match section.kind {
            Kind::Text => (elf::SHT_PROGBITS, elf::SHF_ALLOC | elf::SHF_EXECINSTR),
            Kind::ReadOnly => (elf::SHT_PROGBITS, elf::SHF_ALLOC),
            Kind::Data => (elf::SHT_PROGBITS, elf::SHF_ALLOC | elf::SHF_WRITE),
            Kind::Bss => (elf::SHT_NOBITS, elf::SHF_ALLOC | elf::SHF_WRITE),
        };
        w.write_section_header(&SectionHeader {
            name: Some(name),
            sh_type,
            sh_flags: u64::from(flags),
            sh_addr: section.addr,
            sh_offset: 0,
            sh_size: section.size,
            sh_link: 0,
            sh_info: 0,
            sh_addralign: 1,
            sh_entsize: 0,
        });
    }
    w.write_symtab_section_header(1);
    w.write_strtab_section_header();
    w.write_shstrtab_section_header();
    buffer
}

/// The first 64 bytes of an arm64 Linux Image, as the hypervisor's entry
/// code lays them out.
pub fn image_header(text_offset: u64) -> Vec<u8> {
    let mut header = vec![0u8; 64];
    header[8..16].copy_from_slice(&text_offset.to_le_bytes());
    header[0x38..0x3c].copy_from_slice(b"ARM\x64");
    header
}
