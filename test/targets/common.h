/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the end-to-end test targets: clocks, the truth file, attributes
 * that keep functions real frames under -O2. Header-only so every target stays one file. */
#ifndef WP_TARGETS_COMMON_H
#define WP_TARGETS_COMMON_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* A function that stays a function of its own: never inlined, never cloned into a
 * .constprop/.isra copy (which would rename it in the profile). */
#if defined(__clang__)
#define KEEP __attribute__((noinline, used))
#else
#define KEEP __attribute__((noipa, used))
#endif

/* A compiler barrier: placed after a call, it keeps the call from becoming a tail jump
 * (the caller still has work to do after it returns). */
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static inline uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

static inline uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts_ns(&ts);
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts_ns(&ts);
}

static inline void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Seconds to run: argv[1] when given, else the default. */
static inline double run_seconds(int argc, char **argv, double dflt)
{
	if (argc > 1) {
		double s = atof(argv[1]);
		if (s > 0)
			return s;
	}
	return dflt;
}

/* A thread a target starts with pthread_create(&t->handle, NULL, t->fn, t): its function
 * begins with target_thread_begin(t), and main writes t->tid to the truth file. */
struct target_thread {
	const char *name;
	void *(*fn)(void *);
	pthread_t handle;
	pid_t tid;
};

/* The calling thread records its tid and takes its name (its comm: what the profile shows). */
static inline void target_thread_begin(struct target_thread *t)
{
	t->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), t->name);
}

/* The truth file named by $WP_TRUTH: "key value" lines. No-op when unset. */
static FILE *truth_file;

static inline void truth_open(void)
{
	const char *p = getenv("WP_TRUTH");
	if (p && *p) {
		truth_file = fopen(p, "w");
		if (!truth_file) {
			perror(p);
			exit(3);
		}
	}
}

__attribute__((format(printf, 1, 2))) static inline void truth(const char *fmt, ...)
{
	if (!truth_file)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(truth_file, fmt, ap);
	va_end(ap);
	fputc('\n', truth_file);
}

static inline void truth_close(void)
{
	if (truth_file && fclose(truth_file) != 0) {
		perror("WP_TRUTH");
		exit(3);
	}
	truth_file = NULL;
}

#endif
