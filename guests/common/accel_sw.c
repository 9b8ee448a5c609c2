/*
 * The accelerators in software. Every rounding, scale and layout choice
 * here is the Rust core's (crates/core/src/fabric/compute/qam.rs, fft.rs),
 * whose comments say why; this file only has to agree with it bit for bit,
 * which tools/partita/tests/accel_sw.rs checks.
 */
#include <stdbool.h>
#include <stddef.h>

#include "accel_sw.h"

/* Ker-ONE's frame, which CMD = 0 asks for. */
#define FRAME_BITS	18800u
#define FRAME_SAMPLES	4700u

#define STEP16		7644
#define STEP64		3276

/* The largest block; smaller ones use every MAX_N / N-th twiddle. */
#define MAX_N		1024u
#define QUARTER_N	(MAX_N / 4)

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LITTLE_ENDIAN_CPU	1
#else
#define LITTLE_ENDIAN_CPU	0
#endif

typedef __int128 i128;
typedef unsigned __int128 u128;

/*
 * quarter[j] = sin(2 pi j / MAX_N) * 32768, rounded, j = 0..MAX_N/4, built
 * once by the same integer Taylor series as the core's table, so the two
 * agree to the last bit without a float or a pasted constant.
 */
static uint16_t quarter[QUARTER_N + 1];
static uint32_t quarter_ready;

/* pi * 2^60, rounded: 3,622,009,729,038,561,421. */
static const i128 PI_Q60 = (i128)0x3243f6a8885a308dull;

/*
 * v / d truncated toward zero, as Rust's i128 division, for 0 < d < 2^32:
 * by 32-bit limbs, because a 128-bit division would call into libgcc,
 * which the guests do not link.
 */
static i128 div_small(i128 v, uint32_t d)
{
	bool neg = v < 0;
	u128 u = neg ? -(u128)v : (u128)v, q = 0;
	uint64_t r = 0;
	int limb;

	for (limb = 3; limb >= 0; limb--) {
		uint64_t cur = r << 32 | (uint64_t)(uint32_t)(u >> (32 * limb));

		q |= (u128)(cur / d) << (32 * limb);
		r = cur % d;
	}
	return neg ? -(i128)q : (i128)q;
}

/* sin x for 0 <= x <= pi/2, both Q60. */
static i128 sin_q60(i128 x)
{
	i128 x2 = (x * x) >> 60, term = x, sum = x;
	uint32_t k = 1;

	while (term != 0) {
		term = div_small(-((term * x2) >> 60), (2 * k) * (2 * k + 1));
		sum += term;
		k++;
	}
	return sum;
}

void accel_sw_init(void)
{
	uint32_t j;

	if (__atomic_load_n(&quarter_ready, __ATOMIC_ACQUIRE))
		return;
	/* Two CPUs racing here write the same values. */
	for (j = 0; j <= QUARTER_N; j++) {
		i128 s = sin_q60((PI_Q60 * 2 * j) >> 10);

		quarter[j] = (uint16_t)((s + ((i128)1 << 44)) >> 45);
	}
	__atomic_store_n(&quarter_ready, 1, __ATOMIC_RELEASE);
}

static bool is_qam(unsigned function)
{
	return function == ACCEL_SW_QAM16 || function == ACCEL_SW_QAM64;
}

static uint32_t qam_width(unsigned function)
{
	return function == ACCEL_SW_QAM16 ? 4 : 6;
}

static uint32_t fft_points(unsigned function)
{
	return function == ACCEL_SW_FFT512 ? 512 : 1024;
}

