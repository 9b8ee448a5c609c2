/*
 * The boot tree the RTOS library reads in a host test: the blob the test
 * loaded last from a file dtc built.
 */
#ifndef RTOS_LIB_TEST_BOOT_TREE_H
#define RTOS_LIB_TEST_BOOT_TREE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_DTB		4096

static uint8_t blob[MAX_DTB] __attribute__((aligned(8)));

uint64_t rtos_boot_dtb(void)
{
	return (uint64_t)(uintptr_t)blob;
}

/* False if the file is missing, empty or larger than the blob. */
static bool load(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	memset(blob, 0, sizeof(blob));
	if (!f)
		return false;
	n = fread(blob, 1, sizeof(blob), f);
	fclose(f);
	return n > 0 && n < sizeof(blob);
}

#endif
