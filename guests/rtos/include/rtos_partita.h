/*
 * rtos_partita.h: Partita's channels, health monitor and virtual
 * accelerators for RTOS tasks, a thin layer over the hypercalls of
 * partita.h.
 *
 * One rule shapes it: no hypercall here ever blocks. A blocking hypercall
 * stops the vCPU, and with it every task of the RTOS, the more urgent ones
 * included. So a task that waits for room or for a message waits in the
 * RTOS instead: the library asks the hypervisor with PARTITA_POLL and,
 * while the port is full or empty, sleeps the calling task one tick before
 * asking again. A message is therefore noticed up to one tick after it
 * arrives; a doorbell is the way to hear of something at once.
 *
 * Status: every call returns a PARTITA_* status of partita.h (0 is
 * PARTITA_OK). The hypervisor's pass through unchanged; the library adds
 *   PARTITA_ETIMEOUT  a non-zero timeout ran out (with RTOS_NO_WAIT the
 *                     port's own PARTITA_EFULL or PARTITA_EEMPTY instead,
 *                     as the RTOS's queues answer RTOS_EFULL/RTOS_EEMPTY);
 *   PARTITA_ESTATE    asked to wait where no task can sleep: in an ISR,
 *                     before rtos_start() or in the idle task;
 *   PARTITA_EINVAL    a NULL pointer, a doorbell INTID that is no SPI, or
 *                     an argument the RTOS refused.
 * rtos_partita_status_name() spells any of them.
 *
 * Timeouts are in ticks, as everywhere in the RTOS: RTOS_NO_WAIT asks once,
 * RTOS_WAIT_FOREVER never gives up. Channels are numbered by the order of
 * [[channel]] in the configuration. Under Partita only: natively there is
 * no hypervisor to answer `hvc`.
 */
#ifndef RTOS_PARTITA_H
#define RTOS_PARTITA_H

#include "rtos.h"
#include "partita.h"

/* ---- Queuing ports ---- */

/*
 * Appends len bytes at msg to queuing channel `channel`, waiting up to
 * `timeout` ticks while the queue is full. PARTITA_ETOOLONG if len exceeds
 * the channel's max_message; PARTITA_EDENIED unless the caller is its
 * source.
 */
long rtos_port_send(uint32_t channel, const void *msg, uint32_t len, uint32_t timeout);

/*
 * Takes the oldest message of channel `channel` into buf (size bytes),
 * waiting up to `timeout` ticks while the queue is empty; *len is its
 * length. If buf is too small the message stays queued, the call returns
 * PARTITA_ESMALL at once and *len is the size needed. On a sampling
 * channel it reads the current message, waiting only for the first write.
 */
long rtos_port_receive(uint32_t channel, void *buf, uint32_t size, uint32_t *len,
		       uint32_t timeout);

/* ---- Sampling ports ---- */

struct rtos_sample {
	uint32_t len;		/* bytes copied (PARTITA_ESMALL: bytes needed) */
	uint64_t age_us;	/* since it was written */
	bool valid;		/* age_us within the channel's refresh */
};

/* Replaces the message of sampling channel `channel`; never waits. */
long rtos_sample_write(uint32_t channel, const void *msg, uint32_t len);

/*
 * Copies the newest message of sampling channel `channel` into buf (size
 * bytes) and says how old it is; never waits. A read does not consume:
 * the same message can be read again until the next write. PARTITA_EEMPTY
 * if nothing was ever written.
 */
long rtos_sample_read(uint32_t channel, void *buf, uint32_t size, struct rtos_sample *sample);

/* ---- Any channel ---- */

struct rtos_port_info {
	uint32_t kind;			/* PARTITA_CHANNEL_* */
	uint32_t max_message;		/* sampling, queuing: bytes */
	uint32_t depth;			/* queuing: messages */
	uint64_t refresh_us;		/* sampling */
	uint64_t window, window_size;	/* shared memory: guest-physical base, bytes */
};

/* What channel `channel` is; the fields its kind lacks are 0. */
long rtos_port_info(uint32_t channel, struct rtos_port_info *info);

/* ---- Channels by name (from the device tree, no hypercall) ---- */

struct rtos_channel {
	uint32_t index;			/* what the calls above take */
	uint32_t kind;			/* PARTITA_CHANNEL_* */
	bool send, receive;		/* sampling, queuing: this partition's side */
	bool writable;			/* shared memory: mapped read-write here */
	uint32_t max_message;		/* sampling, queuing: bytes */
	uint32_t depth;			/* queuing: messages */
	uint64_t refresh_us;		/* sampling */
	uint64_t window, window_size;	/* shared memory: guest-physical base, bytes */
	uint32_t doorbell_intid;	/* shared memory: the doorbell's SPI; 0: none */
};

