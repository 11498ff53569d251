/* SPDX-License-Identifier: MIT */
/* late_start: fork children that end, exec, sleep, compute or block signals around their
 * first tick, for the agent's late start of a fork child's sampler (latestart.h). One child
 * at a time, each reaped before the next; the parent sleeps meanwhile.
 *
 *   quick      looks for processes of its own it did not make (the agent's task is one: a
 *              child of one of its threads, /proc/self/task/T/children), prints
 *              "quick PID tasks=N since_fork_ns=N" (when it had looked), _exit(0) at once
 *   late       the same after WAIT_MS of sleep: "late PID tasks=N"
 *   compute    computes CHILD_MS of its own CPU time in child_work at once, then checks its
 *              tasks: "compute PID cpu_ns=N wall_ns=N tasks=N"
 *   masked     blocks every signal first (the timer's signal cannot reach it), then the same:
 *              "masked PID cpu_ns=N wall_ns=N"
 *   sleeper    sleeps in nanosleep and reads a pipe its parent writes late, across the
 *              timer's signal: "sleeper PID slept_ns=N rc=N read=N" (rc: nanosleep's return,
 *              read: the bytes one read() got, of 4096)
 *   grand      forks a grandchild at once that computes like compute ("compute PID ..."),
 *              reaps it, then prints its own "grand PID tasks=N"
 *   exec       execs /bin/true at once
 *   term       raises SIGTERM at once (the agent's handler writes its line, then it dies)
 *
 * Usage: late_start [CHILD_MS [WAIT_MS]]    (default 60 50); exits 0 when every child
 * ended as it should (term: killed by SIGTERM), printing "children ok". */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static volatile uint64_t sink;

/* CPU work until the thread's own clock has advanced by `ns`. */
static KEEP void child_work(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns, x = 7;
	while (thread_cpu_ns() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ull + 1;
	sink = x;
}

/* Processes whose parent is one of this process's threads: this program makes none but
 * the grandchild (counted only after it is reaped, so never). */
static int own_tasks(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[320], buf[256];
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		while (fscanf(f, "%255s", buf) == 1)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && write(1, line, (size_t)n) != n)
		_exit(3); /* one write(): the lines of the processes never mix */
}

static void compute(const char *name, uint64_t ms)
{
	uint64_t w0 = mono_ns(), c0 = thread_cpu_ns();
	child_work(ms * 1000000ull);
	uint64_t c1 = thread_cpu_ns(), w1 = mono_ns();
	say("%s %d cpu_ns=%llu wall_ns=%llu tasks=%d\n", name, (int)getpid(),
	    (unsigned long long)(c1 - c0), (unsigned long long)(w1 - w0), own_tasks());
}

static void sleeper(uint64_t ms, int rfd)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	uint64_t t0 = mono_ns();
	int rc = nanosleep(&ts, NULL);
	uint64_t slept = mono_ns() - t0;
	char buf[4096];
	ssize_t got = read(rfd, buf, sizeof(buf)); /* the parent writes after 2 x WAIT_MS */
	say("sleeper %d slept_ns=%llu rc=%d read=%zd\n", (int)getpid(),
	    (unsigned long long)slept, rc, got);
}

static uint64_t forked_at; /* CLOCK_MONOTONIC ns, just before the fork (the child's copy too) */

static int run_child(const char *kind, uint64_t child_ms, uint64_t wait_ms)
{
	int p[2];
	if (pipe(p) != 0)
		return 0;
	forked_at = mono_ns();
	pid_t pid = fork();
	if (pid < 0)
		return 0;
	if (pid == 0) {
		close(p[1]);
		if (!strcmp(kind, "quick")) {
			int n = own_tasks();
			say("quick %d tasks=%d since_fork_ns=%llu\n", (int)getpid(), n,
			    (unsigned long long)(mono_ns() - forked_at));
		} else if (!strcmp(kind, "late")) {
			sleep_ns(wait_ms * 1000000ull);
			say("late %d tasks=%d\n", (int)getpid(), own_tasks());
		} else if (!strcmp(kind, "compute")) {
			compute("compute", child_ms);
		} else if (!strcmp(kind, "masked")) {
			sigset_t all;
			sigfillset(&all);
			sigprocmask(SIG_BLOCK, &all, NULL);
			compute("masked", child_ms);
		} else if (!strcmp(kind, "sleeper")) {
			sleeper(wait_ms, p[0]);
		} else if (!strcmp(kind, "grand")) {
			pid_t g = fork();
			if (g == 0) {
				compute("compute", child_ms);
				_exit(0);
			}
			int st = 0;
			if (g < 0 || waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st))
				_exit(4);
			say("grand %d tasks=%d\n", (int)getpid(), own_tasks());
		} else if (!strcmp(kind, "exec")) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(5);
		} else if (!strcmp(kind, "term")) {
			raise(SIGTERM);
			_exit(6);
		}
		_exit(0);
	}
	close(p[0]);
	if (!strcmp(kind, "sleeper")) {
		sleep_ns(2 * wait_ms * 1000000ull);
		char buf[4096];
		memset(buf, 'x', sizeof(buf));
		if (write(p[1], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return 0;
	}
	close(p[1]);
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		return 0;
	if (!strcmp(kind, "term"))
		return WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv)
{
	uint64_t child_ms = argc > 1 ? strtoull(argv[1], NULL, 10) : 60;
	uint64_t wait_ms = argc > 2 ? strtoull(argv[2], NULL, 10) : 50;
	static const char *kinds[] = { "quick", "late", "compute", "masked", "sleeper",
				       "grand", "exec", "term" };
	int ok = 1;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!run_child(kinds[i], child_ms, wait_ms)) {
			say("child %s failed\n", kinds[i]);
			ok = 0;
		}
	}
	if (ok)
		say("children ok\n");
	return ok ? 0 : 1;
}
