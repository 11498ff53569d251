/* SPDX-License-Identifier: MIT */
/* The library half of test/targets/lib_waits.c: a pool that starts its own worker thread,
 * which waits for work in the library's code only (as liblzma's and GLib's workers do): its
 * stack has no function of the program. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "lib_waits_lib.h"

struct pool {
	pthread_mutex_t m;
	pthread_cond_t c; /* on the heap: no symbol names it */
	int go;
	pid_t tid;
	pthread_t th;
};

KEEP static void pool_wait_for_work(struct pool *p)
{
	pthread_mutex_lock(&p->m);
	while (!p->go)
		pthread_cond_wait(&p->c, &p->m);
	pthread_mutex_unlock(&p->m);
	BARRIER();
}

static void *pool_worker(void *arg)
{
	struct pool *p = arg;
	pthread_setname_np(pthread_self(), "poolworker");
	pthread_mutex_lock(&p->m);
	p->tid = (pid_t)syscall(SYS_gettid);
	pthread_mutex_unlock(&p->m);
	pool_wait_for_work(p);
	return NULL;
}

struct pool *pool_start(void)
{
	struct pool *p = calloc(1, sizeof(*p));
	if (!p)
		abort();
	pthread_mutex_init(&p->m, NULL);
	pthread_cond_init(&p->c, NULL);
	pthread_create(&p->th, NULL, pool_worker, p);
	return p;
}

pid_t pool_tid(struct pool *p)
{
	pthread_mutex_lock(&p->m);
	pid_t t = p->tid;
	pthread_mutex_unlock(&p->m);
	return t;
}

void pool_stop(struct pool *p)
{
	pthread_mutex_lock(&p->m);
	p->go = 1;
	pthread_cond_broadcast(&p->c);
	pthread_mutex_unlock(&p->m);
	pthread_join(p->th, NULL);
	free(p);
}
