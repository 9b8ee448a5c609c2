/*
 * The RTOS's entry, vectors and context switch. Tasks run at EL1 on SP_EL1,
 * each on its own stack. An IRQ or SVC saves the interrupted task's
 * caller-saved registers (and ELR/SPSR) on that task's stack, runs the
 * handler on the interrupt stack, then calls rtos_preempt() back on the task
 * stack: a switch made there parks the task inside its own exception frame,
 * and switching back to it later finishes the eret. The callee-saved
 * registers need no saving on entry, since C preserves them and ctx_switch
 * saves them whenever a task is left.
 */
#include "boot.h"

#define BOOT_STACK_SIZE		8192
#define IRQ_STACK_SIZE		8192
#define FRAME_SIZE		176	/* x0-x18, x30, ELR, SPSR */
#define CTX_SIZE		96	/* x19-x30, as CTX_FRAME_WORDS in port.h */

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
	bl	rtos_boot
	/* fall through */

	.globl	halt
halt:
	msr	daifset, #0xf
	wfi
	b	halt

/* void ctx_switch(uint64_t *save, uint64_t next_sp) */
	.globl	ctx_switch
ctx_switch:
	sub	sp, sp, #CTX_SIZE
	stp	x19, x20, [sp, #0]
	stp	x21, x22, [sp, #16]
	stp	x23, x24, [sp, #32]
	stp	x25, x26, [sp, #48]
	stp	x27, x28, [sp, #64]
	stp	x29, x30, [sp, #80]
	mov	x9, sp
	str	x9, [x0]
	mov	x0, x1
	/* fall through */

/* void ctx_start(uint64_t sp): resume a context ctx_switch saved. */
	.globl	ctx_start
ctx_start:
	mov	sp, x0
	ldp	x19, x20, [sp, #0]
	ldp	x21, x22, [sp, #16]
	ldp	x23, x24, [sp, #32]
	ldp	x25, x26, [sp, #48]
	ldp	x27, x28, [sp, #64]
	ldp	x29, x30, [sp, #80]
	add	sp, sp, #CTX_SIZE
	ret

/* A new task's made-up context returns here with x19 = the task. */
	.globl	task_boot
task_boot:
	mov	x0, x19
	bl	task_run
	b	halt

.macro save_frame
	sub	sp, sp, #FRAME_SIZE
	stp	x0, x1, [sp, #0]
	stp	x2, x3, [sp, #16]
	stp	x4, x5, [sp, #32]
	stp	x6, x7, [sp, #48]
	stp	x8, x9, [sp, #64]
	stp	x10, x11, [sp, #80]
	stp	x12, x13, [sp, #96]
	stp	x14, x15, [sp, #112]
	stp	x16, x17, [sp, #128]
	stp	x18, x30, [sp, #144]
	mrs	x0, elr_el1
	mrs	x1, spsr_el1
	stp	x0, x1, [sp, #160]
.endm

.macro restore_frame
	ldp	x0, x1, [sp, #160]
	msr	elr_el1, x0
	msr	spsr_el1, x1
	ldp	x2, x3, [sp, #16]
	ldp	x4, x5, [sp, #32]
	ldp	x6, x7, [sp, #48]
	ldp	x8, x9, [sp, #64]
	ldp	x10, x11, [sp, #80]
	ldp	x12, x13, [sp, #96]
	ldp	x14, x15, [sp, #112]
	ldp	x16, x17, [sp, #128]
	ldp	x18, x30, [sp, #144]
	ldp	x0, x1, [sp, #0]
	add	sp, sp, #FRAME_SIZE
	eret
.endm

/*
 * Calls handler on the interrupt stack with x0-x2 as they are, then
 * rtos_preempt on the task stack. The task's sp waits on the interrupt
 * stack, which nothing else uses while IRQs stay masked.
 */
.macro handle handler
	mov	x9, sp
	adrp	x10, irq_stack_top
	add	x10, x10, :lo12:irq_stack_top
	mov	sp, x10
	str	x9, [sp, #-16]!
	bl	\handler
	ldr	x9, [sp], #16
	mov	sp, x9
	bl	rtos_preempt
	restore_frame
.endm

irq_entry:
	save_frame
	handle	rtos_irq_dispatch

sync_entry:
	save_frame
	mrs	x0, esr_el1
	mrs	x1, elr_el1
	mrs	x2, far_el1
	mov	x3, sp
	handle	rtos_sync_dispatch

unexpected_entry:
	save_frame
	mrs	x0, esr_el1
	mrs	x1, elr_el1
	mrs	x2, far_el1
	mov	x3, sp
	set_sp	irq_stack_top
	bl	rtos_fatal
	b	halt

/*
 * Everything runs at EL1 on SP_EL1: only the "current EL, SPx" synchronous
 * and IRQ slots are expected; any other exception is reported as fatal.
 */
#define VECTOR_SYNC_EL1_SPX	4
#define VECTOR_IRQ_EL1_SPX	5

	.balign	2048
vectors:
	.irp	slot, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	.balign	128
	.if	\slot == VECTOR_SYNC_EL1_SPX
	b	sync_entry
	.elseif	\slot == VECTOR_IRQ_EL1_SPX
	b	irq_entry
	.else
	b	unexpected_entry
	.endif
	.endr

	.section .bss.stacks, "aw", %nobits
	.balign	16
boot_stack:
	.space	BOOT_STACK_SIZE
boot_stack_top:
irq_stack:
	.space	IRQ_STACK_SIZE
irq_stack_top:
