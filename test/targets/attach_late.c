/* SPDX-License-Identifier: MIT */
/* Threads that start while wallprof is attached (test_attach.py): the main thread prints
 * "ready" and sleeps DELAY seconds (the time to attach), then starts two threads, late-1
 * and late-2, that each burn BURN seconds of CPU in their own function (late_burn_1,
 * late_burn_2), and joins them. Truth (WP_TRUTH): each late thread's tid and CPU time.
 *
 * Usage: attach_late [DELAY [BURN]] */
#include <string.h>
#include <sys/prctl.h>

#include "common.h"

static double burn_s = 1.0;
static volatile uint64_t sink;

KEEP static void burn(void)
{
	uint64_t start = thread_cpu_ns(), x = 1;
	while (thread_cpu_ns() - start < (uint64_t)(burn_s * 1e9))
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

KEEP static void late_burn_1(void)
{
	burn();
	BARRIER();
}

KEEP static void late_burn_2(void)
{
	burn();
	BARRIER();
}

static uint64_t cpu[2];
static pid_t tids[2];

static void *late(void *arg)
{
	int k = (int)(intptr_t)arg;
	char name[32];
	snprintf(name, sizeof(name), "late-%d", k + 1);
	prctl(PR_SET_NAME, name);
	tids[k] = (pid_t)syscall(SYS_gettid);
	if (k == 0)
		late_burn_1();
	else
		late_burn_2();
	cpu[k] = thread_cpu_ns();
	return NULL;
}

int main(int argc, char **argv)
{
	double delay = argc > 1 ? atof(argv[1]) : 1.0;
	burn_s = argc > 2 ? atof(argv[2]) : 1.0;
	truth_open();
	printf("ready\n");
	fflush(stdout);
	sleep_ns((uint64_t)(delay * 1e9));
	pthread_t t[2];
	for (int k = 0; k < 2; k++)
		pthread_create(&t[k], NULL, late, (void *)(intptr_t)k);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	for (int k = 0; k < 2; k++) {
		truth("tid.late-%d %d", k + 1, (int)tids[k]);
		truth("cpu.late-%d %llu", k + 1, (unsigned long long)cpu[k]);
	}
	truth_close();
	printf("done\n");
	return 0;
}
