/* SPDX-License-Identifier: MIT */
/* dstate: threads in the states a dump must name besides running and blocked.
 *
 *   vforker  clone(CLONE_VM | CLONE_VFORK), as posix_spawn does: until its child exits the
 *            parent thread sleeps in the kernel, killable only, which /proc shows as D
 *            (vfork_wait); the child, on a stack of its own, sleeps SECONDS and exits
 *   napper   nanosleep, 50 ms at a time (S)
 *   main     joins both (S)
 * The test stops the whole process with SIGSTOP to see T. Prints "dstate: ready" once the
 * vfork child runs, and exits 0 when the child has ended.
 *
 * Usage: dstate [SECONDS] (default 3) */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static double seconds;
static volatile int done;

static int child(void *arg)
{
	(void)arg;
	/* shares the parent's memory: only system calls, no library state touched */
	struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	syscall(SYS_nanosleep, &ts, NULL);
	syscall(SYS_exit, 0);
	return 0;
}

static void *vforker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "vforker");
	size_t len = 64 << 10;
	char *stack = malloc(len);
	if (!stack)
		abort();
	printf("dstate: ready\n");
	fflush(stdout);
	pid_t pid = clone(child, stack + len, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	free(stack);
	done = 1;
	return NULL;
}

static void *napper(void *arg)
{
	(void)arg;
	while (!done)
		sleep_ns(50 * 1000000ull);
	return NULL;
}

int main(int argc, char **argv)
{
	seconds = run_seconds(argc, argv, 3.0);
	pthread_t v, n;
	if (pthread_create(&n, NULL, napper, NULL))
		return 1;
	/* named before "ready" is printed (the thread may not have run yet) */
	pthread_setname_np(n, "napper");
	if (pthread_create(&v, NULL, vforker, NULL))
		return 1;
	pthread_join(v, NULL);
	pthread_join(n, NULL);
	return 0;
}
