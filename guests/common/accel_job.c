#include "accel_job.h"

static uint64_t xorshift64s(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* A sample inside the unit circle: |I|, |Q| <= 23170 (32768 / sqrt 2). */
static int16_t sample(uint64_t *s)
{
	return (int16_t)((int32_t)(xorshift64s(s) % 46341) - 23170);
}

void accel_job_input(uint8_t *buf, bool qam, uint64_t seed, uint32_t bytes)
{
	uint64_t s = seed;
	uint32_t i;

	for (i = 0; i < bytes; i += qam ? 1 : 4) {
		if (qam) {
			buf[i] = (uint8_t)xorshift64s(&s);
		} else {
			uint16_t re = (uint16_t)sample(&s), im = (uint16_t)sample(&s);

			buf[i] = (uint8_t)re;
			buf[i + 1] = (uint8_t)(re >> 8);
			buf[i + 2] = (uint8_t)im;
			buf[i + 3] = (uint8_t)(im >> 8);
		}
	}
}

uint64_t accel_job_hash(const uint8_t *p, uint64_t n)
{
	uint64_t h = 0xcbf29ce484222325ull, i;

	for (i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
