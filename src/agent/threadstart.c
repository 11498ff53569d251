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
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "threadmask.h"
#include "threadstart.h"

#define EXPORT __attribute__((visibility("default")))

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* What the new thread needs from its creator. In a slot of ours, not malloc'd: the new
 * thread's free() would be its first call into the allocator, and glibc gives such a thread
 * an arena of its own (a 64 MiB reservation and four system calls) even when the program's
 * thread never allocates. malloc only when every slot is in use (that many threads starting
 * at once). */
struct start {
	void *(*fn)(void *);
	void *arg;
	_Atomic int busy;
};

#define SLOTS 64
static struct start slots[SLOTS];

static struct start *take_slot(void)
{
	for (int i = 0; i < SLOTS; i++)
		if (!atomic_load_explicit(&slots[i].busy, memory_order_relaxed) &&
		    !atomic_exchange(&slots[i].busy, 1))
			return &slots[i];
	struct start *s = malloc(sizeof(*s));
	if (s)
		atomic_store(&s->busy, 2); /* 2: malloc'd */
	return s;
}

static void give_back(struct start *s)
{
	if (atomic_load(&s->busy) == 2)
		free(s);
	else
		atomic_store(&s->busy, 0);
}

/* The new thread's first code: publish, then the program's start routine (a tail call, so
 * no frame of ours stays under the program's). */
static void *trampoline(void *p)
{
	struct start *sp = p;
	void *(*fn)(void *) = sp->fn;
	void *arg = sp->arg;
	give_back(sp);
	struct wp_tmask *e = wp_tmask_self(); /* claims an entry with the mask it runs with */
	wp_tmask_release_at_exit(e);
	return fn(arg);
}

static create_fn real_create(void)
{
	static create_fn real;
	if (__builtin_expect(!real, 0))
		real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
	return real;
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg)
{
	create_fn real = real_create();
	if (!real)
		return ENOSYS;
	struct start *s = take_slot();
	if (!s)
		return real(th, attr, fn, arg); /* it gets one /proc read instead (sampler.c) */
	s->fn = fn;
	s->arg = arg;
	int r = real(th, attr, trampoline, s);
	if (r)
		give_back(s);
	return r;
}

int wp_own_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			 void *arg)
{
	create_fn real = real_create();
	return real ? real(th, attr, fn, arg) : ENOSYS;
}
