#include "sigmask.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static int (*real_sigprocmask)(int, const sigset_t *, sigset_t *);
/* Set on the sampler thread only (initial-exec TLS: one load, no allocation). */
static __thread int quiet __attribute__((tls_model("initial-exec")));
static sigset_t quiet_mask; /* the sampler's mask: everything libc lets a thread block */
static _Atomic unsigned long long skipped;

void wp_sigmask_init(void)
{
	real_sigprocmask = (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT,
									     "sigprocmask");
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
	if (__builtin_expect(!real_sigprocmask, 0))
		wp_sigmask_init(); /* called before our constructor ran */
	if (!real_sigprocmask) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigprocmask(how, set, old);
}
