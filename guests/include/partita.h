/*
 * partita.h: Partita's hypercall ABI for C guests. No other header needed.
 *
 * Calls are SMC Calling Convention fast calls made with `hvc #0`: x0 holds
 * the function ID, x1..x4 the arguments. x0 returns a status (PARTITA_OK or
 * a negative PARTITA_E*), x1..x3 values where a call has them. x4..x17 may
 * be clobbered, as SMCCC allows. The Rust side is partita_core::hypercall;
 * docs/hypercalls.md describes every call.
 */
#ifndef PARTITA_H
#define PARTITA_H

/* Major version in bits 16..31, minor in bits 0..15. */
#define PARTITA_ABI_VERSION		0x00010000UL

/* Fast call, 64-bit convention, owner 6: vendor-specific hypervisor service. */
#define PARTITA_CALL(n)			(0xC6000000UL + (n))

/* -> x1 = PARTITA_ABI_VERSION */
#define PARTITA_VERSION			PARTITA_CALL(0x00)

/* Own vCPUs, by index in the partition's `cpus` list. */
#define PARTITA_VCPU_START		PARTITA_CALL(0x01)	/* (vcpu, entry, x0 for it) */
#define PARTITA_VCPU_SUSPEND		PARTITA_CALL(0x02)	/* (vcpu) */
#define PARTITA_VCPU_RESUME		PARTITA_CALL(0x03)	/* (vcpu) */
#define PARTITA_VCPU_HALT		PARTITA_CALL(0x04)	/* (vcpu): final until reset */
#define PARTITA_VCPU_STATE		PARTITA_CALL(0x05)	/* (vcpu) -> x1 = PARTITA_VCPU_* */

/* Partitions, by index in the configuration; each needs its `rights` entry. */
#define PARTITA_PARTITION_SELF		PARTITA_CALL(0x10)	/* -> x1 = own index */
#define PARTITA_PARTITION_SUSPEND	PARTITA_CALL(0x11)	/* (partition) right "suspend" */
#define PARTITA_PARTITION_RESUME	PARTITA_CALL(0x12)	/* (partition) right "resume" */
#define PARTITA_PARTITION_RESTART	PARTITA_CALL(0x13)	/* (partition) right "restart" */
#define PARTITA_PARTITION_HALT		PARTITA_CALL(0x14)	/* (partition) right "halt" */
#define PARTITA_PARTITION_STATE		PARTITA_CALL(0x15)	/* (partition) -> x1 = PARTITA_PART_* */

/* Cyclic plans, by index in the configuration; right "switch-plan". */
#define PARTITA_PLAN_SWITCH		PARTITA_CALL(0x20)	/* (plan) -> x1 = counter value it starts at */
#define PARTITA_PLAN_CURRENT		PARTITA_CALL(0x21)	/* -> x1 = plan in force, x2 = pending or ~0 */

/*
 * Channels, by index in the configuration ([[channel]] in file order). Only
 * the partitions a channel lists may name it (else PARTITA_EDENIED, and a
 * health-monitor event). Buffers lie in the caller's RAM (else
 * PARTITA_EFAULT). `deadline` is a counter value (CNTVCT_EL0) to wait until
 * for room or a message: PARTITA_POLL returns at once, PARTITA_FOREVER never
 * times out.
 */
#define PARTITA_PORT_SEND		PARTITA_CALL(0x30)	/* (channel, buf, len, deadline) */
#define PARTITA_PORT_RECEIVE		PARTITA_CALL(0x31)	/* (channel, buf, size, deadline) -> x1 = length,
								   sampling: x2 = age (us), x3 = valid;
								   queuing: x2 = messages left */
#define PARTITA_PORT_INFO		PARTITA_CALL(0x32)	/* (channel) -> x1 = PARTITA_CHANNEL_*,
								   x2 = max message (window size),
								   x3 = depth, refresh (us) or window IPA */
#define PARTITA_DOORBELL_RING		PARTITA_CALL(0x38)	/* (channel): doorbell INTID at the others */

/* Health monitor. */
#define PARTITA_HM_REPORT		PARTITA_CALL(0x40)	/* (code): an error of the partition's own */
#define PARTITA_WATCHDOG_KICK		PARTITA_CALL(0x41)	/* -> x1 = new deadline (counter) */
#define PARTITA_HM_READ			PARTITA_CALL(0x42)	/* (buf, size, from) -> x1 = records, x2 = next
								   from, x3 = records lost; right "read-hm-log" */

