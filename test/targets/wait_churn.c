/* SPDX-License-Identifier: MIT */
/* wait_churn: everything a wait's object can do to change under the sampler's feet (issue
 * 13: "a lock object, a descriptor or a TID that changes under us gives a wrong name at
 * worst, never a crash or a hang"), for SECONDS:
 *
 *   lockers   groups of 3 threads contending for mutexes in a mapping of their own, which
 *             the group's last thread unmaps and maps again (another address) every round,
 *             while the other group waits on its own mutexes next door
 *   fds       threads that open pipes, socket pairs, eventfds and epolls, wait on them
 *             briefly (read with a timeout via poll, select, epoll_wait, recv with
 *             SO_RCVTIMEO), with their pollfd arrays and fd_sets in heap memory freed right
 *             after, and close them: descriptor numbers are reused at once with other targets
 *   threads   a thread that starts threads that each wait briefly on a pipe and exit
 *   children  a thread that forks children that exit at once and waits for them
 *
 * Every transfer is checked (what was written is read back); the output is one line that
 * depends on nothing but the run having been correct: "churn ok" (or what went wrong, exit 1).
 *
 * Usage: wait_churn [SECONDS] (default 3). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static uint64_t deadline;
static volatile int bad;
static char why[128];

static void fail(const char *what)
{
	if (!bad) {
		snprintf(why, sizeof(why), "%s: %s", what, strerror(errno));
		bad = 1;
	}
}

/* --- locks in mappings that come and go ------------------------------------------------ */

#define GROUP 3
struct lockgroup {
	pthread_barrier_t round_start, round_end;
	pthread_mutex_t *volatile mutexes; /* in a mapping of its own */
	int stop;
};
static struct lockgroup groups[2];

static pthread_mutex_t *map_mutexes(void)
{
	pthread_mutex_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);
	if (m == MAP_FAILED) {
		fail("mmap");
		return NULL;
	}
	for (int i = 0; i < 4; i++)
		pthread_mutex_init(&m[i], NULL);
	return m;
}

static void *locker_fn(void *arg)
{
	struct lockgroup *g = arg;
	for (;;) {
		pthread_barrier_wait(&g->round_start);
		if (g->stop)
			return NULL;
		pthread_mutex_t *m = g->mutexes;
		for (int i = 0; i < 20; i++) {
			pthread_mutex_lock(&m[i % 4]);
			volatile uint64_t x = 0;
			for (int k = 0; k < 20000; k++)
				x += (uint64_t)k;
			pthread_mutex_unlock(&m[i % 4]);
		}
		if (pthread_barrier_wait(&g->round_end) == PTHREAD_BARRIER_SERIAL_THREAD) {
			/* the one the barrier picks: the mapping goes while the other group waits */
			munmap(m, 4096);
			g->mutexes = map_mutexes();
			g->stop = mono_ns() >= deadline || bad || !g->mutexes;
		}
	}
}

/* --- descriptors opened, waited on and closed ------------------------------------------ */

static void check_byte(int rfd, char want, const char *what)
{
	char c = 0;
	if (read(rfd, &c, 1) != 1 || c != want)
		fail(what);
}

static void poll_pipe(void)
{
	int p[2];
	if (pipe(p) != 0) {
		fail("pipe");
		return;
	}
	struct pollfd *fds = malloc(2 * sizeof(*fds)); /* freed right after the wait */
	fds[0] = (struct pollfd){ p[0], POLLIN, 0 };
	fds[1] = (struct pollfd){ -1, 0, 0 };
	if (poll(fds, 2, 1) < 0 && errno != EINTR)
		fail("poll");
	free(fds);
	if (write(p[1], "a", 1) != 1)
		fail("write");
	check_byte(p[0], 'a', "pipe byte");
	close(p[0]);
	close(p[1]);
}

static void select_socket(void)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) != 0) {
		fail("socketpair");
		return;
	}
	fd_set *r = malloc(sizeof(*r));
	FD_ZERO(r);
	FD_SET(sp[0], r);
	struct timeval tv = { 0, 1000 };
	if (select(sp[0] + 1, r, NULL, NULL, &tv) < 0 && errno != EINTR)
		fail("select");
	free(r);
	struct timeval rt = { 0, 1000 };
	setsockopt(sp[0], SOL_SOCKET, SO_RCVTIMEO, &rt, sizeof(rt));
	char c;
	if (recv(sp[0], &c, 1, 0) >= 0)
		fail("recv on an empty socket returned data");
	if (send(sp[1], "b", 1, 0) != 1)
		fail("send");
	check_byte(sp[0], 'b', "socket byte");
	close(sp[0]);
	close(sp[1]);
}

static void epoll_eventfd(void)
{
	int e = eventfd(0, 0), ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	if (e < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) != 0) {
		fail("epoll");
		return;
	}
	if (epoll_wait(ep, &ev, 1, 1) < 0 && errno != EINTR)
		fail("epoll_wait");
	close(ep);
	uint64_t one = 1, got = 0;
	if (write(e, &one, 8) != 8 || read(e, &got, 8) != 8 || got != 1)
		fail("eventfd");
	close(e);
}

static void *fds_fn(void *arg)
{
	(void)arg;
	while (mono_ns() < deadline && !bad) {
		poll_pipe();
		select_socket();
		epoll_eventfd();
	}
	return NULL;
}

/* --- threads that come and go ---------------------------------------------------------- */

static void *brief_fn(void *arg)
{
	int rfd = (int)(intptr_t)arg;
	struct pollfd p = { rfd, POLLIN, 0 };
	poll(&p, 1, 2);
	check_byte(rfd, 'c', "thread's pipe byte");
	return NULL;
}

static void *spawner_fn(void *arg)
{
	(void)arg;
	while (mono_ns() < deadline && !bad) {
		int p[2];
		pthread_t t;
		if (pipe(p) != 0) {
			fail("pipe");
			break;
		}
		if (pthread_create(&t, NULL, brief_fn, (void *)(intptr_t)p[0]) != 0) {
			fail("pthread_create");
			break;
		}
		if (write(p[1], "c", 1) != 1)
			fail("write");
		pthread_join(t, NULL);
		close(p[0]);
		close(p[1]);
	}
	return NULL;
}

/* --- children that come and go --------------------------------------------------------- */

static void *forker_fn(void *arg)
{
	(void)arg;
	while (mono_ns() < deadline && !bad) {
		pid_t c = fork();
		if (c == 0)
			_exit(7);
		int st = 0;
		if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
			fail("child");
		sleep_ns(2000000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = run_seconds(argc, argv, 3.0);
	deadline = mono_ns() + (uint64_t)(secs * 1e9);
	pthread_t th[2 * GROUP + 4];
	int n = 0;
	for (int g = 0; g < 2; g++) {
		pthread_barrier_init(&groups[g].round_start, NULL, GROUP);
		pthread_barrier_init(&groups[g].round_end, NULL, GROUP);
		groups[g].mutexes = map_mutexes();
		for (int i = 0; i < GROUP; i++)
			pthread_create(&th[n++], NULL, locker_fn, &groups[g]);
	}
	pthread_create(&th[n++], NULL, fds_fn, NULL);
	pthread_create(&th[n++], NULL, fds_fn, NULL);
	pthread_create(&th[n++], NULL, spawner_fn, NULL);
	pthread_create(&th[n++], NULL, forker_fn, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (bad) {
		printf("churn failed: %s\n", why);
		return 1;
	}
	puts("churn ok");
	return 0;
}
