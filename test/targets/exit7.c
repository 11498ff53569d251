/* exit7: prints a few lines, including how many threads the process has (1 unless something
 * started a thread in it, such as the profiler's sampler), and exits with status 7. The
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
	printf("exit7: bye\n");
	return 7;
}
