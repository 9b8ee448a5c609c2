/*
 * The Partita test guest: greets, brings up its vCPUs, ticks, and on request
 * misbehaves or looks for another partition's marker. The same binary runs
 * natively on QEMU virt and inside a partition; every difference comes from
 * the device tree and the bootargs.
 */
#include "guest.h"
#include "console.h"
#include "lib.h"
#include "psci.h"
#include "gic.h"

/* How long the boot CPU waits for a secondary's line before going on. */
#define SECONDARY_TIMEOUT_MS 2000

static struct dt_info dt;
static struct bootargs args;
/* Secondaries set their flag once their line is out; see start_secondaries. */
static volatile u32 cpu_up[MAX_CPUS];
/* How often each secondary has started (cpu-off=1 starts them twice). */
static volatile u32 cpu_boots[MAX_CPUS];
static u64 marker_buf[512] __attribute__((aligned(4096)));

void guest_main(u64 dtb);
void secondary_main(u64 index);

static void print_greeting(void)
{
	u32 i, ncpus = dt.ncpus;

	printf("hello from partition %s: %u vcpu(s), memory", dt.partition, ncpus);
	for (i = 0; i < dt.nmem; i++)
		printf("%s 0x%lx+0x%lx", i ? "," : "", dt.mem[i].base, dt.mem[i].size);
	printf("\n");
	if (dt.mem_truncated)
		printf("note: only the first %u memory regions are used\n", MAX_MEM);
}

/* /chosen's seeds as the tree holds them: kaslr-seed a big-endian u64. */
static void print_seeds(void)
{
	u64 kaslr = 0;
	u32 i;

	if (!dt.kaslr_seed || dt.kaslr_seed_len != 8 || !dt.rng_seed) {
		printf("seed: none\n");
		return;
	}
	for (i = 0; i < 8; i++)
		kaslr = kaslr << 8 | dt.kaslr_seed[i];
	printf("seed: kaslr=0x%016lx rng=", kaslr);
	for (i = 0; i < dt.rng_seed_len; i++)
		printf("%02x", dt.rng_seed[i]);
	printf("\n");
}

/*
 * The initrd /chosen names, as a raw or ELF guest that takes one finds it:
 * where it is and an FNV-1a hash of its bytes, which the host computes too.
 */
static void print_initrd(void)
{
	const volatile u8 *p = (const volatile u8 *)dt.initrd_start;
	u32 hash = 2166136261u;
	u64 i, size = dt.initrd_end - dt.initrd_start;

	for (i = 0; i < size; i++)
		hash = (hash ^ p[i]) * 16777619u;
	printf("initrd: 0x%lx+0x%lx fnv1a 0x%08x\n", dt.initrd_start, size, hash);
}

static void print_psci_version(void)
{
	s64 v = smccc_call(dt.psci, PSCI_VERSION, 0, 0, 0);

	if ((int32_t)v < 0)
		printf("psci version call failed: %d\n", (int32_t)v);
	else
		printf("psci version %u.%u\n", (u32)(v >> 16) & 0x7fff, (u32)v & 0xffff);
	printf("psci features: cpu_on %d, migrate %d\n",
	       (int32_t)smccc_call(dt.psci, PSCI_FEATURES, PSCI_CPU_ON_64, 0, 0),
	       (int32_t)smccc_call(dt.psci, PSCI_FEATURES, PSCI_MIGRATE, 0, 0));
}

/*
 * One at a time, each waited for: this is what keeps lines from different
 * CPUs from interleaving on the console without a lock (exclusives are not
 * dependable on the Device memory an MMU-off guest uses).
 */
/* Starts vCPU i and waits for its line; false if it did not come up. */
static bool start_one(u32 i)
{
	u64 deadline;
	s64 ret;

	cpu_up[i] = 0;
	ret = smccc_call(dt.psci, PSCI_CPU_ON_64, dt.cpu_mpidr[i], (u64)&secondary_entry, i);
	if (ret != 0) {
		printf("psci cpu_on vcpu %u (mpidr 0x%lx) failed: %d\n", i, dt.cpu_mpidr[i], (int32_t)ret);
		return false;
	}
	deadline = counter_now() + ms_to_counts(SECONDARY_TIMEOUT_MS);
	while (!cpu_up[i] && (s64)(counter_now() - deadline) < 0)
		;
	if (!cpu_up[i])
		printf("vcpu %u did not come up\n", i);
	return cpu_up[i];
}

