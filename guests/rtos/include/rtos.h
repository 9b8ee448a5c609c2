/*
 * rtos.h: the Partita guest RTOS, for one CPU (vCPU 0).
 *
 * Fixed-priority preemptive scheduling over RTOS_PRIORITIES levels (0 is
 * the most urgent, as Thread-Metric counts), round robin among equals on
 * the tick, an O(1) bitmap ready queue; tasks with static stacks; counting
 * semaphores; message queues of fixed-size messages; fixed-block memory
 * pools; sleep in ticks. The tick comes from the EL1 virtual timer,
 * interrupts from the GICv3 system registers and distributor. The idle task
 * waits in WFI. Every call is for thread context unless it says ISR.
 *
 * All objects are caller-allocated (static), so nothing is ever allocated
 * at run time; every call returns an rtos_status.
 */
#ifndef RTOS_H
#define RTOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RTOS_PRIORITIES		32	/* 0 (most urgent) .. 31 */
#define RTOS_MAX_TASKS		32
#define RTOS_TICK_HZ_DEFAULT	100	/* Thread-Metric's 10 ms tick */

typedef enum {
	RTOS_OK = 0,
	RTOS_EINVAL = -1,	/* bad argument (NULL, size, priority) */
	RTOS_EEMPTY = -2,	/* nothing to take and no waiting asked for */
	RTOS_EFULL = -3,	/* no room and no waiting asked for */
	RTOS_ETIMEOUT = -4,	/* waited the whole timeout */
	RTOS_ESTATE = -5,	/* the task is not in a state that allows it */
	RTOS_ENOMEM = -6,	/* no free task slot */
} rtos_status;

/* Timeouts in ticks. */
#define RTOS_NO_WAIT		0u
#define RTOS_WAIT_FOREVER	0xffffffffu

typedef void (*rtos_entry)(void *arg);

struct rtos_task;		/* opaque outside the kernel */
typedef struct rtos_task *rtos_task_t;

/* Kernel objects; their fields belong to the kernel. */
struct rtos_wait_list {
	uint32_t bits;			/* which priorities have waiters */
	struct rtos_task *head[RTOS_PRIORITIES];
};

typedef struct {
	uint32_t count;
	struct rtos_wait_list waiters;
} rtos_sem_t;

typedef struct {
	uint8_t *buffer;		/* capacity * msg_size bytes, caller's */
	uint32_t msg_size, capacity;
	uint32_t head, count;
	struct rtos_wait_list senders, receivers;
} rtos_queue_t;

typedef struct {
	uint8_t *area;			/* blocks * block_size bytes, caller's */
	uint32_t block_size, blocks;
	void *free;			/* singly linked through the blocks */
	uint32_t free_count;
	struct rtos_wait_list waiters;
} rtos_pool_t;

/* ---- Start-up ---- */

/*
 * Boots the RTOS on the calling CPU: console, GIC, timer at tick_hz, from
 * the device tree at dtb. Then create tasks and call rtos_start().
 */
rtos_status rtos_init(uint64_t dtb, uint32_t tick_hz);
/* Starts scheduling; never returns. */
void rtos_start(void) __attribute__((noreturn));
/* The kernel command line from the device tree ("" if none). */
const char *rtos_bootargs(void);
/*
 * Before rtos_start: pick the ready queue, the O(1) bitmap (default) or a
 * linear scan of the priorities (the baseline of the seL4-style probe).
 */
void rtos_use_linear_ready_queue(bool linear);
/* Ends the run: PSCI SYSTEM_OFF (natively and under Partita). */
void rtos_power_off(void) __attribute__((noreturn));

/* ---- Tasks ---- */

/* stack: caller's static memory, 16-byte aligned, at least 1 KiB. */
rtos_status rtos_task_create(rtos_task_t *task, const char *name, rtos_entry entry, void *arg,
			     uint32_t priority, void *stack, size_t stack_size);
