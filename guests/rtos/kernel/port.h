/* What the scheduler, interrupts and boot code share on the target only. */
#ifndef PORT_H
#define PORT_H

#include "kernel.h"

struct dt_info;

/* head.S: saves x19-x30 on this stack, stores sp in *save, resumes next_sp. */
void ctx_switch(uint64_t *save, uint64_t next_sp);
/* head.S: resumes next_sp without saving anything (the first task). */
__attribute__((noreturn)) void ctx_start(uint64_t next_sp);
/* head.S: where a new task's first switch returns to; x19 holds the task. */
void task_boot(void);
/* The size of the frame ctx_switch leaves on a stack; x19 is its first slot, x30 its last. */
#define CTX_FRAME_WORDS 12

/* sched.c */
void sched_init(void);
void sched_tick(void);
bool sched_in_isr(void);
void sched_isr_enter(void);
void sched_isr_exit(void);
bool sched_started(void);
/* Switches to the most urgent ready task unless called from an ISR. */
void sched_reschedule(void);
/* Blocks the running task on wl (NULL: only a timeout) and returns why it woke. */
rtos_status sched_block(struct rtos_wait_list *wl, uint32_t timeout);
/* Readies a blocked task with this result; the caller reschedules. */
void sched_wake(struct rtos_task *t, rtos_status result);
struct rtos_task *sched_current(void);

/* irq.c */
rtos_status irq_init(const struct dt_info *dt);
rtos_status tick_setup(const struct dt_info *dt, uint32_t tick_hz);
/* The first tick one period from now. */
void tick_arm(void);

#endif
