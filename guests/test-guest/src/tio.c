/*
 * Timed outputs (timing-accurate I/O): the partition asks Partita to drive
 * GPIO lines at counter values and reads them back through its read-only
 * view of the controller (tio_view), just before and just after each
 * asked time. Also: a periodic waveform, the refusals, a burst against
 * the queue's depth, and a partition reaching for lines not its own.
 */
#include "guest.h"
#include "console.h"
#include "partita.h"

/* The first output comes this long after the call that asks for it. */
#define TIO_FIRST_US 2000
/* A burst asks from this far ahead, so that its outputs are all pending. */
#define TIO_BURST_AHEAD_MS 5
/* Waits sleep in WFI until this long before their time, then poll. */
#define TIO_WAKE_EARLY_US 40

static u32 gpio_read(u64 view, u32 pins)
{
	return *(volatile u32 *)(view + ((u64)pins << 2)) & pins;
}

/*
 * Sleeps, then polls the last stretch: an idle vCPU leaves its pCPU to
 * Partita's outputs and, under -icount, its turns to the other vCPUs.
 */
static void wait_until(u64 t)
{
	u64 early = us_to_counts(TIO_WAKE_EARLY_US);

	if ((s64)(t - counter_now()) > (s64)(2 * early))
		timer_sleep_until(t - early);
	while ((s64)(counter_now() - t) < 0)
		;
}

/* When a series may start: a little after now, and not before tio_at_ms. */
static u64 first_output(const struct bootargs *a)
{
	u64 soon = counter_now() + us_to_counts(TIO_FIRST_US), from = ms_to_counts(a->tio_at_ms);

	return (s64)(from - soon) > 0 ? from : soon;
}

static long write_at(u32 pins, u32 values, u64 at, u64 period)
{
	return partita_call4(PARTITA_TIO_WRITE_AT, pins, values, at, period).status;
}

static void print_stats(const char *what)
{
	struct partita_result r = partita_call(PARTITA_TIO_STATS, 0, 0, 0);

	printf("%s: stats %ld: done %lu, max E %lu ticks, sum E %lu ticks\n", what, r.status, r.value, r.value2,
	       r.value3);
}

/*
 * n outputs, one every tio_gap_us, alternating between all of `pins` and
 * none. Each is asked for once the previous one is checked; the lines
 * must hold the old value a quarter gap before and the new one a
 * microsecond after.
 */
static void tio_check(const struct bootargs *a)
{
	u64 gap = us_to_counts(a->tio_gap_us), after = us_to_counts(1), at, k;
	u64 on_time = 0, early = 0, late = 0, refused = 0;
	u32 pins = a->tio_pins;
	long status = PARTITA_OK;

	at = first_output(a);
	for (k = 0; k < a->tio; k++, at += gap) {
		u32 value = k & 1 ? 0 : pins, before, now;
		long s = write_at(pins, value, at, 0);

		if (s != PARTITA_OK) {
			status = s;
			refused++;
			continue;
		}
		wait_until(at - gap / 4);
		before = gpio_read(a->tio_view, pins);
		wait_until(at + after);
		now = gpio_read(a->tio_view, pins);
		if (now == value && before != value)
			on_time++;
		else if (before == value)
			early++;
		else
			late++;
	}
	printf("tio: %lu outputs on pins 0x%x every %lu us: %lu on time, %lu early, %lu late, %lu refused (%ld)\n",
	       a->tio, pins, a->tio_gap_us, on_time, early, late, refused, status);
	print_stats("tio");
}

/*
 * A square wave from two periodic outputs, high then low half a period
 * later, sampled a microsecond after each edge for n half-periods, then
 * cancelled.
 */
static void tio_wave(const struct bootargs *a)
{
	u64 period = 2 * us_to_counts(a->tio_gap_us), start = first_output(a), h;
	u64 right = 0;
	u32 pins = a->tio_pins;
	long high = write_at(pins, pins, start, period), low = write_at(pins, 0, start + period / 2, period);
	struct partita_result cancel;

	for (h = 0; h < a->tio_wave; h++) {
		wait_until(start + h * (period / 2) + us_to_counts(1));
		right += gpio_read(a->tio_view, pins) == (h & 1 ? 0 : pins);
	}
	cancel = partita_call(PARTITA_TIO_CANCEL, pins, 0, 0);
	printf("tio wave: %lu half-periods of %lu us, %lu right (high %ld, low %ld); cancel %ld dropped %lu\n",
	       a->tio_wave, a->tio_gap_us, right, high, low, cancel.status, cancel.value);
}

/* Every refusal once: none of them is queued. */
static void tio_status(const struct bootargs *a)
{
	u32 pins = a->tio_pins, foreign = ~pins & 0xff;
	u64 now = counter_now(), soon = now + ms_to_counts(1);

	printf("tio status: past %ld, too far %ld, foreign pins %ld, no pins %ld, wide mask %ld, short period %ld\n",
	       write_at(pins, pins, now, 0), write_at(pins, pins, now + (1ull << 40), 0),
	       write_at(foreign, foreign, soon, 0), write_at(0, 0, soon, 0), write_at(0x100 | pins, 0, soon, 0),
	       write_at(pins, pins, soon, 1));
}

/*
 * n requests in a row, all ahead: the queue takes its depth and refuses
 * the rest with EFULL; those taken are all done.
 */
static void tio_burst(const struct bootargs *a)
{
	u64 gap = us_to_counts(a->tio_gap_us), first = first_output(a) + ms_to_counts(TIO_BURST_AHEAD_MS), k;
	u64 taken = 0, full = 0, other = 0;
	u32 pins = a->tio_pins;

	for (k = 0; k < a->tio_burst; k++) {
		long s = write_at(pins, k & 1 ? 0 : pins, first + k * gap, 0);

		taken += s == PARTITA_OK;
		full += s == PARTITA_EFULL;
		other += s != PARTITA_OK && s != PARTITA_EFULL;
	}
	printf("tio burst: %lu asked, %lu taken, %lu full, %lu other\n", a->tio_burst, taken, full, other);
	wait_until(first + a->tio_burst * gap + ms_to_counts(1));
	print_stats("tio burst");
}

/* Line `pin` is not ours: neither a call nor a store through tio_view may drive it. */
static void tio_attack(const struct bootargs *a)
{
	u32 pin = 1u << a->tio_attack_pin;
	long call = write_at(pin, pin, counter_now() + ms_to_counts(1), 0);
	u64 esr = arch_try_store(a->tio_view + ((u64)pin << 2), pin);

	printf("tio attack: pin %lu call %ld, store %s EC 0x%lx FSC 0x%lx\n", a->tio_attack_pin, call,
	       esr ? "faulted" : "went through", esr >> 26, esr & 0x3f);
}

void tio_tests(const struct bootargs *a)
{
	if (a->has_tio_attack)
		tio_attack(a);
	if (a->tio_status)
		tio_status(a);
	if (a->tio_burst)
		tio_burst(a);
	if (a->tio)
		tio_check(a);
	if (a->tio_wave)
		tio_wave(a);
}
