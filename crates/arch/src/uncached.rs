//! Pages that Partita and a guest share uncached: virtual devices'
//! interface pages. Partita maps them normal non-cacheable at EL2
//! ([`crate::mmu::init`]) and forces the same in stage 2
//! ([`crate::stage2::Kind::Uncached`]), whatever the guest's own mapping,
//! so every access on either side reaches memory: a register read or
//! write is one load or store, with none of the cache maintenance that
//! [`crate::guest_memory`] pays for each copy.
//!
//! A guest writes these pages while Partita reads them, so every access is
//! volatile and no Rust reference into one is ever made.

/// Bytes in a page.
pub const PAGE_SIZE: usize = 4096;

/// One 4 KiB page of the uncached RAM.
pub struct UncachedPage {
    base: u64,
}

impl UncachedPage {
    /// The page at `base`: `None` unless it is page-aligned and lies in the
    /// RAM [`crate::mmu::init`] mapped uncached.
    pub fn new(base: u64) -> Option<UncachedPage> {
        let aligned = base.is_multiple_of(PAGE_SIZE as u64);
        (aligned && crate::mmu::is_uncached(base, PAGE_SIZE as u64)).then_some(UncachedPage { base })
    }

    /// Host-physical address of the page.
    pub fn address(&self) -> u64 {
        self.base
    }

    /// The aligned word at `offset`.
    pub fn read_u32(&self, offset: usize) -> u32 {
        let at = self.at(offset, 4);
        // SAFETY: an aligned word of the page `new` checked, identity
        // mapped at EL2.
        unsafe { core::ptr::read_volatile(at as *const u32) }
    }

    pub fn write_u32(&self, offset: usize, value: u32) {
        let at = self.at(offset, 4);
        // SAFETY: as for `read_u32`.
        unsafe { core::ptr::write_volatile(at as *mut u32, value) };
    }

    pub fn read_u8(&self, offset: usize) -> u8 {
        let at = self.at(offset, 1);
        // SAFETY: a byte of the page `new` checked.
        unsafe { core::ptr::read_volatile(at as *const u8) }
    }

    pub fn write_u8(&self, offset: usize, value: u8) {
        let at = self.at(offset, 1);
        // SAFETY: as for `read_u8`.
        unsafe { core::ptr::write_volatile(at as *mut u8, value) };
    }

    /// Copies `out.len()` bytes from `offset` on, a word at a time.
    pub fn read(&self, offset: usize, out: &mut [u8]) {
        let (words, tail) = out.split_at_mut(out.len() / 4 * 4);
        for (i, word) in words.chunks_exact_mut(4).enumerate() {
            word.copy_from_slice(&self.read_u32(offset + 4 * i).to_le_bytes());
        }
        for (i, byte) in tail.iter_mut().enumerate() {
            *byte = self.read_u8(offset + words.len() + i);
        }
    }

    /// Sets `len` bytes from `offset` on to zero.
    pub fn zero(&self, offset: usize, len: usize) {
        for i in (0..len / 4 * 4).step_by(4) {
            self.write_u32(offset + i, 0);
        }
        for i in len / 4 * 4..len {
            self.write_u8(offset + i, 0);
        }
    }

    /// The address of `size` bytes at `offset`, aligned to `size`. A bad
    /// offset is a bug of Partita's, never a guest's: the offsets are the
    /// register map's.
    fn at(&self, offset: usize, size: usize) -> u64 {
        assert!(offset.is_multiple_of(size) && offset + size <= PAGE_SIZE, "interface offset 0x{offset:x}");
        self.base + offset as u64
    }
}
