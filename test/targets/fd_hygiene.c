/* SPDX-License-Identifier: MIT */
/* What a program sees of its own descriptors and stderr, to compare profiled with unprofiled.
 *
 *   fd_hygiene list            busy 300 ms (so the agent is fully set up), then print the
 *                              number the next open() gets and every open descriptor number
 *   fd_hygiene closefrom MS    close every descriptor above 2 (as daemons do), then burn CPU
 *                              in two threads for MS milliseconds (the agent must still sample)
 *   fd_hygiene reuse2 FILE     close fd 2, open FILE (it gets 2), write "data\n" into it, run
 *                              300 ms, exit: FILE must hold only what the program wrote
 *   fd_hygiene takeprof        install a SIGPROF handler (the agent moves to another signal and
 *                              says so), run 300 ms, print "done" on stderr
 *   fd_hygiene forkprof        fork a child that does what takeprof does (its agent moves and
 *                              says so, in the child only); the parent runs 200 ms, waits for
 *                              it, prints "parent done" on stderr
 *   fd_hygiene late MS         run MS milliseconds, then print "done" on stderr
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static volatile unsigned long sink;

KEEP static void burn_ms(unsigned ms)
{
	uint64_t end = mono_ns() + (uint64_t)ms * 1000000ull;
	while (mono_ns() < end)
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i * 7;
}

static void *burner(void *arg)
{
	burn_ms((unsigned)(uintptr_t)arg);
	return NULL;
}

static int list(void)
{
	burn_ms(300);
	int fd = open("/dev/null", O_RDONLY);
	printf("first open: %d\n", fd);
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 1;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			printf("open: %s\n", e->d_name);
	closedir(d);
	return 0;
}

static int closefrom_run(unsigned ms)
{
	/* what closefrom(3) does; a loop over close() where close_range is missing */
	if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
		for (int fd = 3; fd < 65536; fd++)
			close(fd);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, burner, (void *)(uintptr_t)ms);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("ran %u ms\n", ms);
	return 0;
}

static int reuse2(const char *path)
{
	close(2);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd != 2)
		return 3;
	if (write(2, "data\n", 5) != 5)
		return 4;
	burn_ms(300);
	return 0;
}

static void on_prof(int sig)
{
	(void)sig;
}

static int takeprof(void)
{
	burn_ms(100);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sigaction(SIGPROF, &sa, NULL);
	burn_ms(300);
	fprintf(stderr, "done\n");
	return 0;
}

static int forkprof(void)
{
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(takeprof());
	burn_ms(200);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	fprintf(stderr, "parent done\n");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "list"))
		return list();
	if (!strcmp(mode, "closefrom") && argc > 2)
		return closefrom_run((unsigned)atoi(argv[2]));
	if (!strcmp(mode, "reuse2") && argc > 2)
		return reuse2(argv[2]);
	if (!strcmp(mode, "takeprof"))
		return takeprof();
	if (!strcmp(mode, "forkprof"))
		return forkprof();
	if (!strcmp(mode, "late") && argc > 2) {
		burn_ms((unsigned)atoi(argv[2]));
		fprintf(stderr, "done\n");
		return 0;
	}
	fprintf(stderr, "usage: fd_hygiene list|closefrom MS|reuse2 FILE|takeprof|forkprof|late MS\n");
	return 2;
}
