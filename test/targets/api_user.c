/* SPDX-License-Identifier: MIT */
/* A program that links libwallprof and drives it through include/wallprof.h.
 * Usage: api_user PROFILE1 FLUSHED PROFILE2
 * Prints "check NAME ok|FAIL ..." lines for the return codes; the test reads the files. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "wallprof.h"

static atomic_int stop;
static int failures;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define BURNER(name, k)                                                   \
	__attribute__((noinline, noclone)) static double name(double secs) \
	{                                                                 \
		double t0 = now(), x = 1;                                 \
		while (now() - t0 < secs)                                 \
			for (int i = 0; i < 10000; i++)                   \
				x = x * 1.0000001 + k;                    \
		return x;                                                 \
	}
BURNER(before_start_fn, 0.1)
BURNER(main_fn, 0.2)
BURNER(after_stop_fn, 0.3)
BURNER(second_fn, 0.4)
BURNER(named_fn, 0.5)
BURNER(excluded_fn, 0.6)

static void check(const char *what, int got, int want)
{
	printf("check %s %s (got %d, want %d)\n", what, got == want ? "ok" : "FAIL", got, want);
	if (got != want)
		failures++;
}

static void *named(void *arg)
{
	check("thread_name", wallprof_thread_name("renamed-worker"), 0);
	while (!atomic_load(&stop))
		named_fn(0.01);
	return NULL;
}

static void *excluded(void *arg)
{
	pthread_setname_np(pthread_self(), "excluded");
	check("thread_exclude", wallprof_thread_exclude(1), 0);
	while (!atomic_load(&stop))
		excluded_fn(0.01);
	return NULL;
}

int main(int argc, char **argv)
{
	volatile double sink = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4)
		return 2;
	check("version", wallprof_version() && *wallprof_version(), 1);
	/* linked, not preloaded: nothing is sampled before wallprof_start */
	sink += before_start_fn(0.3);
	check("stop before start", wallprof_stop(), -ESRCH);
	check("flush before start", wallprof_flush(NULL), -ESRCH);
	struct wallprof_options bad = { WALLPROF_OPTIONS_VERSION, "fast", 0, 0, NULL, 1 };
	check("bad mode", wallprof_start(&bad), -EINVAL);
	struct wallprof_options badv = { 99, NULL, 0, 0, NULL, 1 };
	check("bad version", wallprof_start(&badv), -EINVAL);

	struct wallprof_options o = { WALLPROF_OPTIONS_VERSION, "cpu", 500, 0, argv[1], 1 };
	check("start", wallprof_start(&o), 0);
	check("start again", wallprof_start(&o), -EALREADY);
	pthread_t a, b;
	pthread_create(&a, NULL, named, NULL);
	pthread_create(&b, NULL, excluded, NULL);
	sink += main_fn(0.7);
	check("flush", wallprof_flush(argv[2]), 0);
	sink += main_fn(0.8);
	check("stop", wallprof_stop(), 0);
	check("stop again", wallprof_stop(), -ESRCH);
	atomic_store(&stop, 1);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	sink += after_stop_fn(0.3);

	/* a second profile, with different settings */
	struct wallprof_options o2 = { WALLPROF_OPTIONS_VERSION, "wall", 1000, -1, argv[3], 1 };
	check("restart", wallprof_start(&o2), 0);
	sink += second_fn(0.5);
	check("stop 2", wallprof_stop(), 0);
	printf("api_user: %d failures %d\n", failures, sink > 0);
	return failures ? 1 : 0;
}
