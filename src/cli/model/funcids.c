/* SPDX-License-Identifier: MIT */
#include "funcids.h"

#include <stdlib.h>
#include <string.h>
#include "uthash_cfg.h"

struct wp_func_key {
	UT_hash_handle hh;
	uint32_t id;
	char key[]; /* name '\0' module */
};

int64_t wp_func_ids_get(struct wp_func_ids *ids, const char *name, const char *module,
			const char **kname, const char **kmodule, int *added)
{
	if (!module)
		module = "";
	size_t ln = strlen(name), lm = strlen(module);
	char buf[1024];
	char *key = ln + lm + 2 <= sizeof(buf) ? buf : malloc(ln + lm + 2);
	if (!key)
		return -1;
	memcpy(key, name, ln + 1);
	memcpy(key + ln + 1, module, lm + 1);
	struct wp_func_key *fk;
	HASH_FIND(hh, ids->by_key, key, ln + lm + 2, fk);
	*added = !fk;
	if (!fk) {
		fk = malloc(sizeof(*fk) + ln + lm + 2);
		if (!fk) {
			if (key != buf)
				free(key);
			return -1;
		}
		memcpy(fk->key, key, ln + lm + 2);
		fk->id = (uint32_t)ids->n++;
		HASH_ADD(hh, ids->by_key, key, ln + lm + 2, fk);
	}
	if (key != buf)
		free(key);
	if (kname)
		*kname = fk->key;
	if (kmodule)
		*kmodule = fk->key + ln + 1;
	return fk->id;
}

void wp_func_ids_free(struct wp_func_ids *ids)
{
	struct wp_func_key *fk, *tmp;
	HASH_ITER(hh, ids->by_key, fk, tmp) {
		HASH_DEL(ids->by_key, fk);
		free(fk);
	}
	ids->n = 0;
}
