/* SPDX-License-Identifier: MIT */
/* masked_split: worker threads that block every signal while they compute (liblzma's
 * workers, librdkafka's, libuv's do), burning CPU in two functions in known proportions, and
 * measuring the truth themselves.
 *
 *   worker -> work_a -> burn_mul   ~65% of each worker's calls' CPU time
 *   worker -> work_b -> burn_hash  ~35%
 *
 * The workers are started as liblzma starts its own: the creating thread blocks every signal
 * around pthread_create, so each worker inherits a full mask and keeps it for good. Every
 * call is about a millisecond of CPU (randomized 0.6x-1.4x so calls never line up with the
 * sampler's ticks) and is timed with the worker's own CLOCK_THREAD_CPUTIME_ID; every ~45 ms
 * a worker sleeps 5 ms, so it also blocks in the kernel now and then. main waits in join.
 *
 * Usage: masked_split [SECONDS] [WORKERS] [seccomp] (default 3 s, 2 workers; each worker runs
 * SECONDS of CPU time; `seccomp` first puts an allow-all seccomp filter on every thread of
 * the process, the agent's included, as sandboxes do). WP_TRUTH=FILE receives
 *   tid.masked-N T        (each worker's tid)
 *   cpu.masked-N N        (each worker's CPU time in ns, from its start to its end)
 *   self.burn_mul N       (ns of CPU in burn_mul, all workers)
 *   self.burn_hash N
 *   wall.burn_mul N       (the same calls' wall time: CLOCK_MONOTONIC around each, which
 *   wall.burn_hash N       counts a preemption inside it, as wall mode does)
 *   workers N */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>

#include "common.h"

static uint64_t unit_mul = 1000000, unit_hash = 400000;
static volatile uint64_t sink;
static double seconds;

struct worker {
	struct target_thread th;
	char name[16];
	uint64_t self_mul, self_hash, cpu;
	uint64_t wall_mul, wall_hash;
	uint64_t rng;
};

KEEP static uint64_t burn_mul(uint64_t n, uint64_t x)
{
	/* a dependent chain of multiplies: pure CPU, no memory traffic */
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + i;
	return x;
}

KEEP static uint64_t burn_hash(uint64_t n, uint64_t h)
{
	/* FNV-1a over the bytes of a counter */
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = i;
		for (int k = 0; k < 2; k++) {
			h ^= v & 0xff;
			h *= 1099511628211ull;
			v >>= 8;
		}
	}
	return h;
}

KEEP static uint64_t work_a(struct worker *w, uint64_t n, uint64_t x)
{
	uint64_t w0 = mono_ns(), t0 = thread_cpu_ns();
	uint64_t r = burn_mul(n, x);
	uint64_t t1 = thread_cpu_ns(), w1 = mono_ns();
	BARRIER();
	w->self_mul += t1 - t0;
	w->wall_mul += w1 - w0;
	return r + 1;
}

KEEP static uint64_t work_b(struct worker *w, uint64_t n, uint64_t x)
{
	uint64_t w0 = mono_ns(), t0 = thread_cpu_ns();
	uint64_t r = burn_hash(n, x);
	uint64_t t1 = thread_cpu_ns(), w1 = mono_ns();
	BARRIER();
	w->self_hash += t1 - t0;
	w->wall_hash += w1 - w0;
	return r + 2;
}

/* n scaled by a random factor in [0.6, 1.4] */
static uint64_t jitter(struct worker *w, uint64_t n)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return n * (600 + w->rng % 801) / 1000;
}

/* Iterations of f that take about 1 ms of CPU. */
static uint64_t calibrate(uint64_t (*f)(uint64_t, uint64_t), uint64_t guess)
{
	uint64_t n = guess / 16, best = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = thread_cpu_ns();
		sink += f(n, (uint64_t)i);
		uint64_t dt = thread_cpu_ns() - t0;
		if (dt < best)
			best = dt;
	}
	if (best == 0)
		best = 1;
	n = n * 1000000ull / best;
	return n ? n : 1;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	target_thread_begin(&w->th);
	uint64_t budget = (uint64_t)(seconds * 1e9), x = 1, next_sleep = 45000000ull;
	/* 13 calls a round: 8 of work_a, 5 of work_b (about 65% / 35% of the calls' CPU, as
	 * burn_mul and burn_hash are calibrated to the same time a call) */
	static const char round[] = "abaabaabaabab";
	while (thread_cpu_ns() < budget) {
		for (const char *r = round; *r; r++)
			x = *r == 'a' ? work_a(w, jitter(w, unit_mul), x)
				      : work_b(w, jitter(w, unit_hash), x);
		if (thread_cpu_ns() >= next_sleep) {
			sleep_ns(5000000);
			next_sleep += 45000000ull;
		}
	}
	sink += x;
	w->cpu = thread_cpu_ns();
	return NULL;
}

/* An allow-all seccomp filter on every thread (TSYNC): nothing is refused, but the process is
 * under a filter, as in a sandbox or a systemd service with SystemCallFilter=. */
static void allow_all_filter(void)
{
	struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { 1, allow };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
		perror("seccomp");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	seconds = run_seconds(argc, argv, 3.0);
	int n = argc > 2 ? atoi(argv[2]) : 2;
	if (n < 1 || n > 64)
		n = 2;
	if (argc > 3 && !strcmp(argv[3], "seccomp"))
		allow_all_filter();
	truth_open();
	unit_mul = calibrate(burn_mul, unit_mul);
	unit_hash = calibrate(burn_hash, unit_hash);

	struct worker *ws = calloc((size_t)n, sizeof(*ws));
	if (!ws)
		return 1;
	/* as liblzma's mythread_create: every signal blocked around pthread_create, so each
	 * worker starts, and stays, with all of them blocked */
	sigset_t all, old;
	sigfillset(&all);
	for (int i = 0; i < n; i++) {
		struct worker *w = &ws[i];
		snprintf(w->name, sizeof(w->name), "masked-%d", i + 1);
		w->th.name = w->name;
		w->rng = 88172645463325252ull + (uint64_t)i * 7919;
		pthread_sigmask(SIG_SETMASK, &all, &old);
		int e = pthread_create(&w->th.handle, NULL, worker_main, w);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (e) {
			fprintf(stderr, "pthread_create: %s\n", strerror(e));
			return 1;
		}
	}
	uint64_t mul = 0, hash = 0, wmul = 0, whash = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(ws[i].th.handle, NULL);
		truth("tid.%s %d", ws[i].name, (int)ws[i].th.tid);
		truth("cpu.%s %llu", ws[i].name, (unsigned long long)ws[i].cpu);
		mul += ws[i].self_mul;
		hash += ws[i].self_hash;
		wmul += ws[i].wall_mul;
		whash += ws[i].wall_hash;
	}
	truth("self.burn_mul %llu", (unsigned long long)mul);
	truth("self.burn_hash %llu", (unsigned long long)hash);
	truth("wall.burn_mul %llu", (unsigned long long)wmul);
	truth("wall.burn_hash %llu", (unsigned long long)whash);
	truth("workers %d", n);
	truth_close();
	printf("masked_split: %d workers, burn_mul %.3f s, burn_hash %.3f s of CPU\n", n,
	       (double)mul / 1e9, (double)hash / 1e9);
	free(ws);
	return 0;
}
