/*
 * Bootargs parsing and small arithmetic, kept free of the RTOS so the host
 * can test them.
 */
#include "bench.h"

#define DEFAULT_MS	3000
/* A day: long enough for any run, short enough that ms * hz cannot overflow. */
#define MAX_MS		86400000u
/* The timer cannot usefully interrupt more often than this. */
#define MAX_TICK_HZ	100000u
/* The configuration allows 64 channels. */
#define MAX_CHANNEL	63u
#define IPC_COUNT	100
#define MAX_IPC_COUNT	1000000u
#define MAX_IPC_TICKS	100000u
/* DATA_SIZE is 32-bit: no job of Ker-ONE's frames goes much beyond this. */
#define MAX_ACCEL_FRAMES	100000u
#define MAX_ACCEL_JOBS		10000u
/* The demo's periods: up to a minute. */
#define MAX_DEMO_MS		60000u
/* Over a quarter of an hour at a 1 kHz tick: more than any run needs. */
#define MAX_RELEV		1000000u

/* A switch, not a table: the image must hold no absolute addresses. */
const char *bench_name(enum bench_id id)
{
	switch (id) {
	case B_TM0: return "tm0";
	case B_TM1: return "tm1";
	case B_TM2: return "tm2";
	case B_TM3: return "tm3";
	case B_TM4: return "tm4";
	case B_TM5: return "tm5";
	case B_TM6: return "tm6";
	case B_TM7: return "tm7";
	case B_TM3SVC: return "tm3svc";
	case B_TM4SVC: return "tm4svc";
	case B_COREMARK: return "coremark";
	case B_SCHEDPRIO: return "schedprio";
	default: return "?";
	}
}

/* A switch, not a table: the image must hold no absolute addresses. */
const char *accel_mode_name(enum accel_mode mode)
{
	switch (mode) {
	case ACCEL_QAM16: return "qam16";
	case ACCEL_QAM64: return "qam64";
	case ACCEL_FFT512: return "fft512";
	case ACCEL_FFT1024: return "fft1024";
	default: return "";
	}
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool eq(const char *s, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (lit[i] != s[i])
			return false;
	return lit[n] == '\0';
}

static bool parse_accel(const char *s, size_t n, struct bench_args *a)
{
	uint32_t m;

	for (m = ACCEL_QAM16; m <= ACCEL_FFT1024; m++) {
		if (eq(s, n, accel_mode_name(m))) {
			a->accel = m;
			return true;
		}
	}
	return false;
}

/* "all", or function names joined by commas: a bit per enum accel_mode. */
static bool parse_table6(const char *s, size_t n, struct bench_args *a)
{
	uint32_t mask = 0, m;
	size_t at = 0;

	if (eq(s, n, "all")) {
		a->table6 = ACCEL_TABLE6_ALL;
		return true;
	}
	while (at <= n) {
		size_t len = 0;
		bool found = false;

		while (at + len < n && s[at + len] != ',')
			len++;
		for (m = ACCEL_QAM16; m <= ACCEL_FFT1024 && !found; m++) {
			if (eq(s + at, len, accel_mode_name(m))) {
				mask |= 1u << m;
				found = true;
			}
		}
		if (!found)
			return false;
		at += len + 1;
	}
	a->table6 = mask;
	return true;
}

/* Decimal only, min..max. */
static bool parse_range(const char *s, size_t n, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > max)
			return false;
	}
	if (v < min)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* 1..max: a zero-length period measures nothing. */
static bool parse_num(const char *s, size_t n, uint32_t max, uint32_t *out)
{
	return parse_range(s, n, 1, max, out);
}

static bool parse_bench(const char *s, size_t n, struct bench_args *a)
{
	unsigned int i;

	if (eq(s, n, "all")) {
		a->select = BENCH_ALL;
		a->selftest = false;
		return true;
	}
	if (eq(s, n, "selftest")) {
		a->select = 0;
		a->selftest = true;
		return true;
	}
	for (i = 0; i < B_COUNT; i++) {
		if (eq(s, n, bench_name(i))) {
			a->select = 1u << i;
			a->selftest = false;
			return true;
		}
	}
	return false;
}

