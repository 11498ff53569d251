/* SPDX-License-Identifier: MIT */
/* Hash tables the CLI shares: a map from 64-bit keys to 32-bit values (addresses, pointers,
 * pairs of ids), open addressing with linear probing over a power-of-two table kept under 2/3
 * full, and a string interner made of two of them; large tables are anonymous mappings with
 * transparent huge pages asked for, since lookups touch them at random. Not thread-safe. */
#ifndef WP_HASHMAP_H
#define WP_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

/* A 64-bit mix (the MurmurHash3 finalizer): every input bit affects every output bit. */
static inline uint64_t wp_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* 12 bytes, 4-aligned: the key in two halves and the value plus one (0: an empty slot). */
struct wp_u64map_slot {
	uint32_t key_lo, key_hi;
	uint32_t val1;
};

/* An empty map is `struct wp_u64map m = { 0 }`. Values are below UINT32_MAX. */
struct wp_u64map {
	struct wp_u64map_slot *slots;
	unsigned bits; /* 2^bits slots; 0: no table yet */
	size_t n;
};

/* The slot holding `key`, or the empty slot where it would go, in a map with a table. The
 * first slot looked at is the hash's top bits, so a key's place in a table twice as large
 * follows from its hash alone. (Inline, as the lookups below: they are the hot path of the
 * flame graph's tree and the symbolizer's caches.) */
static inline struct wp_u64map_slot *wp_u64map_find(const struct wp_u64map *m, uint64_t key)
{
	size_t mask = ((size_t)1 << m->bits) - 1, i = (size_t)(wp_mix64(key) >> (64 - m->bits));
	uint32_t lo = (uint32_t)key, hi = (uint32_t)(key >> 32);
	while (m->slots[i].val1 && (m->slots[i].key_lo != lo || m->slots[i].key_hi != hi))
		i = (i + 1) & mask;
	return &m->slots[i];
}

/* 1 and *val set when `key` is in the map, else 0. */
static inline int wp_u64map_get(const struct wp_u64map *m, uint64_t key, uint32_t *val)
{
	const struct wp_u64map_slot *s = m->bits ? wp_u64map_find(m, key) : NULL;
	if (!s || !s->val1)
		return 0;
	*val = s->val1 - 1;
	return 1;
}

int wp_u64map_add_(struct wp_u64map *m, uint64_t key, uint32_t val, uint32_t *out);

/* Finds `key`, or adds it with value `val`: 1 when added, 0 when found, -1 when out of
 * memory (or val is UINT32_MAX). *out: the value the key has now. */
static inline int wp_u64map_get_or_add(struct wp_u64map *m, uint64_t key, uint32_t val,
				       uint32_t *out)
{
	/* under 2/3 full after adding one: about 5 slots looked at to add a key (8.5 at 3/4) */
	int room = m->bits && (m->n + 1) * 3 < ((size_t)2 << m->bits);
	struct wp_u64map_slot *s = m->bits ? wp_u64map_find(m, key) : NULL;
	if (s && s->val1) {
		*out = s->val1 - 1;
		return 0;
	}
	if (!room || val == UINT32_MAX)
		return wp_u64map_add_(m, key, val, out);
	*s = (struct wp_u64map_slot){ .key_lo = (uint32_t)key, .key_hi = (uint32_t)(key >> 32),
				      .val1 = val + 1 };
	m->n++;
	*out = val;
	return 1;
}

/* Sets key's value. 0, or -1 when out of memory (or val is UINT32_MAX). */
int wp_u64map_put(struct wp_u64map *m, uint64_t key, uint32_t val);

/* Asks the CPU for the cache line where `key` is looked up first, so that the misses of
 * several lookups overlap. */
static inline void wp_u64map_prefetch(const struct wp_u64map *m, uint64_t key)
{
	if (m->bits)
		__builtin_prefetch(&m->slots[wp_mix64(key) >> (64 - m->bits)]);
}

void wp_u64map_free(struct wp_u64map *m);

/* Strings numbered by content: equal strings get the same id, ids count from 0 in the order
 * the strings first came. A string is kept by pointer (it must outlive the interner); a
 * pointer seen before is answered without reading the text. Empty: `= { 0 }`. */
struct wp_interner {
	struct wp_u64map by_ptr;  /* pointer -> id */
	struct wp_u64map by_text; /* hash of the text -> id */
	const char **strs; /* id -> the first pointer seen with that content */
	size_t n, cap;
};

int64_t wp_intern_text_(struct wp_interner *in, const char *s);

/* The id of the string equal to `s`, or -1 when out of memory. */
static inline int64_t wp_intern(struct wp_interner *in, const char *s)
{
	uint32_t id;
	return wp_u64map_get(&in->by_ptr, (uint64_t)(uintptr_t)s, &id) ? id
									 : wp_intern_text_(in, s);
}
/* The string of an id wp_intern returned. */
static inline const char *wp_interned(const struct wp_interner *in, uint32_t id)
{
	return in->strs[id];
}
void wp_interner_free(struct wp_interner *in);

#endif
