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
 *   lazy_start deferred   forks, from main, children that do at once what a fork child's
 *                         sampler must survive before its first tick (a start once deferred
 *                         to that tick had to be made by each of these first): one
 *                         blocks every signal and burns 300 ms in masked_burn; one makes a
 *                         thread that burns 300 ms in thread_burn; one forks a grandchild
 *                         that burns 300 ms in grandchild_burn; one sleeps 60 ms across its
 *                         first tick (nothing of ours may cut the sleep short: exit 3
 *                         if it does) and burns 200 ms in sleeper_burn; one waits 60 ms in
 *                         a raw futex wait, which no interposer resumes (exit 4 unless it
 *                         timed out: nothing of the agent's may cut it short); and two that
 *                         _exit(0) at once
 *   lazy_start quick N    after 50 ms (its sampler runs), forks N children that _exit(0) at
 *                         once
 * Each burning process writes "pid PID ppid PPID cpu_ns N role ROLE" to $WP_TRUTH (appended
 * with O_APPEND: one write per line). */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
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

KEEP static void masked_burn(void)
{
	burn_for(300);
	BARRIER();
}

KEEP static void thread_burn(void)
{
	burn_for(300);
	BARRIER();
}

KEEP static void sleeper_burn(void)
{
	burn_for(200);
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

/* Forks n children one after another, child i running fn(i) (which never returns); the
 * count of those that failed or did not exit 0. */
static int fork_each(void (*fn)(int), int n)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0)
			fn(i);
		bad += p < 0 || !wait_ok(p);
	}
	return bad;
}

static int fork_some(int n)
{
	return fork_each(child, n);
}

static void *forker(void *arg)
{
	return (void *)(intptr_t)fork_some((int)(intptr_t)arg);
}

static void *thread_main(void *arg)
{
	thread_burn();
	return arg;
}

/* The children of `lazy_start deferred`, by number. */
static void deferred_child(int i)
{
	if (i == 0) {
		sigset_t all;
		sigfillset(&all);
		sigprocmask(SIG_BLOCK, &all, NULL);
		masked_burn();
		note("masked");
	} else if (i == 1) {
		pthread_t th;
		if (pthread_create(&th, NULL, thread_main, NULL) != 0 || pthread_join(th, NULL) != 0)
			exit(1);
		note("threaded");
	} else if (i == 2) {
		pid_t g = fork();
		if (g == 0)
			grandchild();
		if (!(g > 0 && wait_ok(g)))
			exit(1);
	} else if (i == 3) {
		uint64_t t0 = mono_ns();
		struct timespec ts = { 0, 60 * 1000000L };
		int rc = nanosleep(&ts, NULL);
		if (rc != 0 || mono_ns() - t0 < 60 * 1000000ull)
			exit(3);
		sleeper_burn();
		note("sleeper");
	} else if (i == 4) {
		static uint32_t word;
		struct timespec ts = { 0, 60 * 1000000L };
		long rc = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		if (!(rc == -1 && errno == ETIMEDOUT))
			exit(4);
	}
	exit(0);
}

static void quick_child(int i)
{
	(void)i;
	_exit(0);
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
	if (argc >= 2 && !strcmp(argv[1], "deferred")) {
		int bad = fork_each(deferred_child, 7); /* 5 and 6 _exit at once */
		printf("deferred: %d failed\n", bad);
		return bad ? 1 : 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "quick")) {
		/* a fork child takes over its parent sampler's thread state only once that
		 * sampler runs: a fork before it borrows a new one, at once */
		sleep_ns(50 * 1000000ull);
		return fork_each(quick_child, atoi(argv[2])) ? 1 : 0;
	}
	fprintf(stderr, "usage: lazy_start title | forks N | late MS | deferred | quick N\n");
	return 2;
}
