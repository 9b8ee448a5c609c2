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
	do {
		count_batch(&n);
	} while ((s64)(counter_now() - end) < 0);
	printf("count: %lu in %lu ms\n", (u64)n, a->count_ms);
}
