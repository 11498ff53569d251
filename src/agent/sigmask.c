/* SPDX-License-Identifier: MIT */
#include "sigmask.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "handshake.h"
#include "threadmask.h"

#define EXPORT __attribute__((visibility("default")))

typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);
static mask_fn real_sigprocmask, real_pthread_sigmask;
/* Set on the sampler thread only (initial-exec TLS: one load, no allocation). */
static __thread int quiet __attribute__((tls_model("initial-exec")));
static sigset_t quiet_mask; /* the sampler's mask: everything libc lets a thread block */
static _Atomic unsigned long long skipped;

void wp_sigmask_init(void)
{
	real_sigprocmask = (mask_fn)dlsym(RTLD_NEXT, "sigprocmask");
	real_pthread_sigmask = (mask_fn)dlsym(RTLD_NEXT, "pthread_sigmask");
}

void wp_sigmask_quiet_this_thread(void)
{
	/* Block everything (a no-op for the sampler, which starts so) and record what that
	 * is: libc keeps a couple of its own signals out of any mask. */
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	pthread_sigmask(SIG_BLOCK, NULL, &quiet_mask);
	quiet = 1;
}

unsigned long long wp_sigmask_skipped(void)
{
	return atomic_load_explicit(&skipped, memory_order_relaxed);
}

/* Whether `how`/`set` would leave a mask that blocks everything `quiet_mask` blocks as it is:
 * a query, blocking more, or setting a mask that blocks at least as much (libc never lets a
 * thread block more than quiet_mask, so the result is quiet_mask again). */
static int leaves_unchanged(int how, const sigset_t *set)
{
	if (!set || how == SIG_BLOCK)
		return 1;
	if (how != SIG_SETMASK)
		return 0;
	/* word by word rather than sigismember() per signal: this runs ~30 times a sample */
	unsigned long q[sizeof(sigset_t) / sizeof(long)], s[sizeof(sigset_t) / sizeof(long)];
	memcpy(q, &quiet_mask, sizeof(q));
	memcpy(s, set, sizeof(s));
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
		if (q[i] & ~s[i])
			return 0;
	return 1;
}

/* The mask after `how`/`set` applied to `old` (signals 1..64). */
static uint64_t applied(int how, uint64_t old, uint64_t set)
{
	switch (how) {
	case SIG_BLOCK:
		return old | set;
	case SIG_UNBLOCK:
		return old & ~set;
	default:
		return set;
	}
}

/* One mask change of the calling thread, published around the real call (sigmask.h). Returns
 * what `real` returned; errno as it left it. `real` may be called from a signal handler, as
 * may this: only system calls, atomics and TLS. */
static int change(mask_fn real, int how, const sigset_t *set, sigset_t *old)
{
	struct wp_tmask *e = set ? wp_tmask_self() : NULL;
	if (!e)
		return real(how, set, old); /* a query, a vfork child, or no room in the table */
	uint64_t want = wp_sigset_word(set);
	if (how != SIG_UNBLOCK && (want & ~wp_tmask_get(e))) {
		/* May block more: say so first, then let a signal already on its way land. */
		wp_tmask_set(e, wp_tmask_get(e) | want);
		wp_handshake_settle(wp_tmask_tid(e));
	}
	sigset_t mine;
	sigset_t *prev = old ? old : &mine;
	int r = real(how, set, prev);
	int saved = errno;
	if (r == 0) {
		/* what the kernel holds now (libc keeps its two internal signals out, and
		 * SIGKILL/SIGSTOP cannot be blocked: neither can be ours) */
		wp_tmask_set(e, applied(how, wp_sigset_word(prev), want));
	} else if (real(SIG_BLOCK, NULL, &mine) == 0) {
		wp_tmask_set(e, wp_sigset_word(&mine)); /* unchanged: take back the union */
	}
	errno = saved;
	return r;
}

static mask_fn resolve(mask_fn *fn, const char *name)
{
	if (__builtin_expect(!*fn, 0))
		*fn = (mask_fn)dlsym(RTLD_NEXT, name); /* called before our constructor ran */
	return *fn;
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	if (quiet && leaves_unchanged(how, set)) {
		if (old)
			*old = quiet_mask;
		atomic_fetch_add_explicit(&skipped, 1, memory_order_relaxed);
		return 0;
	}
	/* A call that changes the mask (never made on the sampler today): from now on this
	 * thread's mask is not the one recorded, so every later call goes to libc. */
	quiet = 0;
	if (!resolve(&real_sigprocmask, "sigprocmask")) {
		errno = ENOSYS;
		return -1;
	}
	return change(real_sigprocmask, how, set, old);
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	if (quiet && leaves_unchanged(how, set)) {
		if (old)
			*old = quiet_mask;
		atomic_fetch_add_explicit(&skipped, 1, memory_order_relaxed);
		return 0;
	}
	quiet = 0;
	if (!resolve(&real_pthread_sigmask, "pthread_sigmask"))
		return ENOSYS;
	return change(real_pthread_sigmask, how, set, old);
}
