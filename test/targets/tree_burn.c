/* SPDX-License-Identifier: MIT */
/* A process tree that measures its own truth: the root forks a child (which forks a
 * grandchild) and a second child that execs this program again; each process burns a known
 * amount of CPU in a function of its own and appends "pid ppid main_thread_cpu_ns role" to
 * $WP_TRUTH (O_APPEND, one write per process, so the lines of the tree never mix).
 * Usage: tree_burn [SCALE] (SCALE multiplies the burns; default 1 = 150..400 ms each).
 * TREE_BURN_ROOT_EXIT=1: the root ends with _exit(0); TREE_BURN_ROOT_KILL=1: the root kills
 * itself with SIGKILL (it leaves no final word). TREE_BURN_CHILD_SCALE=F: the child burns F
 * times as long (a change for --compare). */
#include <signal.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static volatile uint64_t sink;

/* Spins until this thread has used `ms` milliseconds of CPU. */
static void spin_cpu(double ms)
{
	uint64_t until = thread_cpu_ns() + (uint64_t)(ms * 1e6);
	while (thread_cpu_ns() < until)
		for (int i = 0; i < 10000; i++)
			sink += (uint64_t)i * 2654435761u;
}

KEEP static void burn_root(double ms) { spin_cpu(ms); BARRIER(); }
KEEP static void burn_child(double ms) { spin_cpu(ms); BARRIER(); }
KEEP static void burn_grandchild(double ms) { spin_cpu(ms); BARRIER(); }
KEEP static void burn_exec_child(double ms) { spin_cpu(ms); BARRIER(); }

static void report(const char *role)
{
	const char *p = getenv("WP_TRUTH");
	if (!p)
		return;
	char line[128];
	int n = snprintf(line, sizeof(line), "%d %d %llu %s\n", (int)getpid(), (int)getppid(),
			 (unsigned long long)thread_cpu_ns(), role);
	int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) != n)
			perror("tree_burn: truth");
		close(fd);
	}
}

static void wait_all(void)
{
	int st;
	while (wait(&st) > 0)
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			fprintf(stderr, "tree_burn: a child failed (status %d)\n", st), exit(1);
}

int main(int argc, char **argv)
{
	double scale = 1;
	if (argc > 2 && !strcmp(argv[1], "exec-child")) {
		burn_exec_child(400 * atof(argv[2]));
		report("exec-child");
		return 0;
	}
	if (argc > 1)
		scale = atof(argv[1]);
	if (scale <= 0)
		scale = 1;
	char sc[32];
	snprintf(sc, sizeof(sc), "%g", scale);
	pid_t a = fork();
	if (a == 0) {
		if (fork() == 0) {
			burn_grandchild(200 * scale);
			report("grandchild");
			exit(0);
		}
		const char *cs = getenv("TREE_BURN_CHILD_SCALE");
		burn_child(300 * scale * (cs && atof(cs) > 0 ? atof(cs) : 1));
		wait_all();
		report("child");
		exit(0);
	}
	pid_t b = fork();
	if (b == 0) {
		execl("/proc/self/exe", argv[0], "exec-child", sc, (char *)NULL);
		perror("tree_burn: exec");
		_exit(127);
	}
	burn_root(150 * scale);
	wait_all();
	report("root");
	if (getenv("TREE_BURN_ROOT_EXIT"))
		_exit(0); /* as dash does: no destructor or exit handler runs */
	if (getenv("TREE_BURN_ROOT_KILL"))
		raise(SIGKILL); /* nothing runs: the root leaves no file (no checkpoint yet) */
	return 0;
}
