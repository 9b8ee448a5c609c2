/*
 * The whole FP/SIMD state in one block: q0-q31 (64 words), then FPCR and
 * FPSR. C is built with general registers only, so nothing between
 * fp_load and fp_store touches these registers but the hypervisor.
 */
	.text
	.arch_extension fp
	.arch_extension simd

	/* fp_load(const u64 *block): four vector registers a load. */
	.global fp_load
fp_load:
	ld1	{v0.2d, v1.2d, v2.2d, v3.2d}, [x0], #64
	ld1	{v4.2d, v5.2d, v6.2d, v7.2d}, [x0], #64
	ld1	{v8.2d, v9.2d, v10.2d, v11.2d}, [x0], #64
	ld1	{v12.2d, v13.2d, v14.2d, v15.2d}, [x0], #64
	ld1	{v16.2d, v17.2d, v18.2d, v19.2d}, [x0], #64
	ld1	{v20.2d, v21.2d, v22.2d, v23.2d}, [x0], #64
	ld1	{v24.2d, v25.2d, v26.2d, v27.2d}, [x0], #64
	ld1	{v28.2d, v29.2d, v30.2d, v31.2d}, [x0], #64
	ldp	x1, x2, [x0]
	msr	fpcr, x1
	msr	fpsr, x2
	ret

	/* fp_store(u64 *block) */
	.global fp_store
fp_store:
	st1	{v0.2d, v1.2d, v2.2d, v3.2d}, [x0], #64
	st1	{v4.2d, v5.2d, v6.2d, v7.2d}, [x0], #64
	st1	{v8.2d, v9.2d, v10.2d, v11.2d}, [x0], #64
	st1	{v12.2d, v13.2d, v14.2d, v15.2d}, [x0], #64
	st1	{v16.2d, v17.2d, v18.2d, v19.2d}, [x0], #64
	st1	{v20.2d, v21.2d, v22.2d, v23.2d}, [x0], #64
	st1	{v24.2d, v25.2d, v26.2d, v27.2d}, [x0], #64
	st1	{v28.2d, v29.2d, v30.2d, v31.2d}, [x0], #64
	mrs	x1, fpcr
	mrs	x2, fpsr
	stp	x1, x2, [x0]
	ret
