/* SPDX-License-Identifier: MIT */
#include "hashmap.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "alloc.h"

#define MIN_BITS 10
#define BIG (1u << 20) /* tables from this size on are mappings, zeroed lazily */

/* A zeroed table of 2^bits slots of `size` bytes. */
static void *table_alloc(unsigned bits, size_t size)
{
	size_t bytes = ((size_t)1 << bits) * size;
	if (bytes < BIG)
		return calloc((size_t)1 << bits, size);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (bytes >= 4 * BIG)
		madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

static void table_free(void *p, unsigned bits, size_t size)
{
	size_t bytes = ((size_t)1 << bits) * size;
	if (!p)
		return;
	if (bytes < BIG)
		free(p);
	else
		munmap(p, bytes);
}

/* The first slot to probe (see wp_u64map_find). */
static inline size_t home(uint64_t hash, unsigned bits)
{
	return (size_t)(hash >> (64 - bits));
}

static inline uint64_t key_of(const struct wp_u64map_slot *s)
{
	return (uint64_t)s->key_hi << 32 | s->key_lo;
}

static int map_grow(struct wp_u64map *m)
{
	unsigned nbits = m->bits ? m->bits + 1 : MIN_BITS;
	if (nbits >= 8 * sizeof(size_t) - 5)
		return -1;
	struct wp_u64map_slot *ns = table_alloc(nbits, sizeof(*ns));
	if (!ns)
		return -1;
	size_t nmask = ((size_t)1 << nbits) - 1;
	for (size_t i = 0; m->bits && i < ((size_t)1 << m->bits); i++) {
		if (!m->slots[i].val1)
			continue;
		size_t j = home(wp_mix64(key_of(&m->slots[i])), nbits);
		while (ns[j].val1)
			j = (j + 1) & nmask;
		ns[j] = m->slots[i];
	}
	table_free(m->slots, m->bits, sizeof(*m->slots));
	m->slots = ns;
	m->bits = nbits;
	return 0;
}

/* wp_u64map_get_or_add when the key is not there and the table is full (or absent): grows
 * it, then adds the key. */
int wp_u64map_add_(struct wp_u64map *m, uint64_t key, uint32_t val, uint32_t *out)
{
	if (val == UINT32_MAX || map_grow(m))
		return -1;
	return wp_u64map_get_or_add(m, key, val, out);
}

int wp_u64map_put(struct wp_u64map *m, uint64_t key, uint32_t val)
{
	uint32_t old;
	int r = wp_u64map_get_or_add(m, key, val, &old);
	if (r == 0)
		wp_u64map_find(m, key)->val1 = val + 1;
	return r < 0 ? -1 : 0;
}

void wp_u64map_free(struct wp_u64map *m)
{
	table_free(m->slots, m->bits, sizeof(*m->slots));
	memset(m, 0, sizeof(*m));
}

/* ---- strings ---- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The id of the string equal to `s`, added when new. The text table is a u64 map keyed by
 * the text's hash; two texts with the same hash (rare) move on to a key derived from it. */
static int64_t by_text(struct wp_interner *in, const char *s)
{
	if (in->n >= UINT32_MAX || wp_grow(&in->strs, &in->cap, in->n + 1, sizeof(*in->strs)))
		return -1;
	for (uint64_t k = hash_str(s);; k = wp_mix64(k + 1)) {
		uint32_t id;
		int r = wp_u64map_get_or_add(&in->by_text, k, (uint32_t)in->n, &id);
		if (r < 0)
			return -1;
		if (r > 0) {
			in->strs[in->n] = s;
			return (int64_t)in->n++;
		}
		if (!strcmp(in->strs[id], s))
			return id;
	}
}

/* wp_intern once the pointer was not found. */
int64_t wp_intern_text_(struct wp_interner *in, const char *s)
{
	int64_t r = by_text(in, s);
	if (r >= 0 && wp_u64map_put(&in->by_ptr, (uint64_t)(uintptr_t)s, (uint32_t)r))
		return -1;
	return r;
}

void wp_interner_free(struct wp_interner *in)
{
	wp_u64map_free(&in->by_ptr);
	wp_u64map_free(&in->by_text);
	free(in->strs);
	memset(in, 0, sizeof(*in));
}
