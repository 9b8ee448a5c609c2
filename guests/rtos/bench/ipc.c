/*
 * ipc=ping|pong: two RTOS partitions talk over Partita's queuing ports
 * through rtos_partita.h while a task kicks the watchdog. Ping sends
 * numbered messages of every length on channel ipc_tx and checks that each
 * comes back unchanged on ipc_rx; pong echoes them. Around the exchange
 * each side checks the ports' edges (too small a buffer, nothing to take,
 * a full queue, timeouts, a channel it may not send on) and, with
 * ipc_report, ping reports an error and finds it in the health monitor's
 * log. With ipc_bell=1, each side finds the channels named requests,
 * replies and bell in its device tree (they must match ipc_tx and ipc_rx);
 * ping rings bell's doorbell before the exchange, long before pong
 * attaches to it, and pong must still hear that ring once it does; pong
 * then rings back. Each ring follows a word written into the window, which
 * the other side reads. ipc_hold keeps a side running that many ticks
 * after the exchange, long enough for its watchdog to matter. One line per
 * check, a summary, then power off:
 *
 *   ipc <role>: <check> ok|FAIL
 *   ipc <role>: <n> passed, <m> failed
 */
#include "rtos_partita.h"
#include "bench.h"

#define MAX_MSG		4096
#define WATCHDOG_PRIO	20
#define WATCHDOG_STACK	4096
/* Long enough for any peer to answer; short enough to fail instead of hang. */
#define PEER_WAIT_S	10
#define SHORT_WAIT	2
#define HM_PAGE		8
#define BELL_PRIO	0x40
/* The words each side leaves in the window before it rings. */
#define PING_WORD	0x70696e6770696e67ull
#define PONG_WORD	0x706f6e67706f6e67ull

static const char *role;
static unsigned passed, failed;
/* One byte over the largest message, for the too-long check. */
static uint8_t out_msg[MAX_MSG + 8] __attribute__((aligned(8)));
static uint8_t in_msg[MAX_MSG + 8] __attribute__((aligned(8)));
static struct rtos_watchdog wd;
static uint64_t wd_stack[WATCHDOG_STACK / 8] __attribute__((aligned(16)));
static struct partita_hm_record hm[HM_PAGE];
static rtos_sem_t bell;
static struct rtos_channel bell_channel;
/* The shared-memory window (the MMU is off, so guest-physical). */
static volatile uint64_t *window;

static bool check(const char *name, bool ok)
{
	rtos_printf("ipc %s: %s %s\n", role, name, ok ? "ok" : "FAIL");
	if (ok)
		passed++;
	else
		failed++;
	return ok;
}

/* A check on a status, which is printed when it is not the one expected. */
static bool expect(const char *name, long got, long want)
{
	if (got != want)
		rtos_printf("ipc %s: %s: %s, expected %s\n", role, name, rtos_partita_status_name(got),
			    rtos_partita_status_name(want));
	return check(name, got == want);
}

__attribute__((noreturn)) static void finish(void)
{
	rtos_printf("ipc %s: %u passed, %u failed\n", role, passed, failed);
	rtos_power_off();
}

static bool queuing_port(const char *name, uint32_t channel, struct rtos_port_info *info)
{
	long s = rtos_port_info(channel, info);

	if (s == PARTITA_OK)
		rtos_printf("ipc %s: channel %u kind %u max %u depth %u\n", role, channel, info->kind,
			    info->max_message, info->depth);
	return expect(name, s, PARTITA_OK) &&
	       check("queuing", info->kind == PARTITA_CHANNEL_QUEUING &&
			info->max_message > 0 && info->max_message <= MAX_MSG);
}

/* Lengths cycle down through max..1, so every size crosses the port. */
static uint32_t msg_len(uint32_t i, uint32_t max)
{
	return max - i % max;
}

static uint8_t msg_byte(uint32_t i, uint32_t j)
{
	return (uint8_t)(i * 13 + j * 7 + 1);
}

static void fill(uint32_t i, uint32_t len)
{
	uint32_t j;

	for (j = 0; j < len; j++)
		out_msg[j] = msg_byte(i, j);
}

static bool intact(uint32_t i, uint32_t len)
{
	uint32_t j;

	for (j = 0; j < len; j++)
		if (in_msg[j] != msg_byte(i, j))
			return false;
	return true;
}

