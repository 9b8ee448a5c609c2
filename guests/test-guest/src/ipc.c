/*
 * Channels between partitions: queuing ports under load (queue-send,
 * queue-recv), sampling ports and their freshness (sample-write,
 * sample-read), a shared-memory window with its doorbell (shm=...), and
 * the statuses a port call owes a caller that gets something wrong
 * (port-probe=...). Each mode prints result lines the QEMU tests read; the
 * numbers of the ABI (statuses, kinds) are printed as they come, so a
 * wrong one shows up as itself.
 */
#include "guest.h"
#include "console.h"
#include "partita.h"

/* A queuing message: the sequence number and its complement, 16 bytes. */
#define QMSG_BYTES 16
/* Receive buffers are larger than any message the tests send. */
#define RX_BYTES 64
/* Short enough to be hit often under load, long enough to block for real. */
#define SEND_WAIT_US 100
#define RECV_WAIT_US 200
/* Messages per stretch of one receive style (blocking, timed, polled). */
#define RECV_STRETCH 1000

/* The shared window: a few control words, then the pattern. */
#define SHM_READY 0		/* the reader's READY_MAGIC: its doorbell is enabled */
#define SHM_ROUND 1		/* the round whose pattern is in the window */
#define SHM_ACK 2		/* the last round the reader checked */
#define SHM_SLOT_OUTSIDE 4	/* what the outsider tries to write */
#define SHM_SLOT_VIEW 5		/* what the read-only member tries to write */
#define SHM_PATTERN 8		/* first pattern word */
#define SHM_PATTERN_WORDS 1024
#define READY_MAGIC 0x5245414459ull
#define SLOT_KEPT 0x6b657074ull
#define SHM_WAIT_MS 3000
/* As many as a configuration may have. */
#define MAX_PARTITIONS 16

static struct partita_result port_send(u64 ch, const void *buf, u64 len, u64 deadline)
{
	return partita_call4(PARTITA_PORT_SEND, ch, (u64)buf, len, deadline);
}

static struct partita_result port_receive(u64 ch, void *buf, u64 size, u64 deadline)
{
	return partita_call4(PARTITA_PORT_RECEIVE, ch, (u64)buf, size, deadline);
}

static struct partita_result port_info(u64 ch)
{
	return partita_call(PARTITA_PORT_INFO, ch, 0, 0);
}

static long ring(u64 ch)
{
	return partita_call(PARTITA_DOORBELL_RING, ch, 0, 0).status;
}

/* The sampling modes sleep rather than spin, so -icount can time them. */
static void sleep_until(u64 t)
{
	if ((s64)(counter_now() - t) < 0)
		timer_sleep_until(t);
}

static bool passed(u64 t)
{
	return (s64)(counter_now() - t) >= 0;
}

/*
 * Every EFULL counts: the queue being full is what the sender must be told.
 * The retries take turns waiting for room three ways (polling, a short
 * deadline, no deadline), so each path of a blocked sender is exercised.
 */
static void queue_send_test(const struct bootargs *a)
{
	u64 msg[QMSG_BYTES / 8], seq, full = 0, timeouts = 0, start = counter_now();
	long s = PARTITA_OK;

	for (seq = 1; seq <= a->queue_send; seq++) {
		msg[0] = seq;
		msg[1] = ~seq;
		s = port_send(a->chan, msg, QMSG_BYTES, PARTITA_POLL).status;
		while (s == PARTITA_EFULL || s == PARTITA_ETIMEOUT) {
			u64 deadline;

			if (s == PARTITA_EFULL)
				full++;
			else
				timeouts++;
			if (full % 3 == 0)
				deadline = PARTITA_POLL;
			else if (full % 3 == 1)
				deadline = counter_now() + us_to_counts(SEND_WAIT_US);
			else
				deadline = PARTITA_FOREVER;
			s = port_send(a->chan, msg, QMSG_BYTES, deadline).status;
		}
		if (s != PARTITA_OK) {
			printf("ipc: send of %lu failed: %ld\n", seq, s);
			break;
		}
	}
	printf("ipc: sent %lu, full %lu\n", seq - 1, full);
	printf("ipc: send timeouts %lu in %lu ms\n", timeouts, counts_to_us(counter_now() - start) / 1000);
}

