/* SPDX-License-Identifier: MIT */
/* What spin.c and idle_threads.c share: the unit of CPU work, a recursive descent of varying
 * depth ending in one of two leaves, so every profiler has real frames to unwind; and finding
 * a profiler's sampler thread by name. Header-only; each program is one file. */
#ifndef WP_BENCH_WORK_H
#define WP_BENCH_WORK_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#define KEEP __attribute__((noipa, used))
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static volatile uint64_t sink;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

KEEP static uint64_t leaf_xorshift(uint64_t x, int n)
{
	for (int i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		x += (uint64_t)i * 0x9e3779b97f4a7c15ull;
	}
	return x;
}

KEEP static uint64_t leaf_lcg(uint64_t x, int n)
{
	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005ull + (uint64_t)i;
	return x;
}

KEEP static uint64_t descend(uint64_t x, int depth, int n)
{
	if (depth == 0)
		return (x & 1) ? leaf_xorshift(x, n) : leaf_lcg(x, n);
	uint64_t y = descend(x + (uint64_t)depth, depth - 1, n);
	BARRIER(); /* no tail call: keep the frame */
	return y ^ (x >> 3);
}

/* One unit: about 1 ms of CPU on a current x86-64 core (the driver calibrates anyway). */
KEEP static uint64_t unit(uint64_t x)
{
	for (int k = 0; k < 64; k++)
		x = descend(x, 4 + (k & 7), 4000);
	return x;
}

/* The tid of this process's thread whose comm is `name`, or -1. */
static pid_t thread_named(const char *name)
{
	pid_t found = -1;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (found < 0 && d && (e = readdir(d))) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = 0;
			if (!strcmp(comm, name))
				found = (pid_t)atoi(e->d_name);
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

#endif
