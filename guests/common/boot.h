/*
 * Assembler macros every guest's head.S starts with: the arm64 Image header,
 * the drop from EL2 to EL1, zeroing bss and installing the vectors.
 *
 * Everything here addresses memory PC-relatively (adr/adrp): QEMU's -kernel
 * loads the raw image at RAM base + 2 MiB while Partita loads the ELF at its
 * link address, and the same bytes must run in both places.
 */
#ifndef BOOT_H
#define BOOT_H
#ifdef __ASSEMBLY__

/* SCTLR_EL1 RES1 bits with the MMU, caches and alignment checks off. */
#define SCTLR_EL1_SAFE		0x30d00800
#define HCR_EL2_RW		(1 << 31)
#define ICC_SRE_EL2_SRE		(1 << 0)
#define ICC_SRE_EL2_ENABLE	(1 << 3)	/* EL1 may use ICC_SRE_EL1 */
/* EL1h with D, A, I and F masked. */
#define SPSR_EL1H_MASKED	0x3c5

/*
 * The arm64 Linux Image header (Documentation/arch/arm64/booting.rst), so
 * QEMU's -kernel treats the image as a kernel: x0 = DTB, entry at EL1 or EL2.
 * The linker script defines _image_size, bss included, so the loader leaves
 * room for it.
 */
.macro image_header entry
	b	\entry			/* code0 */
	.long	0			/* code1 */
	.quad	0			/* text_offset: load at a 2 MiB boundary */
	.quad	_image_size
	.quad	0xa			/* little-endian, 4 KiB pages, anywhere in RAM */
	.quad	0, 0, 0
	.ascii	"ARM\x64"
	.long	0
.endm

/*
 * Run at EL1 even when started at EL2 (QEMU with virtualization=on and no
 * hypervisor): the guests are meant to be EL1 guests in every setting, so
 * this only makes the native comparison runs possible. Clobbers x9.
 */
.macro enter_el1
	mrs	x9, CurrentEL
	cmp	x9, #(2 << 2)
	b.ne	90f
	mov	x9, #HCR_EL2_RW
	msr	hcr_el2, x9
	/* Leave the EL1 physical counter and timer reachable, as on bare metal. */
	mrs	x9, cnthctl_el2
	orr	x9, x9, #3
	msr	cnthctl_el2, x9
	msr	cntvoff_el2, xzr
	/*
	 * The GICv3 system registers at EL1 (ICC_SRE_EL1 included) only work
	 * once EL2 allows it; skipped if the core has no GICv3 CPU interface.
	 */
	mrs	x9, id_aa64pfr0_el1
	ubfx	x9, x9, #24, #4
	cbz	x9, 91f
	mrs	x9, icc_sre_el2
	orr	x9, x9, #ICC_SRE_EL2_SRE
	orr	x9, x9, #ICC_SRE_EL2_ENABLE
	msr	icc_sre_el2, x9
	isb
91:
	/* EL1 reads of MIDR/MPIDR return these: make them the real ones. */
	mrs	x9, midr_el1
	msr	vpidr_el2, x9
	mrs	x9, mpidr_el1
	msr	vmpidr_el2, x9
	mov	x9, #(SCTLR_EL1_SAFE & 0xffff)
	movk	x9, #(SCTLR_EL1_SAFE >> 16), lsl #16
	msr	sctlr_el1, x9
	mov	x9, #SPSR_EL1H_MASKED
	msr	spsr_el2, x9
	adr	x9, 90f
	msr	elr_el2, x9
	eret
90:
.endm

/* sp = the address of symbol; clobbers x9. */
.macro set_sp symbol
	adrp	x9, \symbol
	add	x9, x9, :lo12:\symbol
	mov	sp, x9
.endm

/* Raw images carry no bss and Partita may reuse memory: zero it ourselves. Clobbers x9, x10. */
.macro zero_bss
	adrp	x9, __bss_start
	add	x9, x9, :lo12:__bss_start
	adrp	x10, __bss_end
	add	x10, x10, :lo12:__bss_end
92:	cmp	x9, x10
	b.hs	93f
	str	xzr, [x9], #8
	b	92b
93:
.endm

.macro set_vbar vectors
	adrp	x9, \vectors
	add	x9, x9, :lo12:\vectors
	msr	vbar_el1, x9
	isb
.endm

#endif
#endif
