/* SPDX-License-Identifier: MIT */
/* fd_waits: a descriptor-heavy program, to measure what naming io waits costs the sampler
 * (issue 13). N waiter threads each block on descriptors of their own, a quarter each: read
 * on a pipe, recv on a loopback TCP connection, recv on a unix socket pair, poll over a pipe
 * and a TCP connection; EXTRA more loopback TCP connections are held open (the process's fd
 * table and the kernel's TCP table grow: 2 descriptors and 2 table lines each). A poker thread
 * writes one byte to one waiter's descriptor every POKE_US, round robin, so waiters wake, read
 * it and block again: they are sampled from /proc again, not only once.
 *
 * Not wired into scripts/bench: run by hand under the agent, e.g.
 *   WALLPROF_MODE=wall WALLPROF_HZ=100 WALLPROF_OUT=x.prof LD_PRELOAD=... fd_waits 64 1000 5
 * and read sampler_cpu_ns / ticks in the profile's META.
 * Usage: fd_waits N EXTRA SECONDS */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define POKE_US 2000

struct waiter {
	int kind, rfd, wfd, rfd2, wfd2;
};
static struct waiter *ws;
static int n;

static int tcp_pair(int lsn, struct sockaddr_in *a, int *r, int *w)
{
	*w = socket(AF_INET, SOCK_STREAM, 0);
	if (*w < 0 || connect(*w, (struct sockaddr *)a, sizeof(*a)) != 0)
		return -1;
	*r = accept(lsn, NULL, NULL);
	return *r < 0 ? -1 : 0;
}

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;
	char c;
	for (;;) {
		if (w->kind == 3) {
			struct pollfd p[2] = { { w->rfd, POLLIN, 0 }, { w->rfd2, POLLIN, 0 } };
			if (poll(p, 2, -1) > 0)
				for (int i = 0; i < 2; i++)
					if (p[i].revents & POLLIN)
						(void)!read(p[i].fd, &c, 1);
		} else {
			(void)!read(w->rfd, &c, 1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	n = atoi(argv[1]);
	int extra = atoi(argv[2]);
	double secs = atof(argv[3]);
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int lsn = socket(AF_INET, SOCK_STREAM, 0);
	if (lsn < 0 || bind(lsn, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(lsn, 128) != 0 ||
	    getsockname(lsn, (struct sockaddr *)&a, &len) != 0)
		return 3;
	for (int i = 0; i < extra; i++) {
		int r, w;
		if (tcp_pair(lsn, &a, &r, &w) != 0)
			return 3;
	}
	ws = calloc((size_t)n, sizeof(*ws));
	for (int i = 0; i < n; i++) {
		int p[2];
		ws[i].kind = i % 4;
		if (ws[i].kind == 0 || ws[i].kind == 3) {
			if (pipe(p) != 0)
				return 3;
			ws[i].rfd = p[0];
			ws[i].wfd = p[1];
		}
		if (ws[i].kind == 1 && tcp_pair(lsn, &a, &ws[i].rfd, &ws[i].wfd) != 0)
			return 3;
		if (ws[i].kind == 2) {
			if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) != 0)
				return 3;
			ws[i].rfd = p[0];
			ws[i].wfd = p[1];
		}
		if (ws[i].kind == 3 && tcp_pair(lsn, &a, &ws[i].rfd2, &ws[i].wfd2) != 0)
			return 3;
		pthread_t t;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, 65536);
		pthread_create(&t, &at, waiter_fn, &ws[i]);
	}
	struct timespec t0, now, poke = { 0, POKE_US * 1000 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long k = 0;; k++) {
		nanosleep(&poke, NULL);
		(void)!write(ws[k % n].wfd, "x", 1);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 >= secs)
			break;
	}
	printf("fd_waits: n=%d extra=%d\n", n, extra);
	return 0;
}
