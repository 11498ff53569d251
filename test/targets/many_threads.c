/* SPDX-License-Identifier: MIT */
/* many_threads: thousands of short-lived threads. Creates THREADS threads (default 5000) in
 * batches of 50; each names itself "worker" and does ~100 us of arithmetic, and main joins the
 * batch before starting the next. Usage: many_threads [THREADS].
 * WP_TRUTH=FILE receives: threads N, elapsed_ns N, failed N. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { BATCH = 50 };

static volatile uint64_t sink;

KEEP static uint64_t worker_math(uint64_t x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 6364136223846793005ull + (uint64_t)i;
	return x;
}

KEEP static void *worker_fn(void *arg)
{
	pthread_setname_np(pthread_self(), "worker");
	uint64_t r = worker_math((uint64_t)(uintptr_t)arg);
	BARRIER();
	sink += r;
	return NULL;
}

int main(int argc, char **argv)
{
	long total = argc > 1 ? atol(argv[1]) : 5000;
	if (total <= 0)
		total = 5000;
	truth_open();
	uint64_t t0 = mono_ns();
	long made = 0, failed = 0;
	while (made < total) {
		pthread_t h[BATCH];
		int n = 0;
		for (; n < BATCH && made + n < total; n++) {
			int e = pthread_create(&h[n], NULL, worker_fn, (void *)(uintptr_t)(made + n));
			if (e) {
				fprintf(stderr, "many_threads: pthread_create: %s\n", strerror(e));
				failed++;
				break;
			}
		}
		for (int i = 0; i < n; i++)
			pthread_join(h[i], NULL);
		made += n;
		if (failed)
			break;
	}
	uint64_t elapsed = mono_ns() - t0;
	truth("threads %ld", made);
	truth("elapsed_ns %llu", (unsigned long long)elapsed);
	truth("failed %ld", failed);
	truth_close();
	printf("many_threads: %ld threads in %.3f s\n", made, (double)elapsed / 1e9);
	return failed ? 1 : 0;
}
