/*
 * The forbidden things a partition may try. Each one announces itself
 * first, so a test can tell the attempt happened, and says it survived
 * afterwards, which a test expects never to see under Partita.
 */
#include "guest.h"
#include "console.h"
#include "psci.h"

#define SIP_SERVICE_CALL 0xC2000000u
#define GICD_CTLR 0x0

void misbehave(const struct dt_info *dt, const struct bootargs *a)
{
	const char *kind = misbehave_name(a->misbehave);
	u64 addr, val;

	if (a->misbehave == MIS_WRITE_OUTSIDE) {
		if (a->has_addr) {
			addr = a->addr;
		} else {
			u32 i;

			/* Just past the end of the region that ends highest. */
			addr = 0;
			for (i = 0; i < dt->nmem; i++)
				if (dt->mem[i].base + dt->mem[i].size > addr)
					addr = dt->mem[i].base + dt->mem[i].size;
		}
		printf("misbehaving: %s at 0x%lx\n", kind, addr);
		mmio_write32(addr, 0x0badc0de);
	} else if (a->misbehave == MIS_READ_OTHER) {
		if (!a->has_addr) {
			printf("misbehave=read-other needs addr=0x...: skipped\n");
			return;
		}
		printf("misbehaving: %s at 0x%lx\n", kind, a->addr);
		val = mmio_read32(a->addr);
		printf("read 0x%lx\n", val);
	} else if (a->misbehave == MIS_GICD) {
		if (!dt->has_gicd) {
			printf("misbehave=gicd: no GIC node: skipped\n");
			return;
		}
		printf("misbehaving: %s at 0x%lx\n", kind, dt->gicd + GICD_CTLR);
		mmio_write32(dt->gicd + GICD_CTLR, 0);
	} else if (a->misbehave == MIS_SMC) {
		printf("misbehaving: %s\n", kind);
		/* Conduit forced to smc: PSCI would be allowed, a SiP call is not. */
		val = (u64)smccc_call(PSCI_SMC, SIP_SERVICE_CALL, 0, 0, 0);
		printf("smc returned 0x%lx\n", val);
	} else if (a->misbehave == MIS_SYSREG) {
		printf("misbehaving: %s\n", kind);
		val = read_sysreg(cntp_ctl_el0);
		printf("cntp_ctl_el0 = 0x%lx\n", val);
	} else {
		return;
	}
	printf("survived misbehaviour\n");
}
