#include "dt.h"
#include "fdt.h"
#include "lib.h"

#define STDOUT_MAX 128

struct scan {
	struct dt_info *info;
	const char *stdout_path;	/* as in /chosen, may be "alias:options" */
	struct fdt_node aliases;	/* its props offset stays valid after the walk */
	bool have_aliases;
	u64 first_pl011;
	/* Second walk: the node the resolved stdout-path names. */
	char want[STDOUT_MAX];
	u64 stdout_base;
	const char *error;
};

/* The GIC binding: reg is the distributor, then #redistributor-regions regions. */
static void read_gicr_regions(const struct fdt *f, const struct fdt_node *n, struct dt_info *info)
{
	u32 len, i, regions = 1;
	const u8 *p = fdt_prop(f, n, "#redistributor-regions", &len);
	u64 addr, size;

	if (p && len == 4)
		regions = fdt_be32(p);
	for (i = 0; i < regions && info->ngicr < MAX_GICR_REGIONS; i++) {
		if (!fdt_reg(f, n, 1 + i, &addr, &size))
			break;
		info->gicr[info->ngicr].base = addr;
		info->gicr[info->ngicr].size = size;
		info->ngicr++;
	}
}

/* The GICv2 compatibles a partition or QEMU's virt,gic-version=2 gives. */
static bool is_gicv2(const struct fdt *f, const struct fdt_node *n)
{
	return fdt_prop_has_string(f, n, "compatible", "arm,gic-400") ||
	       fdt_prop_has_string(f, n, "compatible", "arm,cortex-a15-gic");
}

/*
 * The timer binding lists the secure physical, non-secure physical, virtual
 * and hypervisor timers, each as a three-cell GIC specifier (type, number,
 * flags): the second one, a PPI, is the EL1 physical timer, the third the
 * virtual timer.
 */
static void read_timer_ppi(const u8 *spec, u32 *intid)
{
	u32 type = fdt_be32(spec), num = fdt_be32(spec + 4);

	if (type == 1 && num < 16)
		*intid = 16 + num;
}

static void read_timer_intids(const struct fdt *f, const struct fdt_node *n, struct dt_info *info)
{
	u32 len;
	const u8 *p = fdt_prop(f, n, "interrupts", &len);

	if (!p || len < 3 * 12)
		return;
	read_timer_ppi(p + 12, &info->ptimer_intid);
	read_timer_ppi(p + 24, &info->vtimer_intid);
}

/* The first interrupt of a device node, if it is an SPI: its INTID, else 0. */
static u32 first_spi(const struct fdt *f, const struct fdt_node *n)
{
	u32 len;
	const u8 *p = fdt_prop(f, n, "interrupts", &len);

	if (!p || len < 12 || fdt_be32(p) != 0 || fdt_be32(p + 4) > 987)
		return 0;
	return 32 + fdt_be32(p + 4);
}

/* A /chosen address: one big-endian cell or two, as Linux reads them. */
static u64 chosen_address(const struct fdt *f, const struct fdt_node *n, const char *name)
{
	u32 len = 0;
	const u8 *p = fdt_prop(f, n, name, &len);

	if (!p)
		return 0;
	if (len == 8)
		return (u64)fdt_be32(p) << 32 | fdt_be32(p + 4);
	return len == 4 ? fdt_be32(p) : 0;
}

