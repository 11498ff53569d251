/* SPDX-License-Identifier: MIT */
/* live_target: a program to watch with `wallprof --live` (test/e2e/test_live.py).
 *
 *   live_target [SECONDS [STATUS]]      (default 6 0)
 *     main thread    live_hot_first() burns CPU for the first half of the run,
 *                    live_hot_second() for the second half
 *     "live-worker"  live_worker_loop(): ~5 ms of CPU, ~5 ms asleep, again
 *     "live-sleeper" live_sleeper_loop(): nanosleep(20 ms) in a loop
 *   It prints "live_target: start" and "live_target: done" on standard output and exits with
 *   STATUS.
 *
 *   live_target --work ROUNDS
 *     ROUNDS rounds of a fixed CPU workload (live_work) on the main thread alone, then prints
 *     "work: W.WWW s wall, C.CCC s cpu" (the wall time it took, and the main thread's CPU
 *     time, signal handlers included) and exits 0: the slowdown measure. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static volatile uint64_t sink;
static volatile int stop;

/* A macro, not a function (even an inlined one would be a frame of its own): the samples
 * belong to the live_* function that runs it. */
#define CHURN(x, n)                                                         \
	do {                                                                \
		for (int i_ = 0; i_ < (n); i_++)                            \
			(x) = (x) * 6364136223846793005ull + (uint64_t)i_; \
	} while (0)

KEEP static uint64_t live_hot_first(uint64_t x)
{
	CHURN(x, 200000);
	return x;
}

KEEP static uint64_t live_hot_second(uint64_t x)
{
	x ^= 0x9e3779b97f4a7c15ull;
	CHURN(x, 200000);
	return x;
}

KEEP static uint64_t live_work(uint64_t x)
{
	x++;
	CHURN(x, 1000000);
	return x;
}

KEEP static void *live_worker_loop(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg;
	pthread_setname_np(pthread_self(), "live-worker");
	while (!stop) {
		uint64_t until = mono_ns() + 5000000;
		while (mono_ns() < until)
			CHURN(x, 10000);
		sleep_ns(5000000);
	}
	sink = x;
	return NULL;
}

KEEP static void *live_sleeper_loop(void *arg)
{
	pthread_setname_np(pthread_self(), "live-sleeper");
	while (!stop)
		sleep_ns(20000000);
	return arg;
}

static int work(long rounds)
{
	uint64_t t0 = mono_ns(), c0 = thread_cpu_ns(), x = 1;
	for (long i = 0; i < rounds; i++) {
		x = live_work(x);
		BARRIER();
	}
	sink = x;
	printf("work: %.3f s wall, %.3f s cpu\n", (double)(mono_ns() - t0) / 1e9,
	       (double)(thread_cpu_ns() - c0) / 1e9);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "--work"))
		return work(atol(argv[2]));
	double secs = run_seconds(argc, argv, 6);
	int status = argc > 2 ? atoi(argv[2]) : 0;
	printf("live_target: start\n");
	fflush(stdout);

	pthread_t worker, sleeper;
	if (pthread_create(&worker, NULL, live_worker_loop, (void *)7) ||
	    pthread_create(&sleeper, NULL, live_sleeper_loop, NULL)) {
		fprintf(stderr, "live_target: cannot create threads\n");
		return 3;
	}
	uint64_t t0 = mono_ns(), half = t0 + (uint64_t)(secs * 0.5e9), end = t0 + (uint64_t)(secs * 1e9);
	uint64_t x = 1;
	while (mono_ns() < half) {
		x = live_hot_first(x);
		BARRIER();
	}
	while (mono_ns() < end) {
		x = live_hot_second(x);
		BARRIER();
	}
	sink = x;
	stop = 1;
	pthread_join(worker, NULL);
	pthread_join(sleeper, NULL);
	printf("live_target: done\n");
	return status;
}
