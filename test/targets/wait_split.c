/* SPDX-License-Identifier: MIT */
/* wait_split: one thread whose waits, from one and the same stack, split over two objects,
 * so that an export that carries the wait per sample must split the stack (issue 13).
 *
 *   napper  nap() in a loop, the same call site each time, asking alternately for 10 ms
 *           and 30 ms: the wait objects "10ms" and "30ms", about 1:3 in time
 *   main    waits in pthread_join for the napper
 *
 * Usage: wait_split [SECONDS] (default 2). WP_TRUTH=FILE receives "tid.napper N" and
 * "ns.10ms N", "ns.30ms N": the time the napper measured itself spending in each nap. */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

static uint64_t deadline;
static uint64_t spent[2];

static KEEP void nap(uint64_t ns)
{
	sleep_ns(ns);
	BARRIER();
}

static void *napper_fn(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "napper");
	truth("tid.napper %ld", (long)syscall(SYS_gettid));
	for (unsigned i = 0; mono_ns() < deadline; i++) {
		uint64_t t0 = mono_ns();
		nap(i % 2 ? 30000000ull : 10000000ull);
		spent[i % 2] += mono_ns() - t0;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = run_seconds(argc, argv, 2.0);
	truth_open();
	deadline = mono_ns() + (uint64_t)(secs * 1e9);
	pthread_t t;
	if (pthread_create(&t, NULL, napper_fn, NULL) != 0)
		return 3;
	pthread_join(t, NULL);
	truth("ns.10ms %llu", (unsigned long long)spent[0]);
	truth("ns.30ms %llu", (unsigned long long)spent[1]);
	truth_close();
	printf("wait_split done\n");
	return 0;
}
