/*
 * acc=ADDR: the native programming model of a virtual device. The guest
 * simply writes the interface page's registers; its first write while the
 * device is not connected stalls until Partita has found it a PRR, then
 * goes through. Each job's output is hashed (FNV-1a, 64-bit) so the host
 * can check it against its own computation of the same input, which both
 * make with the same xorshift64* generator from the job's seed.
 *
 *   acc-fn=qam16|qam64|fft512|fft1024   what the device computes
 *   acc-frames=N   frames per job (1)    acc-jobs=J   jobs (1)
 *   acc-cmd=C      frame length, CMD (0: Ker-ONE's)
 *   acc-seed=S     job j's input comes from seed S + j (1)
 *   acc-bad=1      the input lies outside the partition: ERR_DMA expected
 */
#include "guest.h"
#include "console.h"
#include "partita.h"

#define ACC_IN_MAX (256u << 10)
#define ACC_OUT_MAX (1024u << 10)
/* Ker-ONE's frame: 18,800 bits into the mappers, 4,700 samples into the FFTs. */
#define FRAME_BITS 18800
#define FRAME_SAMPLES 4700
/* A job not over after this long has failed. */
#define ACC_TIMEOUT_MS 5000

/*
 * The buffers sit in the upper half of the first RAM region, past the
 * image and its stack: in .bss they would make every boot of the test
 * guest zero them, and so change the timing of tests that never use them.
 */
static u8 *acc_in, *acc_out;

static u64 rng_next(u64 *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Bits per symbol of a mapper; 0 for an FFT. */
static u32 qam_bits(enum acc_fn fn)
{
	return fn == ACC_QAM16 ? 4 : fn == ACC_QAM64 ? 6 : 0;
}

static u32 fft_points(enum acc_fn fn)
{
	return fn == ACC_FFT512 ? 512 : 1024;
}

/* Bytes of one frame's input and output. */
static void frame_bytes(enum acc_fn fn, u32 cmd, u32 *in, u32 *out)
{
	if (qam_bits(fn)) {
		u32 bits = cmd ? cmd : FRAME_BITS;

		*in = (bits + 7) / 8;
		*out = bits / qam_bits(fn) * 4;
	} else {
		u32 samples = cmd ? cmd : FRAME_SAMPLES, n = fft_points(fn);

		*in = samples * 4;
		*out = (samples + n - 1) / n * n * 4;
	}
}

/* The job's input: random bytes (QAM) or samples inside the unit circle (FFT). */
static void fill_input(enum acc_fn fn, u64 seed, u32 bytes)
{
	u64 s = seed;
	u32 i;

	for (i = 0; i < bytes; i += qam_bits(fn) ? 1 : 4) {
		if (qam_bits(fn)) {
			acc_in[i] = (u8)rng_next(&s);
		} else {
			int16_t re = (int16_t)(rng_next(&s) % 46341) - 23170;
			int16_t im = (int16_t)(rng_next(&s) % 46341) - 23170;

			acc_in[i] = (u8)re;
			acc_in[i + 1] = (u8)((uint16_t)re >> 8);
			acc_in[i + 2] = (u8)im;
			acc_in[i + 3] = (u8)((uint16_t)im >> 8);
		}
	}
}

static u64 fnv1a(const u8 *p, u32 n)
{
	u64 h = 0xcbf29ce484222325ull;
	u32 i;

	for (i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static void w32(u64 page, u32 off, u32 v)
{
	*(volatile u32 *)(page + off) = v;
}

static u32 r32(u64 page, u32 off)
{
	return *(volatile u32 *)(page + off);
}

static void one_job(const struct bootargs *a, u64 j)
{
	u64 page = a->acc;
	u32 in, out, stat;
	u64 frames = a->acc_frames, t0, t1, t2, limit, input;

	frame_bytes(a->acc_fn, a->acc_cmd, &in, &out);
	if (frames * in > ACC_IN_MAX || frames * out > ACC_OUT_MAX) {
		printf("accel: job %lu too large\n", j);
		return;
	}
	fill_input(a->acc_fn, a->acc_seed + j, frames * in);
	input = a->acc_bad ? 0x1000 : (u64)acc_in;
	t0 = counter_now();
	/* The first write asks for a PRR: it returns once one is connected. */
	w32(page, PARTITA_ACC_DATA_ADDR, (u32)input);
	t1 = counter_now();
	w32(page, PARTITA_ACC_DATA_ADDR + 4, (u32)(input >> 32));
	w32(page, PARTITA_ACC_DATA_SIZE, frames * in);
	w32(page, PARTITA_ACC_OUT_ADDR_LO, (u32)(u64)acc_out);
	w32(page, PARTITA_ACC_OUT_ADDR_HI, (u32)((u64)acc_out >> 32));
	w32(page, PARTITA_ACC_OUT_SIZE, frames * out);
	w32(page, PARTITA_ACC_CMD, a->acc_cmd);
	w32(page, PARTITA_ACC_INT_CTRL, 0);
	*(volatile u8 *)(page + PARTITA_ACC_OVER) = 0;
	*(volatile u8 *)(page + PARTITA_ACC_START) = 1;
	limit = t1 + ms_to_counts(ACC_TIMEOUT_MS);
	for (;;) {
		stat = r32(page, PARTITA_ACC_STAT);
		if (stat & (PARTITA_ACC_STAT_ERR_DMA | PARTITA_ACC_STAT_ERR_CMD))
			break;
		if (*(volatile u8 *)(page + PARTITA_ACC_OVER))
			break;
		if (counter_now() > limit) {
			printf("accel: job %lu timed out, stat 0x%x\n", j, stat);
			return;
		}
		__asm__ volatile("yield");
	}
	t2 = counter_now();
	printf("accel: job %lu frames %lu result %lu hash %016lx stat 0x%x alloc %lu ticks done %lu ticks\n", j,
	       frames, *(volatile u64 *)(page + PARTITA_ACC_RESULT), fnv1a(acc_out, frames * out), stat, t1 - t0,
	       t2 - t1);
}

void accel_test(const struct dt_info *dt, const struct bootargs *a)
{
	u64 j, half = dt->mem[0].size / 2;

	if (dt->nmem == 0 || half < ACC_IN_MAX + ACC_OUT_MAX) {
		printf("accel: no room for the buffers\n");
		return;
	}
	acc_in = (u8 *)(dt->mem[0].base + half);
	acc_out = acc_in + ACC_IN_MAX;

	for (j = 0; j < a->acc_jobs; j++)
		one_job(a, j);
	printf("accel: done\n");
}
