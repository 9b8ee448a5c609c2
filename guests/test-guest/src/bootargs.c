#include "bootargs.h"
#include "console.h"
#include "lib.h"

#define DEFAULT_TICKS 0
#define DEFAULT_PERIOD_MS 1000
#define DEFAULT_AT 3
#define DEFAULT_SCAN_AT 2
#define DEFAULT_CTL_AFTER_MS 100
/* Keeps period_ms * CNTFRQ / 1000 far from 64-bit overflow. */
#define MAX_PERIOD_MS 0xffffffffull

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
	} else if (KEY("misbehave")) {
		if (!parse_kind(v, vlen, &a->misbehave))
			return false;
	} else if (KEY("cpu-off")) {
		if (!parse_u64(v, vlen, &num) || num > 1)
			return false;
		a->secondaries_off = num == 1;
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
	} else if (KEY("mask-spin")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->mask_spin_ms = num;
	} else if (KEY("irq-bench")) {
		if (!parse_u64(v, vlen, &num) || num > IRQ_BENCH_MAX)
			return false;
		a->irq_bench = num;
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
	} else if (KEY("count_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->count_ms = num;
	} else if (KEY("count_at_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->count_at_ms = num;
		a->has_count_at = true;
	} else if (KEY("duty_busy_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->duty_busy_ms = num;
	} else if (KEY("duty_idle_ms")) {
		if (!parse_u64(v, vlen, &num) || num > MAX_PERIOD_MS)
			return false;
		a->duty_idle_ms = num;
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
	a->peek = 0;
	a->has_peek = false;
	a->timer_hz = 0;
	a->timer_ticks = 0;
	a->sgi = 0;
	a->lr_overflow = false;
	a->spi = 0;
	a->gicd_attack = 0;
	a->mask_spin_ms = 0;
	a->irq_bench = 0;
	a->vcpu_ctl = false;
	a->part_ctl = PART_CTL_NONE;
	a->target = 0;
	a->plan_switch = 0;
	a->ctl_after_ms = DEFAULT_CTL_AFTER_MS;
	a->duty_busy_ms = 0;
	a->duty_idle_ms = 0;
	a->duty_cycles = 0;
	a->hm_report = 0;
	a->bad_hvc = false;
	a->count_ms = 0;
	a->count_at_ms = 0;
	a->has_count_at = false;
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