/* The device tree names the queues this side's bootargs gave by index. */
static void find_queues(const struct bench_args *a)
{
	const char *tx = a->ipc == IPC_PING ? "requests" : "replies";
	const char *rx = a->ipc == IPC_PING ? "replies" : "requests";
	struct rtos_channel ch;

	check("find tx", rtos_channel_find(tx, &ch) == PARTITA_OK && ch.index == a->ipc_tx && ch.send &&
			 ch.kind == PARTITA_CHANNEL_QUEUING);
	check("find rx", rtos_channel_find(rx, &ch) == PARTITA_OK && ch.index == a->ipc_rx && ch.receive);
	expect("find unknown", rtos_channel_find("nonexistent", &ch), PARTITA_EINVAL);
}

/* The doorbell's channel, found by name, is a writable window with a doorbell. */
static bool bell_attach(void)
{
	struct rtos_channel *ch = &bell_channel;
	struct rtos_port_info info;

	if (!expect("find bell", rtos_channel_find("bell", ch), PARTITA_OK) ||
	    !check("bell window", ch->kind == PARTITA_CHANNEL_SHARED_MEMORY && ch->writable &&
				  ch->window_size >= 16 && ch->doorbell_intid != 0))
		return false;
	/* The tree and the hypervisor agree on where the window is. */
	check("bell info", rtos_port_info(ch->index, &info) == PARTITA_OK && info.window == ch->window &&
			   info.window_size == ch->window_size);
	rtos_printf("ipc %s: bell is channel %u at 0x%lx, doorbell %u\n", role, ch->index, ch->window,
		    ch->doorbell_intid);
	window = (volatile uint64_t *)(uintptr_t)ch->window;
	return expect("bell attach", rtos_doorbell_attach_sem(ch->doorbell_intid, BELL_PRIO, &bell),
		      PARTITA_OK);
}

/* Leaves `word` in slot `slot` of the window and rings the others. */
static void bell_ring(uint32_t slot, uint64_t word)
{
	window[slot] = word;
	expect("bell ring", rtos_doorbell_ring(bell_channel.index), PARTITA_OK);
}

/* Waits for a ring, then for `word` in slot `slot`. */
static void bell_wait(const char *name, uint32_t slot, uint64_t word, uint32_t wait)
{
	rtos_status s = rtos_sem_take(&bell, wait);

	if (s != RTOS_OK)
		rtos_printf("ipc %s: %s: no ring (%d)\n", role, name, (int)s);
	check(name, s == RTOS_OK && window[slot] == word);
}

/* The log holds every partition's events: ours is the report with our index and code. */
static bool find_report(uint32_t code)
{
	struct partita_result self = partita_call(PARTITA_PARTITION_SELF, 0, 0, 0);
	struct rtos_hm_page page;
	uint64_t from = 0;
	uint32_t i;

	for (;;) {
		if (rtos_hm_read(hm, HM_PAGE, from, &page) != PARTITA_OK || page.count == 0)
			return false;
		for (i = 0; i < page.count && i < HM_PAGE; i++) {
			if (hm[i].event != PARTITA_HM_EV_REPORTED || hm[i].code != code ||
			    hm[i].partition != self.value)
				continue;
			rtos_printf("ipc %s: hm seq %lu partition %u vcpu %u %s action %s code %u lost %lu\n",
				    role, hm[i].seq, hm[i].partition, hm[i].vcpu,
				    rtos_hm_event_name(hm[i].event), rtos_hm_action_name(hm[i].action),
				    hm[i].code, page.lost);
			return true;
		}
		from = page.next;
	}
}

