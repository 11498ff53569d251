/* SPDX-License-Identifier: MIT */
/* calls: what the agent's interposers cost the program's own calls.
 *
 * Usage: calls SIGMASK_PAIRS WRITES THREADS [COND_ROUNDTRIPS]
 *            times, one after the other on the main thread, SIGMASK_PAIRS pairs of
 *            pthread_sigmask(SIG_BLOCK) + pthread_sigmask(SIG_UNBLOCK) of SIGUSR1, WRITES
 *            64-byte write()s to /dev/null, and THREADS pthread_create + pthread_join of a
 *            thread that returns at once; prints
 *            then starts one thread that stays idle (in pause()) and times WRITES writes again;
 *            prints "calls: sigmask_ps=N write_ps=N thread_ps=N write_shared_ps=N":
 *            picoseconds per pair, per write
 *            and per thread (integers in ps so that the ns figures keep a decimal). Each loop
 *            runs in CHUNKS chunks of a fiftieth of its count, timed with CLOCK_MONOTONIC; the
 *            figure is the fastest chunk's time per call, so that a chunk in which the
 *            program waited for a CPU (the machine is shared) does not count.
 *            With COND_ROUNDTRIPS: then that many round trips between the main thread and
 *            a partner thread over two condition variables (each side signals, then
 *            pthread_cond_wait's for the other's turn), and that many
 *            pthread_cond_timedwait calls with a deadline glibc refuses (tv_nsec of 1e9: EINVAL
 *            before any futex call, so the interposer's own cost shows):
 *            "cond_ps=N condcall_ps=N" too
 *        calls
 *            does nothing: a trivial process, for the start-to-exit time with and without
 *            the agent (its start-up and its end)
 *
 * Under libwallprof.so every one of these goes through the agent: pthread_sigmask publishes
 * the thread's new mask (sigmask.c), write is a transfer it finishes if its own signal cut it
 * short (transfers.c), pthread_create starts the child through a trampoline that publishes the
 * child's mask (threadstart.c), pthread_cond_wait and pthread_cond_timedwait publish the
 * condition and its mutex for the sampler (condwait.c). The calls go through the PLT, as a
 * program's do.
 *
 * The second write loop is the control for the first: a process with a second thread that
 * shares its descriptor table (the agent's wallprof-exit thread does) takes the kernel's slower
 * way to each descriptor (a reference taken and dropped per call), whoever's thread it is.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define CHUNKS 50

static uint64_t per_call_ps(uint64_t t0, uint64_t t1, long n)
{
	return n > 0 ? (t1 - t0) * 1000 / (uint64_t)n : 0;
}

/* The fastest of CHUNKS runs of `loop` over n / CHUNKS calls, in ps per call. */
static uint64_t fastest(void (*loop)(long, void *), long n, void *arg)
{
	uint64_t best = UINT64_MAX;
	long per = n / CHUNKS > 0 ? n / CHUNKS : 1;
	for (int c = 0; c < CHUNKS; c++) {
		uint64_t t0 = now_ns();
		loop(per, arg);
		uint64_t ps = per_call_ps(t0, now_ns(), per);
		if (ps < best)
			best = ps;
	}
	return best;
}

static void sigmask_loop(long n, void *arg)
{
	const sigset_t *set = arg;
	for (long i = 0; i < n; i++) {
		if (pthread_sigmask(SIG_BLOCK, set, NULL) != 0 ||
		    pthread_sigmask(SIG_UNBLOCK, set, NULL) != 0) {
			fprintf(stderr, "calls: pthread_sigmask failed\n");
			exit(1);
		}
	}
}

static uint64_t time_sigmask(long n)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	return fastest(sigmask_loop, n, &set);
}

static void write_loop(long n, void *arg)
{
	static const char buf[64];
	int fd = *(int *)arg;
	for (long i = 0; i < n; i++) {
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			perror("calls: write");
			exit(1);
		}
	}
}

static uint64_t time_write(long n)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		perror("calls: /dev/null");
		exit(1);
	}
	uint64_t ps = fastest(write_loop, n, &fd);
	close(fd);
	return ps;
}

