/* SPDX-License-Identifier: MIT */
/* A library whose constructor starts a thread: preloaded before libwallprof.so, that thread
 * exists before the agent's constructor runs. */
#include <pthread.h>
#include <stdatomic.h>

atomic_int early_stop;

__attribute__((noinline)) static void early_fn(void)
{
	volatile double x = 1;
	while (!atomic_load(&early_stop))
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 0.25;
}

static void *early_main(void *arg)
{
	pthread_setname_np(pthread_self(), "early");
	early_fn();
	return NULL;
}

__attribute__((constructor)) static void start_early(void)
{
	pthread_t t;
	pthread_create(&t, NULL, early_main, NULL);
	pthread_detach(t);
}
