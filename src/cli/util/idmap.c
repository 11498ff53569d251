/* SPDX-License-Identifier: MIT */
#include "idmap.h"

#include <stdlib.h>
#include <string.h>

/* uthash's hash value of a 64-bit key (see wp_hash_u64). */
static unsigned hash_u64(uint64_t key)
{
	return wp_hash_u64(key);
}

static struct wp_u64ent *u64_find(const struct wp_u64map *m, uint64_t key)
{
	struct wp_u64ent *e;
	HASH_FIND_BYHASHVALUE(hh, m->head, &key, sizeof(key), hash_u64(key), e);
	return e;
}

int wp_u64map_get(const struct wp_u64map *m, uint64_t key, uint32_t *val)
{
	const struct wp_u64ent *e = u64_find(m, key);
	if (!e)
		return 0;
	*val = e->val;
	return 1;
}

int wp_u64map_get_or_add(struct wp_u64map *m, uint64_t key, uint32_t val, uint32_t *out)
{
	struct wp_u64ent *e = u64_find(m, key);
	if (e) {
		*out = e->val;
		return 0;
	}
	/* the arena holds only entries, whose size is a multiple of 8: each stays aligned */
	_Static_assert(sizeof(*e) % 8 == 0, "entries keep the arena 8-aligned");
	e = (struct wp_u64ent *)(void *)wp_arena_alloc(&m->ents, sizeof(*e));
	if (!e)
		return -1;
	memset(e, 0, sizeof(*e));
	e->key = key;
	e->val = val;
	HASH_ADD_BYHASHVALUE(hh, m->head, key, sizeof(e->key), hash_u64(key), e);
	m->n++;
	if (!(m->n & (m->n - 1)))
		WP_HASH_RESERVE(m->head, hh, 2 * m->n);
	*out = val;
	return 1;
}

int wp_u64map_put(struct wp_u64map *m, uint64_t key, uint32_t val)
{
	struct wp_u64ent *e = u64_find(m, key);
	uint32_t old;
	if (e) {
		e->val = val;
		return 0;
	}
	return wp_u64map_get_or_add(m, key, val, &old) < 0 ? -1 : 0;
}

void wp_u64map_free(struct wp_u64map *m)
{
	HASH_CLEAR(hh, m->head);
	wp_arena_free(&m->ents);
	memset(m, 0, sizeof(*m));
}

/* ---- strings ---- */

static struct wp_intern_ent *ent_new(struct wp_interner *in, const char *s, uint32_t id)
{
	_Static_assert(sizeof(struct wp_intern_ent) % 8 == 0, "entries keep the arena 8-aligned");
	struct wp_intern_ent *e = (void *)wp_arena_alloc(&in->ents, sizeof(*e));
	if (e) {
		memset(e, 0, sizeof(*e));
		e->s = s;
		e->id = id;
	}
	return e;
}

/* wp_intern of a pointer not seen before */
int64_t wp_intern_new_(struct wp_interner *in, const char *s)
{
	struct wp_intern_ent *e;
	uintptr_t p = (uintptr_t)s;
	size_t len = strlen(s);
	HASH_FIND(by_text, in->by_text, s, len, e);
	uint32_t id = e ? e->id : (uint32_t)in->n;
	if (!e && (in->n >= UINT32_MAX ||
		   wp_grow(&in->strs, &in->cap, in->n + 1, sizeof(*in->strs))))
		return -1;
	e = ent_new(in, s, id);
	if (!e)
		return -1;
	if (id == in->n) { /* a new text */
		HASH_ADD_KEYPTR(by_text, in->by_text, s, len, e);
		in->strs[in->n++] = s;
		if (!(in->n & (in->n - 1)))
			WP_HASH_RESERVE(in->by_text, by_text, 2 * in->n);
	}
	HASH_ADD_BYHASHVALUE(by_ptr, in->by_ptr, s, sizeof(s), hash_u64(p), e);
	in->nptr++;
	if (!(in->nptr & (in->nptr - 1)))
		WP_HASH_RESERVE(in->by_ptr, by_ptr, 2 * in->nptr);
	return id;
}

void wp_interner_free(struct wp_interner *in)
{
	HASH_CLEAR(by_ptr, in->by_ptr);
	HASH_CLEAR(by_text, in->by_text);
	wp_arena_free(&in->ents);
	free(in->strs);
	memset(in, 0, sizeof(*in));
}
