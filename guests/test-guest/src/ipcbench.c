/*
 * The communication benchmark (`partita bench ipc`): what a hypercall, a
 * queuing-port send and receive, and a doorbell cost, in counter ticks
 * (under -icount shift=4, one tick per instruction).
 *
 * With `ipc_sgi=1` (a direct partition alone on its pCPU) bench also
 * measures the send of an SGI to itself.
 *
 * Two partitions on one pCPU: `ipc-bench=bench` measures at the higher
 * priority, `ipc-bench=echo` answers below it, so every hand-over is a
 * switch on that pCPU (deterministic under -icount, unlike a wake-up across
 * pCPUs). Channel 0 (queuing) carries requests from bench to echo, channel
 * 1 (queuing) the answers back, channel 2 is a shared-memory window with a
 * doorbell (`doorbell=<intid>`) at bench. Every measurement prints one line
 *   ipc-bench: <what> n <n> min <a> mean <b> max <c> counts
 * and the run ends with `ipc-bench: done`.
 */
#include "guest.h"
#include "console.h"
#include "gic.h"
#include "partita.h"

#define CH_REQUEST 0
#define CH_ANSWER 1
#define CH_BELL 2
#define MSG_BYTES 16
/* Request tags: echo the message back once or twice, ring the doorbell, stop. */
#define TAG_ECHO 1
#define TAG_PAIR 2
#define TAG_RING 3
#define TAG_STOP 4
/* Long enough for echo to answer a pair while bench sleeps. */
#define PAIR_WAIT_US 2000
/* The echo side's counter just before it rings, first word of the window. */
#define BELL_STAMP 0

struct stats {
	u64 n, min, max, sum;
};

static void stats_add(struct stats *s, u64 v)
{
	if (s->n == 0 || v < s->min)
		s->min = v;
	if (v > s->max)
		s->max = v;
	s->sum += v;
	s->n++;
}

static void stats_print(const char *what, const struct stats *s)
{
	printf("ipc-bench: %s n %lu min %lu mean %lu max %lu counts\n", what, s->n, s->min,
	       s->n ? s->sum / s->n : 0, s->max);
}

static long send(u64 ch, const u64 *msg)
{
	return partita_call4(PARTITA_PORT_SEND, ch, (u64)msg, MSG_BYTES, PARTITA_POLL).status;
}

/* The counter read on both sides of nothing: what every figure includes. */
static void measure_empty(u64 n)
{
	struct stats s = { 0 };
	u64 i;

	for (i = 0; i < n; i++) {
		u64 t0 = counter_now();
		u64 t1 = counter_now();

		stats_add(&s, t1 - t0);
	}
	stats_print("empty", &s);
}

static void measure_hypercall(u64 n)
{
	struct stats s = { 0 };
	u64 i;

	for (i = 0; i < n; i++) {
		u64 t0 = counter_now();

		partita_call(PARTITA_VERSION, 0, 0, 0);
		stats_add(&s, counter_now() - t0);
	}
	stats_print("hypercall", &s);
}

/*
 * The value sits in x1, as in a compiled send (gic_send_sgi): left to
 * itself, the compiler keeps it in a callee-saved register across the
 * loop, which an older Partita answered on a slower path, and the figure
 * would not compare with the earlier ones.
 */
static inline void sgi1r_write(u64 value)
{
	register u64 v __asm__("x1") = value;

	__asm__ volatile("msr icc_sgi1r_el1, %0" : : "r"(v) : "memory");
}

/*
 * The write to ICC_SGI1R_EL1 that sends SGI_PING to this vCPU, which
 * traps even with direct delivery (the targets are checked). IRQs are
 * masked around it, so the SGI is taken after the second counter read and
 * only the send is timed; each one is taken before the next is sent.
 */
static void measure_sgi(u64 n)
{
	u64 value = gic_sgi1r(current_mpidr_affinity(), SGI_PING);
	u32 cpu = this_cpu(), before = sgi_pings(cpu);
	struct stats s = { 0 };
	u64 i;

	gic_local_enable(SGI_PING, true);
	for (i = 0; i < n; i++) {
		u64 t0, t1;

		irq_mask();
		t0 = counter_now();
		sgi1r_write(value);
		t1 = counter_now();
		irq_unmask();
		stats_add(&s, t1 - t0);
		/* Taken at the unmask; a lost one shows in the count below. */
		isb();
	}
	stats_print("sgi", &s);
	printf("ipc-bench: sgi taken %u of %lu\n", sgi_pings(cpu) - before, n);
}

static struct partita_result receive(u64 *buf, u64 deadline)
{
	return partita_call4(PARTITA_PORT_RECEIVE, CH_ANSWER, (u64)buf, MSG_BYTES, deadline);
}

/*
 * The round trip: send a request (echo is woken, but runs only once bench
 * waits), then block for the answer (echo runs, answers, and bench, woken
 * by that send, preempts it). Also times each send.
 */
static bool measure_round_trips(u64 n, struct stats *tx, struct stats *trip)
{
	u64 msg[MSG_BYTES / 8] = { TAG_ECHO }, back[MSG_BYTES / 8];
	u64 i;

	/* Not timed: the first one waits for echo to boot. */
	msg[1] = ~0ull;
	if (send(CH_REQUEST, msg) != PARTITA_OK || receive(back, PARTITA_FOREVER).status != PARTITA_OK)
		return false;
	for (i = 0; i < n; i++) {
		struct partita_result r;
		u64 t0, t1;

		msg[1] = i;
		t0 = counter_now();
		if (send(CH_REQUEST, msg) != PARTITA_OK)
			return false;
		t1 = counter_now();
		r = receive(back, PARTITA_FOREVER);
		if (r.status != PARTITA_OK || back[1] != i) {
			printf("ipc-bench: round trip %lu: status %ld\n", i, r.status);
			return false;
		}
		stats_add(tx, t1 - t0);
		stats_add(trip, counter_now() - t0);
	}
	return true;
}

