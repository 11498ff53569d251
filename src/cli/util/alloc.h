/* Memory helpers the CLI shares: growable arrays and a string arena. */
#ifndef WP_ALLOC_H
#define WP_ALLOC_H

#include <stddef.h>

/* Grows the array whose pointer is at `pv` (`*cap` elements of `size` bytes) to hold at least
 * `need` elements, doubling from 16. Returns 0, or -1 (array and *cap untouched) when out of
 * memory or the size would overflow. Use: `if (wp_grow(&v, &cap, n + 1, sizeof(*v))) ...` */
int wp_grow(void *pv, size_t *cap, size_t need, size_t size);

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
