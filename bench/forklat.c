/* SPDX-License-Identifier: MIT */
/* forklat: what a fork costs the thread that calls it. BUSY threads spin on CPU work (the
 * profiler has running threads to sample while the main thread forks); after a warm-up (so
 * that a lazy profiler has taken its first ticks), the main thread does FORKS times:
 *
 *   t0 = now; pid = fork(); t1 = now (in the parent); waitpid(pid); t2 = now
 *
 * and the child calls _exit(0) at once. *fork* is t1 - t0 (fork until it returns in the
 * parent), *fork+wait* is t2 - t0 (the child's whole life, reaped), both CLOCK_MONOTONIC;
 * *cpu* is the main thread's own CPU time (CLOCK_THREAD_CPUTIME_ID) over t0..t2. The
 * percentiles are exact (sorted), over every fork.
 *
 * It stops early after MAX_MS of forking (a profiler that makes each fork wait long must not
 * make the run endless): n= says how many forks the percentiles are over.
 *
 * Usage: forklat [FORKS [BUSY [WARMUP_MS [MAX_MS]]]]     (default 2000 1 200 10000)
 * Prints: forklat: n=N busy=N wait_p50_ns=N wait_p99_ns=N fork_p50_ns=N fork_p99_ns=N
 *         cpu_p50_ns=N cpu_p99_ns=N
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "work.h"

static atomic_int stop;

static void *busy(void *arg)
{
	uint64_t x = (uintptr_t)arg + 1;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		x = descend(x, 4, 2000);
	sink = x;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, int n, int p)
{
	qsort(v, (size_t)n, sizeof *v, cmp_u64);
	int i = (int)(((int64_t)n * p + 99) / 100) - 1;
	return v[i < 0 ? 0 : i];
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	int nbusy = argc > 2 ? atoi(argv[2]) : 1;
	int warm_ms = argc > 3 ? atoi(argv[3]) : 200;
	int max_ms = argc > 4 ? atoi(argv[4]) : 10000;
	if (n < 1 || nbusy < 0 || nbusy > 256 || warm_ms < 0 || max_ms < 1) {
		fprintf(stderr, "usage: forklat [FORKS [BUSY [WARMUP_MS [MAX_MS]]]]\n");
		return 2;
	}
	(void)thread_named; /* work.h's, unused here */
	pthread_t th[256];
	for (int i = 0; i < nbusy; i++)
		if (pthread_create(&th[i], NULL, busy, (void *)(uintptr_t)i) != 0) {
			perror("pthread_create");
			return 1;
		}
	usleep((useconds_t)warm_ms * 1000);

	uint64_t *wait_ns = calloc((size_t)n, sizeof(uint64_t));
	uint64_t *fork_ns = calloc((size_t)n, sizeof(uint64_t));
	uint64_t *cpu_ns = calloc((size_t)n, sizeof(uint64_t));
	if (!wait_ns || !fork_ns || !cpu_ns)
		return 1;
	uint64_t start = clock_ns(CLOCK_MONOTONIC);
	int done = 0;
	for (int i = 0; i < n; i++) {
		uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		uint64_t t1 = clock_ns(CLOCK_MONOTONIC);
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "forklat: child %d: status %#x\n", (int)pid, st);
			return 1;
		}
		uint64_t t2 = clock_ns(CLOCK_MONOTONIC);
		uint64_t c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		wait_ns[i] = t2 - t0;
		fork_ns[i] = t1 - t0;
		cpu_ns[i] = c1 - c0;
		done = i + 1;
		if (t2 - start > (uint64_t)max_ms * 1000000ull)
			break;
	}
	n = done;
	atomic_store(&stop, 1);
	for (int i = 0; i < nbusy; i++)
		pthread_join(th[i], NULL);
	printf("forklat: n=%d busy=%d wait_p50_ns=%llu wait_p99_ns=%llu fork_p50_ns=%llu "
	       "fork_p99_ns=%llu cpu_p50_ns=%llu cpu_p99_ns=%llu\n",
	       n, nbusy, (unsigned long long)pct(wait_ns, n, 50),
	       (unsigned long long)pct(wait_ns, n, 99), (unsigned long long)pct(fork_ns, n, 50),
	       (unsigned long long)pct(fork_ns, n, 99), (unsigned long long)pct(cpu_ns, n, 50),
	       (unsigned long long)pct(cpu_ns, n, 99));
	return 0;
}