/*
 * Stretches of RECV_STRETCH messages are received by blocking without a
 * deadline, with a short deadline, and by polling, in turn. The pauses make
 * the consumer the slower side now and then, so the queue fills.
 */
static void queue_recv_test(const struct bootargs *a)
{
	u64 buf[RX_BYTES / 8], expected = 1, got = 0, lost = 0, dup = 0, corrupt = 0;
	u64 empty = 0, timeouts = 0, most_left = 0, start = counter_now();
	struct partita_result r;

	while (expected <= a->queue_recv) {
		u64 way = (got / RECV_STRETCH) % 3, seq;

		if (a->pause_every && got && got % a->pause_every == 0)
			delay_ms(a->pause_ms);
		for (;;) {
			u64 deadline = way == 0 ? PARTITA_FOREVER
				     : way == 1 ? counter_now() + us_to_counts(RECV_WAIT_US)
						: PARTITA_POLL;

			r = port_receive(a->chan, buf, sizeof(buf), deadline);
			if (r.status == PARTITA_EEMPTY)
				empty++;
			else if (r.status == PARTITA_ETIMEOUT)
				timeouts++;
			else
				break;
		}
		if (r.status != PARTITA_OK) {
			printf("ipc: receive after %lu failed: %ld\n", got, r.status);
			break;
		}
		got++;
		if (r.value2 > most_left)
			most_left = r.value2;
		if (r.value != QMSG_BYTES || buf[1] != ~buf[0]) {
			corrupt++;
			continue;
		}
		seq = buf[0];
		if (seq == expected) {
			expected++;
		} else if (seq > expected) {
			lost += seq - expected;
			expected = seq + 1;
		} else {
			dup++;
		}
	}
	printf("ipc: received %lu %s, %lu lost, %lu duplicated\n", got,
	       lost || dup || corrupt ? "OUT OF ORDER" : "in order", lost, dup);
	printf("ipc: corrupt %lu, most left %lu, empty polls %lu, timeouts %lu, %lu ms\n", corrupt,
	       most_left, empty, timeouts, counts_to_us(counter_now() - start) / 1000);
}

/*
 * Sample k (from 1) is written at sample_at_ms + (k - 1) * sample_ms of
 * counter time, which every partition shares, so a reader knows when the
 * writer writes without talking to it.
 */
static void sample_write_test(const struct bootargs *a)
{
	u64 at = ms_to_counts(a->sample_at_ms), period = ms_to_counts(a->sample_ms);
	u64 msg[QMSG_BYTES / 8], k, errors = 0;

	if (passed(at))
		printf("sampling: writer started %lu us late\n", counts_to_us(counter_now() - at));
	for (k = 1; k <= a->sample_write; k++) {
		long s;

		sleep_until(at + (k - 1) * period);
		msg[0] = k;
		msg[1] = counter_now();
		s = port_send(a->chan, msg, QMSG_BYTES, PARTITA_POLL).status;
		if (s != PARTITA_OK && errors++ == 0)
			printf("sampling: write %lu failed: %ld\n", k, s);
	}
	printf("sampling: wrote %lu, errors %lu\n", a->sample_write, errors);
}

/*
 * Reads once before the first write (nothing to read yet), then halfway
 * between writes while the writer runs (each read fresh), then once the
 * last sample is two refresh periods old (stale).
 */
