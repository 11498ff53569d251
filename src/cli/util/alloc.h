/* SPDX-License-Identifier: MIT */
/* Memory helpers the CLI shares: the allocators that exit when out of memory, growable
 * arrays and a string arena.
 *
 * Out of memory, the CLI's one policy (git's and uftrace's xmalloc): where the command cannot
 * go on without the memory (building the model, whose symbol caches cannot be unwound; a
 * report being written), it calls the wp_x* allocators, which print one line,
 * "wallprof: out of memory", and exit 1. A function whose header promises NULL or -1 when
 * out of memory keeps its promise with the plain allocators and wp_grow; its caller decides. */
#ifndef WP_ALLOC_H
#define WP_ALLOC_H

#include <stddef.h>

/* Prints "wallprof: out of memory" on standard error and exits 1. */
void wp_oom(void) __attribute__((noreturn));
/* malloc, calloc, realloc and strdup that never return NULL: wp_oom instead. A size of 0
 * allocates 1 byte (never NULL). */
void *wp_xmalloc(size_t n) __attribute__((malloc, returns_nonnull));
void *wp_xcalloc(size_t n, size_t size) __attribute__((malloc, returns_nonnull));
void *wp_xrealloc(void *p, size_t n) __attribute__((returns_nonnull));
char *wp_xstrdup(const char *s) __attribute__((malloc, returns_nonnull));

/* Grows the array whose pointer is at `pv` (`*cap` elements of `size` bytes) to hold at least
 * `need` elements, doubling from 16. Returns 0, or -1 (array and *cap untouched) when out of
 * memory or the size would overflow. Use: `if (wp_grow(&v, &cap, n + 1, sizeof(*v))) ...` */
int wp_grow(void *pv, size_t *cap, size_t need, size_t size);
/* wp_grow, or wp_oom. */
void wp_xgrow(void *pv, size_t *cap, size_t need, size_t size);

/* Strings that live until the arena is freed, allocated in 64 KiB chunks. An empty arena is
 * `struct wp_arena a = { 0 }`. */
struct wp_arena {
	struct wp_arena_chunk *head;
};

/* `len` bytes, or NULL when out of memory. */
char *wp_arena_alloc(struct wp_arena *a, size_t len);
/* A copy of `s`, or NULL when out of memory. */
const char *wp_arena_strdup(struct wp_arena *a, const char *s);
void wp_arena_free(struct wp_arena *a);

#endif
