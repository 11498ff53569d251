/* SPDX-License-Identifier: MIT */
/* Truth for "no transfer is cut short": each case makes ONE blocking call that moves a big
 * buffer (the way code that does not loop on short counts does, CPython's sys.stdout.write
 * among them) while the other side is slow, so the call blocks and wakes many times. The
 * call must return the full count and the other side must receive exactly those bytes.
 *
 *   writers (a slow reader drains):  write, writev, pwritev2(offset -1) into a pipe; write,
 *     send, sendto, sendmsg into a socketpair and into a TCP loopback connection
 *   readers (a slow writer feeds):   recv, recvfrom, recvmsg with MSG_WAITALL, both sockets
 *
 * Then the program's OWN signal (SIGUSR1, with and without SA_RESTART) is sent while a big
 * write or send is blocked, partly done or not started: the outcome (a short count, EINTR,
 * or the whole transfer once restarted) is printed, and must be what an unprofiled run
 * prints.
 *
 * Usage: transfers [ROUNDS [in-handler]]
 *                                  exit 1 on any failure, details on stderr; in-handler:
 *                                  the program's signal is sent while the writer sits in
 *                                  the agent's handler (WALLPROF_TEST=linger: its only
 *                                  nanosleep), so it lands nested inside it
 *        transfers measure SECONDS pipe writes of 256 KiB to a slow reader for SECONDS,
 *                                  counting the short ones (diagnostics: how often a signal
 *                                  lands inside a blocked write) */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"

#define SIZE (4u << 20)    /* bytes per transfer */
#define CHUNK (16u << 10)  /* what the slow side moves at a time */
#define PAUSE_NS 100000    /* and how long it rests in between */
#define SOCKBUF (64 << 10) /* small socket buffers: the fast side blocks often */

static uint8_t *pattern; /* SIZE bytes the receiver compares against */
static atomic_int failures;

static void fail(const char *what, const char *fmt, ...)
{
	char b[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof b, fmt, ap);
	va_end(ap);
	fprintf(stderr, "FAIL %s: %s\n", what, b);
	atomic_fetch_add(&failures, 1);
}

/* ---- descriptors ---- */

static void must(int ok, const char *what)
{
	if (!ok) {
		perror(what);
		exit(2);
	}
}

