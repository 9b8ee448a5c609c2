/*
 * The input and output check of an accelerator job, the same in every
 * guest so the host's tests compute the same reference
 * (tools/partita/tests/fabric_reference): input from xorshift64*, output
 * hashed with FNV-1a (64-bit).
 */
#ifndef ACCEL_JOB_H
#define ACCEL_JOB_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Fills `bytes` of `buf` from `seed`: random bytes for a QAM mapper, or for
 * an FFT samples inside the unit circle, 16-bit I then Q, little endian.
 */
void accel_job_input(uint8_t *buf, bool qam, uint64_t seed, uint32_t bytes);

uint64_t accel_job_hash(const uint8_t *p, uint64_t n);

#endif