static void ping(const struct bench_args *a, uint32_t wait)
{
	struct rtos_port_info tx, rx;
	uint32_t i, len = 0, sent;
	uint64_t start;
	bool ok = true;
	long s;

	if (!queuing_port("info tx", a->ipc_tx, &tx) || !queuing_port("info rx", a->ipc_rx, &rx))
		finish();
	/* Pong attaches only after the whole exchange: this ring must wait for it. */
	if (a->ipc_bell && bell_attach())
		bell_ring(0, PING_WORD);

	/* The first echo, taken into one byte: it must stay queued for the real read. */
	fill(0, msg_len(0, tx.max_message));
	s = rtos_port_send(a->ipc_tx, out_msg, msg_len(0, tx.max_message), wait);
	if (s == PARTITA_OK && msg_len(0, tx.max_message) > 1)
		check("small buffer", rtos_port_receive(a->ipc_rx, in_msg, 1, &len, wait) ==
			PARTITA_ESMALL && len == msg_len(0, tx.max_message));

	start = rtos_ticks();
	for (i = 0; ok && i < a->ipc_count; i++) {
		uint32_t want = msg_len(i, tx.max_message);

		if (i > 0) {
			fill(i, want);
			s = rtos_port_send(a->ipc_tx, out_msg, want, wait);
		}
		if (s == PARTITA_OK)
			s = rtos_port_receive(a->ipc_rx, in_msg, rx.max_message, &len, wait);
		ok = s == PARTITA_OK && len == want && intact(i, want);
		if (!ok)
			rtos_printf("ipc ping: message %u: %s, %u bytes of %u\n", i,
				    rtos_partita_status_name(s), len, want);
	}
	rtos_printf("ipc ping: %u round trips in %lu ticks\n", i, rtos_ticks() - start);
	check("round trips", ok);
	if (a->ipc_bell && window)
		bell_wait("doorbell from pong", 1, PONG_WORD, wait);
	rtos_sleep(a->ipc_hold);

	expect("nothing to take", rtos_port_receive(a->ipc_rx, in_msg, rx.max_message, &len,
						     RTOS_NO_WAIT), PARTITA_EEMPTY);
	expect("receive timeout", rtos_port_receive(a->ipc_rx, in_msg, rx.max_message, &len,
						     SHORT_WAIT), PARTITA_ETIMEOUT);
	expect("too long", rtos_port_send(a->ipc_tx, out_msg, tx.max_message + 1, wait),
	       PARTITA_ETOOLONG);
	/* Pong takes no more than its count, so the queue now fills for good. */
	for (sent = 0; sent <= tx.depth; sent++) {
		s = rtos_port_send(a->ipc_tx, out_msg, 1, RTOS_NO_WAIT);
		if (s != PARTITA_OK)
			break;
	}
	rtos_printf("ipc ping: queue full after %u\n", sent);
	check("full queue", s == PARTITA_EFULL && sent == tx.depth);
	expect("send timeout", rtos_port_send(a->ipc_tx, out_msg, 1, SHORT_WAIT), PARTITA_ETIMEOUT);

	if (a->ipc_report) {
		expect("hm report", rtos_hm_report(a->ipc_report), PARTITA_OK);
		check("hm read", find_report(a->ipc_report));
	}
}

static void pong(const struct bench_args *a, uint32_t wait)
{
	struct rtos_port_info tx, rx;
	uint32_t echoed = 0, len = 0;
	long s = PARTITA_OK;

	if (!queuing_port("info rx", a->ipc_rx, &rx) || !queuing_port("info tx", a->ipc_tx, &tx))
		finish();
	/* Pong is the destination of its rx channel, not the source. */
	expect("denied", rtos_port_send(a->ipc_rx, out_msg, 1, RTOS_NO_WAIT), PARTITA_EDENIED);

	while (s == PARTITA_OK && echoed < a->ipc_count) {
		s = rtos_port_receive(a->ipc_rx, in_msg, rx.max_message, &len, wait);
		if (s == PARTITA_OK)
			s = rtos_port_send(a->ipc_tx, in_msg, len, wait);
		if (s == PARTITA_OK)
			echoed++;
	}
	rtos_printf("ipc pong: %u echoed\n", echoed);
	expect("echoes", s, PARTITA_OK);
	if (a->ipc_bell && bell_attach()) {
		bell_wait("doorbell rung before attach", 0, PING_WORD, SHORT_WAIT);
		bell_ring(1, PONG_WORD);
	}
	rtos_sleep(a->ipc_hold);
}

void ipc_run(const struct bench_args *a)
{
	uint32_t hz = a->tick_hz ? a->tick_hz : RTOS_TICK_HZ_DEFAULT;

	role = a->ipc == IPC_PING ? "ping" : "pong";
	rtos_sem_init(&bell, 0);
	if (a->ipc_bell)
		find_queues(a);
	if (a->ipc_kick)
		expect("watchdog task", rtos_watchdog_start(&wd, a->ipc_kick, WATCHDOG_PRIO, wd_stack,
							    sizeof(wd_stack)), PARTITA_OK);
	if (a->ipc == IPC_PING)
		ping(a, PEER_WAIT_S * hz);
	else
		pong(a, PEER_WAIT_S * hz);
	if (a->ipc_kick)
		expect("watchdog kicks", wd.status, PARTITA_OK);
	finish();
}
