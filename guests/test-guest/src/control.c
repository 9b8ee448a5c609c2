/*
 * Hypercall tests: a partition controls its own vCPU 1 (vcpu-ctl=1), a
 * system partition controls another partition (part-ctl=...), and asks for
 * a plan switch (plan-switch=N). Each prints result lines the QEMU tests
 * read; a refused call prints its status, so the same code shows both the
 * granted and the denied case.
 */
#include "guest.h"
#include "console.h"
#include "partita.h"

/* Counted by vCPU 1 while it runs; read by vCPU 0. */
static volatile u64 spins;
static volatile u32 spinner_up;

void delay_ms(u64 ms)
{
	u64 end = counter_now() + ms_to_counts(ms);

	while ((s64)(counter_now() - end) < 0)
		;
}

static long call1(unsigned long fn, u64 arg)
{
	return partita_call(fn, arg, 0, 0).status;
}

static u64 vcpu_state(u64 vcpu)
{
	return partita_call(PARTITA_VCPU_STATE, vcpu, 0, 0).value;
}

/* How far vCPU 1 counted during `ms`, after `settle_ms` for a change to land. */
static u64 progress(u64 settle_ms, u64 ms)
{
	u64 before;

	delay_ms(settle_ms);
	before = spins;
	delay_ms(ms);
	return spins - before;
}

void vcpu_ctl_secondary(void)
{
	irq_setup_ping_receiver();
	spinner_up = 1;
	for (;;)
		spins++;
}

void vcpu_ctl_test(const struct dt_info *dt)
{
	long start, suspend, resume, halt;
	u64 moved, pings;

	start = partita_call(PARTITA_VCPU_START, 1, (u64)&secondary_entry, 1).status;
	while (start == PARTITA_OK && !spinner_up)
		;
	printf("vcpu-ctl: start %ld state %lu\n", start, vcpu_state(1));

	suspend = call1(PARTITA_VCPU_SUSPEND, 1);
	moved = progress(20, 50);
	printf("vcpu-ctl: suspend %ld state %lu advanced %lu\n", suspend, vcpu_state(1), moved);

	sgi_ping(dt->cpu_mpidr[1]);
	delay_ms(30);
	printf("vcpu-ctl: sgi while suspended taken %u\n", sgi_pings(1));

	resume = call1(PARTITA_VCPU_RESUME, 1);
	moved = progress(20, 50);
	pings = sgi_pings(1);
	printf("vcpu-ctl: resume %ld state %lu advanced %s sgi taken %lu\n", resume, vcpu_state(1),
	       moved ? "yes" : "no", pings);

	halt = call1(PARTITA_VCPU_HALT, 1);
	moved = progress(20, 50);
	printf("vcpu-ctl: halt %ld state %lu advanced %lu\n", halt, vcpu_state(1), moved);
	printf("vcpu-ctl: after halt start %ld resume %ld; vcpu 7 suspend %ld\n",
	       partita_call(PARTITA_VCPU_START, 1, (u64)&secondary_entry, 1).status,
	       call1(PARTITA_VCPU_RESUME, 1), call1(PARTITA_VCPU_SUSPEND, 7));
}

static u64 part_state(u64 p)
{
	return partita_call(PARTITA_PARTITION_STATE, p, 0, 0).value;
}

bool partition_ended(u64 p)
{
	struct partita_result r = partita_call(PARTITA_PARTITION_STATE, p, 0, 0);

	return r.status != PARTITA_OK || r.value == PARTITA_PART_OFF ||
	       r.value == PARTITA_PART_STOPPED || r.value == PARTITA_PART_HALTED;
}

void part_ctl_test(const struct bootargs *a)
{
	long r;

	delay_ms(a->ctl_after_ms);
	switch (a->part_ctl) {
	case PART_CTL_SUSPEND:
		r = call1(PARTITA_PARTITION_SUSPEND, a->target);
		/* Long enough for the target's pCPU to have taken it off. */
		delay_ms(10);
		printf("part-ctl: suspend %ld state %lu\n", r, part_state(a->target));
		delay_ms(300);
		r = call1(PARTITA_PARTITION_RESUME, a->target);
		printf("part-ctl: resume %ld state %lu\n", r, part_state(a->target));
		break;
	case PART_CTL_HALT:
		/* A restart under way (by another partition) finishes first. */
		while (part_state(a->target) == PARTITA_PART_RESTARTING)
			;
		r = call1(PARTITA_PARTITION_HALT, a->target);
		delay_ms(10);
		printf("part-ctl: halt %ld state %lu; resume then %ld\n", r, part_state(a->target),
		       call1(PARTITA_PARTITION_RESUME, a->target));
		break;
	case PART_CTL_RESTART:
		while ((r = call1(PARTITA_PARTITION_RESTART, a->target)) == PARTITA_EBUSY)
			;
		printf("part-ctl: restart %ld state %lu\n", r, part_state(a->target));
		break;
	default:
		break;
	}
}

void plan_switch_test(const struct bootargs *a)
{
	u64 plan = a->plan_switch - 1;
	struct partita_result r;

	delay_ms(a->ctl_after_ms);
	r = partita_call(PARTITA_PLAN_SWITCH, plan, 0, 0);
	printf("plan-switch: to %lu status %ld at 0x%lx\n", plan, r.status, r.value);
	if (r.status != PARTITA_OK)
		return;
	do {
		r = partita_call(PARTITA_PLAN_CURRENT, 0, 0, 0);
	} while (r.value != plan);
	printf("plan-switch: now %lu from 0x%lx\n", r.value, counter_now());
}

/*
 * probe-firmware=1: the SMCCC discovery calls a stock Linux makes on every
 * boot (SMCCC version, the TRNG, which hypervisor this is), over HVC.
 */
static void probe_firmware(void)
{
	struct partita_result uid = partita_call(0x8600ff01, 0, 0, 0);
	struct partita_result revision = partita_call(0x8600ff03, 0, 0, 0);

	printf("firmware: smccc 0x%lx trng %ld hyp-uid %08lx %08lx %08lx %08lx revision %ld.%lu calls %ld\n",
	       partita_call(0x80000000, 0, 0, 0).status, partita_call(0x84000050, 0, 0, 0).status,
	       (unsigned long)uid.status & 0xffffffff, uid.value, uid.value2, uid.value3,
	       revision.status, revision.value, partita_call(0x8600ff00, 0, 0, 0).status);
}

/* hm-report=CODE and bad-hvc=1: the health monitor's view of the caller. */
void hm_calls_test(const struct bootargs *a)
{
	if (a->probe_firmware)
		probe_firmware();
	if (a->bad_hvc)
		printf("bad-hvc: %ld\n", partita_call(PARTITA_CALL(0xfff0), 0, 0, 0).status);
	if (a->hm_report)
		printf("hm-report: %ld\n", call1(PARTITA_HM_REPORT, a->hm_report - 1));
}
