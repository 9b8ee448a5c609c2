/*
 * Entry points, stacks and the EL1 vector table.
 *
 * Everything here addresses memory PC-relatively (adr/adrp): QEMU's -kernel
 * loads the raw image at RAM base + 2 MiB while Partita loads the ELF at its
 * link address, and the same bytes must run in both places.
 */

#define MAX_CPUS		8
#define BOOT_STACK_SIZE		16384
#define STACK_SHIFT		13	/* 8 KiB per secondary: a few lines and shallow interrupts */

/* SCTLR_EL1 RES1 bits with the MMU, caches and alignment checks off. */
#define SCTLR_EL1_SAFE		0x30d00800
#define HCR_EL2_RW		(1 << 31)
#define ICC_SRE_EL2_SRE		(1 << 0)
#define ICC_SRE_EL2_ENABLE	(1 << 3)	/* EL1 may use ICC_SRE_EL1 */
/* EL1h with D, A, I and F masked. */
#define SPSR_EL1H_MASKED	0x3c5

/*
 * Run at EL1 even when started at EL2 (QEMU with virtualization=on and no
 * hypervisor): the guest is meant to be an EL1 guest in every setting, so
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

.macro set_vbar
	adrp	x9, vectors
	add	x9, x9, :lo12:vectors
	msr	vbar_el1, x9
	isb
.endm

/*
 * The arm64 Linux Image header (Documentation/arch/arm64/booting.rst), so
 * QEMU's -kernel treats this as a kernel: x0 = DTB, entry at EL1.
 */
	.section .text.head, "ax"
	.globl	_start
_start:
	b	primary_entry		/* code0 */
	.long	0			/* code1 */
	.quad	0			/* text_offset: load at a 2 MiB boundary */
	.quad	_image_size		/* includes bss, so the loader leaves room */
	.quad	0xa			/* little-endian, 4 KiB pages, anywhere in RAM */
	.quad	0, 0, 0
	.ascii	"ARM\x64"
	.long	0

	.text
primary_entry:
	msr	daifset, #0xf
	mov	x19, x0			/* the DTB address survives the calls below */
	enter_el1
	adrp	x9, boot_stack_top
	add	x9, x9, :lo12:boot_stack_top
	mov	sp, x9
	/* Raw images carry no bss and Partita may reuse memory: zero it ourselves. */
	adrp	x9, __bss_start
	add	x9, x9, :lo12:__bss_start
	adrp	x10, __bss_end
	add	x10, x10, :lo12:__bss_end
1:	cmp	x9, x10
	b.hs	2f
	str	xzr, [x9], #8
	b	1b
2:	set_vbar
	mov	x0, x19
	bl	guest_main
	b	halt

/* PSCI CPU_ON lands here with x0 = the context id, which is the cpu index. */
	.globl	secondary_entry
secondary_entry:
	msr	daifset, #0xf
	mov	x19, x0
	enter_el1
	cmp	x19, #MAX_CPUS
	b.hs	halt
	adrp	x9, cpu_stacks
	add	x9, x9, :lo12:cpu_stacks
	add	x10, x19, #1
	add	x9, x9, x10, lsl #STACK_SHIFT
	mov	sp, x9
	set_vbar
	mov	x0, x19
	bl	secondary_main
	/* fall through */

	.globl	halt
halt:
	wfi
	b	halt

/*
 * An IRQ from EL1 (on SP_EL1, as this guest always runs) goes to the
 * interrupt path; every other exception is fatal for this guest: report it
 * once and stop.
 */
#define VECTOR_IRQ_EL1_SPX	5

	.balign	2048
vectors:
	.irp	slot, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	.balign	128
	.if	\slot == VECTOR_IRQ_EL1_SPX
	b	irq_entry
	.else
	b	exception_entry
	.endif
	.endr

/*
 * Only the registers a C call may clobber need saving: the handler runs with
 * interrupts masked and takes no exception, so ELR/SPSR stay intact, and it
 * is built with general registers only. The counter is read first, before
 * the rest of the saving, so the latency probes see as little of us as
 * possible (exception entry is context-synchronising: no isb needed).
 */
irq_entry:
	stp	x0, x1, [sp, #-160]!
	mrs	x0, cntvct_el0
	stp	x2, x3, [sp, #16]
	stp	x4, x5, [sp, #32]
	stp	x6, x7, [sp, #48]
	stp	x8, x9, [sp, #64]
	stp	x10, x11, [sp, #80]
	stp	x12, x13, [sp, #96]
	stp	x14, x15, [sp, #112]
	stp	x16, x17, [sp, #128]
	stp	x18, x30, [sp, #144]
	bl	irq_handler
	ldp	x2, x3, [sp, #16]
	ldp	x4, x5, [sp, #32]
	ldp	x6, x7, [sp, #48]
	ldp	x8, x9, [sp, #64]
	ldp	x10, x11, [sp, #80]
	ldp	x12, x13, [sp, #96]
	ldp	x14, x15, [sp, #112]
	ldp	x16, x17, [sp, #128]
	ldp	x18, x30, [sp, #144]
	ldp	x0, x1, [sp], #160
	eret

exception_entry:
	mrs	x0, esr_el1
	mrs	x1, elr_el1
	mrs	x2, far_el1
	bl	exception_report
	b	halt

	.section .bss.stacks, "aw", %nobits
	.balign	16
boot_stack:
	.space	BOOT_STACK_SIZE
boot_stack_top:
cpu_stacks:
	.space	MAX_CPUS << STACK_SHIFT