/*
 * Accelerators, guest-aware (docs/accelerators.md): asks for a PRR for the
 * caller's virtual device (its index in `accelerators`) without stalling.
 * x1 = 1 if connected on return; 0 if the request waits, and IPC_READY
 * follows once it is connected.
 */
#define PARTITA_ACC_REQUEST		PARTITA_CALL(0x50)	/* (device) -> x1 = connected */
/*
 * Gives the device up, to do its work on the CPU: a waiting request (a
 * preempted job's too, whose saved context is discarded) is dropped, a
 * PRR it holds freed, a computation there abandoned at once. On return
 * the accelerator writes nothing more: the output frames RESULT counts
 * are final, the others may be partly written. STAT loses CONNECTED,
 * BUSY, WAITING and PREEMPTED; a START not taken is cleared; the page is
 * read-only, so the next write asks afresh.
 */
#define PARTITA_ACC_RELEASE		PARTITA_CALL(0x51)	/* (device) */

/*
 * Timed outputs (timing-accurate I/O): drive the GPIO lines in `pins` (a
 * mask of lines the configuration grants, bit n for line n) to the
 * matching bits of `values` when the counter (CNTVCT_EL0) reaches `at`;
 * with a non-zero `period` (counter ticks), again every period until
 * cancelled. Partita records the error |done - at| of each. PARTITA_ELATE
 * for an `at` already reached, PARTITA_ETOOFAR beyond the horizon,
 * PARTITA_EDENIED for a pin not granted, PARTITA_EFULL when `depth`
 * operations are pending, PARTITA_EINVAL for a mask or values beyond 8
 * bits or a period shorter than twice the lead.
 */
#define PARTITA_TIO_WRITE_AT		PARTITA_CALL(0x60)	/* (pins, values, at, period) */
#define PARTITA_TIO_CANCEL		PARTITA_CALL(0x61)	/* (pins) -> x1 = pending operations dropped */
#define PARTITA_TIO_STATS		PARTITA_CALL(0x62)	/* -> x1 = done, x2 = largest error,
								   x3 = sum of errors (counter ticks) */

/* Status codes in x0. */
#define PARTITA_OK			0
#define PARTITA_ENOTSUPPORTED		(-1)	/* no such function */
#define PARTITA_EINVAL			(-2)	/* no such vCPU, partition or plan; or oneself */
#define PARTITA_EDENIED			(-3)	/* the configuration grants no such right */
#define PARTITA_ESTATE			(-4)	/* not in a state that allows it */
#define PARTITA_EBUSY			(-5)	/* reserved: no call returns it now */
#define PARTITA_EFULL			(-6)	/* queuing port full: nothing sent */
#define PARTITA_EEMPTY			(-7)	/* nothing to receive */
#define PARTITA_ETOOLONG		(-8)	/* message longer than the port's max_message */
#define PARTITA_ESMALL			(-9)	/* buffer too small: x1 = bytes needed */
#define PARTITA_ETIMEOUT		(-10)	/* the deadline passed */
#define PARTITA_EFAULT			(-11)	/* buffer outside the caller's (writable) RAM */
#define PARTITA_ELATE			(-12)	/* timed output: the asked time has come already */
#define PARTITA_ETOOFAR			(-13)	/* timed output: beyond the configured horizon */

/* Deadlines of blocking port calls. */
#define PARTITA_POLL			0UL
#define PARTITA_FOREVER			(~0UL)

/* Channel kinds (PARTITA_PORT_INFO). */
#define PARTITA_CHANNEL_SAMPLING	0
#define PARTITA_CHANNEL_QUEUING		1
#define PARTITA_CHANNEL_SHARED_MEMORY	2

/* Health-monitor record (PARTITA_HM_READ): 32 bytes, little endian. */
struct partita_hm_record {
	unsigned long seq;
	unsigned long time;	/* counter value */
	unsigned long detail;	/* fault address, syndrome, function ID or code */
	unsigned char partition;
	unsigned char vcpu;
	unsigned char event;	/* PARTITA_HM_EV_* */
	unsigned char action;	/* PARTITA_HM_ACT_* */
	unsigned int code;	/* PARTITA_HM_EV_REPORTED: the reported code */
};

#define PARTITA_HM_EV_STAGE2_FAULT	0
#define PARTITA_HM_EV_FORBIDDEN		1
#define PARTITA_HM_EV_ILLEGAL_HYPERCALL	2
#define PARTITA_HM_EV_WATCHDOG		3
#define PARTITA_HM_EV_BUDGET_OVERRUN	4
#define PARTITA_HM_EV_REPORTED		5

