/* SPDX-License-Identifier: MIT */
/* fork_blocked: a fork child that blocks at once, past its first tick, in a call the kernel
 * never restarts after a signal handler, whatever SA_RESTART says (msgrcv on a System V
 * queue; signal(7)); its parent sends the message after WAIT_MS. Any signal of the agent's
 * reaching the child there (a first-tick timer, as a late start of its sampler once used)
 * makes msgrcv fail with EINTR, which the agent cannot take back.
 *
 * Prints "child PID msgrcv=N" (the bytes received, or -1 and the error) and exits 0 when the
 * child got the whole message and exited 0.  Usage: fork_blocked [WAIT_MS]  (default 100) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

struct msg {
	long type;
	char text[8];
};

int main(int argc, char **argv)
{
	long wait_ms = argc > 1 ? atol(argv[1]) : 100;
	int q = msgget(IPC_PRIVATE, 0600);
	if (q < 0) {
		perror("msgget");
		return 2;
	}
	pid_t pid = fork();
	if (pid == 0) {
		struct msg m;
		ssize_t r = msgrcv(q, &m, sizeof(m.text), 0, 0);
		printf("child %d msgrcv=%zd%s%s\n", (int)getpid(), r, r < 0 ? " " : "",
		       r < 0 ? strerror(errno) : "");
		fflush(stdout);
		_exit(r == (ssize_t)sizeof(m.text) ? 0 : 1);
	}
	sleep_ns((uint64_t)wait_ms * 1000000ull);
	struct msg m = { 1, "message" };
	int sent = msgsnd(q, &m, sizeof(m.text), 0) == 0;
	int st = 0;
	int reaped = pid > 0 && waitpid(pid, &st, 0) == pid;
	msgctl(q, IPC_RMID, NULL);
	return sent && reaped && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
