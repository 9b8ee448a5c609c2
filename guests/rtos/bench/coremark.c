/*
 * A CoreMark-style CPU workload, written from the published description of
 * what CoreMark exercises: linked-list handling, small integer matrices and
 * a state machine, folded into a CRC-16. It is not CoreMark and its numbers
 * are not CoreMark scores; they only compare native and virtualized runs.
 *
 * Every iteration starts from the same data and so must end with the same
 * CRC; the first one's is the reference, and any later difference means
 * the run was corrupted.
 */
#include "rtos.h"
#include "bench.h"

#define LIST_NODES	32
#define MAT_N		10
#define TEXT_TOKENS	40
#define TEXT_LEN	(TEXT_TOKENS * 12)

struct node {
	struct node *next;
	int16_t key, val;
};

/* The inputs come from this at run time, so none of the work folds away. */
static volatile uint32_t seed = 0x3415;

static struct node nodes[LIST_NODES];
static int16_t mat_a[MAT_N * MAT_N], mat_b[MAT_N * MAT_N];
static int32_t mat_c[MAT_N * MAT_N];
static char text[TEXT_LEN];

static uint32_t next_rand(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 16;
}

/* CRC-16/CCITT, bit by bit: the bit loop is part of the workload. */
static uint16_t crc8(uint16_t crc, uint8_t b)
{
	int i;

	crc ^= (uint16_t)b << 8;
	for (i = 0; i < 8; i++)
		crc = crc & 0x8000 ? (uint16_t)(crc << 1) ^ 0x1021 : (uint16_t)(crc << 1);
	return crc;
}

static uint16_t crc16(uint16_t crc, uint16_t v)
{
	return crc8(crc8(crc, (uint8_t)v), (uint8_t)(v >> 8));
}

static uint16_t crc32w(uint16_t crc, uint32_t v)
{
	return crc16(crc16(crc, (uint16_t)v), (uint16_t)(v >> 16));
}

/* ---- Linked list ---- */

static struct node *list_build(void)
{
	int i;

	for (i = 0; i < LIST_NODES - 1; i++)
		nodes[i].next = &nodes[i + 1];
	nodes[LIST_NODES - 1].next = NULL;
	return &nodes[0];
}

static struct node *list_find(struct node *l, int16_t key)
{
	while (l && l->key != key)
		l = l->next;
	return l;
}

static struct node *list_reverse(struct node *l)
{
	struct node *prev = NULL, *next;

	while (l) {
		next = l->next;
		l->next = prev;
		prev = l;
		l = next;
	}
	return prev;
}

/* Insertion sort: by value if by_val, else by key; stable either way. */
static struct node *list_sort(struct node *l, bool by_val)
{
	struct node *sorted = NULL, *n, **p;

	while (l) {
		n = l;
		l = l->next;
		for (p = &sorted; *p; p = &(*p)->next) {
			int a = by_val ? (*p)->val : (*p)->key;
			int b = by_val ? n->val : n->key;

			if (a > b)
				break;
		}
		n->next = *p;
		*p = n;
	}
	return sorted;
}

static uint16_t list_work(uint16_t crc)
{
	struct node *l = list_build(), *n;
	int16_t k;

	for (k = 0; k < LIST_NODES + 8; k += 3) {
		n = list_find(l, k);
		crc = crc16(crc, n ? (uint16_t)n->val : 0xffff);
	}
	l = list_reverse(l);
	l = list_sort(l, true);
	for (n = l; n; n = n->next)
		crc = crc16(crc, (uint16_t)(n->key ^ n->val));
	l = list_sort(l, false);
	for (n = l, k = 0; n && k < 8; n = n->next, k++)
		crc = crc16(crc, (uint16_t)n->val);
	return crc;
}

/* ---- Matrices ---- */

static uint16_t matrix_work(uint16_t crc)
{
	int i, j, k;
	int32_t sum;

	for (i = 0; i < MAT_N; i++) {
		for (j = 0; j < MAT_N; j++) {
			sum = 0;
			for (k = 0; k < MAT_N; k++)
				sum += mat_a[i * MAT_N + k] * mat_b[k * MAT_N + j];
			mat_c[i * MAT_N + j] = sum;
		}
	}
	for (i = 0; i < MAT_N * MAT_N; i++)
		mat_c[i] += mat_a[i] + 7;
	for (i = 0; i < MAT_N * MAT_N; i++)
		crc = crc32w(crc, (uint32_t)mat_c[i] ^ (uint32_t)(mat_c[i] >> 4 & 0xfff));
	return crc;
}

/* ---- State machine over comma-separated numbers ---- */

enum lex { L_START, L_SIGN, L_INT, L_ZERO, L_X, L_HEX, L_DOT, L_FRAC, L_E, L_ESIGN, L_EXP,
	   L_BAD, L_STATES };

static enum lex lex_step(enum lex s, char c)
{
	bool digit = c >= '0' && c <= '9';
	bool hex = digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');

