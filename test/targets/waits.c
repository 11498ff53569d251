/* waits: threads that each wait for one known thing, for the whole run, so that every waiting
 * sample of theirs has one right answer (issue 13).
 *
 *   holder      holds big_lock while computing in compute_holding_lock() (a CPU loop)
 *   locker-1..3 pthread_mutex_lock(&big_lock): blocked behind holder
 *   reader      read() on a pipe nobody writes until the end
 *   sleeper     nanosleep(10 ms) in a loop
 *   joiner      pthread_join(joinee); joinee sleeps (nanosleep 50 ms) until the end
 *   condwaiter  pthread_cond_wait(&big_cond, &cond_lock) until main signals it at the end
 *
 * Usage: waits [SECONDS] (default 2). WP_TRUTH=FILE receives "tid.NAME N" per thread and
 * "pipe pipe:[INODE]", the read end's target as /proc names it. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t big_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static int cond_go;
static int pipefd[2];
static uint64_t deadline;
static pthread_barrier_t locked; /* the holder has big_lock: the lockers may start */
static volatile uint64_t sink;

struct thr {
	const char *name;
	void *(*fn)(void *);
	pthread_t handle;
	pid_t tid;
};

static void set_me(struct thr *t)
{
	t->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), t->name);
}

static KEEP void compute_holding_lock(void)
{
	uint64_t x = 1;
	while (mono_ns() < deadline)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

static void *holder_fn(void *arg)
{
	set_me(arg);
	pthread_mutex_lock(&big_lock);
	pthread_barrier_wait(&locked);
	compute_holding_lock();
	pthread_mutex_unlock(&big_lock);
	return NULL;
}

static void *locker_fn(void *arg)
{
	set_me(arg);
	pthread_barrier_wait(&locked);
	pthread_mutex_lock(&big_lock);
	pthread_mutex_unlock(&big_lock);
	return NULL;
}

static void *reader_fn(void *arg)
{
	set_me(arg);
	char c;
	while (read(pipefd[0], &c, 1) < 0)
		;
	return NULL;
}

static void *sleeper_fn(void *arg)
{
	set_me(arg);
	while (mono_ns() < deadline)
		sleep_ns(10 * 1000000ull);
	return NULL;
}

static void *joinee_fn(void *arg)
{
	set_me(arg);
	while (mono_ns() < deadline)
		sleep_ns(50 * 1000000ull);
	return NULL;
}

static struct thr thrs[] = {
	{ "holder", holder_fn, 0, 0 },	   { "locker-1", locker_fn, 0, 0 },
	{ "locker-2", locker_fn, 0, 0 },   { "locker-3", locker_fn, 0, 0 },
	{ "reader", reader_fn, 0, 0 },	   { "sleeper", sleeper_fn, 0, 0 },
	{ "joinee", joinee_fn, 0, 0 },	   { "joiner", NULL, 0, 0 },
	{ "condwaiter", NULL, 0, 0 },
};
#define NTHR (sizeof(thrs) / sizeof(thrs[0]))

static void *joiner_fn(void *arg)
{
	set_me(arg);
	pthread_join(thrs[6].handle, NULL);
	return NULL;
}

static void *condwaiter_fn(void *arg)
{
	set_me(arg);
	pthread_mutex_lock(&cond_lock);
	while (!cond_go)
		pthread_cond_wait(&big_cond, &cond_lock);
	pthread_mutex_unlock(&cond_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = run_seconds(argc, argv, 2.0);
	truth_open();
	deadline = mono_ns() + (uint64_t)(secs * 1e9);
	if (pipe(pipefd) != 0)
		return 3;
	struct stat st;
	fstat(pipefd[0], &st);
	truth("pipe pipe:[%lu]", (unsigned long)st.st_ino);
	pthread_barrier_init(&locked, NULL, 4);
	thrs[7].fn = joiner_fn;
	thrs[8].fn = condwaiter_fn;
	for (size_t i = 0; i < NTHR; i++)
		pthread_create(&thrs[i].handle, NULL, thrs[i].fn, &thrs[i]);
	sleep_ns((uint64_t)(secs * 1e9));
	if (write(pipefd[1], "x", 1) != 1)
		return 3;
	pthread_mutex_lock(&cond_lock);
	cond_go = 1;
	pthread_cond_signal(&big_cond);
	pthread_mutex_unlock(&cond_lock);
	for (size_t i = 0; i < NTHR; i++)
		if (i != 6) /* joinee: the joiner's */
			pthread_join(thrs[i].handle, NULL);
	for (size_t i = 0; i < NTHR; i++)
		truth("tid.%s %d", thrs[i].name, (int)thrs[i].tid);
	truth_close();
	puts("waits done");
	return 0;
}
