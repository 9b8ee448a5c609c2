/*
 * The benchmarks that run on the guest RTOS: Thread-Metric (tests 0-7 and
 * the SVC variants of 3 and 4), a CoreMark-style workload and the
 * seL4-style scheduler probe. Everything here is written from the
 * benchmarks' published descriptions.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* In the order `bench=all` runs them. */
enum bench_id {
	B_TM0, B_TM1, B_TM2, B_TM3, B_TM4, B_TM5, B_TM6, B_TM7,
	B_TM3SVC, B_TM4SVC, B_COREMARK, B_SCHEDPRIO,
	B_COUNT
};

#define BENCH_ALL	((1u << B_COUNT) - 1)

/* ipc=: a Partita channel exchange instead of the benchmarks. */
enum ipc_role { IPC_NONE, IPC_PING, IPC_PONG };

/* accel=: guest-aware jobs on a virtual accelerator instead of the benchmarks. */
enum accel_mode { ACCEL_OFF, ACCEL_QAM16, ACCEL_QAM64, ACCEL_FFT512, ACCEL_FFT1024 };
#define ACCEL_NO_CHANNEL	UINT32_MAX
/* accel_table6=all: a bit per enum accel_mode but ACCEL_OFF. */
#define ACCEL_TABLE6_ALL	(((1u << (ACCEL_FFT1024 + 1)) - 1) & ~1u)

struct bench_args {
	uint32_t select;	/* a bit per enum bench_id; 0 for selftest */
	bool selftest;
	uint32_t period_ms;
	uint32_t coremark_ms;
	uint32_t tick_hz;	/* 0: the kernel's default */
	bool linear;		/* sched=linear */
	uint32_t ipc;		/* enum ipc_role */
	uint32_t ipc_tx, ipc_rx;	/* channel indices */
	uint32_t ipc_count;	/* round trips */
	uint32_t ipc_kick;	/* ticks between watchdog kicks; 0: no kicking task */
	uint32_t ipc_hold;	/* ticks to stay up after the exchange */
	uint32_t ipc_report;	/* ping: a code to report and read back; 0: none */
	uint32_t ipc_bell;	/* 1: ring through the channel named "bell" */
	uint32_t accel;		/* enum accel_mode */
	uint32_t accel_frames;	/* frames per job */
	uint32_t accel_jobs;
	uint32_t accel_seed;	/* job j's input comes from seed accel_seed + j */
	uint32_t accel_wait;	/* a channel to receive one message on first; ACCEL_NO_CHANNEL: none */
	uint32_t table6;	/* accel_table6=: a bit per enum accel_mode to time in software and on its device */
	bool demo;		/* demo=1: the demo's tasks (demo.c) instead of the benchmarks */
	uint32_t demo_period_ms;	/* the control task's period */
	uint32_t demo_deadline_us;	/* its deadline, from each release */
	uint32_t demo_send_every;	/* a telemetry message every this many periods */
	uint32_t demo_tio_us;	/* half a period of the square wave on GPIO 0 */
	uint32_t demo_accel_ms;	/* between two accelerator jobs */
	uint32_t relev;		/* relev=N: N timed tick releases (relev.c) instead of the benchmarks; 0: off */
};

/* ---- Pure helpers (args.c), also built for the host ---- */

/* Called with each token whose value is bad; the defaults stay in place. */
typedef void (*bench_bad_fn)(const char *tok, size_t n);

void bench_args_parse(const char *cmdline, struct bench_args *a, bench_bad_fn bad);
const char *bench_name(enum bench_id id);
/* "qam16", ...: the device tree's `function` of an accel= mode; "" for ACCEL_OFF. */
const char *accel_mode_name(enum accel_mode mode);
/* Sorts v in place; the lower median. */
uint64_t median_u64(uint64_t *v, size_t n);
/* How many counter counts make ms milliseconds at hz, without overflow. */
uint64_t bench_ms_to_counts(uint64_t ms, uint64_t hz);
uint64_t bench_counts_to_ms(uint64_t counts, uint64_t hz);

/* ---- Worker tasks (worker.c) ---- */

/*
 * A test's tasks are workers: each has a fixed priority and static stack
 * and runs jobs the controller hands it, each job returning once
 * `bench_stop` is set. Between jobs a worker waits on its own semaphore.
 * Slots are few (RTOS_MAX_TASKS), so the controller deletes every worker
 * after each benchmark and the next creates its own.
 */
typedef void (*job_fn)(unsigned int idx);

struct worker;

extern volatile bool bench_stop;
extern struct bench_args bench_args;

#define TM_COOP_PRIO	31	/* tm1's five equals */
#define TM_COOP_TASKS	5

/* The worker at prio (slot 0) or one of TM_COOP_PRIO's extras (slot 1..4). */
struct worker *worker_get(uint32_t prio, unsigned int slot);
void *worker_task(struct worker *w);	/* its rtos_task_t */
/* Hands w its job; it starts when the controller next blocks. */
void worker_start(struct worker *w, job_fn job, unsigned int idx);
/* Deletes w, which must be between jobs; its slot and stack are free again. */
void worker_release(struct worker *w);
void workers_release_all(void);
/*
 * Sets bench_stop and, once a tick, calls kick (if any) to wake jobs that
 * wait for one another, until every w in ws is back between jobs; false if
 * some never came back (deleting them is then the only way to stop them).
 */
bool workers_stop(struct worker *const *ws, unsigned int n, void (*kick)(void));
/* Waits for the next tick, so periods start on a tick edge. */
uint64_t bench_align_tick(void);
/* Sleeps in ticks until period_ms of counter time has passed since start. */
void bench_wait_period(uint64_t start, uint32_t period_ms);

/* ---- The benchmarks ---- */
void tm_run(enum bench_id id);
void coremark_run(uint32_t ms);
void schedprio_run(bool linear);
/* ipc=ping|pong (ipc.c): runs the exchange, prints its checks, powers off. */
void ipc_run(const struct bench_args *a) __attribute__((noreturn));
/* accel=qam16|... (accel.c): runs the jobs, prints one line each, powers off. */
void accel_run(const struct bench_args *a) __attribute__((noreturn));
/* demo=1 (demo.c): the demo's control, timed output, accelerator and telemetry; never returns. */
void demo_run(const struct bench_args *a) __attribute__((noreturn));
/* accel_table6=... (accel.c): times each function in software and on its device, powers off. */
void accel_table6_run(const struct bench_args *a) __attribute__((noreturn));
/* relev=N (relev.c): N releases of the most urgent task by the tick, timed; prints their statistics. */
void relev_run(const struct bench_args *a);

#endif
