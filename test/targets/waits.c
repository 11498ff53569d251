/* SPDX-License-Identifier: MIT */
/* waits: threads that each wait for one known thing, for the whole run, so that every waiting
 * sample of theirs has one right answer (issue 13).
 *
 *   holder      holds big_lock while computing in compute_holding_lock() (a CPU loop)
 *   locker-1..3 pthread_mutex_lock(&big_lock): blocked behind holder
 *   reader      read() on a pipe nobody writes until the end
 *   sleeper     nanosleep(10 ms) in a loop
 *   joiner      pthread_join(joinee); joinee sleeps (nanosleep 50 ms) until the end
 *   condwaiter  pthread_cond_wait(&big_cond, &cond_lock) until main signals it at the end
 *   sockreader  recv() on a TCP connection over loopback, written to at the end
 *   childwaiter waitpid() for a child process that sleeps until the end
 *   writer      holds big_rwlock for writing while computing in compute_holding_rwlock()
 *   rdwaiter-1,2 pthread_rwlock_rdlock(&big_rwlock), wrwaiter pthread_rwlock_wrlock: blocked
 *               behind writer
 *   napper      holds nap_lock while sleeping in sleep_holding_lock() (nanosleep 5 ms in a
 *               loop: a holder blocked in the kernel, sampled from /proc or its last stack)
 *   naplocker   pthread_mutex_lock(&nap_lock): blocked behind napper
 *
 * Usage: waits [SECONDS] (default 2). WAITS_HOLD_FRACTION=F (0 < F < 1): the holder lets
 * big_lock go after that fraction of the run (then holder and lockers end), for --compare. WP_TRUTH=FILE receives "tid.NAME N" per thread,
 * "pipe pipe:[INODE]" and "sock socket:[INODE]", the read ends' targets as /proc names them,
 * and "child PID"; "life_ns.NAME N" per thread (and main), "lockwait_ns.NAME N" the time a
 * locker was blocked on big_lock. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t big_cond = PTHREAD_COND_INITIALIZER;
pthread_rwlock_t big_rwlock = PTHREAD_RWLOCK_INITIALIZER;
pthread_mutex_t nap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static int cond_go;
static int pipefd[2];
static int sock_r, sock_w; /* the two ends of one loopback TCP connection */
static pid_t child;
static uint64_t deadline;
static pthread_barrier_t locked; /* the holder has big_lock: the lockers may start */
static pthread_barrier_t wlocked; /* the writer has big_rwlock: its waiters may start */
static pthread_barrier_t nlocked; /* the napper has nap_lock: its waiter may start */
static volatile uint64_t sink;

struct thr {
	const char *name;
	void *(*fn)(void *);
	pthread_t handle;
	pid_t tid;
	uint64_t life_ns;     /* from its start to its return */
	uint64_t lockwait_ns; /* a locker: blocked in pthread_mutex_lock(&big_lock) */
};

/* Every thread starts here: its lifetime, measured around its function. */
static void *start(void *arg)
{
	struct thr *t = arg;
	uint64_t born = mono_ns();
	void *r = t->fn(arg);
	t->life_ns = mono_ns() - born;
	return r;
}

static void set_me(struct thr *t)
{
	t->tid = (pid_t)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), t->name);
}

static uint64_t hold_until; /* the holder lets big_lock go then (WAITS_HOLD_FRACTION) */