#define PARTITA_HM_ACT_IGNORE		0
#define PARTITA_HM_ACT_LOG		1
#define PARTITA_HM_ACT_SUSPEND		2
#define PARTITA_HM_ACT_RESTART		3
#define PARTITA_HM_ACT_HALT		4
#define PARTITA_HM_ACT_RESET_SYSTEM	5
#define PARTITA_HM_ACT_INJECT		6

/* vCPU states (XtratuM's, plus PSCI's off). */
#define PARTITA_VCPU_OFF		0
#define PARTITA_VCPU_BOOT		1
#define PARTITA_VCPU_NORMAL		2
#define PARTITA_VCPU_SUSPENDED		3
#define PARTITA_VCPU_HALTED		4

/* Partition states. */
#define PARTITA_PART_RUNNING		0
#define PARTITA_PART_STOPPED		1	/* stopped by Partita after a fault */
#define PARTITA_PART_OFF		2	/* its own PSCI SYSTEM_OFF */
#define PARTITA_PART_RESTARTING		3
#define PARTITA_PART_SUSPENDED		4
#define PARTITA_PART_HALTED		5

/*
 * Accelerator interface page (docs/accelerators.md): one 4 KiB page per
 * virtual device, at the guest-physical address the configuration gives.
 * While the device is not connected to a PRR the page is read-only and the
 * first write asks Partita for one: a native guest just writes and its vCPU
 * waits at that store until the device is connected.
 */
#define PARTITA_ACC_STAT		0x00	/* 32-bit, read-only: PARTITA_ACC_STAT_* */
#define PARTITA_ACC_START		0x08	/* 8-bit: write 1 to start */
#define PARTITA_ACC_OVER		0x0c	/* 8-bit: 1 when over; write 0 to clear */
#define PARTITA_ACC_CMD			0x10	/* 32-bit: accelerator command */
#define PARTITA_ACC_DATA_ADDR		0x18	/* 64-bit: input buffer (guest-physical) */
#define PARTITA_ACC_DATA_SIZE		0x20	/* 32-bit: input bytes */
#define PARTITA_ACC_RESULT		0x28	/* 64-bit, read-only: frames processed */
#define PARTITA_ACC_INT_CTRL		0x30	/* 32-bit: bit 0 signals READY when over */
#define PARTITA_ACC_PORT(n)		(0x40 + 4 * (n))	/* 8 x 32-bit custom ports */
#define PARTITA_ACC_OUT_ADDR_LO		PARTITA_ACC_PORT(0)	/* output buffer, low 32 bits */
#define PARTITA_ACC_OUT_ADDR_HI		PARTITA_ACC_PORT(1)	/* output buffer, high 32 bits */
#define PARTITA_ACC_OUT_SIZE		PARTITA_ACC_PORT(2)	/* output bytes */

#define PARTITA_ACC_STAT_CONNECTED	(1u << 0)	/* connected to a PRR */
#define PARTITA_ACC_STAT_BUSY		(1u << 1)	/* computing */
#define PARTITA_ACC_STAT_WAITING	(1u << 2)	/* a request for a PRR waits */
#define PARTITA_ACC_STAT_PREEMPTED	(1u << 3)	/* preempted; resumes when connected */
#define PARTITA_ACC_STAT_ERR_DMA	(1u << 8)	/* a buffer outside the partition */
#define PARTITA_ACC_STAT_ERR_CMD	(1u << 9)	/* a command or size not accepted */

struct partita_result {
	long status;
	unsigned long value;	/* x1 */
	unsigned long value2;	/* x2 */
	unsigned long value3;	/* x3 */
};

static inline struct partita_result partita_call4(unsigned long fn, unsigned long a1,
						  unsigned long a2, unsigned long a3,
						  unsigned long a4)
{
	register unsigned long x0 __asm__("x0") = fn;
	register unsigned long x1 __asm__("x1") = a1;
	register unsigned long x2 __asm__("x2") = a2;
	register unsigned long x3 __asm__("x3") = a3;
	register unsigned long x4 __asm__("x4") = a4;
	struct partita_result r;

	__asm__ volatile("hvc #0"
			 : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3), "+r"(x4)
			 :
			 : "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12",
			   "x13", "x14", "x15", "x16", "x17", "memory");
	r.status = (long)x0;
	r.value = x1;
	r.value2 = x2;
	r.value3 = x3;
	return r;
}

static inline struct partita_result partita_call(unsigned long fn, unsigned long a1,
						 unsigned long a2, unsigned long a3)
{
	return partita_call4(fn, a1, a2, a3, 0);
}

#endif
