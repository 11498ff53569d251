/* SPDX-License-Identifier: MIT */
/* fork(), interposed, and the fork handlers: the parent's sampler is kept out of the copy,
 * and the child profiles itself afresh.
 *
 * Why around fork rather than only inside it (pthread_atfork): a program with an allocator
 * of its own (Chromium's PartitionAlloc, jemalloc, tcmalloc) locks its heap in a prepare
 * handler and makes the lock anew in a child handler, both registered after ours. Child
 * handlers run in the order they were registered, so ours ran first, with the heap still
 * locked: anything it allocated or freed (the parent's tables, the sampler's new thread)
 * through that allocator, which serves the whole process, waited for good (Chromium's crash
 * handler left such a child blocked; test_own_allocator). Prepare handlers run the other way
 * round, so ours waited for the sampler's tick with the heap already locked, while the
 * sampler might be waiting for the heap.
 *
 * So the program's fork() comes here: the sampler is held before any prepare handler runs,
 * and the child starts its profile after every child handler has run, when its allocator is
 * whole again. Inside the C library's fork the handlers then do only what allocates nothing.
 * A fork this interposer does not see (one the C library makes itself: daemon(), forkpty())
 * still runs the handlers, which then do all of it there, as before. */
#include <dlfcn.h>
#include <pthread.h>
#include <sys/types.h>
#include <unistd.h>

#include "agent.h"
#include "sampler.h"

#define EXPORT __attribute__((visibility("default")))

typedef pid_t (*fork_fn)(void);
static fork_fn real_fork;

/* In our fork(): the handlers leave the work to it. A fork child is a copy of the forking
 * thread, so the flag is set in the child too. */
static __thread int in_our_fork __attribute__((tls_model("initial-exec")));

static void on_prepare(void)
{
	if (!in_our_fork)
		wp_sampler_fork_prepare();
}

static void on_parent(void)
{
	if (!in_our_fork)
		wp_sampler_fork_parent();
}

static void on_child(void)
{
	/* No allocation: the program's heap may still be locked here (above). */
	wp_sampler_fork_child();
	wp_agent_fork_child();
	if (!in_our_fork)
		wp_agent_fork_child_restart();
}

void wp_forks_init(void)
{
	if (!real_fork)
		real_fork = (fork_fn)dlsym(RTLD_NEXT, "fork");
	pthread_atfork(on_prepare, on_parent, on_child);
}

EXPORT pid_t fork(void)
{
	if (!real_fork)
		real_fork = (fork_fn)dlsym(RTLD_NEXT, "fork");
	in_our_fork = 1;
	wp_sampler_fork_prepare();
	pid_t pid = real_fork();
	if (pid == 0) {
		in_our_fork = 0;
		wp_agent_fork_child_restart();
	} else {
		wp_sampler_fork_parent();
		in_our_fork = 0;
	}
	return pid;
}
