/* SPDX-License-Identifier: MIT */
/* cond_waits: threads that each wait for one known futex-based thing for the whole run, the
 * kinds test/targets/waits.c does not have (issue 13; test/e2e/test_cond_waits.py).
 *
 *   tcondwaiter pthread_cond_timedwait(&slow_cond, &slow_lock) with a deadline an hour away
 *   heapwaiter  pthread_cond_wait on a condition and a mutex in one malloc'ed block (no
 *               symbol: named by address)
 *   semwaiter   sem_wait(&big_sem) until main posts it at the end
 *   futexwaiter a raw FUTEX_WAIT (syscall) on the global int big_word until main wakes it
 *
 * Usage: cond_waits [SECONDS] (default 2). WP_TRUTH=FILE receives "tid.NAME N" per thread and
 * "heap_cond 0xADDR", "heap_mutex 0xADDR": the heap condition's and mutex's addresses. */
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

pthread_cond_t slow_cond = PTHREAD_COND_INITIALIZER;
pthread_mutex_t slow_lock = PTHREAD_MUTEX_INITIALIZER;
sem_t big_sem;
int big_word; /* 0 until main sets it to 1 and wakes futexwaiter */
static int go;  /* under slow_lock, and under heap->lock */

struct heap_pair {
	pthread_mutex_t lock;
	char pad[64];
	pthread_cond_t cond;
};
static struct heap_pair *heap;

static void *tcondwaiter_fn(void *arg)
{
	target_thread_begin(arg);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 3600;
	pthread_mutex_lock(&slow_lock);
	while (!go)
		pthread_cond_timedwait(&slow_cond, &slow_lock, &until);
	pthread_mutex_unlock(&slow_lock);
	return NULL;
}

static void *heapwaiter_fn(void *arg)
{
	target_thread_begin(arg);
	pthread_mutex_lock(&heap->lock);
	while (!go)
		pthread_cond_wait(&heap->cond, &heap->lock);
	pthread_mutex_unlock(&heap->lock);
	return NULL;
}

static void *semwaiter_fn(void *arg)
{
	target_thread_begin(arg);
	while (sem_wait(&big_sem) != 0)
		;
	return NULL;
}

static void *futexwaiter_fn(void *arg)
{
	target_thread_begin(arg);
	while (!__atomic_load_n(&big_word, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &big_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return NULL;
}

static struct target_thread thrs[] = {
	{ "tcondwaiter", tcondwaiter_fn, 0, 0 }, { "heapwaiter", heapwaiter_fn, 0, 0 },
	{ "semwaiter", semwaiter_fn, 0, 0 },	 { "futexwaiter", futexwaiter_fn, 0, 0 },
};
#define NTHR (sizeof(thrs) / sizeof(thrs[0]))

int main(int argc, char **argv)
{
	double secs = run_seconds(argc, argv, 2.0);
	truth_open();
	heap = malloc(sizeof(*heap));
	if (!heap)
		return 3;
	pthread_mutex_init(&heap->lock, NULL);
	pthread_cond_init(&heap->cond, NULL);
	sem_init(&big_sem, 0, 0);
	for (size_t i = 0; i < NTHR; i++)
		pthread_create(&thrs[i].handle, NULL, thrs[i].fn, &thrs[i]);
	sleep_ns((uint64_t)(secs * 1e9));
	pthread_mutex_lock(&slow_lock);
	pthread_mutex_lock(&heap->lock);
	go = 1;
	pthread_cond_signal(&slow_cond);
	pthread_cond_signal(&heap->cond);
	pthread_mutex_unlock(&heap->lock);
	pthread_mutex_unlock(&slow_lock);
	sem_post(&big_sem);
	__atomic_store_n(&big_word, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &big_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	for (size_t i = 0; i < NTHR; i++)
		pthread_join(thrs[i].handle, NULL);
	for (size_t i = 0; i < NTHR; i++)
		truth("tid.%s %d", thrs[i].name, (int)thrs[i].tid);
	truth("heap_cond %p\nheap_mutex %p", (void *)&heap->cond, (void *)&heap->lock);
	truth_close();
	puts("cond_waits done");
	return 0;
}