/* cpu-off=1: the secondary has called CPU_OFF; AFFINITY_INFO must say so. */
static bool wait_until_off(u32 i)
{
	u64 deadline = counter_now() + ms_to_counts(SECONDARY_TIMEOUT_MS);
	s64 state;

	do {
		state = smccc_call(dt.psci, PSCI_AFFINITY_INFO_64, dt.cpu_mpidr[i], 0, 0);
	} while (state != PSCI_AFFINITY_OFF && (s64)(counter_now() - deadline) < 0);
	if (state != PSCI_AFFINITY_OFF) {
		printf("vcpu %u did not power off: affinity info %d\n", i, (int32_t)state);
		return false;
	}
	printf("vcpu %u off (affinity info %d)\n", i, (int32_t)state);
	return true;
}

/*
 * cpu-on-race=N: vCPUs 0 and 1 start vCPU 2 with PSCI CPU_ON at the same
 * moment, N times. Each round exactly one start must succeed, the other
 * being told ON_PENDING or ALREADY_ON, and vCPU 2 must run with the
 * winner's context (its racer number in bits 8 and up). It powers off only
 * once both calls have returned, so a late caller finds it up, not off
 * again.
 */
#define RACE_TARGET 2
static volatile u64 race_round, race_arrived, race_returned, race_got;
static volatile s64 race_ret[2];

static s64 race_cpu_on(u64 racer)
{
	return smccc_call(dt.psci, PSCI_CPU_ON_64, dt.cpu_mpidr[RACE_TARGET], (u64)&secondary_entry,
			  RACE_TARGET | (racer + 1) << 8);
}

/* vCPU 1's side: one CPU_ON per round, as soon as vCPU 0 opens it. */
static void race_secondary(void)
{
	u64 r;

	for (r = 1; r <= args.cpu_on_race; r++) {
		while (race_round != r)
			;
		race_ret[1] = race_cpu_on(1);
		dsb_sy();
		race_arrived = r;
	}
}

/* The round's outcome is sound: one success, the other refused, the winner's context. */
static bool race_sound(void)
{
	s64 a = race_ret[0], b = race_ret[1];
	bool refused_a = a == PSCI_ALREADY_ON || a == PSCI_ON_PENDING;
	bool refused_b = b == PSCI_ALREADY_ON || b == PSCI_ON_PENDING;

	if (a == 0 && refused_b)
		return race_got == 1;
	if (b == 0 && refused_a)
		return race_got == 2;
	return false;
}

static void cpu_on_race(void)
{
	u64 r, bad = 0, deadline;

	if (dt.ncpus <= RACE_TARGET) {
		printf("cpu-on race: needs %u vcpus\n", RACE_TARGET + 1);
		return;
	}
	for (r = 1; r <= args.cpu_on_race; r++) {
		race_got = 0;
		dsb_sy();
		race_round = r;
		race_ret[0] = race_cpu_on(0);
		dsb_sy();
		race_returned = r;
		deadline = counter_now() + ms_to_counts(SECONDARY_TIMEOUT_MS);
		while ((race_arrived != r || !race_got) && (s64)(counter_now() - deadline) < 0)
			;
		while (smccc_call(dt.psci, PSCI_AFFINITY_INFO_64, dt.cpu_mpidr[RACE_TARGET], 0, 0) != PSCI_AFFINITY_OFF &&
		       (s64)(counter_now() - deadline) < 0)
			;
		if (!race_sound() && bad++ < 3)
			printf("cpu-on race: round %lu: vcpu 0 got %d, vcpu 1 got %d, vcpu 2 ran with %lu\n", r,
			       (int32_t)race_ret[0], (int32_t)race_ret[1], race_got);
	}
	printf("cpu-on race: %lu rounds, %lu bad\n", args.cpu_on_race, bad);
}

static void start_secondaries(void)
{
	u64 self = current_mpidr_affinity();
	u32 i, n = dt.ncpus < MAX_CPUS ? dt.ncpus : MAX_CPUS;

	/* The race starts vCPU 2 itself. */
	if (args.cpu_on_race && n > RACE_TARGET)
		n = RACE_TARGET;
	for (i = 0; i < n; i++) {
		if (dt.cpu_mpidr[i] == self || !start_one(i))
			continue;
		if (args.secondaries_off && wait_until_off(i))
			start_one(i);
	}
	if (dt.ncpus > MAX_CPUS)
		printf("note: only the first %u vcpus are started\n", MAX_CPUS);
}

