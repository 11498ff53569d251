/* SPDX-License-Identifier: MIT */
/* The flame graph's merged tree (flame.c lays it out and draws it): stacks merged into a
 * prefix tree, each frame's name interned (util/idmap.h), each node found under its parent
 * through one uthash table of every node keyed by (name, parent). */
#ifndef WP_FLAME_TREE_H
#define WP_FLAME_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "flame.h"
#include "idmap.h"

struct wp_fname {
	const char *str;
	uint32_t rank; /* position in strcmp order (then by state) */
	uint8_t kind;
	uint8_t state; /* enum wp_flame_state */
};

/* A node is its own entry in the table of edges, keyed by (name, parent): one table for the
 * tree rather than one per node (whose 32 first buckets would cost 512 bytes a node). The
 * handle comes first and the key right after it: a lookup walking a bucket's chain reads
 * bytes 32 to 63 of each node (next in chain, key pointer, hash value, key), one cache line
 * of a chunk at any index, since nodes are 96 bytes. */
struct wp_fnode {
	UT_hash_handle hh;
	uint32_t name, parent; /* the key */
	uint32_t first_child, next_sibling;
	uint32_t index; /* its own, for a node found in the table */
	uint64_t count, base;
};

_Static_assert(sizeof(struct wp_fnode) == 96, "a node's bytes 32 to 63 share a cache line");

struct wp_fedge_key {
	uint32_t name, parent;
};

/* Nodes live in chunks of 2^WP_FTREE_CHUNK_BITS (6 MiB: mapped, so page-aligned), never
 * moved, since uthash points to them. */
#define WP_FTREE_CHUNK_BITS 16

struct wp_ftree {
	struct wp_fnode **chunks;
	size_t nchunks, chunks_cap;
	size_t nnodes;
	size_t expect;       /* the nodes the stacks may make at most */
	size_t s1, nodes_at_s1; /* foresee: the stacks and nodes after a 128th of the stacks */
	int foreseen;
	struct wp_fnode *edges;    /* uthash of every node but the root, by (name, parent) */
	struct wp_interner strs;   /* frame name -> name id (a name in a state other than
				    * RUNNING is interned as "\x1f" STATE NAME: another id) */
	char **keys;               /* those composed names, freed with the tree */
	size_t nkeys, keys_cap;
	struct wp_u64map key_of;   /* (name pointer << 3 | state) -> index in keys */
	struct wp_fname *names;    /* by name id */
	size_t nnames, names_cap;
};

static inline struct wp_fnode *wp_fnode_at(const struct wp_ftree *t, uint32_t i)
{
	return &t->chunks[i >> WP_FTREE_CHUNK_BITS][i & ((1u << WP_FTREE_CHUNK_BITS) - 1)];
}

/* An empty tree (the root, "all", is node 0): 0 or -ENOMEM. */
int wp_ftree_init(struct wp_ftree *t);
/* Merges the stacks in (with their `base` counts when `diff`): 0 or -errno. */
int wp_ftree_build(struct wp_ftree *t, const struct wp_flame_stack *stacks, size_t nstacks,
		   int diff);
/* Sets each name's rank (strcmp order, then state): 0 or -ENOMEM. */
int wp_ftree_rank(struct wp_ftree *t);
void wp_ftree_free(struct wp_ftree *t);

#endif
