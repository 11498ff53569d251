/* SPDX-License-Identifier: MIT */
/* cpuwait: threads oversubscribing the CPUs, each measuring how long it waited for a CPU
 * (issue 13's "cpu" kind).
 *
 *   pinned (default): four threads pinned to one CPU (the first the process may use), so
 *     that they queue for it whatever else the machine does: spin-a and spin-b (nice 0),
 *     spin-n5 (nice 5: a smaller share of the CPU, a longer wait), and half (nice 0) that
 *     spins 3 ms then sleeps 3 ms, so that part of its time is a sleep, not a wait;
 *   unpinned: 2 x CPUs + 1 spinning threads (spin-1...), not pinned;
 *   duty: one plain thread, duty, not pinned, that computes 100 ms and sleeps 100 ms in
 *     turn: on a machine that is not full it hardly waits for a CPU, and its sleep is a
 *     sleep.
 *
 * Each thread reads its own /proc/thread-self/schedstat (field 2: ns runnable on a runqueue)
 * and the monotonic clock once all are in place and again at the end, and reports
 * "wait.NAME PERCENT" (the runqueue time's share of that wall time) and "tid.NAME TID";
 * duty also "sleep.duty PERCENT": the time in its sleeps less the runqueue time they added
 * (its wake-ups' wait for a CPU), of that wall time.
 *
 * Usage: cpuwait [SECONDS] [pinned|unpinned|duty] (default 3, pinned). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

#define MAX_THREADS 64

struct thr {
	char name[16];
	int nice;
	int half; /* spin 3 ms, sleep 3 ms (duty: 100 ms each) */
	pthread_t handle;
	pid_t tid;
	double wait_pct;
	double sleep_pct; /* duty: time in its sleeps less their runqueue time, of the wall time */
};

static struct thr thrs[MAX_THREADS];
static int nthr, pinned = 1, duty, cpu0 = -1;
static uint64_t run_ns;
static pthread_barrier_t ready;
static volatile uint64_t sink;

static uint64_t run_delay_ns(void)
{
	char buf[128] = "";
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	unsigned long long exec = 0, delay = 0;
	if (sscanf(buf, "%llu %llu", &exec, &delay) != 2)
		return 0;
	return delay;
}

static KEEP void spin_until(uint64_t until)
{
	uint64_t x = 1;
	while (mono_ns() < until)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

static KEEP void *worker(void *arg)
{
	struct thr *t = arg;
	t->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), t->name);
	if (pinned) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu0, &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0)
			perror("sched_setaffinity");
	}
	if (t->nice && setpriority(PRIO_PROCESS, (id_t)t->tid, t->nice) != 0)
		perror("setpriority");
	pthread_barrier_wait(&ready);
	uint64_t d0 = run_delay_ns(), w0 = mono_ns(), end = w0 + run_ns;
	uint64_t asleep = 0;
	if (t->half) {
		uint64_t ns = duty ? 100000000 : 3000000;
		while (mono_ns() < end) {
			spin_until(mono_ns() + ns);
			/* duty: its sleep as the kernel saw it, without the wait for a CPU after the
			 * wake-up (schedstat counts that in run_delay) */
			uint64_t s0 = duty ? mono_ns() : 0, q0 = duty ? run_delay_ns() : 0;
			sleep_ns(ns);
			if (duty) {
				uint64_t q1 = run_delay_ns(), s1 = mono_ns();
				asleep += (s1 - s0) - (q1 - q0 < s1 - s0 ? q1 - q0 : s1 - s0);
			}
		}
	} else {
		spin_until(end);
	}
	uint64_t d1 = run_delay_ns(), w1 = mono_ns();
	t->wait_pct = 100.0 * (double)(d1 - d0) / (double)(w1 - w0);
	t->sleep_pct = 100.0 * (double)asleep / (double)(w1 - w0);
	return NULL;
}

static void add(const char *name, int nice, int half)
{
	struct thr *t = &thrs[nthr++];
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->nice = nice;
	t->half = half;
}

int main(int argc, char **argv)
{
	run_ns = (uint64_t)(run_seconds(argc, argv, 3.0) * 1e9);
	duty = argc > 2 && !strcmp(argv[2], "duty");
	pinned = !(argc > 2 && (!strcmp(argv[2], "unpinned") || duty));
	truth_open();
	cpu_set_t allowed;
	CPU_ZERO(&allowed);
	sched_getaffinity(0, sizeof(allowed), &allowed);
	for (int c = 0; c < CPU_SETSIZE && cpu0 < 0; c++)
		if (CPU_ISSET(c, &allowed))
			cpu0 = c;
	if (duty) {
		add("duty", 0, 1);
	} else if (pinned) {
		add("spin-a", 0, 0);
		add("spin-b", 0, 0);
		add("spin-n5", 5, 0);
		add("half", 0, 1);
	} else {
		long n = 2 * CPU_COUNT(&allowed) + 1;
		for (long i = 0; i < n && nthr < MAX_THREADS; i++) {
			char name[16];
			snprintf(name, sizeof(name), "spin-%ld", i + 1);
			add(name, 0, 0);
		}
	}
	pthread_barrier_init(&ready, NULL, (unsigned)nthr);
	for (int i = 0; i < nthr; i++)
		pthread_create(&thrs[i].handle, NULL, worker, &thrs[i]);
	for (int i = 0; i < nthr; i++)
		pthread_join(thrs[i].handle, NULL);
	for (int i = 0; i < nthr; i++) {
		truth("tid.%s %d", thrs[i].name, (int)thrs[i].tid);
		truth("wait.%s %.2f", thrs[i].name, thrs[i].wait_pct);
		if (duty)
			truth("sleep.%s %.2f", thrs[i].name, thrs[i].sleep_pct);
	}
	truth_close();
	return 0;
}
