/* SPDX-License-Identifier: MIT */
/* wait_objects: threads that each wait on one known descriptor or child for their whole
 * life, so that every waiting sample of theirs has one right object, which this program
 * writes itself from what it knows of its descriptors (issue 13: what io and child waits
 * wait FOR).
 *
 *   piperead    read() on pipe A (its write end open, nobody writes until the end)
 *   tcpread     recv() on one end of a loopback TCP connection
 *   acceptor    accept() on a listening TCP socket
 *   poller      poll() on pipe C's read end and a bound UDP socket
 *   selecter    select() on an eventfd
 *   epoller     epoll_wait() on an epoll watching a unix datagram socket bound to a path
 *   timerwait   read() on a timerfd never armed
 *   childwaiter waitpid() for a child that exec'd `sleep`
 *   pump        write() into pipe B, full, for the first half of the run;
 *   drain       then read() on pipe B (started once main has emptied it): each is seen
 *               blocked on the other's end, never at the same time
 *
 * Usage: wait_objects [SECONDS] (default 3). WP_TRUTH=FILE receives "tid.NAME N" and
 * "obj.NAME OBJECT" per thread: the object as the report should name it (without the other
 * end's threads, which the report adds from the profile). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static int pipe_a[2], pipe_b[2], pipe_c[2];
static int tcp_r, tcp_w, tcp_listen, udp_s, efd, ep, unix_s, tfd;
static pid_t child;
static char unix_path[108];

static unsigned long ino_of(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

static void *piperead_fn(void *arg)
{
	target_thread_begin(arg);
	char c;
	while (read(pipe_a[0], &c, 1) < 0)
		;
	return NULL;
}

static void *tcpread_fn(void *arg)
{
	target_thread_begin(arg);
	char c;
	while (recv(tcp_r, &c, 1, 0) < 0)
		;
	return NULL;
}

static void *acceptor_fn(void *arg)
{
	target_thread_begin(arg);
	int s;
	while ((s = accept(tcp_listen, NULL, NULL)) < 0)
		;
	close(s);
	return NULL;
}

static void *poller_fn(void *arg)
{
	target_thread_begin(arg);
	struct pollfd p[2] = { { pipe_c[0], POLLIN, 0 }, { udp_s, POLLIN, 0 } };
	while (poll(p, 2, -1) <= 0)
		;
	return NULL;
}

static void *selecter_fn(void *arg)
{
	target_thread_begin(arg);
	for (;;) {
		fd_set r;
		FD_ZERO(&r);
		FD_SET(efd, &r);
		if (select(efd + 1, &r, NULL, NULL, NULL) > 0)
			return NULL;
	}
}

static void *epoller_fn(void *arg)
{
	target_thread_begin(arg);
	struct epoll_event ev;
	while (epoll_wait(ep, &ev, 1, -1) <= 0)
		;
	return NULL;
}

static void *timerwait_fn(void *arg)
{
	target_thread_begin(arg);
	uint64_t v;
	while (read(tfd, &v, sizeof(v)) < 0)
		;
	return NULL;
}

static void *childwaiter_fn(void *arg)
{
	target_thread_begin(arg);
	while (waitpid(child, NULL, 0) < 0)
		;
	return NULL;
}

static void *pump_fn(void *arg)
{
	target_thread_begin(arg);
	/* pipe B is full: this write blocks until main empties it */
	while (write(pipe_b[1], "p", 1) < 0)
		;
	return NULL;
}

static void *drain_fn(void *arg)
{
	target_thread_begin(arg);
	char c = 0;
	while (c != 'E')
		if (read(pipe_b[0], &c, 1) < 0)
			c = 0;
	return NULL;
}

