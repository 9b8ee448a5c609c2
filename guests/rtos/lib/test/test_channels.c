/*
 * Host tests of rtos_channel_find (../channels.c) on trees that dtc built
 * from channels.dts and native.dts (the Makefile passes their paths), and
 * on a blob that is no tree at all. A binary of its own: it needs no
 * hypercalls, only the tree.
 */
#include <stdio.h>
#include <string.h>
#include "rtos_partita.h"
#include "harness.h"
#include "lib.h"

#include "boot_tree.h"

static void channel_find_each_kind(void)
{
	struct rtos_channel ch;

	EXPECT(load(CHANNELS_DTB));
	EXPECT(rtos_channel_find("requests", &ch) == PARTITA_OK);
	EXPECT(ch.index == 0 && ch.kind == PARTITA_CHANNEL_QUEUING && ch.send && !ch.receive);
	EXPECT(ch.max_message == 64 && ch.depth == 4 && ch.window == 0 && ch.doorbell_intid == 0);

	EXPECT(rtos_channel_find("status", &ch) == PARTITA_OK);
	EXPECT(ch.index == 3 && ch.kind == PARTITA_CHANNEL_SAMPLING && ch.receive && !ch.send);
	EXPECT(ch.max_message == 16 && ch.refresh_us == 0x100000002ull && ch.depth == 0);

	/* Shared memory is named with its unit address; it is found by its name alone. */
	EXPECT(rtos_channel_find("bell", &ch) == PARTITA_OK);
	EXPECT(ch.index == 2 && ch.kind == PARTITA_CHANNEL_SHARED_MEMORY && ch.writable);
	EXPECT(ch.window == 0x50000000 && ch.window_size == 0x1000 && ch.doorbell_intid == 48);

	EXPECT(rtos_channel_find("frames", &ch) == PARTITA_OK);
	EXPECT(ch.index == 5 && !ch.writable && ch.doorbell_intid == 0);
	EXPECT(ch.window == 0x160000000ull && ch.window_size == 0x10000);
}

static void channel_find_refuses(void)
{
	struct rtos_channel ch = { .index = 77 };

	EXPECT(load(CHANNELS_DTB));
	/* Not one of ours; a node elsewhere in the tree with a channel property is no port. */
	EXPECT(rtos_channel_find("replies", &ch) == PARTITA_EINVAL && ch.index == 0);
	EXPECT(rtos_channel_find("requests-too", &ch) == PARTITA_EINVAL);
	EXPECT(rtos_channel_find("nested", &ch) == PARTITA_EINVAL);
	/* A prefix of a name is not the name. */
	EXPECT(rtos_channel_find("req", &ch) == PARTITA_EINVAL);
	EXPECT(rtos_channel_find("", &ch) == PARTITA_EINVAL);
	EXPECT(rtos_channel_find(NULL, &ch) == PARTITA_EINVAL);
	EXPECT(rtos_channel_find("requests", NULL) == PARTITA_EINVAL);
	/* A channel node without its index cannot be used. */
	EXPECT(rtos_channel_find("broken", &ch) == PARTITA_ESTATE);
}

static void channel_find_needs_partita(void)
{
	struct rtos_channel ch;

	EXPECT(load(NATIVE_DTB));
	EXPECT(rtos_channel_find("requests", &ch) == PARTITA_ESTATE);
	/* Not a tree at all: the reader refuses it before reading anything. */
	memset(blob, 0xa5, sizeof(blob));
	EXPECT(rtos_channel_find("requests", &ch) == PARTITA_ESTATE);
	/* A tree cut short after its header. */
	EXPECT(load(CHANNELS_DTB));
	memset(blob + 64, 0, sizeof(blob) - 64);
	EXPECT(rtos_channel_find("bell", &ch) == PARTITA_ESTATE);
}

static const struct test tests[] = {
	TEST(channel_find_each_kind),
	TEST(channel_find_refuses),
	TEST(channel_find_needs_partita),
};

int main(void)
{
	return run_tests(tests, sizeof(tests) / sizeof(tests[0]), "channels ", "channel lookup: ", NULL);
}
