/* SPDX-License-Identifier: MIT */
/* A thread that runs in short bursts between blocking system calls, on a contended CPU (the
 * shape of a PostgreSQL backend under pgbench: recv, compute, send, epoll_wait): the running
 * share of its samples must not exceed its own CPU time (test_bursts.py).
 *
 * "client" (the main thread) and "worker" ping-pong over a socketpair: each round the client
 * sends a byte and blocks in recv; the worker, blocked in epoll_wait, wakes, recv's it,
 * computes about 50 us of its own CPU time (burn), and sends it back. Both are pinned to CPU
 * 0 with two spinners ("spin-1", "spin-2"), so each wake-up waits for the CPU. The worker
 * measures its own CPU time, wall time and runqueue time (its schedstat) over the run, and
 * writes them to $WP_TRUTH with its tid (cpu.worker, wall.worker, delay.worker, tid.worker,
 * rounds). argv[1]: seconds (default 3); argv[2]: "free" to pin nothing, "split" (below); argv[3]: spinners, 0-4 (default 2). */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "common.h"

#define BURN_NS 50000ull

/* 1: everything on CPU 0; 2 ("split"): the worker and spin-1 on CPU 0, the client and
 * spin-2 on CPU 1, so that each side's wake-up queues behind a spinner; 0 ("free"): none */
static int pin = 1;
static atomic_int stop;
static int sv[2];

static void pin_cpu(int cpu)
{
	if (!pin)
		return;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(pin == 2 ? cpu : 0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		perror("sched_setaffinity");
}

/* Its runqueue time so far (schedstat's second field), 0 when unreadable. */
static uint64_t run_delay_ns(void)
{
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	unsigned long long run = 0, delay = 0;
	if (f) {
		if (fscanf(f, "%llu %llu", &run, &delay) != 2)
			delay = 0;
		fclose(f);
	}
	return delay;
}

/* About BURN_NS of the thread's own CPU time (not wall time: preempted, it burns on later). */
static KEEP void burn(void)
{
	uint64_t until = thread_cpu_ns() + BURN_NS;
	while (thread_cpu_ns() < until)
		;
}

static void *spinner(void *arg)
{
	struct target_thread *t = arg;
	target_thread_begin(t);
	pin_cpu(t->name[5] == '2' || t->name[5] == '4');
	while (!atomic_load(&stop))
		;
	return NULL;
}

static KEEP void serve(int ep, int fd)
{
	char c;
	struct epoll_event ev;
	for (;;) {
		int n = epoll_wait(ep, &ev, 1, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		ssize_t got = recv(fd, &c, 1, 0);
		if (got <= 0)
			break; /* the client closed: the end */
		burn();
		if (send(fd, &c, 1, MSG_NOSIGNAL) != 1)
			break;
	}
}

static void *worker(void *arg)
{
	target_thread_begin(arg);
	pin_cpu(0);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = sv[1] };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev) != 0) {
		perror("epoll");
		exit(2);
	}
	uint64_t w0 = mono_ns(), c0 = thread_cpu_ns(), d0 = run_delay_ns();
	serve(ep, sv[1]);
	uint64_t w1 = mono_ns(), c1 = thread_cpu_ns(), d1 = run_delay_ns();
	truth("cpu.worker %.6f", (double)(c1 - c0) / 1e9);
	truth("wall.worker %.6f", (double)(w1 - w0) / 1e9);
	truth("delay.worker %.6f", (double)(d1 - d0) / 1e9);
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = run_seconds(argc, argv, 3.0);
	if (argc > 2)
		pin = !strcmp(argv[2], "free") ? 0 : !strcmp(argv[2], "split") ? 2 : 1;
	truth_open();
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		perror("socketpair");
		return 2;
	}
	static struct target_thread w = { "worker", worker, 0, 0 };
	static struct target_thread s[4] = { { "spin-1", spinner, 0, 0 }, { "spin-2", spinner, 0, 0 },
					     { "spin-3", spinner, 0, 0 }, { "spin-4", spinner, 0, 0 } };
	int spinners = argc > 3 ? atoi(argv[3]) : 2;
	if (spinners < 0 || spinners > 4)
		spinners = 2;
	pthread_setname_np(pthread_self(), "client");
	pin_cpu(1);
	for (int i = 0; i < spinners; i++)
		pthread_create(&s[i].handle, NULL, spinner, &s[i]);
	pthread_create(&w.handle, NULL, worker, &w);
	uint64_t end = mono_ns() + (uint64_t)(secs * 1e9);
	long rounds = 0;
	char c = 'x';
	while (mono_ns() < end) {
		if (send(sv[0], &c, 1, MSG_NOSIGNAL) != 1 || recv(sv[0], &c, 1, 0) != 1) {
			perror("client");
			return 2;
		}
		rounds++;
	}
	shutdown(sv[0], SHUT_WR);
	pthread_join(w.handle, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < spinners; i++)
		pthread_join(s[i].handle, NULL);
	truth("tid.worker %d", (int)w.tid);
	truth("rounds %ld", rounds);
	truth_close();
	printf("bursts: %ld rounds\n", rounds);
	return 0;
}