static KEEP void compute_holding_lock(void)
{
	uint64_t x = 1;
	while (mono_ns() < hold_until)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

static KEEP void compute_holding_rwlock(void)
{
	uint64_t x = 3;
	while (mono_ns() < deadline)
		for (int i = 0; i < 10000; i++)
			x = x * 2862933555777941757ull + 3037000493ull;
	sink = x;
}

static void *writer_fn(void *arg)
{
	set_me(arg);
	pthread_rwlock_wrlock(&big_rwlock);
	pthread_barrier_wait(&wlocked);
	compute_holding_rwlock();
	pthread_rwlock_unlock(&big_rwlock);
	return NULL;
}

static void *rdwaiter_fn(void *arg)
{
	set_me(arg);
	pthread_barrier_wait(&wlocked);
	pthread_rwlock_rdlock(&big_rwlock);
	pthread_rwlock_unlock(&big_rwlock);
	return NULL;
}

static void *wrwaiter_fn(void *arg)
{
	set_me(arg);
	pthread_barrier_wait(&wlocked);
	pthread_rwlock_wrlock(&big_rwlock);
	pthread_rwlock_unlock(&big_rwlock);
	return NULL;
}

static KEEP void sleep_holding_lock(void)
{
	while (mono_ns() < deadline)
		sleep_ns(5 * 1000000ull);
}

static void *napper_fn(void *arg)
{
	set_me(arg);
	pthread_mutex_lock(&nap_lock);
	pthread_barrier_wait(&nlocked);
	sleep_holding_lock();
	pthread_mutex_unlock(&nap_lock);
	return NULL;
}

static void *naplocker_fn(void *arg)
{
	set_me(arg);
	pthread_barrier_wait(&nlocked);
	pthread_mutex_lock(&nap_lock);
	pthread_mutex_unlock(&nap_lock);
	return NULL;
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
	struct thr *t = arg;
	set_me(t);
	pthread_barrier_wait(&locked);
	uint64_t t0 = mono_ns();
	pthread_mutex_lock(&big_lock);
	t->lockwait_ns = mono_ns() - t0;
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

static void *sockreader_fn(void *arg)
{
	set_me(arg);
	char c;
	while (recv(sock_r, &c, 1, 0) < 0)
		;
	return NULL;
}

static void *childwaiter_fn(void *arg)
{
	set_me(arg);
	while (waitpid(child, NULL, 0) < 0)
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
	{ "condwaiter", NULL, 0, 0 },	   { "sockreader", sockreader_fn, 0, 0 },
	{ "childwaiter", childwaiter_fn, 0, 0 },
	{ "writer", writer_fn, 0, 0 },	   { "rdwaiter-1", rdwaiter_fn, 0, 0 },
	{ "rdwaiter-2", rdwaiter_fn, 0, 0 }, { "wrwaiter", wrwaiter_fn, 0, 0 },
	{ "napper", napper_fn, 0, 0 },	   { "naplocker", naplocker_fn, 0, 0 },
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

/* sock_r and sock_w: a TCP connection to ourselves on 127.0.0.1. */
static int tcp_pair(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) != 0)
		return -1;
	sock_w = socket(AF_INET, SOCK_STREAM, 0);
	if (sock_w < 0 || connect(sock_w, (struct sockaddr *)&a, sizeof(a)) != 0)
		return -1;
	sock_r = accept(l, NULL, NULL);
	close(l);
	return sock_r < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	uint64_t born = mono_ns();
	double secs = run_seconds(argc, argv, 2.0);
	truth_open();
	deadline = mono_ns() + (uint64_t)(secs * 1e9);
	const char *hf = getenv("WAITS_HOLD_FRACTION");
	double hold = hf ? atof(hf) : 1.0;
	hold_until = mono_ns() + (uint64_t)(secs * 1e9 * (hold > 0 && hold < 1 ? hold : 1.0));
	if (pipe(pipefd) != 0)
		return 3;
	struct stat st;
	fstat(pipefd[0], &st);
	truth("pipe pipe:[%lu]", (unsigned long)st.st_ino);
	if (tcp_pair() != 0)
		return 3;
	fstat(sock_r, &st);
	truth("sock socket:[%lu]", (unsigned long)st.st_ino);
	child = fork();
	if (child == 0) {
		sleep_ns((uint64_t)(secs * 1e9));
		_exit(0);
	}
	truth("child %d", (int)child);
	pthread_barrier_init(&locked, NULL, 4);
	pthread_barrier_init(&wlocked, NULL, 4);
	pthread_barrier_init(&nlocked, NULL, 2);
	thrs[7].fn = joiner_fn;
	thrs[8].fn = condwaiter_fn;
	for (size_t i = 0; i < NTHR; i++)
		pthread_create(&thrs[i].handle, NULL, start, &thrs[i]);
	sleep_ns((uint64_t)(secs * 1e9));
	if (write(pipefd[1], "x", 1) != 1 || send(sock_w, "x", 1, 0) != 1)
		return 3;
	pthread_mutex_lock(&cond_lock);
	cond_go = 1;
	pthread_cond_signal(&big_cond);
	pthread_mutex_unlock(&cond_lock);
	for (size_t i = 0; i < NTHR; i++)
		if (i != 6) /* joinee: the joiner's */
			pthread_join(thrs[i].handle, NULL);
	/* every life_ns is written: each thread was joined, the joinee by the joiner */
	for (size_t i = 0; i < NTHR; i++)
		truth("tid.%s %d", thrs[i].name, (int)thrs[i].tid);
	for (size_t i = 0; i < NTHR; i++)
		truth("life_ns.%s %llu\nlockwait_ns.%s %llu", thrs[i].name,
		      (unsigned long long)thrs[i].life_ns, thrs[i].name,
		      (unsigned long long)thrs[i].lockwait_ns);
	truth("life_ns.main %llu", (unsigned long long)(mono_ns() - born));
	truth_close();
	puts("waits done");
	return 0;
}
