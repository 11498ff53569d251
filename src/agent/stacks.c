/* SPDX-License-Identifier: MIT */
#include "stacks.h"

#include <stdlib.h>
#include <string.h>

#include "../common/format.h"

static struct wp_stack_entry *table;
static uint32_t next_id;
static uint64_t bytes, timeline_bytes, lost;
static int timeline_truncated;

static void put_varint(uint8_t *p, size_t *len, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;
		v >>= 7;
		p[(*len)++] = b | (v ? 0x80 : 0);
	} while (v);
}

static void timeline_add(struct wp_athread *t, uint32_t id, uint64_t rel_us)
{
	if (timeline_truncated)
		return;
	if (t->tl_cap - t->tl_len < 20) {
		size_t n = t->tl_cap ? t->tl_cap * 2 : 256;
		if (timeline_bytes + (n - t->tl_cap) > WP_TIMELINE_CAP) {
			timeline_truncated = 1;
			return;
		}
		uint8_t *p = wp_task_realloc(t->tl, n);
		if (!p) {
			timeline_truncated = 1;
			return;
		}
		timeline_bytes += n - t->tl_cap;
		t->tl = p;
		t->tl_cap = n;
	}
	/* Samples of a thread arrive in time order; clamp anyway so the delta is unsigned. */
	uint64_t d = rel_us >= t->tl_last_us ? rel_us - t->tl_last_us : 0;
	put_varint(t->tl, &t->tl_len, d);
	put_varint(t->tl, &t->tl_len, id);
	t->tl_last_us += d;
	t->tl_count++;
}

static void count(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
		  uint64_t weight_ns, uint64_t rel_us)
{
	e->count += units;
	e->weight_ns += weight_ns;
	t->samples += units;
	if (e->flags & WP_STACK_WAITING)
		t->waiting += units;
	else
		t->running += units;
	t->last_stack = e;
	timeline_add(t, e->id, rel_us);
}

struct wp_stack_entry *wp_stacks_intern(struct wp_athread *t, const uint64_t *pcs, uint32_t n,
					uint32_t flags)
{
	struct {
		uint32_t tid, flags, nframes, pad;
		uint64_t pcs[WP_AGENT_MAX_FRAMES];
	} key;
	if (n > WP_AGENT_MAX_FRAMES)
		n = WP_AGENT_MAX_FRAMES;
	key.tid = (uint32_t)t->tid;
	key.flags = flags;
	key.nframes = n;
	key.pad = 0;
	memcpy(key.pcs, pcs, n * sizeof(*pcs));
	size_t keylen = 16 + n * sizeof(uint64_t);

	struct wp_stack_entry *e;
	HASH_FIND(hh, table, &key, keylen, e);
	if (!e) {
		e = wp_task_malloc(sizeof(*e) + n * sizeof(uint64_t));
		if (!e) {
			lost++;
			return NULL;
		}
		memset(e, 0, sizeof(*e));
		memcpy(&e->tid, &key, keylen);
		e->id = next_id++;
		HASH_ADD_KEYPTR(hh, table, &e->tid, keylen, e);
		bytes += sizeof(*e) + n * sizeof(uint64_t) + sizeof(UT_hash_handle);
	}
	return e;
}

struct wp_stack_entry *wp_stacks_add(struct wp_athread *t, const uint64_t *pcs, uint32_t n,
				     uint32_t flags, uint32_t units, uint64_t weight_ns,
				     uint64_t rel_us)
{
	struct wp_stack_entry *e = wp_stacks_intern(t, pcs, n, flags);
	if (e)
		count(t, e, units, weight_ns, rel_us);
	return e;
}

void wp_stacks_again(struct wp_athread *t, struct wp_stack_entry *e, uint32_t units,
		     uint64_t weight_ns, uint64_t rel_us)
{
	count(t, e, units, weight_ns, rel_us);
}

void wp_stacks_move(struct wp_athread *t, struct wp_stack_entry *from, struct wp_stack_entry *to,
		    uint32_t units, uint64_t weight_ns)
{
	units = units < from->count ? units : (uint32_t)from->count;
	weight_ns = weight_ns < from->weight_ns ? weight_ns : from->weight_ns;
	from->count -= units;
	from->weight_ns -= weight_ns;
	to->count += units;
	to->weight_ns += weight_ns;
	uint64_t *was = from->flags & WP_STACK_WAITING ? &t->waiting : &t->running;
	*was -= units < *was ? units : *was;
	if (to->flags & WP_STACK_WAITING)
		t->waiting += units;
	else
		t->running += units;
}

struct wp_stack_entry *wp_stacks_all(void)
{
	return table;
}

uint64_t wp_stacks_count(void)
{
	return HASH_COUNT(table);
}

uint64_t wp_stacks_bytes(void)
{
	return bytes + timeline_bytes;
}

int wp_stacks_timeline_truncated(void)
{
	return timeline_truncated;
}

/* A fork child's view of its parent's table: kept only so that leak checkers see it as
 * reachable (the pages are the parent's copies, never touched). */
static struct wp_stack_entry *abandoned;

void wp_stacks_reset(int abandon)
{
	struct wp_stack_entry *e, *tmp;
	if (abandon) {
		abandoned = table;
		table = NULL;
	}
	HASH_ITER(hh, table, e, tmp) {
		HASH_DEL(table, e);
		wp_task_free(e);
	}
	next_id = 0;
	bytes = timeline_bytes = lost = 0;
	timeline_truncated = 0;
}