rtos_task_t rtos_task_self(void);
rtos_status rtos_task_suspend(rtos_task_t task);	/* itself included */
rtos_status rtos_task_resume(rtos_task_t task);		/* also from an ISR */
void rtos_yield(void);					/* round robin among equals */
void rtos_sleep(uint32_t ticks);
uint64_t rtos_ticks(void);				/* since rtos_start */

/* ---- Semaphores (give is ISR-safe) ---- */
rtos_status rtos_sem_init(rtos_sem_t *sem, uint32_t initial);
rtos_status rtos_sem_take(rtos_sem_t *sem, uint32_t timeout);
rtos_status rtos_sem_give(rtos_sem_t *sem);

/* ---- Message queues (send with RTOS_NO_WAIT is ISR-safe) ---- */
rtos_status rtos_queue_init(rtos_queue_t *q, void *buffer, uint32_t msg_size, uint32_t capacity);
rtos_status rtos_queue_send(rtos_queue_t *q, const void *msg, uint32_t timeout);
rtos_status rtos_queue_receive(rtos_queue_t *q, void *msg, uint32_t timeout);

/* ---- Fixed-block pools ---- */
/* block_size is rounded up to 8; area holds blocks * that many bytes. */
rtos_status rtos_pool_init(rtos_pool_t *pool, void *area, uint32_t block_size, uint32_t blocks);
rtos_status rtos_pool_alloc(rtos_pool_t *pool, void **block, uint32_t timeout);
rtos_status rtos_pool_free(rtos_pool_t *pool, void *block);

/* ---- Interrupts ---- */

typedef void (*rtos_isr)(uint32_t intid, void *arg);
/* Routes INTID (an SGI 0-15, a PPI or an SPI) to isr at a priority 0-255. */
rtos_status rtos_irq_attach(uint32_t intid, uint8_t priority, rtos_isr isr, void *arg);
/* Raises SGI intid (0-15) on this CPU. */
void rtos_sgi_self(uint32_t intid);
/* The handler for `svc #0` (Thread-Metric's software interrupt); NULL clears it. */
void rtos_svc_attach(void (*handler)(void));
/* Masks/unmasks IRQs on this CPU; returns the previous mask state. */
bool rtos_irq_disable(void);
void rtos_irq_restore(bool was_disabled);

/* ---- Console ---- */
int rtos_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- Time ---- */
uint64_t rtos_counter(void);		/* CNTVCT_EL0 */
uint64_t rtos_counter_hz(void);		/* CNTFRQ_EL0 */
/*
 * The counter value the last tick was due at (its CNTV_CVAL_EL0); 0 before
 * the first. A task that tick woke measures its release latency as
 * rtos_counter() - rtos_tick_deadline().
 */
uint64_t rtos_tick_deadline(void);

/* ---- Additions ---- */

/*
 * The application's entry, defined by bench/: the kernel's boot code calls
 * it on vCPU 0 at EL1 with IRQs masked, once the device tree is read and the
 * console is up, so rtos_bootargs() and rtos_printf() already work. It calls
 * rtos_init(rtos_boot_dtb(), tick_hz), creates tasks and calls rtos_start().
 * If it returns, the kernel powers off. The kernel's weak default runs
 * rtos_selftest().
 */
void app_main(void);
/* The device tree address the boot loader passed in x0. */
uint64_t rtos_boot_dtb(void);
/*
 * The kernel's own tests (bench=selftest): rtos_init, its tasks and
 * rtos_start, "selftest: ..." lines, then power off. Call it instead of
 * rtos_init; honours sched=linear and tick_hz= in the bootargs.
 */
void rtos_selftest(void) __attribute__((noreturn));
/*
 * Ends a task (itself included) whatever its state and frees its slot; its
 * stack may be reused once this returns (or, for itself, never returns).
 * A task whose entry function returns is deleted the same way.
 */
rtos_status rtos_task_delete(rtos_task_t task);

#endif
