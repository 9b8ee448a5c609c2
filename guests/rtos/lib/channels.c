/*
 * rtos_channel_find: a channel's index, side, sizes and doorbell from the
 * `/partita` node Partita writes into each partition's device tree
 * (docs/configuration.md, "/partita"). It reads the tree the RTOS booted
 * with through the guests' own bounds-checked FDT reader, so a corrupt
 * tree is an error status, never a bad read.
 */
#include "rtos_partita.h"
#include "fdt.h"
#include "lib.h"

#define FIRST_SPI	32
/* A visitor's "stop here", distinct from every enum fdt_error. */
#define FOUND		(-1)

struct search {
	const char *name;
	bool have_node;			/* the tree has /partita */
	bool found;
	struct rtos_channel *ch;
};

static uint32_t prop_u32(const struct fdt *f, const struct fdt_node *n, const char *name)
{
	uint32_t len;
	const u8 *p = fdt_prop(f, n, name, &len);

	return p && len == 4 ? fdt_be32(p) : 0;
}

static uint64_t prop_u64(const struct fdt *f, const struct fdt_node *n, const char *name)
{
	uint32_t len;
	const u8 *p = fdt_prop(f, n, name, &len);

	return p && len == 8 ? (uint64_t)fdt_be32(p) << 32 | fdt_be32(p + 4) : 0;
}

static bool has_prop(const struct fdt *f, const struct fdt_node *n, const char *name)
{
	uint32_t len;

	return fdt_prop(f, n, name, &len) != NULL;
}

/* The doorbell is one GIC specifier: <0 (SPI) number flags>. */
static uint32_t doorbell(const struct fdt *f, const struct fdt_node *n)
{
	uint32_t len;
	const u8 *p = fdt_prop(f, n, "interrupts", &len);

	return p && len == 12 && fdt_be32(p) == 0 ? FIRST_SPI + fdt_be32(p + 4) : 0;
}

static void read_channel(const struct fdt *f, const struct fdt_node *n, struct rtos_channel *ch)
{
	ch->index = prop_u32(f, n, "channel");
	ch->send = has_prop(f, n, "send");
	ch->receive = has_prop(f, n, "receive");
	ch->max_message = prop_u32(f, n, "max-message");
	if (fdt_prop_has_string(f, n, "compatible", "partita,sampling-port")) {
		ch->kind = PARTITA_CHANNEL_SAMPLING;
		ch->refresh_us = prop_u64(f, n, "refresh-us");
	} else if (fdt_prop_has_string(f, n, "compatible", "partita,queuing-port")) {
		ch->kind = PARTITA_CHANNEL_QUEUING;
		ch->depth = prop_u32(f, n, "depth");
	} else {
		ch->kind = PARTITA_CHANNEL_SHARED_MEMORY;
		ch->writable = has_prop(f, n, "writable");
		ch->doorbell_intid = doorbell(f, n);
		if (!fdt_reg(f, n, 0, &ch->window, &ch->window_size))
			ch->window = ch->window_size = 0;
	}
}

static int visit(const struct fdt *f, const struct fdt_node *n, void *ctx)
{
	struct search *s = ctx;
	uint32_t len;

	if (n->depth == 1 && fdt_name_is(n, "partita"))
		s->have_node = fdt_prop_has_string(f, n, "compatible", "partita,hypervisor");
	if (n->depth != 2 || !s->have_node || !str_starts(n->path, "/partita/") || !fdt_name_is(n, s->name))
		return FDT_OK;
	/* A channel node without its index cannot be used. */
	if (!fdt_prop(f, n, "channel", &len) || len != 4)
		return FDT_ERR_PROP;
	read_channel(f, n, s->ch);
	s->found = true;
	/* Names are unique: nothing further to look for. */
	return FOUND;
}

long rtos_channel_find(const char *name, struct rtos_channel *ch)
{
	struct search s = { .name = name, .ch = ch };
	struct fdt f;
	int err;

	if (!name || !ch || !name[0])
		return PARTITA_EINVAL;
	*ch = (struct rtos_channel){ 0 };
	if (fdt_init(&f, rtos_boot_dtb()) != FDT_OK)
		return PARTITA_ESTATE;
	err = fdt_walk(&f, visit, &s);
	if (s.found)
		return PARTITA_OK;
	/* A broken node, or a tree that breaks off before the channel. */
	if (err != FDT_OK || !s.have_node)
		return PARTITA_ESTATE;
	return PARTITA_EINVAL;
}
