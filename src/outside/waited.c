/* SPDX-License-Identifier: MIT */
/* How long a thread has been blocked: waited.h says how and why. */
#include "waited.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/clock.h"
#include "snapshot.h"

#define MAX_CPUS 1024

static int64_t lag[MAX_CPUS]; /* CLOCK_MONOTONIC - the CPU's task clock, ns */
static unsigned char known[MAX_CPUS];

/* se.exec_start of a sched file's text, in ns; 0 when absent. "se.exec_start   :   123.456789"
 * (ms, six decimals: read as integers, no floating point rounding). */
static uint64_t exec_start(const char *text)
{
	const char *p = strstr(text, "se.exec_start");
	p = p ? strchr(p, ':') : NULL;
	if (!p)
		return 0;
	char *end;
	unsigned long long ms = strtoull(p + 1, &end, 10), frac = 0;
	int digits = 0;
	if (*end == '.')
		for (const char *d = end + 1; *d >= '0' && *d <= '9' && digits < 6; d++, digits++)
			frac = frac * 10 + (unsigned long long)(*d - '0');
	while (digits++ < 6)
		frac *= 10;
	return ms * 1000000ull + frac;
}

static ssize_t read_self(const char *name, char *buf, size_t cap)
{
	pid_t me = (pid_t)gettid();
	return wp_snap_read(getpid(), me, name, buf, cap);
}

int wp_waited_calibrate(void)
{
	cpu_set_t old, one;
	if (sched_getaffinity(0, sizeof(old), &old) != 0)
		return 0;
	int measured = 0;
	static char buf[8192];
	for (int cpu = 0; cpu < MAX_CPUS && cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &old))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0)
			continue;
		/* a short sleep: switched back in, this thread's exec_start is that moment
		 * (sched_yield would not do: alone on its CPU, it returns before updating it) */
		nanosleep(&(struct timespec){ 0, 1000 }, NULL);
		uint64_t now = wp_now_ns();
		if (sched_getcpu() != cpu || read_self("sched", buf, sizeof(buf)) <= 0)
			continue;
		uint64_t es = exec_start(buf);
		if (!es)
			continue;
		lag[cpu] = (int64_t)(now - es);
		known[cpu] = 1;
		measured++;
	}
	sched_setaffinity(0, sizeof(old), &old);
	return measured;
}

/* Field 39 of a stat line: the CPU it last ran on. */
static int last_cpu(const char *stat)
{
	const char *p = strrchr(stat, ')');
	for (int field = 2; p && field < 39; field++)
		p = strchr(p + 1, ' ');
	return p ? atoi(p + 1) : -1;
}

int wp_waited_ns(pid_t pid, pid_t tid, uint64_t now, uint64_t *ns)
{
	static char buf[8192];
	if (wp_snap_read(pid, tid, "stat", buf, sizeof(buf)) <= 0)
		return -1;
	int cpu = last_cpu(buf);
	if (cpu < 0 || cpu >= MAX_CPUS || !known[cpu])
		return -1;
	if (wp_snap_read(pid, tid, "sched", buf, sizeof(buf)) <= 0)
		return -1;
	uint64_t es = exec_start(buf);
	if (!es)
		return -1;
	int64_t since = (int64_t)es + lag[cpu];
	if (since <= 0 || (uint64_t)since > now)
		return -1;
	*ns = now - (uint64_t)since;
	return 0;
}
