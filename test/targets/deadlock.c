/* SPDX-License-Identifier: MIT */
/* Deadlocks to be named (issue 21), one per mode (argv[1]):
 *   abba     two threads lock two mutexes in opposite orders: each holds one, waits for the other
 *   ring     three threads in a ring: each holds its lock and waits for the next one's
 *   self     a thread locks the normal mutex it already holds (glibc's lock just blocks)
 *   join     a thread holding a mutex joins a thread that waits for that mutex
 *   contend  no deadlock: four threads take two mutexes in the same order, over and over
 * The truth ($WP_TRUTH) says which thread holds and waits for which lock ("tid.NAME N",
 * "holds.NAME LOCK", "waits.NAME LOCK"), the line of the call that blocks ("line.lock N"),
 * and the pid; then the file named by argv[2] gets "stuck" once every thread of the loop is
 * asleep in the kernel on its second lock (or, for contend, once the lockers have run a
 * while), and the program blocks for good: main joins a thread of the loop. The test stops it
 * (SIGINT, SIGKILL), as a user would. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "common.h"

static pthread_mutex_t abba_lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t abba_lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ring_lock_1 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ring_lock_2 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ring_lock_3 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t join_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t contend_lock_1 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t contend_lock_2 = PTHREAD_MUTEX_INITIALIZER;

#define MAX_THREADS 4

struct locker {
	struct target_thread t;
	pthread_mutex_t *first, *second;
	const char *first_name, *second_name;
};

static struct locker lockers[MAX_THREADS];
static int nlockers;
static pthread_barrier_t all_hold_first;
static int second_line; /* the line of the call that blocks */
static volatile unsigned long long spins;

/* Takes the second lock while holding the first: where each thread of a loop stays. */
static KEEP void lock_second(struct locker *l)
{
	second_line = __LINE__ + 1;
	pthread_mutex_lock(l->second);
	BARRIER();
}

static KEEP void *locker_main(void *arg)
{
	struct locker *l = arg;
	target_thread_begin(&l->t);
	pthread_mutex_lock(l->first);
	pthread_barrier_wait(&all_hold_first); /* every first lock is taken before any second */
	lock_second(l);
	pthread_mutex_unlock(l->second); /* never reached */
	pthread_mutex_unlock(l->first);
	return NULL;
}

/* join: the joiner holds join_lock and joins the other locker, which waits for join_lock */
static KEEP void join_other(struct locker *l)
{
	pthread_join(l[1].t.handle, NULL);
	BARRIER();
}

static KEEP void *joiner_main(void *arg)
{
	struct locker *l = arg;
	target_thread_begin(&l->t);
	pthread_mutex_lock(l->first);
	pthread_barrier_wait(&all_hold_first);
	join_other(l);
	pthread_mutex_unlock(l->first); /* never reached */
	return NULL;
}

static KEEP void *lockee_main(void *arg)
{
	struct locker *l = arg;
	target_thread_begin(&l->t);
	pthread_barrier_wait(&all_hold_first);
	lock_second(l);
	pthread_mutex_unlock(l->second); /* never reached */
	return NULL;
}

/* contend: both locks in the same order, a little work under them, forever */
static KEEP void *contender_main(void *arg)
{
	struct locker *l = arg;
	target_thread_begin(&l->t);
	pthread_barrier_wait(&all_hold_first);
	for (;;) {
		pthread_mutex_lock(l->first);
		pthread_mutex_lock(l->second);
		for (int i = 0; i < 20000; i++)
			spins++;
		pthread_mutex_unlock(l->second);
		pthread_mutex_unlock(l->first);
	}
	return NULL;
}

static void add(const char *name, pthread_mutex_t *first, const char *first_name,
		pthread_mutex_t *second, const char *second_name)
{
	lockers[nlockers++] = (struct locker){ { name, NULL, 0, 0 }, first, second, first_name,
					       second_name };
}

/* Whether thread `tid` is asleep in futex (system call 202), from /proc. */
static int in_futex(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n > 0 && !strncmp(buf, "202 ", 4);
}

static void say_stuck(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs("stuck\n", f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(3);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: deadlock abba|ring|self|join|contend READY_FILE\n");
		return 2;
	}
	const char *mode = argv[1];
	if (!strcmp(mode, "abba")) {
		add("abba-1", &abba_lock_a, "abba_lock_a", &abba_lock_b, "abba_lock_b");
		add("abba-2", &abba_lock_b, "abba_lock_b", &abba_lock_a, "abba_lock_a");
	} else if (!strcmp(mode, "ring")) {
		add("ring-1", &ring_lock_1, "ring_lock_1", &ring_lock_2, "ring_lock_2");
		add("ring-2", &ring_lock_2, "ring_lock_2", &ring_lock_3, "ring_lock_3");
		add("ring-3", &ring_lock_3, "ring_lock_3", &ring_lock_1, "ring_lock_1");
	} else if (!strcmp(mode, "self")) {
		add("relocker", &self_lock, "self_lock", &self_lock, "self_lock");
	} else if (!strcmp(mode, "join")) {
		add("joiner", &join_lock, "join_lock", NULL, "lockee");
		add("lockee", NULL, "", &join_lock, "join_lock");
	} else if (!strcmp(mode, "contend")) {
		for (int i = 0; i < MAX_THREADS; i++)
			add(i == 0 ? "contend-1" : i == 1 ? "contend-2" : i == 2 ? "contend-3"
										 : "contend-4",
			    &contend_lock_1, "contend_lock_1", &contend_lock_2, "contend_lock_2");
	} else {
		fprintf(stderr, "deadlock: unknown mode %s\n", mode);
		return 2;
	}
	int contend = !strcmp(mode, "contend"), join = !strcmp(mode, "join");
	truth_open();
	pthread_barrier_init(&all_hold_first, NULL, (unsigned)nlockers);
	/* the lockee first: the joiner joins its handle */
	for (int i = nlockers; i-- > 0;)
		pthread_create(&lockers[i].t.handle, NULL,
			       contend ? contender_main : !join ? locker_main :
			       i == 0 ? joiner_main : lockee_main, &lockers[i]);
	/* every locker asleep in futex, three looks in a row 20 ms apart (contend: a while) */
	for (int calm = 0; calm < 3;) {
		sleep_ns(20 * 1000000ull);
		int all = 1;
		for (int i = 0; i < nlockers; i++)
			all &= lockers[i].t.tid && in_futex(lockers[i].t.tid);
		calm = contend ? calm + 1 : all ? calm + 1 : 0;
	}
	if (contend)
		sleep_ns(300 * 1000000ull);
	truth("pid %d", (int)getpid());
	truth("line.lock %d", second_line);
	for (int i = 0; i < nlockers; i++) {
		const struct locker *l = &lockers[i];
		truth("tid.%s %d", l->t.name, (int)l->t.tid);
		if (!contend && l->first)
			truth("holds.%s %s", l->t.name, l->first_name);
		if (!contend)
			truth("waits.%s %s", l->t.name, l->second_name);
	}
	truth_close();
	say_stuck(argv[2]);
	pthread_join(lockers[0].t.handle, NULL); /* for good */
	return 0;
}
