/*
 * count_ms: XtratuM's counting partition. Partitions that share a pCPU count
 * side by side with one that has a pCPU alone; whatever the hypervisor takes
 * from a partition shows up as iterations it did not get to.
 */
#include "guest.h"
#include "console.h"

/*
 * Iterations between two counter reads. A read is far dearer than an
 * iteration (under QEMU it leaves translated code and, with -icount, ends the
 * block), so it comes rarely; and it comes after every batch, so each
 * iteration carries the same share of it whatever the partition's slots.
 */
#define COUNT_BATCH 256

/*
 * In assembly so that the iteration is the same 5 instructions whatever the
 * compiler makes of C: load, add, store, decrement, branch.
 */
static void count_batch(volatile u64 *n)
{
	u64 left = COUNT_BATCH, v;

	__asm__ volatile("1:	ldr	%0, [%2]\n"
			 "	add	%0, %0, #1\n"
			 "	str	%0, [%2]\n"
			 "	subs	%1, %1, #1\n"
			 "	b.ne	1b\n"
			 : "=&r"(v), "+r"(left)
			 : "r"(n)
			 : "memory", "cc");
}

/*
 * count_gap_ticks: the same loop, timing each batch. Under -icount every
 * batch takes the same ticks (its instructions) unless the partition was off
 * its pCPU meanwhile, so a batch of at least `gap` ticks is one that another
 * partition's slot interrupted, and what it took beyond the shortest batch
 * is that slot plus every hypervisor instruction between this partition's
 * last instruction and its next one: the switches as the partition sees
 * them, with no trace needed to time them. The bookkeeping adds a few
 * instructions to every batch, so the count is not the plain loop's.
 */
static void count_gaps(volatile u64 *n, u64 end, u64 gap)
{
	u64 prev = counter_now(), now, took, shortest = ~0ull;
	u64 gaps = 0, sum = 0, longest = 0;

	do {
		count_batch(n);
		now = counter_now();
		took = now - prev;
		prev = now;
		if (took >= gap) {
			gaps++;
			sum += took;
			if (took > longest)
				longest = took;
		} else if (took < shortest) {
			shortest = took;
		}
	} while ((s64)(now - end) < 0);
	if (gaps && shortest != ~0ull)
		printf("count: %lu gaps, %lu ticks beyond the shortest batch (%lu ticks), at most %lu\n",
		       gaps, sum - gaps * shortest, shortest, longest - shortest);
	else
		printf("count: no gaps\n");
}

void count_test(const struct bootargs *a)
{
	/* In memory, as XtratuM's counter is: an iteration touches memory. */
	volatile u64 n = 0;
	u64 start = counter_now(), end;

	/*
	 * Every partition reads the same counter, so one absolute window lines
	 * up partitions that boot at different speeds; and counts compare only
	 * over one window, since under QEMU a vCPU's speed depends on what the
	 * others are doing. A partition whose slot is not in force at the
	 * window's start begins when it next runs, which costs it nothing: the
	 * window is the same, only its share of it comes later.
	 */
	if (a->has_count_at) {
		u64 at = ms_to_counts(a->count_at_ms);

		if ((s64)(start - at) > 0) {
			printf("count: started %lu us late\n", (start - at) * 1000000 / counter_freq());
			/* The line took time that is not counting time. */
			start = counter_now();
		} else {
			while ((s64)(counter_now() - at) < 0)
				;
			start = at;
		}
	}
	end = start + ms_to_counts(a->count_ms);
	if (!a->count_gap_ticks) {
		do {
			count_batch(&n);
		} while ((s64)(counter_now() - end) < 0);
	} else {
		count_gaps(&n, end, a->count_gap_ticks);
	}
	printf("count: %lu in %lu ms\n", (u64)n, a->count_ms);
}
