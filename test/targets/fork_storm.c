/* SPDX-License-Identifier: MIT */
/* fork_storm: forks that land while the sampler is mid-tick, with many busy threads, and
 * children that are sampled at once (issue 18 point 4, issue 19: a fork waits for no tick;
 * the child abandons the tables the parent's sampler was changing and builds its own).
 *
 *   BUSY threads  spin in storm_spin() until the end (the sampler has running threads to
 *                 signal and unwind at every tick, so most forks land inside a tick)
 *   main          after WARM ms, forks FORKS times, one fork at a time: every EVERY-th
 *                 child computes in child_work() for CHILD_MS of its own CPU time, at once,
 *                 then exits 0 (by exit, or by _exit every other time); the other children
 *                 _exit(0) at once; main reaps each child before the next fork
 *
 * The truth: a working child prints "child PID cpu_ns=N wall_ns=N" (its CPU and wall time in
 * child_work, its own clocks) with one write(); main prints "forks N failed N" at the end,
 * failed counting children that did not exit 0.
 *
 * Usage: fork_storm [BUSY [FORKS [EVERY [CHILD_MS [WARM]]]]]   (default 6 200 10 100 200) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static volatile int stop;
static volatile uint64_t sink;

static KEEP void storm_spin(void)
{
	uint64_t x = 1;
	while (!stop)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

static void *busy(void *arg)
{
	(void)arg;
	storm_spin();
	return NULL;
}

/* CPU work until the thread's own clock has advanced by `ns`. */
static KEEP void child_work(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns, x = 7;
	while (thread_cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ull + 1;
	sink = x;
}

static void child(int n, uint64_t work_ns)
{
	if (!work_ns)
		_exit(0);
	uint64_t c0 = thread_cpu_ns(), w0 = mono_ns();
	child_work(work_ns);
	uint64_t c1 = thread_cpu_ns(), w1 = mono_ns();
	char line[128];
	int len = snprintf(line, sizeof(line), "child %d cpu_ns=%llu wall_ns=%llu\n", (int)getpid(),
			   (unsigned long long)(c1 - c0), (unsigned long long)(w1 - w0));
	if (write(1, line, (size_t)len) != len)
		_exit(5);
	if (n % 2)
		_exit(0);
	exit(0);
}

int main(int argc, char **argv)
{
	int nbusy = argc > 1 ? atoi(argv[1]) : 6;
	int forks = argc > 2 ? atoi(argv[2]) : 200;
	int every = argc > 3 ? atoi(argv[3]) : 10;
	int child_ms = argc > 4 ? atoi(argv[4]) : 100;
	int warm_ms = argc > 5 ? atoi(argv[5]) : 200;
	if (nbusy < 0 || nbusy > 64 || forks < 1 || every < 1 || child_ms < 0 || warm_ms < 0) {
		fprintf(stderr, "usage: fork_storm [BUSY [FORKS [EVERY [CHILD_MS [WARM]]]]]\n");
		return 2;
	}
	pthread_t th[64];
	for (int i = 0; i < nbusy; i++)
		if (pthread_create(&th[i], NULL, busy, NULL) != 0)
			return 3;
	sleep_ns((uint64_t)warm_ms * 1000000ull);
	int failed = 0;
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 4;
		if (pid == 0)
			child(i / every, i % every ? 0 : (uint64_t)child_ms * 1000000ull);
		int st = 0;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	stop = 1;
	for (int i = 0; i < nbusy; i++)
		pthread_join(th[i], NULL);
	printf("forks %d failed %d\n", forks, failed);
	return failed ? 1 : 0;
}