static void tcp_pair(int fds[2])
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	int sz = SOCKBUF, one = 1;
	must(l >= 0, "socket");
	setsockopt(l, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	setsockopt(l, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	must(!bind(l, (void *)&a, sizeof a) && !listen(l, 1) && !getsockname(l, (void *)&a, &al),
	     "listen");
	int c = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(c, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	must(!connect(c, (void *)&a, sizeof a), "connect");
	int s = accept(l, NULL, NULL);
	must(s >= 0, "accept");
	close(l);
	fds[0] = s; /* accepted side reads in the writer cases */
	fds[1] = c;
}

static void unix_pair(int fds[2])
{
	int sz = SOCKBUF;
	must(!socketpair(AF_UNIX, SOCK_STREAM, 0, fds), "socketpair");
	setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
	setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
}

enum kind { PIPE, UNIX, TCP };
static const char *kind_name[] = { "pipe", "socketpair", "tcp" };

/* fds[0] is read, fds[1] written */
static void open_kind(enum kind k, int fds[2])
{
	if (k == PIPE)
		must(!pipe(fds), "pipe");
	else if (k == UNIX)
		unix_pair(fds);
	else
		tcp_pair(fds);
}

static void close_write_side(enum kind k, int fd)
{
	if (k != PIPE)
		shutdown(fd, SHUT_WR);
	close(fd);
}

/* ---- the slow other side ---- */

struct side {
	int fd;
	size_t moved;    /* bytes the slow side moved */
	int mismatch;    /* received bytes differ from the pattern */
	int nocheck;     /* diagnostics: do not compare */
	pthread_t th;
};

/* Reads everything until end of file, CHUNK at a time with a rest in between, and checks
 * the bytes. A careful reader: it loops on short counts and EINTR. */
static void *slow_reader(void *arg)
{
	struct side *s = arg;
	static __thread uint8_t buf[CHUNK];
	for (;;) {
		ssize_t r = read(s->fd, buf, CHUNK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (!s->nocheck &&
		    (s->moved + (size_t)r > SIZE || memcmp(buf, pattern + s->moved, (size_t)r)))
			s->mismatch = 1;
		s->moved += (size_t)r;
		sleep_ns(PAUSE_NS);
	}
	return NULL;
}

/* Sends the pattern CHUNK at a time with a rest in between, then shuts its side. */
static void *slow_writer(void *arg)
{
	struct side *s = arg;
	while (s->moved < SIZE) {
		size_t n = SIZE - s->moved < CHUNK ? SIZE - s->moved : CHUNK;
		ssize_t r = write(s->fd, pattern + s->moved, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		s->moved += (size_t)r;
		sleep_ns(PAUSE_NS);
	}
	shutdown(s->fd, SHUT_WR);
	return NULL;
}

/* ---- one call each: the calls under test ---- */

/* three uneven pieces, so a continuation has to find its place inside an iovec */
static void three(struct iovec iov[3], uint8_t *p)
{
	size_t a = SIZE / 3 + 4097, b = SIZE / 2 - 123;
	iov[0] = (struct iovec){ p, a };
	iov[1] = (struct iovec){ p + a, b };
	iov[2] = (struct iovec){ p + a + b, SIZE - a - b };
}

enum call { C_WRITE, C_WRITEV, C_PWRITEV2, C_SEND, C_SENDTO, C_SENDMSG, C_RECV, C_RECVFROM,
	    C_RECVMSG };
static const char *call_name[] = { "write", "writev", "pwritev2", "send", "sendto", "sendmsg",
				   "recv(MSG_WAITALL)", "recvfrom(MSG_WAITALL)",
				   "recvmsg(MSG_WAITALL)" };

KEEP static ssize_t do_call(enum call c, int fd, uint8_t *buf)
{
	struct iovec iov[3];
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 3 };
	three(iov, buf);
	switch (c) {
	case C_WRITE: return write(fd, buf, SIZE);
	case C_WRITEV: return writev(fd, iov, 3);
	case C_PWRITEV2: return pwritev2(fd, iov, 3, -1, 0);
	case C_SEND: return send(fd, buf, SIZE, 0);
	case C_SENDTO: return sendto(fd, buf, SIZE, 0, NULL, 0);
	case C_SENDMSG: return sendmsg(fd, &m, 0);
	case C_RECV: return recv(fd, buf, SIZE, MSG_WAITALL);
	case C_RECVFROM: return recvfrom(fd, buf, SIZE, MSG_WAITALL, NULL, NULL);
	case C_RECVMSG: return recvmsg(fd, &m, MSG_WAITALL);
	}
	return -1;
}

static void one_case(enum call c, enum kind k)
{
	char what[64];
	snprintf(what, sizeof what, "%s into %s", call_name[c], kind_name[k]);
	int fds[2];
	open_kind(k, fds);
	int reading = c >= C_RECV;
	struct side s = { .fd = reading ? fds[1] : fds[0] };
	uint8_t *buf = reading ? calloc(1, SIZE) : pattern;
	must(buf != NULL, "calloc");
	pthread_create(&s.th, NULL, reading ? slow_writer : slow_reader, &s);
	ssize_t r = do_call(c, reading ? fds[0] : fds[1], buf);
	int e = errno;
	if (!reading)
		close_write_side(k, fds[1]);
	else /* take whatever a short recv left, so the writer can finish */
		for (uint8_t rest[CHUNK]; read(fds[0], rest, sizeof rest) > 0;)
			;
	pthread_join(s.th, NULL);
	if (r != (ssize_t)SIZE)
		fail(what, "returned %zd of %u (%s)", r, SIZE, r < 0 ? strerror(e) : "short count");
	if (!reading && (s.moved != (size_t)(r < 0 ? 0 : r) || s.mismatch))
		fail(what, "the reader got %zu bytes%s for a count of %zd", s.moved,
		     s.mismatch ? ", not the ones written," : "", r);
	if (reading && r > 0 && memcmp(buf, pattern, (size_t)r))
		fail(what, "the bytes received differ from the bytes sent");
	if (reading)
		free(buf);
	close(fds[0]);
	if (reading)
		close(fds[1]);
}

/* ---- the program's own signal still cuts a transfer short ---- */

static atomic_int usr1;
static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&usr1, 1);
}

/* The system call thread `tid` is asleep in, -1 when it runs or is gone
 * (/proc/self/task/TID/syscall shows the call's number while it blocks, "running" otherwise). */
static long asleep_in(pid_t tid)
{
	char path[64], b[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long nr = fgets(b, sizeof b, f) && b[0] != 'r' ? atol(b) : -1;
	fclose(f);
	return nr;
}

static int blocked_in(pid_t tid, long nr)
{
	return asleep_in(tid) == nr;
}

/* Whether the writer waits in its transfer: in the call it made, or in the agent's
 * continuation of it after a sample cut it short (writev for a pipe; poll then sendmsg for a
 * socket: transfers.c). */
static int blocked_writing(pid_t tid, int sock)
{
	long nr = asleep_in(tid);
	return sock ? nr == SYS_sendto || nr == SYS_poll || nr == SYS_sendmsg
		    : nr == SYS_write || nr == SYS_writev;
}

/* transfers ROUNDS in-handler (see the usage above) */
static int in_handler;

struct own {
	int fd;
	int sock;
	atomic_int tid;
	atomic_int done;
	ssize_t r;
	int err;
	sem_t go_on;
};

#define OWN_SIZE (1u << 20)

static void *own_writer(void *arg)
{
	struct own *o = arg;
	atomic_store(&o->tid, (int)syscall(SYS_gettid));
	o->r = o->sock ? send(o->fd, pattern, OWN_SIZE, 0) : write(o->fd, pattern, OWN_SIZE);
	o->err = errno;
	atomic_store(&o->done, 1);
	while (sem_wait(&o->go_on) != 0)
		;
	return NULL;
}

/* Drains `fd` until the writer's call has returned and nothing is left; returns the count. */
static size_t drain(int fd, atomic_int *done)
{
	static uint8_t buf[CHUNK];
	size_t got = 0;
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	for (int finished = 0;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (finished)
			break;
		finished = atomic_load(done); /* one more read after it returned */
		if (!finished)
			sleep_ns(1000000);
	}
	fcntl(fd, F_SETFL, fl);
	return got;
}

/* One program's-signal case: `prefill` fills the pipe first, so the write blocks before
 * moving anything. Prints the outcome class. */
static void own_case(int sock, int restart, int prefill)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_usr1;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigaction(SIGUSR1, &sa, NULL);

	int fds[2];
	open_kind(sock ? UNIX : PIPE, fds);
	size_t pre = 0;
	if (prefill) { /* fill the pipe up: the write will wait before moving a byte */
		fcntl(fds[1], F_SETFL, O_NONBLOCK);
		for (ssize_t r; (r = write(fds[1], pattern, CHUNK)) > 0;)
			pre += (size_t)r;
		fcntl(fds[1], F_SETFL, 0);
	}
	struct own o = { .fd = fds[1], .sock = sock };
	sem_init(&o.go_on, 0, 0);
	pthread_t th;
	pthread_create(&th, NULL, own_writer, &o);
	uint64_t t0 = mono_ns();
	while (!atomic_load(&o.done) && mono_ns() - t0 < 10000000000ull &&
	       !(atomic_load(&o.tid) && blocked_writing(atomic_load(&o.tid), sock)))
		sleep_ns(1000000);
	sleep_ns(20000000); /* settled in its wait */
	/* in-handler: this thread blocks SIGPROF meanwhile, so that it is not itself held in the
	 * agent's lingering handler for 20 ms between seeing the writer in its handler and
	 * sending the signal (the writer's linger would be over by then). */
	sigset_t prof, old;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	if (in_handler)
		pthread_sigmask(SIG_BLOCK, &prof, &old);
	int seen = 0;
	for (t0 = mono_ns(); in_handler && !seen && !atomic_load(&o.done) &&
			     mono_ns() - t0 < 10000000000ull;)
		if (!(seen = blocked_in(atomic_load(&o.tid), SYS_nanosleep)))
			sleep_ns(50000);
	if (in_handler && !seen && !atomic_load(&o.done))
		fail("in-handler", "the writer was never seen inside the agent's handler "
				   "(WALLPROF_TEST=linger missing?)");
	int before = atomic_load(&usr1);
	pthread_kill(th, SIGUSR1);
	if (in_handler)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	while (atomic_load(&usr1) == before)
		sleep_ns(1000000);
	/* A restarted call waits for room: give it all it wants. */
	size_t got = drain(fds[0], &o.done);
	sem_post(&o.go_on);
	pthread_join(th, NULL);

	char what[96];
	snprintf(what, sizeof what, "own SIGUSR1 (%s) during a %s into a %s, %s",
		 restart ? "SA_RESTART" : "no SA_RESTART", sock ? "send" : "write",
		 sock ? "socketpair" : "pipe", prefill ? "nothing moved yet" : "part moved");
	const char *outcome = o.r < 0 ? (o.err == EINTR ? "EINTR" : "error")
			      : o.r == OWN_SIZE ? "whole count" : "short count";
	printf("%s: %s\n", what, outcome);
	if (o.r > 0 && got != pre + (size_t)o.r)
		fail(what, "%zu bytes arrived for a count of %zd", got - pre, o.r);
	sem_destroy(&o.go_on);
	close(fds[0]);
	close(fds[1]);
	signal(SIGUSR1, SIG_DFL);
}

/* ---- diagnostics: how often a signal lands inside a blocked write ---- */

/* This thread's time on a CPU, time waiting for one, and its number of runs (schedstat). */
static void schedstat(unsigned long long v[3])
{
	v[0] = v[1] = v[2] = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (f) {
		if (fscanf(f, "%llu %llu %llu", &v[0], &v[1], &v[2]) != 3)
			v[0] = v[1] = v[2] = 0;
		fclose(f);
	}
}

static int measure(double seconds)
{
	unsigned long long s0[3], s1[3];
	schedstat(s0);
	int fds[2];
	must(!pipe(fds), "pipe");
	struct side s = { .fd = fds[0], .nocheck = 1 };
	pthread_create(&s.th, NULL, slow_reader, &s);
	unsigned long calls = 0, short_ = 0;
	uint64_t end = mono_ns() + (uint64_t)(seconds * 1e9);
	size_t n = 256u << 10;
	while (mono_ns() < end) {
		ssize_t r = write(fds[1], pattern, n);
		calls++;
		if (r != (ssize_t)n)
			short_++;
	}
	schedstat(s1);
	close(fds[1]);
	pthread_join(s.th, NULL);
	unsigned long long runs = s1[2] - s0[2] ? s1[2] - s0[2] : 1;
	fprintf(stderr, "writer: %llu runs, %.1f us on a CPU and %.1f us waiting for one per run\n",
		runs, (s1[0] - s0[0]) / 1e3 / runs, (s1[1] - s0[1]) / 1e3 / runs);
	printf("measure: %lu writes of %zu bytes in %.1f s, %lu short\n", calls, n, seconds, short_);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	pattern = malloc(SIZE);
	must(pattern != NULL, "malloc");
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < SIZE; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		pattern[i] = (uint8_t)x;
	}
	signal(SIGPIPE, SIG_IGN);
	if (argc > 2 && !strcmp(argv[1], "measure"))
		return measure(atof(argv[2]));

	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	in_handler = argc > 2 && !strcmp(argv[2], "in-handler");
	const struct { enum call c; enum kind k; } cases[] = {
		{ C_WRITE, PIPE }, { C_WRITEV, PIPE }, { C_PWRITEV2, PIPE },
		{ C_WRITE, UNIX }, { C_SEND, UNIX }, { C_SENDTO, UNIX }, { C_SENDMSG, UNIX },
		{ C_WRITEV, TCP }, { C_SEND, TCP }, { C_SENDTO, TCP }, { C_SENDMSG, TCP },
		{ C_RECV, UNIX }, { C_RECVFROM, UNIX }, { C_RECVMSG, UNIX },
		{ C_RECV, TCP }, { C_RECVFROM, TCP }, { C_RECVMSG, TCP },
	};
	size_t n = sizeof cases / sizeof cases[0];
	for (int round = 0; round < rounds; round++)
		for (size_t i = 0; i < n; i++)
			one_case(cases[i].c, cases[i].k);
	printf("transfers: %zu calls x %d rounds done\n", n, rounds);

	for (int sock = 0; sock < 2; sock++)
		for (int restart = 0; restart < 2; restart++)
			for (int prefill = 0; prefill < 2 - sock; prefill++)
				own_case(sock, restart, prefill);

	int f = atomic_load(&failures);
	printf("transfers: %s\n", f ? "FAILED" : "every count whole, every byte arrived");
	return f ? 1 : 0;
}
