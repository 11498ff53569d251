/* SPDX-License-Identifier: MIT */
/* This file defines both pwritev2 and pwritev64v2: without the large-file redirection, each
 * name is its own symbol (the build asks for _FILE_OFFSET_BITS=64, which would make a
 * definition of pwritev2 come out as pwritev64v2). Both take a 64-bit offset on x86-64. */
#undef _FILE_OFFSET_BITS

#include "transfers.h"

#include "interpose.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "eintr.h"

#define EXPORT __attribute__((visibility("default")))

__thread int wp_transfer_finishing __attribute__((tls_model("initial-exec")));

#define REALS(X)                                                                             \
	X(write, ssize_t, (int, const void *, size_t))                                           \
	X(writev, ssize_t, (int, const struct iovec *, int))                                     \
	X(pwritev2, ssize_t, (int, const struct iovec *, int, off_t, int))                       \
	X(pwritev64v2, ssize_t, (int, const struct iovec *, int, off64_t, int))                  \
	X(send, ssize_t, (int, const void *, size_t, int))                                       \
	X(sendto, ssize_t, (int, const void *, size_t, int, const struct sockaddr *, socklen_t)) \
	X(sendmsg, ssize_t, (int, const struct msghdr *, int))                                   \
	X(recv, ssize_t, (int, void *, size_t, int))                                             \
	X(recvfrom, ssize_t, (int, void *, size_t, int, struct sockaddr *, socklen_t *))         \
	X(recvmsg, ssize_t, (int, struct msghdr *, int))                                         \
	X(poll, int, (struct pollfd *, nfds_t, int))

REALS(WP_DECLARE_REAL)

void wp_transfers_init(void)
{
	REALS(WP_RESOLVE_REAL)
}

#define REAL(name) WP_REAL(name)

/* ---- one transfer, described once for the slow path ---- */

enum way { OUT, IN };

struct xfer {
	int fd;
	enum way way;
	const struct iovec *iov; /* the program's buffers */
	int iovcnt;
	int flags;               /* MSG_* (socket calls) or RWF_* (pwritev2) */
	int socket_call;         /* send*, recv*: only valid on a socket */
	int rwf;                 /* pwritev2: continue with pwritev2 and these flags */
	off_t offset;            /* pwritev2: -1 (the file position) or a fixed place */
	int has_control;         /* recvmsg asked for ancillary data */
};

/* The kernel moves at most this much in one call (MAX_RW_COUNT): a bigger request comes
 * back "short" by design, never to be continued past it. */
#define MAX_RW ((size_t)0x7ffff000)
/* Buffers passed per continuation call (a bigger iovec array is walked in windows). */
#define WINDOW 64

static size_t total_of(const struct xfer *x)
{
	size_t t = 0;
	for (int i = 0; i < x->iovcnt && t < MAX_RW; i++)
		t += x->iov[i].iov_len;
	return t < MAX_RW ? t : MAX_RW;
}

/* The program's buffers from byte `done` to byte `want`, at most WINDOW of them, into win. */
static int window(const struct xfer *x, size_t done, size_t want, struct iovec *win)
{
	size_t skip = done, room = want - done;
	int n = 0;
	for (int i = 0; i < x->iovcnt && n < WINDOW && room; i++) {
		size_t len = x->iov[i].iov_len;
		if (skip >= len) {
			skip -= len;
			continue;
		}
		size_t take = len - skip < room ? len - skip : room;
		win[n++] = (struct iovec){ (char *)x->iov[i].iov_base + skip, take };
		room -= take;
		skip = 0;
	}
	return n;
}

/* ---- can a short count be ours, and can the rest follow? ---- */

enum fdkind { NO, BLOCKING, STREAM_SOCKET };

/* Only the short path pays these system calls (2 or 3). A short count is continued only
 * where a signal is the one thing that cuts a blocking transfer short: pipes and FIFOs,
 * terminals, stream sockets; the descriptor must be blocking and the call must wait for all
 * of it (a short read, or a recv without MSG_WAITALL, is normal). Regular files and block
 * devices are not interrupted by signals (a short count there is a full disk or a file size
 * limit: writing on would raise SIGXFSZ); other character devices have their own rules. */