/*
 * A receive of a message already queued: ask for a pair and sleep on the
 * virtual timer (not in a port, so echo's sends wake no one), then take
 * both.
 */
static bool measure_receives(u64 n, struct stats *rx)
{
	u64 msg[MSG_BYTES / 8] = { TAG_PAIR }, back[MSG_BYTES / 8];
	u64 i, k;

	for (i = 0; i < n; i += 2) {
		if (send(CH_REQUEST, msg) != PARTITA_OK)
			return false;
		timer_sleep_until(counter_now() + PAIR_WAIT_US * counter_freq() / 1000000);
		for (k = 0; k < 2;) {
			u64 t0 = counter_now();
			long status = receive(back, PARTITA_POLL).status;
			u64 t1 = counter_now();

			if (status == PARTITA_EEMPTY) {
				/* The host held QEMU back: give echo more time. */
				timer_sleep_until(counter_now() + PAIR_WAIT_US * counter_freq() / 1000000);
				continue;
			}
			if (status != PARTITA_OK) {
				printf("ipc-bench: receive %lu.%lu: status %ld\n", i, k, status);
				return false;
			}
			stats_add(rx, t1 - t0);
			k++;
		}
	}
	return true;
}

static void measure_ports(u64 n)
{
	struct stats tx = { 0 }, rx = { 0 }, trip = { 0 };

	if (!measure_round_trips(n, &tx, &trip) || !measure_receives(n, &rx)) {
		printf("ipc-bench: a port call failed\n");
		return;
	}
	stats_print("send", &tx);
	stats_print("receive", &rx);
	stats_print("round-trip", &trip);
}

/* Ask echo to ring; wait in WFI; the doorbell's latency from echo's stamp. */
static void measure_doorbell(u32 intid, u64 n)
{
	struct partita_result info = partita_call(PARTITA_PORT_INFO, CH_BELL, 0, 0);
	volatile u64 *window = (volatile u64 *)info.value3;
	struct stats s = { 0 };
	u64 msg[MSG_BYTES / 8] = { TAG_RING };
	u64 i;

	if (info.status != PARTITA_OK || info.value != PARTITA_CHANNEL_SHARED_MEMORY) {
		printf("ipc-bench: no doorbell channel (%ld)\n", info.status);
		return;
	}
	irq_watch_spi(intid);
	for (i = 0; i < n; i++) {
		u32 before = irq_spi_taken();
		u64 now;

		window[BELL_STAMP] = 0;
		if (send(CH_REQUEST, msg) != PARTITA_OK)
			break;
		while (irq_spi_taken() == before)
			__asm__ volatile("wfi");
		now = counter_now();
		stats_add(&s, now - window[BELL_STAMP]);
	}
	stats_print("doorbell", &s);
}

static void bench(u32 bell_intid, u64 n, bool sgi)
{
	u64 stop[MSG_BYTES / 8] = { TAG_STOP };

	measure_empty(n);
	measure_hypercall(n);
	if (sgi)
		measure_sgi(n);
	/* Alone on an exclusive pCPU, for the hypercall only: no channels. */
	if (partita_call(PARTITA_PORT_INFO, CH_REQUEST, 0, 0).status != PARTITA_OK) {
		printf("ipc-bench: done\n");
		return;
	}
	measure_ports(n);
	measure_doorbell(bell_intid, n);
	while (send(CH_REQUEST, stop) == PARTITA_EFULL)
		;
	printf("ipc-bench: done\n");
}

/* Serve requests until told to stop; each wait blocks in the hypervisor. */
static void echo(void)
{
	struct partita_result info = partita_call(PARTITA_PORT_INFO, CH_BELL, 0, 0);
	volatile u64 *window = (volatile u64 *)info.value3;
	u64 msg[MSG_BYTES / 8];
	u64 served = 0;

	for (;;) {
		struct partita_result r =
			partita_call4(PARTITA_PORT_RECEIVE, CH_REQUEST, (u64)msg, sizeof(msg), PARTITA_FOREVER);

		if (r.status != PARTITA_OK) {
			printf("ipc-bench: echo receive %ld\n", r.status);
			return;
		}
		if (msg[0] == TAG_STOP)
			break;
		if (msg[0] == TAG_RING) {
			window[BELL_STAMP] = counter_now();
			partita_call(PARTITA_DOORBELL_RING, CH_BELL, 0, 0);
		} else if (send(CH_ANSWER, msg) != PARTITA_OK ||
			   (msg[0] == TAG_PAIR && send(CH_ANSWER, msg) != PARTITA_OK)) {
			printf("ipc-bench: echo could not answer\n");
			return;
		}
		served++;
	}
	printf("ipc-bench: echo served %lu\n", served);
}

void ipc_bench(const struct bootargs *a)
{
	if (a->ipc_bench == IPC_BENCH_MEASURE)
		bench(a->doorbell, a->ipc_n, a->ipc_sgi);
	else if (a->ipc_bench == IPC_BENCH_ECHO)
		echo();
}
