/* SPDX-License-Identifier: MIT */
/* idle_pool: N threads named "idle" blocked on a condition variable that is never signalled,
 * and the main thread spinning for SECONDS, for the rationing of first looks at blocked threads.
 * Prints "idle_pool: N threads" once all are waiting, and exits 0 (exit() ends the idle ones).
 *
 * Usage: idle_pool N SECONDS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static long waiting;
static volatile unsigned long sink;

static void *idle(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "idle");
	pthread_mutex_lock(&mu);
	waiting++;
	pthread_cond_signal(&ready);
	for (;;)
		pthread_cond_wait(&never, &mu);
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: idle_pool N SECONDS\n");
		return 2;
	}
	long n = atol(argv[1]);
	double seconds = atof(argv[2]);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (long i = 0; i < n; i++) {
		pthread_t t;
		int e = pthread_create(&t, &attr, idle, NULL);
		if (e) {
			fprintf(stderr, "idle_pool: pthread_create: %s\n", strerror(e));
			return 1;
		}
		pthread_detach(t);
	}
	pthread_mutex_lock(&mu);
	while (waiting < n)
		pthread_cond_wait(&ready, &mu);
	pthread_mutex_unlock(&mu);
	printf("idle_pool: %ld threads\n", n);
	fflush(stdout);
	double end = now() + seconds;
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i * 2654435761u;
	return 0;
}
