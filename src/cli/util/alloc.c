/* SPDX-License-Identifier: MIT */
#include "alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 65536

void wp_oom(void)
{
	fputs("wallprof: out of memory\n", stderr);
	exit(1);
}

void *wp_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		wp_oom();
	return p;
}

void *wp_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		wp_oom();
	return p;
}

void *wp_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		wp_oom();
	return q;
}

char *wp_xstrdup(const char *s)
{
	char *d = strdup(s);
	if (!d)
		wp_oom();
	return d;
}

void wp_xgrow(void *pv, size_t *cap, size_t need, size_t size)
{
	if (wp_grow(pv, cap, need, size))
		wp_oom();
}

int wp_grow(void *pv, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (size && ncap > SIZE_MAX / size)
		return -1;
	void *v;
	memcpy(&v, pv, sizeof(v)); /* the pointer is copied: no aliasing games */
	size_t bytes = ncap * size;
	void *n = realloc(v, bytes ? bytes : 1);
	if (!n)
		return -1;
	memcpy(pv, &n, sizeof(n));
	*cap = ncap;
	return 0;
}

struct wp_arena_chunk {
	struct wp_arena_chunk *next;
	size_t used, cap;
	char data[];
};

char *wp_arena_alloc(struct wp_arena *a, size_t len)
{
	struct wp_arena_chunk *c = a->head;
	if (!c || c->cap - c->used < len) {
		size_t cap = len > CHUNK ? len : CHUNK;
		if (cap > SIZE_MAX - sizeof(*c))
			return NULL;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		if (a->head && len > CHUNK) { /* a big one: keep filling the current chunk */
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	char *r = c->data + c->used;
	c->used += len;
	return r;
}

const char *wp_arena_strdup(struct wp_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *r = wp_arena_alloc(a, n);
	if (r)
		memcpy(r, s, n);
	return r;
}

void wp_arena_free(struct wp_arena *a)
{
	while (a->head) {
		struct wp_arena_chunk *n = a->head->next;
		free(a->head);
		a->head = n;
	}
}
