/*
 * Host tests of the benchmarks' pure helpers (../args.c):
 *   make -C guests/rtos host-test   (runs these, then the kernel's tests)
 */
#include <stdio.h>
#include <string.h>
#include "bench.h"

static int failures;
static char last_bad[64];
static int bads;

#define CHECK(c) do { if (!(c)) { printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

static void bad(const char *tok, size_t n)
{
	snprintf(last_bad, sizeof(last_bad), "%.*s", (int)n, tok);
	bads++;
}

static void parse(const char *s, struct bench_args *a)
{
	bads = 0;
	last_bad[0] = '\0';
	bench_args_parse(s, a, bad);
}

int main(void)
{
	struct bench_args a;
	uint64_t v[] = { 9, 1, 5, 3, 7 }, w[] = { 4, 2 };

	parse(NULL, &a);
	CHECK(a.select == BENCH_ALL && a.period_ms == 3000 && a.coremark_ms == 3000);
	CHECK(!a.linear && !a.selftest && a.tick_hz == 0 && bads == 0);

	parse("console=ttyAMA0 bench=tm3svc period_ms=500 coremark_ms=250 sched=linear tick_hz=1000", &a);
	CHECK(a.select == 1u << B_TM3SVC && a.period_ms == 500 && a.coremark_ms == 250);
	CHECK(a.linear && a.tick_hz == 1000 && bads == 0);

	parse("  bench=schedprio\tquiet ", &a);
	CHECK(a.select == 1u << B_SCHEDPRIO && bads == 0);

	parse("bench=selftest", &a);
	CHECK(a.selftest && a.select == 0);

	parse("bench=tm8 period_ms=12x", &a);
	CHECK(a.select == BENCH_ALL && a.period_ms == 3000 && bads == 2);
	CHECK(strcmp(last_bad, "period_ms=12x") == 0);

	parse("period_ms=0 coremark_ms= sched=fifo bench=tm", &a);
	CHECK(bads == 4 && a.period_ms == 3000 && !a.linear);

	parse("period_ms=99999999999999999999", &a);
	CHECK(bads == 1 && a.period_ms == 3000);

	parse("bench=tm1", &a);
	CHECK(a.ipc == IPC_NONE && a.ipc_tx == 0 && a.ipc_rx == 1 && a.ipc_count == 100);
	CHECK(a.ipc_kick == 0 && a.ipc_hold == 0 && a.ipc_report == 0);
	CHECK(a.ipc_bell == 0);

	parse("ipc=pong ipc_tx=1 ipc_rx=0 ipc_count=20 ipc_kick=5 ipc_hold=0 ipc_report=4242", &a);
	CHECK(a.ipc == IPC_PONG && a.ipc_tx == 1 && a.ipc_rx == 0 && a.ipc_count == 20);
	CHECK(a.ipc_kick == 5 && a.ipc_hold == 0 && a.ipc_report == 4242 && bads == 0);

	parse("ipc=ping ipc_bell=1", &a);
	CHECK(a.ipc_bell == 1 && bads == 0);

	parse("ipc=pang ipc_tx=64 ipc_count=0 ipc_kick=x", &a);
	CHECK(bads == 4 && a.ipc == IPC_NONE && a.ipc_tx == 0 && a.ipc_count == 100);

	parse("ipc_bell=2 ipc_bell=x", &a);
	CHECK(bads == 2 && a.ipc_bell == 0);

	parse("bench=tm1", &a);
	CHECK(a.accel == ACCEL_OFF && a.accel_frames == 1 && a.accel_jobs == 1);
	CHECK(a.accel_seed == 1 && a.accel_wait == ACCEL_NO_CHANNEL);

	parse("accel=fft1024 accel_frames=3 accel_jobs=4 accel_seed=0 accel_wait=0", &a);
	CHECK(a.accel == ACCEL_FFT1024 && a.accel_frames == 3 && a.accel_jobs == 4);
	CHECK(a.accel_seed == 0 && a.accel_wait == 0 && bads == 0);

	parse("accel=qam16 accel_seed=4294967295", &a);
	CHECK(a.accel == ACCEL_QAM16 && a.accel_seed == 4294967295u && bads == 0);

	parse("accel=qam32 accel=QAM16 accel_frames=0 accel_jobs=x accel_seed=4294967296 accel_wait=64", &a);
	CHECK(bads == 6 && a.accel == ACCEL_OFF && a.accel_frames == 1 && a.accel_jobs == 1);
	CHECK(a.accel_seed == 1 && a.accel_wait == ACCEL_NO_CHANNEL);

	parse("accel_table6=all accel_frames=5", &a);
	CHECK(a.table6 == ((1u << ACCEL_QAM16) | (1u << ACCEL_QAM64) | (1u << ACCEL_FFT512) | (1u << ACCEL_FFT1024)));
	CHECK(a.accel == ACCEL_OFF && a.accel_frames == 5 && bads == 0);

	parse("accel_table6=fft1024,qam16", &a);
	CHECK(a.table6 == ((1u << ACCEL_QAM16) | (1u << ACCEL_FFT1024)) && bads == 0);

	parse("accel_table6=fft512", &a);
	CHECK(a.table6 == 1u << ACCEL_FFT512 && bads == 0);

	parse("accel_table6=qam16, accel_table6=,qam16 accel_table6=qam16,,fft512 accel_table6= accel_table6=qam32", &a);
	CHECK(bads == 5 && a.table6 == 0);

	parse("bench=tm1", &a);
	CHECK(a.table6 == 0);

	parse("bench=tm1", &a);
	CHECK(!a.demo && a.demo_period_ms == 5 && a.demo_deadline_us == 5000 && a.demo_send_every == 10);
	CHECK(a.demo_tio_us == 5000 && a.demo_accel_ms == 100);

	parse("demo=1 demo_period_ms=10 demo_deadline_us=2500 demo_send_every=100 demo_tio_us=500 demo_accel_ms=50", &a);
	CHECK(a.demo && a.demo_period_ms == 10 && a.demo_deadline_us == 2500 && a.demo_send_every == 100);
	CHECK(a.demo_tio_us == 500 && a.demo_accel_ms == 50 && bads == 0);

	parse("demo=2 demo_period_ms=0 demo_deadline_us=x demo_send_every=60001 demo_tio_us=0 demo_accel_ms=-1", &a);
	CHECK(bads == 6 && !a.demo && a.demo_period_ms == 5 && a.demo_send_every == 10 && a.demo_accel_ms == 100);

	parse("bench=tm1", &a);
	CHECK(a.relev == 0);

	parse("relev=10000 tick_hz=1000", &a);
	CHECK(a.relev == 10000 && a.tick_hz == 1000 && bads == 0);

	parse("relev=1000000 relev=0", &a);
	CHECK(a.relev == 0 && bads == 0);

	parse("relev=1000001 relev=-1 relev=x relev=", &a);
	CHECK(bads == 4 && a.relev == 0);

	CHECK(strcmp(accel_mode_name(ACCEL_QAM64), "qam64") == 0 && strcmp(accel_mode_name(ACCEL_FFT512), "fft512") == 0);
	CHECK(strcmp(accel_mode_name(ACCEL_OFF), "") == 0);

	CHECK(median_u64(v, 5) == 5 && v[0] == 1 && v[4] == 9);
	CHECK(median_u64(w, 2) == 2);
	CHECK(median_u64(w, 0) == 0);

	CHECK(bench_ms_to_counts(3000, 62500000) == 187500000);
	CHECK(bench_ms_to_counts(86400000, 0xffffffffull) == 86400000ull * 0xffffffffull / 1000);
	CHECK(bench_counts_to_ms(187500000, 62500000) == 3000);
	CHECK(strcmp(bench_name(B_TM4SVC), "tm4svc") == 0);

	printf("%s\n", failures ? "args tests FAILED" : "args tests ok");
	return failures != 0;
}
