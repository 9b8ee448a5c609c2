#include "bootargs.h"
#include "console.h"
#include "lib.h"

#define DEFAULT_TICKS 0
#define DEFAULT_PERIOD_MS 1000
#define DEFAULT_AT 3
#define DEFAULT_SCAN_AT 2
#define DEFAULT_CTL_AFTER_MS 100
#define DEFAULT_SAMPLE_MS 10
#define DEFAULT_SAMPLE_AT_MS 500
#define DEFAULT_SHM_ROUNDS 100
#define DEFAULT_KICK_MS 20
/* QEMU virt's PL061, where a timed-I/O grant's view usually sits. */
#define DEFAULT_TIO_VIEW 0x09030000
#define DEFAULT_TIO_GAP_US 500
#define DEFAULT_FUZZ_SEED 1
#define DEFAULT_IPC_N 1000
#define DEFAULT_ARCH_ROUNDS 40
#define DEFAULT_PTIMER_MS 5
#define DEFAULT_IRQ_BENCH_DELAY 200
#define DEFAULT_PTIMER_ROUNDS 20
/* Keeps period_ms * CNTFRQ / 1000 far from 64-bit overflow. */
#define MAX_PERIOD_MS 0xffffffffull
/* irq-bench's delays, a span of 1001 ticks from this: at most 1 ms, well inside its 100 ms timeout. */
#define MAX_IRQ_BENCH_DELAY 62500

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Decimal, or hex with a 0x prefix; the whole of s[0..n) must be the number. */
static bool parse_u64(const char *s, u32 n, u64 *out)
{
	u64 v = 0, base = 10;
	u32 i = 0;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == n)
		return false;
	for (; i < n; i++) {
		char c = s[i];
		u64 d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return false;
		if (v > (~0ull - d) / base)
			return false;
		v = v * base + d;
	}
	*out = v;
	return true;
}

static void bad(const char *tok, u32 n)
{
	u32 i;

	puts_raw("bad bootargs: ");
	for (i = 0; i < n; i++)
		putc_raw(tok[i]);
	putc_raw('\n');
}

const char *misbehave_name(enum misbehave_kind k)
{
	if (k == MIS_WRITE_OUTSIDE) return "write-outside";
	if (k == MIS_READ_OTHER) return "read-other";
	if (k == MIS_GICD) return "gicd";
	if (k == MIS_SMC) return "smc";
	if (k == MIS_SYSREG) return "sysreg";
	return "none";
}

static bool parse_kind(const char *v, u32 n, enum misbehave_kind *k)
{
	enum misbehave_kind c;

	for (c = MIS_WRITE_OUTSIDE; c <= MIS_SYSREG; c++) {
		if (str_eq_n(v, n, misbehave_name(c))) {
			*k = c;
			return true;
		}
	}
	return false;
}

/* No table of names: the image must not hold absolute addresses. */
const char *acc_fn_name(enum acc_fn f)
{
	if (f == ACC_QAM16) return "qam16";
	if (f == ACC_QAM64) return "qam64";
	if (f == ACC_FFT512) return "fft512";
	return "fft1024";
}

static bool parse_acc_fn(const char *v, u32 n, enum acc_fn *f)
{
	enum acc_fn c;

	for (c = ACC_QAM16; c <= ACC_FFT1024; c++) {
		if (str_eq_n(v, n, acc_fn_name(c))) {
			*f = c;
			return true;
		}
	}
	return false;
}

const char *arch_test_name(enum arch_test t)
{
	if (t == ARCH_ABORT) return "abort";
	if (t == ARCH_UNDEF) return "undef";
	if (t == ARCH_PMU) return "pmu";
	if (t == ARCH_DEBUG) return "debug";
	if (t == ARCH_DEBUG_KEEP) return "debug-keep";
	if (t == ARCH_PTIMER) return "ptimer";
	if (t == ARCH_LEVEL) return "level";
	return "none";
}

static bool parse_arch(const char *v, u32 n, enum arch_test *t)
{
	enum arch_test c;

	for (c = ARCH_ABORT; c <= ARCH_LEVEL; c++) {
		if (str_eq_n(v, n, arch_test_name(c))) {
			*t = c;
			return true;
		}
	}
	return false;
}

