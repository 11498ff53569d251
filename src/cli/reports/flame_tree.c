/* SPDX-License-Identifier: MIT */
/* The flame graph's merged tree; see flame_tree.h. */
#include <sys/mman.h>

/* The tree's table and node chunks, hundreds of MB for millions of nodes, are looked up at
 * random: large ones are mappings with transparent huge pages asked for, which spare most
 * of the TLB misses of those lookups. (Before uthash is included: its allocator here.) */
static void *big_alloc(size_t n);
static void big_free(void *p, size_t n);
#define uthash_malloc(n) big_alloc(n)
#define uthash_free(p, n) big_free(p, n)

#include "flame_tree.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "uthash_cfg.h"

#define BIG (2u << 20)

static void *big_alloc(size_t n)
{
	if (n < BIG)
		return malloc(n);
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, n, MADV_HUGEPAGE);
	return p;
}

static void big_free(void *p, size_t n)
{
	if (p && n < BIG)
		free(p);
	else if (p)
		munmap(p, n);
}

/* uthash's hash value of the edge to `name` under `parent` */
static inline unsigned edge_hash(uint32_t parent, uint32_t name)
{
	return wp_hash_u64((uint64_t)parent << 32 | name);
}

/* The bucket uthash looks in first for that hash (a table exists). */
static inline UT_hash_bucket *edge_bucket(const struct wp_ftree *t, unsigned hv)
{
	return &t->edges->hh.tbl->buckets[hv & (t->edges->hh.tbl->num_buckets - 1)];
}

void wp_ftree_free(struct wp_ftree *t)
{
	HASH_CLEAR(hh, t->edges);
	for (size_t i = 0; i < t->nchunks; i++)
		big_free(t->chunks[i], sizeof(struct wp_fnode) << WP_FTREE_CHUNK_BITS);
	free(t->chunks);
	wp_interner_free(&t->strs);
	free(t->names);
	for (size_t i = 0; i < t->nkeys; i++)
		free(t->keys[i]);
	free(t->keys);
	wp_u64map_free(&t->key_of);
}

int wp_ftree_init(struct wp_ftree *t)
{
	memset(t, 0, sizeof(*t));
	if (wp_grow(&t->chunks, &t->chunks_cap, 1, sizeof(*t->chunks)))
		return -ENOMEM;
	t->chunks[0] = big_alloc(sizeof(struct wp_fnode) << WP_FTREE_CHUNK_BITS);
	if (!t->chunks[0])
		return -ENOMEM;
	t->nchunks = 1;
	memset(wp_fnode_at(t, 0), 0, sizeof(struct wp_fnode)); /* the root, "all" */
	t->nnodes = 1;
	return 0;
}

/* The interner's key of name `s` in `state`: `s` itself when running, else "\x1f" STATE
 * NAME, kept in t->keys (interned strings are kept by pointer). NULL when out of memory. */
static const char *state_key(struct wp_ftree *t, const char *s, enum wp_flame_state state)
{
	if (state == WP_FLAME_RUNNING)
		return s;
	/* user-space pointers fit in 61 bits: the state goes in the low 3 */
	uint64_t pk = (uint64_t)(uintptr_t)s << 3 | (uint64_t)state;
	uint32_t at;
	if (wp_u64map_get(&t->key_of, pk, &at))
		return t->keys[at];
	size_t l = strlen(s);
	char *k = malloc(l + 3);
	if (!k || (t->nkeys == t->keys_cap &&
		   wp_grow(&t->keys, &t->keys_cap, t->nkeys + 1, sizeof(*t->keys)))) {
		free(k);
		return NULL;
	}
	k[0] = '\x1f';
	k[1] = (char)('0' + state);
	memcpy(k + 2, s, l + 1);
	if (wp_u64map_get_or_add(&t->key_of, pk, (uint32_t)t->nkeys, &at) < 0) {
		free(k);
		return NULL;
	}
	t->keys[t->nkeys++] = k;
	return k;
}

static int name_id(struct wp_ftree *t, const char *s, enum wp_frame_kind kind,
		   enum wp_flame_state state, uint32_t *out)
{
	int64_t id;
	const char *key;

	if (!s) {
		s = "[unknown]";
		kind = WP_KIND_UNKNOWN;
	}
	if ((unsigned)state >= WP_FLAME__N)
		state = WP_FLAME_RUNNING;
	if (t->nnames == t->names_cap &&
	    wp_grow(&t->names, &t->names_cap, t->nnames + 1, sizeof(*t->names)))
		return -ENOMEM;
	key = state_key(t, s, state);
	if (!key)
		return -ENOMEM;
	id = wp_intern(&t->strs, key);
	if (id < 0)
		return -ENOMEM;
	if ((size_t)id == t->nnames) /* a new name: the kind it first came with is its colour */
		t->names[t->nnames++] = (struct wp_fname){ .str = s, .kind = (uint8_t)kind,
							    .state = (uint8_t)state };
	*out = (uint32_t)id;
	return 0;
}

