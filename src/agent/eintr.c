/* SPDX-License-Identifier: MIT */
#include "eintr.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "interpose.h"

#include "sigwaits.h"

#define EXPORT __attribute__((visibility("default")))

__thread unsigned wp_our_signals __attribute__((tls_model("initial-exec")));
__thread unsigned wp_program_signals __attribute__((tls_model("initial-exec")));

/* One pointer per interposed function, resolved with RTLD_NEXT (the definition the program
 * would have called without us). */
#define REALS(X)                                                                             \
	X(nanosleep, int, (const struct timespec *, struct timespec *))                          \
	X(clock_nanosleep, int, (clockid_t, int, const struct timespec *, struct timespec *))    \
	X(poll, int, (struct pollfd *, nfds_t, int))                                             \
	X(ppoll, int, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))      \
	X(select, int, (int, fd_set *, fd_set *, fd_set *, struct timeval *))                    \
	X(pselect, int, (int, fd_set *, fd_set *, fd_set *, const struct timespec *,             \
			 const sigset_t *))                                                      \
	X(epoll_wait, int, (int, struct epoll_event *, int, int))                                \
	X(epoll_pwait, int, (int, struct epoll_event *, int, int, const sigset_t *))             \
	X(sem_timedwait, int, (sem_t *, const struct timespec *))                                \
	X(sem_clockwait, int, (sem_t *, clockid_t, const struct timespec *))                     \
	X(sigtimedwait, int, (const sigset_t *, siginfo_t *, const struct timespec *))           \
	X(sigwaitinfo, int, (const sigset_t *, siginfo_t *))                                     \
	X(sigsuspend, int, (const sigset_t *))                                                   \
	X(pause, int, (void))                                                                    \
	X(read, ssize_t, (int, void *, size_t))                                                  \
	X(accept, int, (int, struct sockaddr *, socklen_t *))                                    \
	X(accept4, int, (int, struct sockaddr *, socklen_t *, int))

REALS(WP_DECLARE_REAL)

void wp_eintr_init(void)
{
	REALS(WP_RESOLVE_REAL)
}

#define REAL(name) WP_REAL(name)

static int no_retry;

void wp_eintr_disable_retry(void)
{
	no_retry = 1;
}

int wp_ours_since(unsigned long long before)
{
	return (unsigned)before != wp_our_signals && (unsigned)(before >> 32) == wp_program_signals &&
	       !no_retry;
}

#define SNAP() wp_signals_snap()
/* The retry rule: the call failed with EINTR and the interruption was ours (eintr.h). */
#define OURS(before) (errno == EINTR && wp_ours_since(before))

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_to_ts(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

static uint64_t ts_to_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* Remaining time of a relative timeout that started at `start`, never negative. */
static uint64_t left_ns(uint64_t start, uint64_t total)
{
	uint64_t spent = mono_ns() - start;
	return spent >= total ? 0 : total - spent;
}

/* ---- sleeps ---- */

EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	REAL(nanosleep);
	struct timespec ask = *req, left;
	for (;;) {
		unsigned long long before = SNAP();
		int r = real_nanosleep(&ask, &left);
		if (r == 0 || !OURS(before)) {
			if (r != 0 && rem)
				*rem = left;
			return r;
		}
		ask = left;
	}
}

EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
			   struct timespec *rem)
{
	if (!real_clock_nanosleep)
		real_clock_nanosleep = (__typeof__(real_clock_nanosleep))dlsym(RTLD_NEXT,
									      "clock_nanosleep");
	if (!real_clock_nanosleep)
		return ENOSYS; /* it returns the error number, so WP_REAL's -1 would be wrong */
	struct timespec ask = *req, left;
	for (;;) {
		unsigned long long before = SNAP();
		int r = real_clock_nanosleep(clk, flags, &ask, &left);
		/* returns the error number rather than setting errno */
		if (r != EINTR || !wp_ours_since(before)) {
			if (r == EINTR && rem && !(flags & TIMER_ABSTIME))
				*rem = left;
			return r;
		}
		if (!(flags & TIMER_ABSTIME))
			ask = left;
	}
}

EXPORT unsigned int sleep(unsigned int seconds)
{
	struct timespec ts = { (time_t)seconds, 0 };
	int saved = errno;
	/* As glibc's sleep: nanosleep; interrupted, it returns the whole seconds left. */
	if (nanosleep(&ts, &ts) < 0)
		return (unsigned int)ts.tv_sec;
	errno = saved;
	return 0;
}

EXPORT int usleep(useconds_t us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
	return nanosleep(&ts, NULL);
}

/* ---- multiplexing ---- */

EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	REAL(poll);
	uint64_t start = mono_ns(), total = timeout > 0 ? (uint64_t)timeout * 1000000ull : 0;
	int t = timeout;
	for (;;) {
		unsigned long long before = SNAP();
		int r = real_poll(fds, n, t);
		if (r >= 0 || !OURS(before))
			return r;
		if (timeout > 0)
			t = (int)((left_ns(start, total) + 999999) / 1000000);
	}
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
	REAL(ppoll);
	uint64_t start = mono_ns(), total = tmo ? ts_to_ns(tmo) : 0;
	struct timespec t;
	sigset_t buf;
	mask = wp_sigwaits_temp_mask(mask, &buf); /* never blocks ours (sigwaits.h) */
	for (const struct timespec *pt = tmo;;) {
		unsigned long long before = SNAP();
		int r = real_ppoll(fds, n, pt, mask);
		if (r >= 0 || !OURS(before))
			return r;
		if (tmo) {
			t = ns_to_ts(left_ns(start, total));
			pt = &t;
		}
	}
}

