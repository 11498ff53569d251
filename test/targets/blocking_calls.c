/* SPDX-License-Identifier: MIT */
/* blocking_calls: one thread per blocking system call the C library makes, each blocking in
 * its call for about 20 ms at a time, over and over, until the end of the run (argv[1]
 * seconds, default 2). Each thread is named after its call ("epoll_wait", "select0", ...)
 * and blocks in a function of its own (wait_in_<call>), so a test can read each thread's
 * leaves. WP_TRUTH=FILE receives per thread "tid.NAME N", "in_ns.NAME N" (the time it spent
 * inside its call, by its own clock) and "obj.NAME TEXT" (what the call waits on: a pipe's
 * or socket's inode as /proc names it, a file's path, a System V id).
 *
 *   epoll_wait, epoll_pwait, epoll_pwait2   an epoll watching a pipe's read end, 20 ms timeout
 *   recv, recvmsg     a unix socket with nothing to read (SO_RCVTIMEO 20 ms)
 *   send, sendmsg     a unix socket whose peer's buffer is full (SO_SNDTIMEO 20 ms)
 *   accept            a listening unix socket nobody connects to (SO_RCVTIMEO 20 ms)
 *   poll0, ppoll0, select0, pselect0   no descriptor at all, 20 ms: sleeps
 *   fdatasync, fsync, sync_file_range  a file of the working directory, 4 MB written first
 *   flock, ofd_lock   a lock another thread holds 20 ms at a time (flock, F_OFD_SETLKW)
 *   msgrcv            a System V queue another thread sends to every 20 ms
 *   semtimedop        a System V semaphore nobody posts (20 ms timeout)
 *   sigtimedwait      a blocked signal nobody sends (20 ms timeout)
 *   waitid            a child that sleeps 20 ms */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "common.h"

#define NAP_NS (20 * 1000000ull)

static uint64_t deadline;
static atomic_int stop;
static char dir[256] = ".";

struct call {
	struct target_thread th;
	uint64_t in_ns;  /* time spent inside the call */
	char obj[300];   /* what it waits on */
	int fd, fd2;
};

static int done(void)
{
	return atomic_load(&stop) || mono_ns() >= deadline;
}

static void timeouts(int fd)
{
	struct timeval tv = { 0, (suseconds_t)(NAP_NS / 1000) };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* "socket:[N]", "pipe:[N]" or a path, as /proc/self/fd names fd. */
static void fd_name(int fd, char *buf, size_t cap)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(p, buf, cap - 1);
	buf[n > 0 ? n : 0] = 0;
}

#define TIMED(c, expr)                                 \
	do {                                           \
		uint64_t t0_ = mono_ns();              \
		(void)(expr);                          \
		(c)->in_ns += mono_ns() - t0_;         \
	} while (0)

/* --- epoll --------------------------------------------------------------------------- */

static int epoll_on_pipe(struct call *c)
{
	int p[2];
	if (pipe(p) != 0)
		exit(2);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = p[0] };
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	fd_name(p[0], c->obj, sizeof(c->obj));
	return ep;
}

static KEEP void wait_in_epoll_wait(struct call *c, int ep)
{
	struct epoll_event ev;
	TIMED(c, epoll_wait(ep, &ev, 1, (int)(NAP_NS / 1000000)));
	BARRIER();
}

static KEEP void wait_in_epoll_pwait(struct call *c, int ep)
{
	struct epoll_event ev;
	sigset_t none;
	sigemptyset(&none);
	TIMED(c, epoll_pwait(ep, &ev, 1, (int)(NAP_NS / 1000000), &none));
	BARRIER();
}

static KEEP void wait_in_epoll_pwait2(struct call *c, int ep)
{
	struct epoll_event ev;
	struct timespec ts = { 0, (long)NAP_NS };
	TIMED(c, syscall(SYS_epoll_pwait2, ep, &ev, 1, &ts, NULL, 8));
	BARRIER();
}

static void *epoll_thread(void *arg)
{
	struct call *c = arg;
	target_thread_begin(&c->th);
	int ep = epoll_on_pipe(c);
	while (!done()) {
		if (!strcmp(c->th.name, "epoll_wait"))
			wait_in_epoll_wait(c, ep);
		else if (!strcmp(c->th.name, "epoll_pwait"))
			wait_in_epoll_pwait(c, ep);
		else
			wait_in_epoll_pwait2(c, ep);
	}
	return NULL;
}

