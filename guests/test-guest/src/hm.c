/*
 * The health monitor as a partition sees it: its watchdog (watchdog-kicks:
 * kick on time for a while, then stop and let the monitor act), and the
 * log a system partition reads (hm-read).
 */
#include "guest.h"
#include "console.h"
#include "partita.h"
#include "psci.h"

#define HM_RECORDS 32
/* The reporter and the refused caller may boot well after the reader. */
#define HM_WAIT_MS 3000
#define HM_POLL_MS 10

/*
 * Runs first thing, before the set/way sweep (which alone can outlast a
 * 100 ms watchdog): kicks on time, then stops. With until-off it then
 * waits, without kicking, for that partition to stop, and powers off:
 * the watchdog restarts it over and over until then.
 */
void watchdog_test(const struct dt_info *dt, const struct bootargs *a)
{
	u64 before = counter_now();
	struct partita_result r = partita_call(PARTITA_WATCHDOG_KICK, 0, 0, 0);
	u64 after = counter_now(), i, failed = r.status != PARTITA_OK;

	for (i = 1; i < a->watchdog_kicks; i++) {
		delay_ms(a->kick_ms);
		failed += partita_call(PARTITA_WATCHDOG_KICK, 0, 0, 0).status != PARTITA_OK;
	}
	/* The call may be preempted: the period starts somewhere between the two. */
	printf("watchdog: kick %ld, deadline %lu us after the call, %lu us after its return\n", r.status,
	       (s64)(r.value - before) > 0 ? counts_to_us(r.value - before) : 0,
	       (s64)(r.value - after) > 0 ? counts_to_us(r.value - after) : 0);
	printf("watchdog: kicked %lu times every %lu ms, %lu failed; stopping\n", a->watchdog_kicks,
	       a->kick_ms, failed);
	if (!a->has_until_off)
		return;
	while (!partition_ended(a->until_off))
		delay_ms(1);
	printf("watchdog: partition %lu has stopped\n", a->until_off);
	power_off(dt->psci);
}

static struct partita_hm_record records[HM_RECORDS];

/*
 * Polls the log from its start until at least `want` records are there,
 * then prints every one. Without the right the first call is refused and
 * that is all it prints.
 */
static void hm_read_test(const struct bootargs *a)
{
	u64 deadline = counter_now() + ms_to_counts(HM_WAIT_MS), i;
	struct partita_result r;
	long misaligned, outside;

	for (;;) {
		r = partita_call(PARTITA_HM_READ, (u64)records, sizeof(records), 0);
		if (r.status != PARTITA_OK || r.value >= a->hm_read || (s64)(counter_now() - deadline) >= 0)
			break;
		delay_ms(HM_POLL_MS);
	}
	printf("hm-read: status %ld, %lu records, next %lu, lost %lu\n", r.status,
	       r.status == PARTITA_OK ? r.value : 0, r.status == PARTITA_OK ? r.value2 : 0,
	       r.status == PARTITA_OK ? r.value3 : 0);
	if (r.status != PARTITA_OK)
		return;
	for (i = 0; i < r.value && i < HM_RECORDS; i++) {
		const struct partita_hm_record *h = &records[i];

		printf("hm-read: seq %lu partition %u vcpu %u event %u action %u code %u detail 0x%lx\n",
		       h->seq, h->partition, h->vcpu, h->event, h->action, h->code, h->detail);
	}
	misaligned = partita_call(PARTITA_HM_READ, (u64)records + 4, sizeof(records) - 8, 0).status;
	outside = partita_call(PARTITA_HM_READ, 0x1000, sizeof(records), 0).status;
	printf("hm-read: misaligned %ld, outside ram %ld\n", misaligned, outside);
}

void hm_tests(const struct bootargs *a)
{
	if (a->hm_read)
		hm_read_test(a);
}