/* A new node `name` under `parent`, in the table; its index, or -ENOMEM. */
static int64_t child_add(struct wp_ftree *t, uint32_t parent, uint32_t name, unsigned hv)
{
	uint32_t n = (uint32_t)t->nnodes;

	if (n >= (UINT32_MAX >> 1))
		return -ENOMEM;
	if (!(n & ((1u << WP_FTREE_CHUNK_BITS) - 1)) && n >> WP_FTREE_CHUNK_BITS == t->nchunks) {
		if (wp_grow(&t->chunks, &t->chunks_cap, t->nchunks + 1, sizeof(*t->chunks)))
			return -ENOMEM;
		t->chunks[t->nchunks] = big_alloc(sizeof(struct wp_fnode) << WP_FTREE_CHUNK_BITS);
		if (!t->chunks[t->nchunks])
			return -ENOMEM;
		t->nchunks++;
	}
	struct wp_fnode *c = wp_fnode_at(t, n), *p = wp_fnode_at(t, parent);
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->parent = parent;
	c->index = n;
	c->next_sibling = p->first_child;
	p->first_child = n;
	HASH_ADD_BYHASHVALUE(hh, t->edges, name, sizeof(struct wp_fedge_key), hv, c);
	if (!(n & (n - 1))) /* at most one node a bucket, made before uthash would (at 10) */
		WP_HASH_RESERVE(t->edges, hh, 2 * (size_t)n);
	t->nnodes++;
	return n;
}

/* The child of `parent` called `name`, created if new; returns its index or -errno. The
 * parent's first child is looked at before the table: most nodes of a program's tree have
 * one child. A parent without children (every node of a stack's new tail) needs no lookup. */
static int64_t child_get(struct wp_ftree *t, uint32_t parent, uint32_t name, unsigned hv)
{
	uint32_t first = wp_fnode_at(t, parent)->first_child;
	struct wp_fedge_key k = { name, parent };
	struct wp_fnode *c = NULL;

	if (!first)
		return child_add(t, parent, name, hv);
	if (wp_fnode_at(t, first)->name == name)
		return first;
	HASH_FIND_BYHASHVALUE(hh, t->edges, &k, sizeof(k), hv, c);
	if (c)
		return c->index;
	return child_add(t, parent, name, hv);
}

/* Stacks are merged BATCH at a time in lockstep, level by level: the hash slots and nodes
 * of one level are prefetched for all of them before any is looked up, so their cache
 * misses overlap instead of following one another. */
#define BATCH 16

struct lane {
	const struct wp_flame_stack *st;
	uint32_t *path; /* node at each level */
	size_t path_cap;
	uint32_t cur, nid;
	unsigned hv; /* edge_hash(cur, nid) */
	int same; /* the names so far are the previous lane's, pointer for pointer */
};

static int lane_reserve(struct lane *l, int n)
{
	return wp_grow(&l->path, &l->path_cap, (size_t)n, sizeof(*l->path)) ? -ENOMEM : 0;
}

/* The frames of each stack below those it shares with the one before: as many nodes as the
 * tree may get (all of them when the stacks come sorted). */
static size_t new_frames(const struct wp_flame_stack *stacks, size_t nstacks)
{
	size_t n = 0;

	for (size_t s = 0; s < nstacks; s++) {
		const struct wp_flame_stack *p = s ? &stacks[s - 1] : NULL, *st = &stacks[s];
		int i = 0;

		while (p && i < st->nframes && i < p->nframes &&
		       p->frames[i].name == st->frames[i].name)
			i++;
		n += st->nframes > i ? (size_t)(st->nframes - i) : 0;
	}
	return n;
}

/* The table's buckets for the whole tree at once, so that a large table is not doubled (and
 * every node visited) again and again: the nodes made between a 128th and a 64th of the
 * stacks, extrapolated to the rest, at most the frames not shared with the stack before.
 * A tree that stops growing (a program's call tree) asks for few; a tree of unique stacks
 * for all it will get. */
static void foresee(struct wp_ftree *t, size_t s, size_t nstacks)
{
	if (nstacks < 16384 || !t->edges || t->foreseen)
		return;
	if (!t->s1 && s >= nstacks / 128) {
		t->s1 = s;
		t->nodes_at_s1 = t->nnodes;
	} else if (t->s1 && s >= nstacks / 64 && s > t->s1) {
		double rate = (double)(t->nnodes - t->nodes_at_s1) / (double)(s - t->s1);
		double want = (double)t->nnodes + rate * (double)(nstacks - s);
		if (want > (double)t->expect)
			want = (double)t->expect;
		WP_HASH_RESERVE(t->edges, hh, 2 * (size_t)want);
		t->foreseen = 1;
	}
}

