/* pthread_create, interposed so that every thread the program starts publishes its signal
 * mask (threadmask.h) before any of the program's code runs in it: a new thread inherits its
 * creator's mask (or the one pthread_attr_setsigmask_np gives it), and a program that blocks
 * every signal before starting its threads must never see one of ours in any of them.
 *
 * The creator itself is marked as blocking everything for the duration of the call: glibc
 * blocks every signal around the clone (the child starts with all blocked), and a signal of
 * ours sent in that window would wait pending until the call returns. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "handshake.h"
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
	struct wp_tmask *e = wp_tmask_self();
	uint64_t before = e ? wp_tmask_get(e) : 0;
	if (e) {
		wp_tmask_set(e, ~0ull);
		wp_handshake_settle(wp_tmask_tid(e));
	}
	int r = real(th, attr, trampoline, s);
	if (e)
		wp_tmask_set(e, before);
	if (r)
		free(s);
	return r;
}