static void sample_read_test(const struct bootargs *a)
{
	u64 at = ms_to_counts(a->sample_at_ms), period = ms_to_counts(a->sample_ms);
	u64 buf[RX_BYTES / 8], k, valid = 0, max_age = 0, backwards = 0, last = 0, refresh_us;
	struct partita_result r = port_info(a->chan);

	if (r.status != PARTITA_OK || r.value != PARTITA_CHANNEL_SAMPLING) {
		printf("sampling: channel %lu info %ld kind %lu\n", a->chan, r.status, r.value);
		return;
	}
	refresh_us = r.value3;
	if (passed(at))
		printf("sampling: reader started %lu us late\n", counts_to_us(counter_now() - at));
	r = port_receive(a->chan, buf, sizeof(buf), PARTITA_POLL);
	printf("sampling: before any write: %ld\n", r.status);

	for (k = 0; k < a->sample_read; k++) {
		sleep_until(at + k * period + period / 2);
		r = port_receive(a->chan, buf, sizeof(buf), PARTITA_POLL);
		if (r.status != PARTITA_OK || r.value != QMSG_BYTES)
			continue;
		valid += r.value3 == 1;
		if (r.value2 > max_age)
			max_age = r.value2;
		backwards += buf[0] < last;
		last = buf[0];
	}
	printf("sampling: %lu reads while writing, %lu valid, max age %lu us, refresh %lu us, last seq %lu, %lu backwards\n",
	       a->sample_read, valid, max_age, refresh_us, last, backwards);

	sleep_until(at + (a->sample_read ? a->sample_read - 1 : 0) * period + 2 * us_to_counts(refresh_us));
	r = port_receive(a->chan, buf, sizeof(buf), PARTITA_POLL);
	printf("sampling: after the writer stopped: %ld valid %lu age %lu us\n", r.status, r.value3, r.value2);
}

/* One word of round k's pattern: every word of every round differs. */
static u64 pattern(u64 k, u64 i)
{
	u64 x = (k << 32 | i) * 0x9e3779b97f4a7c15ull;

	return x ^ (x >> 29);
}

static bool wait_word(volatile u64 *w, u64 value, u64 ms)
{
	u64 deadline = counter_now() + ms_to_counts(ms);

	while (*w != value)
		if (passed(deadline))
			return false;
	return true;
}

static volatile u64 *shm_window(u64 ch, u64 *size)
{
	struct partita_result r = port_info(ch);

	printf("shm: channel %lu info %ld kind %lu size 0x%lx at 0x%lx\n", ch, r.status, r.value,
	       r.value2, r.value3);
	if (r.status != PARTITA_OK || r.value != PARTITA_CHANNEL_SHARED_MEMORY ||
	    r.value2 < (SHM_PATTERN + SHM_PATTERN_WORDS) * 8)
		return 0;
	*size = r.value2;
	return (volatile u64 *)r.value3;
}

/* Each round waits for the reader's ack, so no two rings can merge into one interrupt. */
static void shm_write(const struct bootargs *a)
{
	u64 size, k, i, rang = 0, acked = 0;
	volatile u64 *w = shm_window(a->chan, &size);

	if (!w)
		return;
	if (!wait_word(&w[SHM_READY], READY_MAGIC, SHM_WAIT_MS)) {
		printf("shm: the reader never got ready\n");
		return;
	}
	for (k = 1; k <= a->shm_rounds; k++) {
		long s;

		for (i = 0; i < SHM_PATTERN_WORDS; i++)
			w[SHM_PATTERN + i] = pattern(k, i);
		w[SHM_ROUND] = k;
		dsb_sy();
		s = ring(a->chan);
		if (s != PARTITA_OK) {
			printf("shm: ring %lu: %ld\n", k, s);
			break;
		}
		rang++;
		if (!wait_word(&w[SHM_ACK], k, SHM_WAIT_MS))
			break;
		acked++;
	}
	printf("shm: wrote %lu rounds, rang %lu, acked %lu\n", a->shm_rounds, rang, acked);
}

static bool doorbell_within(u32 n, u64 ms)
{
	u64 deadline = counter_now() + ms_to_counts(ms);

	while (irq_spi_taken() < n)
		if (passed(deadline))
			return false;
	return true;
}

