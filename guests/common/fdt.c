#include "fdt.h"
#include "lib.h"

#define FDT_MAGIC 0xd00dfeedu
#define FDT_BEGIN_NODE 1
#define FDT_END_NODE 2
#define FDT_PROP 3
#define FDT_NOP 4
#define FDT_END 9

/* No real tree comes near this; it bounds the damage of a corrupt header. */
#define FDT_MAX_TOTAL (64u << 20)

/* Byte reads: property values are only 4-byte aligned, the blob may be less. */
u32 fdt_be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static u32 align4(u32 x)
{
	return (x + 3) & ~3u;
}

const char *fdt_strerror(int err)
{
	/* if/else rather than switch: a switch can become a table of absolute pointers. */
	if (err == FDT_ERR_ALIGN) return "null or not 8-byte aligned";
	if (err == FDT_ERR_MAGIC) return "bad magic";
	if (err == FDT_ERR_VERSION) return "unsupported version";
	if (err == FDT_ERR_SIZE) return "bad total size";
	if (err == FDT_ERR_BLOCK) return "block outside blob";
	if (err == FDT_ERR_TRUNCATED) return "truncated structure block";
	if (err == FDT_ERR_TOKEN) return "bad token";
	if (err == FDT_ERR_NAME) return "unterminated node name";
	if (err == FDT_ERR_PROP) return "bad property";
	if (err == FDT_ERR_DEPTH) return "nodes nested too deep";
	if (err == FDT_ERR_PATH) return "node path too long";
	if (err == FDT_ERR_STRUCTURE) return "unbalanced nodes";
	return "unknown error";
}

int fdt_init(struct fdt *f, u64 addr)
{
	const u8 *h = (const u8 *)addr;
	u32 total, version, last_comp;

	if (!addr || (addr & 7))
		return FDT_ERR_ALIGN;
	if (fdt_be32(h) != FDT_MAGIC)
		return FDT_ERR_MAGIC;
	/* Nothing past totalsize is read, not even the rest of the header. */
	total = fdt_be32(h + 4);
	if (total < 40 || total > FDT_MAX_TOTAL)
		return FDT_ERR_SIZE;
	version = fdt_be32(h + 20);
	last_comp = fdt_be32(h + 24);
	/* size_dt_struct, which bounds the walk, appeared in version 17. */
	if (version < 17 || last_comp > 17)
		return FDT_ERR_VERSION;
	f->blob = h;
	f->struct_off = fdt_be32(h + 8);
	f->strings_off = fdt_be32(h + 12);
	f->strings_size = fdt_be32(h + 32);
	f->struct_size = fdt_be32(h + 36);
	/* Each block must lie inside the blob; compare sizes first so nothing wraps. */
	if (f->struct_off > total || f->struct_size > total - f->struct_off ||
	    f->strings_off > total || f->strings_size > total - f->strings_off ||
	    (f->struct_off & 3) || (f->struct_size & 3))
		return FDT_ERR_BLOCK;
	return FDT_OK;
}

static const u8 *sblock(const struct fdt *f)
{
	return f->blob + f->struct_off;
}

/*
 * Decodes the property at offset off of the structure block (just after its
 * FDT_PROP token). Checks that the value and the name lie inside their blocks.
 */
static int prop_at(const struct fdt *f, u32 off, const char **name, const u8 **val,
		   u32 *len, u32 *next)
{
	const u8 *s = sblock(f);
	const char *strings = (const char *)f->blob + f->strings_off;
	u32 l, nameoff, i;

	if (f->struct_size - off < 8)
		return FDT_ERR_TRUNCATED;
	l = fdt_be32(s + off);
	nameoff = fdt_be32(s + off + 4);
	off += 8;
	if (l > f->struct_size - off)
		return FDT_ERR_PROP;
	if (nameoff >= f->strings_size)
		return FDT_ERR_PROP;
	for (i = nameoff; i < f->strings_size && strings[i]; i++)
		;
	if (i == f->strings_size)
		return FDT_ERR_PROP;
	*name = strings + nameoff;
	*val = s + off;
	*len = l;
	*next = off + align4(l);
	if (*next > f->struct_size)
		*next = f->struct_size;
	return FDT_OK;
}

/* Visits each property of the node whose props start at off; stops at its first child. */
#define for_each_prop_token(f, off, tok)					\
	for (; (f)->struct_size - (off) >= 4 &&				\
	       ((tok) = fdt_be32(sblock(f) + (off)),			\
		(tok) == FDT_PROP || (tok) == FDT_NOP);)

const u8 *fdt_prop(const struct fdt *f, const struct fdt_node *n, const char *want, u32 *len)
{
	u32 off = n->props, tok;

	for_each_prop_token(f, off, tok) {
		const char *name;
		const u8 *val;
		u32 l, next;

		off += 4;
		if (tok == FDT_NOP)
			continue;
		if (prop_at(f, off, &name, &val, &l, &next) != FDT_OK)
			return NULL;
		if (strcmp(name, want) == 0) {
			if (len)
				*len = l;
			return val;
		}
		off = next;
	}
	return NULL;
}

const char *fdt_prop_string(const struct fdt *f, const struct fdt_node *n, const char *name)
{
	u32 len;
	const u8 *v = fdt_prop(f, n, name, &len);

	if (!v || len == 0 || v[len - 1] != '\0')
		return NULL;
	return (const char *)v;
}