/* --- sockets ------------------------------------------------------------------------- */

static KEEP void wait_in_recv(struct call *c, int fd)
{
	char b[16];
	TIMED(c, recv(fd, b, sizeof(b), 0));
	BARRIER();
}

static KEEP void wait_in_recvmsg(struct call *c, int fd)
{
	char b[16];
	struct iovec iov = { b, sizeof(b) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	TIMED(c, recvmsg(fd, &m, 0));
	BARRIER();
}

static KEEP void wait_in_send(struct call *c, int fd)
{
	static char b[65536];
	TIMED(c, send(fd, b, sizeof(b), 0));
	BARRIER();
}

static KEEP void wait_in_sendmsg(struct call *c, int fd)
{
	static char b[65536];
	struct iovec iov = { b, sizeof(b) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	TIMED(c, sendmsg(fd, &m, 0));
	BARRIER();
}

static KEEP void wait_in_accept(struct call *c, int fd)
{
	TIMED(c, accept4(fd, NULL, NULL, SOCK_CLOEXEC));
	BARRIER();
}

static void *socket_thread(void *arg)
{
	struct call *c = arg;
	target_thread_begin(&c->th);
	const char *n = c->th.name;
	int sv[2];
	if (!strcmp(n, "accept")) {
		int l = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		/* a socket's path is short (108 bytes): relative to the working directory */
		snprintf(a.sun_path, sizeof(a.sun_path), "blocking_calls.%d.sock", (int)getpid());
		unlink(a.sun_path);
		if (bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 4) != 0)
			exit(2);
		timeouts(l);
		fd_name(l, c->obj, sizeof(c->obj));
		while (!done())
			wait_in_accept(c, l);
		unlink(a.sun_path);
		return NULL;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		exit(2);
	timeouts(sv[0]);
	fd_name(sv[0], c->obj, sizeof(c->obj));
	if (!strncmp(n, "send", 4)) {
		/* fill the buffers: a send then waits for room that never comes */
		int fl = fcntl(sv[0], F_GETFL);
		fcntl(sv[0], F_SETFL, fl | O_NONBLOCK);
		static char b[65536];
		while (send(sv[0], b, sizeof(b), 0) > 0)
			;
		fcntl(sv[0], F_SETFL, fl);
	}
	while (!done()) {
		if (!strcmp(n, "recv"))
			wait_in_recv(c, sv[0]);
		else if (!strcmp(n, "recvmsg"))
			wait_in_recvmsg(c, sv[0]);
		else if (!strcmp(n, "send"))
			wait_in_send(c, sv[0]);
		else
			wait_in_sendmsg(c, sv[0]);
	}
	return NULL;
}

/* --- polls over nothing: sleeps ------------------------------------------------------ */

static KEEP void wait_in_poll0(struct call *c)
{
	TIMED(c, poll(NULL, 0, (int)(NAP_NS / 1000000)));
	BARRIER();
}

static KEEP void wait_in_ppoll0(struct call *c)
{
	struct timespec ts = { 0, (long)NAP_NS };
	TIMED(c, ppoll(NULL, 0, &ts, NULL));
	BARRIER();
}

static KEEP void wait_in_select0(struct call *c)
{
	struct timeval tv = { 0, (suseconds_t)(NAP_NS / 1000) };
	TIMED(c, select(0, NULL, NULL, NULL, &tv));
	BARRIER();
}

static KEEP void wait_in_pselect0(struct call *c)
{
	struct timespec ts = { 0, (long)NAP_NS };
	TIMED(c, pselect(0, NULL, NULL, NULL, &ts, NULL));
	BARRIER();
}

static void *nap_thread(void *arg)
{
	struct call *c = arg;
	target_thread_begin(&c->th);
	snprintf(c->obj, sizeof(c->obj), "20ms");
	while (!done()) {
		const char *n = c->th.name;
		if (!strcmp(n, "poll0"))
			wait_in_poll0(c);
		else if (!strcmp(n, "ppoll0"))
			wait_in_ppoll0(c);
		else if (!strcmp(n, "select0"))
			wait_in_select0(c);
		else
			wait_in_pselect0(c);
	}
	return NULL;
}

/* --- a file's data to the disk ------------------------------------------------------- */

static KEEP void wait_in_fdatasync(struct call *c, int fd)
{
	TIMED(c, fdatasync(fd));
	BARRIER();
}

static KEEP void wait_in_fsync(struct call *c, int fd)
{
	TIMED(c, fsync(fd));
	BARRIER();
}

static KEEP void wait_in_sync_file_range(struct call *c, int fd)
{
	TIMED(c, sync_file_range(fd, 0, 0,
				 SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
					 SYNC_FILE_RANGE_WAIT_AFTER));
	BARRIER();
}

static void *sync_thread(void *arg)
{
	struct call *c = arg;
	target_thread_begin(&c->th);
	char path[512];
	snprintf(path, sizeof(path), "%s/blocking_calls.%d.%s", dir, (int)getpid(), c->th.name);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		exit(2);
	fd_name(fd, c->obj, sizeof(c->obj));
	static char block[1 << 20];
	memset(block, 'x', sizeof(block));
	while (!done()) {
		for (int i = 0; i < 4; i++)
			if (pwrite(fd, block, sizeof(block), (off_t)i << 20) < 0)
				exit(2);
		if (!strcmp(c->th.name, "fdatasync"))
			wait_in_fdatasync(c, fd);
		else if (!strcmp(c->th.name, "fsync"))
			wait_in_fsync(c, fd);
		else
			wait_in_sync_file_range(c, fd);
	}
	close(fd);
	unlink(path);
	return NULL;
}

/* --- locks another thread holds ------------------------------------------------------ */

static char lock_path[512];
static atomic_int holder_ready;

/* Holds both locks 20 ms at a time, lets go for 1 ms. */
static void *lock_holder(void *arg)
{
	struct call *c = arg;
	target_thread_begin(&c->th);
	int f = open(lock_path, O_RDWR);
	int g = open(lock_path, O_RDWR);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	while (!done()) {
		flock(f, LOCK_EX);
		fl.l_type = F_WRLCK;
		fcntl(g, F_OFD_SETLKW, &fl);
		atomic_store(&holder_ready, 1);
		sleep_ns(NAP_NS);
		flock(f, LOCK_UN);
		fl.l_type = F_UNLCK;
		fcntl(g, F_OFD_SETLK, &fl);
		sleep_ns(1000000);
	}
	atomic_store(&holder_ready, 1);
	close(f);
	close(g);
	return NULL;
}

static KEEP void wait_in_flock(struct call *c, int fd)
{
	TIMED(c, flock(fd, LOCK_EX));
	BARRIER();
	flock(fd, LOCK_UN);
}

static KEEP void wait_in_ofd_lock(struct call *c, int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	TIMED(c, fcntl(fd, F_OFD_SETLKW, &fl));
	BARRIER();
	fl.l_type = F_UNLCK;
	fcntl(fd, F_OFD_SETLK, &fl);
}

static void *lock_thread(void *arg)
{
	struct call *c = arg;
	target_thread_begin(&c->th);
	int fd = open(lock_path, O_RDWR);
	fd_name(fd, c->obj, sizeof(c->obj));
	while (!atomic_load(&holder_ready))
		sleep_ns(1000000);
	while (!done()) {
		if (!strcmp(c->th.name, "flock"))
			wait_in_flock(c, fd);
		else
			wait_in_ofd_lock(c, fd);
		sleep_ns(500000); /* the holder takes it again first */
	}
	close(fd);
	return NULL;
}

/* --- System V IPC -------------------------------------------------------------------- */

static int queue = -1;

static void *msg_sender(void *arg)
{
	struct call *c = arg;
	target_thread_begin(&c->th);
	struct { long type; char b[8]; } m = { 1, "x" };
	while (!done()) {
		sleep_ns(NAP_NS);
		msgsnd(queue, &m, sizeof(m.b), IPC_NOWAIT);
	}
	msgsnd(queue, &m, sizeof(m.b), IPC_NOWAIT); /* the receiver's last wait */
	return NULL;
}

static KEEP void wait_in_msgrcv(struct call *c)
{
	struct { long type; char b[8]; } m;
	TIMED(c, msgrcv(queue, &m, sizeof(m.b), 0, 0));
	BARRIER();
}

static void *msgrcv_thread(void *arg)
{
	struct call *c = arg;
	target_thread_begin(&c->th);
	snprintf(c->obj, sizeof(c->obj), "%d", queue);
	while (!done())
		wait_in_msgrcv(c);
	return NULL;
}

static KEEP void wait_in_semtimedop(struct call *c, int sem)
{
	struct sembuf op = { 0, -1, 0 };
	struct timespec ts = { 0, (long)NAP_NS };
	TIMED(c, semtimedop(sem, &op, 1, &ts));
	BARRIER();
}

static void *sem_thread(void *arg)
{
	struct call *c = arg;
	target_thread_begin(&c->th);
	int sem = semget(IPC_PRIVATE, 1, 0600);
	snprintf(c->obj, sizeof(c->obj), "%d", sem);
	while (!done())
		wait_in_semtimedop(c, sem);
	semctl(sem, 0, IPC_RMID);
	return NULL;
}

/* --- signals and children ------------------------------------------------------------ */

static KEEP void wait_in_sigtimedwait(struct call *c, const sigset_t *set)
{
	struct timespec ts = { 0, (long)NAP_NS };
	TIMED(c, sigtimedwait(set, NULL, &ts));
	BARRIER();
}

static void *sigwait_thread(void *arg)
{
	struct call *c = arg;
	target_thread_begin(&c->th);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	snprintf(c->obj, sizeof(c->obj), "sigtimedwait");
	while (!done())
		wait_in_sigtimedwait(c, &set);
	return NULL;
}

static KEEP void wait_in_waitid(struct call *c, pid_t pid)
{
	siginfo_t si;
	TIMED(c, waitid(P_PID, (id_t)pid, &si, WEXITED));
	BARRIER();
}

static void *waitid_thread(void *arg)
{
	struct call *c = arg;
	target_thread_begin(&c->th);
	while (!done()) {
		pid_t pid = fork();
		if (pid == 0) {
			struct timespec ts = { 0, (long)NAP_NS };
			syscall(SYS_nanosleep, &ts, NULL);
			_exit(0);
		}
		snprintf(c->obj, sizeof(c->obj), "pid %d", (int)pid);
		wait_in_waitid(c, pid);
	}
	return NULL;
}

/* ------------------------------------------------------------------------------------- */

static struct call calls[] = {
	{ { "epoll_wait", epoll_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "epoll_pwait", epoll_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "epoll_pwait2", epoll_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "recv", socket_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "recvmsg", socket_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "send", socket_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "sendmsg", socket_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "accept", socket_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "poll0", nap_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "ppoll0", nap_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "select0", nap_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "pselect0", nap_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "fdatasync", sync_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "fsync", sync_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "sync_file_range", sync_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "lock_holder", lock_holder, 0, 0 }, 0, "", 0, 0 },
	{ { "flock", lock_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "ofd_lock", lock_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "msg_sender", msg_sender, 0, 0 }, 0, "", 0, 0 },
	{ { "msgrcv", msgrcv_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "semtimedop", sem_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "sigtimedwait", sigwait_thread, 0, 0 }, 0, "", 0, 0 },
	{ { "waitid", waitid_thread, 0, 0 }, 0, "", 0, 0 },
};

int main(int argc, char **argv)
{
	double secs = run_seconds(argc, argv, 2.0);
	const char *d = getenv("BLOCKING_CALLS_DIR");
	if (d && *d)
		snprintf(dir, sizeof(dir), "%s", d);
	truth_open();
	/* SIGUSR2 blocked in every thread: sigtimedwait's, never delivered */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	snprintf(lock_path, sizeof(lock_path), "%s/blocking_calls.%d.lock", dir, (int)getpid());
	int lf = open(lock_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (lf < 0) {
		perror(lock_path);
		return 2;
	}
	close(lf);
	queue = msgget(IPC_PRIVATE, 0600);
	deadline = mono_ns() + (uint64_t)(secs * 1e9);
	size_t n = sizeof(calls) / sizeof(calls[0]);
	for (size_t i = 0; i < n; i++)
		pthread_create(&calls[i].th.handle, NULL, calls[i].th.fn, &calls[i]);
	for (size_t i = 0; i < n; i++)
		pthread_join(calls[i].th.handle, NULL);
	for (size_t i = 0; i < n; i++) {
		truth("tid.%s %d", calls[i].th.name, (int)calls[i].th.tid);
		truth("in_ns.%s %llu", calls[i].th.name, (unsigned long long)calls[i].in_ns);
		truth("obj.%s %s", calls[i].th.name, calls[i].obj);
	}
	msgctl(queue, IPC_RMID, NULL);
	unlink(lock_path);
	truth_close();
	return 0;
}
