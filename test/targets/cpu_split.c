/* SPDX-License-Identifier: MIT */
/* cpu_split: one CPU-bound thread whose time is split in known shares across leaf functions
 * reached through distinct callers, and which measures the truth itself.
 *
 *   main -> work_a -> leaf_mul                 ~35%
 *   main -> work_b -> leaf_mul                 ~20%
 *   main -> hash_loop                          ~25%
 *   main -> work_c -> lib_work -> lib_leaf_mul ~20%  (lib_* in libcpu_split_lib.so)
 *
 * Every call is about a millisecond of CPU (randomized 0.6x-1.4x so calls never line up with
 * the sampler's ticks), and is timed with CLOCK_THREAD_CPUTIME_ID; the clock reads cost well
 * under 0.1% of a call. Built -O2 -fomit-frame-pointer, so the profiler has to unwind with
 * the unwind tables. Usage: cpu_split [SECONDS] (default 3); WP_TRUTH=FILE receives
 *   total_ns N                (the thread's CPU time from process start to the end)
 *   self.leaf_mul.work_a N    (ns of CPU in leaf_mul called from work_a)
 *   self.leaf_mul.work_b N
 *   self.hash_loop N
 *   self.lib_leaf_mul N
 *   wall.*                    (the same four in wall time: CLOCK_MONOTONIC around each call,
 *                              which counts a preemption inside it, as wall mode does)
 *   calls N
 * CPU_SPLIT_NAP_US=N: after each call, sleep N us (the process then idles between calls: the
 * ticks that find no thread has run, test_cpu_split.py's napping run). The naps are outside
 * the timed calls and the budget counts CPU time, so the truth is the same.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common.h"
#include "cpu_split_lib.h"

/* Iterations of the leaves that take about 1 ms, found at start-up. */
static uint64_t unit_mul = 1000000, unit_hash = 400000, unit_lib = 1000000;

static uint64_t self_a, self_b, self_hash, self_lib;
/* the same calls' wall time (a thread preempted inside a call is there in wall time) */
static uint64_t wall_a, wall_b, wall_hash, wall_lib;
static volatile uint64_t sink;

KEEP static uint64_t leaf_mul(uint64_t n, uint64_t x)
{
	/* a dependent chain of multiplies: pure CPU, no memory traffic */
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + i;
	return x;
}

KEEP static uint64_t hash_loop(uint64_t n, uint64_t h)
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

KEEP static uint64_t work_a(uint64_t n, uint64_t x)
{
	uint64_t w0 = mono_ns(), t0 = thread_cpu_ns();
	uint64_t r = leaf_mul(n, x);
	uint64_t t1 = thread_cpu_ns(), w1 = mono_ns();
	BARRIER();
	self_a += t1 - t0;
	wall_a += w1 - w0;
	return r + 1;
}

KEEP static uint64_t work_b(uint64_t n, uint64_t x)
{
	uint64_t w0 = mono_ns(), t0 = thread_cpu_ns();
	uint64_t r = leaf_mul(n, x);
	uint64_t t1 = thread_cpu_ns(), w1 = mono_ns();
	BARRIER();
	self_b += t1 - t0;
	wall_b += w1 - w0;
	return r + 2;
}

KEEP static uint64_t work_c(uint64_t n, uint64_t x)
{
	uint64_t w0 = mono_ns(), t0 = thread_cpu_ns();
	uint64_t r = lib_work(n, x);
	uint64_t t1 = thread_cpu_ns(), w1 = mono_ns();
	BARRIER();
	self_lib += t1 - t0;
	wall_lib += w1 - w0;
	return r + 3;
}

KEEP static uint64_t do_hash(uint64_t n, uint64_t x)
{
	uint64_t w0 = mono_ns(), t0 = thread_cpu_ns();
	uint64_t r = hash_loop(n, x);
	uint64_t t1 = thread_cpu_ns(), w1 = mono_ns();
	BARRIER();
	self_hash += t1 - t0;
	wall_hash += w1 - w0;
	return r;
}

static uint64_t rng = 88172645463325252ull;

/* n scaled by a random factor in [0.6, 1.4] */
static uint64_t jitter(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n * (600 + rng % 801) / 1000;
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

__attribute__((noinline)) static void nap(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	if (us > 0)
		nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *nap_env = getenv("CPU_SPLIT_NAP_US");
	long nap_us = nap_env ? atol(nap_env) : 0;
	double seconds = run_seconds(argc, argv, 3.0);
	truth_open();

	/* About 2 ms of calibration, attributed to main's own callees like everything else. */
	unit_mul = calibrate(leaf_mul, unit_mul);
	unit_hash = calibrate(hash_loop, unit_hash);
	unit_lib = calibrate(lib_leaf_mul, unit_lib);
	self_a = self_b = self_hash = self_lib = 0;
	wall_a = wall_b = wall_hash = wall_lib = 0;

	uint64_t start = thread_cpu_ns();
	uint64_t budget = (uint64_t)(seconds * 1e9);
	uint64_t calls = 0, x = 1;
	/* One round: 7 calls of work_a, 4 of work_b, 5 of hash, 4 of work_c, interleaved. */
	static const char round[] = "ahabcahbachhabacahbc";
	while (thread_cpu_ns() - start < budget) {
		for (const char *r = round; *r; r++) {
			switch (*r) {
			case 'a': x = work_a(jitter(unit_mul), x); break;
			case 'b': x = work_b(jitter(unit_mul), x); break;
			case 'h': x = do_hash(jitter(unit_hash), x); break;
			case 'c': x = work_c(jitter(unit_lib), x); break;
			}
			calls++;
			nap(nap_us);
		}
	}
	sink += x;

	truth("total_ns %llu", (unsigned long long)thread_cpu_ns());
	truth("self.leaf_mul.work_a %llu", (unsigned long long)self_a);
	truth("self.leaf_mul.work_b %llu", (unsigned long long)self_b);
	truth("self.hash_loop %llu", (unsigned long long)self_hash);
	truth("self.lib_leaf_mul %llu", (unsigned long long)self_lib);
	truth("wall.leaf_mul.work_a %llu", (unsigned long long)wall_a);
	truth("wall.leaf_mul.work_b %llu", (unsigned long long)wall_b);
	truth("wall.hash_loop %llu", (unsigned long long)wall_hash);
	truth("wall.lib_leaf_mul %llu", (unsigned long long)wall_lib);
	truth("calls %llu", (unsigned long long)calls);
	truth_close();
	printf("cpu_split: %llu calls in %.2f s of CPU\n", (unsigned long long)calls,
	       (double)(thread_cpu_ns() - start) / 1e9);
	return 0;
}
