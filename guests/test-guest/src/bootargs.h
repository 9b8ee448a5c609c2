#ifndef BOOTARGS_H
#define BOOTARGS_H

#include <stdbool.h>
#include "arch.h"

enum misbehave_kind {
	MIS_NONE = 0,
	MIS_WRITE_OUTSIDE,
	MIS_READ_OTHER,
	MIS_GICD,
	MIS_SMC,
	MIS_SYSREG,
};

enum part_ctl_kind {
	PART_CTL_NONE = 0,
	PART_CTL_SUSPEND,	/* suspend, wait, resume */
	PART_CTL_HALT,
	PART_CTL_RESTART,
};

/* shm=...: the part this partition plays on a shared-memory channel (ipc.c). */
enum ipc_bench_role {
	IPC_BENCH_NONE = 0,
	IPC_BENCH_MEASURE,	/* measures hypercalls, ports and the doorbell */
	IPC_BENCH_ECHO,		/* answers it */
};

enum shm_role {
	SHM_NONE = 0,
	SHM_WRITE,	/* fills the window, rings, waits for the ack */
	SHM_READ,	/* takes the doorbell, checks, acks */
	SHM_VIEW,	/* a read-only member: reads, then tries to write */
	SHM_OUTSIDE,	/* not a member: rings, then touches the window at `addr` */
};

/* port-probe=...: which side of channels 0 and 1 this partition is on (ipc.c). */
enum port_probe_role {
	PROBE_NONE = 0,
	PROBE_SOURCE,
	PROBE_DESTINATION,
	PROBE_OTHER,
};

/* acc-fn=...: what the virtual device at acc= computes (accel.c). */
enum acc_fn {
	ACC_QAM16 = 0,
	ACC_QAM64,
	ACC_FFT512,
	ACC_FFT1024,
};

/* acc-tell-at=...: when the guest messages acc-tell (accel.c). */
enum acc_moment {
	ACC_AT_ASK = 0,		/* just before its first request */
	ACC_AT_BUSY,		/* once its first job computes */
	ACC_AT_DONE,		/* once every job is over */
	ACC_AT_READY,		/* before it waits for its turn (acc-wait) */
};

/* arch=...: which architecture conformance test runs (arch.c; the timer
 * and interrupt ones in conformance.c). */
enum arch_test {
	ARCH_NONE = 0,
	ARCH_ABORT,		/* synchronous external aborts, handled */
	ARCH_UNDEF,		/* UNDEFINED system registers, handled */
	ARCH_PMU,		/* the ID registers: no PMU advertised */
	ARCH_DEBUG,		/* breakpoint, single step, watchpoint */
	ARCH_DEBUG_KEEP,	/* the debug registers keep their values */
	ARCH_PTIMER,		/* the EL1 physical timer and its PPI */
	ARCH_LEVEL,		/* level-triggered interrupts keep level semantics */
};

/* No channel: acc-wait and acc-tell are off. */
#define ACC_NO_CHANNEL (~0ull)

