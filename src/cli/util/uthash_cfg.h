/* SPDX-License-Identifier: MIT */
/* uthash, as every file of the command includes it: a table that cannot grow is out of
 * memory under the CLI's one policy (alloc.h: one line, exit 1), not uthash's own exit(-1).
 * Include this instead of <uthash.h>. */
#ifndef WP_UTHASH_CFG_H
#define WP_UTHASH_CFG_H

#include "alloc.h"

#define uthash_fatal(msg) wp_oom()

#include <uthash.h>

/* Gives the table at `head` (handle `hh`, not empty) at least `n` / 2 buckets at once, as
 * uthash's own doubling would when it reached n items, but without moving those items
 * along the way: each doubling visits every item, a cache miss each in a large table. Made
 * of uthash's own expansion, so the table stays one uthash would make. */
#define WP_HASH_RESERVE(head, hh, n)                                                        \
	do {                                                                                \
		int wp_oomed_ = 0;                                                          \
		(void)wp_oomed_;                                                            \
		while ((head)->hh.tbl->num_buckets < (n) / 2 &&                             \
		       (head)->hh.tbl->num_buckets < (1u << 30))                            \
			HASH_EXPAND_BUCKETS(&(head)->hh, (head)->hh.tbl, wp_oomed_);         \
	} while (0)

#endif
