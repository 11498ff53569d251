/* SPDX-License-Identifier: MIT */
/* report_threads: two named threads doing different things while main joins them, for the
 * text report's per-thread sections and --thread (test/e2e/test_report_threads.py).
 *
 *   cruncher  crunch_numbers: burns CPU for SECONDS x 0.8 of its CPU time
 *   sleeper   wait_for_input: nanosleep(10 ms) in a loop until cruncher is done
 *   main      pthread_join
 *
 * Usage: report_threads [SECONDS] (default 1). WP_TRUTH=FILE receives
 *   tid.main N    tid.cruncher N    tid.sleeper N    cpu_ns.cruncher N    cpu_ns.sleeper N */
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

static volatile double sink;
static volatile int finished;
static pthread_barrier_t ready;

struct thr {
	const char *name;
	pid_t tid;
	uint64_t cpu_ns;
	double seconds;
};

static void begin(struct thr *t)
{
	t->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), t->name);
	pthread_barrier_wait(&ready);
}

KEEP static void crunch_numbers(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;
	double x = sink;
	do { for (int i = 0; i < 200000; i++) x = x * 1.0000001 + 0.5; } while (thread_cpu_ns() < end);
	sink = x;
}

KEEP static void *cruncher(void *arg)
{
	struct thr *t = arg;
	begin(t);
	crunch_numbers((uint64_t)(t->seconds * 0.8e9));
	finished = 1;
	t->cpu_ns = thread_cpu_ns();
	return NULL;
}

KEEP static void wait_for_input(void)
{
	while (!finished)
		sleep_ns(10000000);
	BARRIER();
}

KEEP static void *sleeper(void *arg)
{
	struct thr *t = arg;
	begin(t);
	wait_for_input();
	t->cpu_ns = thread_cpu_ns();
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = run_seconds(argc, argv, 1.0);
	struct thr c = { "cruncher", 0, 0, seconds }, s = { "sleeper", 0, 0, seconds };
	pthread_t tc, ts;
	truth_open();
	pthread_barrier_init(&ready, NULL, 3);
	if (pthread_create(&tc, NULL, cruncher, &c) || pthread_create(&ts, NULL, sleeper, &s)) {
		perror("pthread_create");
		return 3;
	}
	pthread_barrier_wait(&ready);
	pthread_join(tc, NULL);
	pthread_join(ts, NULL);
	truth("tid.main %d", (int)getpid());
	truth("tid.cruncher %d", (int)c.tid);
	truth("tid.sleeper %d", (int)s.tid);
	truth("cpu_ns.cruncher %llu", (unsigned long long)c.cpu_ns);
	truth("cpu_ns.sleeper %llu", (unsigned long long)s.cpu_ns);
	truth_close();
	return 0;
}