/*
 * Finds channel `name` (as in the configuration) among those the
 * `/partita` node of the boot device tree lists for this partition, so
 * that a guest need not hard-code indices or INTIDs. PARTITA_EINVAL for a
 * NULL argument or a name this partition is not on; PARTITA_ESTATE if the
 * tree has no `/partita` node (not running on Partita) or cannot be read.
 * The fields its kind lacks are 0.
 */
long rtos_channel_find(const char *name, struct rtos_channel *ch);

/* ---- Doorbells (shared-memory channels) ---- */

/*
 * Raises the doorbell of shared-memory channel `channel` at vCPU 0 of every
 * other partition the channel lists; a partition that has not enabled it
 * yet gets it once it does.
 */
long rtos_doorbell_ring(uint32_t channel);

/*
 * Enables doorbell `intid` (the channel's doorbell_intid, an SPI 32-1019)
 * in this partition's distributor through rtos_irq_attach(), so isr runs
 * in IRQ context at each ring. NULL isr disables it. A ring that came
 * before (Partita latches it while the doorbell is disabled) runs isr as
 * soon as it is attached.
 */
long rtos_doorbell_attach(uint32_t intid, uint8_t priority, rtos_isr isr, void *arg);

/*
 * rtos_doorbell_attach() with a handler that gives sem at each ring, so a
 * task waits for the doorbell with rtos_sem_take(sem, timeout). Rings that
 * come while nobody waits are counted, not merged.
 */
long rtos_doorbell_attach_sem(uint32_t intid, uint8_t priority, rtos_sem_t *sem);

/* ---- Health monitor ---- */

/*
 * Reports an error of the partition's own: the health monitor applies the
 * partition's `reported` action, which may stop or restart it.
 */
long rtos_hm_report(uint32_t code);

/*
 * Moves the partition's watchdog deadline to one period from now;
 * *deadline (if not NULL) gets it, a counter value (rtos_counter()).
 * PARTITA_ESTATE if the configuration gives the partition no watchdog.
 */
long rtos_watchdog_kick(uint64_t *deadline);

struct rtos_watchdog {
	rtos_task_t task;
	uint32_t every;		/* ticks between kicks */
	volatile long status;	/* of the latest kick */
};

/*
 * Creates a task at `priority` that kicks the watchdog at once and then
 * every `every` ticks, for good; wd and stack must outlive it. The task
 * proves only that the RTOS still schedules it: at a low priority, a more
 * urgent task that keeps the CPU lets the watchdog expire, as it should.
 * Pick `every` so that it plus the longest such delay stays under the
 * partition's `watchdog` period.
 */
long rtos_watchdog_start(struct rtos_watchdog *wd, uint32_t every, uint32_t priority,
			 void *stack, size_t stack_size);

struct rtos_hm_page {
	uint32_t count;		/* records copied */
	uint64_t next;		/* `from` of the next read */
	uint64_t lost;		/* records the log overwrote before they were read */
};

/*
 * Copies up to max health-monitor records, oldest first, from sequence
 * number `from` on (0 for the oldest held) into records. Records are the
 * hypervisor's own, read in place. Needs the right "read-hm-log".
 */
long rtos_hm_read(struct partita_hm_record *records, uint32_t max, uint64_t from,
		  struct rtos_hm_page *page);

/* "stage2-fault", "watchdog", ... as the configuration spells them; "?" if unknown. */
const char *rtos_hm_event_name(unsigned int event);
/* "log", "restart", ... as the configuration spells them; "?" if unknown. */
const char *rtos_hm_action_name(unsigned int action);
/*
 * "OK", "EFULL", ...: a PARTITA_* status without its prefix, or the
 * accelerator library's own ("ACCEL_EDMA", "ACCEL_ECMD"); "?" if unknown.
 */
const char *rtos_partita_status_name(long status);

/* ---- Timed outputs (timing-accurate I/O, docs/hypercalls.md) ---- */

/*
 * Drives the GPIO lines in `pins` to the matching bits of `values` when
 * the counter (rtos_counter()) reaches `at`. Never waits: the hypervisor
 * does the write. PARTITA_ELATE, PARTITA_ETOOFAR, PARTITA_EDENIED and
 * PARTITA_EFULL say why a request was not taken.
 */
long rtos_tio_write_at(uint8_t pins, uint8_t values, uint64_t at);

/*
 * The same every `period` counter ticks from `first` on, a waveform, until
 * rtos_tio_cancel() of one of its pins.
 */
long rtos_tio_periodic(uint8_t pins, uint8_t values, uint64_t first, uint64_t period);

/* Drops the pending outputs on any of `pins`; *dropped (if not NULL) gets how many. */
long rtos_tio_cancel(uint8_t pins, uint32_t *dropped);

struct rtos_tio_stats {
	uint64_t done;		/* outputs performed */
	uint64_t max_error;	/* largest |done - asked|, counter ticks */
	uint64_t sum_error;	/* their sum: sum_error / done is the mean */
};

long rtos_tio_stats(struct rtos_tio_stats *stats);

/* ---- Accelerators, guest-aware (docs/accelerators.md) ---- */

