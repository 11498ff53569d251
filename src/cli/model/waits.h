/* SPDX-License-Identifier: MIT */
/* Why a waiting sample waited (issue 13): the agent's WAIT records (format.h: a system call,
 * the arguments naming its object, one fact it read) turned into a kind and an object, with
 * the program's own words: the waiting stack's functions tell a mutex from a condition or a
 * join (they all wait in futex), the ELF symbol tables name a global mutex, the THREAD records
 * name a joined thread or a lock's holder.
 *
 * The classification is pure (no profile, no model, no symbolizer): wp_wait_classify and
 * wp_wait_describe, unit-tested in test/unit/test_waits.c. The model's waits, attached to
 * each kept stack (struct wp_rstack's waits) and counted, are rwaits.h's. */
#ifndef WP_WAITS_MODEL_H
#define WP_WAITS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/profile.h"

enum wp_wait_kind {
	WP_WAIT_LOCK,      /* a pthread mutex (and what is built on it) */
	WP_WAIT_RWLOCK,
	WP_WAIT_CONDITION, /* pthread_cond_wait */
	WP_WAIT_SEMAPHORE,
	WP_WAIT_JOIN,      /* pthread_join */
	WP_WAIT_FUTEX,     /* any other futex */
	WP_WAIT_IO,        /* a descriptor, or poll/select/epoll over several */
	WP_WAIT_SLEEP,
	WP_WAIT_CHILD,     /* wait4, waitid */
	WP_WAIT_SIGNAL,    /* sigsuspend, sigtimedwait, pause */
	WP_WAIT_OTHER,     /* any other system call: the object is its name */
	WP_WAIT_CPU,       /* runnable, waiting for a CPU (format.h's WP_WAIT_NR_CPU) */
	WP_WAIT_DISK,      /* uninterruptible sleep, state D (WP_WAIT_NR_DISK) */
	WP_WAIT__N
};

/* "lock", "rwlock", "condition", "semaphore", "join", "futex", "io", "sleep", "child",
 * "signal", "other", "cpu", "disk". */
const char *wp_wait_kind_name(enum wp_wait_kind k);

/* The kind of a wait in system call `nr` (x86-64), from the call and, for a futex, the
 * waiting stack's function names, LEAF FIRST: the first that says what the futex is decides
 * (a pthread_cond_wait re-locking its mutex waits in __lll_lock_wait: a lock). */
enum wp_wait_kind wp_wait_classify(uint32_t nr, const char *const *funcs, size_t n);

/* The kind of wait w: wp_wait_classify, but a poll or select over no descriptor is a
 * sleep. */
enum wp_wait_kind wp_wait_kind_of(const struct wp_wait *w, const char *const *funcs, size_t n);

/* What the object is called, given what the caller could find:
 *   data_name    the symbol at the futex address (wp_symbolize_data), or NULL
 *   waiter       the program function that waits (for an anonymous lock), or NULL
 *   joined_name  join: the name of the thread whose tid the futex holds, or NULL
 * Writes the object into buf (at most cap bytes, NUL-terminated); the form is documented in
 * docs/profile-format.md ("Waits"). */
void wp_wait_describe(const struct wp_wait *w, enum wp_wait_kind k, const char *data_name,
		      const char *waiter, const char *joined_name, char *buf, size_t cap);

/* A condition's object with the mutex its waiter passed (struct wp_wait's cond_mutex, not 0)
 * appended to what wp_wait_describe wrote in buf: "big_cond mutex=big_lock", the mutex by
 * its symbol (`mutex_name`, wp_symbolize_data at cond_mutex) when it has one, else by its
 * address: "0x55d0c8a2b2a0 in consumer mutex=0x55d0c8a2b2c8". Truncated to cap bytes. */
void wp_wait_add_mutex(char *buf, size_t cap, const char *mutex_name, uint64_t cond_mutex);

/* Whether w waits on one end of a pipe (its target "pipe:[INO] read end..." or "... write
 * end..."): 1 the read end, 2 the write end, 0 not a pipe end; *ino its inode. */
int wp_wait_pipe_end(const struct wp_wait *w, uint64_t *ino);
/* Adds to a pipe end's object (cap bytes) `who`, the threads seen blocked on its other end:
 * "pipe:[N] read end (write end fd 4, seen blocked on it: writer tid=77)". */
void wp_wait_pipe_used_by(char *obj, size_t cap, const char *who);

/* The name of x86-64 system call `nr` for the calls a thread commonly blocks in, else NULL. */
const char *wp_syscall_name(uint32_t nr);

/* A duration as a wait object shows it: "10ms", "1.5s", "250us", "800ns". */
void wp_wait_duration(uint64_t ns, char *buf, size_t cap);

/* The longest object the model keeps, with its NUL: a longer one is cut there (and only
 * there: every buffer that holds an object, or a "[wait KIND OBJECT]" leaf, is sized from
 * these, so no report cuts it shorter). */
#define WP_WAIT_OBJECT_MAX 2048
/* "[wait " + the longest kind name + " " + an object + "]" */
#define WP_WAIT_LEAF_MAX (WP_WAIT_OBJECT_MAX + 32)

/* Whether module `m` (a basename) is the C runtime whose waiting code every wait goes
 * through: the C library, libpthread, the loader, libstdc++ (condition_variable, thread),
 * libgcc_s, the vDSO. The one list: a stack's waiter is never one of its functions, and a
 * wait leaf replaces its frames at the leaf end of a stack. */
int wp_runtime_module(const char *m);

#endif
