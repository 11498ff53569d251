/* SPDX-License-Identifier: MIT */
/* A tiny builder of profile files in memory, for the unit tests (test_profile_read.c,
 * test_model.c). Deliberately independent of the agent's writer: it encodes
 * docs/profile-format.md directly. Read the result with wp_profile_parse(b.d, b.len, ...). */
#ifndef WP_TEST_PROFILE_BUILD_H
#define WP_TEST_PROFILE_BUILD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/format.h"

struct buf {
	uint8_t *d;
	size_t len, cap;
	/* where each record starts, and its type, for the truncation test */
	size_t rec_off[4096];
	uint32_t rec_type[4096];
	size_t nrec;
};

static inline void put(struct buf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		b->d = realloc(b->d, cap);
		if (!b->d) {
			perror("realloc");
			exit(2);
		}
		b->cap = cap;
	}
	memcpy(b->d + b->len, p, n);
	b->len += n;
}

static inline void put_u32(struct buf *b, uint32_t v)
{
	uint8_t x[4];
	for (int i = 0; i < 4; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	put(b, x, 4);
}

static inline void put_u64(struct buf *b, uint64_t v)
{
	uint8_t x[8];
	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	put(b, x, 8);
}

static inline void put_varint(struct buf *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		if (v)
			c |= 0x80;
		put(b, &c, 1);
	} while (v);
}

static inline void set_u32(struct buf *b, size_t at, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b->d[at + i] = (uint8_t)(v >> (8 * i));
}

static inline void set_u64(struct buf *b, size_t at, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b->d[at + i] = (uint8_t)(v >> (8 * i));
}

static inline void header(struct buf *b, uint32_t version)
{
	memset(b, 0, sizeof *b);
	put(b, WP_MAGIC, WP_MAGIC_LEN);
	put_u32(b, version);
	put_u32(b, WP_HEADER_SIZE);
}

/* Starts a record; returns where its header is, for rec_end. */
static inline size_t rec_begin(struct buf *b, uint32_t type)
{
	size_t at = b->len;
	if (b->nrec < 4096) {
		b->rec_off[b->nrec] = at;
		b->rec_type[b->nrec] = type;
		b->nrec++;
	}
	put_u32(b, type);
	put_u32(b, 0);
	put_u64(b, 0);
	return at;
}

static inline void rec_end(struct buf *b, size_t at)
{
	set_u64(b, at + 8, b->len - at - WP_RECORD_HEADER_SIZE);
}

static inline void rec_meta(struct buf *b, const char *text)
{
	size_t r = rec_begin(b, WP_REC_META);
	put(b, text, strlen(text));
	rec_end(b, r);
}

static inline void rec_module(struct buf *b, uint32_t id, uint32_t flags, uint64_t start, uint64_t end,
		       uint64_t off, const uint8_t *bid, uint32_t bid_len, const char *path)
{
	size_t r = rec_begin(b, WP_REC_MODULE);
	put_u32(b, id);
	put_u32(b, flags);
	put_u64(b, start);
	put_u64(b, end);
	put_u64(b, off);
	put_u32(b, bid_len);
	put_u32(b, (uint32_t)strlen(path));
	put(b, bid, bid_len);
	put(b, path, strlen(path));
	rec_end(b, r);
}

static inline void rec_thread(struct buf *b, uint32_t tid, uint32_t flags, uint64_t samples,
		       uint64_t running, uint64_t waiting, uint64_t first, uint64_t last,
		       const char *name)
{
	size_t r = rec_begin(b, WP_REC_THREAD);
	put_u32(b, tid);
	put_u32(b, flags);
	put_u64(b, samples);
	put_u64(b, running);
	put_u64(b, waiting);
	put_u64(b, first);
	put_u64(b, last);
	put_u32(b, (uint32_t)strlen(name));
	put(b, name, strlen(name));
	rec_end(b, r);
}

/* A THREAD record with the fields appended after its name: the time it ran unseen and why. */
static inline void rec_thread_unseen(struct buf *b, uint32_t tid, uint64_t samples,
				     const char *name, uint64_t unseen_ns, const char *why)
{
	size_t r = rec_begin(b, WP_REC_THREAD);
	put_u32(b, tid);
	put_u32(b, 0);
	put_u64(b, samples);
	put_u64(b, samples);
	put_u64(b, 0);
	put_u64(b, 0);
	put_u64(b, 0);
	put_u32(b, (uint32_t)strlen(name));
	put(b, name, strlen(name));
	put_u64(b, unseen_ns);
	put_u32(b, (uint32_t)strlen(why));
	put(b, why, strlen(why));
	rec_end(b, r);
}