static void *empty(void *arg)
{
	return arg;
}

static void threads_loop(long n, void *arg)
{
	(void)arg;
	for (long i = 0; i < n; i++) {
		pthread_t t;
		int err = pthread_create(&t, NULL, empty, NULL);
		if (err == 0)
			err = pthread_join(t, NULL);
		if (err != 0) {
			fprintf(stderr, "calls: pthread_create/join: error %d\n", err);
			exit(1);
		}
	}
}

static uint64_t time_threads(long n)
{
	return fastest(threads_loop, n, NULL);
}

static void *idle(void *arg)
{
	for (;;)
		pause();
	return arg;
}

/* One more thread, idle until the process exits. */
static void start_idle_thread(void)
{
	pthread_t t;
	int err = pthread_create(&t, NULL, idle, NULL);
	if (err != 0) {
		fprintf(stderr, "calls: pthread_create: error %d\n", err);
		exit(1);
	}
}

/* Two threads taking turns: `turn` says whose. */
static pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rt_cond[2] = { PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER };
static int turn;	 /* 0: main's, 1: partner's */
static int partner_done; /* main says stop */

static void *partner(void *arg)
{
	pthread_mutex_lock(&rt_lock);
	for (;;) {
		while (turn != 1 && !partner_done)
			pthread_cond_wait(&rt_cond[1], &rt_lock);
		if (partner_done)
			break;
		turn = 0;
		pthread_cond_signal(&rt_cond[0]);
	}
	pthread_mutex_unlock(&rt_lock);
	return arg;
}

static void cond_loop(long n, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&rt_lock);
	for (long i = 0; i < n; i++) {
		turn = 1;
		pthread_cond_signal(&rt_cond[1]);
		while (turn != 0)
			pthread_cond_wait(&rt_cond[0], &rt_lock);
	}
	pthread_mutex_unlock(&rt_lock);
}

static uint64_t time_cond(long n)
{
	pthread_t t;
	int err = pthread_create(&t, NULL, partner, NULL);
	if (err != 0) {
		fprintf(stderr, "calls: pthread_create: error %d\n", err);
		exit(1);
	}
	uint64_t ps = fastest(cond_loop, n, NULL);
	pthread_mutex_lock(&rt_lock);
	partner_done = 1;
	pthread_cond_signal(&rt_cond[1]);
	pthread_mutex_unlock(&rt_lock);
	pthread_join(t, NULL);
	return ps;
}

static void condcall_loop(long n, void *arg)
{
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	const struct timespec *bad = arg;
	pthread_mutex_lock(&m);
	for (long i = 0; i < n; i++)
		if (pthread_cond_timedwait(&c, &m, bad) != EINVAL) {
			fprintf(stderr, "calls: pthread_cond_timedwait took a bad deadline\n");
			exit(1);
		}
	pthread_mutex_unlock(&m);
}

static uint64_t time_condcall(long n)
{
	struct timespec bad = { 1, 1000000000 }; /* tv_nsec out of range */
	return fastest(condcall_loop, n, &bad);
}

int main(int argc, char **argv)
{
	if (argc == 1)
		return 0;
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: calls [SIGMASK_PAIRS WRITES THREADS [COND_ROUNDTRIPS]]\n");
		return 2;
	}
	uint64_t sigmask = time_sigmask(atol(argv[1]));
	uint64_t wr = time_write(atol(argv[2]));
	uint64_t th = time_threads(atol(argv[3]));
	start_idle_thread();
	uint64_t wr_shared = time_write(atol(argv[2]));
	printf("calls: sigmask_ps=%llu write_ps=%llu thread_ps=%llu write_shared_ps=%llu",
	       (unsigned long long)sigmask, (unsigned long long)wr, (unsigned long long)th,
	       (unsigned long long)wr_shared);
	if (argc == 5) {
		uint64_t cond = time_cond(atol(argv[4]));
		uint64_t condcall = time_condcall(atol(argv[4]));
		printf(" cond_ps=%llu condcall_ps=%llu", (unsigned long long)cond,
		       (unsigned long long)condcall);
	}
	putchar('\n');
	return 0;
}
