/* SPDX-License-Identifier: MIT */
/* Small caches keyed by inode (pipes: wait_fds.c; sockets: wait_net.c). Each cache is a fixed
 * array whose entries begin with struct wp_ino_slot. An inode lives in one of `ways`
 * neighbouring slots from its hash; when none holds it, the one to take is an empty slot, else
 * the one asked for least recently. No allocation: the sampler's caches stay bounded. */
#ifndef WP_INO_SLOTS_H
#define WP_INO_SLOTS_H

#include <stddef.h>
#include <stdint.h>

struct wp_ino_slot {
	uint64_t ino;	  /* 0: empty */
	uint64_t used_ns; /* when a description last asked for it */
};

/* The entry holding `ino` in slots[0..n) (each `size` bytes), or NULL; *victim: the entry it
 * would take. */
static inline void *wp_ino_slot_find(void *slots, size_t size, size_t n, int ways, uint64_t ino,
				     void **victim)
{
	/* hashed: objects made together have neighbouring inodes, whose sets of slots would
	 * overlap and push each other out */
	uint64_t h = (ino * 0x9e3779b97f4a7c15ull) >> 32;
	struct wp_ino_slot *v = NULL;
	for (int w = 0; w < ways; w++) {
		struct wp_ino_slot *s = (void *)((char *)slots + ((h + (uint64_t)w) % n) * size);
		if (s->ino == ino) {
			*victim = v;
			return s;
		}
		if (!v || (v->ino && (!s->ino || s->used_ns < v->used_ns)))
			v = s;
	}
	*victim = v;
	return NULL;
}

#endif