void secondary_main(u64 context)
{
	u64 index = context & 0xff;

	if (args.cpu_on_race && index == RACE_TARGET) {
		race_got = context >> 8;
		dsb_sy();
		while (race_arrived != race_round || race_returned != race_round)
			;
		smccc_call(dt.psci, PSCI_CPU_OFF, 0, 0, 0);
		halt();
	}
	write_sysreg(tpidr_el1, index);
	printf("vcpu %lu up\n", index);
	if (args.vcpu_ctl)
		vcpu_ctl_secondary();
	cpu_boots[index]++;
	if (args.secondaries_off && cpu_boots[index] == 1) {
		dsb_sy();
		cpu_up[index] = 1;
		smccc_call(dt.psci, PSCI_CPU_OFF, 0, 0, 0);
		printf("vcpu %lu: cpu_off returned\n", index);
		halt();
	}
	/* Only the SGI test needs a secondary's interrupts. */
	if (args.sgi)
		irq_setup_secondary(&args);
	dsb_sy();
	cpu_up[index] = 1;
	if (args.cpu_on_race && index == 1)
		race_secondary();
	if (args.sgi)
		irq_secondary_idle(&dt, &args);
	if (args.fp_ms)
		fp_secondary(&dt, index);
	for (;;)
		__asm__ volatile("wfi");
}

static void scan_for_marker(void)
{
	u64 hits = 0, bytes = 0;
	u32 i;

	for (i = 0; i < dt.nmem; i++) {
		u64 start = (dt.mem[i].base + 7) & ~7ull;
		u64 end = (dt.mem[i].base + dt.mem[i].size) & ~7ull;

		if (end <= start)
			continue;
		hits += marker_scan(start, end - start);
		bytes += end - start;
	}
	printf("marker scan: %lu hit(s) in %lu bytes\n", hits, bytes);
}

/* What happens just before "tick k" (k = 0: before the first tick). */
static void tick_events(u64 k)
{
	if (args.has_peek && k == 1)
		printf("peek 0x%lx = 0x%x\n", args.peek, *(volatile u32 *)args.peek);
	if (args.marker_scan && k == args.scan_at)
		scan_for_marker();
	if (args.misbehave != MIS_NONE && k == args.at)
		misbehave(&dt, &args);
}

static void tick_loop(void)
{
	u64 period = ms_to_counts(args.period_ms);
	u64 next, k;

	if (!(read_sysreg(cntfrq_el0) & 0xffffffff))
		printf("cntfrq_el0 is 0: assuming %u Hz\n", FALLBACK_CNTFRQ);
	tick_events(0);
	next = counter_now();
	for (k = 1; args.ticks == 0 || k <= args.ticks; k++) {
		u64 now;

		next += period;
		while ((s64)((now = counter_now()) - next) < 0)
			;
		/* After a long scan or a descheduled stretch, resume the rhythm, not a burst. */
		if (now - next > period)
			next = now;
		tick_events(k);
		printf("tick %lu\n", k);
		if (args.has_until_off && partition_ended(args.until_off))
			break;
	}
}

static u32 boot_cpu_index(void)
{
	u64 self = current_mpidr_affinity();
	u32 i;

	for (i = 0; i < dt.ncpus && i < MAX_CPUS; i++)
		if (dt.cpu_mpidr[i] == self)
			return i;
	return 0;
}

/* arch=ptimer and arch=level are interrupt tests (conformance.c). */
static bool timer_conformance(enum arch_test t)
{
	return t == ARCH_PTIMER || t == ARCH_LEVEL;
}

static bool wants_gic(void)
{
	return (args.timer_hz && args.timer_ticks) || args.sgi || args.sgi_watch || args.lr_overflow ||
	       args.spi || args.irq_bench || timer_conformance(args.arch) || args.vcpu_ctl || args.duty_cycles || args.shm == SHM_READ ||
	       args.sample_write || args.sample_read || args.ipc_bench == IPC_BENCH_MEASURE ||
	       args.tio || args.tio_wave || args.tio_burst;
}

/* The SGI partner: the first other vCPU that came up. */
static u32 sgi_peer(void)
{
	u32 i, me = this_cpu();

	for (i = 0; i < dt.ncpus && i < MAX_CPUS; i++)
		if (i != me && cpu_up[i])
			return i;
	return MAX_CPUS;
}