int accel_sw_frame_bytes(unsigned function, uint32_t cmd, uint64_t *in_frame, uint64_t *out_frame)
{
	if (!in_frame || !out_frame || function < ACCEL_SW_QAM16 || function > ACCEL_SW_FFT1024)
		return ACCEL_SW_EINVAL;
	if (is_qam(function)) {
		uint32_t bits = cmd ? cmd : FRAME_BITS;

		if (bits < qam_width(function))
			return ACCEL_SW_EINVAL;
		*in_frame = (bits + 7ull) / 8;
		*out_frame = (uint64_t)(bits / qam_width(function)) * 4;
	} else {
		uint64_t samples = cmd ? cmd : FRAME_SAMPLES, n = fft_points(function);

		*in_frame = samples * 4;
		*out_frame = (samples + n - 1) / n * n * 4;
	}
	return ACCEL_SW_OK;
}

/*
 * 16-bit little-endian accesses; `fast` (a constant at every call, so the
 * compiler keeps one copy of each loop per path) when the CPU is
 * little-endian and the buffer 2-byte aligned, since an unaligned access
 * faults with the MMU off.
 */
static inline __attribute__((always_inline)) int16_t ld16(const uint8_t *p, bool fast)
{
	if (fast)
		return *(const int16_t *)(const void *)p;
	return (int16_t)(uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static inline __attribute__((always_inline)) void st16(uint8_t *p, int16_t v, bool fast)
{
	if (fast) {
		*(int16_t *)(void *)p = v;
		return;
	}
	p[0] = (uint8_t)(uint16_t)v;
	p[1] = (uint8_t)((uint16_t)v >> 8);
}

/* The levels of one axis, indexed by their binary-reflected Gray code. */
static void gray_levels(int16_t *levels, uint32_t count, int16_t step)
{
	uint32_t g;

	for (g = 0; g < count; g++) {
		uint32_t k = g, s;

		for (s = g >> 1; s; s >>= 1)
			k ^= s;
		levels[g] = (int16_t)(((int32_t)(2 * k) - (int32_t)(count - 1)) * step);
	}
}

static inline __attribute__((always_inline)) void qam_frames(unsigned function, uint32_t bits,
							     const uint8_t *in, uint8_t *out,
							     uint64_t in_frame, uint64_t out_frame,
							     uint64_t count, bool fast)
{
	uint32_t width = qam_width(function), half = width / 2, axis = (1u << half) - 1;
	uint32_t mask = (1u << width) - 1, symbols = bits / width, code, s;
	int16_t levels[8], points[64][2];
	uint64_t f;

	gray_levels(levels, 1u << half, function == ACCEL_SW_QAM16 ? STEP16 : STEP64);
	for (code = 0; code <= mask; code++) {
		points[code][0] = levels[code >> half];
		points[code][1] = levels[code & axis];
	}
	for (f = 0; f < count; f++) {
		const uint8_t *p = in + f * in_frame;
		uint8_t *o = out + f * out_frame;
		uint32_t window = 0, held = 0;

		/* A symbol is at most 6 bits, so one byte always refills the window. */
		for (s = 0; s < symbols; s++, o += 4) {
			if (held < width) {
				window = window << 8 | *p++;
				held += 8;
			}
			held -= width;
			code = (window >> held) & mask;
			st16(o, points[code][0], fast);
			st16(o + 2, points[code][1], fast);
		}
	}
}

/* (cos, sin) of 2 pi k / MAX_N in Q15, 0 <= k < MAX_N / 2: the twiddle is cos - i sin. */
static inline void twiddle(uint32_t k, int64_t *c, int64_t *s)
{
	if (k <= QUARTER_N) {
		*c = quarter[QUARTER_N - k];
		*s = quarter[k];
	} else {
		*c = -(int64_t)quarter[k - QUARTER_N];
		*s = quarter[2 * QUARTER_N - k];
	}
}

/* v / 2^16 rounded to nearest, ties up, saturated to 16 bits. */
static inline int16_t narrow(int64_t v)
{
	v = (v + (1 << 15)) >> 16;
	if (v > INT16_MAX)
		return INT16_MAX;
	if (v < INT16_MIN)
		return INT16_MIN;
	return (int16_t)v;
}

static inline uint32_t bit_reversed(uint32_t i, uint32_t log2)
{
	uint32_t r = 0, b;

	for (b = 0; b < log2; b++, i >>= 1)
		r = r << 1 | (i & 1);
	return r;
}

/*
 * One block of n points, computed in place in its output: `valid` samples
 * from `in`, zeros after them.
 */
static inline __attribute__((always_inline)) void fft_block(const uint8_t *in, uint32_t valid,
							    uint8_t *blk, uint32_t n, uint32_t log2,
							    bool fast)
{
	uint32_t i, stage;

	for (i = 0; i < n; i++) {
		uint8_t *d = blk + 4 * bit_reversed(i, log2);

		st16(d, i < valid ? ld16(in + 4 * i, fast) : 0, fast);
		st16(d + 2, i < valid ? ld16(in + 4 * i + 2, fast) : 0, fast);
	}
	for (stage = 0; stage < log2; stage++) {
		uint32_t half = 1u << stage, stride = MAX_N / (2 * half), k, top;

		for (k = 0; k < half; k++) {
			int64_t c, s;

			twiddle(k * stride, &c, &s);
			for (top = k; top < n; top += 2 * half) {
				uint8_t *a = blk + 4 * top, *b = blk + 4 * (top + half);
				int64_t ar = ld16(a, fast), ai = ld16(a + 2, fast);
				int64_t br = ld16(b, fast), bi = ld16(b + 2, fast);
				/* Q15 products, and `a` raised to meet them: one rounding, in narrow. */
				int64_t tr = c * br + s * bi, ti = c * bi - s * br;

				ar *= 1 << 15;
				ai *= 1 << 15;
				st16(a, narrow(ar + tr), fast);
				st16(a + 2, narrow(ai + ti), fast);
				st16(b, narrow(ar - tr), fast);
				st16(b + 2, narrow(ai - ti), fast);
			}
		}
	}
}

static inline __attribute__((always_inline)) void fft_frames(unsigned function, uint32_t samples,
							     const uint8_t *in, uint8_t *out,
							     uint64_t in_frame, uint64_t out_frame,
							     uint64_t count, bool fast)
{
	uint32_t n = fft_points(function), log2 = n == 512 ? 9 : 10, b;
	uint64_t f;

	for (f = 0; f < count; f++) {
		const uint8_t *p = in + f * in_frame;
		uint8_t *o = out + f * out_frame;

		for (b = 0; b * n < samples; b++) {
			uint32_t left = samples - b * n;

			fft_block(p + 4ull * b * n, left < n ? left : n, o + 4ull * b * n, n, log2, fast);
		}
	}
}

int accel_sw_frames(unsigned function, uint32_t cmd, const uint8_t *in, uint8_t *out, uint64_t first,
		    uint64_t count)
{
	uint64_t in_frame, out_frame;
	bool fast;

	if (accel_sw_frame_bytes(function, cmd, &in_frame, &out_frame) != ACCEL_SW_OK || !in || !out)
		return ACCEL_SW_EINVAL;
	in += first * in_frame;
	out += first * out_frame;
	fast = LITTLE_ENDIAN_CPU && !((uintptr_t)in & 1) && !((uintptr_t)out & 1);
	if (is_qam(function)) {
		uint32_t bits = cmd ? cmd : FRAME_BITS;

		if (fast)
			qam_frames(function, bits, in, out, in_frame, out_frame, count, true);
		else
			qam_frames(function, bits, in, out, in_frame, out_frame, count, false);
	} else {
		uint32_t samples = cmd ? cmd : FRAME_SAMPLES;

		accel_sw_init();
		if (fast)
			fft_frames(function, samples, in, out, in_frame, out_frame, count, true);
		else
			fft_frames(function, samples, in, out, in_frame, out_frame, count, false);
	}
	return ACCEL_SW_OK;
}
