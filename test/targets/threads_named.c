/* SPDX-License-Identifier: MIT */
/* threads_named: four named threads doing four different things, while main joins them.
 *
 *   spinner  spin_fn: a CPU loop
 *   sleeper  sleep_fn: nanosleep(5 ms) in a loop
 *   holder   hold_fn: holds `lock` while sleeping 100 ms, lets go for ~1 ms, again
 *   waiter   wait_fn: pthread_mutex_lock(&lock) — blocked behind holder nearly all the time
 *
 * With a second argument N, N more CPU-bound threads named "hog" (hog_fn) oversubscribe the
 * CPUs, so that runnable threads wait for a CPU too.
 *
 * Usage: threads_named [SECONDS [HOGS]] (default 3 0). WP_TRUTH=FILE receives, per thread,
 *   tid.NAME N       cpu_ns.NAME N       loops.NAME N
 * and tid.main, cpu_ns.main. Every thread stops by itself at the deadline; main only joins. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

static uint64_t deadline; /* CLOCK_MONOTONIC: every thread stops by itself then */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t ready;

struct thr {
	const char *name;
	void *(*fn)(void *);
	pthread_t handle;
	pid_t tid;
	uint64_t cpu_ns, loops;
	uint64_t lock_wall_ns, sleep_wall_ns; /* waiter: wall time blocked in lock / in nanosleep */
};

static volatile uint64_t sink;

static int done(void)
{
	return mono_ns() >= deadline;
}

static void begin(struct thr *t)
{
	t->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), t->name);
	pthread_barrier_wait(&ready);
}

static void end(struct thr *t)
{
	t->cpu_ns = thread_cpu_ns();
}

KEEP static void *spin_fn(void *arg)
{
	struct thr *t = arg;
	begin(t);
	uint64_t x = 1;
	while (!done()) {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + (uint64_t)i;
		t->loops++;
	}
	sink = x;
	end(t);
	return NULL;
}

KEEP static void *hog_fn(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg;
	pthread_setname_np(pthread_self(), "hog");
	pthread_barrier_wait(&ready);
	while (!done()) {
		for (int i = 0; i < 100000; i++)
			x = x * 2862933555777941757ull + (uint64_t)i;
	}
	sink = x;
	return NULL;
}

KEEP static void *sleep_fn(void *arg)
{
	struct thr *t = arg;
	begin(t);
	while (!done()) {
		struct timespec ts = { 0, 5000000 };
		nanosleep(&ts, NULL);
		BARRIER();
		t->loops++;
	}
	end(t);
	return NULL;
}

KEEP static void *hold_fn(void *arg)
{
	struct thr *t = arg;
	begin(t);
	while (!done()) {
		pthread_mutex_lock(&lock);
		struct timespec ts = { 0, 100000000 };
		nanosleep(&ts, NULL);
		BARRIER();
		pthread_mutex_unlock(&lock);
		ts.tv_nsec = 1000000;
		nanosleep(&ts, NULL);
		BARRIER();
		t->loops++;
	}
	end(t);
	return NULL;
}

KEEP static void *wait_fn(void *arg)
{
	struct thr *t = arg;
	begin(t);
	while (!done()) {
		uint64_t t0 = mono_ns();
		pthread_mutex_lock(&lock);
		uint64_t t1 = mono_ns();
		BARRIER();
		pthread_mutex_unlock(&lock);
		t->loops++;
		/* leave the holder time to take it again, so that we block behind it */
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
		BARRIER();
		t->lock_wall_ns += t1 - t0;
		t->sleep_wall_ns += mono_ns() - t1;
	}
	end(t);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = run_seconds(argc, argv, 3.0);
	struct thr th[] = {
		{ .name = "spinner", .fn = spin_fn },
		{ .name = "sleeper", .fn = sleep_fn },
		{ .name = "holder", .fn = hold_fn },
		{ .name = "waiter", .fn = wait_fn },
	};
	enum { N = sizeof(th) / sizeof(th[0]), MAX_HOGS = 64 };
	int hogs = argc > 2 ? atoi(argv[2]) : 0;
	if (hogs < 0 || hogs > MAX_HOGS)
		hogs = MAX_HOGS;
	pthread_t hog[MAX_HOGS];
	truth_open();
	deadline = mono_ns() + (uint64_t)(seconds * 1e9);
	pthread_barrier_init(&ready, NULL, (unsigned)(N + hogs + 1));
	for (int i = 0; i < N; i++)
		if (pthread_create(&th[i].handle, NULL, th[i].fn, &th[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < hogs; i++)
		if (pthread_create(&hog[i], NULL, hog_fn, (void *)(uintptr_t)(i + 1)) != 0) {
			perror("pthread_create");
			return 1;
		}
	pthread_barrier_wait(&ready);

	/* main joins at once: blocked in pthread_join for the whole run */
	for (int i = 0; i < N; i++)
		pthread_join(th[i].handle, NULL);
	for (int i = 0; i < hogs; i++)
		pthread_join(hog[i], NULL);

	truth("tid.main %d", (int)getpid());
	truth("cpu_ns.main %llu", (unsigned long long)thread_cpu_ns());
	for (int i = 0; i < N; i++) {
		truth("tid.%s %d", th[i].name, (int)th[i].tid);
		truth("cpu_ns.%s %llu", th[i].name, (unsigned long long)th[i].cpu_ns);
		truth("loops.%s %llu", th[i].name, (unsigned long long)th[i].loops);
		if (th[i].fn == wait_fn) {
			truth("lock_wall_ns.%s %llu", th[i].name, (unsigned long long)th[i].lock_wall_ns);
			truth("sleep_wall_ns.%s %llu", th[i].name,
			      (unsigned long long)th[i].sleep_wall_ns);
		}
	}
	truth_close();
	printf("threads_named: done\n");
	return 0;
}
