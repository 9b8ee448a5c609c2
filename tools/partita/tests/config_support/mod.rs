//! Shared by the configuration tests: image files written on the fly, so the
//! tests depend neither on the guest build nor on committed binaries.

use std::path::{Path, PathBuf};

/// `wfe; b .-4`: a guest that idles forever, in case anything ever runs it.
const CODE: [u8; 8] = [0x5f, 0x20, 0x03, 0xd5, 0xff, 0xff, 0xff, 0x17];
const EHDR_SIZE: u16 = 64;
const PHDR_SIZE: u16 = 56;
const EM_AARCH64: u16 = 183;

/// A minimal ELF64 AArch64 executable: one PT_LOAD of `memsz` bytes at
/// `paddr`, entry at `paddr`.
pub fn aarch64_elf(paddr: u64, memsz: u64) -> Vec<u8> {
    let code_offset = u64::from(EHDR_SIZE + PHDR_SIZE);
    let mut elf = Vec::new();
    elf.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    elf.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    elf.extend_from_slice(&EM_AARCH64.to_le_bytes());
    elf.extend_from_slice(&1u32.to_le_bytes());
    elf.extend_from_slice(&paddr.to_le_bytes()); // e_entry
    elf.extend_from_slice(&u64::from(EHDR_SIZE).to_le_bytes()); // e_phoff
    elf.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    elf.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    for half in [EHDR_SIZE, PHDR_SIZE, 1, 64, 0, 0] {
        elf.extend_from_slice(&half.to_le_bytes()); // ehsize, phentsize, phnum, shentsize, shnum, shstrndx
    }
    elf.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    elf.extend_from_slice(&5u32.to_le_bytes()); // PF_R | PF_X
    for word in [code_offset, paddr, paddr, CODE.len() as u64, memsz, 8] {
        elf.extend_from_slice(&word.to_le_bytes()); // offset, vaddr, paddr, filesz, memsz, align
    }
    elf.extend_from_slice(&CODE);
    elf
}

/// The image files every fixture may name, relative to its own folder.
pub fn write_images(dir: &Path) {
    let files: [(&str, Vec<u8>); 5] = [
        ("guest.elf", aarch64_elf(0x4000_0000, 0x1000)),
        ("big.elf", aarch64_elf(0x4000_0000, 32 << 20)),
        ("not-elf.elf", b"#!/bin/sh\necho this is not an ELF file\n".to_vec()),
        ("raw.bin", vec![0xaa; 0x2000]),
        ("Image", linux_image(48 << 20)),
    ];
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// An arm64 Linux Image header asking for `image_size` bytes once running.
pub fn linux_image(image_size: u64) -> Vec<u8> {
    let mut image = vec![0u8; 0x1000];
    image[16..24].copy_from_slice(&image_size.to_le_bytes());
    image[0x38..0x3c].copy_from_slice(b"ARM\x64");
    image
}

/// A fresh folder of its own for one test, with the image files in it.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("partita-config").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    write_images(&dir);
    dir
}