EXPORT int select(int nfds, fd_set *r_, fd_set *w, fd_set *e, struct timeval *tv)
{
	REAL(select);
	/* Linux leaves the sets untouched on EINTR and updates *tv to the time left, so the same
	 * arguments resume the wait. */
	for (;;) {
		unsigned long long before = SNAP();
		int r = real_select(nfds, r_, w, e, tv);
		if (r >= 0 || !OURS(before))
			return r;
	}
}

EXPORT int pselect(int nfds, fd_set *r_, fd_set *w, fd_set *e, const struct timespec *tmo,
		   const sigset_t *mask)
{
	REAL(pselect);
	uint64_t start = mono_ns(), total = tmo ? ts_to_ns(tmo) : 0;
	struct timespec t;
	sigset_t buf;
	mask = wp_sigwaits_temp_mask(mask, &buf); /* never blocks ours (sigwaits.h) */
	for (const struct timespec *pt = tmo;;) {
		unsigned long long before = SNAP();
		int r = real_pselect(nfds, r_, w, e, pt, mask);
		if (r >= 0 || !OURS(before))
			return r;
		if (tmo) {
			t = ns_to_ts(left_ns(start, total));
			pt = &t;
		}
	}
}

EXPORT int epoll_wait(int fd, struct epoll_event *ev, int max, int timeout)
{
	REAL(epoll_wait);
	uint64_t start = mono_ns(), total = timeout > 0 ? (uint64_t)timeout * 1000000ull : 0;
	int t = timeout;
	for (;;) {
		unsigned long long before = SNAP();
		int r = real_epoll_wait(fd, ev, max, t);
		if (r >= 0 || !OURS(before))
			return r;
		if (timeout > 0)
			t = (int)((left_ns(start, total) + 999999) / 1000000);
	}
}

EXPORT int epoll_pwait(int fd, struct epoll_event *ev, int max, int timeout, const sigset_t *m)
{
	REAL(epoll_pwait);
	uint64_t start = mono_ns(), total = timeout > 0 ? (uint64_t)timeout * 1000000ull : 0;
	int t = timeout;
	sigset_t buf;
	m = wp_sigwaits_temp_mask(m, &buf); /* never blocks ours (sigwaits.h) */
	for (;;) {
		unsigned long long before = SNAP();
		int r = real_epoll_pwait(fd, ev, max, t, m);
		if (r >= 0 || !OURS(before))
			return r;
		if (timeout > 0)
			t = (int)((left_ns(start, total) + 999999) / 1000000);
	}
}

/* ---- waits on semaphores and signals ---- */

EXPORT int sem_timedwait(sem_t *sem, const struct timespec *abs)
{
	REAL(sem_timedwait);
	for (;;) {
		unsigned long long before = SNAP();
		int r = real_sem_timedwait(sem, abs);
		if (r == 0 || !OURS(before))
			return r;
	}
}

EXPORT int sem_clockwait(sem_t *sem, clockid_t clk, const struct timespec *abs)
{
	REAL(sem_clockwait);
	for (;;) {
		unsigned long long before = SNAP();
		int r = real_sem_clockwait(sem, clk, abs);
		if (r == 0 || !OURS(before))
			return r;
	}
}

EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *tmo)
{
	REAL(sigtimedwait);
	uint64_t start = mono_ns(), total = tmo ? ts_to_ns(tmo) : 0;
	struct timespec t;
	sigset_t buf;
	set = wp_sigwaits_wait_set(set, &buf); /* never returns ours (sigwaits.h) */
	for (const struct timespec *pt = tmo;;) {
		unsigned long long before = SNAP();
		int r = real_sigtimedwait(set, info, pt);
		if (r >= 0 || !OURS(before))
			return r;
		if (tmo) {
			t = ns_to_ts(left_ns(start, total));
			pt = &t;
		}
	}
}

EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	REAL(sigwaitinfo);
	sigset_t buf;
	set = wp_sigwaits_wait_set(set, &buf); /* never returns ours (sigwaits.h) */
	for (;;) {
		unsigned long long before = SNAP();
		int r = real_sigwaitinfo(set, info);
		if (r >= 0 || !OURS(before))
			return r;
	}
}

EXPORT int sigsuspend(const sigset_t *mask)
{
	REAL(sigsuspend);
	sigset_t buf;
	mask = wp_sigwaits_temp_mask(mask, &buf); /* never blocks ours (sigwaits.h) */
	for (;;) {
		unsigned long long before = SNAP();
		int r = real_sigsuspend(mask);
		if (!OURS(before))
			return r;
	}
}

EXPORT int pause(void)
{
	REAL(pause);
	for (;;) {
		unsigned long long before = SNAP();
		int r = real_pause();
		if (!OURS(before))
			return r;
	}
}

/* ---- descriptors: EINTR despite SA_RESTART when a socket timeout is set ----
 * (the calls that move data out, and recv* that may wait for all of it, are in transfers.c:
 * besides EINTR, they also finish what our signal cut short) */

#define RETRY_IO(call)                                   \
	for (;;) {                                       \
		unsigned long long before = SNAP();        \
		__typeof__(call) r = call;               \
		if (r >= 0 || !OURS(before))             \
			return r;                        \
	}

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	REAL(read);
	RETRY_IO(real_read(fd, buf, n));
}

EXPORT int accept(int fd, struct sockaddr *a, socklen_t *al)
{
	REAL(accept);
	RETRY_IO(real_accept(fd, a, al));
}

EXPORT int accept4(int fd, struct sockaddr *a, socklen_t *al, int flags)
{
	REAL(accept4);
	RETRY_IO(real_accept4(fd, a, al, flags));
}
