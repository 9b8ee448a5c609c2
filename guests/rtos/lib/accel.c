/*
 * Partita's virtual accelerators for RTOS tasks, guest-aware
 * (rtos_partita.h, docs/accelerators.md): a task asks for a PRR without
 * stalling and sleeps until IPC_READY, so the RTOS keeps scheduling while
 * the fabric downloads, preempts or computes.
 *
 * Signals only wake the task; what it then does depends on the interface
 * page alone (STAT, START, OVER) and on what PARTITA_ACC_REQUEST answers.
 * That makes every signal safe to lose, repeat or receive late, which
 * matters because they do all three: READY comes once a waiting request
 * is connected and again at the end of each job, either of which may
 * find the task already past the moment it slept for.
 */
#include "rtos_partita.h"
#include "fdt.h"
#include "lib.h"

#include "hypercall.h"
/*
 * A task waiting on a device looks at it again at least this often: an
 * error (ERR_DMA, ERR_CMD) raises no signal, and a request the manager
 * dropped (its waiting list full) must be made again.
 */
#define POLL_TICKS	1u
/* A visitor's "stop here", distinct from every enum fdt_error. */
#define FOUND		(-1)

/* Ker-ONE's frame: 18,800 bits into the mappers, 4,700 samples into the FFTs. */
#define FRAME_BITS	18800u
#define FRAME_SAMPLES	4700u

/* ---- Finding the device ---- */

struct search {
	const char *function;
	bool have_partita;		/* the tree has /partita */
	bool found, broken;
	struct rtos_accel *acc;
};

static enum rtos_accel_function function_of(const char *name)
{
	if (strcmp(name, "qam16") == 0)
		return RTOS_ACCEL_QAM16;
	if (strcmp(name, "qam64") == 0)
		return RTOS_ACCEL_QAM64;
	if (strcmp(name, "fft512") == 0)
		return RTOS_ACCEL_FFT512;
	if (strcmp(name, "fft1024") == 0)
		return RTOS_ACCEL_FFT1024;
	return RTOS_ACCEL_UNKNOWN;
}

/* Position of `s` in stringlist property `name`, or -1. */
static int string_index(const struct fdt *f, const struct fdt_node *n, const char *name, const char *s)
{
	uint32_t len, i = 0;
	const u8 *v = fdt_prop(f, n, name, &len);
	int index = 0;

	while (v && i < len) {
		uint32_t start = i;

		while (i < len && v[i])
			i++;
		if (i == len)
			return -1;	/* unterminated last entry */
		if (str_eq_n((const char *)v + start, i - start, s))
			return index;
		i++;
		index++;
	}
	return -1;
}

/*
 * The INTID of signal `name`: its position in interrupt-names picks the
 * GIC specifier <0 (SPI) number flags>; 0 if there is none such.
 */
static uint32_t signal_intid(const struct fdt *f, const struct fdt_node *n, const char *name)
{
	uint32_t len;
	const u8 *p = fdt_prop(f, n, "interrupts", &len);
	int i = string_index(f, n, "interrupt-names", name);

	if (!p || i < 0 || (uint32_t)(i + 1) * 12 > len || fdt_be32(p + 12 * i) != 0)
		return 0;
	return FIRST_SPI + fdt_be32(p + 12 * i + 4);
}

/* A node that claims to be our device but lacks what the calls need. */
static bool read_device(const struct fdt *f, const struct fdt_node *n, struct rtos_accel *acc)
{
	uint32_t len;
	const u8 *device = fdt_prop(f, n, "device", &len);
	uint64_t size;

	if (!device || len != 4 || !fdt_reg(f, n, 0, &acc->page, &size))
		return false;
	acc->device = fdt_be32(device);
	acc->function = function_of(fdt_prop_string(f, n, "function") ?: "");
	acc->intid_wait = signal_intid(f, n, "wait");
	acc->intid_ready = signal_intid(f, n, "ready");
	acc->intid_preempt = signal_intid(f, n, "preempt");
	return acc->intid_wait && acc->intid_ready && acc->intid_preempt;
}

static int visit(const struct fdt *f, const struct fdt_node *n, void *ctx)
{
	struct search *s = ctx;

	if (n->depth != 1)
		return FDT_OK;
	if (fdt_name_is(n, "partita"))
		s->have_partita = fdt_prop_has_string(f, n, "compatible", "partita,hypervisor");
	if (s->found || !fdt_prop_has_string(f, n, "compatible", "partita,accelerator") ||
	    !fdt_prop_has_string(f, n, "function", s->function))
		return FDT_OK;
	/* The first in the partition's order: node order is `device` order. */
	if (!read_device(f, n, s->acc)) {
		s->broken = true;
		return FOUND;
	}
	s->found = true;
	/* Partita writes /partita after the devices: walk on to see it. */
	return FDT_OK;
}

