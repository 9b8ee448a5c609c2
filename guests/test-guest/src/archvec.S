/*
 * The architecture tests' own EL1 vector table and the instructions they
 * fault on (arch.c). Every synchronous exception, from any of the four
 * vectors, goes to arch_sync() in C with a frame it may change (the
 * registers, ELR, SPSR) and the vector's offset; interrupts take the usual
 * path and anything else is reported as in head.S.
 */

/* x0..x30, ELR, SPSR, ESR, FAR: struct arch_frame in arch.c. */
#define FRAME		288
#define FRAME_ELR	248
#define FRAME_ESR	264

	.macro	sync_slot offset
	.balign	128
	sub	sp, sp, #FRAME
	stp	x0, x1, [sp]
	mov	x1, #\offset
	b	arch_sync_entry
	.endm

	.macro	irq_slot
	.balign	128
	b	irq_entry
	.endm

	.macro	other_slot
	.balign	128
	b	exception_entry
	.endm

	.text
	.balign	2048
	.globl	arch_vectors
arch_vectors:
	sync_slot 0x000
	irq_slot
	other_slot
	other_slot
	sync_slot 0x200
	irq_slot
	other_slot
	other_slot
	sync_slot 0x400
	irq_slot
	other_slot
	other_slot
	sync_slot 0x600
	irq_slot
	other_slot
	other_slot

/* x1: the vector offset; x0 and x1 are saved already. */
arch_sync_entry:
	stp	x2, x3, [sp, #16 * 1]
	stp	x4, x5, [sp, #16 * 2]
	stp	x6, x7, [sp, #16 * 3]
	stp	x8, x9, [sp, #16 * 4]
	stp	x10, x11, [sp, #16 * 5]
	stp	x12, x13, [sp, #16 * 6]
	stp	x14, x15, [sp, #16 * 7]
	stp	x16, x17, [sp, #16 * 8]
	stp	x18, x19, [sp, #16 * 9]
	stp	x20, x21, [sp, #16 * 10]
	stp	x22, x23, [sp, #16 * 11]
	stp	x24, x25, [sp, #16 * 12]
	stp	x26, x27, [sp, #16 * 13]
	stp	x28, x29, [sp, #16 * 14]
	str	x30, [sp, #16 * 15]
	mrs	x2, elr_el1
	mrs	x3, spsr_el1
	stp	x2, x3, [sp, #FRAME_ELR]
	mrs	x2, esr_el1
	mrs	x3, far_el1
	stp	x2, x3, [sp, #FRAME_ESR]
	mov	x0, sp
	bl	arch_sync
	ldp	x2, x3, [sp, #FRAME_ELR]
	msr	elr_el1, x2
	msr	spsr_el1, x3
	ldp	x2, x3, [sp, #16 * 1]
	ldp	x4, x5, [sp, #16 * 2]
	ldp	x6, x7, [sp, #16 * 3]
	ldp	x8, x9, [sp, #16 * 4]
	ldp	x10, x11, [sp, #16 * 5]
	ldp	x12, x13, [sp, #16 * 6]
	ldp	x14, x15, [sp, #16 * 7]
	ldp	x16, x17, [sp, #16 * 8]
	ldp	x18, x19, [sp, #16 * 9]
	ldp	x20, x21, [sp, #16 * 10]
	ldp	x22, x23, [sp, #16 * 11]
	ldp	x24, x25, [sp, #16 * 12]
	ldp	x26, x27, [sp, #16 * 13]
	ldp	x28, x29, [sp, #16 * 14]
	ldr	x30, [sp, #16 * 15]
	ldp	x0, x1, [sp]
	add	sp, sp, #FRAME
	eret

/* u64 arch_load(u64 addr): one load, at arch_load_insn. */
	.globl	arch_load, arch_load_insn
arch_load:
arch_load_insn:
	ldr	x0, [x0]
	ret

/* void arch_store(u64 addr, u32 value): one store; a handler resumes past it. */
	.globl	arch_store
arch_store:
	str	w1, [x0]
	ret

/* void arch_branch(u64 addr): calls addr; a handler resumes at x30. */
	.globl	arch_branch
arch_branch:
	stp	x29, x30, [sp, #-16]!
	blr	x0
	ldp	x29, x30, [sp], #16
	ret

/* u64 arch_load_sp0(u64 addr): the load at EL1 on SP_EL0 (EL1t). */
	.globl	arch_load_sp0, arch_load_sp0_insn
arch_load_sp0:
	mov	x9, sp
	msr	sp_el0, x9
	msr	spsel, #0
arch_load_sp0_insn:
	ldr	x0, [x0]
	msr	spsel, #1
	ret

/*
 * void arch_load_el0(u64 addr): the load at EL0. Its handler resumes at
 * arch_el0_back at EL1, with D, A, I and F masked; the caller's mask
 * comes back from x11, which the handler leaves as it was.
 */
	.globl	arch_load_el0, arch_el0_insn, arch_el0_back
arch_load_el0:
	mrs	x11, daif
	mov	x9, sp
	msr	sp_el0, x9
	adr	x10, arch_el0_insn
	msr	elr_el1, x10
	mov	x10, #0x3c0		/* EL0t, D, A, I, F masked */
	msr	spsr_el1, x10
	eret
arch_el0_insn:
	ldr	x0, [x0]
1:	b	1b			/* never: the handler takes it back to EL1 */
arch_el0_back:
	msr	daif, x11
	ret

/* An implementation-defined register (CPUACTLR_EL1 on a Cortex-A72). */
	.globl	arch_read_impdef, arch_read_impdef_insn
arch_read_impdef:
arch_read_impdef_insn:
	mrs	x0, s3_1_c15_c2_0
	ret

/* An encoding no architecture version allocates. */
	.globl	arch_read_unknown, arch_read_unknown_insn
arch_read_unknown:
arch_read_unknown_insn:
	mrs	x0, s3_2_c3_c0_0
	ret

/* The EL1 physical timer, which a hypervisor may keep for itself. */
	.globl	arch_read_cntp, arch_read_cntp_insn
arch_read_cntp:
arch_read_cntp_insn:
	mrs	x0, cntp_ctl_el0
	ret

	.globl	arch_read_pmcr, arch_read_pmcr_insn
arch_read_pmcr:
arch_read_pmcr_insn:
	mrs	x0, pmcr_el0
	ret

/* A function for a hardware breakpoint: returns 42. */
	.globl	arch_bp_target
	.balign	16
arch_bp_target:
	mov	x0, #42
	ret

/* What arch=debug-keep's breakpoint watches: returns 7. */
	.globl	arch_probe
	.balign	16
arch_probe:
	mov	x0, #7
	ret

/*
 * void arch_step_run(void): enters arch_step_code with PSTATE.SS set and
 * D clear, so that with MDSCR_EL1.SS and KDE set the first instruction
 * there completes and a software-step exception follows, and so on while
 * the handler sets SPSR.SS again. It returns with A, I and F masked and
 * D clear; the caller restores its own mask.
 */
	.globl	arch_step_run, arch_step_code
arch_step_run:
	adr	x10, arch_step_code
	msr	elr_el1, x10
	mov	x10, #0x1c5		/* EL1h, A, I, F masked, D clear */
	movk	x10, #0x20, lsl #16	/* SS */
	msr	spsr_el1, x10
	eret
	.balign	16
arch_step_code:
	mov	x0, #1
	add	x0, x0, #1
	add	x0, x0, #1
	add	x0, x0, #1
	add	x0, x0, #1
	ret
