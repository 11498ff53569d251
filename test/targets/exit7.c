/* exit7: prints a few lines, including how many threads the process has (1 unless something
 * started a thread in it, such as the profiler's sampler), and exits with status 7. The
 * bad-settings test compares its output with and without the agent. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
	printf("exit7: hello\n");
	for (int i = 1; i < argc; i++)
		printf("arg %d: %s\n", i, argv[i]);
	printf("threads %d\n", count_threads());
	printf("exit7: bye\n");
	return 7;
}
