/* SPDX-License-Identifier: MIT */
/* Functions numbered by (name, module): the model's one interning of functions. wp_resolve
 * and wp_resolve_many number their functions so, over every process; the live view, which
 * counts over one model per process, numbers the functions of all of them with the same
 * routine, so that the same function of the same binary is one row whichever process ran it. */
#ifndef WP_FUNCIDS_H
#define WP_FUNCIDS_H

#include <stddef.h>
#include <stdint.h>

struct wp_func_key;

/* Empty: `struct wp_func_ids ids = { 0 }`. */
struct wp_func_ids {
	struct wp_func_key *by_key;
	size_t n; /* ids count from 0 in the order the functions first came */
};

/* The id of function (name, module) (module NULL is ""), added when new (*added set to 1,
 * else 0). *kname and *kmodule (either may be NULL) get the interner's own copies, which
 * live until wp_func_ids_free. Returns -1 when out of memory. */
int64_t wp_func_ids_get(struct wp_func_ids *ids, const char *name, const char *module,
			const char **kname, const char **kmodule, int *added);
void wp_func_ids_free(struct wp_func_ids *ids);

#endif