/* Wakes the task for READY and PREEMPT; counts every signal. */
static void on_signal(uint32_t intid, void *arg)
{
	struct rtos_accel *acc = arg;

	if (intid == acc->intid_ready) {
		acc->readies++;
		rtos_sem_give(&acc->signal);
	} else if (intid == acc->intid_preempt) {
		acc->preempts++;
		rtos_sem_give(&acc->signal);
	} else {
		/* IPC_WAIT: the request is queued; READY will follow. */
		acc->waits++;
	}
}

static long attach(struct rtos_accel *acc, uint32_t intid)
{
	if (intid < FIRST_SPI || intid > LAST_SPI)
		return PARTITA_ESTATE;
	switch (rtos_irq_attach(intid, RTOS_ACCEL_IRQ_PRIO, on_signal, acc)) {
	case RTOS_OK: return PARTITA_OK;
	case RTOS_ESTATE: return PARTITA_ESTATE;
	default: return PARTITA_EINVAL;
	}
}

long rtos_accel_find(struct rtos_accel *acc, const char *function)
{
	struct search s = { .function = function, .acc = acc };
	struct fdt f;
	long st;
	int err;

	if (!acc || !function || !function[0])
		return PARTITA_EINVAL;
	*acc = (struct rtos_accel){ 0 };
	if (fdt_init(&f, rtos_boot_dtb()) != FDT_OK)
		return PARTITA_ESTATE;
	err = fdt_walk(&f, visit, &s);
	if (s.broken || (err != FDT_OK && err != FOUND) || !s.have_partita)
		return PARTITA_ESTATE;
	if (!s.found)
		return PARTITA_EINVAL;
	/* The semaphore before the ISR: a signal may already be pending. */
	rtos_sem_init(&acc->signal, 0);
	st = attach(acc, acc->intid_wait);
	if (st == PARTITA_OK)
		st = attach(acc, acc->intid_ready);
	if (st == PARTITA_OK)
		st = attach(acc, acc->intid_preempt);
	return st;
}

/* ---- Registers ---- */

static uint32_t r32(const struct rtos_accel *acc, uint32_t off)
{
	return *(volatile uint32_t *)(uintptr_t)(acc->page + off);
}

static uint8_t r8(const struct rtos_accel *acc, uint32_t off)
{
	return *(volatile uint8_t *)(uintptr_t)(acc->page + off);
}

static void w32(const struct rtos_accel *acc, uint32_t off, uint32_t v)
{
	*(volatile uint32_t *)(uintptr_t)(acc->page + off) = v;
}

static void w8(const struct rtos_accel *acc, uint32_t off, uint8_t v)
{
	*(volatile uint8_t *)(uintptr_t)(acc->page + off) = v;
}

static uint64_t r64(const struct rtos_accel *acc, uint32_t off)
{
	return r32(acc, off) | (uint64_t)r32(acc, off + 4) << 32;
}

static void w64(const struct rtos_accel *acc, uint32_t off, uint64_t v)
{
	w32(acc, off, (uint32_t)v);
	w32(acc, off + 4, (uint32_t)(v >> 32));
}

