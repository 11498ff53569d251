/* SPDX-License-Identifier: MIT */
/* Processes whose last thread is not main: glibc ends the process with exit(0) when the last
 * thread it counts ends, whichever it is. One mode per argv[1]:
 *   main-exit SECS     main starts 3 workers that burn SECS each, then calls pthread_exit;
 *                      the last worker to end ends the process (status 0, atexit handlers run)
 *   main-exit-now SECS as main-exit, but main leaves at once (often before the agent's thread
 *                      has set itself up)
 *   main-alone [SECS]  no other thread: main burns SECS (1) and calls pthread_exit, which
 *                      ends the process
 *   main-exit-term     as main-exit with workers that burn until killed (the test sends
 *                      SIGTERM; the process must die of it)
 *   term-blocked SECS  2 workers block SIGTERM, then main calls pthread_exit; the test sends
 *                      SIGTERM once main has ended: no thread takes it, it stays pending, and
 *                      the last worker's exit(0) ends the process with status 0
 *   fork-helpers SECS  a worker forks; in the child that thread (now the child's only one)
 *                      starts 2 helpers that burn SECS and returns from its start routine
 *                      before them (CPython's test_threading: fork from a thread); the parent
 *                      waits for the child and exits 0 when it ended with status 0
 *   fork-alone         a worker forks; in the child that thread returns from its start
 *                      routine, leaving no thread at all
 *   fork-early         a thread forks as soon as main starts; the child walks the loaded
 *                      modules (dl_iterate_phdr, the loader's lock) and ends: a fork that
 *                      caught an agent thread inside the loader would hang it
 *   api-main-exit SECS as main-exit, profiled through the API (wallprof_start in main)
 * Every line printed says what happened, so the output compares with an unprofiled run. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static double secs = 1.0;

static double now_s(void)
{
	return (double)mono_ns() * 1e-9;
}

/* Each burner has its own constant: identical bodies would be folded into one function. */
#define BURNER(name, k)                                            \
	KEEP static double name(double s)                          \
	{                                                          \
		double t0 = now_s(), x = 1;                        \
		while (now_s() - t0 < s)                           \
			for (int i = 0; i < 10000; i++)            \
				x = x * 1.0000001 + k;             \
		BARRIER();                                         \
		return x;                                          \
	}
BURNER(burn_in_main, 0.1)
BURNER(burn_in_worker, 0.2)
BURNER(burn_in_helper, 0.3)
BURNER(burn_until_killed, 0.4)

static volatile double sink;

static void said_goodbye(void)
{
	printf("atexit handler ran\n");
}

static void *worker(void *arg)
{
	sink += burn_in_worker(secs);
	printf("worker %d done\n", (int)(long)arg);
	return NULL;
}

static void *endless(void *arg)
{
	sink += burn_until_killed(600);
	return arg;
}

static void start_threads(void *(*fn)(void *), int n)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, fn, (void *)(long)i) != 0) {
			perror("pthread_create");
			exit(2);
		}
		pthread_detach(t);
	}
}

static sem_t blocked;

static void *blocking_worker(void *arg)
{
	sigset_t term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	sem_post(&blocked);
	return worker(arg);
}

static void *helper(void *arg)
{
	sink += burn_in_helper(secs);
	printf("child helper %d done\n", (int)(long)arg);
	return NULL;
}

/* A worker that forks. In the child it is the only thread: it starts `helpers` helpers and
 * returns from its start routine (no pthread_exit) before they end. */
static void *forker(void *arg)
{
	int helpers = (int)(long)arg;
	pid_t c = fork();
	if (c < 0) {
		perror("fork");
		exit(2);
	}
	if (c == 0) {
		start_threads(helper, helpers);
		printf("child thread leaves\n");
		return NULL;
	}
	int st;
	if (waitpid(c, &st, 0) != c) {
		perror("waitpid");
		exit(2);
	}
	printf("child status %s %d\n", WIFEXITED(st) ? "exit" : "signal",
	       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return (void *)(long)(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int count_module(struct dl_phdr_info *info, size_t size, void *n)
{
	(void)info;
	(void)size;
	++*(int *)n;
	return 0;
}

static void *early_forker(void *arg)
{
	pid_t c = fork();
	if (c == 0) {
		int n = 0;
		dl_iterate_phdr(count_module, &n);
		_exit(n > 0 ? 0 : 3);
	}
	int st;
	waitpid(c, &st, 0);
	return (void *)(long)(c > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int fork_from_thread(int helpers)
{
	pthread_t t;
	void *ok;
	if (pthread_create(&t, NULL, forker, (void *)(long)helpers) != 0 || pthread_join(t, &ok))
		return 2;
	return ok ? 0 : 1;
}

/* Profiling through the API: libwallprof is loaded by the test's LD_PRELOAD with
 * WALLPROF_AUTOSTART=0, so this program needs no link to it. */
static void api_start(void)
{
	int (*start)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "wallprof_start");
	if (!start || start(NULL) != 0) {
		printf("wallprof_start failed\n");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (argc > 2)
		secs = atof(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	atexit(said_goodbye);
	if (!strcmp(m, "main-exit") || !strcmp(m, "api-main-exit") || !strcmp(m, "main-exit-now")) {
		if (!strcmp(m, "api-main-exit"))
			api_start();
		if (strcmp(m, "main-exit-now"))
			sink += burn_in_main(0.2);
		start_threads(worker, 3);
		printf("main leaves\n");
		pthread_exit(NULL);
	} else if (!strcmp(m, "main-alone")) {
		sink += burn_in_main(secs);
		printf("main leaves\n");
		pthread_exit(NULL);
	} else if (!strcmp(m, "main-exit-term")) {
		start_threads(endless, 2);
		printf("ready\n");
		pthread_exit(NULL);
	} else if (!strcmp(m, "term-blocked")) {
		sem_init(&blocked, 0, 0);
		start_threads(blocking_worker, 2);
		for (int i = 0; i < 2; i++)
			while (sem_wait(&blocked) != 0)
				;
		printf("ready\n");
		pthread_exit(NULL);
	} else if (!strcmp(m, "fork-helpers")) {
		return fork_from_thread(2);
	} else if (!strcmp(m, "fork-alone")) {
		return fork_from_thread(0);
	} else if (!strcmp(m, "fork-early")) {
		pthread_t t;
		void *ok;
		if (pthread_create(&t, NULL, early_forker, NULL) != 0 || pthread_join(t, &ok))
			return 2;
		printf("child %s\n", ok ? "ok" : "failed");
		return ok ? 0 : 1;
	}
	fprintf(stderr, "usage: last_thread MODE [SECS]\n");
	return 2;
}
