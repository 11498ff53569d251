/* SPDX-License-Identifier: MIT */
/* floor: the cheapest possible "suspend a running thread" handshake, to compare wallprof's
 * suspension window with. A busy thread is interrupted SAMPLES times, at HZ per second, by
 * tgkill(SIGPROF) from a sampler thread; the handshake is three POSIX semaphores and no work:
 *
 *   sampler                          busy thread, in its SIGPROF handler
 *   tgkill                     --->  t_enter = now
 *   sem_wait(msg2)             <---  sem_post(msg2)
 *   (nothing to copy)                sem_wait(msg3)
 *   sem_post(msg3)             --->  t_exit = now
 *   sem_wait(msg4)             <---  sem_post(msg4), return
 *
 * The window measured is the one wallprof's META reports: handler entry to just before msg4
 * (window_p50_ns/window_p99_ns), here over every sample, exactly (sorted, not bucketed).
 *
 * Options: --split pins the busy thread to CPU 0 and the sampler to CPU 1, --same pins both
 * to CPU 0 (default: no pinning, the scheduler decides); --copy BYTES (for diagnosis, not
 * part of the floor) copies BYTES of the busy thread's stack with process_vm_readv inside the
 * window, as wallprof does.
 *
 * Usage: floor [SAMPLES [HZ [--split|--same] [--copy BYTES]]]    (default 10000 1000)
 * Prints: floor: n=N p50_ns=N p99_ns=N max_ns=N mean_ns=N
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static sem_t msg2, msg3, msg4;
static volatile uint64_t t_enter, t_exit;
static volatile uintptr_t busy_sp;
static volatile int stop;
static volatile pid_t busy_tid;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void handler(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	t_enter = now_ns();
	ucontext_t *uc = ucv;
	busy_sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	sem_post(&msg2);
	while (sem_wait(&msg3) != 0)
		;
	t_exit = now_ns();
	sem_post(&msg4);
	errno = saved;
	(void)sig;
	(void)si;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		perror("floor: sched_setaffinity");
}

static int busy_cpu = -1;

static void *busy(void *arg)
{
	if (busy_cpu >= 0)
		pin(busy_cpu);
	busy_tid = (pid_t)syscall(SYS_gettid);
	uint64_t x = 1;
	while (!stop) {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + (uint64_t)i;
		sink = x;
	}
	(void)arg;
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint8_t copy_buf[1 << 20];

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	long hz = argc > 2 ? atol(argv[2]) : 1000;
	size_t copy = 0;
	int sampler_cpu = -1, bad = 0;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--split")) {
			busy_cpu = 0;
			sampler_cpu = 1;
		} else if (!strcmp(argv[i], "--same")) {
			busy_cpu = sampler_cpu = 0;
		} else if (!strcmp(argv[i], "--copy") && i + 1 < argc) {
			copy = (size_t)atol(argv[++i]);
		} else {
			bad = 1;
		}
	}
	if (bad || n < 1 || hz < 1 || copy > sizeof(copy_buf)) {
		fprintf(stderr, "usage: floor [SAMPLES [HZ [--split|--same] [--copy BYTES]]]\n");
		return 2;
	}
	if (sampler_cpu >= 0)
		pin(sampler_cpu);
	sem_init(&msg2, 0, 0);
	sem_init(&msg3, 0, 0);
	sem_init(&msg4, 0, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);

	/* This (main) thread is the sampler: it keeps SIGPROF blocked. */
	sigset_t prof;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_t h;
	pthread_create(&h, NULL, busy, NULL);
	pthread_sigmask(SIG_BLOCK, &prof, NULL);
	while (!busy_tid)
		;

	uint64_t *w = malloc((size_t)n * sizeof(*w));
	pid_t pid = getpid();
	uint64_t interval = 1000000000ull / (uint64_t)hz, next = now_ns();
	for (long i = 0; i < n; i++) {
		next += interval;
		struct timespec ts = { (time_t)(next / 1000000000ull), (long)(next % 1000000000ull) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		syscall(SYS_tgkill, pid, busy_tid, SIGPROF);
		while (sem_wait(&msg2) != 0)
			;
		if (copy) {
			struct iovec l = { copy_buf, copy }, r = { (void *)busy_sp, copy };
			process_vm_readv(pid, &l, 1, &r, 1, 0);
		}
		sem_post(&msg3);
		while (sem_wait(&msg4) != 0)
			;
		w[i] = t_exit - t_enter;
		uint64_t now = now_ns();
		if (now > next + interval)
			next = now; /* fell behind: no burst */
	}
	stop = 1;
	pthread_join(h, NULL);
	uint64_t sum = 0;
	for (long i = 0; i < n; i++)
		sum += w[i];
	qsort(w, (size_t)n, sizeof(*w), cmp);
	printf("floor: n=%ld p50_ns=%llu p99_ns=%llu max_ns=%llu mean_ns=%llu\n", n,
	       (unsigned long long)w[n / 2], (unsigned long long)w[(long)(n * 0.99)],
	       (unsigned long long)w[n - 1], (unsigned long long)(sum / (uint64_t)n));
	free(w);
	return 0;
}
