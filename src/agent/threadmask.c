/* SPDX-License-Identifier: MIT */
#include "threadmask.h"

#include "condwait.h"
#include "sampler.h"
#include "pages.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Room for this many threads' entries (16 bytes each, zero pages until touched). A thread that
 * finds no room within PROBE slots of its hash publishes nothing: the sampler then relies on
 * one /proc read of its mask (see sampler.c), as for threads it did not see start. */
#define NENT 8192
#define PROBE 128

enum { EMPTY = 0, GONE = -1, CLAIMING = -2 };

struct wp_tmask {
	_Atomic pid_t tid; /* EMPTY (never used: ends a probe), GONE, CLAIMING, or the owner */
	_Atomic uint64_t mask;
};

static struct wp_tmask table[NENT] WP_BIG;
/* The process the table describes; any other (a vfork child) must not write to it. */
static _Atomic pid_t table_pid;
/* Bumped when a fork child empties the table: every thread-local cache is void. */
static _Atomic unsigned epoch = 1;
static __thread struct wp_tmask *mine __attribute__((tls_model("initial-exec")));
static __thread unsigned mine_epoch __attribute__((tls_model("initial-exec")));
static pthread_key_t exit_key;
static int have_exit_key;

uint64_t wp_sigset_word(const void *set)
{
	uint64_t w;
	memcpy(&w, set, sizeof(w));
	return w;
}

static unsigned slot_of(pid_t tid)
{
	return ((uint32_t)tid * 2654435761u) % NENT;
}

/* The kernel's view of this thread's mask (no libc, so no interposer). */
static uint64_t kernel_mask(void)
{
	uint64_t m = 0;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &m, sizeof(m));
	return m;
}

int wp_tmask_foreign(void)
{
	return (pid_t)syscall(SYS_getpid) != atomic_load(&table_pid);
}

/* Finds `tid`'s entry (a stale one left by an earlier thread with this tid included) or
 * claims a free one. Only `tid` itself calls this, so no two entries can hold it. */
static struct wp_tmask *claim(pid_t tid)
{
	unsigned h = slot_of(tid);
	for (unsigned i = 0; i < PROBE; i++) {
		struct wp_tmask *e = &table[(h + i) % NENT];
		pid_t t = atomic_load(&e->tid);
		if (t == tid)
			return e;
		if (t == EMPTY)
			break; /* the end of this probe sequence: tid has no entry */
	}
	for (unsigned i = 0; i < PROBE; i++) {
		struct wp_tmask *e = &table[(h + i) % NENT];
		pid_t t = atomic_load(&e->tid);
		if ((t == EMPTY || t == GONE) && atomic_compare_exchange_strong(&e->tid, &t, CLAIMING)) {
			/* The mask first, then the tid: a reader never pairs tid with an old mask. */
			atomic_store(&e->mask, kernel_mask());
			atomic_store(&e->tid, tid);
			return e;
		}
	}
	return NULL;
}

/* Async-signal-safe: system calls (getpid, gettid, rt_sigprocmask), atomics, TLS. */
struct wp_tmask *wp_tmask_self(void)
{
	if (wp_tmask_foreign())
		return NULL;
	unsigned ep = atomic_load(&epoch);
	if (mine && mine_epoch == ep)
		return mine;
	struct wp_tmask *e = claim((pid_t)syscall(SYS_gettid));
	if (e) {
		mine = e;
		mine_epoch = ep;
	}
	return e;
}

void wp_tmask_set(struct wp_tmask *e, uint64_t mask)
{
	atomic_store(&e->mask, mask);
}

uint64_t wp_tmask_get(const struct wp_tmask *e)
{
	return atomic_load(&e->mask);
}

pid_t wp_tmask_tid(const struct wp_tmask *e)
{
	return atomic_load(&e->tid);
}

int wp_tmask_lookup(pid_t tid, uint64_t *mask)
{
	unsigned h = slot_of(tid);
	for (unsigned i = 0; i < PROBE; i++) {
		struct wp_tmask *e = &table[(h + i) % NENT];
		pid_t t = atomic_load(&e->tid);
		if (t == tid) {
			*mask = atomic_load(&e->mask);
			/* still tid's (an entry given back and claimed anew in between would
			 * pair tid with another thread's mask) */
			return atomic_load(&e->tid) == tid;
		}
		if (t == EMPTY)
			return 0;
	}
	return 0;
}

/* A pthread key destructor: the thread is ending. (glibc blocks every signal for the rest
 * of its exit; a signal sent meanwhile dies with it, unseen.) */
static void give_back(void *p)
{
	struct wp_tmask *e = p;
	pid_t me = (pid_t)syscall(SYS_gettid);
	/* The leader leaving without pthread_exit (a fork child's only thread returning from its
	 * start routine): the program may be about to lose its last thread. */
	if (me == (pid_t)syscall(SYS_getpid))
		wp_sampler_prepare_exit_thread();
	wp_condwait_thread_end(); /* condwait.h's entry too */
	if (atomic_compare_exchange_strong(&e->tid, &me, GONE) && mine == e)
		mine = NULL;
}

void wp_tmask_release_at_exit(struct wp_tmask *e)
{
	if (have_exit_key && e)
		pthread_setspecific(exit_key, e);
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
	/* One thread here, the one that forked, with a new tid: start afresh. */
	wp_pages_each(table, sizeof(table), empty_part, NULL);
	atomic_fetch_add(&epoch, 1);
	atomic_store(&table_pid, (pid_t)syscall(SYS_getpid));
	wp_tmask_self();
}

void wp_tmask_init(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	have_exit_key = pthread_key_create(&exit_key, give_back) == 0;
	atomic_store(&table_pid, (pid_t)syscall(SYS_getpid));
	pthread_atfork(NULL, NULL, fork_child);
	wp_tmask_self();
}
