/* SPDX-License-Identifier: MIT */
/* pthread_cond_wait, pthread_cond_timedwait, pthread_cond_clockwait, interposed to publish the
 * mutex a condition waiter waits with (condwait.h). C++ std::condition_variable::wait and
 * wait_until/wait_for call these through libstdc++'s and the program's PLT, so they are seen
 * too.
 *
 * Cost on every condition wait of the program: a TLS load, two loads and two stores before
 * glibc's function, two stores after; the first wait of a thread also claims its entry (one
 * gettid system call, a CAS). No lock, no allocation, errno untouched: async-signal-safe.
 * fork: the child's table starts empty (its thread has a new tid). vfork: the child runs on
 * its parent's thread-local storage and memory, so its stores land in the parent thread's
 * entry; that thread is blocked in vfork, not in a futex of the condition, and the child puts
 * the old values back before it returns: nothing is misnamed. Cancellation inside glibc's
 * function unwinds past the restore: the entry keeps C and M until the thread ends (its exit
 * gives the entry back), which names M only for a futex wait inside C. */
#include "condwait.h"
#include "pages.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* As threadmask.c: room for this many threads (24 bytes each, zero pages until touched); a
 * thread that finds no room within PROBE slots publishes nothing (its condition waits then
 * name no mutex). */
#define NENT 8192
#define PROBE 128

enum { EMPTY = 0, GONE = -1, CLAIMING = -2 };

struct cw_entry {
	_Atomic pid_t tid; /* EMPTY (ends a probe), GONE, CLAIMING, or the owner */
	_Atomic uint64_t cond, mutex;
};

static struct cw_entry table[NENT] WP_BIG;
/* Bumped when a fork child empties the table: every thread-local pointer is void. */
static _Atomic unsigned epoch = 1;
static __thread struct cw_entry *mine __attribute__((tls_model("initial-exec")));
static __thread unsigned mine_epoch __attribute__((tls_model("initial-exec")));

typedef int (*wait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*timedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*clockwait_fn)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
			    const struct timespec *);
static wait_fn real_wait;
static timedwait_fn real_timedwait;
static clockwait_fn real_clockwait;

static unsigned slot_of(pid_t tid)
{
	return ((uint32_t)tid * 2654435761u) % NENT;
}

/* The calling thread's entry: found (a stale one of an earlier thread with this tid
 * included) or claimed. NULL when the table has no room. Async-signal-safe. */
static struct cw_entry *claim(void)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	unsigned h = slot_of(tid);
	for (unsigned i = 0; i < PROBE; i++) {
		struct cw_entry *e = &table[(h + i) % NENT];
		pid_t t = atomic_load(&e->tid);
		if (t == tid)
			return e;
		if (t == EMPTY)
			break;
	}
	for (unsigned i = 0; i < PROBE; i++) {
		struct cw_entry *e = &table[(h + i) % NENT];
		pid_t t = atomic_load(&e->tid);
		if ((t == EMPTY || t == GONE) && atomic_compare_exchange_strong(&e->tid, &t, CLAIMING)) {
			atomic_store(&e->cond, 0);
			atomic_store(&e->mutex, 0);
			atomic_store(&e->tid, tid);
			return e;
		}
	}
	return NULL;
}

static struct cw_entry *self(void)
{
	unsigned ep = atomic_load_explicit(&epoch, memory_order_relaxed);
	if (__builtin_expect(mine && mine_epoch == ep, 1))
		return mine;
	struct cw_entry *e = claim();
	if (e) {
		mine = e;
		mine_epoch = ep;
	}
	return e;
}

/* What a waiter publishes, and what it put back after. */
struct saved {
	struct cw_entry *e;
	uint64_t cond, mutex;
};

/* The mutex first, the condition last: a reader that sees C sees M (or a later pair). */
static struct saved publish(const void *cond, const void *mutex)
{
	struct saved s = { self(), 0, 0 };
	if (s.e) {
		s.cond = atomic_load_explicit(&s.e->cond, memory_order_relaxed);
		s.mutex = atomic_load_explicit(&s.e->mutex, memory_order_relaxed);
		atomic_store_explicit(&s.e->mutex, (uint64_t)(uintptr_t)mutex, memory_order_relaxed);
		atomic_store_explicit(&s.e->cond, (uint64_t)(uintptr_t)cond, memory_order_release);
	}
	return s;
}

