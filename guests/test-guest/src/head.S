/*
 * Entry points, stacks and the EL1 vector table of the test guest; the
 * boot steps it shares with the other guests are macros in common/boot.h.
 */

#include "boot.h"

#define MAX_CPUS		8
#define BOOT_STACK_SIZE		16384
#define STACK_SHIFT		13	/* 8 KiB per secondary: a few lines and shallow interrupts */

	.section .text.head, "ax"
	.globl	_start
_start:
	image_header primary_entry

	.text
primary_entry:
	msr	daifset, #0xf
	mov	x19, x0			/* the DTB address survives the calls below */
	enter_el1
	set_sp	boot_stack_top
	zero_bss
	set_vbar vectors
	mov	x0, x19
	bl	guest_main
	b	halt

/*
 * PSCI CPU_ON lands here with x0 = the context id: the cpu index in bits
 * 0..7, and a tag above them that secondary_main reads (cpu-on-race).
 */
	.globl	secondary_entry
secondary_entry:
	msr	daifset, #0xf
	mov	x19, x0
	enter_el1
	and	x10, x19, #0xff
	cmp	x10, #MAX_CPUS
	b.hs	halt
	adrp	x9, cpu_stacks
	add	x9, x9, :lo12:cpu_stacks
	add	x10, x10, #1
	add	x9, x9, x10, lsl #STACK_SHIFT
	mov	sp, x9
	set_vbar vectors
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
	.globl	irq_entry
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

	.globl	exception_entry
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
