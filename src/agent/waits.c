/* SPDX-License-Identifier: MIT */
#include "waits.h"

#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "condwait.h"
#include "log.h"
#include "pages.h"
#include "peek.h"
#include "stacks.h"
#include "wait_locks.h"
#include "wait_fds.h"

/* glibc's pthread_mutex_t (x86-64, glibc 2.17 to at least 2.40, struct __pthread_mutex_s):
 * int __lock at 0 (the futex word a contended locker waits on), unsigned __count at 4, int
 * __owner at 8 (the holder's TID). Whether a futex IS a mutex is for the command to say (from
 * the waiting function); the agent just reads the int at +8. */
#define MUTEX_OWNER_OFFSET 8
/* An io or child wait's description (wait_fds.c), at most this long in a WAIT record. */
#define DESCRIPTION_MAX 2048

static struct wp_wait_entry *table;
static uint64_t bytes;

static uint64_t timespec_ns_at(uint64_t addr)
{
	struct timespec ts;
	if (!wp_peek(addr, &ts, sizeof(ts)) || ts.tv_sec < 0 || ts.tv_nsec < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether a poll or select waits on no descriptor at all: a sleep (PostgreSQL's pg_usleep is
 * select(0, NULL, NULL, NULL, &delay)). */
static int empty_set(long nr, const uint64_t args[6])
{
	if (nr == SYS_poll || nr == SYS_ppoll)
		return args[1] == 0;
	if (nr == SYS_select || nr == SYS_pselect6)
		return args[0] == 0 || (!args[1] && !args[2] && !args[3]);
	return 0;
}

/* The timeout of an empty poll or select (ns), 0 when none or unreadable. The kernel writes
 * the time left back only when the call returns: while the thread sleeps, its argument still
 * holds the time asked for. */
static uint64_t empty_set_timeout(long nr, const uint64_t args[6])
{
	if (nr == SYS_poll)
		return (int)args[2] > 0 ? (uint64_t)(int)args[2] * 1000000ull : 0;
	if (nr == SYS_ppoll)
		return args[2] ? timespec_ns_at(args[2]) : 0;
	if (nr == SYS_pselect6)
		return args[4] ? timespec_ns_at(args[4]) : 0;
	struct timeval tv; /* select */
	if (!args[4] || !wp_peek(args[4], &tv, sizeof(tv)) || tv.tv_sec < 0 || tv.tv_usec < 0)
		return 0;
	return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
}

/* Whether a futex wait looks like a contended glibc mutex: FUTEX_WAIT or FUTEX_WAIT_BITSET
 * (private or not) expecting the value 2, which is what __lll_lock_wait (and the robust and
 * elided paths) wait for: "locked, with waiters". Conditions, joins (the tid), semaphores and
 * most other futexes expect something else, and then the owner is not read at all: one
 * process_vm_readv less per sample of each of a program's idle threads. */
static int looks_like_mutex(uint64_t op, uint64_t val)
{
	uint64_t cmd = op & 0x7f; /* without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME */
	return (cmd == 0 /* FUTEX_WAIT */ || cmd == 9 /* FUTEX_WAIT_BITSET */) && val == 2;
}

static uint64_t futex_owner(uint64_t addr);

/* Whether a futex wait looks like one behind a writer-held glibc rwlock: FUTEX_WAIT or
 * FUTEX_WAIT_BITSET expecting 1 | PTHREAD_RWLOCK_FUTEX_USED (3), as pthread_rwlock_common.c
 * does for a reader waiting out a write phase (on __wrphase_futex) and for a writer waiting
 * for the writer before it (on __writers_futex). */
static int looks_like_rwlock(uint64_t op, uint64_t val)
{
	uint64_t cmd = op & 0x7f;
	return (cmd == 0 || cmd == 9) && val == 3;
}

/* The writer's TID of the glibc rwlock that futex `addr` belongs to (x86-64, glibc 2.25 and
 * later, struct __pthread_rwlock_arch_t): __readers 0, __writers 4, __wrphase_futex 8,
 * __writers_futex 12, __pad3 16, __pad4 20, __cur_writer 24, __shared 28. The waiter sleeps
 * on +8 or +12; one read of the two ints at addr+12 covers both: on +8 they are __pad4 (0)
 * and __cur_writer; on +12, __cur_writer and __shared (0 or 1). A TID is above 1, so the
 * second int when it is one, else the first. 0 when neither. */
static uint64_t rwlock_writer(uint64_t addr)
{
	int32_t v[2];
	if (!wp_peek(addr + 12, v, sizeof(v)))
		return 0;
	return v[1] > 1 ? (uint64_t)v[1] : v[0] > 1 ? (uint64_t)v[0] : 0;
}

/* A futex wait's holder: a mutex's owner or an rwlock's writer, by what the wait expects. */
static uint64_t futex_holder(uint64_t addr, uint64_t op, uint64_t val)
{
	if (looks_like_mutex(op, val))
		return futex_owner(addr);
	if (looks_like_rwlock(op, val))
		return rwlock_writer(addr);
	return 0;
}

static uint64_t futex_owner(uint64_t addr)
{
	int32_t owner;
	return wp_peek(addr + MUTEX_OWNER_OFFSET, &owner, sizeof(owner)) && owner > 0 ? (uint64_t)owner
										     : 0;
}

/* A hash of a description: in the key, so a descriptor whose description changed (reused
 * for another file, its peer now known) gets an entry of its own. */
static uint64_t text_hash(const char *s, uint32_t len)
{
	return wp_fnv(WP_FNV0, s, len);
}

static struct wp_wait_entry *count(struct wp_athread *t, const struct wp_wait_key *k,
				   const char *target, uint32_t target_len, uint32_t units,
				   uint64_t weight_ns, int partial, const uint64_t args[6])
{
	struct wp_wait_entry *e;
	HASH_FIND(hh, table, k, sizeof(*k), e);
	if (!e) {
		e = wp_task_malloc(sizeof(*e) + target_len);
		if (!e)
			return NULL;
		memset(e, 0, sizeof(*e));
		e->key = *k;
		e->target_len = target_len;
		if (target_len) /* (a sleep's has none: target NULL) */
			memcpy(e->target, target, target_len);
		HASH_ADD(hh, table, key, sizeof(e->key), e);
		bytes += sizeof(*e) + target_len;
	}
	e->count += units;
	e->weight_ns += weight_ns;
	e->partial = partial;
	if (partial && e->args != args) /* (again from its own arguments: nothing to copy) */
		memcpy(e->args, args, sizeof(e->args));
	t->last_wait = e;
	return e;
}

struct wp_wait_entry *wp_waits_add(struct wp_athread *t, uint32_t stack_id, long nr,
				   const uint64_t args[6], uint32_t units, uint64_t weight_ns,
				   int may_look, uint64_t *looked_ns)
{
	/* Only the arguments that name the object are kept: buffers and lengths differ from call
	 * to call and would split one wait into many entries. */
	struct wp_wait_key k = { .stack_id = stack_id, .nr = (uint32_t)nr,
				 .holder_stack = WP_LOCKS_NO_STACK };
	const char *target = NULL;
	uint32_t target_len = 0;
	int partial = 0;
	*looked_ns = 0;
	if (nr == SYS_futex) {
		k.a0 = args[0];
		k.a1 = args[1];
		k.a2 = args[2];
		k.aux = futex_holder(args[0], k.a1, k.a2);
		k.cond_mutex = wp_condwait_mutex(t->tid, args[0]);
	} else if (nr == SYS_nanosleep) {
		k.aux = timespec_ns_at(args[0]);
	} else if (nr == SYS_clock_nanosleep) {
		k.a0 = args[0];
		k.a1 = args[1];
		k.aux = timespec_ns_at(args[2]);
	} else if (nr == SYS_msgrcv || nr == SYS_msgsnd || nr == SYS_semop ||
		   nr == SYS_semtimedop) {
		k.a0 = args[0]; /* System V: the queue's or semaphore set's id */
	} else if (wp_wait_fds_handles(nr)) {
		/* io and child waits: what they wait for, in words (wait_fds.c) */
		static char text[DESCRIPTION_MAX] WP_BIG;
		struct wp_look look = { .may = may_look, .cpu_ns = 0 };
		if (nr == SYS_wait4 || nr == SYS_waitid) {
			k.a0 = args[0];
			k.a1 = args[1];
		} else if (nr == SYS_poll || nr == SYS_ppoll) {
			k.a1 = args[1];
		} else if (nr == SYS_select || nr == SYS_pselect6) {
			k.a1 = args[0];
		} else {
			k.a0 = args[0];
		}
		uint64_t id = 0;
		target_len = wp_wait_fds_describe(t->tid, nr, args, &look, &id, text, sizeof(text));
		target = text;
		if (nr != SYS_wait4 && nr != SYS_waitid)
			k.aux = id;
		if (!target_len && empty_set(nr, args))
			k.aux = empty_set_timeout(nr, args); /* a sleep: for how long */
		k.a2 = target_len ? text_hash(text, target_len) : 0;
		*looked_ns = look.cpu_ns;
		partial = look.partial;
	}
	struct wp_wait_entry *e = count(t, &k, target, target_len, units, weight_ns, partial, args);
	if (e && nr == SYS_futex && k.aux)
		wp_locks_owner_read(t, e, (pid_t)k.aux, units, weight_ns);
	return e;
}

void wp_waits_again(struct wp_athread *t, uint32_t units, uint64_t weight_ns, int may_look,
		    uint64_t *looked_ns)
{
	struct wp_wait_entry *last = t->last_wait;
	*looked_ns = 0;
	if (!last)
		return;
	if (last->partial && may_look) {
		/* the same call with the same arguments: described again, the rest read now */
		wp_waits_add(t, last->key.stack_id, last->key.nr, last->args, units, weight_ns,
			     may_look, looked_ns);
		return;
	}
	struct wp_wait_key k = last->key;
	if (k.nr != SYS_futex || (!looks_like_mutex(k.a1, k.a2) && !looks_like_rwlock(k.a1, k.a2))) {
		last->count += units; /* nothing read again: the same entry, no lookup */
		last->weight_ns += weight_ns;
		return;
	}
	k.aux = futex_holder(k.a0, k.a1, k.a2);
	k.holder_stack = WP_LOCKS_NO_STACK; /* this tick's holder sample, if any, says */
	/* out of memory: the sample keeps its stack, without its wait */
	struct wp_wait_entry *e = count(t, &k, last->target, last->target_len, units, weight_ns, 0,
					  NULL);
	if (e && k.aux)
		wp_locks_owner_read(t, e, (pid_t)k.aux, units, weight_ns);
}

void wp_waits_set_holder(struct wp_athread *t, struct wp_wait_entry *e, uint32_t units,
			 uint64_t weight_ns, uint32_t holder_stack)
{
	struct wp_wait_key k = e->key;
	k.holder_stack = holder_stack;
	if (!count(t, &k, e->target, e->target_len, units, weight_ns, 0, NULL)) {
		t->last_wait = e;
		return;
	}
	e->count -= units < e->count ? units : e->count; /* an entry left at 0 is not written */
	e->weight_ns -= weight_ns < e->weight_ns ? weight_ns : e->weight_ns;
}

uint64_t wp_waits_holder_now(const struct wp_wait_key *k)
{
	if (k->nr != SYS_futex || (!looks_like_mutex(k->a1, k->a2) && !looks_like_rwlock(k->a1, k->a2)))
		return k->aux;
	return futex_holder(k->a0, k->a1, k->a2);
}

int wp_waits_last_record(const struct wp_athread *t, uint32_t tid, struct wp_rec_last *r)
{
	const struct wp_stack_entry *s = t->last_stack;
	if (!t->alive || !s)
		return 0;
	*r = (struct wp_rec_last){ .tid = tid, .stack_id = s->id, .at_ns = t->tl_last_us * 1000 };
	if (s->flags & WP_STACK_WAITING)
		r->flags |= WP_LAST_WAITING;
	const struct wp_wait_entry *w = t->last_wait;
	uint64_t holder = w ? wp_waits_holder_now(&w->key) : 0;
	if (w && !(holder == tid && w->key.aux != tid)) {
		r->flags |= WP_LAST_IN_CALL;
		r->nr = w->key.nr;
		r->a0 = w->key.a0;
		r->a1 = w->key.a1;
		r->a2 = w->key.a2;
		r->aux = holder;
		r->cond_mutex = w->key.cond_mutex;
	}
	return 1;
}

struct wp_wait_entry *wp_waits_all(void)
{
	return table;
}

uint64_t wp_waits_count(void)
{
	/* the records written: an entry whose samples all moved to the entry with the holder's
	 * stack (wp_waits_set_holder) is not */
	uint64_t n = 0;
	for (struct wp_wait_entry *e = table; e; e = e->hh.next)
		n += e->count != 0;
	return n;
}

uint64_t wp_waits_bytes(void)
{
	return bytes;
}

static struct wp_wait_entry *abandoned; /* reachable for leak checkers; never touched */

void wp_waits_reset(int abandon)
{
	struct wp_wait_entry *e, *tmp;
	if (abandon) {
		abandoned = table;
		table = NULL;
	}
	HASH_ITER(hh, table, e, tmp) {
		HASH_DEL(table, e);
		wp_task_free(e);
	}
	bytes = 0;
	wp_wait_fds_reset();
}
