/* SPDX-License-Identifier: MIT */
/* pthread_create, interposed so that every thread the program starts publishes its signal
 * mask (threadmask.h) before any of the program's code runs in it: a new thread inherits its
 * creator's mask (or the one pthread_attr_setsigmask_np gives it), and a program that blocks
 * every signal before starting its threads must never see one of ours in any of them.
 *
 * (glibc also blocks every signal in the creator around the clone. A signal of ours sent in
 * that window waits a few microseconds, inside pthread_create, and reaches our handler when
 * the mask is restored: the program cannot look at its pending signals meanwhile, so the
 * creator is not marked as blocking, which would only lose its samples.) */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "threadmask.h"

#define EXPORT __attribute__((visibility("default")))

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

struct start {
	void *(*fn)(void *);
	void *arg;
};

/* The new thread's first code: publish, then the program's start routine (a tail call, so
 * no frame of ours stays under the program's). */
static void *trampoline(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	struct wp_tmask *e = wp_tmask_self(); /* claims an entry with the mask it runs with */
	wp_tmask_release_at_exit(e);
	return s.fn(s.arg);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg)
{
	static create_fn real;
	if (__builtin_expect(!real, 0))
		real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
	if (!real)
		return ENOSYS;
	struct start *s = malloc(sizeof(*s));
	if (!s)
		return real(th, attr, fn, arg); /* it gets one /proc read instead (sampler.c) */
	s->fn = fn;
	s->arg = arg;
	int r = real(th, attr, trampoline, s);
	if (r)
		free(s);
	return r;
}
