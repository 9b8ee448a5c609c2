/*
 * fp_ms=T: for T ms every vCPU of the partition keeps values of its own in
 * the FP/SIMD registers, a round at a time: it loads them, lets time pass
 * (other vCPUs run on its pCPU, it may migrate), and reads them back. Any
 * difference is a hypervisor that switched FP/SIMD wrongly. The values
 * differ per partition, vCPU and round, so another's values never pass.
 */
#include "guest.h"
#include "console.h"

/* How long each round holds its values: several switches per round on a
 * 1 ms quantum or slot, with many rounds in a test. */
#define FP_HOLD_US 300
/* How long vCPU 0 waits for the others' results past the test's end. */
#define FP_RESULT_WAIT_MS 2000

#define FP_WORDS 66		/* q0-q31, FPCR, FPSR */
/* The FPCR and FPSR bits every implementation keeps: AHP, DN, FZ, RMode;
 * QC, IDC and the cumulative flags. */
#define FPCR_KEPT (0x1full << 22)
#define FPSR_KEPT ((1ull << 27) | (1ull << 7) | 0x1full)

void fp_load(const u64 *block);
void fp_store(u64 *block);

struct fp_result {
	volatile u64 rounds, mismatches, first_word, done;
};

static struct fp_result results[MAX_CPUS];

static u64 mix(u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static u64 name_hash(const char *s)
{
	u64 h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (u8)*s++) * 1099511628211ull;
	return h;
}

static void fill(u64 *block, u64 seed)
{
	u32 i;

	for (i = 0; i < FP_WORDS - 2; i++)
		block[i] = mix(seed + i);
	block[FP_WORDS - 2] = mix(seed) & FPCR_KEPT;
	block[FP_WORDS - 1] = mix(seed + 1) & FPSR_KEPT;
}

/* FP/SIMD accesses at EL1 and EL0 are the guest's own (CPACR_EL1.FPEN). */
static void fp_enable(void)
{
	write_sysreg(cpacr_el1, read_sysreg(cpacr_el1) | 3ull << 20);
	isb();
}

static void fp_rounds(const char *partition, u32 cpu, u64 until)
{
	u64 expected[FP_WORDS] __attribute__((aligned(16)));
	u64 got[FP_WORDS] __attribute__((aligned(16)));
	struct fp_result *r = &results[cpu];
	u64 seed = name_hash(partition) ^ (u64)cpu << 56;
	u32 i;

	fp_enable();
	while ((s64)(counter_now() - until) < 0) {
		u64 hold = counter_now() + us_to_counts(FP_HOLD_US);

		fill(expected, seed + r->rounds * FP_WORDS);
		fp_load(expected);
		while ((s64)(counter_now() - hold) < 0)
			;
		fp_store(got);
		for (i = 0; i < FP_WORDS; i++)
			if (got[i] != expected[i])
				break;
		if (i < FP_WORDS && !r->mismatches++)
			r->first_word = i;
		r->rounds++;
	}
	dsb_sy();
	r->done = 1;
}

static volatile u64 fp_until;

/* A secondary's share; vCPU 0 collects its result. */
void fp_secondary(const struct dt_info *dt, u32 cpu)
{
	while (!fp_until)
		;
	fp_rounds(dt->partition, cpu, fp_until);
}

void fp_test(const struct dt_info *dt, const struct bootargs *a, const volatile u32 *cpu_up)
{
	u64 start = counter_now(), wait;
	u32 i;

	/* Partitions that boot at different speeds still check side by side. */
	if (a->fp_at_ms) {
		u64 at = ms_to_counts(a->fp_at_ms);

		if ((s64)(start - at) > 0)
			printf("fp: started %lu us late\n", counts_to_us(start - at));
		while ((s64)(counter_now() - at) < 0)
			;
		start = counter_now();
	}
	fp_until = start + ms_to_counts(a->fp_ms);
	dsb_sy();
	fp_rounds(dt->partition, 0, fp_until);
	wait = counter_now() + ms_to_counts(FP_RESULT_WAIT_MS);
	for (i = 0; i < dt->ncpus && i < MAX_CPUS; i++) {
		if (i && !cpu_up[i])
			continue;
		while (!results[i].done && (s64)(counter_now() - wait) < 0)
			;
		if (!results[i].done) {
			printf("fp: vcpu %u did not finish\n", i);
			continue;
		}
		printf("fp: vcpu %u rounds %lu mismatches %lu", i, results[i].rounds, results[i].mismatches);
		if (results[i].mismatches)
			printf(" first at word %lu", results[i].first_word);
		printf("\n");
	}
}