static uint64_t addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void barrier(void)
{
#ifdef __aarch64__
	__asm__ volatile("dsb sy" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

/* ---- Waiting ---- */

/* Signals of earlier requests and jobs: the registers say all they meant. */
static void drain(struct rtos_accel *acc)
{
	while (rtos_sem_take(&acc->signal, RTOS_NO_WAIT) == RTOS_OK)
		;
}

/*
 * Sleeps until a signal or the next poll, unless the timeout of `timeout`
 * ticks started at `start` has run out.
 */
static long wait_signal(struct rtos_accel *acc, uint64_t start, uint32_t timeout)
{
	uint64_t elapsed = rtos_ticks() - start;
	uint32_t slice = POLL_TICKS;

	if (timeout != RTOS_WAIT_FOREVER) {
		if (elapsed >= timeout)
			return PARTITA_ETIMEOUT;
		if (timeout - elapsed < slice)
			slice = (uint32_t)(timeout - elapsed);
	}
	switch (rtos_sem_take(&acc->signal, slice)) {
	case RTOS_OK: case RTOS_ETIMEOUT: return PARTITA_OK;
	/* Nowhere to block: an ISR, or before rtos_start. */
	case RTOS_ESTATE: return PARTITA_ESTATE;
	default: return PARTITA_EINVAL;
	}
}

/* Asks for a PRR: <0 a status, else whether the device is connected. */
static long request(const struct rtos_accel *acc)
{
	struct partita_result r = hypercall(PARTITA_ACC_REQUEST, acc->device, 0, 0, 0);

	return r.status != PARTITA_OK ? r.status : r.value != 0;
}

static long acquire(struct rtos_accel *acc, uint64_t start, uint32_t timeout)
{
	uint64_t t0 = rtos_counter();
	long s;

	drain(acc);
	for (;;) {
		/* Again after every wake-up: a request already made is not made twice. */
		s = request(acc);
		if (s > 0)
			s = PARTITA_OK;
		else if (s == 0)
			s = wait_signal(acc, start, timeout);
		if (s != PARTITA_OK || r32(acc, PARTITA_ACC_STAT) & PARTITA_ACC_STAT_CONNECTED)
			break;
	}
	acc->waited = rtos_counter() - t0;
	return s;
}

long rtos_accel_acquire(struct rtos_accel *acc, uint32_t timeout)
{
	if (!acc)
		return PARTITA_EINVAL;
	return acquire(acc, rtos_ticks(), timeout);
}

long rtos_accel_run(struct rtos_accel *acc, const void *in, uint32_t in_bytes, void *out,
		    uint32_t out_bytes, uint32_t cmd, uint32_t timeout)
{
	uint64_t start = rtos_ticks();
	uint32_t stat;
	bool suspect = false;
	long s;

	if (!acc || !in || !out)
		return PARTITA_EINVAL;
	s = acquire(acc, start, timeout);
	if (s != PARTITA_OK)
		return s;
	/*
	 * Connected: the writes go straight to the accelerator. Were the PRR
	 * taken away right now (its hold expired before START), the first
	 * write would stall the vCPU until connected again, as natively:
	 * correct, only not guest-aware for that moment.
	 */
	w64(acc, PARTITA_ACC_DATA_ADDR, addr(in));
	w32(acc, PARTITA_ACC_DATA_SIZE, in_bytes);
	w32(acc, PARTITA_ACC_OUT_ADDR_LO, (uint32_t)addr(out));
	w32(acc, PARTITA_ACC_OUT_ADDR_HI, (uint32_t)(addr(out) >> 32));
	w32(acc, PARTITA_ACC_OUT_SIZE, out_bytes);
	w32(acc, PARTITA_ACC_CMD, cmd);
	/* READY at the end of the job: the signal this task sleeps for. */
	w32(acc, PARTITA_ACC_INT_CTRL, 1);
	w8(acc, PARTITA_ACC_OVER, 0);
	/* Only READYs of this job from here on. */
	drain(acc);
	/* The input in memory before the accelerator may read it. */
	barrier();
	w8(acc, PARTITA_ACC_START, 1);
	for (;;) {
		stat = r32(acc, PARTITA_ACC_STAT);
		/* The fabric clears START when it takes the job; until then nothing below is this job's. */
		if (r8(acc, PARTITA_ACC_START) == 0) {
			if (r8(acc, PARTITA_ACC_OVER))
				break;
			/*
			 * For the few us between taking START and clearing them,
			 * the error bits may still be an earlier job's: believe
			 * them when a look a poll later still shows them.
			 */
			if (stat & (PARTITA_ACC_STAT_ERR_DMA | PARTITA_ACC_STAT_ERR_CMD) &&
			    !(stat & PARTITA_ACC_STAT_BUSY)) {
				if (suspect)
					return stat & PARTITA_ACC_STAT_ERR_DMA ? RTOS_ACCEL_EDMA : RTOS_ACCEL_ECMD;
				suspect = true;
			} else {
				suspect = false;
			}
		}
		/*
		 * Taken away before the end. A job under way, or a START not
		 * yet taken, asks again by itself when its PRR is stopped; but
		 * a PRR whose hold expired just before START reached it goes
		 * to the next client without a stop. Asking covers that, and
		 * costs nothing otherwise: a request already waiting is not
		 * made twice.
		 */
		if (!(stat & PARTITA_ACC_STAT_CONNECTED)) {
			s = request(acc);
			if (s < 0)
				return s;
		}
		s = wait_signal(acc, start, timeout);
		if (s != PARTITA_OK)
			return s;
	}
	return (long)r64(acc, PARTITA_ACC_RESULT);
}

long rtos_accel_frame_bytes(enum rtos_accel_function function, uint32_t cmd, uint32_t *in,
			    uint32_t *out)
{
	uint64_t bits = cmd ? cmd : FRAME_BITS, samples = cmd ? cmd : FRAME_SAMPLES, n, i, o;

	if (!in || !out)
		return PARTITA_EINVAL;
	switch (function) {
	case RTOS_ACCEL_QAM16:
	case RTOS_ACCEL_QAM64:
		i = (bits + 7) / 8;
		o = bits / (function == RTOS_ACCEL_QAM16 ? 4 : 6) * 4;
		break;
	case RTOS_ACCEL_FFT512:
	case RTOS_ACCEL_FFT1024:
		n = function == RTOS_ACCEL_FFT512 ? 512 : 1024;
		i = samples * 4;
		o = (samples + n - 1) / n * n * 4;
		break;
	default:
		return PARTITA_EINVAL;
	}
	/* DATA_SIZE and PORT2 are 32-bit: a frame that does not fit is no frame. */
	if (o > UINT32_MAX)
		return PARTITA_EINVAL;
	*in = (uint32_t)i;
	*out = (uint32_t)o;
	return PARTITA_OK;
}
