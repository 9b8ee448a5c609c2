/*
 * fuzz=N: N hypercalls with random function IDs and arguments, from an
 * xorshift generator seeded by fuzz_seed, so a failing run can be
 * repeated exactly. Most IDs are Partita's own functions or near them, the
 * rest anywhere in its 16-bit function space or outside the vendor range;
 * arguments are small indices, addresses in or at the edges of the
 * partition's RAM, sizes, or anything at all.
 *
 * Only what would legitimately stop or corrupt the fuzzer itself is kept
 * out: suspending or halting its own vCPU 0, a port call that could block
 * (its deadline is forced to POLL or a few microseconds ahead), and a call
 * that writes guest memory (PORT_RECEIVE, HM_READ) at a buffer in its RAM
 * outside the scratch area. Everything else is the hypervisor's to refuse.
 */
#include "guest.h"
#include "console.h"
#include "partita.h"

#define SCRATCH_BYTES (64 * 1024)
/* The most a call copies into a buffer (a port's max_message is at most 4 KiB). */
#define COPY_MAX 4096
#define GUARD_WORDS 64
#define GUARD_VALUE 0x6775617264ull
/* Far enough ahead to park the vCPU now and then, near enough not to matter. */
#define SHORT_WAIT_COUNTS 300
#define PROGRESS_EVERY 100000
/* Partita's functions span 0x00..0x50; a little beyond catches off-by-ones. */
#define PARTITA_SPAN 0x51
/* Statuses 0 to -11, then one bucket for anything else. */
#define STATUSES 12

/* The guards on each side show whether a call wrote outside its buffer. */
static struct {
	u64 before[GUARD_WORDS];
	u64 scratch[SCRATCH_BYTES / 8];
	u64 after[GUARD_WORDS];
} arena;

static u64 state;

static u64 next(void)
{
	u64 x = state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	state = x;
	return x;
}

static u64 scratch_base(void)
{
	return (u64)&arena.scratch[0];
}

static u64 arg(const struct dt_info *dt)
{
	u64 base = dt->mem[0].base, size = dt->mem[0].size;
	u64 pick = next() % 16;

	if (pick < 5)
		return next() % 8;
	if (pick < 8)
		return scratch_base() + next() % SCRATCH_BYTES;
	if (pick < 10)
		return base + next() % size;
	if (pick < 11)
		return (next() & 1 ? base + size : base) - 64 + next() % 128;
	if (pick < 12)
		return next() % (2 * COPY_MAX);
	return next();
}

/* A buffer the hypervisor may write stays inside the scratch area. */
static u64 keep_off_own(const struct dt_info *dt, u64 addr)
{
	u64 base = dt->mem[0].base, size = dt->mem[0].size;

	if (addr - base >= size)
		return addr;
	if (addr - scratch_base() <= SCRATCH_BYTES - COPY_MAX)
		return addr;
	return scratch_base() + addr % (SCRATCH_BYTES - COPY_MAX);
}

/* Every function Partita has, so that most calls get past the decoder. */
static const u64 functions[] = {
	PARTITA_VERSION, PARTITA_VCPU_START, PARTITA_VCPU_SUSPEND, PARTITA_VCPU_RESUME,
	PARTITA_VCPU_HALT, PARTITA_VCPU_STATE, PARTITA_PARTITION_SELF, PARTITA_PARTITION_SUSPEND,
	PARTITA_PARTITION_RESUME, PARTITA_PARTITION_RESTART, PARTITA_PARTITION_HALT,
	PARTITA_PARTITION_STATE, PARTITA_PLAN_SWITCH, PARTITA_PLAN_CURRENT, PARTITA_PORT_SEND,
	PARTITA_PORT_RECEIVE, PARTITA_PORT_INFO, PARTITA_DOORBELL_RING, PARTITA_HM_REPORT,
	PARTITA_WATCHDOG_KICK, PARTITA_HM_READ,
};

static u64 function(void)
{
	u64 pick = next() % 100;

	if (pick < 60)
		return functions[next() % (sizeof(functions) / sizeof(functions[0]))];
	if (pick < 85)
		return PARTITA_CALL(next() % PARTITA_SPAN);
	if (pick < 95)
		return PARTITA_CALL(next() & 0xffff);
	return next() & 0xffff;
}

static bool guards_intact(void)
{
	u32 i;

	for (i = 0; i < GUARD_WORDS; i++)
		if (arena.before[i] != GUARD_VALUE || arena.after[i] != GUARD_VALUE)
			return false;
	return true;
}

void fuzz_test(const struct dt_info *dt, const struct bootargs *a)
{
	u64 counts[STATUSES + 1] = { 0 }, i, start = counter_now();
	u32 k;

	state = a->fuzz_seed ? a->fuzz_seed : 1;
	for (k = 0; k < GUARD_WORDS; k++) {
		arena.before[k] = GUARD_VALUE;
		arena.after[k] = GUARD_VALUE;
	}
	for (i = 1; i <= a->fuzz; i++) {
		u64 fn = function(), x1 = arg(dt), x2 = arg(dt), x3 = arg(dt), x4 = arg(dt);
		long s;

		if ((fn == PARTITA_VCPU_SUSPEND || fn == PARTITA_VCPU_HALT) && x1 == 0)
			x1 = 1 + next() % 7;
		if (fn == PARTITA_PORT_SEND || fn == PARTITA_PORT_RECEIVE)
			x4 = next() & 1 ? PARTITA_POLL : counter_now() + next() % SHORT_WAIT_COUNTS;
		if (fn == PARTITA_PORT_RECEIVE)
			x2 = keep_off_own(dt, x2);
		if (fn == PARTITA_HM_READ)
			x1 = keep_off_own(dt, x1);
		s = partita_call4(fn, x1, x2, x3, x4).status;
		counts[s <= 0 && s > -STATUSES ? -s : STATUSES]++;
		if (i % PROGRESS_EVERY == 0)
			printf("fuzz: %lu calls\n", i);
	}
	printf("fuzz: %lu calls in %lu ms, seed %lu, guards %s\n", a->fuzz,
	       (counter_now() - start) * 1000 / counter_freq(), a->fuzz_seed,
	       guards_intact() ? "intact" : "OVERWRITTEN");
	for (k = 0; k < STATUSES; k++)
		if (counts[k])
			printf("fuzz: status %d: %lu\n", -(int)k, counts[k]);
	if (counts[STATUSES])
		printf("fuzz: other status: %lu\n", counts[STATUSES]);
}
