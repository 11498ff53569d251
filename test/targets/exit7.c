/* SPDX-License-Identifier: MIT */
/* exit7: prints a few lines, including how many threads the process has (1 unless something
 * started a thread in it) and how many of its children are named "wallprof" (the agent's
 * sampler is a task of its own, a child of the process), and exits with status 7. The
 * bad-settings test compares its output with and without the agent. With --busy it first
 * spends 300 ms of CPU (so that a profiler has something to sample). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int count_samplers(void)
{
	char buf[4096], path[64], comm[32];
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.20s/children", e->d_name);
		FILE *c = fopen(path, "r");
		if (!c)
			continue;
		size_t len = fread(buf, 1, sizeof(buf) - 1, c);
		fclose(c);
		buf[len] = 0;
		for (char *kid = strtok(buf, " \n"); kid; kid = strtok(NULL, " \n")) {
			snprintf(path, sizeof(path), "/proc/%.20s/comm", kid);
			FILE *k = fopen(path, "r");
			if (k && fgets(comm, sizeof(comm), k) && !strcmp(comm, "wallprof\n"))
				n++;
			if (k)
				fclose(k);
		}
	}
	if (d)
		closedir(d);
	return n;
}

static void busy(void)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (volatile int i = 0; i < 100000; i++)
			;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 300000000L);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--busy"))
		busy();
	printf("exit7: hello\n");
	for (int i = 1; i < argc; i++)
		printf("arg %d: %s\n", i, argv[i]);
	printf("threads %d\n", count_threads());
	printf("samplers %d\n", count_samplers());
	printf("exit7: bye\n");
	return 7;
}