static int first_pass(const struct fdt *f, const struct fdt_node *n, void *ctx)
{
	struct scan *sc = ctx;
	struct dt_info *info = sc->info;
	u64 addr, size;
	u32 i;

	if (n->depth == 1 && fdt_name_is(n, "chosen")) {
		const char *s;

		info->bootargs = fdt_prop_string(f, n, "bootargs");
		s = fdt_prop_string(f, n, "partita,partition");
		if (s && s[0])
			info->partition = s;
		sc->stdout_path = fdt_prop_string(f, n, "stdout-path");
		info->kaslr_seed = fdt_prop(f, n, "kaslr-seed", &info->kaslr_seed_len);
		info->rng_seed = fdt_prop(f, n, "rng-seed", &info->rng_seed_len);
		info->initrd_start = chosen_address(f, n, "linux,initrd-start");
		info->initrd_end = chosen_address(f, n, "linux,initrd-end");
	} else if (n->depth == 1 && fdt_name_is(n, "aliases")) {
		sc->aliases = *n;
		sc->aliases.path = NULL;
		sc->have_aliases = true;
	} else if (n->depth == 1 && fdt_name_is(n, "memory")) {
		if (n->addr_cells == 0 || n->size_cells == 0 ||
		    n->addr_cells > 2 || n->size_cells > 2) {
			sc->error = "unsupported root #address-cells/#size-cells for memory";
			return FDT_ERR_PROP;
		}
		for (i = 0; fdt_reg(f, n, i, &addr, &size); i++) {
			if (size == 0)
				continue;
			if (addr + size < addr) {
				sc->error = "memory region wraps around the address space";
				return FDT_ERR_PROP;
			}
			if (info->nmem == MAX_MEM) {
				info->mem_truncated = true;
				continue;
			}
			info->mem[info->nmem].base = addr;
			info->mem[info->nmem].size = size;
			info->nmem++;
		}
	} else if (n->depth == 2 && fdt_name_is(n, "cpu") && str_starts(n->path, "/cpus/")) {
		if (n->addr_cells == 0 || !fdt_reg(f, n, 0, &addr, &size)) {
			sc->error = "cpu node without a usable reg";
			return FDT_ERR_PROP;
		}
		if (info->ncpus < MAX_CPUS)
			info->cpu_mpidr[info->ncpus] = addr;
		info->ncpus++;
	} else if (n->depth == 1 && fdt_name_is(n, "psci")) {
		const char *m = fdt_prop_string(f, n, "method");

		if (m && strcmp(m, "hvc") == 0)
			info->psci = PSCI_HVC;
		else if (m && strcmp(m, "smc") == 0)
			info->psci = PSCI_SMC;
	}

	if (!sc->first_pl011 && fdt_prop_has_string(f, n, "compatible", "arm,pl011") &&
	    fdt_reg(f, n, 0, &addr, &size) && addr)
		sc->first_pl011 = addr;
	if (!info->has_gicd && fdt_prop_has_string(f, n, "compatible", "arm,gic-v3") &&
	    fdt_reg(f, n, 0, &addr, &size)) {
		info->gicd = addr;
		info->has_gicd = true;
		info->gic_version = 3;
		read_gicr_regions(f, n, info);
	}
	if (!info->has_gicd && is_gicv2(f, n) && fdt_reg(f, n, 0, &addr, &size)) {
		info->gicd = addr;
		info->has_gicd = true;
		info->gic_version = 2;
		/* The GICv2 binding: distributor, then CPU interface (then GICH, GICV). */
		if (fdt_reg(f, n, 1, &addr, &size))
			info->gicc = addr;
	}
	if (fdt_prop_has_string(f, n, "compatible", "arm,armv8-timer"))
		read_timer_intids(f, n, info);
	if (!info->rtc && fdt_prop_has_string(f, n, "compatible", "arm,pl031") &&
	    fdt_reg(f, n, 0, &addr, &size) && addr) {
		info->rtc = addr;
		info->rtc_intid = first_spi(f, n);
	}
	return FDT_OK;
}

static int find_stdout(const struct fdt *f, const struct fdt_node *n, void *ctx)
{
	struct scan *sc = ctx;
	u64 addr, size;

	if (strcmp(n->path, sc->want) == 0 && fdt_reg(f, n, 0, &addr, &size) && addr)
		sc->stdout_base = addr;
	return FDT_OK;
}

/*
 * Turns stdout-path ("/path", "/path:opts", "alias" or "alias:opts") into a
 * node path in sc->want. Returns false if it cannot.
 */
static bool resolve_stdout(const struct fdt *f, struct scan *sc)
{
	const char *p = sc->stdout_path;
	char alias[STDOUT_MAX];
	u32 n = 0;

	while (p[n] && p[n] != ':')
		n++;
	if (n == 0 || n >= STDOUT_MAX)
		return false;
	if (p[0] == '/') {
		memcpy(sc->want, p, n);
		sc->want[n] = '\0';
		return true;
	}
	if (!sc->have_aliases)
		return false;
	memcpy(alias, p, n);
	alias[n] = '\0';
	p = fdt_prop_string(f, &sc->aliases, alias);
	if (!p || p[0] != '/' || strlen(p) >= STDOUT_MAX)
		return false;
	memcpy(sc->want, p, strlen(p) + 1);
	return true;
}

bool dt_read(u64 dtb, struct dt_info *info, const char **why)
{
	struct fdt f;
	struct scan sc;
	int err;

	memset(info, 0, sizeof(*info));
	memset(&sc, 0, sizeof(sc));
	info->partition = "native";
	info->vtimer_intid = DEFAULT_VTIMER_INTID;
	info->ptimer_intid = DEFAULT_PTIMER_INTID;
	sc.info = info;

	err = fdt_init(&f, dtb);
	if (err) {
		*why = fdt_strerror(err);
		return false;
	}
	err = fdt_walk(&f, first_pass, &sc);
	/* Even a failed walk may have seen the console: use it to report. */
	info->console = sc.first_pl011;
	if (sc.stdout_path && resolve_stdout(&f, &sc)) {
		/* A corrupt tail does not matter if the node came before it. */
		(void)fdt_walk(&f, find_stdout, &sc);
		if (sc.stdout_base)
			info->console = sc.stdout_base;
	}
	if (err) {
		*why = sc.error ? sc.error : fdt_strerror(err);
		return false;
	}
	if (!info->console) {
		*why = "no console (stdout-path or arm,pl011 node)";
		return false;
	}
	if (info->nmem == 0) {
		*why = "no memory node";
		return false;
	}
	if (info->ncpus == 0) {
		*why = "no cpu nodes under /cpus";
		return false;
	}
	return true;
}