static enum fdkind kind_of(const struct xfer *x)
{
	if (x->way == IN && (!(x->flags & MSG_WAITALL) || x->has_control ||
			     (x->flags & (MSG_PEEK | MSG_OOB | MSG_DONTWAIT | MSG_ERRQUEUE))))
		return NO;
	if (x->socket_call && (x->flags & (MSG_DONTWAIT | MSG_OOB | MSG_ZEROCOPY | MSG_FASTOPEN)))
		return NO;
	if (x->rwf && ((x->flags & RWF_NOWAIT) || x->offset != -1))
		return NO;
	struct stat st;
	int fl = fcntl(x->fd, F_GETFL);
	if (fl < 0 || (fl & O_NONBLOCK) || fstat(x->fd, &st) != 0)
		return NO;
	if (S_ISSOCK(st.st_mode)) {
		int type = 0;
		socklen_t len = sizeof(type);
		/* a datagram is sent whole or not at all, and MSG_WAITALL does not apply to it */
		if (getsockopt(x->fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
			return NO;
		return STREAM_SOCKET;
	}
	if (x->socket_call)
		return NO;
	if (S_ISFIFO(st.st_mode))
		return BLOCKING;
	struct termios tio;
	return S_ISCHR(st.st_mode) && tcgetattr(x->fd, &tio) == 0 ? BLOCKING : NO;
}

/* ---- the rest, on the program's behalf ---- */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Pipes and terminals: the same blocking call on what is left, piece after piece. A piece
 * cut short by our signal again is continued too; once a program's handler has run, what
 * was moved so far is the answer (unprofiled, that signal would have cut the call there;
 * with SA_RESTART the kernel would restart a piece that had moved nothing yet, so the
 * trampoline makes it fail with EINTR instead: signals.c). */
static size_t rest_blocking(const struct xfer *x, size_t done, size_t want)
{
	unsigned prog = wp_program_signals;
	while (done < want && wp_program_signals == prog) {
		struct iovec win[WINDOW];
		int n = window(x, done, want, win);
		unsigned long long before = wp_signals_snap();
		int outer = wp_transfer_finishing; /* a program handler may write, too */
		wp_transfer_finishing = 1;
		ssize_t r = x->rwf ? real_pwritev2(x->fd, win, n, -1, x->flags)
				   : real_writev(x->fd, win, n);
		wp_transfer_finishing = outer;
		if (r > 0)
			done += (size_t)r;
		else if (r == 0 || errno != EINTR || !wp_ours_since(before))
			break; /* EPIPE, EIO...: the program's next call will say so */
	}
	return done;
}

/* The socket's own send or receive timeout in ms (at most INT_MAX), -1 for none. */
static int64_t socket_timeout_ms(int fd, enum way way)
{
	struct timeval tv = { 0, 0 };
	socklen_t len = sizeof(tv);
	if (getsockopt(fd, SOL_SOCKET, way == IN ? SO_RCVTIMEO : SO_SNDTIMEO, &tv, &len) != 0 ||
	    (tv.tv_sec == 0 && tv.tv_usec == 0))
		return -1;
	if (tv.tv_sec >= INT_MAX / 1000)
		return INT_MAX;
	return (int64_t)tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
}

/* Waits until `fd` is ready for `events`, resuming after our signal. Returns the poll events,
 * 0 when `deadline` (0: none) passed, -1 on error or when a program's handler ran. */
static int wait_ready(int fd, short events, uint64_t deadline)
{
	for (;;) {
		int ms = -1;
		if (deadline) {
			uint64_t now = mono_ns();
			if (now >= deadline)
				return 0;
			ms = (int)((deadline - now + 999999) / 1000000);
		}
		struct pollfd p = { fd, events, 0 };
		unsigned long long before = wp_signals_snap();
		int r = real_poll(&p, 1, ms);
		if (r > 0)
			return p.revents;
		if (r < 0 && (errno != EINTR || !wp_ours_since(before)))
			return -1;
	}
}

/* Stream sockets: wait for room (or data) with poll, then move what can be moved without
 * waiting (MSG_DONTWAIT), until all of it went through. Done this way rather than with the
 * blocking call again so that
 *  - a pending error (a reset connection) is seen by poll, not consumed: the program's next
 *    call reports it, as it would have without us;
 *  - no SIGPIPE is raised on the program's behalf (MSG_NOSIGNAL; a closed peer shows as
 *    POLLHUP first);
 *  - the socket's timeout (SO_SNDTIMEO/SO_RCVTIMEO) bounds the wait: the rest gets one
 *    whole timeout, as a retried call does (the original call's start is not known, to keep
 *    the full transfer free of clock reads), and the transfer ends short when it passes. */
static size_t rest_socket(const struct xfer *x, size_t done, size_t want)
{
	int64_t tmo = socket_timeout_ms(x->fd, x->way);
	uint64_t deadline = tmo < 0 ? 0 : mono_ns() + (uint64_t)tmo * 1000000ull;
	int flags = x->socket_call ? x->flags : 0;
	flags = x->way == OUT ? (flags & ~MSG_WAITALL) | MSG_NOSIGNAL | MSG_DONTWAIT
			      : flags | MSG_DONTWAIT;
	unsigned prog = wp_program_signals;
	for (int empty = 0; done < want && wp_program_signals == prog;) {
		int ev = wait_ready(x->fd, x->way == IN ? POLLIN : POLLOUT, deadline);
		if (ev <= 0 || (ev & POLLNVAL))
			break;
		size_t upto = want;
		if (x->way == OUT && (ev & (POLLERR | POLLHUP)))
			break;
		if (x->way == IN && (ev & POLLERR)) {
			/* take only the data queued before the error; leave the error be */
			int queued = 0;
			if (ioctl(x->fd, FIONREAD, &queued) != 0 || queued <= 0)
				break;
			if (want - done > (size_t)queued)
				upto = done + (size_t)queued;
		}
		struct iovec win[WINDOW];
		struct msghdr m = { .msg_iov = win };
		m.msg_iovlen = (size_t)window(x, done, upto, win);
		ssize_t r = x->way == OUT ? real_sendmsg(x->fd, &m, flags)
					  : real_recvmsg(x->fd, &m, flags);
		if (r > 0) {
			done += (size_t)r;
			empty = 0;
		} else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || ++empty == 3) {
			break; /* end of stream, an error, or ready by poll but never by the call */
		}
	}
	return done;
}

/* The slow path: the call moved `r` bytes and some handler ran during it. If ours alone did
 * and the transfer is one that would have gone on, the rest follows. The total is returned,
 * errno as the program left it (a transfer that succeeded does not touch errno). */
__attribute__((noinline, cold)) static ssize_t finish(const struct xfer *x, ssize_t r,
						      unsigned long long before)
{
	if (!wp_ours_since(before))
		return r;
	size_t want = total_of(x);
	if ((size_t)r >= want)
		return r;
	int saved = errno;
	switch (kind_of(x)) {
	case BLOCKING:
		r = (ssize_t)rest_blocking(x, (size_t)r, want);
		break;
	case STREAM_SOCKET:
		r = (ssize_t)rest_socket(x, (size_t)r, want);
		break;
	case NO:
		break;
	}
	errno = saved;
	return r;
}

/* Every interposer: the call; when no handler ran during it (the counters did not move),
 * that is the answer. Otherwise EINTR before anything moved and ours is retried as in
 * eintr.c, and a short count goes to finish(), with the transfer described by XFER. */
#define TRANSFER(call, ...)                                                              \
	for (;;) {                                                                       \
		unsigned long long before = wp_signals_snap();                           \
		ssize_t r = call;                                                        \
		if (__builtin_expect(wp_signals_snap() == before, 1))                    \
			return r;                                                        \
		if (r < 0 && errno == EINTR && wp_ours_since(before))                    \
			continue;                                                        \
		if (r <= 0)                                                              \
			return r;                                                        \
		return finish(&(const struct xfer){ __VA_ARGS__ }, r, before);           \
	}

#define ONE(buf, n) .iov = &(const struct iovec){ (void *)(buf), (n) }, .iovcnt = 1

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	REAL(write);
	TRANSFER(real_write(fd, buf, n), .fd = fd, .way = OUT, ONE(buf, n));
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	REAL(writev);
	TRANSFER(real_writev(fd, iov, cnt), .fd = fd, .way = OUT, .iov = iov, .iovcnt = cnt);
}

EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	REAL(pwritev2);
	TRANSFER(real_pwritev2(fd, iov, cnt, off, flags), .fd = fd, .way = OUT, .iov = iov,
		 .iovcnt = cnt, .flags = flags, .rwf = 1, .offset = off);
}

EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
	REAL(pwritev64v2);
	TRANSFER(real_pwritev64v2(fd, iov, cnt, off, flags), .fd = fd, .way = OUT, .iov = iov,
		 .iovcnt = cnt, .flags = flags, .rwf = 1, .offset = (off_t)off);
}

EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	REAL(send);
	TRANSFER(real_send(fd, buf, n, flags), .fd = fd, .way = OUT, ONE(buf, n), .flags = flags,
		 .socket_call = 1);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *a,
		      socklen_t al)
{
	REAL(sendto);
	/* the address is only for an unconnected socket; the rest goes to the same peer */
	TRANSFER(real_sendto(fd, buf, n, flags, a, al), .fd = fd, .way = OUT, ONE(buf, n),
		 .flags = flags, .socket_call = 1);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	REAL(sendmsg);
	/* ancillary data went with the first part */
	TRANSFER(real_sendmsg(fd, m, flags), .fd = fd, .way = OUT, .iov = m->msg_iov,
		 .iovcnt = (int)m->msg_iovlen, .flags = flags, .socket_call = 1);
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	REAL(recv);
	TRANSFER(real_recv(fd, buf, n, flags), .fd = fd, .way = IN, ONE(buf, n), .flags = flags,
		 .socket_call = 1);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a,
			socklen_t *al)
{
	REAL(recvfrom);
	TRANSFER(real_recvfrom(fd, buf, n, flags, a, al), .fd = fd, .way = IN, ONE(buf, n),
		 .flags = flags, .socket_call = 1);
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	REAL(recvmsg);
	/* With ancillary data asked for, a MSG_WAITALL receive stops where it changes (passed
	 * descriptors, credentials) by design, and a continuation would overwrite it: left as
	 * the kernel returned it. */
	TRANSFER(real_recvmsg(fd, m, flags), .fd = fd, .way = IN, .iov = m->msg_iov,
		 .iovcnt = (int)m->msg_iovlen, .flags = flags, .socket_call = 1,
		 .has_control = m->msg_controllen != 0);
}
