/* spin: a fixed amount of CPU work in THREADS threads, for overhead measurements.
 *
 * Each thread runs UNITS units of deterministic work through a few levels of calls (so that
 * every profiler has real frames to unwind: a recursive descent of varying depth, then one of
 * two leaves), built -O2 -fomit-frame-pointer like the project's test targets. The amount of
 * work is fixed, not the time: a program that is slowed down takes longer.
 *
 * Usage: spin THREADS UNITS [--split]
 *            runs the work, prints "spin: wall_ns=N cpu_ns=N thread_cpu_ns=N": its own wall
 *            time around the work, the process's CPU time over it (a profiler's thread
 *            included), and the working threads' own CPU time (CLOCK_THREAD_CPUTIME_ID:
 *            their work plus any time they spend in a profiler's signal handler)
 *        spin --calibrate MS
 *            prints the UNITS one thread needs for about MS ms of CPU
 *
 * --split pins the working threads to CPU 0 and a profiler's sampler thread (a thread of this
 * process named "wallprof", waited for up to 200 ms when libwallprof is preloaded) to CPU 1, so that the sampler and the
 * sampled thread are certain to run on different CPUs. (For the opposite, both on one CPU,
 * run the whole program under `taskset -c 0`.)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "work.h"

static long units_per_thread;

static void pin(pid_t tid, int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(tid, sizeof(set), &set) != 0)
		perror("spin: sched_setaffinity");
}

/* Pins this (main) thread to CPU 0 and the thread named "wallprof" to CPU 1 (waiting for it
 * only when the agent is preloaded). */
static void split(void)
{
	pin(0, 0);
	const char *pre = getenv("LD_PRELOAD");
	if (!pre || !strstr(pre, "libwallprof"))
		return;
	for (int tries = 0; tries < 200; tries++) {
		DIR *d = opendir("/proc/self/task");
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char path[300], name[32] = "";
			snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
			FILE *f = fopen(path, "r");
			if (!f)
				continue;
			if (fgets(name, sizeof(name), f) && !strcmp(name, "wallprof\n")) {
				fclose(f);
				closedir(d);
				pin((pid_t)atoi(e->d_name), 1);
				return;
			}
			fclose(f);
		}
		if (d)
			closedir(d);
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

static _Atomic uint64_t workers_cpu_ns;

static void *worker(void *arg)
{
	uint64_t x = 88172645463325252ull ^ (uint64_t)(uintptr_t)arg;
	for (long u = 0; u < units_per_thread; u++)
		x = unit(x);
	sink += x;
	workers_cpu_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--calibrate")) {
		double ms = atof(argv[2]);
		uint64_t best = UINT64_MAX, x = 1;
		for (int i = 0; i < 5; i++) {
			uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			for (int k = 0; k < 20; k++)
				x = unit(x);
			uint64_t dt = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
			if (dt < best)
				best = dt;
		}
		sink += x;
		double per_unit = (double)best / 20.0;
		long units = (long)(ms * 1e6 / per_unit + 0.5);
		printf("%ld\n", units > 0 ? units : 1);
		return 0;
	}
	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "--split"))) {
		fprintf(stderr, "usage: spin THREADS UNITS [--split] | spin --calibrate MS\n");
		return 2;
	}
	int threads = atoi(argv[1]);
	units_per_thread = atol(argv[2]);
	if (threads < 1 || threads > 256 || units_per_thread < 1) {
		fprintf(stderr, "spin: bad arguments\n");
		return 2;
	}
	if (argc == 4)
		split(); /* before the workers start: they inherit CPU 0 */
	uint64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	pthread_t h[256];
	for (int i = 1; i < threads; i++)
		if (pthread_create(&h[i], NULL, worker, (void *)(uintptr_t)i) != 0) {
			perror("pthread_create");
			return 1;
		}
	worker(NULL);
	for (int i = 1; i < threads; i++)
		pthread_join(h[i], NULL);
	uint64_t w1 = clock_ns(CLOCK_MONOTONIC), c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	printf("spin: wall_ns=%llu cpu_ns=%llu thread_cpu_ns=%llu\n", (unsigned long long)(w1 - w0),
	       (unsigned long long)(c1 - c0), (unsigned long long)workers_cpu_ns);
	return 0;
}
