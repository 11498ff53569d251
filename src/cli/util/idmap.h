/* SPDX-License-Identifier: MIT */
/* Ids by key, on uthash (uthash_cfg.h) as every table of the command: a map from 64-bit keys
 * to 32-bit values (addresses, pointers, pairs of ids) and a string interner. Entries are
 * allocated from an arena of their own and freed with their table, since uthash keeps
 * pointers to them; keys are hashed with wp_mix64, handed to uthash as the hash value (its
 * default hash takes longer over 8 bytes and spreads them no better). Not thread-safe. */
#ifndef WP_IDMAP_H
#define WP_IDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "uthash_cfg.h"

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

/* uthash's hash value of a 64-bit key: the high half of its mix. uthash takes a bucket from
 * the value's low bits, and the mix's low half clusters on keys made of two ids (a tree's
 * (parent, name): 10 edges of 6.5M in one of 16M buckets), where its high half does not. */
static inline unsigned wp_hash_u64(uint64_t key)
{
	return (unsigned)(wp_mix64(key) >> 32);
}

struct wp_u64ent {
	uint64_t key;
	uint32_t val;
	UT_hash_handle hh;
};

/* An empty map is `struct wp_u64map m = { 0 }`. */
struct wp_u64map {
	struct wp_u64ent *head; /* the uthash table */
	struct wp_arena ents;   /* where its entries live (72 bytes each: 8-aligned) */
	size_t n;
};

/* 1 and *val set when `key` is in the map, else 0. */
int wp_u64map_get(const struct wp_u64map *m, uint64_t key, uint32_t *val);
/* Finds `key`, or adds it with value `val`: 1 when added, 0 when found, -1 when out of
 * memory. *out: the value the key has now. */
int wp_u64map_get_or_add(struct wp_u64map *m, uint64_t key, uint32_t val, uint32_t *out);
/* Sets key's value. 0, or -1 when out of memory. */
int wp_u64map_put(struct wp_u64map *m, uint64_t key, uint32_t val);
void wp_u64map_free(struct wp_u64map *m);

/* Strings numbered by content: equal strings get the same id, ids count from 0 in the order
 * the strings first came. A string is kept by pointer (it must outlive the interner); a
 * pointer seen before is answered without reading the text. Empty: `= { 0 }`. */
struct wp_interner {
	struct wp_intern_ent *by_ptr;  /* uthash: each pointer seen */
	struct wp_intern_ent *by_text; /* uthash: the first pointer of each text */
	struct wp_arena ents;
	const char **strs; /* id -> the first pointer seen with that content */
	size_t n, cap;
	size_t nptr; /* entries of by_ptr */
};

/* One pointer seen (in by_ptr), and for the first pointer of a text also that text (in
 * by_text). */
struct wp_intern_ent {
	const char *s;
	uint32_t id;
	UT_hash_handle by_ptr, by_text;
};

int64_t wp_intern_new_(struct wp_interner *in, const char *s);

/* The id of the string equal to `s`, or -1 when out of memory. (Inline: the flame graph
 * interns every frame of every stack.) */
static inline int64_t wp_intern(struct wp_interner *in, const char *s)
{
	struct wp_intern_ent *e;
	HASH_FIND_BYHASHVALUE(by_ptr, in->by_ptr, &s, sizeof(s), wp_hash_u64((uintptr_t)s), e);
	return e ? e->id : wp_intern_new_(in, s);
}
/* The string of an id wp_intern returned. */
static inline const char *wp_interned(const struct wp_interner *in, uint32_t id)
{
	return in->strs[id];
}
void wp_interner_free(struct wp_interner *in);

#endif
