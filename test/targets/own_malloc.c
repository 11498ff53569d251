/* SPDX-License-Identifier: MIT */
/* A program with an allocator of its own that locks around fork the way Chromium's
 * PartitionAlloc, jemalloc and tcmalloc do: malloc and free (exported by the executable, so
 * they serve the whole process, ld.so and the agent included) take one lock, and handlers
 * registered with pthread_atfork from main() take it before fork and make it new in the
 * child. Handlers registered earlier (a preloaded library's) run before that child handler:
 * one that allocates there waits for a lock nobody will release. Seen in Chromium's crash
 * handler under the agent: its fork child stayed blocked in the agent's fork handler.
 *
 * Usage: own_malloc FORKS. Two busy threads allocate all along (the sampler ticks, samples
 * them, and allocates too); the main thread forks FORKS times, each child allocates, frees
 * and exits 0. A child not gone within 10 s is reported, killed, and the program exits 1.
 * Prints "own_malloc: FORKS children ok" on success. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;

#define LOCKED(expr)                                 \
	({                                           \
		pthread_mutex_lock(&heap_lock);      \
		__typeof__(expr) r_ = (expr);        \
		pthread_mutex_unlock(&heap_lock);    \
		r_;                                  \
	})

void *malloc(size_t n) { return LOCKED(__libc_malloc(n)); }
void *calloc(size_t n, size_t s) { return LOCKED(__libc_calloc(n, s)); }
void *realloc(void *p, size_t n) { return LOCKED(__libc_realloc(p, n)); }
void *memalign(size_t a, size_t n); /* glibc declares it in <malloc.h> only */
void *memalign(size_t a, size_t n) { return LOCKED(__libc_memalign(a, n)); }
void *aligned_alloc(size_t a, size_t n) { return LOCKED(__libc_memalign(a, n)); }
int posix_memalign(void **out, size_t a, size_t n)
{
	void *p = LOCKED(__libc_memalign(a, n));
	if (!p)
		return 12; /* ENOMEM */
	*out = p;
	return 0;
}
void free(void *p)
{
	pthread_mutex_lock(&heap_lock);
	__libc_free(p);
	pthread_mutex_unlock(&heap_lock);
}

static void before_fork(void) { pthread_mutex_lock(&heap_lock); }
static void parent_after(void) { pthread_mutex_unlock(&heap_lock); }
static void child_after(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	heap_lock = fresh; /* PartitionAlloc's way: the child's lock made anew */
}

static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		void *v[16];
		for (int i = 0; i < 16; i++)
			v[i] = malloc(64 + 32 * i);
		for (int i = 0; i < 16; i++)
			free(v[i]);
	}
	return NULL;
}

/* 1 when the child ended within 10 s (its status in *st), else 0 (it is killed). */
static int reap(pid_t pid, int *st)
{
	for (int i = 0; i < 1000; i++) {
		if (waitpid(pid, st, WNOHANG) == pid)
			return 1;
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, st, 0);
	return 0;
}

int main(int argc, char **argv)
{
	int forks = argc > 1 ? atoi(argv[1]) : 50;
	pthread_atfork(before_fork, parent_after, child_after);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, churn, NULL);
	int bad = 0;
	for (int i = 0; i < forks && !bad; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			char *p = malloc(100);
			strcpy(p, "child");
			free(p);
			_exit(0);
		}
		int st = 0;
		if (pid < 0 || !reap(pid, &st)) {
			fprintf(stderr, "own_malloc: fork %d: the child hung (killed)\n", i);
			bad = 1;
		} else if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "own_malloc: fork %d: the child ended with status %#x\n", i, st);
			bad = 1;
		}
		struct timespec ts = { 0, 5 * 1000000L };
		nanosleep(&ts, NULL);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	if (!bad)
		printf("own_malloc: %d children ok\n", forks);
	return bad;
}
