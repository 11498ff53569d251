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

/* The first slot to probe: the hash's top bits, so a slot's place in a table twice as large
 * follows from its hash alone. */
static inline size_t home(uint64_t hash, unsigned bits)
{
	return (size_t)(hash >> (64 - bits));
}

/* Whether one more entry keeps a table of 2^bits slots under 3/4 full. */
static inline int has_room(size_t n, unsigned bits)
{
	return bits && (n + 1) * 4 < ((size_t)3 << bits);
}

/* ---- u64 -> u32 ---- */

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
		if (!m->slots[i].full)
			continue;
		size_t j = home(wp_mix64(m->slots[i].key), nbits);
		while (ns[j].full)
			j = (j + 1) & nmask;
		ns[j] = m->slots[i];
	}
	table_free(m->slots, m->bits, sizeof(*m->slots));
	m->slots = ns;
	m->bits = nbits;
	return 0;
}

/* The slot holding `key`, or the empty slot where it would go. */
static struct wp_u64map_slot *map_find(const struct wp_u64map *m, uint64_t key)
{
	size_t mask = ((size_t)1 << m->bits) - 1, i = home(wp_mix64(key), m->bits);
	while (m->slots[i].full && m->slots[i].key != key)
		i = (i + 1) & mask;
	return &m->slots[i];
}

int wp_u64map_get(const struct wp_u64map *m, uint64_t key, uint32_t *val)
{
	if (!m->bits)
		return 0;
	const struct wp_u64map_slot *s = map_find(m, key);
	if (!s->full)
		return 0;
	*val = s->val;
	return 1;
}

uint32_t *wp_u64map_slot(struct wp_u64map *m, uint64_t key, int *added)
{
	struct wp_u64map_slot *s = m->bits ? map_find(m, key) : NULL;
	*added = 0;
	if (s && s->full)
		return &s->val;
	if (!has_room(m->n, m->bits)) {
		if (map_grow(m))
			return NULL;
		s = map_find(m, key);
	}
	*s = (struct wp_u64map_slot){ .key = key, .full = 1 };
	m->n++;
	*added = 1;
	return &s->val;
}

int wp_u64map_put(struct wp_u64map *m, uint64_t key, uint32_t val)
{
	int added;
	uint32_t *v = wp_u64map_slot(m, key, &added);
	if (!v)
		return -1;
	*v = val;
	return 0;
}

void wp_u64map_prefetch(const struct wp_u64map *m, uint64_t key)
{
	if (m->bits)
		__builtin_prefetch(&m->slots[home(wp_mix64(key), m->bits)]);
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
		int added;
		uint32_t *id = wp_u64map_slot(&in->by_text, k, &added);
		if (!id)
			return -1;
		if (added) {
			*id = (uint32_t)in->n;
			in->strs[in->n] = s;
			return (int64_t)in->n++;
		}
		if (!strcmp(in->strs[*id], s))
			return *id;
	}
}

int64_t wp_intern(struct wp_interner *in, const char *s)
{
	uint32_t id;
	if (wp_u64map_get(&in->by_ptr, (uint64_t)(uintptr_t)s, &id))
		return id;
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
