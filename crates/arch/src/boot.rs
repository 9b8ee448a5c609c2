//! Entry points. The image begins with an arm64 Linux Image header so that
//! any loader that boots Linux (QEMU's `-kernel`, U-Boot's `booti`) boots
//! Partita at EL2 with x0 holding the host device tree.
//!
//! The primary CPU clears .bss; every CPU then picks its stack by index,
//! installs the EL2 vectors and calls `hv_main(cpu, host_dtb)`, which the
//! hypervisor crate defines.

use crate::{MAX_CPUS, STACK_SIZE};
use partita_core::config::model::Range;

core::arch::global_asm!(
    r#"
    .section .text.head, "ax"
    .global _start
_start:
    b       primary_entry
    .long   0
    .quad   0                   // text_offset: load at a 2 MiB boundary
    .quad   0                   // image_size: filled in by `partita build`
    .quad   0xa                 // flags: little endian, 4 KiB pages, anywhere
    .quad   0, 0, 0
    .ascii  "ARM\x64"
    .long   0

primary_entry:
    mov     x19, x0
    mrs     x1, CurrentEL
    cmp     x1, #(2 << 2)
    b.ne    park
    adrp    x1, __bss_start
    add     x1, x1, :lo12:__bss_start
    adrp    x2, __bss_end
    add     x2, x2, :lo12:__bss_end
1:  cmp     x1, x2
    b.hs    2f
    stp     xzr, xzr, [x1], #16
    b       1b
2:  mov     x0, #0
    b       common_entry

    .global secondary_entry
secondary_entry:
    mov     x19, #0
    cmp     x0, #{max_cpus}
    b.hs    park

common_entry:
    msr     spsel, #1
    msr     tpidr_el2, x0
    adrp    x1, __stacks
    add     x1, x1, :lo12:__stacks
    add     x2, x0, #1
    mov     x3, #{stack_size}
    madd    x1, x2, x3, x1
    mov     sp, x1
    adrp    x1, el2_vectors
    add     x1, x1, :lo12:el2_vectors
    msr     vbar_el2, x1
    isb
    mov     x1, x19
    bl      hv_main
park:
    wfe
    b       park

    .pushsection .bss.stacks, "aw", %nobits
    .balign 16
    .global __stacks
__stacks:
    .space  {stacks_bytes}
    .popsection
    "#,
    max_cpus = const MAX_CPUS,
    stack_size = const STACK_SIZE,
    stacks_bytes = const MAX_CPUS * STACK_SIZE,
);

unsafe extern "C" {
    fn secondary_entry();
}

/// Physical address where secondary CPUs start (the EL2 map is an identity
/// map, so the link address is the physical address).
pub fn secondary_entry_address() -> u64 {
    secondary_entry as *const () as u64
}

unsafe extern "C" {
    static __image_start: u8;
    static __payload_start: u8;
}

/// Where the image was linked (and, identity mapped, where it runs).
pub fn image_start() -> u64 {
    core::ptr::addr_of!(__image_start) as u64
}

/// The boot payload `partita build` appended to the image.
pub fn payload_start() -> u64 {
    core::ptr::addr_of!(__payload_start) as u64
}

/// The payload as a byte slice of `len` bytes.
///
/// The payload lies in hypervisor memory after .bss, which nothing else
/// writes; `len` comes from the payload's own header, bounded by the caller
/// to the hypervisor's memory.
pub fn payload(len: usize) -> &'static [u8] {
    // SAFETY: the range starts at the linker-defined payload address, is
    // bounded by the caller to hypervisor memory, is identity-mapped and
    // never written after boot.
    unsafe { core::slice::from_raw_parts(payload_start() as *const u8, len) }
}

/// The image store: the partitions' pristine images, which the boot loader
/// put in RAM beside Partita.
///
/// Only for a range the configuration validator has accepted: inside
/// platform RAM (identity-mapped by `mmu::init`) and apart from Partita's
/// memory and every partition's, so that nothing writes it while Partita
/// reads it.
pub fn image_store(store: Range) -> &'static [u8] {
    // SAFETY: per the contract above, the range is mapped, readable and
    // never written after boot, so a shared slice over it stays valid.
    unsafe { core::slice::from_raw_parts(store.base as *const u8, store.size as usize) }
}
