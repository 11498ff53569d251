/* SPDX-License-Identifier: MIT */
#include "ranges.h"

#include <string.h>

#define MAX_WALK_BACK 4096 /* elements looked at in one walk before giving up */

static const struct wp_range *at(const void *base, size_t stride, size_t i)
{
	return (const struct wp_range *)((const char *)base + i * stride);
}

int wp_range_cmp(const struct wp_range *a, const struct wp_range *b)
{
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	if (a->hi != b->hi)
		return a->hi > b->hi ? -1 : 1;
	return 0;
}

void wp_ranges_index(void *base, size_t n, size_t stride)
{
	uint64_t m = 0;
	for (size_t i = 0; i < n; i++) {
		struct wp_range *r = (struct wp_range *)((char *)base + i * stride);
		if (r->hi > m)
			m = r->hi;
		r->maxhi = m;
	}
}

ptrdiff_t wp_ranges_last(const void *base, size_t n, size_t stride, uint64_t addr)
{
	size_t lo = 0, hi = n; /* the first element above addr is in [lo, hi] */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (at(base, stride, mid)->lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ptrdiff_t)lo - 1;
}

void wp_ranges_iter_init(struct wp_ranges_iter *it, const void *base, size_t n, size_t stride,
			 uint64_t addr)
{
	*it = (struct wp_ranges_iter){ .base = base, .stride = stride, .addr = addr,
				       .i = wp_ranges_last(base, n, stride, addr) };
}

void *wp_ranges_next(struct wp_ranges_iter *it)
{
	for (; it->i >= 0 && it->steps < MAX_WALK_BACK; it->i--, it->steps++) {
		const struct wp_range *r = at(it->base, it->stride, (size_t)it->i);
		if (r->maxhi <= it->addr)
			break; /* nothing at or before this one reaches the address */
		if (it->addr < r->hi) {
			it->i--;
			it->steps++;
			return (void *)r;
		}
	}
	it->i = -1;
	return NULL;
}

void *wp_ranges_find(const void *base, size_t n, size_t stride, uint64_t addr)
{
	struct wp_ranges_iter it;
	wp_ranges_iter_init(&it, base, n, stride, addr);
	return wp_ranges_next(&it);
}