/* False if the value is bad; keys that are not ours (the kernel's) pass. */
static bool parse_token(const char *tok, size_t n, struct bench_args *a)
{
	const char *v;
	size_t klen = 0, vlen;

	while (klen < n && tok[klen] != '=')
		klen++;
	if (klen == n)
		return true;
	v = tok + klen + 1;
	vlen = n - klen - 1;

	if (eq(tok, klen, "bench"))
		return parse_bench(v, vlen, a);
	if (eq(tok, klen, "period_ms"))
		return parse_num(v, vlen, MAX_MS, &a->period_ms);
	if (eq(tok, klen, "coremark_ms"))
		return parse_num(v, vlen, MAX_MS, &a->coremark_ms);
	if (eq(tok, klen, "tick_hz"))
		return parse_num(v, vlen, MAX_TICK_HZ, &a->tick_hz);
	if (eq(tok, klen, "ipc")) {
		if (eq(v, vlen, "ping"))
			a->ipc = IPC_PING;
		else if (eq(v, vlen, "pong"))
			a->ipc = IPC_PONG;
		else
			return false;
	}
	if (eq(tok, klen, "ipc_tx"))
		return parse_range(v, vlen, 0, MAX_CHANNEL, &a->ipc_tx);
	if (eq(tok, klen, "ipc_rx"))
		return parse_range(v, vlen, 0, MAX_CHANNEL, &a->ipc_rx);
	if (eq(tok, klen, "ipc_count"))
		return parse_num(v, vlen, MAX_IPC_COUNT, &a->ipc_count);
	if (eq(tok, klen, "ipc_kick"))
		return parse_range(v, vlen, 0, MAX_IPC_TICKS, &a->ipc_kick);
	if (eq(tok, klen, "ipc_hold"))
		return parse_range(v, vlen, 0, MAX_IPC_TICKS, &a->ipc_hold);
	if (eq(tok, klen, "ipc_report"))
		return parse_range(v, vlen, 0, UINT32_MAX, &a->ipc_report);
	if (eq(tok, klen, "ipc_bell"))
		return parse_range(v, vlen, 0, 1, &a->ipc_bell);
	if (eq(tok, klen, "accel"))
		return parse_accel(v, vlen, a);
	if (eq(tok, klen, "accel_table6"))
		return parse_table6(v, vlen, a);
	if (eq(tok, klen, "accel_frames"))
		return parse_num(v, vlen, MAX_ACCEL_FRAMES, &a->accel_frames);
	if (eq(tok, klen, "accel_jobs"))
		return parse_num(v, vlen, MAX_ACCEL_JOBS, &a->accel_jobs);
	if (eq(tok, klen, "accel_seed"))
		return parse_range(v, vlen, 0, UINT32_MAX, &a->accel_seed);
	if (eq(tok, klen, "accel_wait"))
		return parse_range(v, vlen, 0, MAX_CHANNEL, &a->accel_wait);
	if (eq(tok, klen, "demo")) {
		uint32_t on;

		if (!parse_range(v, vlen, 0, 1, &on))
			return false;
		a->demo = on;
		return true;
	}
	if (eq(tok, klen, "demo_period_ms"))
		return parse_num(v, vlen, MAX_DEMO_MS, &a->demo_period_ms);
	if (eq(tok, klen, "demo_deadline_us"))
		return parse_num(v, vlen, MAX_DEMO_MS * 1000u, &a->demo_deadline_us);
	if (eq(tok, klen, "demo_send_every"))
		return parse_num(v, vlen, MAX_DEMO_MS, &a->demo_send_every);
	if (eq(tok, klen, "demo_tio_us"))
		return parse_num(v, vlen, MAX_DEMO_MS * 1000u, &a->demo_tio_us);
	if (eq(tok, klen, "demo_accel_ms"))
		return parse_num(v, vlen, MAX_DEMO_MS, &a->demo_accel_ms);
	if (eq(tok, klen, "relev"))
		return parse_range(v, vlen, 0, MAX_RELEV, &a->relev);
	if (eq(tok, klen, "sched")) {
		if (eq(v, vlen, "bitmap"))
			a->linear = false;
		else if (eq(v, vlen, "linear"))
			a->linear = true;
		else
			return false;
	}
	return true;
}

void bench_args_parse(const char *cmdline, struct bench_args *a, bench_bad_fn bad)
{
	const char *s = cmdline;

	a->select = BENCH_ALL;
	a->selftest = false;
	a->period_ms = DEFAULT_MS;
	a->coremark_ms = DEFAULT_MS;
	a->tick_hz = 0;
	a->linear = false;
	a->ipc = IPC_NONE;
	a->ipc_tx = 0;
	a->ipc_rx = 1;
	a->ipc_count = IPC_COUNT;
	a->ipc_kick = 0;
	a->ipc_hold = 0;
	a->ipc_report = 0;
	a->ipc_bell = 0;
	a->accel = ACCEL_OFF;
	a->accel_frames = 1;
	a->accel_jobs = 1;
	a->accel_seed = 1;
	a->accel_wait = ACCEL_NO_CHANNEL;
	a->table6 = 0;
	a->demo = false;
	a->demo_period_ms = 5;
	a->demo_deadline_us = 5000;
	a->demo_send_every = 10;
	a->demo_tio_us = 5000;
	a->demo_accel_ms = 100;
	a->relev = 0;
	if (!s)
		return;
	while (*s) {
		size_t n = 0;

		while (is_space(*s))
			s++;
		while (s[n] && !is_space(s[n]))
			n++;
		if (n && !parse_token(s, n, a) && bad)
			bad(s, n);
		s += n;
	}
}

uint64_t median_u64(uint64_t *v, size_t n)
{
	size_t i, j;

	if (n == 0)
		return 0;
	/* Insertion sort: n is a few dozen samples. */
	for (i = 1; i < n; i++) {
		uint64_t x = v[i];

		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return v[(n - 1) / 2];
}

/* Split so that neither product can overflow for a 32-bit ms and any hz. */
uint64_t bench_ms_to_counts(uint64_t ms, uint64_t hz)
{
	return (hz / 1000) * ms + (hz % 1000) * ms / 1000;
}

uint64_t bench_counts_to_ms(uint64_t counts, uint64_t hz)
{
	if (hz < 1000)
		return hz ? counts * 1000 / hz : 0;
	return counts / (hz / 1000);
}
