/* SPDX-License-Identifier: MIT */
/* spin: a fixed amount of CPU work in THREADS threads, for overhead measurements.
 *
 * Each thread runs UNITS units of deterministic work through a few levels of calls (so that
 * every profiler has real frames to unwind: a recursive descent of varying depth, then one of
 * two leaves), built -O2 -fomit-frame-pointer like the project's test targets. The amount of
 * work is fixed, not the time: a program that is slowed down takes longer.
 *
 * Usage: spin THREADS UNITS [--split] [--tick HZ | --interrupt HZ | --interrupt-sem HZ]
 *            runs the work, prints "spin: wall_ns=N cpu_ns=N thread_cpu_ns=N interrupts=N":
 *            its own wall time around the work, the process's CPU time over it (a profiler's
 *            thread, or the interrupter, included), the working threads' own CPU time
 *            (CLOCK_THREAD_CPUTIME_ID: their work plus any time they spend in a signal
 *            handler) and how many times spin's own SIGPROF handler ran (0 without --interrupt)
 *        spin --calibrate MS
 *            prints the UNITS one thread needs for about MS ms of CPU
 *
 * --split pins the working threads to CPU 0 and a profiler's sampler thread (a thread of this
 * process named "wallprof", waited for up to 200 ms when libwallprof is preloaded; or spin's
 * own interrupter) to CPU 1, so that the sampler and the sampled thread are certain to run on
 * different CPUs. (For the opposite, both on one CPU, run the whole program under
 * `taskset -c 0`.)
 *
 * --interrupt HZ is a physical floor for any signal-based profiler, with no profiler: an extra
 * "interrupter" thread sends tgkill(SIGPROF) to each working thread HZ times per (wall) second,
 * and the handler only counts and returns. What that costs the working threads (their CPU
 * time against a run without it) is what merely interrupting them costs on this machine: on
 * a VM, the signal's IPI is a VM exit. --interrupt-sem HZ adds the bare handshake of
 * bench/floor to every interrupt: the handler posts msg2 and waits for msg3, the interrupter
 * waits for msg2, posts msg3 and waits for msg4, one thread at a time; the cheapest way to
 * hold a thread while a sampler reads it. --tick HZ keeps the interrupter's timed wake-ups
 * and signals nothing: what a sampler thread costs before it does anything at all (on a VM,
 * waking an idle CPU from a timer is a VM exit too). Not for use under a profiler that uses
 * SIGPROF.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "work.h"

static long units_per_thread;

static void pin(pid_t tid, int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(tid, sizeof(set), &set) != 0)
		perror("spin: sched_setaffinity");
}

/* Pins this (main) thread to CPU 0 and the thread named "wallprof" to CPU 1 (waiting for it
 * only when the agent is preloaded). */
