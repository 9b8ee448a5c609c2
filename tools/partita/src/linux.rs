//! The arm64 Linux boot protocol (the kernel's `Documentation/arch/arm64/
//! booting.rst`): where a kernel `Image` and its initrd go in a partition's
//! RAM, read from the Image header.
//!
//! The kernel goes `text_offset` bytes above the first 2 MiB boundary of
//! the partition's first memory region and needs `image_size` bytes there
//! (its bss too); the initrd goes at the top of that region, just below the
//! device tree, where a large kernel cannot reach it. Both are pure
//! functions of the region and the files, so `check` and `build` agree.

use crate::devicetree::DTB_WINDOW;
use partita_core::config::model::Range;

/// Image header fields, by byte offset (the hypervisor's own image carries
/// the same header, which `build` patches).
pub const TEXT_OFFSET: usize = 8;
pub const IMAGE_SIZE: usize = 16;
const FLAGS: usize = 24;
pub const MAGIC_OFFSET: usize = 0x38;
pub const HEADER_LEN: usize = 64;
pub const MAGIC: &[u8; 4] = b"ARM\x64";
/// Flags bit 0: the kernel is big-endian.
const BIG_ENDIAN: u64 = 1;
const KERNEL_ALIGN: u64 = 2 << 20;
const PAGE: u64 = 4096;

/// What the Image header says about placing the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub text_offset: u64,
    /// Bytes the kernel occupies once running, bss included.
    pub image_size: u64,
}

/// Reads and checks the header at the start of an arm64 `Image`.
pub fn header(image: &[u8]) -> Result<Header, String> {
    if image.len() < HEADER_LEN || &image[MAGIC_OFFSET..MAGIC_OFFSET + 4] != MAGIC {
        return Err("the kernel is not an arm64 Image (no \"ARM\\x64\" magic at 0x38); a compressed \
                    vmlinuz must be decompressed first"
            .into());
    }
    let field = |at: usize| u64::from_le_bytes(image[at..at + 8].try_into().expect("8 bytes"));
    let (text_offset, image_size, flags) = (field(TEXT_OFFSET), field(IMAGE_SIZE), field(FLAGS));
    if image_size == 0 {
        return Err("the Image header gives no image_size (a kernel older than 3.17); \
                    Partita cannot tell how much memory it needs"
            .into());
    }
    if flags & BIG_ENDIAN != 0 {
        return Err("the kernel is big-endian; Partita runs little-endian guests".into());
    }
    if text_offset % PAGE != 0 || text_offset >= KERNEL_ALIGN {
        return Err(format!("the Image header's text_offset {text_offset:#x} is not a page offset within 2 MiB"));
    }
    Ok(Header { text_offset, image_size: image_size.max(image.len() as u64) })
}

/// Where the kernel runs from, in a partition whose first memory region is
/// `first` (guest-physical): its load address and the bytes it claims.
pub fn kernel_range(first: Range, header: Header) -> Result<Range, String> {
    let base = first.base.checked_next_multiple_of(KERNEL_ALIGN).ok_or("memory[0] ends the address space")?;
    let kernel = Range::new(base + header.text_offset, header.image_size);
    let usable = Range::new(first.base, first.size.saturating_sub(DTB_WINDOW));
    if !usable.covers(&kernel) {
        return Err(format!(
            "the kernel needs {:#x} bytes at {:#x} (image_size from its header, at the first 2 MiB boundary \
             of memory[0]), more than memory[0] holds below the device tree",
            kernel.size, kernel.base
        ));
    }
    Ok(kernel)
}

/// Where an initrd of `len` bytes goes: page aligned, ending at the device
/// tree window at the top of memory[0] (`first`).
pub fn initrd_range(first: Range, len: u64) -> Result<Range, String> {
    let top = first.end().saturating_sub(DTB_WINDOW);
    let base = top.checked_sub(len).map(|base| base & !(PAGE - 1)).filter(|&base| base >= first.base);
    match base {
        Some(base) if len > 0 => Ok(Range::new(base, len)),
        Some(_) => Err("the initrd is empty".into()),
        None => Err(format!("the initrd ({len:#x} bytes) is larger than memory[0] below the device tree")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(text_offset: u64, image_size: u64, flags: u64) -> Vec<u8> {
        let mut bytes = vec![0u8; 4096];
        bytes[TEXT_OFFSET..TEXT_OFFSET + 8].copy_from_slice(&text_offset.to_le_bytes());
        bytes[IMAGE_SIZE..IMAGE_SIZE + 8].copy_from_slice(&image_size.to_le_bytes());
        bytes[FLAGS..FLAGS + 8].copy_from_slice(&flags.to_le_bytes());
        bytes[MAGIC_OFFSET..MAGIC_OFFSET + 4].copy_from_slice(MAGIC);
        bytes
    }

    fn partition(ipa: u64, size: u64) -> Range {
        Range::new(ipa, size)
    }

    #[test]
    fn the_header_gives_offset_and_size() {
        assert_eq!(header(&image(0, 0x260_0000, 0xa)), Ok(Header { text_offset: 0, image_size: 0x260_0000 }));
        assert!(header(&image(0, 0, 0)).unwrap_err().contains("image_size"));
        assert!(header(&image(0, 0x1000, 1)).unwrap_err().contains("big-endian"));
        assert!(header(&image(0x123, 0x1000, 0)).unwrap_err().contains("text_offset"));
        let mut gzip = image(0, 0x1000, 0);
        gzip[MAGIC_OFFSET] = 0;
        assert!(header(&gzip).unwrap_err().contains("not an arm64 Image"));
        assert!(header(&[0u8; 16]).is_err());
    }

    #[test]
    fn the_kernel_goes_to_the_first_2_mib_boundary_plus_text_offset() {
        let linux = partition(0x4010_0000, 0x1000_0000);
        let at = kernel_range(linux, Header { text_offset: 0x8_0000, image_size: 0x100_0000 }).unwrap();
        assert_eq!(at, Range::new(0x4028_0000, 0x100_0000));
        let small = partition(0x4000_0000, 0x100_0000);
        assert!(kernel_range(small, Header { text_offset: 0, image_size: 0x100_0000 }).is_err(), "the DTB");
    }

    #[test]
    fn the_initrd_ends_below_the_device_tree_page_aligned() {
        let linux = partition(0x4000_0000, 0x1000_0000);
        let at = initrd_range(linux, 0x1234).unwrap();
        assert_eq!(at.base, (0x5000_0000 - DTB_WINDOW - 0x1234) & !0xfff);
        assert!(at.end() <= 0x5000_0000 - DTB_WINDOW);
        assert!(initrd_range(linux, 0x1000_0000).is_err());
        assert!(initrd_range(linux, 0).is_err());
    }
}
