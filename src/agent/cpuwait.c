/* SPDX-License-Identifier: MIT */
#include "cpuwait.h"

#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "../common/format.h"
#include "clock.h"
#include "waits.h"

/* A thread's schedstat is read again at most this often; samples in between are given what
 * the last read showed (reads add up whatever their spacing). At 100 Hz about every other
 * sample of a running thread reads; at 1000 Hz one in 20. A read costs 4-11 us. */
#define CPUWAIT_READ_EVERY_NS (20 * 1000000ull)
/* Runqueue time given ahead of schedstat (unmoved samples) is forgotten beyond this: a thread
 * stopped by SIGSTOP looks runnable and unmoved, and must not cancel its later reads for
 * ever. */
#define CPUWAIT_AHEAD_MAX_NS (1000 * 1000000ll)
#define UNIT_FX 1024u

static struct wp_cpuwait_entry *table;
static uint64_t bytes, reads, state_reads, read_ns;

/* Reads field 2 of `tid`'s schedstat: ns spent runnable on a runqueue. Returns 0, or -1 when
 * unreadable (the thread ended; a kernel without schedstats). */
static int read_run_delay(pid_t tid, uint64_t *delay_ns)
{
	char buf[128];
	if (wp_threads_read_proc(tid, "schedstat", buf, sizeof(buf)) <= 0)
		return -1;
	reads++;
	char *end;
	strtoull(buf, &end, 10); /* field 1: ns on a CPU */
	if (end == buf)
		return -1;
	char *p = end;
	*delay_ns = strtoull(p, &end, 10);
	return end == p ? -1 : 0;
}

static struct wp_cpuwait_entry *count(uint32_t stack_id, uint32_t nr, uint64_t a0, uint64_t a1,
				      const char *target, uint32_t target_len, uint64_t units_fx,
				      uint64_t weight_ns)
{
	struct wp_cpuwait_entry *e, probe;
	memset(&probe.key, 0, sizeof(probe.key));
	probe.key.stack_id = stack_id;
	probe.key.nr = nr;
	probe.key.a0 = a0;
	probe.key.a1 = a1;
	HASH_FIND(hh, table, &probe.key, sizeof(probe.key), e);
	if (!e) {
		e = wp_task_malloc(sizeof(*e) + target_len);
		if (!e)
			return NULL;
		memset(e, 0, sizeof(*e));
		e->key = probe.key;
		e->target_len = target_len;
		if (target_len)
			memcpy(e->target, target, target_len);
		HASH_ADD(hh, table, key, sizeof(e->key), e);
		bytes += sizeof(*e) + target_len;
	}
	e->units_fx += units_fx;
	e->weight_ns += weight_ns;
	return e;
}

void wp_cpuwait_waited_again(struct wp_athread *t, uint32_t units, uint64_t weight_ns)
{
	if (t->cw_again_wait != t->last_wait) { /* another wait: only the latest is kept */
		t->cw_again_wait = t->last_wait;
		t->cw_again_ns = t->cw_again_units = 0;
	}
	t->cw_again_ns += weight_ns;
	t->cw_again_units += units;
}

/* After a fresh schedstat read: `excess`, the runqueue time it showed beyond what this
 * sample can hold, was spent by a thread woken from its wait and queued while samples that
 * saw it not run counted the wait again. Up to what they counted, it moves from that wait to
 * "cpu" on the wait's stack. Counting again starts over either way. */
static void take_back(struct wp_athread *t, uint64_t excess)
{
	struct wp_wait_entry *w = t->cw_again_wait;
	if (w && t->cw_again_ns && excess) {
		uint64_t moved = excess < t->cw_again_ns ? excess : t->cw_again_ns;
		if (moved > w->weight_ns)
			moved = w->weight_ns;
		uint64_t units_fx = (uint64_t)((double)t->cw_again_units * UNIT_FX * (double)moved /
					       (double)t->cw_again_ns);
		uint64_t whole = units_fx / UNIT_FX;
		w->count -= whole < w->count ? whole : w->count;
		w->weight_ns -= moved;
		if (moved)
			count(w->key.stack_id, WP_WAIT_NR_CPU, 0, 0, NULL, 0, whole * UNIT_FX, moved);
		t->cw_owed_ns -= (int64_t)moved;
	}
	t->cw_again_wait = NULL;
	t->cw_again_ns = t->cw_again_units = 0;
}