/* The WFI half: a doorbell must also wake a vCPU that sleeps. */
static void doorbell_sleep(u32 n)
{
	for (;;) {
		irq_mask();
		if (irq_spi_taken() >= n) {
			irq_unmask();
			return;
		}
		wfi();
		irq_unmask();
	}
}

/*
 * Waits (a while at most) until every other partition has stopped, so that
 * whatever they tried on the window has happened.
 */
static void others_ended(void)
{
	u64 self = partita_call(PARTITA_PARTITION_SELF, 0, 0, 0).value;
	u64 deadline = counter_now() + ms_to_counts(SHM_WAIT_MS), p;

	for (p = 0; p < MAX_PARTITIONS && !passed(deadline); p++)
		while (p != self && !partition_ended(p) && !passed(deadline))
			delay_ms(1);
}

static void shm_read(const struct bootargs *a)
{
	u64 size, k, i, bad = 0, checked = 0;
	volatile u64 *w = shm_window(a->chan, &size);

	if (!w || !a->doorbell) {
		printf("shm: reader needs a window and doorbell=INTID\n");
		return;
	}
	irq_watch_spi(a->doorbell);
	w[SHM_SLOT_OUTSIDE] = SLOT_KEPT;
	w[SHM_SLOT_VIEW] = SLOT_KEPT;
	dsb_sy();
	w[SHM_READY] = READY_MAGIC;
	for (k = 1; k <= a->shm_rounds; k++) {
		if (k > a->shm_rounds / 2)
			doorbell_sleep((u32)k);
		else if (!doorbell_within((u32)k, SHM_WAIT_MS))
			break;
		if (w[SHM_ROUND] != k)
			bad++;
		for (i = 0; i < SHM_PATTERN_WORDS; i++)
			bad += w[SHM_PATTERN + i] != pattern(k, i);
		checked++;
		w[SHM_ACK] = k;
	}
	printf("shm: doorbells %u, rounds checked %lu, bad words %lu\n", irq_spi_taken(), checked, bad);
	others_ended();
	printf("shm: slots %s\n", w[SHM_SLOT_OUTSIDE] == SLOT_KEPT && w[SHM_SLOT_VIEW] == SLOT_KEPT
				       ? "kept" : "OVERWRITTEN");
}

/* A read-only member may look; its write is a stage-2 fault. */
static void shm_view(const struct bootargs *a)
{
	u64 size;
	volatile u64 *w = shm_window(a->chan, &size);

	if (!w)
		return;
	if (!wait_word(&w[SHM_READY], READY_MAGIC, SHM_WAIT_MS))
		printf("shm: the reader never got ready\n");
	printf("shm: read-only member read ready 0x%lx\n", w[SHM_READY]);
	w[SHM_SLOT_VIEW] = 0xbad;
	printf("shm: read-only member wrote, survived\n");
}

/*
 * Not a member: the channel is refused to it by name, and the window's
 * address is a hole in its stage 2 (run it with stage2-fault = "log" to
 * see it go on: a faulting load then reads 0, a store is dropped).
 */
static void shm_outside(const struct bootargs *a)
{
	volatile u64 *w = (volatile u64 *)a->addr;
	u64 v;

	delay_ms(a->ctl_after_ms);
	printf("shm: outsider ring %ld info %ld\n", ring(a->chan), port_info(a->chan).status);
	if (!a->has_addr)
		return;
	v = w[SHM_READY];
	printf("shm: outsider read 0x%lx\n", v);
	w[SHM_SLOT_OUTSIDE] = 0xbad;
	printf("shm: outsider wrote, survived\n");
}

/* The last byte of RAM: a buffer from here runs off its end. */
static u64 ram_end(const struct dt_info *dt)
{
	return dt->mem[0].base + dt->mem[0].size;
}

