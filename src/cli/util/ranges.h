/* SPDX-License-Identifier: MIT */
/* Address ranges sorted by start, looked up by address: symbol tables, compile units, JIT
 * maps, module maps. Ranges may nest or overlap; each carries the largest end of itself and
 * every range before it, so a lookup walks back from the last start at or below the address
 * only while some range there still reaches past it.
 *
 * An array element of any type that begins with a struct wp_range can be indexed: the
 * functions take the array, its length and the element size. */
#ifndef WP_RANGES_H
#define WP_RANGES_H

#include <stddef.h>
#include <stdint.h>

struct wp_range {
	uint64_t lo, hi; /* [lo, hi) */
	uint64_t maxhi;  /* set by wp_ranges_index */
};

/* Orders by start, the longer range first on equal starts. */
int wp_range_cmp(const struct wp_range *a, const struct wp_range *b);

/* Sets maxhi over an array sorted by lo. */
void wp_ranges_index(void *base, size_t n, size_t stride);

/* Index of the last element whose lo is at or below addr, or -1. */
ptrdiff_t wp_ranges_last(const void *base, size_t n, size_t stride, uint64_t addr);

/* The elements containing addr, the latest start first (a bounded walk: pathological
 * overlaps end it early). */
struct wp_ranges_iter {
	const char *base;
	size_t stride;
	ptrdiff_t i;
	uint64_t addr;
	int steps;
};
void wp_ranges_iter_init(struct wp_ranges_iter *it, const void *base, size_t n, size_t stride,
			 uint64_t addr);
/* The next element containing the address, or NULL. */
void *wp_ranges_next(struct wp_ranges_iter *it);

/* The element containing addr with the latest start, or NULL. */
void *wp_ranges_find(const void *base, size_t n, size_t stride, uint64_t addr);

#endif