/* Puts back what a signal handler's wait interrupted (usually nothing): the condition first. */
static void unpublish(struct saved s)
{
	if (s.e) {
		atomic_store_explicit(&s.e->cond, s.cond, memory_order_relaxed);
		atomic_store_explicit(&s.e->mutex, s.mutex, memory_order_release);
	}
}

/* dlsym on demand when another library's constructor waits before ours ran (not
 * async-signal-safe then; nothing else is at that time either). */
#define RESOLVE(var, type, name)                                      \
	do {                                                          \
		if (__builtin_expect(!var, 0))                        \
			var = (type)dlsym(RTLD_NEXT, name);           \
		if (!var)                                             \
			return ENOSYS;                                \
	} while (0)

EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	RESOLVE(real_wait, wait_fn, "pthread_cond_wait");
	struct saved s = publish(c, m);
	int r = real_wait(c, m);
	unpublish(s);
	return r;
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				  const struct timespec *abstime)
{
	RESOLVE(real_timedwait, timedwait_fn, "pthread_cond_timedwait");
	struct saved s = publish(c, m);
	int r = real_timedwait(c, m, abstime);
	unpublish(s);
	return r;
}

EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
				  const struct timespec *abstime)
{
	RESOLVE(real_clockwait, clockwait_fn, "pthread_cond_clockwait");
	struct saved s = publish(c, m);
	int r = real_clockwait(c, m, clock, abstime);
	unpublish(s);
	return r;
}

/* Sampler thread only. */
uint64_t wp_condwait_mutex(pid_t tid, uint64_t futex)
{
	unsigned h = slot_of(tid);
	for (unsigned i = 0; i < PROBE; i++) {
		struct cw_entry *e = &table[(h + i) % NENT];
		pid_t t = atomic_load(&e->tid);
		if (t == tid) {
			uint64_t c = atomic_load_explicit(&e->cond, memory_order_acquire);
			uint64_t m = atomic_load(&e->mutex);
			/* the futex a waiter sleeps on lies inside its condition */
			if (!c || futex < c || futex >= c + sizeof(pthread_cond_t))
				return 0;
			return atomic_load(&e->tid) == tid ? m : 0;
		}
		if (t == EMPTY)
			return 0;
	}
	return 0;
}

void wp_condwait_thread_end(void)
{
	struct cw_entry *e = mine;
	if (!e || mine_epoch != atomic_load(&epoch))
		return;
	pid_t me = (pid_t)syscall(SYS_gettid);
	atomic_store(&e->cond, 0);
	if (atomic_compare_exchange_strong(&e->tid, &me, GONE))
		mine = NULL;
}

/* Empties the entries that start in [lo, hi): pages in memory only (pages.h). */
static void empty_part(char *lo, char *hi, void *arg)
{
	(void)arg;
	size_t first = ((size_t)(lo - (char *)table) + sizeof(table[0]) - 1) / sizeof(table[0]);
	for (size_t i = first; i < NENT && (char *)&table[i] < hi; i++)
		if (atomic_load(&table[i].tid) != EMPTY)
			atomic_store(&table[i].tid, EMPTY);
}

static void fork_child(void)
{
	/* One thread here, with a new tid: start afresh. */
	wp_pages_each(table, sizeof(table), empty_part, NULL);
	atomic_fetch_add(&epoch, 1);
}

void wp_condwait_init(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	real_wait = (wait_fn)dlsym(RTLD_NEXT, "pthread_cond_wait");
	real_timedwait = (timedwait_fn)dlsym(RTLD_NEXT, "pthread_cond_timedwait");
	real_clockwait = (clockwait_fn)dlsym(RTLD_NEXT, "pthread_cond_clockwait");
	pthread_atfork(NULL, NULL, fork_child);
}