uint64_t wp_cpuwait_runnable(struct wp_athread *t, uint32_t stack_id, uint32_t units,
			     uint64_t weight_ns, int unmoved, int may_read, uint64_t now,
			     uint64_t *unran_ns)
{
	uint64_t spent = 0, waited;
	*unran_ns = 0;
	if (unmoved) {
		/* not run at all since its last sample, not blocked in a call: queued throughout.
		 * schedstat shows it only once the thread runs again: given ahead. */
		waited = weight_ns;
	} else {
		/* at most what this sample stands for less what the thread ran meanwhile:
		 * schedstat also counts a thread woken from a lock or a read waiting for a CPU,
		 * while samples count that as the lock or the read (a thread that has not run
		 * since is not looked at again): that part is taken back below */
		uint64_t ran = t->cw_ran_ns > 0 ? (uint64_t)t->cw_ran_ns : 0;
		uint64_t room = weight_ns > ran ? weight_ns - ran : 0;
		/* A thread that ran all along waited for nothing: no read (what it waited before
		 * is read at a later sample; the reads add up whatever their spacing). */
		int fresh = 0;
		if (room && may_read &&
		    (!t->cw_read_ns || now - t->cw_read_ns >= CPUWAIT_READ_EVERY_NS)) {
			uint64_t c0 = wp_self_cpu_ns(), delay_ns;
			if (read_run_delay(t->tid, &delay_ns) == 0) {
				/* the first read is a baseline: before it, the thread was not sampled */
				if (t->cw_read_ns && delay_ns > t->cw_delay_ns)
					t->cw_owed_ns += (int64_t)(delay_ns - t->cw_delay_ns);
				fresh = t->cw_read_ns != 0;
				t->cw_delay_ns = delay_ns;
				t->cw_read_ns = now;
			}
			spent = wp_self_cpu_ns() - c0;
			read_ns += spent;
		}
		/* the runqueue time read and not yet given, up to the room */
		waited = t->cw_owed_ns <= 0 ? 0
			 : (uint64_t)t->cw_owed_ns < room ? (uint64_t)t->cw_owed_ns : room;
		/* what is left beyond this sample's share: none when given ahead (owed <= 0).
		 * Not the difference cast to unsigned: owed below zero made it 2^64-ish, and
		 * every sample that had counted a sleep again went to "cpu" */
		if (fresh)
			take_back(t, t->cw_owed_ns > (int64_t)waited
					     ? (uint64_t)(t->cw_owed_ns - (int64_t)waited) : 0);
		*unran_ns = room - waited; /* blocked meanwhile, or queued as a later read shows */
	}
	t->cw_owed_ns -= (int64_t)waited;
	if (t->cw_owed_ns < -CPUWAIT_AHEAD_MAX_NS)
		t->cw_owed_ns = -CPUWAIT_AHEAD_MAX_NS;
	if (waited && weight_ns) /* in double: units x 1024 x ns could pass 2^64 */
		count(stack_id, WP_WAIT_NR_CPU, 0, 0, NULL, 0,
		      (uint64_t)((double)units * UNIT_FX * (double)waited / (double)weight_ns),
		      waited);
	return spent;
}

/* Whether a thread blocked in call `nr` with its descriptor's target `target` may be in
 * uninterruptible sleep for a disk: outside any call (a page fault), in a call on a file
 * (a path), or in a call that names files or syncs them. Others (pipes, sockets, futexes,
 * sleeps) sleep interruptibly, and their state is not read. */
int wp_cpuwait_may_be_disk(long nr, const char *target, uint32_t target_len)
{
	if (nr < 0)
		return 1;
	if (target && target_len && target[0] == '/')
		/* a terminal sleeps interruptibly: not worth a read per sample of a shell */
		return !(target_len >= 5 && !memcmp(target, "/dev/", 5) &&
			 ((target_len >= 9 && !memcmp(target + 5, "pts/", 4)) ||
			  (target_len >= 8 && !memcmp(target + 5, "tty", 3))));
	switch (nr) {
	case SYS_open: case SYS_openat: case SYS_stat: case SYS_lstat: case SYS_newfstatat:
	case SYS_statx: case SYS_sync: case SYS_syncfs: case SYS_unlink: case SYS_unlinkat:
	case SYS_rename: case SYS_renameat: case SYS_renameat2: case SYS_mkdir: case SYS_truncate:
	case SYS_msync: case SYS_execve: case SYS_fsync: case SYS_fdatasync: case SYS_mmap:
		return 1;
	default:
		return 0;
	}
}

int wp_cpuwait_state(pid_t tid, uint64_t *spent_ns)
{
	uint64_t c0 = wp_self_cpu_ns();
	char state = wp_threads_state(tid);
	*spent_ns = wp_self_cpu_ns() - c0;
	read_ns += *spent_ns;
	state_reads++;
	return state;
}

void wp_cpuwait_disk(struct wp_athread *t, uint32_t stack_id, long nr, uint64_t a0,
		     const char *target, uint32_t target_len, uint32_t units, uint64_t weight_ns)
{
	t->cw_last_disk = count(stack_id, WP_WAIT_NR_DISK, nr < 0 ? ~0ull : (uint64_t)nr, a0,
				target, target_len, (uint64_t)units * UNIT_FX, weight_ns);
}

void wp_cpuwait_again(struct wp_athread *t, uint32_t units, uint64_t weight_ns)
{
	if (t->cw_last_disk) {
		t->cw_last_disk->units_fx += (uint64_t)units * UNIT_FX;
		t->cw_last_disk->weight_ns += weight_ns;
	}
}

void wp_cpuwait_not_disk(struct wp_athread *t)
{
	t->cw_last_disk = NULL;
}

struct wp_cpuwait_entry *wp_cpuwait_all(void)
{
	return table;
}

uint64_t wp_cpuwait_count(void)
{
	return HASH_COUNT(table);
}

uint64_t wp_cpuwait_bytes(void)
{
	return bytes;
}

uint64_t wp_cpuwait_reads(void)
{
	return reads;
}

uint64_t wp_cpuwait_state_reads(void)
{
	return state_reads;
}

uint64_t wp_cpuwait_read_ns(void)
{
	return read_ns;
}

static struct wp_cpuwait_entry *abandoned; /* reachable for leak checkers; never touched */

void wp_cpuwait_reset(int abandon)
{
	struct wp_cpuwait_entry *e, *tmp;
	if (abandon) {
		abandoned = table;
		table = NULL;
	}
	HASH_ITER(hh, table, e, tmp) {
		HASH_DEL(table, e);
		wp_task_free(e);
	}
	bytes = reads = state_reads = read_ns = 0;
}