/* One key=value token; returns false if the value is bad. Unknown keys pass. */
static bool parse_token(const char *tok, u32 n, struct bootargs *a)
{
	const char *v;
	u32 klen = 0, vlen;
	u64 num;

	while (klen < n && tok[klen] != '=')
		klen++;
	if (klen == n)
		return true;	/* a bare word: not ours */
	v = tok + klen + 1;
	vlen = n - klen - 1;

#define KEY(name) str_eq_n(tok, klen, name)
	if (KEY("ticks")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->ticks = num;
	} else if (KEY("period_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->period_ms = num;
	} else if (KEY("at")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->at = num;
	} else if (KEY("scan_at")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->scan_at = num;
	} else if (KEY("addr")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->addr = num;
		a->has_addr = true;
	} else if (KEY("tio")) {
		if (!parse_u64(v, vlen, &a->tio))
			return false;
	} else if (KEY("tio-wave")) {
		if (!parse_u64(v, vlen, &a->tio_wave))
			return false;
	} else if (KEY("tio-status")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->tio_status = num;
	} else if (KEY("tio-burst")) {
		if (!parse_u64(v, vlen, &a->tio_burst))
			return false;
	} else if (KEY("tio-attack")) {
		if (!parse_u64(v, vlen, &num) || num > 7)
			return false;
		a->tio_attack_pin = num;
		a->has_tio_attack = true;
	} else if (KEY("tio_pins")) {
		if (!parse_u64(v, vlen, &num) || num == 0 || num > 0xff)
			return false;
		a->tio_pins = (u32)num;
	} else if (KEY("tio_gap_us")) {
		if (!parse_u64(v, vlen, &num) || num < 10 || num > 1000000)
			return false;
		a->tio_gap_us = num;
	} else if (KEY("tio_at_ms")) {
		if (!parse_u64(v, vlen, &a->tio_at_ms))
			return false;
	} else if (KEY("tio_view")) {
		if (!parse_u64(v, vlen, &a->tio_view))
			return false;
	} else if (KEY("misbehave")) {
		if (!parse_kind(v, vlen, &a->misbehave))
			return false;
	} else if (KEY("cpu-off")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->secondaries_off = num == 1;
	} else if (KEY("cpu-on-race")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->cpu_on_race = num;
	} else if (KEY("peek")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->peek = num;
		a->has_peek = true;
	} else if (KEY("timer_hz")) {
		if (!parse_u64(v, vlen, &num) || num == 0 || num > 0xffffffffull)
			return false;
		a->timer_hz = num;
	} else if (KEY("timer_ticks")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->timer_ticks = num;
	} else if (KEY("sgi")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->sgi = num;
	} else if (KEY("sgi-probe")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->sgi_probe = num == 1;
	} else if (KEY("sgi-watch")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->sgi_watch = num == 1;
	} else if (KEY("lr-overflow")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->lr_overflow = num == 1;
	} else if (KEY("spi")) {
		if (!parse_u64(v, vlen, &num) || num < 32 || num > SPI_MAX_INTID)
			return false;
		a->spi = (u32)num;
	} else if (KEY("gicd-attack")) {
		if (!parse_u64(v, vlen, &num) || num < 32 || num > SPI_MAX_INTID)
			return false;
		a->gicd_attack = (u32)num;
	} else if (KEY("cpuif-attack")) {
		if (!parse_u64(v, vlen, &num) || num != 1)
			return false;
		a->cpuif_attack = true;
	} else if (KEY("mask-spin")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->mask_spin_ms = num;
	} else if (KEY("irq-bench")) {
		if (!parse_u64(v, vlen, &num) || num > IRQ_BENCH_MAX)
			return false;
		a->irq_bench = num;
	} else if (KEY("irq-bench-wait")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->irq_bench_wait = num;
	} else if (KEY("irq-bench-delay")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_IRQ_BENCH_DELAY)
			return false;
		a->irq_bench_delay = num;
	} else if (KEY("irq-bench-at-ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->irq_bench_at_ms = num;
	} else if (KEY("ptimer_ms")) {
		if (!parse_u64(v, vlen, &num) || num == 0 || num > 1000)
			return false;
		a->ptimer_ms = num;
	} else if (KEY("ptimer_rounds")) {
		if (!parse_u64(v, vlen, &num) || num == 0)
			return false;
		a->ptimer_rounds = num;
	} else if (KEY("ptimer_hold_us")) {
		if (!parse_u64(v, vlen, &num) || num > 100000)
			return false;
		a->ptimer_hold_us = num;
	} else if (KEY("vcpu-ctl")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->vcpu_ctl = num == 1;
	} else if (KEY("part-ctl")) {
		if (str_eq_n(v, vlen, "suspend"))
			a->part_ctl = PART_CTL_SUSPEND;
		else if (str_eq_n(v, vlen, "halt"))
			a->part_ctl = PART_CTL_HALT;
		else if (str_eq_n(v, vlen, "restart"))
			a->part_ctl = PART_CTL_RESTART;
		else
			return false;
	} else if (KEY("target")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->target = num;
	} else if (KEY("plan-switch")) {
		if (!parse_u64(v, vlen, &num) || num > 0xffff)
			return false;
		a->plan_switch = num + 1;
	} else if (KEY("ctl_after_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->ctl_after_ms = num;
	} else if (KEY("fp_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->fp_ms = num;
	} else if (KEY("fp_at_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->fp_at_ms = num;
	} else if (KEY("count_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->count_ms = num;
	} else if (KEY("count_at_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->count_at_ms = num;
		a->has_count_at = true;
	} else if (KEY("count_gap_ticks")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->count_gap_ticks = num;
	} else if (KEY("duty_busy_ms") || KEY("duty_busy_us")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->duty_busy_us = KEY("duty_busy_ms") ? num * 1000 : num;
	} else if (KEY("duty_idle_ms") || KEY("duty_idle_us")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->duty_idle_us = KEY("duty_idle_ms") ? num * 1000 : num;
	} else if (KEY("duty_cycles")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->duty_cycles = num;
	} else if (KEY("hm-report")) {
		if (!parse_u64(v, vlen, &num) || num > 0xfffffffeull)
			return false;
		a->hm_report = num + 1;
	} else if (KEY("bad-hvc")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->bad_hvc = num == 1;
	} else if (KEY("probe-firmware")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->probe_firmware = num == 1;
	} else if (KEY("print-seed")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->print_seed = num == 1;
	} else if (KEY("chan")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->chan = num;
	} else if (KEY("queue-send")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->queue_send = num;
	} else if (KEY("queue-recv")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->queue_recv = num;
	} else if (KEY("pause_every")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->pause_every = num;
	} else if (KEY("pause_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->pause_ms = num;
	} else if (KEY("sample-write")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->sample_write = num;
	} else if (KEY("sample-read")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->sample_read = num;
	} else if (KEY("sample_ms")) {
		if (!parse_u64(v, vlen, &num) || num == 0 || num > MAX_PERIOD_MS)
			return false;
		a->sample_ms = num;
	} else if (KEY("sample_at_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->sample_at_ms = num;
	} else if (KEY("shm")) {
		if (str_eq_n(v, vlen, "write"))
			a->shm = SHM_WRITE;
		else if (str_eq_n(v, vlen, "read"))
			a->shm = SHM_READ;
		else if (str_eq_n(v, vlen, "view"))
			a->shm = SHM_VIEW;
		else if (str_eq_n(v, vlen, "outside"))
			a->shm = SHM_OUTSIDE;
		else
			return false;
	} else if (KEY("shm_rounds")) {
		if (!parse_u64(v, vlen, &num) || num == 0)
			return false;
		a->shm_rounds = num;
	} else if (KEY("doorbell")) {
		if (!parse_u64(v, vlen, &num) || num < 32 || num > SPI_MAX_INTID)
			return false;
		a->doorbell = (u32)num;
	} else if (KEY("port-probe")) {
		if (str_eq_n(v, vlen, "source"))
			a->port_probe = PROBE_SOURCE;
		else if (str_eq_n(v, vlen, "destination"))
			a->port_probe = PROBE_DESTINATION;
		else if (str_eq_n(v, vlen, "other"))
			a->port_probe = PROBE_OTHER;
		else
			return false;
	} else if (KEY("watchdog-kicks")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->watchdog_kicks = num;
	} else if (KEY("kick_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->kick_ms = num;
	} else if (KEY("hm-read")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->hm_read = num;
	} else if (KEY("acc")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->acc = num;
	} else if (KEY("acc-fn")) {
		if (!parse_acc_fn(v, vlen, &a->acc_fn))
			return false;
	} else if (KEY("acc2")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->acc2 = num;
	} else if (KEY("acc2-fn")) {
		if (!parse_acc_fn(v, vlen, &a->acc2_fn))
			return false;
	} else if (KEY("acc-wait")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->acc_wait = num;
	} else if (KEY("acc-tell")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->acc_tell = num;
	} else if (KEY("acc-tell-at")) {
		if (str_eq_n(v, vlen, "ask"))
			a->acc_tell_at = ACC_AT_ASK;
		else if (str_eq_n(v, vlen, "busy"))
			a->acc_tell_at = ACC_AT_BUSY;
		else if (str_eq_n(v, vlen, "done"))
			a->acc_tell_at = ACC_AT_DONE;
		else if (str_eq_n(v, vlen, "ready"))
			a->acc_tell_at = ACC_AT_READY;
		else
			return false;
	} else if (KEY("acc-delay-ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->acc_delay_ms = num;
	} else if (KEY("acc-gap-us")) {
		if (!parse_u64(v, vlen, &num) || num > 1000000)
			return false;
		a->acc_gap_us = num;
	} else if (KEY("acc-for-ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->acc_for_ms = num;
	} else if (KEY("acc-frames")) {
		if (!parse_u64(v, vlen, &num) || num == 0)
			return false;
		a->acc_frames = num;
	} else if (KEY("acc-jobs")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->acc_jobs = num;
	} else if (KEY("acc-seed")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->acc_seed = num;
	} else if (KEY("acc-cmd")) {
		if (!parse_u64(v, vlen, &num) || num > 0xffffffffull)
			return false;
		a->acc_cmd = (u32)num;
	} else if (KEY("acc-bad")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->acc_bad = num != 0;
	} else if (KEY("acc-fallback")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->acc_fallback = num != 0;
	} else if (KEY("acc-fallback-ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->acc_fallback_ms = num;
	} else if (KEY("acc-index")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->acc_index = num;
	} else if (KEY("fuzz")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->fuzz = num;
	} else if (KEY("fuzz_seed")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->fuzz_seed = num;
	} else if (KEY("ipc-bench")) {
		if (str_eq_n(v, vlen, "bench"))
			a->ipc_bench = IPC_BENCH_MEASURE;
		else if (str_eq_n(v, vlen, "echo"))
			a->ipc_bench = IPC_BENCH_ECHO;
		else
			return false;
	} else if (KEY("ipc_n")) {
		if (!parse_u64(v, vlen, &num) || num == 0)
			return false;
		a->ipc_n = num;
	} else if (KEY("ipc_sgi")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->ipc_sgi = num == 1;
	} else if (KEY("until-off")) {
		if (!parse_u64(v, vlen, &num))
			return false;
		a->until_off = num;
		a->has_until_off = true;
	} else if (KEY("arch")) {
		if (!parse_arch(v, vlen, &a->arch))
			return false;
	} else if (KEY("arch_rounds")) {
		if (!parse_u64(v, vlen, &num) || num == 0 || num > 100000)
			return false;
		a->arch_rounds = num;
	} else if (KEY("arch_seed")) {
		if (!parse_u64(v, vlen, &num) || num > 0xffff)
			return false;
		a->arch_seed = num;
	} else if (KEY("end")) {
		if (str_eq_n(v, vlen, "off"))
			a->end_reset = false;
		else if (str_eq_n(v, vlen, "reset"))
			a->end_reset = true;
		else
			return false;
	} else if (KEY("marker")) {
		if (str_eq_n(v, vlen, "write")) {
			a->marker_write = true;
		} else if (str_eq_n(v, vlen, "scan")) {
			a->marker_scan = true;
		} else if (str_eq_n(v, vlen, "write+scan") || str_eq_n(v, vlen, "scan+write")) {
			a->marker_write = true;
			a->marker_scan = true;
		} else {
			return false;
		}
	}
#undef KEY
	return true;
}

void bootargs_parse(const char *cmdline, struct bootargs *a)
{
	const char *p = cmdline;

	a->ticks = DEFAULT_TICKS;
	a->period_ms = DEFAULT_PERIOD_MS;
	a->misbehave = MIS_NONE;
	a->at = DEFAULT_AT;
	a->addr = 0;
	a->has_addr = false;
	a->marker_write = false;
	a->marker_scan = false;
	a->scan_at = DEFAULT_SCAN_AT;
	a->end_reset = false;
	a->secondaries_off = false;
	a->cpu_on_race = 0;
	a->peek = 0;
	a->has_peek = false;
	a->timer_hz = 0;
	a->timer_ticks = 0;
	a->sgi = 0;
	a->sgi_probe = false;
	a->sgi_watch = false;
	a->lr_overflow = false;
	a->spi = 0;
	a->gicd_attack = 0;
	a->mask_spin_ms = 0;
	a->cpuif_attack = false;
	a->irq_bench = 0;
	a->irq_bench_wait = false;
	a->irq_bench_delay = DEFAULT_IRQ_BENCH_DELAY;
	a->irq_bench_at_ms = 0;
	a->ptimer_ms = DEFAULT_PTIMER_MS;
	a->ptimer_rounds = DEFAULT_PTIMER_ROUNDS;
	a->ptimer_hold_us = 0;
	a->vcpu_ctl = false;
	a->part_ctl = PART_CTL_NONE;
	a->target = 0;
	a->plan_switch = 0;
	a->ctl_after_ms = DEFAULT_CTL_AFTER_MS;
	a->duty_busy_us = 0;
	a->duty_idle_us = 0;
	a->duty_cycles = 0;
	a->hm_report = 0;
	a->bad_hvc = false;
	a->probe_firmware = false;
	a->print_seed = false;
	a->count_ms = 0;
	a->fp_ms = 0;
	a->fp_at_ms = 0;
	a->count_at_ms = 0;
	a->has_count_at = false;
	a->count_gap_ticks = 0;
	a->chan = 0;
	a->queue_send = 0;
	a->queue_recv = 0;
	a->pause_every = 0;
	a->pause_ms = 0;
	a->sample_write = 0;
	a->sample_read = 0;
	a->sample_ms = DEFAULT_SAMPLE_MS;
	a->sample_at_ms = DEFAULT_SAMPLE_AT_MS;
	a->shm = SHM_NONE;
	a->shm_rounds = DEFAULT_SHM_ROUNDS;
	a->doorbell = 0;
	a->port_probe = PROBE_NONE;
	a->watchdog_kicks = 0;
	a->kick_ms = DEFAULT_KICK_MS;
	a->hm_read = 0;
	a->tio = 0;
	a->tio_wave = 0;
	a->tio_status = false;
	a->tio_burst = 0;
	a->has_tio_attack = false;
	a->tio_pins = 1;
	a->tio_gap_us = DEFAULT_TIO_GAP_US;
	a->tio_view = DEFAULT_TIO_VIEW;
	a->tio_at_ms = 0;
	a->fuzz = 0;
	a->fuzz_seed = DEFAULT_FUZZ_SEED;
	a->ipc_bench = IPC_BENCH_NONE;
	a->ipc_n = DEFAULT_IPC_N;
	a->ipc_sgi = false;
	a->acc_frames = 1;
	a->acc_jobs = 1;
	a->acc_wait = ACC_NO_CHANNEL;
	a->acc_tell = ACC_NO_CHANNEL;
	a->acc_tell_at = ACC_AT_BUSY;
	a->acc_seed = 1;
	a->until_off = 0;
	a->has_until_off = false;
	a->arch = ARCH_NONE;
	a->arch_rounds = DEFAULT_ARCH_ROUNDS;
	a->arch_seed = 1;
	if (!p)
		return;

	while (*p) {
		u32 n = 0;

		while (is_space(*p))
			p++;
		while (p[n] && !is_space(p[n]))
			n++;
		if (n && !parse_token(p, n, a))
			bad(p, n);
		p += n;
	}
}