int wp_ftree_build(struct wp_ftree *t, const struct wp_flame_stack *stacks, size_t nstacks,
		      int diff)
{
	struct lane lanes[BATCH + 1]; /* lanes[0]: the last stack of the previous batch */
	size_t s = 0;
	int r = 0, k;

	memset(lanes, 0, sizeof(lanes));
	t->expect = new_frames(stacks, nstacks);
	while (s < nstacks && !r) {
		int nb = 0, maxd = 0, i;

		foresee(t, s, nstacks);
		while (nb < BATCH && s < nstacks) {
			const struct wp_flame_stack *st = &stacks[s++];
			struct lane *l = &lanes[nb + 1];

			if (!st->count && !(diff && st->base))
				continue;
			r = lane_reserve(l, st->nframes);
			if (r)
				goto out;
			l->st = st;
			l->cur = 0;
			l->same = lanes[nb].st != NULL;
			if (st->nframes > maxd)
				maxd = st->nframes;
			wp_fnode_at(t, 0)->count += st->count;
			wp_fnode_at(t, 0)->base += diff ? st->base : 0;
			nb++;
		}
		for (i = 0; i < maxd; i++) {
			for (k = 1; k <= nb; k++) {
				struct lane *l = &lanes[k];
				const struct wp_flame_stack *p = lanes[k - 1].st;

				if (i >= l->st->nframes)
					continue;
				if (l->same && (i >= p->nframes ||
						p->frames[i].name != l->st->frames[i].name ||
						p->frames[i].state != l->st->frames[i].state))
					l->same = 0;
				if (l->same)
					continue;
				r = name_id(t, l->st->frames[i].name, l->st->frames[i].kind,
					    l->st->frames[i].state, &l->nid);
				if (r)
					goto out;
				l->hv = edge_hash(l->cur, l->nid);
				if (t->edges)
					__builtin_prefetch(edge_bucket(t, l->hv), 1);
			}
			/* the parent's first child, compared first; then the first node of the
			 * bucket: compared when looking up, its hh_prev written when adding */
			for (k = 1; t->edges && k <= nb; k++) {
				struct lane *l = &lanes[k];
				uint32_t first;
				const char *h;

				if (i >= l->st->nframes || l->same)
					continue;
				first = wp_fnode_at(t, l->cur)->first_child;
				if (first)
					__builtin_prefetch(&wp_fnode_at(t, first)->name);
				h = (const char *)edge_bucket(t, l->hv)->hh_head;
				if (h) {
					__builtin_prefetch(h + offsetof(UT_hash_handle, hh_prev), 1);
					__builtin_prefetch(h + offsetof(struct wp_fnode, name));
				}
			}
			for (k = 1; k <= nb; k++) {
				struct lane *l = &lanes[k];

				if (i >= l->st->nframes)
					continue;
				if (l->same) {
					l->cur = lanes[k - 1].path[i];
				} else {
					int64_t ch = child_get(t, l->cur, l->nid, l->hv);

					if (ch < 0) {
						r = (int)ch;
						goto out;
					}
					l->cur = (uint32_t)ch;
				}
				l->path[i] = l->cur;
				__builtin_prefetch(wp_fnode_at(t, l->cur), 1);
			}
			for (k = 1; k <= nb; k++) {
				struct lane *l = &lanes[k];

				if (i >= l->st->nframes)
					continue;
				wp_fnode_at(t, l->cur)->count += l->st->count;
				wp_fnode_at(t, l->cur)->base += diff ? l->st->base : 0;
			}
		}
		if (nb) { /* the last lane becomes the next batch's lanes[0] */
			struct lane tmp = lanes[0];

			lanes[0] = lanes[nb];
			lanes[nb] = tmp;
		}
	}
out:
	for (k = 0; k <= BATCH; k++)
		free(lanes[k].path);
	return r;
}

static int cmp_name_ids(const void *a, const void *b, void *arg)
{
	const struct wp_fname *names = arg;
	const struct wp_fname *x = &names[*(const uint32_t *)a], *y = &names[*(const uint32_t *)b];
	int c = strcmp(x->str, y->str);

	return c ? c : (x->state > y->state) - (x->state < y->state);
}

int wp_ftree_rank(struct wp_ftree *t)
{
	uint32_t *ids;
	size_t i;

	if (!t->nnames)
		return 0;
	ids = malloc(t->nnames * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (i = 0; i < t->nnames; i++)
		ids[i] = (uint32_t)i;
	qsort_r(ids, t->nnames, sizeof(*ids), cmp_name_ids, t->names);
	for (i = 0; i < t->nnames; i++)
		t->names[ids[i]].rank = (uint32_t)i;
	free(ids);
	return 0;
}