/*
 * A virtual device driven the guest-aware way: a task asks for a PRR with
 * PARTITA_ACC_REQUEST, which never stalls, and sleeps on a semaphore until
 * IPC_READY says the device is connected; only then does it write the
 * interface page. The native way (just writing) would stall the vCPU at
 * that write, and with it every task of the RTOS.
 *
 * The registers are the truth, the signals only wake the task: after every
 * wake-up, and at least once a tick, the library reads STAT and OVER again
 * (or asks again, which is harmless: a request already connected, waiting
 * or under way is not made twice). So a READY that was for an earlier
 * request, or an error that no signal announces, costs at most a tick.
 *
 * Besides the PARTITA_* codes of the calls above, run returns the
 * device's own errors, outside the hypervisor's range:
 */
#define RTOS_ACCEL_EDMA		(-64)	/* STAT.ERR_DMA: a buffer outside the partition */
#define RTOS_ACCEL_ECMD		(-65)	/* STAT.ERR_CMD: a command or size not accepted */

/* What a device computes, from its `function` in the device tree. */
enum rtos_accel_function {
	RTOS_ACCEL_UNKNOWN,
	RTOS_ACCEL_QAM16,
	RTOS_ACCEL_QAM64,
	RTOS_ACCEL_FFT512,
	RTOS_ACCEL_FFT1024,
};

/* IRQ priority of the three signals. */
#define RTOS_ACCEL_IRQ_PRIO	0x60

/* One virtual device; the caller's memory, filled by rtos_accel_find. */
struct rtos_accel {
	uint64_t page;			/* the interface page, guest-physical */
	uint32_t device;		/* its index in `accelerators`: PARTITA_ACC_REQUEST's argument */
	enum rtos_accel_function function;
	uint32_t intid_wait, intid_ready, intid_preempt;
	rtos_sem_t signal;		/* given by READY and PREEMPT */
	/* Signals received so far, counted by the ISR. */
	volatile uint32_t waits, readies, preempts;
	/* Counter ticks (rtos_counter) the last acquire took, from request to connection. */
	uint64_t waited;
};

/*
 * Finds this partition's virtual device computing `function` ("qam16",
 * "qam64", "fft512", "fft1024"; the first in the partition's order if it
 * has several) among the `partita,accelerator` nodes of the boot device
 * tree: its page, index and three signal INTIDs (by `interrupt-names`).
 * Then initialises acc->signal and attaches the signals' ISR. Call it after
 * rtos_init, once per device. PARTITA_EINVAL for a NULL argument or no
 * such device; PARTITA_ESTATE if the tree is not Partita's or cannot be
 * read, or the RTOS refuses the interrupts (before rtos_init).
 */
long rtos_accel_find(struct rtos_accel *acc, const char *function);

/*
 * Makes sure the device is connected to a PRR: asks (PARTITA_ACC_REQUEST)
 * and, while it is not connected, blocks the calling task on acc->signal,
 * so that every other task runs meanwhile, for up to `timeout` ticks.
 * acc->waited gets the time it took. PARTITA_OK once connected;
 * PARTITA_EINVAL if the partition has no such device; PARTITA_ETIMEOUT if
 * the timeout ran out (RTOS_NO_WAIT: not connected at once), the request
 * staying queued; PARTITA_ESTATE where no task can block (an ISR, before
 * rtos_start).
 */
long rtos_accel_acquire(struct rtos_accel *acc, uint32_t timeout);

/*
 * One job: acquires the device, writes its buffers (in: in_bytes, a whole
 * number of frames; out: out_bytes), CMD (the frame length, 0 for
 * Ker-ONE's) and INT_CTRL = 1, starts it and blocks the task until OVER;
 * READY at the end of the job wakes it. If the device is taken away
 * meanwhile (IPC_PREEMPT, counted in acc->preempts), the job resumes by
 * itself from its saved context once connected again: the task just waits
 * longer. `timeout` in ticks covers the whole call. Returns the frames
 * done (RESULT), or RTOS_ACCEL_EDMA, RTOS_ACCEL_ECMD, or acquire's errors.
 * A job that timed out may still be running: its buffers stay the
 * device's until OVER. The buffers are guest-physical addresses (the RTOS
 * runs with its MMU off).
 */
long rtos_accel_run(struct rtos_accel *acc, const void *in, uint32_t in_bytes, void *out,
		    uint32_t out_bytes, uint32_t cmd, uint32_t timeout);

/*
 * Bytes of one frame of input and of output of `function` with CMD `cmd`
 * (docs/accelerators.md): QAM takes ceil(bits / 8) bytes and gives 4 bytes
 * (I then Q) a symbol; an FFT takes 4 bytes a sample and gives whole
 * blocks of N samples, the last zero-padded. PARTITA_EINVAL for an
 * unknown function or a NULL pointer.
 */
long rtos_accel_frame_bytes(enum rtos_accel_function function, uint32_t cmd, uint32_t *in,
			    uint32_t *out);

#endif
