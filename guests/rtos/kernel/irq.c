/*
 * Interrupts, the software interrupt and the tick. Handlers run on the
 * interrupt stack with IRQs masked (no nesting); a task they make ready
 * runs once head.S's exit path calls rtos_preempt().
 */
#include "port.h"
#include "arch.h"
#include "console.h"
#include "counter.h"
#include "dt.h"
#include "gic.h"

#define ESR_EC_SHIFT		26
#define ESR_EC_SVC64		0x15
#define CNTV_CTL_ENABLE		1
#define TICK_PRIORITY		0x80
/* With PMR at 0xff an interrupt at 0xff could never be taken. */
#define LOWEST_USABLE_PRIO	0xf0

struct handler {
	rtos_isr isr;
	void *arg;
};

static struct handler handlers[GIC_SPECIAL_INTID];
static void (*svc_handler)(void);
static bool gic_ready;
static u32 intid_limit;

/* Tick deadlines are exact: period + frac/hz counts each, in integers. */
static u32 tick_intid;
static u64 tick_hz, tick_period, tick_frac, frac_acc, tick_cval;
/* The deadline of the tick handled last: tick_cval has moved on by then. */
static u64 tick_fired;

void rtos_irq_dispatch(void);
/* frame: what head.S saved, x0-x18 then x30 (its word 19). */
void rtos_sync_dispatch(u64 esr, u64 elr, u64 far, const u64 *frame);
__attribute__((noreturn)) void rtos_fatal(u64 esr, u64 elr, u64 far, const u64 *frame);

rtos_status irq_init(const struct dt_info *dt)
{
	const char *why = "";

	gic_probe(dt);
	if (!gic_init_dist(&why) || !gic_init_cpu(&why)) {
		printf("rtos: GIC: %s\n", why);
		return RTOS_ESTATE;
	}
	intid_limit = gic_intid_limit();
	gic_ready = true;
	return RTOS_OK;
}

void rtos_irq_dispatch(void)
{
	for (;;) {
		u32 iar = gic_ack();
		struct handler *h;

		if (iar >= GIC_SPECIAL_INTID)
			break;
		h = &handlers[iar];
		sched_isr_enter();
		if (h->isr)
			h->isr(iar, h->arg);
		sched_isr_exit();
		gic_eoi(iar);
	}
}

void rtos_sync_dispatch(u64 esr, u64 elr, u64 far, const u64 *frame)
{
	if ((esr >> ESR_EC_SHIFT) == ESR_EC_SVC64 && (esr & 0xffff) == 0) {
		sched_isr_enter();
		if (svc_handler)
			svc_handler();
		sched_isr_exit();
		return;
	}
	rtos_fatal(esr, elr, far, frame);
}

/* Any exception but an IRQ or svc #0 is a bug: report it once and stop. */
void rtos_fatal(u64 esr, u64 elr, u64 far, const u64 *frame)
{
	static volatile bool reported;

	if (!reported) {
		reported = true;
		printf("rtos: exception ESR=0x%lx ELR=0x%lx FAR=0x%lx LR=0x%lx SP=0x%lx in task %s\n",
		       esr, elr, far, frame[19], (u64)frame + 176,
		       sched_current() ? sched_current()->name : "(none)");
	}
	halt();
}

static void local_setup(u32 intid, u8 prio, bool on)
{
	if (on) {
		gic_local_priority(intid, prio);
		/* Timer PPIs are level-sensitive; SGIs have no trigger to set. */
		if (intid >= 16)
			gic_local_level(intid);
	}
	gic_local_enable(intid, on);
}

rtos_status rtos_irq_attach(uint32_t intid, uint8_t priority, rtos_isr isr, void *arg)
{
	bool was;

	if (!gic_ready)
		return RTOS_ESTATE;
	if (intid >= intid_limit)
		return RTOS_EINVAL;
	if (priority > LOWEST_USABLE_PRIO)
		priority = LOWEST_USABLE_PRIO;
	was = rtos_irq_disable();
	handlers[intid].isr = isr;
	handlers[intid].arg = arg;
	if (intid < 32)
		local_setup(intid, priority, isr != NULL);
	else if (isr)
		gic_spi_own(intid, priority, current_mpidr_affinity());
	else
		gic_dist_set_bit(GICD_ICENABLER, intid);
	rtos_irq_restore(was);
	return RTOS_OK;
}

void rtos_sgi_self(uint32_t intid)
{
	gic_send_sgi(current_mpidr_affinity(), intid & 15);
}

void rtos_svc_attach(void (*handler)(void))
{
	svc_handler = handler;
}

/* Absolute deadlines: however late a tick is handled, the next is not moved. */
static void tick_next(void)
{
	tick_cval += tick_period;
	frac_acc += tick_frac;
	if (frac_acc >= tick_hz) {
		frac_acc -= tick_hz;
		tick_cval++;
	}
	write_sysreg(cntv_cval_el0, tick_cval);
	/* The level must drop before the EOI, or the tick comes straight back. */
	isb();
}

static void tick_isr(uint32_t intid, void *arg)
{
	(void)intid;
	(void)arg;
	tick_fired = tick_cval;
	tick_next();
	sched_tick();
}

rtos_status tick_setup(const struct dt_info *dt, uint32_t hz)
{
	u64 freq = counter_freq();

	if (hz == 0 || hz > freq)
		return RTOS_EINVAL;
	tick_hz = hz;
	tick_period = freq / hz;
	tick_frac = freq % hz;
	tick_intid = dt->vtimer_intid;
	write_sysreg(cntv_ctl_el0, 0);
	isb();
	return rtos_irq_attach(tick_intid, TICK_PRIORITY, tick_isr, NULL);
}

void tick_arm(void)
{
	frac_acc = 0;
	tick_cval = counter_now();
	tick_next();
	write_sysreg(cntv_ctl_el0, CNTV_CTL_ENABLE);
	isb();
}

uint64_t rtos_tick_deadline(void)
{
	return tick_fired;
}

uint64_t rtos_counter(void)
{
	return counter_now();
}

uint64_t rtos_counter_hz(void)
{
	return counter_freq();
}