static inline void rec_stack(struct buf *b, uint32_t id, uint32_t tid, uint32_t flags, uint64_t count,
		      uint64_t weight, const uint64_t *pcs, uint32_t n)
{
	size_t r = rec_begin(b, WP_REC_STACK);
	put_u32(b, id);
	put_u32(b, tid);
	put_u32(b, flags);
	put_u32(b, n);
	put_u64(b, count);
	put_u64(b, weight);
	for (uint32_t i = 0; i < n; i++)
		put_u64(b, pcs[i]);
	rec_end(b, r);
}

/* entries: pairs of (absolute t_us, stack id) */
static inline void rec_timeline(struct buf *b, uint32_t tid, const uint64_t (*e)[2], size_t n)
{
	size_t r = rec_begin(b, WP_REC_TIMELINE);
	put_u32(b, tid);
	put_u32(b, 0);
	put_u64(b, n);
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		put_varint(b, e[i][0] - prev);
		put_varint(b, e[i][1]);
		prev = e[i][0];
	}
	rec_end(b, r);
}

static inline void rec_wait(struct buf *b, uint32_t stack_id, uint32_t nr, uint64_t a0,
			    uint64_t aux, uint64_t count, const char *target, uint32_t target_len,
			    size_t put_len)
{
	size_t r = rec_begin(b, WP_REC_WAIT);
	put_u32(b, stack_id);
	put_u32(b, nr);
	put_u64(b, a0);
	put_u64(b, 0);
	put_u64(b, 0);
	put_u64(b, aux);
	put_u64(b, count);
	put_u64(b, count * 1000);
	put_u32(b, target_len);
	put(b, target, put_len); /* target_len says, put_len is: they differ in broken files */
	rec_end(b, r);
}

/* A futex WAIT record (a2, the futex's third argument: 2 for a contended mutex) with the
 * fields appended after the first version: holder_stack, then cond_mutex when `cond_mutex`
 * is given (NULL: a record of the version before it). */
static inline void rec_wait_futex(struct buf *b, uint32_t stack_id, uint64_t a0, uint64_t a2,
				  uint64_t aux, uint64_t count, uint32_t holder_stack,
				  const uint64_t *cond_mutex)
{
	size_t r = rec_begin(b, WP_REC_WAIT);
	put_u32(b, stack_id);
	put_u32(b, 202 /* futex */);
	put_u64(b, a0);
	put_u64(b, 128);
	put_u64(b, a2);
	put_u64(b, aux);
	put_u64(b, count);
	put_u64(b, count * 1000);
	put_u32(b, 0);
	put_u32(b, holder_stack);
	if (cond_mutex)
		put_u64(b, *cond_mutex);
	rec_end(b, r);
}

/* A contended mutex's WAIT record with holder_stack: the holder's stack id after the target. */
static inline void rec_wait_holder(struct buf *b, uint32_t stack_id, uint64_t a0, uint64_t aux,
				   uint64_t count, uint32_t holder_stack)
{
	rec_wait_futex(b, stack_id, a0, 2, aux, count, holder_stack, NULL);
}

/* A condition's WAIT record with holder_stack and cond_mutex. */
static inline void rec_wait_cond(struct buf *b, uint32_t stack_id, uint64_t a0, uint64_t count,
				 uint64_t cond_mutex)
{
	rec_wait_futex(b, stack_id, a0, 0, 0, count, WP_WAIT_NO_HOLDER_STACK, &cond_mutex);
}

/* A LAST record (a thread's last sample): blocked in futex on a0 (WP_LAST_IN_CALL) when nr is
 * 202, owned by `aux`; `extra` more bytes after the fixed fields (a later version's). */
static inline void rec_last(struct buf *b, uint32_t tid, uint32_t stack_id, uint32_t nr,
			    uint64_t a0, uint64_t a2, uint64_t aux, size_t extra)
{
	size_t r = rec_begin(b, WP_REC_LAST);
	put_u32(b, tid);
	put_u32(b, nr ? WP_LAST_IN_CALL | WP_LAST_WAITING : 0);
	put_u32(b, stack_id);
	put_u32(b, nr);
	put_u64(b, a0);
	put_u64(b, 128);
	put_u64(b, a2);
	put_u64(b, aux);
	put_u64(b, 0);
	put_u64(b, 5000);
	for (size_t i = 0; i < extra; i++)
		put(b, "", 1);
	rec_end(b, r);
}

static inline void rec_end_marker(struct buf *b)
{
	size_t r = rec_begin(b, WP_REC_END);
	rec_end(b, r);
}

static inline void buf_free(struct buf *b)
{
	free(b->d);
	b->d = NULL;
	b->len = b->cap = 0;
}

#endif
