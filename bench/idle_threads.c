/* SPDX-License-Identifier: MIT */
/* idle_threads: N threads blocked on a condition variable (a futex wait in the kernel) and one
 * busy thread doing a fixed amount of CPU work, to see what a profiler's per-tick cost does as
 * the thread count grows.
 *
 * The idle threads start first (64 KiB stacks); once every one of them is waiting, the busy
 * thread runs UNITS units of work (work.h) and measures itself. Then the process exits
 * (exit() ends the idle threads; nobody joins 10,000 threads).
 *
 * Usage: idle_threads N UNITS
 * Prints: idle_threads: n=N work_ns=N (CLOCK_MONOTONIC) work_cpu_ns=N (the busy thread's CPU)
 *         start_ns=N (creating the idle threads until all were waiting)
 *         sampler_ns=N (CPU used by a profiler's sampler thread, a thread of this process
 *         named "wallprof", while the busy thread worked: from its schedstat; -1 if none)
 *         tail_ns=N tail_sampler_ns=N (the same over the last third of the work only)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "work.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cv = PTHREAD_COND_INITIALIZER; /* never signalled */
static pthread_cond_t ready_cv = PTHREAD_COND_INITIALIZER;
static long waiting;
static long units;
static uint64_t work_ns, work_cpu_ns;

static char sampler_stat[300];

/* Finds the thread named "wallprof" once; returns its CPU time in ns (schedstat), or -1. */
static long long sampler_cpu_ns(void)
{
	if (!sampler_stat[0]) {
		pid_t tid = thread_named("wallprof");
		if (tid < 0)
			return -1;
		snprintf(sampler_stat, sizeof(sampler_stat), "/proc/self/task/%d/schedstat", tid);
	}
	long long ns = -1;
	FILE *f = fopen(sampler_stat, "r");
	if (f) {
		if (fscanf(f, "%lld", &ns) != 1)
			ns = -1;
		fclose(f);
	}
	return ns;
}

KEEP static void *idle_fn(void *arg)
{
	pthread_mutex_lock(&mu);
	if (++waiting % 64 == 0)
		pthread_cond_signal(&ready_cv);
	for (;;)
		pthread_cond_wait(&wake_cv, &mu);
	(void)arg;
	return NULL;
}

/* The last third of the work: wall time, and the sampler's CPU over it (a profiler's cost
 * once its start-up work, such as a first look at every thread, is behind it). */
static uint64_t tail_ns;
static long long tail_sampler_ns = -1;

KEEP static void *busy_fn(void *arg)
{
	uint64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t x = 88172645463325252ull, t0 = 0;
	long long s0 = -1;
	for (long u = 0; u < units; u++) {
		if (u == units - units / 3) {
			t0 = clock_ns(CLOCK_MONOTONIC);
			s0 = sampler_cpu_ns();
		}
		x = unit(x);
	}
	sink += x;
	if (t0) {
		tail_ns = clock_ns(CLOCK_MONOTONIC) - t0;
		long long s1 = sampler_cpu_ns();
		tail_sampler_ns = s0 >= 0 && s1 >= s0 ? s1 - s0 : -1;
	}
	work_ns = clock_ns(CLOCK_MONOTONIC) - w0;
	work_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	(void)arg;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: idle_threads N UNITS\n");
		return 2;
	}
	long n = atol(argv[1]);
	units = atol(argv[2]);
	if (n < 0 || units < 1) {
		fprintf(stderr, "idle_threads: bad arguments\n");
		return 2;
	}
	uint64_t s0 = clock_ns(CLOCK_MONOTONIC);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (long i = 0; i < n; i++) {
		pthread_t h;
		int e = pthread_create(&h, &attr, idle_fn, NULL);
		if (e) {
			fprintf(stderr, "idle_threads: pthread_create #%ld: %s\n", i, strerror(e));
			return 1;
		}
		pthread_detach(h);
	}
	pthread_mutex_lock(&mu);
	while (waiting < n) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&ready_cv, &mu, &ts);
	}
	pthread_mutex_unlock(&mu);
	uint64_t start_ns = clock_ns(CLOCK_MONOTONIC) - s0;

	long long s0_ns = sampler_cpu_ns();
	pthread_t b;
	pthread_create(&b, NULL, busy_fn, NULL);
	pthread_join(b, NULL);
	long long s1_ns = sampler_cpu_ns();
	printf("idle_threads: n=%ld work_ns=%llu work_cpu_ns=%llu start_ns=%llu sampler_ns=%lld "
	       "tail_ns=%llu tail_sampler_ns=%lld\n",
	       n, (unsigned long long)work_ns, (unsigned long long)work_cpu_ns,
	       (unsigned long long)start_ns, s0_ns >= 0 && s1_ns >= s0_ns ? s1_ns - s0_ns : -1,
	       (unsigned long long)tail_ns, tail_sampler_ns);
	return 0; /* exit(): atexit handlers and destructors run (a profiler writes its file) */
}
