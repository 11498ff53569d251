/* SPDX-License-Identifier: MIT */
/* solo: a program that must be single-threaded, as sandboxes are (issue 18): it counts its
 * threads (/proc/self/task and "Threads:" in /proc/self/status), enters a new user namespace
 * (unshare(CLONE_NEWUSER) needs a single-threaded process), and does the same in a fork child
 * in its first moments; then each burns CPU in a function of its own, so a profiler has
 * something to show. Every line it prints says what it saw, to compare with an unprofiled run.
 *   solo [SECS]   burn SECS (0.5) in each process */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static int tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static int status_threads(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Threads:", 8))
			n = atoi(line + 8);
	if (f)
		fclose(f);
	return n;
}

static void report(const char *who)
{
	int t = tasks(), s = status_threads();
	int r = unshare(CLONE_NEWUSER);
	printf("%s: tasks %d, Threads: %d, unshare(CLONE_NEWUSER) %s\n", who, t, s,
	       r == 0 ? "ok" : strerror(errno));
}

#define BURNER(name, k)                                            \
	KEEP static double name(double s)                          \
	{                                                          \
		uint64_t t0 = mono_ns();                           \
		double x = 1;                                      \
		while ((double)(mono_ns() - t0) < s * 1e9)         \
			for (int i = 0; i < 10000; i++)            \
				x = x * 1.0000001 + k;             \
		BARRIER();                                         \
		return x;                                          \
	}
BURNER(solo_parent_burn, 0.1)
BURNER(solo_child_burn, 0.2)

static volatile double sink;

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0.5;
	setvbuf(stdout, NULL, _IONBF, 0);
	report("parent");
	pid_t c = fork();
	if (c == 0) {
		report("child");
		sink += solo_child_burn(secs);
		exit(0);
	}
	int st = 0;
	waitpid(c, &st, 0);
	printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	sink += solo_parent_burn(secs);
	return 0;
}
