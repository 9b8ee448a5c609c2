/*
 * A write to ICC_SGI1R_EL1 from any register. A hypervisor that answers
 * the trapped write must read its value from whichever register the MSR
 * names, x0-x30 or xzr, and give every one back as it was: a compiler
 * picks only a few, so the SGI probe (irqtest.c) goes through all of them
 * here.
 */

	.text

/*
 * u64 sgi1r_write_rt(u64 value, u64 rt): writes value from register x<rt>
 * (rt 31: xzr, for which value must be 0) after a DSB, as a send must.
 * Returns 0 if that register still held the value after the MSR, 1 if
 * not.
 */
	.globl	sgi1r_write_rt
sgi1r_write_rt:
	stp	x29, x30, [sp, #-112]!
	stp	x19, x20, [sp, #16]
	stp	x21, x22, [sp, #32]
	stp	x23, x24, [sp, #48]
	stp	x25, x26, [sp, #64]
	stp	x27, x28, [sp, #80]
	str	x0, [sp, #96]
	and	x1, x1, #31
	adr	x9, 1f
	add	x9, x9, x1, lsl #4
	dsb	sy
	br	x9
	/* 16 bytes a register: copy in, write, copy out, leave. */
	.balign	16
1:
	.irp	n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
	mov	x\n, x0
	msr	icc_sgi1r_el1, x\n
	mov	x9, x\n
	b	2f
	.endr
	msr	icc_sgi1r_el1, xzr
	mov	x9, xzr
2:
	ldr	x10, [sp, #96]
	cmp	x9, x10
	cset	x0, ne
	isb
	ldp	x19, x20, [sp, #16]
	ldp	x21, x22, [sp, #32]
	ldp	x23, x24, [sp, #48]
	ldp	x25, x26, [sp, #64]
	ldp	x27, x28, [sp, #80]
	ldp	x29, x30, [sp], #112
	ret
