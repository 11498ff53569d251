/* SPDX-License-Identifier: MIT */
/* The sampler's lazy start (issue 19): what a process does before its first tick.
 *
 *   lazy_start title      writes "lazy-start: retitled" over its argv area (setproctitle:
 *                         the title from argv[0], NULs to the end of the last argument) and
 *                         exits 0 at once: its command is read from memory at its end
 *   lazy_start forks N    forks N children one after another from main, and N from a second
 *                         thread; the even ones _exit(0) at once (no tick: their line in the
 *                         run's list), the odd ones burn 150 ms of CPU in child_burn and
 *                         fork a grandchild that burns 100 ms in grandchild_burn (sampling
 *                         at once, on the thread state their parent's sampler used)
 *   lazy_start late MS    sleeps MS ms, then burns 300 ms in late_burn (a first sample that
 *                         comes late)
 * Each burning process writes "pid PID ppid PPID cpu_ns N role ROLE" to $WP_TRUTH (appended
 * with O_APPEND: one write per line). */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>

#include "common.h"

static volatile uint64_t sink;

static void burn_for(double ms)
{
	uint64_t until = thread_cpu_ns() + (uint64_t)(ms * 1e6);
	while (thread_cpu_ns() < until)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 2654435761u;
}

static void note(const char *role)
{
	const char *p = getenv("WP_TRUTH");
	if (!p || !*p)
		return;
	char line[160];
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	int n = snprintf(line, sizeof(line), "pid %d ppid %d cpu_ns %llu role %s\n", (int)getpid(),
			 (int)getppid(), (unsigned long long)ts_ns(&ts), role);
	int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, line, (size_t)n) != n)
		exit(3);
	close(fd);
}

KEEP static void child_burn(void)
{
	burn_for(150);
	BARRIER();
}

KEEP static void grandchild_burn(void)
{
	burn_for(100);
	BARRIER();
}

KEEP static void late_burn(void)
{
	burn_for(300);
	BARRIER();
}

static int wait_ok(pid_t pid)
{
	int st;
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void grandchild(void)
{
	grandchild_burn();
	note("grandchild");
	exit(0);
}

static void child(int i)
{
	if (i % 2 == 0)
		_exit(0);
	child_burn();
	pid_t g = fork();
	if (g == 0)
		grandchild();
	int ok = g > 0 && wait_ok(g);
	note("child");
	exit(ok ? 0 : 1);
}

static int fork_some(int n)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0)
			child(i);
		bad += p < 0 || !wait_ok(p);
	}
	return bad;
}

static void *forker(void *arg)
{
	return (void *)(intptr_t)fork_some((int)(intptr_t)arg);
}

static int title(int argc, char **argv)
{
	char *end = argv[argc - 1] + strlen(argv[argc - 1]);
	size_t room = (size_t)(end - argv[0]);
	memset(argv[0], 0, room);
	snprintf(argv[0], room, "lazy-start: retitled");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "title"))
		return title(argc, argv);
	if (argc >= 3 && !strcmp(argv[1], "forks")) {
		int n = atoi(argv[2]);
		pthread_t th;
		if (pthread_create(&th, NULL, forker, (void *)(intptr_t)n) != 0)
			return 2;
		int bad = fork_some(n);
		void *r;
		pthread_join(th, &r);
		bad += (int)(intptr_t)r;
		printf("forks: %d failed\n", bad);
		return bad ? 1 : 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "late")) {
		sleep_ns((uint64_t)atoi(argv[2]) * 1000000ull);
		late_burn();
		note("late");
		return 0;
	}
	fprintf(stderr, "usage: lazy_start title | forks N | late MS\n");
	return 2;
}