static struct target_thread thrs[] = {
	{ "piperead", piperead_fn, 0, 0 },   { "tcpread", tcpread_fn, 0, 0 },
	{ "acceptor", acceptor_fn, 0, 0 },   { "poller", poller_fn, 0, 0 },
	{ "selecter", selecter_fn, 0, 0 },   { "epoller", epoller_fn, 0, 0 },
	{ "timerwait", timerwait_fn, 0, 0 }, { "childwaiter", childwaiter_fn, 0, 0 },
	{ "pump", pump_fn, 0, 0 },	     { "drain", drain_fn, 0, 0 },
};
#define NTHR (sizeof(thrs) / sizeof(thrs[0]))
#define DRAIN 9

static const char *addr(const struct sockaddr_in *a, char *buf, size_t cap)
{
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(buf, cap, "%s:%u", ip, (unsigned)ntohs(a->sin_port));
	return buf;
}

static int sockets(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in l, p;
	socklen_t len = sizeof(a);
	char b1[64], b2[64];
	int lsn = socket(AF_INET, SOCK_STREAM, 0);
	if (lsn < 0 || bind(lsn, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(lsn, 1) != 0 ||
	    getsockname(lsn, (struct sockaddr *)&a, &len) != 0)
		return -1;
	tcp_w = socket(AF_INET, SOCK_STREAM, 0);
	if (tcp_w < 0 || connect(tcp_w, (struct sockaddr *)&a, sizeof(a)) != 0)
		return -1;
	tcp_r = accept(lsn, NULL, NULL);
	close(lsn);
	len = sizeof(l);
	if (tcp_r < 0 || getsockname(tcp_r, (struct sockaddr *)&l, &len) != 0 ||
	    getpeername(tcp_r, (struct sockaddr *)&p, &(socklen_t){ sizeof(p) }) != 0)
		return -1;
	truth("obj.tcpread socket:[%lu] tcp %s -> %s", ino_of(tcp_r), addr(&l, b1, sizeof(b1)),
	      addr(&p, b2, sizeof(b2)));

	struct sockaddr_in b = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	len = sizeof(b);
	tcp_listen = socket(AF_INET, SOCK_STREAM, 0);
	if (tcp_listen < 0 || bind(tcp_listen, (struct sockaddr *)&b, sizeof(b)) != 0 ||
	    listen(tcp_listen, 1) != 0 || getsockname(tcp_listen, (struct sockaddr *)&b, &len) != 0)
		return -1;
	truth("obj.acceptor socket:[%lu] tcp %s listening", ino_of(tcp_listen),
	      addr(&b, b1, sizeof(b1)));

	struct sockaddr_in u = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	len = sizeof(u);
	udp_s = socket(AF_INET, SOCK_DGRAM, 0);
	if (udp_s < 0 || bind(udp_s, (struct sockaddr *)&u, sizeof(u)) != 0 ||
	    getsockname(udp_s, (struct sockaddr *)&u, &len) != 0)
		return -1;
	truth("obj.poller poll pipe:[%lu] read end (write end fd %d), socket:[%lu] udp %s",
	      ino_of(pipe_c[0]), pipe_c[1], ino_of(udp_s), addr(&u, b1, sizeof(b1)));

	struct sockaddr_un un = { .sun_family = AF_UNIX };
	snprintf(unix_path, sizeof(unix_path), "/tmp/wait_objects.%d.sock", (int)getpid());
	strcpy(un.sun_path, unix_path);
	unlink(unix_path);
	unix_s = socket(AF_UNIX, SOCK_DGRAM, 0);
	ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	ev.data.fd = unix_s;
	if (unix_s < 0 || bind(unix_s, (struct sockaddr *)&un, sizeof(un)) != 0 || ep < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, unix_s, &ev) != 0)
		return -1;
	truth("obj.epoller epoll socket:[%lu] unix dgram %s", ino_of(unix_s), unix_path);
	return 0;
}

/* A child that has exec'd `sleep` before any thread waits for it (a close-on-exec pipe
 * reads end-of-file at the exec). */
