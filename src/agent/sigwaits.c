/* SPDX-License-Identifier: MIT */
#include "sigwaits.h"

#include <dlfcn.h>
#include <errno.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "handshake.h"
#include "signals.h"
#include "threadmask.h"

#define EXPORT __attribute__((visibility("default")))

static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

const sigset_t *wp_sigwaits_temp_mask(const sigset_t *mask, sigset_t *buf)
{
	int sig = wp_handshake_signal();
	if (!mask || sig <= 0 || sigismember(mask, sig) != 1)
		return mask;
	*buf = *mask;
	sigdelset(buf, sig);
	return buf;
}

const sigset_t *wp_sigwaits_wait_set(const sigset_t *set, sigset_t *buf)
{
	int sig = wp_handshake_signal();
	if (!set || sig <= 0 || sigismember(set, sig) != 1)
		return set;
	/* The program waits for our signal by name: it is its signal; we move to another
	 * (never in a vfork child, whose memory is its parent's). */
	if (!wp_tmask_foreign() && wp_signals_move_away(sig, set, "waits for") == 0)
		sig = wp_handshake_signal();
	return wp_sigwaits_temp_mask(set, buf);
}

EXPORT int signalfd(int fd, const sigset_t *mask, int flags)
{
	static int (*real)(int, const sigset_t *, int);
	if (!real && !(real = (int (*)(int, const sigset_t *, int))next("signalfd"))) {
		errno = ENOSYS;
		return -1;
	}
	sigset_t buf;
	return real(fd, wp_sigwaits_wait_set(mask, &buf), flags);
}

EXPORT int sigwait(const sigset_t *set, int *sig)
{
	static int (*real)(const sigset_t *, int *);
	if (!real && !(real = (int (*)(const sigset_t *, int *))next("sigwait")))
		return ENOSYS;
	sigset_t buf;
	return real(wp_sigwaits_wait_set(set, &buf), sig);
}

EXPORT int sigpending(sigset_t *set)
{
	/* the kernel's answer (no libc: nothing of ours in between), without ours */
	if (syscall(SYS_rt_sigpending, set, _NSIG / 8) != 0)
		return -1;
	int sig = wp_handshake_signal();
	if (sig > 0)
		sigdelset(set, sig);
	return 0;
}
