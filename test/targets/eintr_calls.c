/* SPDX-License-Identifier: MIT */
/* Truth for the "the program cannot tell" promise: one thread per blocking call, each calling
 * it in a loop WITHOUT retrying EINTR, the way ordinary code does. Any EINTR, or a timed call
 * that returns before its timeout, is reported and makes the program exit 1.
 * A second part checks that the program's OWN signal still interrupts such calls.
 * Usage: eintr_calls SECONDS [nodump]: nodump makes the process not dumpable first
 * (PR_SET_DUMPABLE 0, as sandboxes and key agents do), which closes its /proc syscall files to
 * other processes of its user. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static atomic_int failures;
static int pipefd[2];
static int sockpair[2];
static int listen_fd = -1;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "FAIL %s: %s\n", what, detail);
	atomic_fetch_add(&failures, 1);
}

/* A call with a timeout of `ms` that returned after `took` seconds: early if well short.
 * Socket timeouts (SO_RCVTIMEO) count in kernel ticks, so any disturbance of their phase can
 * end them up to a tick early; only high-resolution timeouts are checked for that. */
static void check(const char *what, int r, int err, double took, double ms, int expect_timeout)
{
	if (r < 0 && err == EINTR) {
		fail(what, "EINTR");
		return;
	}
	if (r < 0) {
		char b[64];
		snprintf(b, sizeof b, "error %s", strerror(err));
		fail(what, b);
		return;
	}
	if (expect_timeout && took < ms / 1000.0 * 0.95) {
		char b[64];
		snprintf(b, sizeof b, "returned after %.3f ms of %.1f", took * 1000, ms);
		fail(what, b);
	}
}

#define LOOP(name, ...)                                                  \
	static void *name(void *arg)                                      \
	{                                                                 \
		pthread_setname_np(pthread_self(), #name);                \
		while (!atomic_load(&stop)) {                             \
			double t0 = now();                                \
			int r;                                            \
			__VA_ARGS__;                                           \
		}                                                         \
		return NULL;                                              \
	}

LOOP(t_nanosleep, { struct timespec ts = {0, 2000000}; r = nanosleep(&ts, NULL);
	check("nanosleep", r, errno, now() - t0, 2, 1); })
LOOP(t_clock_ns, { struct timespec ts = {0, 2000000};
	int e = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL); r = e ? -1 : 0;
	check("clock_nanosleep", r, e, now() - t0, 2, 1); })
LOOP(t_usleep, { r = usleep(2000); check("usleep", r, errno, now() - t0, 2, 1); })
LOOP(t_sleep, { r = (int)sleep(1); check("sleep", r ? -1 : 0, r ? EINTR : 0, now() - t0, 1000, 1); })
LOOP(t_poll, { r = poll(NULL, 0, 3); check("poll", r, errno, now() - t0, 3, 1); })
LOOP(t_ppoll, { struct timespec ts = {0, 3000000}; r = ppoll(NULL, 0, &ts, NULL);
	check("ppoll", r, errno, now() - t0, 3, 1); })
LOOP(t_select, { struct timeval tv = {0, 3000}; r = select(0, NULL, NULL, NULL, &tv);
	check("select", r, errno, now() - t0, 3, 1); })
LOOP(t_pselect, { struct timespec ts = {0, 3000000}; r = pselect(0, NULL, NULL, NULL, &ts, NULL);
	check("pselect", r, errno, now() - t0, 3, 1); })
LOOP(t_epoll, { static __thread int ep = -1; if (ep < 0) ep = epoll_create1(0);
	struct epoll_event ev; r = epoll_wait(ep, &ev, 1, 3);
	check("epoll_wait", r, errno, now() - t0, 3, 1); })
LOOP(t_epoll_pwait, { static __thread int ep = -1; if (ep < 0) ep = epoll_create1(0);
	struct epoll_event ev; r = epoll_pwait(ep, &ev, 1, 3, NULL);
	check("epoll_pwait", r, errno, now() - t0, 3, 1); })
LOOP(t_sem_timedwait, { static __thread sem_t s; static __thread int init;
	if (!init) { sem_init(&s, 0, 0); init = 1; }
	struct timespec ts; clock_gettime(CLOCK_REALTIME, &ts); ts.tv_nsec += 3000000;
	if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
	r = sem_timedwait(&s, &ts); int e = errno;
	check("sem_timedwait", r < 0 && e == ETIMEDOUT ? 0 : r, e, now() - t0, 3, 1); })
LOOP(t_sigtimedwait, { sigset_t set; sigemptyset(&set); sigaddset(&set, SIGUSR2);
	struct timespec ts = {0, 3000000}; r = sigtimedwait(&set, NULL, &ts); int e = errno;
	check("sigtimedwait", r < 0 && e == EAGAIN ? 0 : r, e, now() - t0, 3, 1); })
