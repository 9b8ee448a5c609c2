/*
 * From head.S to the application: the device tree is read and the console
 * opened before app_main, so that the application can read its bootargs
 * (the tick rate among them) before it calls rtos_init.
 */
#include <stdarg.h>
#include "port.h"
#include "arch.h"
#include "console.h"
#include "dt.h"
#include "psci.h"

static struct dt_info dt;
static uint64_t dtb_addr;
/* Whose turn it is at the console: see rtos_printf. */
static rtos_sem_t console_turn;

void rtos_boot(u64 dtb);

void rtos_boot(u64 dtb)
{
	const char *why = "";

	/* gic.c indexes its per-CPU state by TPIDR_EL1; we are CPU 0 only. */
	write_sysreg(tpidr_el1, 0);
	dtb_addr = dtb;
	if (!dt_read(dtb, &dt, &why)) {
		console_init(dt.console);
		printf("rtos: bad device tree at 0x%lx: %s\n", dtb, why);
		power_off(dt.psci);
	}
	console_init(dt.console);
	app_main();
	printf("rtos: app_main returned\n");
	power_off(dt.psci);
}

uint64_t rtos_boot_dtb(void)
{
	return dtb_addr;
}

rtos_status rtos_init(uint64_t dtb, uint32_t tick_hz)
{
	const char *why = "";
	rtos_status s;

	if (dtb && dtb != dtb_addr) {
		if (!dt_read(dtb, &dt, &why)) {
			printf("rtos: bad device tree at 0x%lx: %s\n", dtb, why);
			return RTOS_EINVAL;
		}
		dtb_addr = dtb;
		console_init(dt.console);
	}
	irq_mask();
	sched_init();
	rtos_sem_init(&console_turn, 1);
	s = irq_init(&dt);
	if (s == RTOS_OK)
		s = tick_setup(&dt, tick_hz ? tick_hz : RTOS_TICK_HZ_DEFAULT);
	return s;
}

const char *rtos_bootargs(void)
{
	return dt.bootargs ? dt.bootargs : "";
}

void rtos_power_off(void)
{
	irq_mask();
	power_off(dt.psci);
}

/*
 * Tasks take turns at the console by a semaphore and print with interrupts
 * on: a line is hundreds of trapped UART accesses, milliseconds under QEMU,
 * and masking them all would hold back every more urgent task for as long.
 * An ISR, a caller that masked interrupts itself, or code before the
 * scheduler runs prints masked instead; its line may land inside a task's.
 */
int rtos_printf(const char *fmt, ...)
{
	va_list ap;
	bool was = rtos_irq_disable();
	bool turn = !was && sched_started() && !sched_in_isr();
	int n;

	if (turn) {
		rtos_irq_restore(was);
		turn = rtos_sem_take(&console_turn, RTOS_WAIT_FOREVER) == RTOS_OK;
		if (!turn)
			was = rtos_irq_disable();
	}
	va_start(ap, fmt);
	n = vprintf(fmt, ap);
	va_end(ap);
	if (turn)
		rtos_sem_give(&console_turn);
	else
		rtos_irq_restore(was);
	return n;
}

/* Without an application (bench/ empty) the image runs the kernel's tests. */
__attribute__((weak)) void app_main(void)
{
	rtos_selftest();
}
