/*
 * The host side of tests/accel_sw.rs: guests/common/accel_sw.c behind a
 * command line, so the Rust test compares it with the core's computation.
 *
 *   driver sizes FUNCTION CMD
 *     prints "IN_FRAME OUT_FRAME", or "einval"
 *   driver frames FUNCTION CMD FIRST COUNT MISALIGN < job input > job output
 *     computes frames [FIRST, FIRST + COUNT) of the job whose input is
 *     stdin, into an output buffer of every frame prefilled with 0xa5;
 *     both buffers start MISALIGN bytes past an aligned address
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_sw.h"

#define FILL 0xa5

static unsigned long long arg(const char *s)
{
	return strtoull(s, NULL, 0);
}

static int sizes(unsigned function, uint32_t cmd)
{
	uint64_t in, out;

	if (accel_sw_frame_bytes(function, cmd, &in, &out) != ACCEL_SW_OK) {
		puts("einval");
		return 0;
	}
	printf("%llu %llu\n", (unsigned long long)in, (unsigned long long)out);
	return 0;
}

static int frames(unsigned function, uint32_t cmd, uint64_t first, uint64_t count, size_t misalign)
{
	size_t cap = 1 << 16, len = 0, got;
	uint8_t *in = malloc(cap + misalign), *out;
	uint64_t in_frame, out_frame, total;

	while (in && (got = fread(in + misalign + len, 1, cap - len, stdin)) > 0) {
		len += got;
		if (len == cap)
			in = realloc(in, (cap *= 2) + misalign);
	}
	if (!in || accel_sw_frame_bytes(function, cmd, &in_frame, &out_frame) != ACCEL_SW_OK) {
		puts("einval");
		return 0;
	}
	total = len / in_frame * out_frame;
	out = malloc(total + misalign);
	if (!out)
		return 1;
	memset(out, FILL, total + misalign);
	if (accel_sw_frames(function, cmd, in + misalign, out + misalign, first, count) != ACCEL_SW_OK) {
		puts("einval");
		return 0;
	}
	fwrite(out + misalign, 1, total, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "sizes"))
		return sizes((unsigned)arg(argv[2]), (uint32_t)arg(argv[3]));
	if (argc == 7 && !strcmp(argv[1], "frames"))
		return frames((unsigned)arg(argv[2]), (uint32_t)arg(argv[3]), arg(argv[4]), arg(argv[5]),
			      (size_t)arg(argv[6]));
	fprintf(stderr, "usage: %s sizes FUNCTION CMD | frames FUNCTION CMD FIRST COUNT MISALIGN\n", argv[0]);
	return 2;
}
