/* Hash tables the CLI shares: a map from 64-bit keys to 32-bit values (addresses, pointers,
 * pairs of ids), open addressing with linear probing over a power-of-two table kept under 3/4
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

struct wp_u64map_slot {
	uint64_t key;
	uint32_t val;
	uint32_t full;
};

/* An empty map is `struct wp_u64map m = { 0 }`. */
struct wp_u64map {
	struct wp_u64map_slot *slots;
	unsigned bits; /* 2^bits slots; 0: no table yet */
	size_t n;
};

/* 1 and *val set when `key` is in the map, else 0. */
int wp_u64map_get(const struct wp_u64map *m, uint64_t key, uint32_t *val);
/* The value of `key`, added with value 0 and *added = 1 when missing (else *added = 0); NULL
 * when the table cannot grow. The pointer is valid until the next insertion. */
uint32_t *wp_u64map_slot(struct wp_u64map *m, uint64_t key, int *added);
/* Sets key's value. 0, or -1 when out of memory. */
int wp_u64map_put(struct wp_u64map *m, uint64_t key, uint32_t val);
/* Asks the CPU for the cache line where `key` is looked up first, so that the misses of
 * several lookups overlap. */
void wp_u64map_prefetch(const struct wp_u64map *m, uint64_t key);
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

/* The id of the string equal to `s`, or -1 when out of memory. */
int64_t wp_intern(struct wp_interner *in, const char *s);
/* The string of an id wp_intern returned. */
static inline const char *wp_interned(const struct wp_interner *in, uint32_t id)
{
	return in->strs[id];
}
void wp_interner_free(struct wp_interner *in);

#endif
