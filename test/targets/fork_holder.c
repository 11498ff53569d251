/* SPDX-License-Identifier: MIT */
/* fork_holder: a fork that lands while the sampler is half-way through a tick, in its
 * lock-holder samples (run with WALLPROF_TEST=slow-holders, which makes the first holder batch
 * wait 1 s in poll before signalling; a fork does not wait for the tick, so it lands there).
 *
 *   holder  holds lock while computing (a CPU loop) until the end
 *   waiter  pthread_mutex_lock(&lock): blocked behind holder, so ticks read its owner
 *   main    waits until the sampler thread ("wallprof") sits in poll, then forks
 *   child   computes in child_work() for CHILD_S seconds and exits 0: its own profile
 *
 * Prints "child PID" on stdout. Exit status: the child's (0), 3 when the sampler was never
 * seen in the hook (a build without it), 4 when fork failed. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define CHILD_S 0.5

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t locked;
static volatile int done;
static volatile uint64_t sink;

static KEEP void compute_holding(void)
{
	while (!done)
		sink++;
}

static void *holder(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "holder");
	pthread_mutex_lock(&lock);
	pthread_barrier_wait(&locked);
	compute_holding();
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "waiter");
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static KEEP void child_work(void)
{
	uint64_t end = mono_ns() + (uint64_t)(CHILD_S * 1e9);
	while (mono_ns() < end)
		sink++;
}

static int read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

/* Whether the thread named "wallprof" is in poll (system call 7) right now. */
/* Whether `pid` (a task of ours or a child) is the agent's sampler, waiting in poll. */
static int in_poll(const char *pid)
{
	char path[300], buf[256];
	snprintf(path, sizeof(path), "/proc/%s/comm", pid);
	if (read_small(path, buf, sizeof(buf)) || strcmp(buf, "wallprof\n"))
		return 0;
	snprintf(path, sizeof(path), "/proc/%s/syscall", pid);
	return !read_small(path, buf, sizeof(buf)) && !strncmp(buf, "7 ", 2);
}

/* The sampler is a task of its own, a child of this process (docs/design.md, "Where the
 * sampler lives"): looked for among each thread's children. */
static int sampler_in_poll(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int yes = 0;
	while (d && !yes && (e = readdir(d))) {
		char path[300], buf[256];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", e->d_name);
		if (read_small(path, buf, sizeof(buf)))
			continue;
		for (char *kid = strtok(buf, " \n"); kid && !yes; kid = strtok(NULL, " \n"))
			yes = in_poll(kid);
	}
	if (d)
		closedir(d);
	return yes;
}

int main(void)
{
	pthread_t h, w;
	pthread_barrier_init(&locked, NULL, 2);
	pthread_create(&h, NULL, holder, NULL);
	pthread_barrier_wait(&locked);
	pthread_create(&w, NULL, waiter, NULL);
	uint64_t give_up = mono_ns() + 10000000000ull;
	while (!sampler_in_poll()) {
		if (mono_ns() > give_up) {
			fprintf(stderr, "fork_holder: the sampler never waited in the slow-holders hook\n");
			done = 1;
			return 3;
		}
		sleep_ns(1000000);
	}
	pid_t child = fork();
	if (child == 0) {
		child_work();
		exit(0);
	}
	int st = 4;
	if (child > 0) {
		printf("child %d\n", (int)child);
		fflush(stdout);
		waitpid(child, &st, 0);
	}
	done = 1;
	pthread_join(h, NULL);
	pthread_join(w, NULL);
	if (child < 0)
		return 4;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
