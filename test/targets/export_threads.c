/* SPDX-License-Identifier: MIT */
/* A program with known hot spots for the pprof and speedscope export tests
 * (test/e2e/test_pprof.py, test/speedscope/speedscope.test.mjs), built -O2 -g
 * -fomit-frame-pointer so the agent has to unwind with DWARF CFI.
 *
 *   export_target [--seconds=S] [--beta-share=PCT] [--phases] [--weird-name]
 *
 * Threads, all running for S seconds (default 1):
 *   main ("exp-main")    joins the others: blocked the whole time;
 *   "exp-alpha"          alpha_thread -> alpha_loop -> alpha_hot, whose work is the inlined
 *                        function mix() (always_inline: an inline frame in the symbols);
 *   "exp-beta"           beta_thread -> beta_loop -> beta_hot / gamma_hot, splitting its time
 *                        PCT% / (100-PCT)% between the two (default 75): interleaved
 *                        finely, or with --phases beta_hot for the first PCT% of the run and
 *                        gamma_hot for the rest (to check that exports keep time order);
 *   "exp-sleep"          sleeps in nanosleep; with --weird-name it is named with a quote, a
 *                        backslash, a tab, a control byte, an invalid UTF-8 byte and an "é"
 *                        (w"\<TAB><0x01><0xff>é), to test the exporters' escaping.
 * It prints nothing; exits 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noclone))

static double seconds = 1.0;
static int beta_share = 75;
static int weird, phases;
static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline __attribute__((always_inline)) uint64_t mix(uint64_t x)
{
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x * 0x9e3779b97f4a7c15ull + 1;
}

NOINLINE static uint64_t alpha_hot(uint64_t x, int n)
{
	for (int i = 0; i < n; i++)
		x = mix(x);
	return x;
}

/* beta_hot and gamma_hot differ in their constants so that no identical-code folding merges
 * them. */
NOINLINE static uint64_t beta_hot(uint64_t x, int n)
{
	for (int i = 0; i < n; i++) {
		x ^= x << 11;
		x ^= x >> 9;
		x = x * 0xbf58476d1ce4e5b9ull + 3;
	}
	return x;
}

NOINLINE static uint64_t gamma_hot(uint64_t x, int n)
{
	for (int i = 0; i < n; i++) {
		x ^= x << 5;
		x ^= x >> 27;
		x = x * 0x94d049bb133111ebull + 7;
	}
	return x;
}

NOINLINE static void alpha_loop(double end)
{
	uint64_t x = 1;
	while (now() < end)
		x = alpha_hot(x, 200000);
	sink = x;
}

NOINLINE static void beta_loop(double end)
{
	uint64_t x = 2;
	if (phases) {
		double mid = end - seconds * (100 - beta_share) / 100.0;
		while (now() < mid)
			x = beta_hot(x, 100000);
		while (now() < end)
			x = gamma_hot(x, 100000);
		sink = x;
		return;
	}
	/* 1000 rounds of 2000 iterations a call: fine-grained enough that the split holds for
	 * any run length. */
	int nb = 20 * beta_share, ng = 20 * (100 - beta_share);
	while (now() < end) {
		for (int i = 0; i < 100; i++) {
			x = beta_hot(x, nb);
			x = gamma_hot(x, ng);
		}
	}
	sink = x;
}

static void *alpha_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "exp-alpha");
	alpha_loop(*(double *)arg);
	return NULL;
}

static void *beta_thread(void *arg)
{
	pthread_setname_np(pthread_self(), "exp-beta");
	beta_loop(*(double *)arg);
	return NULL;
}

static void *sleep_thread(void *arg)
{
	pthread_setname_np(pthread_self(), weird ? "w\"\\\t\x01\xff\xc3\xa9" : "exp-sleep");
	double end = *(double *)arg;
	while (now() < end) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--seconds=", 10))
			seconds = atof(argv[i] + 10);
		else if (!strncmp(argv[i], "--beta-share=", 13))
			beta_share = atoi(argv[i] + 13);
		else if (!strcmp(argv[i], "--weird-name"))
			weird = 1;
		else if (!strcmp(argv[i], "--phases"))
			phases = 1;
		else {
			fprintf(stderr, "usage: export_target [--seconds=S] [--beta-share=PCT] "
					"[--phases] [--weird-name]\n");
			return 2;
		}
	}
	if (beta_share < 0 || beta_share > 100 || !(seconds > 0)) {
		fprintf(stderr, "export_target: bad arguments\n");
		return 2;
	}
	pthread_setname_np(pthread_self(), "exp-main");
	double end = now() + seconds;
	pthread_t t[3];
	void *(*fn[3])(void *) = { alpha_thread, beta_thread, sleep_thread };
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, fn[i], &end) != 0) {
			fprintf(stderr, "export_target: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}
