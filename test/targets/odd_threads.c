/* SPDX-License-Identifier: MIT */
/* Threads the agent did not see being born: one from a library constructor (early_lib.c,
 * preloaded ahead of the agent), and one made with a raw clone(): no pthread, no TLS of its
 * own. Both must be sampled, or reported, and neither may make anything wait.
 * Usage: odd_threads SECONDS */
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int raw_stop, raw_done;

__attribute__((noinline)) static int raw_fn(void *arg)
{
	/* no libc calls: this thread has no TLS of its own */
	volatile double x = 1;
	while (!atomic_load(&raw_stop))
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 0.5;
	atomic_store(&raw_done, 1);
	return 0;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.5;
	size_t sz = 256 << 10;
	char *stack = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
			   -1, 0);
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
	if (clone(raw_fn, stack + sz, flags, NULL) < 0) {
		perror("clone");
		return 2;
	}
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	nanosleep(&ts, NULL);
	atomic_store(&raw_stop, 1);
	while (!atomic_load(&raw_done))
		sched_yield();
	usleep(10000); /* let it leave */
	printf("odd_threads: done\n");
	return 0;
}