	switch (s) {
	case L_START:
		if (c == '+' || c == '-')
			return L_SIGN;
		return c == '0' ? L_ZERO : digit ? L_INT : L_BAD;
	case L_SIGN:
		return c == '0' ? L_ZERO : digit ? L_INT : L_BAD;
	case L_ZERO:
		if (c == 'x' || c == 'X')
			return L_X;
		/* fall through */
	case L_INT:
		return digit ? L_INT : c == '.' ? L_DOT : c == 'e' || c == 'E' ? L_E : L_BAD;
	case L_X:
	case L_HEX:
		return hex ? L_HEX : L_BAD;
	case L_DOT:
	case L_FRAC:
		return digit ? L_FRAC : c == 'e' || c == 'E' ? L_E : L_BAD;
	case L_E:
		return c == '+' || c == '-' ? L_ESIGN : digit ? L_EXP : L_BAD;
	case L_ESIGN:
	case L_EXP:
		return digit ? L_EXP : L_BAD;
	default:
		return L_BAD;
	}
}

static uint16_t lex_work(uint16_t crc)
{
	uint32_t final[L_STATES] = { 0 }, moves = 0;
	enum lex s = L_START, t;
	const char *p;
	int i;

	for (p = text; ; p++) {
		if (*p == ',' || *p == '\0') {
			final[s]++;
			s = L_START;
			if (!*p)
				break;
			continue;
		}
		t = lex_step(s, *p);
		moves += t != s;
		s = t;
	}
	for (i = 0; i < L_STATES; i++)
		crc = crc16(crc, (uint16_t)final[i]);
	return crc16(crc, (uint16_t)moves);
}

/* ---- Inputs, one iteration, the timed loop ---- */

static char *put_digits(char *p, uint32_t v, uint32_t base)
{
	char buf[10];
	int n = 0;

	do {
		buf[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && n < 8);
	while (n)
		*p++ = buf[--n];
	return p;
}

static void make_inputs(void)
{
	uint32_t s = seed, r;
	char *p = text;
	int i;

	for (i = 0; i < LIST_NODES; i++) {
		nodes[i].key = (int16_t)i;
		nodes[i].val = (int16_t)(next_rand(&s) & 0x7fff) - 0x4000;
	}
	for (i = 0; i < MAT_N * MAT_N; i++) {
		mat_a[i] = (int16_t)((next_rand(&s) & 0xff) - 0x80);
		mat_b[i] = (int16_t)((next_rand(&s) & 0xff) - 0x80);
	}
	/* Integers, hex, decimals, exponents and the odd malformed token. */
	for (i = 0; i < TEXT_TOKENS; i++) {
		r = next_rand(&s);
		if (i)
			*p++ = ',';
		if (r & 1)
			*p++ = '-';
		switch (r >> 1 & 7) {
		case 0:
			*p++ = '0';
			*p++ = 'x';
			p = put_digits(p, r >> 4, 16);
			break;
		case 1:
			p = put_digits(p, r >> 4 & 0xff, 10);
			*p++ = '.';
			p = put_digits(p, r >> 12 & 0xf, 10);
			break;
		case 2:
			p = put_digits(p, r >> 4 & 0x3f, 10);
			*p++ = 'e';
			*p++ = r & 0x10 ? '-' : '+';
			p = put_digits(p, r >> 8 & 0x1f, 10);
			break;
		case 3:
			p = put_digits(p, r >> 4 & 0xff, 10);
			*p++ = 'q';
			break;
		default:
			p = put_digits(p, r >> 4, 10);
			break;
		}
	}
	*p = '\0';
}

/* The list is rebuilt from nodes[] each time, so every iteration is equal. */
static uint16_t iteration(void)
{
	uint16_t crc = 0xffff;

	__asm__ volatile("" ::: "memory");
	crc = list_work(crc);
	crc = matrix_work(crc);
	crc = lex_work(crc);
	return crc;
}

void coremark_run(uint32_t ms)
{
	uint64_t hz = rtos_counter_hz(), want = bench_ms_to_counts(ms, hz);
	uint64_t start, elapsed, n = 0, bad_at = 0;
	uint16_t ref, crc;

	make_inputs();
	ref = iteration();
	start = rtos_counter();
	do {
		crc = iteration();
		n++;
		if (crc != ref && !bad_at)
			bad_at = n;
		elapsed = rtos_counter() - start;
	} while (elapsed < want);

	rtos_printf("coremark: iterations %lu in %lu ms, %lu iterations/s, crc 0x%04x check ",
		    (unsigned long)n, (unsigned long)bench_counts_to_ms(elapsed, hz),
		    (unsigned long)(n * hz / elapsed), ref);
	if (bad_at)
		rtos_printf("FAIL: crc changed at iteration %lu\n", (unsigned long)bad_at);
	else
		rtos_printf("ok\n");
}