/*
 * Channel 0 is a queuing port source -> destination, channel 1 a sampling
 * port from the same source; `other` is on neither. Each line lists the
 * statuses of a fixed sequence of calls, made in the order printed.
 */
static void port_probe(const struct dt_info *dt, const struct bootargs *a)
{
	u64 buf[RX_BYTES / 8] = { 1, ~1ull };
	void *outside = (void *)0x1000, *straddle = (void *)(ram_end(dt) - 8);
	struct partita_result small, ok;
	long s[8];

	switch (a->port_probe) {
	case PROBE_SOURCE:
		s[0] = port_send(0, buf, QMSG_BYTES, PARTITA_POLL).status;
		s[1] = port_send(0, buf, QMSG_BYTES + 1, PARTITA_POLL).status;
		s[2] = port_send(0, outside, QMSG_BYTES, PARTITA_POLL).status;
		s[3] = port_send(0, straddle, QMSG_BYTES, PARTITA_POLL).status;
		s[4] = port_receive(0, buf, sizeof(buf), PARTITA_POLL).status;
		s[5] = port_send(1, buf, QMSG_BYTES, PARTITA_POLL).status;
		s[6] = port_send(63, buf, QMSG_BYTES, PARTITA_POLL).status;
		s[7] = ring(0);
		printf("port: source send %ld, too long %ld, outside ram %ld, straddling %ld, "
		       "receive %ld, sample %ld, no channel %ld, ring %ld\n",
		       s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]);
		break;
	case PROBE_DESTINATION:
		/* Blocks until the source's message is there: then it is too big for 8 bytes. */
		small = port_receive(0, buf, 8, PARTITA_FOREVER);
		s[0] = port_receive(0, outside, sizeof(buf), PARTITA_POLL).status;
		ok = port_receive(0, buf, sizeof(buf), PARTITA_POLL);
		s[1] = port_receive(0, buf, sizeof(buf), PARTITA_POLL).status;
		s[2] = port_receive(0, buf + 2, sizeof(buf) - 16, counter_now() + ms_to_counts(1)).status;
		s[3] = port_send(0, buf + 2, QMSG_BYTES, PARTITA_POLL).status;
		printf("port: destination small %ld needs %lu, outside ram %ld, receive %ld len %lu left %lu "
		       "seq %lu, empty %ld, timeout %ld, send %ld\n",
		       small.status, small.value, s[0], ok.status, ok.value, ok.value2, buf[0], s[1], s[2], s[3]);
		break;
	case PROBE_OTHER:
		s[0] = port_send(0, buf, QMSG_BYTES, PARTITA_POLL).status;
		s[1] = port_receive(0, buf, sizeof(buf), PARTITA_POLL).status;
		s[2] = port_info(0).status;
		s[3] = port_send(1, buf, QMSG_BYTES, PARTITA_POLL).status;
		s[4] = port_receive(1, buf, sizeof(buf), PARTITA_POLL).status;
		s[5] = port_info(63).status;
		s[6] = ring(0);
		printf("port: other send %ld, receive %ld, info %ld, sample send %ld, sample receive %ld, "
		       "no channel %ld, ring %ld\n", s[0], s[1], s[2], s[3], s[4], s[5], s[6]);
		break;
	default:
		break;
	}
}

void channel_tests(const struct dt_info *dt, const struct bootargs *a)
{
	if (a->port_probe != PROBE_NONE)
		port_probe(dt, a);
	if (a->shm == SHM_WRITE)
		shm_write(a);
	else if (a->shm == SHM_READ)
		shm_read(a);
	else if (a->shm == SHM_VIEW)
		shm_view(a);
	else if (a->shm == SHM_OUTSIDE)
		shm_outside(a);
	if (a->queue_send)
		queue_send_test(a);
	if (a->queue_recv)
		queue_recv_test(a);
	if (a->sample_write)
		sample_write_test(a);
	if (a->sample_read)
		sample_read_test(a);
}
