/* SPDX-License-Identifier: MIT */
/* A process that forks children which retitle themselves, as servers do, each burning CPU in a
 * function of its own so the report has samples of it:
 *
 *   retitle argv   the child sets itself up (80 ms of CPU, as a worker initializes before it
 *                  retitles), writes "retitle-worker: serving requests" over its argv area,
 *                  as nginx's and PostgreSQL's workers do (setproctitle: the title over
 *                  argv[0], NULs up to the end of the last argument), then burns 600 ms
 *   retitle comm   the same, but the child names itself with prctl(PR_SET_NAME,
 *                  "rt-named-worker")
 * The parent burns 100 ms, waits for the child and exits 0. The child prints what ps would now
 * show (its /proc/self/cmdline with NULs as spaces, and its comm) on stdout. */
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "common.h"

static volatile uint64_t sink;

KEEP static void burn(const char *who, double ms)
{
	(void)who;
	uint64_t until = thread_cpu_ns() + (uint64_t)(ms * 1e6);
	while (thread_cpu_ns() < until)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 2654435761u;
	BARRIER();
}

KEEP static void worker_burn(void)
{
	burn("worker", 600);
	BARRIER();
}

KEEP static void worker_init(void)
{
	burn("init", 80);
	BARRIER();
}

KEEP static void parent_burn(void)
{
	burn("parent", 100);
	BARRIER();
}

/* Over the whole argv area (argv[0] to the end of the last argument), as setproctitle does. */
static void set_title(int argc, char **argv, const char *title)
{
	char *start = argv[0], *end = argv[argc - 1] + strlen(argv[argc - 1]);
	size_t room = (size_t)(end - start);
	size_t n = strlen(title);
	if (n > room)
		n = room;
	memcpy(start, title, n);
	memset(start + n, 0, room - n + 1);
}

static void show_title(void)
{
	char buf[512];
	FILE *f = fopen("/proc/self/cmdline", "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	for (size_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	while (n && buf[n - 1] == ' ')
		n--;
	buf[n] = 0;
	char comm[17] = { 0 };
	prctl(PR_GET_NAME, comm, 0, 0, 0);
	printf("child title: %s\nchild comm: %s\n", buf, comm);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "argv") && strcmp(mode, "comm")) {
		fprintf(stderr, "usage: retitle argv|comm\n");
		return 2;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		worker_init();
		if (!strcmp(mode, "argv"))
			set_title(argc, argv, "retitle-worker: serving requests");
		else
			prctl(PR_SET_NAME, "rt-named-worker", 0, 0, 0);
		show_title();
		worker_burn();
		_exit(0);
	}
	parent_burn();
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
