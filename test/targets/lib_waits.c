/* SPDX-License-Identifier: MIT */
/* Waits as real programs make them (issue 13, found profiling CPython and xz):
 * - ticker: a periodic loop sleeping with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to
 *   a deadline 20 ms on each time, as CPython's time.sleep does: each call has another
 *   deadline, and all are one wait.
 * - poolworker: a thread started by a shared library (lib_waits_lib.c) waiting in
 *   pthread_cond_wait on a heap condition in the library's pool_wait_for_work(), with no
 *   program function on its stack (liblzma's workers, a shared libpython).
 * - selector: select() on one descriptor, numbered 40 (its nfds argument is 41).
 * - vforker: vfork(), its child sleeping SECONDS - 0.5 before _exit: the parent waits in
 *   vfork for it (as a subprocess's parent waits until its child execs).
 * - masked: blocks every signal (as liblzma's workers do), then computes 100 ms and sleeps
 *   100 ms in turn: never signalled, so sampled only while asleep.
 * Truth (WP_TRUTH): tid.NAME for each, and ticks (the ticker's sleeps). Runs SECONDS (2). */
#include <pthread.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "lib_waits_lib.h"

static double seconds;
static int pipe_fds[2];
static pid_t tid_ticker, tid_selector, tid_vforker, tid_masked;
static volatile uint64_t sink;
static long ticks;

KEEP static void tick_loop(void)
{
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);
	while (mono_ns() < end) {
		next.tv_nsec += 20 * 1000000L;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0)
			;
		ticks++;
	}
	BARRIER();
}

static void *ticker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "ticker");
	tid_ticker = (pid_t)syscall(SYS_gettid);
	tick_loop();
	return NULL;
}

KEEP static void select_one(int fd)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(fd, &r);
	struct timeval tv = { (time_t)seconds + 5, 0 };
	select(fd + 1, &r, NULL, NULL, &tv);
	BARRIER();
}

static void *selector(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "selector");
	tid_selector = (pid_t)syscall(SYS_gettid);
	select_one(40);
	return NULL;
}

static void *vforker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "vforker");
	tid_vforker = (pid_t)syscall(SYS_gettid);
	uint64_t nap = (uint64_t)((seconds - 0.5) * 1e9);
	pid_t pid = vfork();
	if (pid == 0) {
		/* the child shares our memory: only async-signal-safe calls, then _exit */
		struct timespec ts = { (time_t)(nap / 1000000000ull), (long)(nap % 1000000000ull) };
		while (nanosleep(&ts, &ts) != 0)
			;
		_exit(0);
	}
	int st;
	if (pid > 0)
		while (waitpid(pid, &st, 0) < 0)
			;
	return NULL;
}

KEEP static void compute_masked(uint64_t ns)
{
	uint64_t end = mono_ns() + ns;
	while (mono_ns() < end)
		sink++;
	BARRIER();
}

static void *masked(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "masked");
	tid_masked = (pid_t)syscall(SYS_gettid);
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	uint64_t end = mono_ns() + (uint64_t)((seconds - 0.3) * 1e9);
	while (mono_ns() < end) {
		compute_masked(100 * 1000000ull);
		sleep_ns(100 * 1000000ull);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	seconds = run_seconds(argc, argv, 2.0);
	truth_open();
	if (pipe(pipe_fds) != 0 || dup2(pipe_fds[0], 40) != 40)
		return 2;
	struct pool *p = pool_start();
	pthread_t tt, ts, tv;
	pthread_create(&tt, NULL, ticker, NULL);
	pthread_create(&ts, NULL, selector, NULL);
	pthread_create(&tv, NULL, vforker, NULL);
	pthread_t tm;
	pthread_create(&tm, NULL, masked, NULL);
	pthread_join(tm, NULL);
	pthread_join(tv, NULL);
	pthread_join(tt, NULL);
	(void)!write(pipe_fds[1], "x", 1);
	pthread_join(ts, NULL);
	pid_t wtid = pool_tid(p);
	pool_stop(p);
	truth("tid.ticker %d", (int)tid_ticker);
	truth("tid.selector %d", (int)tid_selector);
	truth("tid.poolworker %d", (int)wtid);
	truth("tid.vforker %d", (int)tid_vforker);
	truth("tid.masked %d", (int)tid_masked);
	truth("ticks %ld", ticks);
	truth_close();
	return 0;
}