struct bootargs {
	u64 ticks;		/* 0: forever */
	u64 period_ms;
	enum misbehave_kind misbehave;
	u64 at;
	u64 addr;
	bool has_addr;
	bool marker_write;
	bool marker_scan;
	u64 scan_at;
	bool end_reset;	/* end=reset: SYSTEM_RESET after the last tick */
	bool secondaries_off;	/* cpu-off=1: each secondary powers off once, then is started again */
	u64 cpu_on_race;	/* rounds of vCPUs 0 and 1 starting vCPU 2 at once */
	u64 peek;		/* peek=ADDR: read a word there just before tick 1 */
	bool has_peek;
	/* Interrupt tests; 0 (or false) leaves each one off. */
	u64 timer_hz, timer_ticks;	/* periodic virtual timer, both needed */
	u64 sgi;			/* SGIs each way between vCPU 0 and 1 */
	bool sgi_probe;			/* then SGIs from every register, and refused ones */
	bool sgi_watch;			/* count every SGI taken, print it at the end */
	bool lr_overflow;
	u32 spi;			/* an SPI INTID to own and pend */
	u32 gicd_attack;		/* an SPI INTID not ours to tamper with */
	u64 mask_spin_ms;
	bool cpuif_attack;		/* reach for Partita's group 0, then mask everything */
	u64 irq_bench;			/* one-shot timer samples */
	bool irq_bench_wait;		/* irq-bench waits in WFI instead of spinning */
	u64 irq_bench_delay;		/* irq-bench's shortest delay, in counter ticks */
	u64 irq_bench_at_ms;		/* irq-bench starts at this counter time; 0: at once */
	u64 ptimer_ms, ptimer_rounds;	/* arch=ptimer: each round's delay, and how many */
	u64 ptimer_hold_us;		/* arch=ptimer: the handler keeps the line asserted this long */
	/* Hypercall tests (control.c); 0 leaves each one off. */
	bool vcpu_ctl;			/* own vCPU 1: start, suspend, resume, halt */
	enum part_ctl_kind part_ctl;	/* an operation on partition `target` */
	u64 target;
	u64 plan_switch;		/* plan index + 1 to switch to */
	u64 ctl_after_ms;		/* delay before part-ctl / plan-switch */
	u64 duty_busy_us, duty_idle_us, duty_cycles;	/* duty: sleep, then compute */
	u64 hm_report;			/* code + 1 to report to the health monitor */
	bool bad_hvc;			/* call a hypercall that does not exist */
	bool probe_firmware;		/* make Linux's SMCCC discovery calls */
	bool print_seed;		/* print /chosen/kaslr-seed and rng-seed */
	u64 count_ms;			/* count loop iterations for this long; 0: off */
	u64 fp_ms;			/* every vCPU checks its FP/SIMD values this long; 0: off */
	u64 fp_at_ms;			/* the counter time, in ms, the FP/SIMD check starts at; 0: at once */
	u64 count_at_ms;		/* start counting at this counter time */
	u64 count_gap_ticks;		/* a batch this long or longer was off its pCPU; 0: off */
	bool has_count_at;
	/* Channels (ipc.c); 0 leaves each one off. */
	u64 chan;			/* the channel index the port modes use */
	u64 queue_send, queue_recv;	/* sequence-numbered messages on `chan` */
	u64 pause_every, pause_ms;	/* queue-recv: a busy pause every so many messages */
	u64 sample_write, sample_read;	/* samples written / reads made on `chan` */
	u64 sample_ms, sample_at_ms;	/* one every sample_ms, from counter time sample_at_ms */
	enum shm_role shm;
	u64 shm_rounds;
	u32 doorbell;			/* the doorbell SPI shm=read enables */
	enum port_probe_role port_probe;
	/* Health monitor (hm.c) and fuzzing (fuzz.c). */
	u64 watchdog_kicks, kick_ms;	/* kick this often, then stop */
	u64 hm_read;			/* HM_READ until this many records are there */
	u64 fuzz, fuzz_seed;		/* random hypercalls */
	enum ipc_bench_role ipc_bench;	/* the communication benchmark (ipcbench.c) */
	u64 ipc_n;			/* operations of each kind it measures */
	bool ipc_sgi;			/* it also measures an SGI to itself */
	u64 until_off;			/* tick until this partition has stopped */
	/* Accelerators (accel.c): acc=0 leaves them off. */
	u64 acc;			/* the interface page */
	enum acc_fn acc_fn;
	u64 acc2;			/* a second device, used after the first */
	enum acc_fn acc2_fn;
	u64 acc_wait, acc_tell;		/* channels, or ACC_NO_CHANNEL */
	enum acc_moment acc_tell_at;
	u64 acc_delay_ms;		/* after acc-wait, before asking */
	u64 acc_frames, acc_jobs, acc_seed;
	u64 acc_gap_us;			/* a pause after each job */
	u64 acc_for_ms;			/* jobs until this long has passed; 0: acc-jobs */
	u32 acc_cmd;
	bool acc_bad;
	/* Jobs on acc move to the CPU when preempted (accel.c). */
	bool acc_fallback;
	u64 acc_fallback_ms;		/* a request waits this long at most; 0: as long as it takes */
	u64 acc_index;			/* acc's index in the partition's accelerators */
	bool has_until_off;
	/* Architecture conformance (arch.c). */
	enum arch_test arch;
	u64 arch_rounds;		/* arch=debug-keep: rounds of 5 ms */
	u64 arch_seed;			/* arch=debug-keep: its register values */
	/* Timed outputs (tio.c); 0 leaves each one off. */
	u64 tio;			/* outputs asked for and read back */
	u64 tio_wave;			/* half-periods of a periodic square wave */
	bool tio_status;		/* every refusal once */
	u64 tio_burst;			/* requests in a row against the queue's depth */
	u64 tio_attack_pin;		/* a line not ours, driven by call and by store */
	bool has_tio_attack;
	u32 tio_pins;			/* the lines tio, tio-wave and tio-burst drive */
	u64 tio_gap_us;			/* between outputs; half the wave's period */
	u64 tio_view;			/* where the controller's registers are read */
	u64 tio_at_ms;			/* tio and tio-wave start at this counter time at the earliest */
};

/* irq-bench keeps every sample for its histogram. */
#define IRQ_BENCH_MAX 16384
/* The largest INTID the GICv3 architecture allows for an SPI. */
#define SPI_MAX_INTID 1019

/* Parses cmdline (may be NULL) into *a, printing "bad bootargs: <token>" for bad values. */
void bootargs_parse(const char *cmdline, struct bootargs *a);

const char *misbehave_name(enum misbehave_kind k);
const char *acc_fn_name(enum acc_fn f);
const char *arch_test_name(enum arch_test t);

#endif