LOOP(t_recv_timeout, { char c; r = (int)recv(sockpair[0], &c, 1, 0); int e = errno;
	check("recv(SO_RCVTIMEO)", r < 0 && (e == EAGAIN || e == EWOULDBLOCK) ? 0 : r, e,
	      now() - t0, 3, 0); })
LOOP(t_read_pipe, { char c; r = (int)read(pipefd[0], &c, 1);
	check("read(pipe)", r, errno, now() - t0, 0, 0); })
LOOP(t_accept, { r = accept(listen_fd, NULL, NULL); int e = errno;
	check("accept(SO_RCVTIMEO)", r < 0 && (e == EAGAIN || e == EWOULDBLOCK) ? 0 : r, e,
	      now() - t0, 3, 0); if (r >= 0) close(r); })

/* sem_wait (restartable under SA_RESTART: must never fail) on a semaphore the feeder posts */
static sem_t fed;
LOOP(t_sem_wait, { r = sem_wait(&fed); check("sem_wait", r, errno, now() - t0, 0, 0); })

/* feeds the pipe so read(pipe) wakes now and then */
static void *feeder(void *arg)
{
	while (!atomic_load(&stop)) {
		struct timespec ts = {0, 5000000};
		nanosleep(&ts, NULL);
		if (write(pipefd[1], "x", 1) < 0)
			break;
		sem_post(&fed);
	}
	for (int i = 0; i < 4; i++) {
		if (write(pipefd[1], "x", 1) < 0)
			break;
		sem_post(&fed);
	}
	return NULL;
}

/* ---- the program's own signal must still interrupt ---- */
static atomic_int got_usr1;
static void on_usr1(int s) { atomic_fetch_add(&got_usr1, 1); }

static void *own_signal(void *arg)
{
	pthread_setname_np(pthread_self(), "own_signal");
	/* pause() returns only when the program's own handler ran: never for ours */
	int r = pause();
	if (!(r == -1 && errno == EINTR))
		fail("own signal", "pause did not return EINTR for the program's SIGUSR1");
	if (atomic_load(&got_usr1) < 1)
		fail("pause", "returned before the program's signal came (woken by wallprof's)");
	/* a long sleep cut short by the program's signal must still be cut short */
	struct timespec ts = {30, 0};
	double t0 = now();
	r = nanosleep(&ts, NULL);
	if (!(r == -1 && errno == EINTR) || now() - t0 > 10)
		fail("own signal", "nanosleep was not interrupted by the program's SIGUSR1");
	if (atomic_load(&got_usr1) < 2)
		fail("nanosleep", "cut short before the program's second signal came");
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	if (argc > 2 && !strcmp(argv[2], "nodump") && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe(pipefd) || socketpair(AF_UNIX, SOCK_STREAM, 0, sockpair) || sem_init(&fed, 0, 0))
		return 2;
	struct timeval tv = {0, 3000};
	setsockopt(sockpair[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un { unsigned short f; char p[108]; } a = { AF_UNIX, "" };
	snprintf(a.p + 1, sizeof a.p - 1, "wp-eintr-%d", getpid()); /* abstract socket */
	if (bind(listen_fd, (void *)&a, sizeof(a.f) + 1 + strlen(a.p + 1)) || listen(listen_fd, 1))
		return 2;
	setsockopt(listen_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

	struct sigaction sa = { 0 };
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL); /* no SA_RESTART: the program wants EINTR */

	void *(*fns[])(void *) = { t_nanosleep, t_clock_ns, t_usleep, t_sleep, t_poll, t_ppoll,
				   t_select, t_pselect, t_epoll, t_epoll_pwait, t_sem_timedwait,
				   t_sigtimedwait, t_recv_timeout, t_read_pipe, t_accept, t_sem_wait,
				   feeder };
	size_t n = sizeof(fns) / sizeof(fns[0]);
	pthread_t th[32], own;
	for (size_t i = 0; i < n; i++)
		pthread_create(&th[i], NULL, fns[i], NULL);
	pthread_create(&own, NULL, own_signal, NULL);

	struct timespec half = {0, 500000000};
	nanosleep(&half, NULL);
	pthread_kill(own, SIGUSR1); /* wakes pause() */
	nanosleep(&half, NULL);
	pthread_kill(own, SIGUSR1); /* cuts the 30 s sleep */
	pthread_join(own, NULL);

	struct timespec rest = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	nanosleep(&rest, NULL);
	atomic_store(&stop, 1);
	for (size_t i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	int f = atomic_load(&failures);
	printf("eintr_calls: %d failures, own signals delivered %d\n", f, atomic_load(&got_usr1));
	return f ? 1 : 0;
}
