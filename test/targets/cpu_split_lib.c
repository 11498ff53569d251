/* SPDX-License-Identifier: MIT */
/* libcpu_split_lib.so: built -O2 -fomit-frame-pointer like the program; see cpu_split.c. */
#include "cpu_split_lib.h"

#include "common.h"

KEEP uint64_t lib_leaf_mul(uint64_t n, uint64_t x)
{
	for (uint64_t i = 0; i < n; i++)
		x = x * 2862933555777941757ull + i;
	return x;
}

KEEP uint64_t lib_work(uint64_t n, uint64_t x)
{
	uint64_t r = lib_leaf_mul(n, x);
	BARRIER();
	return r ^ 0x5555;
}