/* In a fixed order, after the secondaries are up and before the tick loop. */
static void interrupt_tests(bool gic_ok)
{
	if (args.cpuif_attack)
		cpuif_attack();
	if (args.mask_spin_ms)
		mask_spin(args.mask_spin_ms);
	if (args.gicd_attack)
		gicd_attack(args.gicd_attack);
	if (!gic_ok)
		return;
	if (args.sgi)
		sgi_test(&dt, args.sgi, sgi_peer(), sgi_peer_ready(sgi_peer()));
	if (args.sgi && args.sgi_probe)
		sgi_probe(&dt, sgi_peer());
	if (args.lr_overflow)
		lr_overflow_test();
	if (args.spi)
		spi_test(args.spi);
	if (args.timer_hz && args.timer_ticks)
		timer_periodic_test(args.timer_hz, args.timer_ticks);
	if (args.irq_bench && args.irq_bench_at_ms && (s64)(counter_now() - ms_to_counts(args.irq_bench_at_ms)) < 0)
		/* Asleep, so that whoever shares the core gets through its boot first. */
		timer_sleep_until(ms_to_counts(args.irq_bench_at_ms));
	if (args.irq_bench)
		irq_bench(args.irq_bench, args.irq_bench_wait, args.irq_bench_delay);
	if (args.duty_cycles)
		duty_test(args.duty_busy_us, args.duty_idle_us, args.duty_cycles);
	if (timer_conformance(args.arch))
		conformance_test(&dt, &args);
}

void guest_main(u64 dtb)
{
	const char *why = "";
	bool ok = dt_read(dtb, &dt, &why);
	bool gic_ok = false;

	console_init(dt.console);
	if (!ok) {
		printf("bad device tree at 0x%lx: %s\n", dtb, why);
		power_off(dt.psci);
	}
	write_sysreg(tpidr_el1, boot_cpu_index());
	print_greeting();
	bootargs_parse(dt.bootargs, &args);
	if (args.print_seed)
		print_seeds();
	if (dt.initrd_end > dt.initrd_start)
		print_initrd();
	gic_probe(&dt);

	if (args.marker_write) {
		marker_store(&marker_buf[0]);
		printf("marker written at 0x%lx\n", (u64)&marker_buf[0]);
	}

	/* Before the slow set/way sweep: a watchdog runs from the partition's start. */
	if (args.watchdog_kicks)
		watchdog_test(&dt, &args);
	dcache_clean_invalidate_all();
	printf("set/way clean done\n");

	/* Before the secondaries: their redistributors need affinity routing on. */
	if (wants_gic())
		gic_ok = irq_setup_boot_cpu(&dt, &args);

	if (args.vcpu_ctl) {
		/* vCPU 1 starts by hypercall, inside the test. */
		if (gic_ok)
			vcpu_ctl_test(&dt);
	} else if (dt.psci != PSCI_NONE) {
		print_psci_version();
		start_secondaries();
		if (args.cpu_on_race)
			cpu_on_race();
	} else {
		printf("no psci method in the device tree: secondaries stay off\n");
	}

	if (args.fp_ms)
		fp_test(&dt, &args, cpu_up);
	interrupt_tests(gic_ok);
	if (args.part_ctl != PART_CTL_NONE)
		part_ctl_test(&args);
	if (args.plan_switch)
		plan_switch_test(&args);
	if (args.bad_hvc || args.hm_report || args.probe_firmware)
		hm_calls_test(&args);
	channel_tests(&dt, &args);
	hm_tests(&args);
	tio_tests(&args);
	if (args.fuzz)
		fuzz_test(&dt, &args);
	if (args.ipc_bench != IPC_BENCH_NONE)
		ipc_bench(&args);
	if (args.count_ms)
		count_test(&args);
	if (args.acc)
		accel_test(&dt, &args);
	if (args.arch != ARCH_NONE && !timer_conformance(args.arch))
		arch_test(&dt, &args);
	tick_loop();
	if (args.sgi_watch)
		printf("sgi-watch: taken %u\n", sgis_taken(this_cpu()));
	if (args.end_reset) {
		printf("resetting\n");
		reset(dt.psci);
	}
	power_off(dt.psci);
}

void exception_report(u64 esr, u64 elr, u64 far)
{
	/* A fault while reporting (say, a bad console address) must not recurse. */
	static volatile u32 reported;

	if (!reported) {
		reported = 1;
		printf("guest exception: ESR=0x%lx ELR=0x%lx FAR=0x%lx\n", esr, elr, far);
	}
	halt();
}