static int start_child(double secs)
{
	int go[2];
	if (pipe2(go, O_CLOEXEC) != 0)
		return -1;
	child = fork();
	if (child == 0) {
		char arg[32];
		snprintf(arg, sizeof(arg), "%.3f", secs + 1);
		execlp("sleep", "sleep", arg, (char *)NULL);
		_exit(127);
	}
	close(go[1]);
	char c;
	while (read(go[0], &c, 1) > 0)
		;
	close(go[0]);
	truth("obj.childwaiter pid %d (sleep)", (int)child);
	return child > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	double secs = run_seconds(argc, argv, 3.0);
	truth_open();
	if (pipe(pipe_a) != 0 || pipe(pipe_b) != 0 || pipe(pipe_c) != 0)
		return 3;
	truth("obj.piperead pipe:[%lu] read end (write end fd %d)", ino_of(pipe_a[0]), pipe_a[1]);
	truth("obj.pump pipe:[%lu] write end (read end fd %d)", ino_of(pipe_b[0]), pipe_b[0]);
	truth("obj.drain pipe:[%lu] read end (write end fd %d)", ino_of(pipe_b[0]), pipe_b[1]);
	/* fill pipe B, so that the pump's next write blocks */
	fcntl(pipe_b[1], F_SETFL, O_NONBLOCK);
	while (write(pipe_b[1], "f", 1) == 1)
		;
	fcntl(pipe_b[1], F_SETFL, 0);
	efd = eventfd(0, 0);
	tfd = timerfd_create(CLOCK_MONOTONIC, 0);
	if (efd < 0 || tfd < 0 || sockets() != 0 || start_child(secs) != 0)
		return 3;
	truth("obj.selecter select eventfd fd %d", efd);
	truth("obj.timerwait timerfd fd %d", tfd);
	for (size_t i = 0; i < NTHR; i++)
		if (i != DRAIN)
			pthread_create(&thrs[i].handle, NULL, thrs[i].fn, &thrs[i]);
	sleep_ns((uint64_t)(secs / 2 * 1e9));
	/* empty pipe B: the pump's write goes through; then the drain waits on the read end */
	fcntl(pipe_b[0], F_SETFL, O_NONBLOCK);
	char buf[4096];
	while (read(pipe_b[0], buf, sizeof(buf)) > 0)
		;
	pthread_join(thrs[8].handle, NULL);
	while (read(pipe_b[0], buf, sizeof(buf)) > 0)
		;
	fcntl(pipe_b[0], F_SETFL, 0);
	pthread_create(&thrs[DRAIN].handle, NULL, drain_fn, &thrs[DRAIN]);
	sleep_ns((uint64_t)(secs / 2 * 1e9));

	uint64_t one = 1;
	struct itimerspec soon = { .it_value = { 0, 1000 } };
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	strcpy(un.sun_path, unix_path);
	int us = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_in u;
	socklen_t len = sizeof(u);
	getsockname(udp_s, (struct sockaddr *)&u, &len);
	int uc = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a;
	len = sizeof(a);
	getsockname(tcp_listen, (struct sockaddr *)&a, &len);
	int cc = socket(AF_INET, SOCK_STREAM, 0);
	if (write(pipe_a[1], "x", 1) != 1 || send(tcp_w, "x", 1, 0) != 1 ||
	    write(efd, &one, sizeof(one)) != sizeof(one) ||
	    timerfd_settime(tfd, 0, &soon, NULL) != 0 || write(pipe_b[1], "E", 1) != 1 ||
	    sendto(us, "x", 1, 0, (struct sockaddr *)&un, sizeof(un)) != 1 ||
	    sendto(uc, "x", 1, 0, (struct sockaddr *)&u, sizeof(u)) != 1 ||
	    connect(cc, (struct sockaddr *)&a, sizeof(a)) != 0)
		return 3;
	kill(child, SIGTERM);
	for (size_t i = 0; i < NTHR; i++)
		if (i != 8)
			pthread_join(thrs[i].handle, NULL);
	unlink(unix_path);
	for (size_t i = 0; i < NTHR; i++)
		truth("tid.%s %d", thrs[i].name, (int)thrs[i].tid);
	truth_close();
	puts("wait_objects done");
	return 0;
}