static void split(void)
{
	pin(0, 0);
	const char *pre = getenv("LD_PRELOAD");
	if (!pre || !strstr(pre, "libwallprof"))
		return;
	for (int tries = 0; tries < 200; tries++) {
		pid_t tid = thread_named("wallprof");
		if (tid > 0) {
			pin(tid, 1);
			return;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

static _Atomic uint64_t workers_cpu_ns;

/* The interrupter (--interrupt, --interrupt-sem). A working thread stays alive (waiting on
 * `release`) until the interrupter has stopped, so that a tgkill that succeeded is always
 * answered by a handler run: with the semaphore handshake, a thread that exited with the
 * signal pending would leave the interrupter waiting for msg2 forever. */
enum { NONE, TICK, EMPTY, SEM };
static int interrupt_kind = NONE, pin_interrupter;
static long interrupt_hz;
static _Atomic pid_t tids[256];
static _Atomic int done[256], stop_interrupter;
static _Atomic uint64_t interrupts;
static sem_t msg2, msg3, msg4, finished, release;

static void wait_sem(sem_t *s)
{
	while (sem_wait(s) != 0) /* EINTR: a SIGPROF came while waiting */
		;
}

static void on_sigprof(int sig)
{
	int saved = errno;
	atomic_fetch_add_explicit(&interrupts, 1, memory_order_relaxed);
	if (interrupt_kind == SEM) {
		sem_post(&msg2);
		wait_sem(&msg3);
		sem_post(&msg4);
	}
	errno = saved;
	(void)sig;
}

static void interrupt_one(pid_t pid, pid_t tid)
{
	if (interrupt_kind == TICK)
		return;
	if (syscall(SYS_tgkill, pid, tid, SIGPROF) != 0 || interrupt_kind != SEM)
		return;
	wait_sem(&msg2);
	sem_post(&msg3);
	wait_sem(&msg4);
}

/* Every 1/HZ s (absolute deadlines, as a profiler's sampler would tick), interrupts each
 * working thread that has started and not yet finished its work. */
static void *interrupter(void *arg)
{
	int threads = (int)(intptr_t)arg;
	sigset_t prof;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof, NULL);
	if (pin_interrupter)
		pin(0, 1);
	pid_t pid = getpid();
	uint64_t interval = 1000000000ull / (uint64_t)interrupt_hz;
	uint64_t next = clock_ns(CLOCK_MONOTONIC);
	while (!stop_interrupter) {
		next += interval;
		struct timespec ts = { (time_t)(next / 1000000000ull), (long)(next % 1000000000ull) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		for (int i = 0; i < threads && !stop_interrupter; i++)
			if (tids[i] && !done[i])
				interrupt_one(pid, tids[i]);
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		if (now > next + interval)
			next = now; /* fell behind: no burst */
	}
	return NULL;
}

static void start_interrupter(pthread_t *h, int threads)
{
	sem_init(&msg2, 0, 0);
	sem_init(&msg3, 0, 0);
	sem_init(&msg4, 0, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigprof;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	if (pthread_create(h, NULL, interrupter, (void *)(intptr_t)threads) != 0) {
		perror("spin: pthread_create");
		exit(1);
	}
}

static void work(int i)
{
	tids[i] = (pid_t)syscall(SYS_gettid);
	uint64_t x = 88172645463325252ull ^ (uint64_t)i;
	for (long u = 0; u < units_per_thread; u++)
		x = unit(x);
	sink += x;
	workers_cpu_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID);
	done[i] = 1;
}

static void *worker(void *arg)
{
	work((int)(intptr_t)arg);
	sem_post(&finished);
	wait_sem(&release);
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: spin THREADS UNITS [--split] [--tick HZ | --interrupt HZ |"
			" --interrupt-sem HZ] | spin --calibrate MS\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--calibrate")) {
		double ms = atof(argv[2]);
		uint64_t best = UINT64_MAX, x = 1;
		for (int i = 0; i < 5; i++) {
			uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			for (int k = 0; k < 20; k++)
				x = unit(x);
			uint64_t dt = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
			if (dt < best)
				best = dt;
		}
		sink += x;
		double per_unit = (double)best / 20.0;
		long units = (long)(ms * 1e6 / per_unit + 0.5);
		printf("%ld\n", units > 0 ? units : 1);
		return 0;
	}
	if (argc < 3)
		return usage();
	int threads = atoi(argv[1]), split_ = 0;
	units_per_thread = atol(argv[2]);
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--split"))
			split_ = 1;
		else if (!strcmp(argv[i], "--tick") && i + 1 < argc && !interrupt_kind)
			interrupt_kind = TICK, interrupt_hz = atol(argv[++i]);
		else if (!strcmp(argv[i], "--interrupt") && i + 1 < argc && !interrupt_kind)
			interrupt_kind = EMPTY, interrupt_hz = atol(argv[++i]);
		else if (!strcmp(argv[i], "--interrupt-sem") && i + 1 < argc && !interrupt_kind)
			interrupt_kind = SEM, interrupt_hz = atol(argv[++i]);
		else
			return usage();
	}
	if (threads < 1 || threads > 256 || units_per_thread < 1 ||
	    (interrupt_kind && (interrupt_hz < 1 || interrupt_hz > 1000000000))) {
		fprintf(stderr, "spin: bad arguments\n");
		return 2;
	}
	if (split_) {
		split(); /* before the workers start: they inherit CPU 0 */
		pin_interrupter = 1;
	}
	sem_init(&finished, 0, 0);
	sem_init(&release, 0, 0);
	uint64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	pthread_t h[256], ih;
	for (int i = 1; i < threads; i++)
		if (pthread_create(&h[i], NULL, worker, (void *)(intptr_t)i) != 0) {
			perror("spin: pthread_create");
			return 1;
		}
	if (interrupt_kind)
		start_interrupter(&ih, threads);
	work(0);
	for (int i = 1; i < threads; i++)
		wait_sem(&finished);
	uint64_t w1 = clock_ns(CLOCK_MONOTONIC), c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	if (interrupt_kind) {
		stop_interrupter = 1;
		pthread_join(ih, NULL);
	}
	for (int i = 1; i < threads; i++)
		sem_post(&release);
	for (int i = 1; i < threads; i++)
		pthread_join(h[i], NULL);
	printf("spin: wall_ns=%llu cpu_ns=%llu thread_cpu_ns=%llu interrupts=%llu\n",
	       (unsigned long long)(w1 - w0), (unsigned long long)(c1 - c0),
	       (unsigned long long)workers_cpu_ns, (unsigned long long)interrupts);
	return 0;
}
