/*
 * A minimal, bounds-checked reader of flattened device trees (DTSpec v0.4,
 * chapter 5). It walks the structure block once per call and hands each
 * node to a visitor; it never writes to the blob.
 */
#ifndef FDT_H
#define FDT_H

#include <stdbool.h>
#include "arch.h"

#define FDT_MAX_DEPTH 16
#define FDT_MAX_PATH 256

enum fdt_error {
	FDT_OK = 0,
	FDT_ERR_ALIGN,
	FDT_ERR_MAGIC,
	FDT_ERR_VERSION,
	FDT_ERR_SIZE,
	FDT_ERR_BLOCK,
	FDT_ERR_TRUNCATED,
	FDT_ERR_TOKEN,
	FDT_ERR_NAME,
	FDT_ERR_PROP,
	FDT_ERR_DEPTH,
	FDT_ERR_PATH,
	FDT_ERR_STRUCTURE,
};

struct fdt {
	const u8 *blob;
	u32 struct_off, struct_size;
	u32 strings_off, strings_size;
};

struct fdt_node {
	int depth;		/* the root is 0 */
	const char *name;	/* "" for the root, else "name@unit" */
	const char *path;	/* valid only during the visit */
	/* The parent's #address-cells/#size-cells: they describe this node's reg. */
	u32 addr_cells, size_cells;
	/* This node's own values, which describe its children's reg. */
	u32 child_addr_cells, child_size_cells;
	u32 props;		/* offset of the first property token */
};

/* Returns FDT_OK (0) or an enum fdt_error code. */
int fdt_init(struct fdt *f, u64 addr);

/* A visitor returns FDT_OK to continue, anything else stops the walk. */
typedef int (*fdt_visitor)(const struct fdt *f, const struct fdt_node *n, void *ctx);
int fdt_walk(const struct fdt *f, fdt_visitor visit, void *ctx);

/* The value of property name of node n, or NULL; *len gets its length. */
const u8 *fdt_prop(const struct fdt *f, const struct fdt_node *n, const char *name, u32 *len);

/* The property as a string if it is NUL-terminated within its length. */
const char *fdt_prop_string(const struct fdt *f, const struct fdt_node *n, const char *name);

/* True if the stringlist property name of n has an entry equal to s. */
bool fdt_prop_has_string(const struct fdt *f, const struct fdt_node *n, const char *name,
			 const char *s);

/* Reads entry index of a reg property as (address, size); false if absent/short. */
bool fdt_reg(const struct fdt *f, const struct fdt_node *n, u32 index, u64 *addr, u64 *size);

/* Node name is base or base@unit. */
bool fdt_name_is(const struct fdt_node *n, const char *base);

u32 fdt_be32(const u8 *p);
const char *fdt_strerror(int err);

#endif