bool fdt_prop_has_string(const struct fdt *f, const struct fdt_node *n, const char *name,
			 const char *s)
{
	u32 len, i = 0;
	const u8 *v = fdt_prop(f, n, name, &len);

	if (!v)
		return false;
	while (i < len) {
		u32 start = i;

		while (i < len && v[i])
			i++;
		if (i == len)
			return false;	/* unterminated last entry */
		if (str_eq_n((const char *)v + start, i - start, s))
			return true;
		i++;
	}
	return false;
}

static u64 read_cells(const u8 *p, u32 cells)
{
	u64 v = 0;

	while (cells--) {
		v = v << 32 | fdt_be32(p);
		p += 4;
	}
	return v;
}

bool fdt_reg(const struct fdt *f, const struct fdt_node *n, u32 index, u64 *addr, u64 *size)
{
	u32 len, entry;
	const u8 *v;

	/* Wider cells (a PCI bus has 3 address cells) never hold a CPU address. */
	if (n->addr_cells > 2 || n->size_cells > 2)
		return false;
	entry = (n->addr_cells + n->size_cells) * 4;
	v = fdt_prop(f, n, "reg", &len);
	if (!v || entry == 0 || index >= len / entry)
		return false;
	v += index * entry;
	*addr = read_cells(v, n->addr_cells);
	*size = read_cells(v + n->addr_cells * 4, n->size_cells);
	return true;
}

bool fdt_name_is(const struct fdt_node *n, const char *base)
{
	size_t l = strlen(base);

	return str_starts(n->name, base) && (n->name[l] == '\0' || n->name[l] == '@');
}

/*
 * Validates every property of a node and picks up its #address-cells and
 * #size-cells, which its children's reg use. Returns the offset after them.
 */
static int scan_props(const struct fdt *f, struct fdt_node *n, u32 *end)
{
	u32 off = n->props, tok;

	/* DTSpec 2.3.5: absent means 2 address cells and 1 size cell. */
	n->child_addr_cells = 2;
	n->child_size_cells = 1;
	for_each_prop_token(f, off, tok) {
		const char *name;
		const u8 *val;
		u32 len, next;
		int err;

		off += 4;
		if (tok == FDT_NOP)
			continue;
		err = prop_at(f, off, &name, &val, &len, &next);
		if (err)
			return err;
		if (strcmp(name, "#address-cells") == 0 || strcmp(name, "#size-cells") == 0) {
			u32 v;

			if (len != 4)
				return FDT_ERR_PROP;
			v = fdt_be32(val);
			if (name[1] == 'a')
				n->child_addr_cells = v;
			else
				n->child_size_cells = v;
		}
		off = next;
	}
	*end = off;
	return FDT_OK;
}

int fdt_walk(const struct fdt *f, fdt_visitor visit, void *ctx)
{
	const u8 *s = sblock(f);
	u32 off = 0;
	int depth = -1;
	bool root_done = false;
	struct fdt_node stack[FDT_MAX_DEPTH];
	u32 pathlen[FDT_MAX_DEPTH];
	char path[FDT_MAX_PATH];

	for (;;) {
		u32 tok;

		if (f->struct_size - off < 4)
			return FDT_ERR_TRUNCATED;
		tok = fdt_be32(s + off);
		off += 4;

		if (tok == FDT_BEGIN_NODE) {
			struct fdt_node *n;
			const char *name = (const char *)s + off;
			u32 nlen = 0, plen;
			int err;

			if (root_done)
				return FDT_ERR_STRUCTURE;
			if (++depth >= FDT_MAX_DEPTH)
				return FDT_ERR_DEPTH;
			while (off + nlen < f->struct_size && name[nlen])
				nlen++;
			if (off + nlen >= f->struct_size)
				return FDT_ERR_NAME;
			off += align4(nlen + 1);
			if (off > f->struct_size)
				return FDT_ERR_TRUNCATED;

			/* The root's path is "/"; its children's do not repeat that slash. */
			plen = depth <= 1 ? 0 : pathlen[depth - 1];
			if (depth == 0) {
				path[0] = '/';
				path[1] = '\0';
				pathlen[0] = 1;
			} else {
				if (plen + 1 + nlen + 1 > FDT_MAX_PATH)
					return FDT_ERR_PATH;
				path[plen] = '/';
				memcpy(path + plen + 1, name, nlen);
				path[plen + 1 + nlen] = '\0';
				pathlen[depth] = plen + 1 + nlen;
			}

			n = &stack[depth];
			n->depth = depth;
			n->name = name;
			n->path = path;
			n->props = off;
			/* The root is described by the DTSpec defaults. */
			n->addr_cells = depth ? stack[depth - 1].child_addr_cells : 2;
			n->size_cells = depth ? stack[depth - 1].child_size_cells : 1;
			err = scan_props(f, n, &off);
			if (err)
				return err;
			err = visit(f, n, ctx);
			if (err)
				return err;
		} else if (tok == FDT_END_NODE) {
			if (depth < 0)
				return FDT_ERR_STRUCTURE;
			depth--;
			if (depth < 0)
				root_done = true;
			else
				path[depth == 0 ? 1 : pathlen[depth]] = '\0';
		} else if (tok == FDT_PROP) {
			/* Only reached for properties after a child node: DTSpec forbids that. */
			return FDT_ERR_STRUCTURE;
		} else if (tok == FDT_NOP) {
			continue;
		} else if (tok == FDT_END) {
			return (depth == -1 && root_done) ? FDT_OK : FDT_ERR_STRUCTURE;
		} else {
			return FDT_ERR_TOKEN;
		}
	}
}
