/*
 * The benchmark application: reads the bootargs, starts the RTOS with one
 * controller task at the most urgent priority (Thread-Metric's reporter),
 * and runs the chosen benchmarks one after another, each on workers of its
 * own that are deleted before the next begins; or, with ipc=, the Partita
 * channel exchange of ipc.c; or, with accel=, the guest-aware accelerator
 * jobs of accel.c; or, with accel_table6=, accel.c's software against
 * accelerator timing; or, with demo=1, the demo's tasks of demo.c; or, with
 * relev=, the timed tick releases of relev.c.
 */
#include "rtos.h"
#include "bench.h"

#define CONTROLLER_STACK	8192

struct bench_args bench_args;
static rtos_task_t controller;
static uint8_t controller_stack[CONTROLLER_STACK] __attribute__((aligned(16)));

/* The kernel's printf has no precision, so the token goes out by characters. */
static void print_bad(const char *tok, size_t n)
{
	bool was = rtos_irq_disable();
	size_t i;

	rtos_printf("bad bootargs: ");
	for (i = 0; i < n; i++)
		rtos_printf("%c", tok[i]);
	rtos_printf("\n");
	rtos_irq_restore(was);
}

static void controller_main(void *arg)
{
	unsigned int id;
	uint32_t select = bench_args.select;

	(void)arg;
	if (bench_args.demo)
		demo_run(&bench_args);
	if (bench_args.ipc != IPC_NONE)
		ipc_run(&bench_args);
	if (bench_args.accel != ACCEL_OFF)
		accel_run(&bench_args);
	if (bench_args.table6)
		accel_table6_run(&bench_args);
	/* In place of the benchmarks, as ipc= and accel= are. */
	if (bench_args.relev) {
		relev_run(&bench_args);
		select = 0;
	}
	for (id = 0; id < B_COUNT; id++) {
		if (!(select & (1u << id)))
			continue;
		if (id == B_COREMARK)
			coremark_run(bench_args.coremark_ms);
		else if (id == B_SCHEDPRIO)
			schedprio_run(bench_args.linear);
		else
			tm_run(id);
		workers_release_all();
	}
	rtos_printf("bench done\n");
	rtos_power_off();
}

void app_main(void)
{
	rtos_status s;

	bench_args_parse(rtos_bootargs(), &bench_args, print_bad);
	if (bench_args.selftest)
		rtos_selftest();
	s = rtos_init(rtos_boot_dtb(), bench_args.tick_hz);
	if (s != RTOS_OK) {
		rtos_printf("bench: rtos_init failed: %d\n", s);
		return;
	}
	rtos_use_linear_ready_queue(bench_args.linear);
	s = rtos_task_create(&controller, "bench", controller_main, NULL, 0,
			     controller_stack, sizeof(controller_stack));
	if (s != RTOS_OK) {
		rtos_printf("bench: no controller task: %d\n", s);
		return;
	}
	rtos_start();
}
