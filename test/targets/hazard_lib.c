/* SPDX-License-Identifier: MIT */
/* libhazard_lib.so: what hazards' dlopener thread loads and unloads in a loop. It has some
 * state to construct and destroy so that dlopen/dlclose do real work. */
#include <stdint.h>
#include <stdlib.h>

uint64_t hazard_work(uint64_t x);

static uint64_t *table;

__attribute__((constructor)) static void hazard_init(void)
{
	table = calloc(256, sizeof(*table));
	for (int i = 0; table && i < 256; i++)
		table[i] = (uint64_t)i * 0x9e3779b97f4a7c15ull;
}

__attribute__((destructor)) static void hazard_fini(void)
{
	free(table);
	table = NULL;
}

uint64_t hazard_work(uint64_t x)
{
	uint64_t h = x;
	for (int i = 0; i < 1000; i++)
		h = (h ^ (table ? table[(h + (uint64_t)i) & 255] : 0)) * 1099511628211ull;
	return h;
}
