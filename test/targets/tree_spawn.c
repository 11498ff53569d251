/* SPDX-License-Identifier: MIT */
/* A process tree started every way a program starts processes, each process measuring its
 * own truth: its lifetime (CLOCK_MONOTONIC from the start of main to its end), its CPU time,
 * and how it ends. It appends "pid ppid lifetime_ns cpu_ns role end" to $WP_TRUTH (O_APPEND,
 * one write per process, so the lines never mix); end is "exit N", "signal N" or "kill".
 *
 *   root          0.9 s; posix_spawns spawn-child, vfork+execs vfork-child, forks term and
 *                 killed, posix_spawns BRIEF brief processes (argv[1], default 20); exit 0
 *   spawn-child   posix_spawns spawn-grandchild, 0.6 s, exit 3
 *   spawn-grandchild 0.3 s, exit 4 (with _exit)
 *   vfork-child   vfork+execs vfork-grandchild, 0.5 s, exit 5
 *   vfork-grandchild 0.25 s, exit 6
 *   term          forked, 0.35 s, dies of SIGTERM (default action)
 *   killed        forked, 1.3 s, SIGKILLs itself (its agent has no last word)
 *   brief         posix_spawned, exits 7 at once (usually too brief to be sampled)
 * Each lives by sleeping (wall-mode truth), with a little CPU work of its own. */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

static uint64_t t0;
static const char *self;
static volatile uint64_t sink;

KEEP static void work(double ms)
{
	uint64_t until = thread_cpu_ns() + (uint64_t)(ms * 1e6);
	while (thread_cpu_ns() < until)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 2654435761u;
	BARRIER();
}

/* Lives until `secs` after the start of main, sleeping. */
KEEP static void live_until(double secs)
{
	uint64_t end = t0 + (uint64_t)(secs * 1e9), now = mono_ns();
	if (now < end)
		sleep_ns(end - now);
	BARRIER();
}

static void say_truth(const char *role, const char *end)
{
	const char *p = getenv("WP_TRUTH");
	if (!p)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	char line[160];
	int n = snprintf(line, sizeof(line), "%d %d %llu %llu %s %s\n", (int)getpid(),
			 (int)getppid(), (unsigned long long)(mono_ns() - t0),
			 (unsigned long long)ts_ns(&ts), role, end);
	int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) != n)
			perror("tree_spawn: truth");
		close(fd);
	}
}

static pid_t spawn(const char *role)
{
	pid_t pid;
	char *argv[] = { (char *)self, (char *)role, NULL };
	int e = posix_spawn(&pid, self, NULL, NULL, argv, environ);
	if (e) {
		fprintf(stderr, "tree_spawn: posix_spawn: %s\n", strerror(e));
		exit(1);
	}
	return pid;
}

static pid_t vfork_exec(const char *role)
{
	char *argv[] = { (char *)self, (char *)role, NULL };
	pid_t pid = vfork();
	if (pid == 0) {
		execv(self, argv);
		_exit(127);
	}
	return pid;
}

/* Waits for `pid`; its status must be `want` (a wait status). */
static void expect(pid_t pid, int want, const char *what)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	if (st != want) {
		fprintf(stderr, "tree_spawn: %s ended with status 0x%x, not 0x%x\n", what, st, want);
		exit(1);
	}
}

static int leaf(const char *role)
{
	static const struct { const char *role; double secs; int code; } leaves[] = {
		{ "spawn-grandchild", 0.3, 4 }, { "vfork-grandchild", 0.25, 6 }, { "brief", 0, 7 },
	};
	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		if (strcmp(role, leaves[i].role))
			continue;
		if (leaves[i].secs > 0) {
			work(10);
			live_until(leaves[i].secs);
		}
		char end[16];
		snprintf(end, sizeof(end), "exit %d", leaves[i].code);
		say_truth(role, end);
		_exit(leaves[i].code);
	}
	return -1;
}

int main(int argc, char **argv)
{
	t0 = mono_ns();
	self = "/proc/self/exe";
	if (argc > 1 && !strcmp(argv[1], "spawn-child")) {
		work(10);
		pid_t g = spawn("spawn-grandchild");
		live_until(0.6);
		expect(g, 4 << 8, "spawn-grandchild");
		say_truth("spawn-child", "exit 3");
		exit(3);
	}
	if (argc > 1 && !strcmp(argv[1], "vfork-child")) {
		work(10);
		pid_t g = vfork_exec("vfork-grandchild");
		live_until(0.5);
		expect(g, 6 << 8, "vfork-grandchild");
		say_truth("vfork-child", "exit 5");
		return 5;
	}
	if (argc > 1 && leaf(argv[1]) == 0)
		return 0;
	int nbrief = argc > 1 ? atoi(argv[1]) : 20;
	pid_t sc = spawn("spawn-child");
	pid_t vc = vfork_exec("vfork-child");
	pid_t term = fork();
	if (term == 0) {
		t0 = mono_ns(); /* its own life starts here */
		work(10);
		live_until(0.35);
		say_truth("term", "signal 15");
		raise(SIGTERM);
		_exit(99);
	}
	pid_t killed = fork();
	if (killed == 0) {
		t0 = mono_ns();
		work(10);
		live_until(1.3);
		say_truth("killed", "kill");
		raise(SIGKILL);
		_exit(99);
	}
	for (int i = 0; i < nbrief; i++)
		expect(spawn("brief"), 7 << 8, "brief");
	work(20);
	live_until(0.9);
	expect(sc, 3 << 8, "spawn-child");
	expect(vc, 5 << 8, "vfork-child");
	expect(term, SIGTERM, "term");
	expect(killed, SIGKILL, "killed");
	say_truth("root", "exit 0");
	return 0;
}
