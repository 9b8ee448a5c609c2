/*
 * The fabric's four accelerators computed on the CPU, bit for bit as the
 * emulated accelerators compute them (crates/core/src/fabric/compute):
 * the QAM-16 and QAM-64 mappers (Gray-coded levels, steps 7,644 and
 * 3,276) and the 512- and 1024-point fixed-point FFTs (each of the log2 N
 * stages halves, rounded once to nearest, ties up, saturated to 16 bits),
 * with no floating point.
 *
 * A job is laid out as the accelerator lays it out (docs/accelerators.md,
 * `Job` in crates/core/src/fabric/job.rs): frame i's input starts at
 * in + i * in_frame and its output at out + i * out_frame, the sizes that
 * accel_sw_frame_bytes gives for the job's CMD. So a guest can compute a
 * whole job in software, or finish one the accelerator left at frame k
 * (RESULT = k) from frame k on, on the same buffers.
 *
 * These names and signatures are stable: other guest code calls them.
 */
#ifndef ACCEL_SW_H
#define ACCEL_SW_H

#include <stdint.h>

/*
 * The functions, numbered as the RTOS's enum rtos_accel_function and an
 * accelerator's saved context number them.
 */
#define ACCEL_SW_QAM16		1u
#define ACCEL_SW_QAM64		2u
#define ACCEL_SW_FFT512		3u
#define ACCEL_SW_FFT1024	4u

#define ACCEL_SW_OK		0
/* An unknown function, a NULL buffer, or a CMD that makes no frame. */
#define ACCEL_SW_EINVAL		(-1)

/*
 * Bytes of one frame's input and output for `function` with CMD `cmd`
 * (the frame length: bits for QAM, samples for an FFT; 0 for Ker-ONE's
 * 18,800 bits or 4,700 samples). QAM takes ceil(bits / 8) bytes and gives
 * 4 bytes (I then Q, 16-bit little-endian) per whole symbol; an FFT takes
 * 4 bytes per sample and gives whole blocks of N samples, the last
 * zero-padded. ACCEL_SW_EINVAL for an unknown function, a NULL pointer or
 * a QAM frame shorter than one symbol.
 */
int accel_sw_frame_bytes(unsigned function, uint32_t cmd, uint64_t *in_frame, uint64_t *out_frame);

/*
 * Computes frames [first, first + count) of a job of `function` with CMD
 * `cmd` whose input buffer starts at `in` and output buffer at `out` (the
 * job's DATA_ADDR and output address, not frame `first`'s). Writes only
 * those frames' output; nothing else of either buffer is touched. Any
 * alignment works; buffers aligned to 2 bytes take a faster path. Returns
 * ACCEL_SW_OK, or ACCEL_SW_EINVAL (as accel_sw_frame_bytes) having
 * written nothing.
 */
int accel_sw_frames(unsigned function, uint32_t cmd, const uint8_t *in, uint8_t *out, uint64_t first,
		    uint64_t count);

/*
 * Builds the FFTs' twiddle table, which accel_sw_frames otherwise does on
 * its first FFT: call it first to keep that cost out of a measurement.
 * Safe from several CPUs at once.
 */
void accel_sw_init(void);

#endif
