/* SPDX-License-Identifier: MIT */
/* After the program the command ran has ended: the samplers of its run still writing.
 *
 * A process of the run that was killed (SIGKILL: no exit hook runs) has its profile written
 * by its sampler's task after it died, and the report must wait for that or be short of that
 * process (test_tree's killed process: 4,351 samples reported of 4,650 in its files). Such a
 * task is named "wallprof" (its thread name), carries the run's id in its environment (the
 * memory it shares with the program it sampled, which it keeps) and, its program gone, has
 * been handed to another parent, one outside the run (or its parent is being killed). A task
 * whose program still runs (a daemon that outlives the root) has that program as its parent:
 * it is not waited for. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Whether /proc/PID/environ holds an entry starting with `entry`. 0 when it cannot be read
 * (gone, or not ours to read). */
static int env_has(pid_t pid, const char *entry)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t cap = 8192, len = 0;
	char *buf = malloc(cap);
	ssize_t n;
	while (buf && (n = read(fd, buf + len, cap - len)) > 0) {
		len += (size_t)n;
		if (len == cap) {
			char *more = realloc(buf, cap * 2);
			if (!more)
				break;
			buf = more;
			cap *= 2;
		}
	}
	close(fd);
	int found = 0;
	size_t want = strlen(entry);
	for (size_t i = 0; buf && i < len && !found;) {
		size_t elen = strnlen(buf + i, len - i);
		found = elen >= want && !memcmp(buf + i, entry, want);
		i += elen + 1;
	}
	free(buf);
	return found;
}

/* /proc/PID/NAME's first bytes, NUL-terminated: 1, or 0 when it cannot be read. */
static int read_proc(pid_t pid, const char *name, char *buf, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n > 0;
}

/* /proc/PID/comm is exactly `name`. */
static int comm_is(pid_t pid, const char *name)
{
	char buf[32];
	if (!read_proc(pid, "comm", buf, sizeof(buf)))
		return 0;
	buf[strcspn(buf, "\n")] = 0;
	return !strcmp(buf, name);
}

/* The parent in /proc/PID/stat (after the name's closing parenthesis), or -1. */
static pid_t parent_of(pid_t pid)
{
	char buf[512];
	int ppid;
	char *p = read_proc(pid, "stat", buf, sizeof(buf)) ? strrchr(buf, ')') : NULL;
	return p && sscanf(p + 1, " %*c %d", &ppid) == 1 ? ppid : -1;
}

/* Whether `pid` has a SIGKILL pending: sent, not yet acted on (on a loaded machine the killed
 * process may not run for milliseconds, and its sampler then still has it, alive, as its
 * parent; test_tree's killed-late run missed the killed process's profile once so, under the
 * suite's load). A parent already dead has no environment to read: env_has says that. */
static int killed(pid_t pid)
{
	char buf[4096];
	if (!read_proc(pid, "status", buf, sizeof(buf)))
		return 1; /* gone meanwhile */
	static const char *const keys[] = { "\nShdPnd:", "\nSigPnd:" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *k = strstr(buf, keys[i]);
		unsigned long long mask;
		if (k && sscanf(k + strlen(keys[i]), " %llx", &mask) == 1 &&
		    (mask >> (SIGKILL - 1)) & 1)
			return 1;
	}
	return 0;
}

/* How many samplers of the run whose program is gone, or going, still run. */
static int orphan_writers(const char *entry)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	int n = 0;
	pid_t self = getpid();
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self || !comm_is((pid_t)pid, "wallprof") ||
		    !env_has((pid_t)pid, entry))
			continue;
		pid_t parent = parent_of((pid_t)pid);
		if (parent >= 0 && (parent <= 1 || !env_has(parent, entry) || killed(parent)))
			n++;
	}
	closedir(d);
	return n;
}

void wp_wait_run_writers(long root_pid, double max_s)
{
	char entry[64];
	/* the run's id starts with its root's pid (wp_exec_under_agent) */
	snprintf(entry, sizeof(entry), "WALLPROF_RUN=%ld-", root_pid);
	struct timespec t0, now, pause = { 0, 5 * 1000000L };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (orphan_writers(entry) > 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 >= max_s)
			return;
		nanosleep(&pause, NULL);
	}
}
